"""The command line as a user types it: inspect on a bundled model, and its errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from dmlgraph.cli import main

MODELS = Path(__file__).parent.parent / "models"


def test_inspect_lists_folded_parameters(capsys) -> None:
    assert main(["inspect", str(MODELS / "encodec_encoder_reflect.onnx")]) == 0
    out = capsys.readouterr().out
    assert "input  hidden_states.1: float32[1,1,2000]" in out
    # The first reflect Pad of the encoder pads the time axis by 3 on each side once folded.
    assert "/e/layers.0/Pad: mode=reflect pads=[0,0,3,0,0,3]" in out
    assert "run-time" not in out


def test_inspect_with_dynamic_input_shape_flag(capsys) -> None:
    args = ["inspect", str(MODELS / "squeezenet1_1.onnx"), "--input-shape", "input.1:1,3,224,224"]
    assert main(args) == 0
    assert "Concat" in capsys.readouterr().out


@pytest.mark.parametrize("args, fragment", [
    (["inspect", "no/such/model.onnx"], "no/such/model.onnx"),
    (["inspect", str(MODELS / "squeezenet1_1.onnx"), "--input-shape", "nope:1,3"], "nope"),
    *(
        ([command, str(MODELS / "squeezenet1_1.onnx"), "--input-shape", "input.1:1,3,224,224",
          "--input-shape", "input.1:2,3,224,224"], "'input.1' two shapes")
        for command in ("inspect", "lower", "check", "run")  # viz reads them as lower does
    ),
])
def test_errors_are_one_line_and_exit_2(args, fragment, capsys) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("dmlgraph: error:") and err.count("\n") == 1 and fragment in err


@pytest.mark.parametrize("bad", ["x", "x:1,a", ":1,2", "x:-1"])
def test_malformed_input_shape_is_a_usage_error(bad, capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["inspect", str(MODELS / "squeezenet1_1.onnx"), "--input-shape", bad])
    assert info.value.code == 2
    assert "NAME:D0,D1" in capsys.readouterr().err


def test_unknown_feature_level_is_a_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["dxdispatch", str(MODELS / "dxdispatch" / "example_join.json"),
              "--feature-level", "9_9"])
    assert info.value.code == 2
    assert "unknown DirectML feature level" in capsys.readouterr().err


def _save(tmp_path: Path, nodes, inputs, outputs, name: str = "m.onnx") -> str:
    import onnx
    from onnx import helper

    graph = helper.make_graph(nodes, "g", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    path = tmp_path / name
    onnx.save(model, path)
    return str(path)


def test_a_checker_message_of_several_lines_is_one_line(tmp_path: Path, capsys) -> None:
    """The ONNX checker's messages carry a context line after a blank one; the error the
    command prints is still one line."""
    from onnx import TensorProto, helper

    info = helper.make_tensor_value_info
    path = _save(tmp_path, [helper.make_node("Concat", ["a", "a"], ["y"])],
                 [info("a", TensorProto.FLOAT, [2])], [info("y", TensorProto.FLOAT, [4])])
    assert main(["lower", path]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Required attribute 'axis' is missing. ==> Context:" in err


def test_an_input_too_large_to_generate_is_an_error_not_a_traceback(
    tmp_path: Path, capsys
) -> None:
    """2**46 float32 elements: more bytes than a 64-bit process can map, so the allocation
    fails at once, whatever the machine's overcommit policy."""
    from onnx import TensorProto, helper

    info = helper.make_tensor_value_info
    path = _save(tmp_path, [helper.make_node("Concat", ["a", "a"], ["y"], axis=1)],
                 [info("a", TensorProto.FLOAT, [2**45, 2])],
                 [info("y", TensorProto.FLOAT, [2**45, 4])])
    assert main(["check", path]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"input 'a' is float32[{2**45}, 2], {2**48} bytes: too large to generate" in err
