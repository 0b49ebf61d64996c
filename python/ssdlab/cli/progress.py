"""The progress of a long run on stderr: a bar on a terminal; elsewhere (a log file, CI, a pipe)
one line every few seconds, so that a long run is seen to move without filling the log."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

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

#: Off a terminal: the seconds between two progress lines (and before the first, so a short run
#: prints none).
LINE_EVERY_S = 5.0

#: What the core reports before its first request: (0, 0) while it preconditions the drive.
PRECONDITIONING = "preconditioning the drive"

#: Once every request has completed, the run goes on until the device is idle.
DRAINING = "the run goes on until the device is idle (write-back, GC)"


def _ignore(done: int, total: int) -> None:
    """Still a Python callback: the core's calls to it are where a Ctrl-C gets noticed."""


def stderr_is_terminal() -> bool:
    return sys.stderr.isatty()


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def progress_line(description: str, done: int, total: int, elapsed_s: float) -> str:
    """One progress line: ``simulating: 45.0% (450,000 of 1,000,000), 0:12 elapsed, about 0:15
    left``; without a total, the count alone. The time left is the time so far scaled by the
    fraction still to do."""
    if done == 0 and total == 0:
        return f"{PRECONDITIONING}: {_clock(elapsed_s)} elapsed"
    if total <= 0:
        return f"{description}: {done:,} requests, {_clock(elapsed_s)} elapsed"
    if done >= total:
        # The count is of completed requests: what runs on is the device's own work after them
        # (a write cache's write-back, GC), which can take longer than the requests did.
        return (
            f"{description}: {done:,} of {total:,} requests done, {_clock(elapsed_s)} elapsed;"
            f" {DRAINING}"
        )
    fraction = done / total
    line = f"{description}: {fraction:.1%} ({done:,} of {total:,}), {_clock(elapsed_s)} elapsed"
    if fraction > 0:
        line += f", about {_clock(elapsed_s * (1 - fraction) / fraction)} left"
    return line


def line_progress(
    description: str,
    stream: TextIO,
    every_s: float = LINE_EVERY_S,
    clock: Callable[[], float] = time.monotonic,
) -> ProgressCallback:
    """A ``progress(done, total)`` callback writing :func:`progress_line` to ``stream`` every
    ``every_s`` seconds."""
    start = clock()
    due = start + every_s

    def update(done: int, total: int) -> None:
        nonlocal due
        now = clock()
        if now < due:
            return
        due = now + every_s
        stream.write(progress_line(description, done, total, now - start) + "\n")
        stream.flush()

    return update


@contextmanager
def progress_bar(enabled: bool, description: str = "simulating") -> Iterator[ProgressCallback]:
    """Yield a ``progress(done, total)`` callback for ``ssdlab.run``. With ``enabled``: a bar on
    a terminal, a line every few seconds elsewhere; without, nothing is shown."""
    if not enabled:
        yield _ignore
        return
    if not stderr_is_terminal():
        yield line_progress(description, sys.stderr)
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
            # (0, 0): the core is preconditioning, before any request.
            shown = PRECONDITIONING if done == 0 and total == 0 else description
            if 0 < total <= done:
                shown = f"{description}: requests done; {DRAINING}"
            bar.update(task, description=shown, completed=done, total=total if total > 0 else None)

        yield update


#: Wall seconds of simulating (after preconditioning) before :func:`with_estimate` judges the
#: whole run's length: long enough for the rate to settle past the first requests, short enough
#: to be said near the start.
ESTIMATE_AFTER_S = 2.0


def with_estimate(
    callback: ProgressCallback,
    label: str,
    stream: TextIO,
    after_s: float = ESTIMATE_AFTER_S,
    clock: Callable[[], float] = time.monotonic,
) -> ProgressCallback:
    """``callback``, and once: after ``after_s`` of simulating, a line on ``stream`` with the
    wall time the whole run will take at the rate so far (a run shorter than that says
    nothing). The core reports (0, 0) while it preconditions; the clock starts after."""
    started: float | None = None
    said = False

    def update(done: int, total: int) -> None:
        nonlocal started, said
        callback(done, total)
        if said or total <= 0:
            return
        now = clock()
        if started is None:
            started = now
            return
        elapsed = now - started
        if elapsed < after_s or done <= 0:
            return
        said = True
        fraction = min(done / total, 1.0)
        whole = elapsed / fraction
        stream.write(
            f"{label}: about {_clock(whole)} of wall time to simulate it all"
            f" ({fraction:.1%} done after {_clock(elapsed)})\n"
        )
        stream.flush()

    return update
