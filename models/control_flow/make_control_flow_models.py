"""Make the control-flow fixtures: two ``torch.jit.script``-ed modules whose Python ``if`` and
``for`` become ONNX If and Loop nodes (TorchScript exporter, opset 17), with Slice, Concat and
Pad inside their subgraphs and around them, and ``control_flow_io.npz``: seeded inputs taking
each branch and trip count, and torch's own (eager) outputs for them, the tests' oracle.

Needs torch (not a dmlgraph dependency): ``pip install torch==2.14.1`` and
``python models/control_flow/make_control_flow_models.py``. Made with torch 2.14.1, onnx 1.23.2.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent


class IfPadSlice(torch.nn.Module):
    """A data-dependent If: a reflect Pad then a Slice, or a Slice and a Concat; a Pad, a
    Slice and a Concat of its result after it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if bool(x.sum() > 0):
            y = F.pad(x, (2, 1, 1, 0), mode="reflect")
            y = y[:, :, 1:, :-1]
        else:
            y = x[:, :, 1:, 2:]
            y = torch.cat([y, y], dim=3)
        z = F.pad(y, (0, 0, 1, 1))
        return torch.cat([z, z[:, :, :2]], dim=2)


class NestedLoopIf(torch.nn.Module):
    """A Loop over the rows with an If inside: odd rows appended edge-padded, even rows as
    they are."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        acc = x[:1]
        for i in range(x.shape[0]):
            if i % 2 == 1:
                acc = torch.cat([acc, F.pad(x[i:i + 1, 1:], (0, 1), mode="replicate")], dim=0)
            else:
                acc = torch.cat([acc, x[i:i + 1]], dim=0)
        return acc[1:]


#: name -> (module, example shape, dynamic axes, test inputs' shapes and signs)
MODELS = {
    "if_pad_slice": (IfPadSlice, (1, 2, 5, 6), None, [((1, 2, 5, 6), 1), ((1, 2, 5, 6), -1)]),
    "nested_loop_if": (NestedLoopIf, (5, 4), {"x": {0: "N"}},
                       [((5, 4), 1), ((2, 4), 1), ((1, 4), -1)]),
}


def main() -> None:
    rng = np.random.default_rng(0)
    arrays: dict[str, np.ndarray] = {}
    for name, (make, shape, dynamic, tests) in MODELS.items():
        module = torch.jit.script(make().eval())
        path = HERE / f"{name}.onnx"
        torch.onnx.export(module, (torch.rand(*shape),), path, input_names=["x"],
                          output_names=["y"], dynamic_axes=dynamic, opset_version=17,
                          dynamo=False)
        model = onnx.load(path)
        model.ir_version = min(model.ir_version, 13)  # what onnxruntime loads
        onnx.save(model, path)
        for case, (test, sign) in enumerate(tests):
            x = (sign * rng.random(test)).astype(np.float32)
            with torch.no_grad():
                y = module(torch.from_numpy(x)).numpy()
            arrays[f"{name}__{case}__in__x"] = x
            arrays[f"{name}__{case}__eager__y"] = y
    np.savez_compressed(HERE / "control_flow_io.npz", **arrays)


if __name__ == "__main__":
    main()
