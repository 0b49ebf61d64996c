"""Running a sweep into an output directory, resumably.

Layout of the directory::

    DIR/manifest.json        the sweep as data, every point (index, id, repetition, seed, axes),
                             and one entry per invocation (executor, counts, times)
    DIR/sweep.toml           the sweep file as given (when there was one)
    DIR/config.toml          the base configuration, resolved ([set] applied)
    DIR/runs/<id>/           one run: result.json (as the core wrote it), point.json, and
                             requests.npy when per-request records were asked for
    DIR/results.parquet      the results table (see ssdlab.results), and the same as CSV:
    DIR/results.csv

A point is done when its ``point.json`` exists; that file is written last and atomically, so an
interrupted sweep leaves no half-finished point behind, and running the same sweep into the same
directory again runs only what is missing. A point's id is a hash of its resolved configuration,
job, seed and ``record_requests``: editing the sweep file (another axis value, another repetition)
reuses every run that is still part of it. Failed points are kept with their error and skipped on
resume unless ``retry_failed`` is set. A point made by another build of the simulator (its
``point.json`` names the build, a fingerprint of the compiled core) runs again: its figures are
that build's, and a model change must not leave them standing in a new table.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import hashlib
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import _core
from ..api import RECORD_FIELDS
from ..files import write_output, write_output_bytes, write_output_text
from .executors import LocalExecutor, RayExecutor, make_executor
from .results import (
    MANIFEST,
    POINT_FILE,
    REQUESTS_FILE,
    RESULT_FILE,
    RUNS,
    load_results,
    read_point,
    result_is_readable,
    write_table,
)
from .sweep import Point, Sweep, SweepError, load

OUTPUT_SCHEMA = "ssdlab.sweep-output/1"
POINT_SCHEMA = "ssdlab.point/1"


class Progress:
    """What a sweep reports while it runs; the CLI draws a bar from it. Does nothing here."""

    def start(self, total: int, done: int, failed: int) -> None:
        """``total`` points, of which ``done`` (``failed`` of them failed) were already done."""

    def advance(self, point: Point, status: str, error: str | None) -> None:
        """One more point finished, ``ok`` or ``failed``."""

    def finish(self) -> None:
        """The last point is done (or the sweep stops)."""


@dataclass
class SweepOutcome:
    """What ``run_sweep`` did."""

    out_dir: Path
    name: str
    total: int
    already_done: int  # points finished by earlier invocations and not rerun
    ran: int  # points run now
    ok: int  # points run now that succeeded
    failed: int  # points run now that failed
    failed_total: int  # failed points in the table
    seconds: float
    executor: dict[str, Any]
    tables: list[Path] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)  # (point description, error)

    @property
    def runs_per_minute(self) -> float:
        return self.ran / self.seconds * 60 if self.seconds > 0 else 0.0

    def table(self, backend: str = "polars") -> Any:
        return load_results(self.out_dir, backend=backend)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _write_atomic(path: Path, data: bytes | str) -> None:
    if isinstance(data, str):
        write_output_text(path, data)
    else:
        write_output_bytes(path, data)


def _environment() -> dict[str, Any]:
    versions: dict[str, Any] = {"ssdlab": _core.version(), "python": sys.version.split()[0]}
    for module in ("numpy", "polars", "matplotlib", "ray"):
        loaded = sys.modules.get(module)
        if loaded is not None:
            versions[module] = getattr(loaded, "__version__", None)
    return {"versions": versions, "platform": platform.platform(), "machine": platform.machine()}


@contextlib.contextmanager
def _lock(directory: Path) -> Iterator[None]:
    """One sweep at a time per directory (an advisory lock, released when the process ends)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    handle = open(directory / ".lock", "a+")  # noqa: SIM115 - held for the whole sweep
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SweepError(f"{directory}: another sweep is running into this directory") from None
        yield
    finally:
        handle.close()


def _manifest(sweep: Sweep, points: list[Point], previous: Mapping[str, Any] | None) -> dict:
    return {
        "schema": OUTPUT_SCHEMA,
        "name": sweep.name,
        "created": (previous or {}).get("created", _now()),
        "updated": _now(),
        "sweep": sweep.describe(),
        "points": [
            {
                "index": p.index,
                "id": p.id,
                "repetition": p.repetition,
                "seed": p.seed,
                "params": p.params,
            }
            for p in points
        ],
        "invocations": list((previous or {}).get("invocations", [])),
        "environment": _environment(),
    }


def _save_outcome(directory: Path, point: Point, outcome: Mapping[str, Any]) -> None:
    run_dir = directory / RUNS / point.id
    run_dir.mkdir(parents=True, exist_ok=True)
    result = None
    if outcome["status"] == "ok":
        text = outcome["result_json"]
        _write_atomic(run_dir / RESULT_FILE, text)
        result = json.loads(text)
        records = outcome.get("records")
        if records is not None:
            array = np.frombuffer(records, dtype="<u8").reshape(-1, RECORD_FIELDS)

            def save(path: Path) -> None:
                with open(path, "wb") as handle:
                    np.save(handle, array, allow_pickle=False)

            write_output(run_dir / REQUESTS_FILE, save)
    record = {
        "schema": POINT_SCHEMA,
        "id": point.id,
        "index": point.index,
        "repetition": point.repetition,
        "seed": point.seed,
        "params": point.params,
        "overrides": list(point.overrides),
        point.kind: point.job,  # "job": the job, "trace": the replay options, "swap": the run
        "record_requests": point.record_requests,
        "stats_interval": point.stats_interval,
        "status": outcome["status"],
        "error": outcome.get("error"),
        "worker": outcome.get("worker"),
        "worker_seconds": outcome.get("worker_seconds"),
        "finished": _now(),
        "ssdlab_version": (result or {}).get("ssdlab_version", _core.version()),
        "build": model_build(),
        "config_name": (result or {}).get("config_name"),
        "config": json.loads(point.config_json),
    }
    # Last, and atomically: its presence is what marks the point as done.
    _write_atomic(run_dir / POINT_FILE, json.dumps(record, indent=2) + "\n")


