"""The ``dmlgraph`` command line.

Exit codes (ARCHITECTURE.md): 0 success, 1 parity fails, 2 bad input or unsupported model,
reported as one line on stderr without a traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from dmlgraph.dml.enums import FeatureLevel
from dmlgraph.errors import DmlgraphError


def _feature_level(text: str) -> FeatureLevel:
    try:
        return FeatureLevel.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _input_shape(text: str) -> tuple[str, list[int]]:
    name, sep, dims = text.rpartition(":")
    try:
        shape = [int(d) for d in dims.split(",")] if dims else []
    except ValueError:
        shape = None
    if not sep or not name or shape is None or any(d < 0 for d in shape):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not NAME:D0,D1,... with non-negative integer dimensions"
        )
    return name, shape


def cmd_dxdispatch(args: argparse.Namespace) -> int:
    from dmlgraph.dxdispatch import load_model, run_model

    model = run_model(load_model(args.model), args.feature_level, echo=print)
    if args.output:
        arrays = {name: r.values() for name, r in model.resources.items()}
        np.savez(args.output, **arrays)
        print(f"saved {len(arrays)} resources to {args.output}")
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    from dmlgraph.inspect import describe

    shapes = dict(args.input_shape) if args.input_shape else None
    print(describe(args.model, shapes))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dmlgraph",
        description="Lower ONNX Slice, Concat and Pad to DirectML descriptors, run them, check "
        "parity.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    inspect = commands.add_parser(
        "inspect", help="load a model, fold computed Slice/Pad parameters, summarise it"
    )
    inspect.add_argument("model", type=Path, help="an .onnx file")
    inspect.add_argument("--input-shape", action="append", type=_input_shape,
                         metavar="NAME:D0,D1,..", help="fix a graph input's dynamic dimensions")
    inspect.set_defaults(run=cmd_inspect)

    dxdispatch = commands.add_parser(
        "dxdispatch", help="run a DxDispatch JSON model's DML operators on the NumPy executor"
    )
    dxdispatch.add_argument("model", type=Path, help="a DxDispatch model .json")
    dxdispatch.add_argument("--feature-level", type=_feature_level, default=FeatureLevel.L6_4,
                            help="DML_FEATURE_LEVEL to validate at (default 6_4)")
    dxdispatch.add_argument("-o", "--output", type=Path, help="save every resource to an .npz")
    dxdispatch.set_defaults(run=cmd_dxdispatch)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except DmlgraphError as exc:
        print(f"dmlgraph: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"dmlgraph: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
