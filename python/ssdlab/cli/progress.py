"""The progress bar of a long run, shown on stderr only when stderr is a terminal."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

ProgressCallback = Callable[[int, int], None]


def _ignore(done: int, total: int) -> None:
    """Still a Python callback: the core's calls to it are where a Ctrl-C gets noticed."""


def stderr_is_terminal() -> bool:
    return sys.stderr.isatty()


@contextmanager
def progress_bar(enabled: bool, description: str = "simulating") -> Iterator[ProgressCallback]:
    """Yield a ``progress(done, total)`` callback for ``ssdlab.run``; draws a bar if enabled."""
    if not enabled:
        yield _ignore
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    # transient: the bar disappears once the run ends, leaving only the result table.
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total if total > 0 else None)

        yield update