@functools.cache
def model_build() -> str:
    """A fingerprint of this build of the simulator: the first 16 hex digits of the SHA-256 of
    the compiled core. Runs are reused only by the build that made them."""
    return hashlib.sha256(Path(_core.__file__).read_bytes()).hexdigest()[:16]


def run_sweep(
    source: str | os.PathLike[str] | Mapping[str, Any] | Sweep,
    out: str | os.PathLike[str],
    executor: str | LocalExecutor | RayExecutor = "local",
    workers: int | None = None,
    address: str | None = None,
    retry_failed: bool = False,
    progress: Progress | None = None,
    on_outcome: Callable[[Point, Mapping[str, Any]], None] | None = None,
) -> SweepOutcome:
    """Run every point of a sweep that ``out`` does not hold yet; write the results table.

    ``source`` is a sweep file, a dict in its shape, or a :class:`Sweep`. ``executor`` is
    ``"local"`` (a process pool of ``workers`` processes, default: one per core), ``"ray"``
    (``address`` of a cluster, or a local Ray instance) or an executor object.
    """
    sweep = load(source)
    points = sweep.points()
    pool = make_executor(executor, workers, address) if isinstance(executor, str) else executor
    progress = progress or Progress()

    directory = Path(out)
    if directory.exists() and not directory.is_dir():
        raise SweepError(f"--out {directory}: exists and is not a directory")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / RUNS).mkdir(exist_ok=True)

    with _lock(directory):
        previous = None
        if (directory / MANIFEST).is_file():
            try:
                previous = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError):
                previous = None  # damaged: rewritten below from the sweep and the runs
            if not isinstance(previous, dict):
                previous = None
        if previous is not None and previous.get("name") != sweep.name:
            # The runs of two sweeps can share a directory, but one manifest names one sweep:
            # writing this one's would silently drop the other's history and points.
            raise SweepError(
                f"--out {directory}: holds sweep {previous.get('name')!r} ({MANIFEST}), not "
                f"{sweep.name!r}; give another --out, or name this sweep "
                f"{previous.get('name')!r} to extend that one"
            )
        manifest = _manifest(sweep, points, previous)
        if sweep.text is not None:
            _write_atomic(directory / "sweep.toml", sweep.text)
        base_config = sweep.base_config_json()
        if base_config is not None:  # a [swap] sweep on an analytic NAND part has none
            _write_atomic(directory / "config.toml", _core.config_toml(base_config))

        todo: list[Point] = []
        done = failed_before = 0
        for point in points:
            record = read_point(directory, point.id)
            status = record.get("status") if record else None
            if status == "ok" and not result_is_readable(directory, point.id):
                status = None  # marked done, but its result is gone or damaged: run it again
            if record and record.get("build") != model_build():
                status = None  # made by another build of the simulator: run it again
            if status == "ok" or (status == "failed" and not retry_failed):
                done += 1
                failed_before += status == "failed"
            else:
                todo.append(point)

        if todo:
            pool.start()  # an unreachable cluster fails here, before anything is recorded
        invocation: dict[str, Any] = {
            "started": _now(),
            **pool.describe(),
            "points": len(points),
            "already_done": done,
        }
        manifest["invocations"].append(invocation)
        _write_atomic(directory / MANIFEST, json.dumps(manifest, indent=2) + "\n")

        by_id = {point.id: point for point in todo}
        ran = ok = failed = 0
        errors: list[tuple[str, str]] = []
        progress.start(len(points), done, failed_before)
        start = time.perf_counter()
        # No tasks, no executor: a finished sweep run again starts no pool and no Ray.
        outcomes = pool.run([point.task() for point in todo]) if todo else iter(())
        try:
            for outcome in outcomes:
                point = by_id[outcome["id"]]
                _save_outcome(directory, point, outcome)
                ran += 1
                if outcome["status"] == "ok":
                    ok += 1
                else:
                    failed += 1
                    errors.append((point.describe(), outcome.get("error") or "unknown error"))
                progress.advance(point, outcome["status"], outcome.get("error"))
                if on_outcome is not None:
                    on_outcome(point, outcome)
        finally:
            close = getattr(outcomes, "close", None)
            if close is not None:
                close()
            seconds = time.perf_counter() - start
            progress.finish()
            invocation.update(
                finished=_now(),
                ran=ran,
                ok=ok,
                failed=failed,
                seconds=round(seconds, 3),
                runs_per_minute=round(ran / seconds * 60, 2) if seconds > 0 and ran else None,
                complete=ran == len(todo),
            )
            manifest["updated"] = _now()
            _write_atomic(directory / MANIFEST, json.dumps(manifest, indent=2) + "\n")
            tables = write_table(directory)

    failed_total = sum(
        1 for p in points if (read_point(directory, p.id) or {}).get("status") == "failed"
    )
    return SweepOutcome(
        out_dir=directory,
        name=sweep.name,
        total=len(points),
        already_done=done,
        ran=ran,
        ok=ok,
        failed=failed,
        failed_total=failed_total,
        seconds=seconds,
        executor=pool.describe(),
        tables=tables,
        errors=errors,
    )
