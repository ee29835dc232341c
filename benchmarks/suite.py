"""The sections in order, run one after another into one JSON document."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from rich.console import Console

from benchmarks import execution, lowering, memory, overhead
from benchmarks.report import document, summary, tables
from benchmarks.results import Section
from benchmarks.settings import Settings

Runner = Callable[..., Section]
SECTIONS: dict[str, Runner] = {
    "execution": execution.run,
    "overhead": overhead.run,
    "lowering": lowering.run,
    "memory": memory.run,
}


def run(
    settings: Settings, only: Sequence[str] = (), console: Console | None = None
) -> dict[str, Any]:
    """Run the named sections (all by default), print each one's tables as it ends and the
    summary last; return the JSON document."""
    console = console or Console()
    names = list(only) or list(SECTIONS)
    if unknown(names):
        raise ValueError(f"unknown sections {unknown(names)} (known: {', '.join(SECTIONS)})")
    start = time.perf_counter()
    done: list[Section] = []
    with console.status("") as status:
        for name in names:
            began = time.perf_counter()
            section = SECTIONS[name](settings, lambda text: status.update(text))
            section = replace(section, seconds=time.perf_counter() - began)
            done.append(section)
            for table in tables(section):
                console.print(table)
            for note in section.notes:
                console.print(f"[yellow]note[/] {name}: {note}")
    targets = [t for s in done for t in s.targets]
    console.print(summary(targets))
    return document(settings, done, time.perf_counter() - start)


def unknown(names: Sequence[str]) -> list[str]:
    return [name for name in names if name not in SECTIONS]
