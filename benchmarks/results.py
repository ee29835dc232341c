"""What every section hands back: its rows, the targets it checks and the notes it found."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, is_dataclass
from typing import Any

#: What a section calls to say what it is measuring now (the status line).
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Target:
    """One goal of a section: the worst ratio seen against a limit.

    ``low``/``high`` bound the ratio (either may be None; neither: informational); ``met``
    is None when there is no limit or nothing was measured (e.g. a mode the backend does not
    support yet).
    """

    name: str
    worst: float | None
    low: float | None
    high: float | None
    worst_case: str = ""

    @property
    def met(self) -> bool | None:
        if self.worst is None or (self.low is None and self.high is None):
            return None
        return (self.low is None or self.worst >= self.low) and (
            self.high is None or self.worst <= self.high
        )

    @property
    def limit(self) -> str:
        if self.low is not None and self.high is not None:
            return f"{self.low:g}..{self.high:g}"
        if self.high is not None:
            return f"<= {self.high:g}"
        if self.low is not None:
            return f">= {self.low:g}"
        return "none (informational)"

    @classmethod
    def worst_of(
        cls,
        name: str,
        values: list[tuple[str, float | None]],
        *,
        low: float | None = None,
        high: float | None = None,
    ) -> Target:
        """The value farthest outside (or nearest to leaving) ``low..high``.

        With an upper limit only, the largest value; with a lower only, the smallest; with
        both, the one nearest to (or farthest past) its nearer limit, as a ratio to it: the
        band 0.75..1.25 is not symmetric about 1 (0.79 is inside it and 1.26 outside, though
        1.26 is nearer 1 as a ratio), so ``met`` holds exactly when every value is inside.
        """
        seen = [(case, v) for case, v in values if v is not None]
        if not seen:
            return cls(name, None, low, high)
        if low is not None and high is not None:
            def outside(v: float) -> float:  # > 1: past a limit
                return max(v / high, low / v) if v > 0 else math.inf

            case, worst = max(seen, key=lambda cv: outside(cv[1]))
        elif low is not None:
            case, worst = min(seen, key=lambda cv: cv[1])
        else:
            case, worst = max(seen, key=lambda cv: cv[1])
        return cls(name, worst, low, high, case)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "worst": self.worst,
            "worst_case": self.worst_case,
            "limit": self.limit,
            "low": self.low,
            "high": self.high,
            "met": self.met,
        }


@dataclass(frozen=True)
class Section:
    """A section's result: its tables (name -> rows, frozen dataclasses), targets, notes,
    anything else worth keeping (``extra``, plain JSON values) and its own run time."""

    name: str
    tables: dict[str, tuple[Any, ...]]
    targets: tuple[Target, ...]
    notes: tuple[str, ...] = ()
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "tables": {
                name: [
                    asdict(row) if is_dataclass(row) and not isinstance(row, type) else row
                    for row in rows
                ]
                for name, rows in self.tables.items()
            },
            "targets": [t.to_json() for t in self.targets],
            "notes": list(self.notes),
            "seconds": self.seconds,
            **self.extra,
        }
