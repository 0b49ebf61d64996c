"""fio's log files (``write_lat_log``, ``write_bw_log``, ``write_iops_log``) for a run of a fio
job file, from each request's record that the run keeps for fio's JSON report.

The format is fio 3.33's (HOWTO, "Log File Formats"; iolog.c, flush_samples): one line a
sample, ``time_ms, value, direction, block_size, priority`` (with ``log_offset=1``:
``time_ms, value, direction, block_size, offset, priority``). The time counts from the job's
measured start (fio resets its clock after ``ramp_time``); the direction is 0 read, 1 write,
2 trim; the priority is 0 (ssdlab models no priority classes). Per request unless
``log_avg_msec`` is set, then one line per direction and window with the window's mean (or
its maximum with ``log_max_value=1``), block size and offset 0.

Files go under one directory (the command's ``--log-dir``, else the working directory as fio
writes them), named as fio names them: ``NAME_lat.N.log``, ``NAME_clat.N.log``,
``NAME_slat.N.log``, ``NAME_bw.N.log``, ``NAME_iops.N.log``, NAME the option's value or the
job's name, N the clone's number in the file counting each ``numjobs`` clone (fio's thread
number): a job with ``numjobs`` > 1 writes one log of each kind per clone, from that clone's
requests (the records' host queue). ``per_job_logs=0`` leaves ``.N`` out and writes the clones'
lines into one file, clone after clone. See docs/fio.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .api import RECORD_FIELDS
from .fio import FioError, FioFile, FioJob

# The log options and the files each writes (their suffixes), as fio 3.33 (HOWTO: write_*_log).
LOG_OPTIONS = {
    "write_lat_log": ("lat", "clat", "slat"),
    "write_bw_log": ("bw",),
    "write_iops_log": ("iops",),
}
_OFF = {"0", "false", "off", "no"}
_PS_PER_MS = 10**9
_PS_PER_NS = 10**3
# The ops of the records fio logs (read, write, trim); flushes are not in fio's logs.
_LOGGED_OPS = 3
# The records' column of the host queue: a job's instance k of the run is queue k.
_QUEUE = 5


@dataclass(frozen=True)
class LogFile:
    """One log file to write: the job, the kind (``lat``, ``clat``, ``slat``, ``bw``,
    ``iops``), the path under the log directory, the line of the option that asked for it,
    the job's instances whose lines it holds, in order (one clone's, or with
    ``per_job_logs=0`` every clone's), and the host queue of the job's instance 0."""

    job_index: int
    kind: str
    path: Path
    where: str
    clones: tuple[int, ...] = (0,)
    first_queue: int = 0


def clone_of(position: int, clones: int) -> int:
    """The instance (fio's subjob number, the slice ``offset_increment`` places) whose log
    carries the job's ``position``-th thread number (0: the job's own). fio makes the clones
    after the job, numbering them from ``numjobs - 1`` down to 1 as they take the thread
    numbers that follow the job's (``fio --numjobs=3 --offset_increment=1M`` writes
    ``NAME_lat.2.log`` from offset 2M and ``NAME_lat.3.log`` from 1M; fio 3.33). ssdlab's
    instance k works the slice fio's subjob k does."""
    return 0 if position == 0 else clones - position


def _flag(job: FioJob, key: str, default: bool) -> bool:
    value = job.options.get(key)
    if value is None:
        return default
    return value.strip().lower() not in _OFF


def _whole(job: FioJob, key: str) -> int:
    text = job.options.get(key, "0").strip() or "0"
    if not text.isdigit():
        where = job.where.get(key, job.name)
        raise FioError(f"{where}: {key}={text!r}: expected a whole number of milliseconds")
    return int(text)


