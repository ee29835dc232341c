"""A small deterministic layered layout, and the collapsing of long fallback chains.

Good enough for graphs of a few hundred nodes and fast (well under a millisecond per node):
ranks are longest paths from the sources (top to bottom), the order within a rank comes from
a few barycenter sweeps, and each node is placed under the mean of its predecessors, then
pushed right just enough not to overlap. Ties are broken by the given key order, so the same
graph always gets the same picture.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

NODE_WIDTH = 176
NODE_HEIGHT = 40
H_GAP = 18
V_GAP = 34
MARGIN = 12
SWEEPS = 4


@dataclass(frozen=True)
class Box:
    """A placed node: top-left corner and size, in pixels."""

    x: float
    y: float
    w: float = NODE_WIDTH
    h: float = NODE_HEIGHT

    @property
    def cx(self) -> float:
        return self.x + self.w / 2


@dataclass(frozen=True)
class Layout:
    boxes: dict[str, Box]
    width: float
    height: float


def _ranks(keys: Sequence[str], preds: dict[str, list[str]]) -> dict[str, int]:
    """Longest path from a source; ``keys`` must be in topological order."""
    rank: dict[str, int] = {}
    for key in keys:
        rank[key] = 1 + max((rank[p] for p in preds[key]), default=-1)
    return rank


def layered(keys: Sequence[str], edges: Sequence[tuple[str, str]]) -> Layout:
    """Place ``keys`` (in topological order) joined by ``edges`` (source, target)."""
    preds: dict[str, list[str]] = {k: [] for k in keys}
    succs: dict[str, list[str]] = {k: [] for k in keys}
    for source, target in edges:
        preds[target].append(source)
        succs[source].append(target)
    rank = _ranks(keys, preds)
    layers: list[list[str]] = [[] for _ in range(1 + max(rank.values(), default=-1))]
    for key in keys:
        layers[rank[key]].append(key)
    position = {key: float(i) for layer in layers for i, key in enumerate(layer)}
    first = {key: i for i, key in enumerate(keys)}

    def sweep(order: Sequence[int], neighbours: dict[str, list[str]]) -> None:
        for r in order:
            layer = layers[r]

            def barycenter(key: str) -> tuple[float, int]:
                near = neighbours[key]
                mean = sum(position[n] for n in near) / len(near) if near else position[key]
                return (mean, first[key])

            layer.sort(key=barycenter)
            for i, key in enumerate(layer):
                position[key] = float(i)

    for _ in range(SWEEPS):
        sweep(range(1, len(layers)), preds)
        sweep(range(len(layers) - 2, -1, -1), succs)

    step = NODE_WIDTH + H_GAP
    x: dict[str, float] = {}
    for layer in layers:
        wanted = [
            sum(x[p] for p in preds[key]) / len(preds[key]) if preds[key] else i * step
            for i, key in enumerate(layer)
        ]
        placed: list[float] = []
        for want in wanted:
            placed.append(max(want, placed[-1] + step) if placed else want)
        # pull the layer back left by half its overflow so it stays under its parents
        overflow = sum(p - w for p, w in zip(placed, wanted)) / max(len(placed), 1)
        for key, value in zip(layer, placed):
            x[key] = value - overflow / 2
    low = min(x.values(), default=0.0)
    boxes = {
        key: Box(x[key] - low + MARGIN, rank[key] * (NODE_HEIGHT + V_GAP) + MARGIN)
        for key in keys
    }
    width = max((b.x + b.w for b in boxes.values()), default=0.0) + MARGIN
    height = max((b.y + b.h for b in boxes.values()), default=0.0) + MARGIN
    return Layout(boxes, width, height)


def chains(
    keys: Sequence[str],
    edges: Sequence[tuple[str, str]],
    collapsible: Callable[[str], bool],
    min_length: int = 3,
) -> list[list[str]]:
    """Maximal runs of at least ``min_length`` collapsible nodes joined one to one (each
    link the only edge out of the first and into the second), in key order."""
    preds: dict[str, list[str]] = {k: [] for k in keys}
    succs: dict[str, list[str]] = {k: [] for k in keys}
    for source, target in edges:
        preds[target].append(source)
        succs[source].append(target)

    def linked(a: str, b: str) -> bool:
        return succs[a] == [b] and preds[b] == [a] and collapsible(a) and collapsible(b)

    runs: list[list[str]] = []
    seen: set[str] = set()
    for key in keys:
        if key in seen or not collapsible(key):
            continue
        if len(preds[key]) == 1 and linked(preds[key][0], key):
            continue  # not the head of its run
        run = [key]
        while len(succs[run[-1]]) == 1 and linked(run[-1], succs[run[-1]][0]):
            run.append(succs[run[-1]][0])
        seen.update(run)
        if len(run) >= min_length:
            runs.append(run)
    return runs
