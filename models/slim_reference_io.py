"""Make models/reference_io.npz, a slimmed copy of the shared reference inputs and outputs.

The shared file holds torch's 1x3x224x224 float32 input three times (one per image model),
random mantissas that do not compress: 1.7 MB. This keeps the same keys but stores, for the
image models, that input rounded to multiples of 1/8 (about 160 KB compressed each) and, as
``__out0``, onnxruntime CPU's output of the original model for it. Entries of other models
(encodec's 1x1x2000 input and torch's output) are copied unchanged.

    python models/slim_reference_io.py SHARED_reference_io.npz models/reference_io.npz
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort

#: Inputs larger than this many elements are rounded and their outputs recomputed.
LARGE_INPUT = 100_000
#: Rounding step for large inputs: 1/8 keeps every value within 1/16 of torch's.
STEP = 1.0 / 8.0


def slim(source: Path, target: Path, models_dir: Path) -> None:
    reference = dict(np.load(source))
    slimmed: dict[str, np.ndarray] = {}
    for key in sorted(k for k in reference if k.endswith("__in0")):
        model = key.removesuffix("__in0")
        x = reference[key]
        y = reference[f"{model}__out0"]
        if x.size > LARGE_INPUT:
            x = (np.round(x / STEP) * STEP).astype(x.dtype)
            session = ort.InferenceSession(
                str(models_dir / f"{model}.onnx"), providers=["CPUExecutionProvider"]
            )
            y = session.run(None, {session.get_inputs()[0].name: x})[0]
        slimmed[key] = x
        slimmed[f"{model}__out0"] = y
    np.savez_compressed(target, **slimmed)


if __name__ == "__main__":
    src, dst = Path(sys.argv[1]), Path(sys.argv[2])
    slim(src, dst, dst.parent)