def _checked_name(base: str, where: str, key: str, directory: Path) -> Path:
    """``base`` as a path under ``directory``, refused (naming the line) when it would land
    elsewhere: an absolute path, a ``..`` step, or a folder that is a link out of it."""
    if not base.strip():
        raise FioError(f"{where}: {key}={base!r}: expected a log name")
    if os.path.isabs(base) or ".." in Path(base).parts or "\0" in base:
        raise FioError(
            f"{where}: {key}={base}: log files are written only under the log directory"
            f" ({directory}); expected a name inside it (such as {Path(base).name or 'job'}),"
            " and --log-dir DIR to choose the directory"
        )
    target = directory / base
    parent = target.parent
    if not parent.is_dir():
        raise FioError(f"{where}: {key}={base}: the folder {parent} does not exist")
    root = directory.resolve()
    if not parent.resolve().is_relative_to(root):
        raise FioError(
            f"{where}: {key}={base}: {parent} leads out of the log directory ({root});"
            " expected a name inside it"
        )
    return target


def plan(fio: FioFile, directory: Path) -> tuple[list[LogFile], list[str]]:
    """The log files the job file asks for, under ``directory``, and notes to print; a bad
    name or ``log_avg_msec`` is a FioError naming its line. Checked before the run, so that a
    long run does not end on a name it cannot write."""
    if not directory.is_dir():
        raise FioError(f"log directory {directory}: not a folder")
    files: list[LogFile] = []
    notes: list[str] = []
    thread = 0
    for index, job in enumerate(fio.jobs):
        clones = int(job.fields.get("numjobs", 1))
        # fio's thread number of the job (1-based, counting every clone before it), and the
        # host queue of its instance 0 (the run numbers instances the same way, from 0).
        first = thread + 1
        first_queue = thread
        thread += clones
        wanted = [key for key in LOG_OPTIONS if key in job.options]
        wanted = [key for key in wanted if job.options[key].strip().lower() not in _OFF]
        if not wanted:
            continue
        _whole(job, "log_avg_msec")
        per_job = _flag(job, "per_job_logs", True)
        every = tuple(clone_of(j, clones) for j in range(clones))
        for key in wanted:
            value = job.options[key].strip()
            base = value if value and value.lower() not in ("1", "true", "on", "yes") else job.name
            where = job.where.get(key, job.name)
            for kind in LOG_OPTIONS[key]:
                # Per clone: NAME_kind.N.log, N the clone's thread number; with
                # per_job_logs=0 one NAME_kind.log, which fio's clones each append to.
                named = (
                    [(f"{base}_{kind}.{first + j}.log", (every[j],)) for j in range(clones)]
                    if per_job
                    else [(f"{base}_{kind}.log", every)]
                )
                for name, mine in named:
                    path = _checked_name(name, where, key, directory)
                    files.append(LogFile(index, kind, path, where, mine, first_queue))
    seen: dict[Path, LogFile] = {}
    for log in files:
        if log.path in seen and seen[log.path].job_index != log.job_index:
            raise FioError(
                f"{log.where}: {log.path.name} is also written by the log at"
                f" {seen[log.path].where}; give the jobs different log names"
            )
        seen[log.path] = log
    return files, notes


def _rows(records: bytes | None, queue: int | None) -> Any:
    import numpy as np

    if not records:
        return np.zeros((0, RECORD_FIELDS), dtype=np.uint64)
    rows = np.frombuffer(records, dtype="<u8").reshape(-1, RECORD_FIELDS)
    keep = rows[:, 0] < _LOGGED_OPS
    if queue is not None:
        keep &= rows[:, _QUEUE] == queue
    return rows[keep]


