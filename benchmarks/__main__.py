"""``python -m benchmarks [--quick] [--json PATH] [--only SECTION,...]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from benchmarks import suite
from benchmarks.report import write_json
from benchmarks.settings import FULL, QUICK


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="dmlgraph against onnxruntime: execution, per-node overhead, lowering "
        "time and memory, side by side in one run.",
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--json", type=Path, default=Path("benchmark-results.json"),
                        metavar="PATH", help="where to write the results (default: %(default)s)")
    parser.add_argument("--only", default="", metavar="SECTION,...",
                        help=f"run only these sections ({', '.join(suite.SECTIONS)})")
    args = parser.parse_args(argv)
    only = [name.strip() for name in args.only.split(",") if name.strip()]
    if suite.unknown(only):
        parser.error(f"unknown section(s) {', '.join(suite.unknown(only))}; known: "
                     f"{', '.join(suite.SECTIONS)}")
    # rich wraps at 80 columns when not on a terminal: keep logged tables readable
    console = Console() if sys.stdout.isatty() else Console(width=180)
    doc = suite.run(QUICK if args.quick else FULL, only, console)
    write_json(doc, args.json)
    console.print(f"wrote {args.json} ({doc['seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
