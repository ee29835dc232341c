"""Regenerate the torch exports in this folder and ``torch_io.npz`` (needs torch 2.13 and
onnxscript, which dmlgraph does not depend on; the tests read only what this writes).

Each module reads its input's sizes the way real models do, and is exported with only the
batch dimension dynamic, so the sizes it reads are static dims of a partly dynamic tensor:
TorchScript at opset 17 (``dynamic_axes``), and one through the dynamo exporter. For each,
three inputs whose batch differs from the export's are stored with torch's eager outputs,
the tests' oracle: ``{model}__{case}__in__{name}`` and ``{model}__{case}__eager__{name}``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent


class PositionSlice(nn.Module):
    """``x + pe[:, :x.shape[1]]``: a ViT's or a transformer's position table."""

    def __init__(self) -> None:
        super().__init__()
        self.pe = nn.Parameter(torch.randn(1, 64, 16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.pe[:, : x.shape[1]]


class PadToMultiple(nn.Module):
    """Pads sized from the input's own sizes, as window attention and UNets pad."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = (8 - x.shape[1] % 8) % 8
        q = (4 - x.shape[2] % 4) % 4
        return F.pad(x, (0, q, 0, p))


class CausalMask(nn.Module):
    """``mask[:T, :T]`` of a registered causal mask, GPT style."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mask", torch.tril(torch.ones(32, 32)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[1]
        att = x @ x.transpose(1, 2) * x.shape[-1] ** -0.5
        att = att.masked_fill(self.mask[:t, :t] == 0, float("-inf"))
        return att.softmax(-1) @ x


class WindowPartition(nn.Module):
    """Swin's window partition: views by sizes read from the input."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, h, w, c = x.shape
        ws = 3
        x = x.view(b, h // ws, ws, w // ws, ws, c)
        windows = x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, ws * ws, c)
        return windows * windows.shape[1] + windows.shape[-1]


class ReversedIndexSelect(nn.Module):
    """``index_select`` by a reversed ``arange``: onnxruntime 1.32's GatherToSliceFusion
    makes it a Slice ending at -1, an empty result (``check`` names it)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idx = torch.arange(x.shape[1] - 1, -1, -1)
        cidx = torch.arange(0, x.shape[2], 2)
        return x.index_select(1, idx).index_select(2, cidx)


class Attention(nn.Module):
    """``nn.MultiheadAttention``, through the dynamo exporter."""

    def __init__(self) -> None:
        super().__init__()
        self.attention = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.attention(x, x[:, : x.shape[1]], x, need_weights=False)[0]


#: name -> (module, the export input's shape, the test inputs' shapes, exporter)
MODELS = {
    "position_slice": (PositionSlice, (2, 10, 16), [(1, 10, 16), (3, 10, 16), (5, 10, 16)], "ts"),
    "pad_to_multiple": (PadToMultiple, (2, 10, 6), [(1, 10, 6), (3, 10, 6), (4, 10, 6)], "ts"),
    "causal_mask": (CausalMask, (2, 10, 8), [(1, 10, 8), (3, 10, 8), (5, 10, 8)], "ts"),
    "window_partition": (WindowPartition, (2, 6, 9, 4), [(1, 6, 9, 4), (3, 6, 9, 4)], "ts"),
    "reversed_index_select": (ReversedIndexSelect, (2, 10, 6), [(1, 10, 6), (3, 10, 6)], "ts"),
    "attention": (Attention, (2, 10, 8), [(1, 10, 8), (3, 10, 8), (5, 10, 8)], "dynamo"),
}


def main() -> None:
    torch.manual_seed(0)
    arrays: dict[str, np.ndarray] = {}
    rng = np.random.default_rng(0)
    for name, (make, shape, tests, exporter) in MODELS.items():
        module = make().eval()
        path = HERE / f"{name}.onnx"
        example = torch.randn(*shape)
        if exporter == "ts":
            torch.onnx.export(module, (example,), path, input_names=["x"], output_names=["y"],
                              dynamic_axes={"x": {0: "B"}}, opset_version=17, dynamo=False)
        else:
            batch = torch.export.Dim("B", min=1)
            torch.onnx.export(module, (example,), path, input_names=["x"], output_names=["y"],
                              dynamic_shapes={"x": {0: batch}}, dynamo=True,
                              external_data=False)
        model = onnx.load(path)
        model.ir_version = min(model.ir_version, 13)  # what onnxruntime loads (onnx 1.23 writes 14)
        onnx.save(model, path)
        for case, test in enumerate(tests):
            x = rng.standard_normal(test).astype(np.float32)
            with torch.no_grad():
                y = module(torch.from_numpy(x)).numpy()
            arrays[f"{name}__{case}__in__x"] = x
            arrays[f"{name}__{case}__eager__y"] = y
    np.savez_compressed(HERE / "torch_io.npz", **arrays)


if __name__ == "__main__":
    main()