def samples(
    job: FioJob,
    kind: str,
    records: bytes | None,
    window: tuple[int, int],
    queue: int | None = None,
) -> list[tuple[int, ...]]:
    """The lines of one log of one job, as tuples (time_ms, value, direction, block size[,
    offset], priority). ``window`` is the job's measured time (ps); ``queue``, when given, keeps
    the requests of that host queue only (one clone's)."""
    import numpy as np

    rows = _rows(records, queue)
    start_ps, end_ps = window
    done_ps = rows[:, 2] + rows[:, 3]
    order = np.argsort(done_ps, kind="stable")
    rows, done_ps = rows[order], done_ps[order]
    time_ms = ((done_ps - np.uint64(start_ps)) // np.uint64(_PS_PER_MS)).astype(np.int64)
    lat_ns = (rows[:, 3] // np.uint64(_PS_PER_NS)).astype(np.int64)
    size = rows[:, 4].astype(np.int64)
    op = rows[:, 0].astype(np.int64)
    # The value of each request in this log: total and completion latency are one figure
    # here (ssdlab times a request from arrival to completion, the submission inside it) and
    # the submission latency is zero, as in the JSON report; a request's bandwidth is fio's
    # bytes × 10^6 over its latency in ns; an IOPS sample is 1.
    if kind in ("lat", "clat"):
        value = lat_ns
    elif kind == "slat":
        value = np.zeros(len(rows), dtype=np.int64)
    elif kind == "bw":
        value = np.where(lat_ns > 0, size * 1_000_000 // np.maximum(lat_ns, 1), 0)
    else:
        value = np.ones(len(rows), dtype=np.int64)
    avg_ms = _whole(job, "log_avg_msec")
    with_offset = _flag(job, "log_offset", False)
    if avg_ms == 0:
        offset = rows[:, 1].astype(np.int64)
        columns = [time_ms, value, op, size] + ([offset] if with_offset else [])
        zero = np.zeros(len(rows), dtype=np.int64)
        return [tuple(int(x) for x in r) for r in zip(*columns, zero, strict=True)]
    return _windowed(job, kind, time_ms, value, size, op, avg_ms, (end_ps - start_ps), with_offset)


def _windowed(
    job: FioJob,
    kind: str,
    time_ms: Any,
    value: Any,
    size: Any,
    op: Any,
    avg_ms: int,
    measured_ps: int,
    with_offset: bool,
) -> list[tuple[int, ...]]:
    """One line per direction and ``avg_ms`` window that has requests, stamped at the
    window's end (the last, partial window at the end of the measured time, as fio writes
    what is left of its window when the job ends). Latency logs
    carry the window's mean (rounded, as fio) or maximum (``log_max_value=1``); bandwidth and
    IOPS logs the window's KiB/s and requests/s over its length, as fio's windowed samples."""
    import numpy as np

    # The last window ends with the measured time, in whole ms rounded up (so after every
    # completion's own time, which is rounded down).
    end_ms = max(-(-measured_ps // _PS_PER_MS), 1)
    log_max = _flag(job, "log_max_value", False)
    slot = time_ms // avg_ms
    out: list[tuple[int, ...]] = []
    for k in np.unique(slot):
        stamp = min(int(k + 1) * avg_ms, end_ms)
        length_ms = max(stamp - int(k) * avg_ms, 1)
        for ddir in range(_LOGGED_OPS):
            mine = (slot == k) & (op == ddir)
            if not mine.any():
                continue
            if kind == "bw":
                figure = int(size[mine].sum()) * 1000 // length_ms // 1024
            elif kind == "iops":
                figure = int(np.count_nonzero(mine)) * 1000 // length_ms
            elif log_max:
                figure = int(value[mine].max())
            else:
                figure = int(float(value[mine].mean()) + 0.5)
            out.append((stamp, figure, ddir, 0) + ((0,) if with_offset else ()) + (0,))
    return out


def write(
    fio: FioFile,
    logs: Sequence[LogFile],
    records: Sequence[bytes | None],
    windows: Sequence[tuple[int, int]],
) -> None:
    """Write the planned ``logs`` from each job's records and measured window (ps): each file
    from its clones' requests, one clone's lines after another's."""
    for log in logs:
        job = fio.jobs[log.job_index]
        lines = [
            line
            for clone in log.clones
            for line in samples(
                job,
                log.kind,
                records[log.job_index],
                windows[log.job_index],
                log.first_queue + clone,
            )
        ]
        text = "".join(", ".join(map(str, line)) + "\n" for line in lines)
        log.path.write_text(text)


def measured_window(result: Mapping[str, Any]) -> tuple[int, int]:
    """The job's measured time (ps) in its result: from its end back over its measured
    length (the same window the JSON report's bandwidth samples use)."""
    runtime_s = float(result["sim"]["measured_time_s"])
    end_ps = int(round(float(result["sim"]["simulated_time_s"]) * 1e12))
    return end_ps - int(round(runtime_s * 1e12)), end_ps
