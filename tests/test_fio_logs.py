"""fio's log files (`write_lat_log`, `write_bw_log`, `write_iops_log`) from `ssdlab run --fio`:
the same job file run through fio's null engine and through ssdlab writes the same files, each
line with the same fields (fio 3.33's format, HOWTO "Log File Formats"); every line recounts
from the run's own records; fio's own fio2gnuplot reads them; and nothing is written outside
the log directory."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ssdlab
from conftest import assert_user_error, run_cli, run_fio_null
from ssdlab import fio, fio_logs

JOB = """\
[global]
ioengine=libaio
bs=4k
size=64m

[mix]
rw=randrw
iodepth=4
number_ios=300
write_lat_log=mixlog
write_bw_log=mixlog
write_iops_log
log_offset=1

[timed]
rw=randread
iodepth=8
runtime=20ms
time_based
write_lat_log
write_bw_log
log_avg_msec=2
"""

# The files both write: NAME_kind.N.log, N the job's number in the file.
EXPECTED = {
    "mixlog_lat.1.log",
    "mixlog_clat.1.log",
    "mixlog_slat.1.log",
    "mixlog_bw.1.log",
    "mix_iops.1.log",
    "timed_lat.2.log",
    "timed_clat.2.log",
    "timed_slat.2.log",
    "timed_bw.2.log",
}


def _read(path: Path) -> list[list[int]]:
    return [[int(x) for x in line.split(", ")] for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("ours")
    (where / "job.fio").write_text(JOB)
    logs = where / "logs"
    logs.mkdir()
    proc = run_cli("run", "small-tlc", "--fio", where / "job.fio", "-q", "--log-dir", logs)
    assert proc.returncode == 0, proc.stderr
    return logs


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed (apt install fio)")
def test_the_files_and_their_lines_are_fios(ours: Path, tmp_path: Path) -> None:
    # fio's null engine runs 20 ms too briefly for its windowed bandwidth samples (its helper
    # thread takes them): fio runs 1 s; the lines' fields do not depend on it.
    (tmp_path / "job.fio").write_text(JOB.replace("runtime=20ms", "runtime=1s"))
    run_fio_null(tmp_path / "job.fio", tmp_path)
    theirs = {p.name for p in tmp_path.glob("*.log")}
    assert theirs == EXPECTED
    assert {p.name for p in ours.iterdir()} == EXPECTED
    for name in sorted(EXPECTED):
        mine, real = _read(ours / name), _read(tmp_path / name)
        assert mine and real, name
        # The same fields on every line: 6 with log_offset=1, else 5.
        assert {len(line) for line in mine} == {len(line) for line in real}, name
        # Per request: the block size is the request's; windowed (log_avg_msec): 0, as fio.
        assert {line[3] for line in mine} == {line[3] for line in real}, name
        # Directions are read/write codes; the priority column is 0.
        assert {line[2] for line in mine} <= {0, 1} and {line[-1] for line in mine} == {0}
        times = [line[0] for line in mine]
        assert times == sorted(times), name


def test_the_lines_recount_from_the_records(ours: Path) -> None:
    """The oracle: each log recounted plainly from a run of the same file's records."""
    path = ours.parent / "job.fio"
    parsed = fio.load(path)
    results = ssdlab.run("small-tlc", [job.job() for job in parsed.jobs], record_requests=True)
    mix, timed = results.flows
    rows = np.frombuffer(mix.record_bytes or b"", dtype="<u8").reshape(-1, 6)
    start, _ = fio_logs.measured_window(mix.to_dict())
    done = sorted(
        ((int(r[2] + r[3]) - start) // 10**9, int(r[3]) // 1000, int(r[0]), int(r[4]), int(r[1]))
        for r in rows
    )
    lat = _read(ours / "mixlog_lat.1.log")
    assert len(lat) == len(rows) == 300
    # Per request: time (ms), latency (ns), direction, size, offset, priority.
    assert sorted(lat) == sorted([t, ns, op, size, off, 0] for t, ns, op, size, off in done)
    assert _read(ours / "mixlog_clat.1.log") == lat
    assert {line[1] for line in _read(ours / "mixlog_slat.1.log")} == {0}
    bw = _read(ours / "mixlog_bw.1.log")
    assert sorted(line[1] for line in bw) == sorted(
        size * 1_000_000 // ns for _, ns, _, size, _ in done
    )
    assert {line[1] for line in _read(ours / "mix_iops.1.log")} == {1}
    # Windowed (2 ms): per window, the mean latency (rounded) and KiB/s over the window.
    rows = np.frombuffer(timed.record_bytes or b"", dtype="<u8").reshape(-1, 6)
    start, end = fio_logs.measured_window(timed.to_dict())
    ms = (rows[:, 2] + rows[:, 3] - start) // 10**9
    lat_ns = rows[:, 3] // 1000
    end_ms = -(-(end - start) // 10**9)
    want_lat, want_bw = [], []
    for k in sorted(set(int(m) // 2 for m in ms)):
        inside = (ms // 2) == k
        stamp = min(2 * (k + 1), end_ms)
        length = stamp - 2 * k
        want_lat.append([stamp, int(float(lat_ns[inside].mean()) + 0.5), 0, 0, 0])
        want_bw.append([stamp, int(rows[inside, 4].sum()) * 1000 // length // 1024, 0, 0, 0])
    assert _read(ours / "timed_lat.2.log") == want_lat
    assert _read(ours / "timed_bw.2.log") == want_bw
    assert len(want_lat) >= 10  # 20 ms in 2 ms windows


@pytest.mark.skipif(
    shutil.which("fio2gnuplot") is None, reason="fio2gnuplot (fio's tools) is not installed"
)
def test_fio2gnuplot_reads_them(ours: Path, tmp_path: Path) -> None:
    for p in ours.glob("*_bw.*.log"):
        shutil.copy(p, tmp_path)
    tool = shutil.which("fio2gnuplot") or ""
    # A python3 script needing `six`: the system's python3 has it where a distribution ships
    # the tool (Debian's python3-six), the python3 first on PATH may not.
    for python in ("/usr/bin/python3", "python3"):
        done = subprocess.run(
            [python, tool, "-b"], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        if done.returncode == 0 or "ModuleNotFoundError" not in done.stderr:
            break
    if "ModuleNotFoundError" in done.stderr:
        pytest.skip(f"fio2gnuplot cannot run here: {done.stderr.strip()[-80:]}")
    assert done.returncode == 0, done.stdout + done.stderr
    # Its figures over the files' values (it skips lines at time 0, as it says).
    summary = (tmp_path / "result.global").read_text()
    values = [
        line[1]
        for name in sorted(p.name for p in tmp_path.glob("*_bw.*.log"))
        for line in _read(tmp_path / name)
        if line[0] > 0
    ]
    assert f"values_count={len(values)}" in summary
    assert f"max={max(values)}.00" in summary


def test_names_outside_the_log_directory_are_refused(tmp_path: Path) -> None:
    job = tmp_path / "job.fio"
    for value, needle in (
        ("/tmp/elsewhere", "written only under the log directory"),
        ("../up", "written only under the log directory"),
        ("nofolder/x", "does not exist"),
    ):
        job.write_text(f"[j]\nrw=read\nsize=1m\nwrite_lat_log={value}\n")
        proc = run_cli("run", "small-tlc", "--fio", job, "-q", cwd=tmp_path)
        assert_user_error(proc, f"{job}:4", f"write_lat_log={value}", needle)
    # A folder that is a link out of the directory.
    (tmp_path / "out").symlink_to(tmp_path.parent)
    job.write_text("[j]\nrw=read\nsize=1m\nwrite_bw_log=out/x\n")
    proc = run_cli("run", "small-tlc", "--fio", job, "-q", cwd=tmp_path)
    assert_user_error(proc, "leads out of the log directory")
    assert not list(tmp_path.parent.glob("x_bw*"))
    # Two jobs writing one file, and a bad log_avg_msec.
    job.write_text(
        "[a]\nrw=read\nsize=1m\nper_job_logs=0\nwrite_lat_log=same\n[b]\nrw=read\n"
        "size=1m\nper_job_logs=0\nwrite_lat_log=same\n"
    )
    assert_user_error(
        run_cli("run", "small-tlc", "--fio", job, "-q", cwd=tmp_path),
        "same_lat.log is also written",
    )
    job.write_text("[j]\nrw=read\nsize=1m\nwrite_lat_log\nlog_avg_msec=1.5\n")
    assert_user_error(
        run_cli("run", "small-tlc", "--fio", job, "-q", cwd=tmp_path),
        "log_avg_msec='1.5'",
        "whole number",
    )
    missing = tmp_path / "nowhere"
    assert_user_error(
        run_cli("run", "small-tlc", "--fio", job, "-q", "--log-dir", missing), "not a folder"
    )
    assert not any(p.suffix == ".log" for p in tmp_path.rglob("*"))


def test_the_working_directory_is_the_default(tmp_path: Path) -> None:
    job = tmp_path / "job.fio"
    job.write_text("[j]\nrw=randread\nsize=1m\nnumber_ios=40\nwrite_iops_log\n")
    proc = run_cli("run", "small-tlc", "--fio", job, "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(_read(tmp_path / "j_iops.1.log")) == 40
    assert {p.name for p in tmp_path.glob("*.log")} == {"j_iops.1.log"}


# numjobs clones: one log per clone, numbered by fio's thread number across the file; with
# per_job_logs=0 one file the clones share.
CLONES = """\
[global]
bs=4k
size=1m
number_ios=40

[a]
rw=randread
numjobs=3
write_lat_log=a
write_iops_log

[b]
rw=read
numjobs=2
write_bw_log=b
per_job_logs=0

[c]
rw=write
numjobs=2
write_iops_log=c
"""

# What fio 3.33 writes for CLONES (its null engine): job a's clones take thread numbers 1-3,
# b's 4-5 (one shared file), c's 6-7.
CLONE_FILES = {
    *(f"a_{kind}.{n}.log" for kind in ("lat", "clat", "slat") for n in (1, 2, 3)),
    *(f"a_iops.{n}.log" for n in (1, 2, 3)),
    "b_bw.log",
    "c_iops.6.log",
    "c_iops.7.log",
}


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed (apt install fio)")
def test_clones_write_the_files_fio_writes(tmp_path: Path) -> None:
    theirs, ours = tmp_path / "fio", tmp_path / "ours"
    theirs.mkdir()
    ours.mkdir()
    (theirs / "job.fio").write_text(CLONES)
    run_fio_null(theirs / "job.fio", theirs)
    assert {p.name for p in theirs.glob("*.log")} == CLONE_FILES
    (ours / "job.fio").write_text(CLONES)
    proc = run_cli("run", "small-tlc", "--fio", ours / "job.fio", "-q", "--log-dir", ours)
    assert proc.returncode == 0, proc.stderr
    assert {p.name for p in ours.glob("*.log")} == CLONE_FILES
    # fio's number_ios is each clone's count, in both: every clone's file has its 40 lines.
    for kind in ("a_lat", "a_clat", "a_iops", "c_iops"):
        names = sorted(n for n in CLONE_FILES if n.startswith(kind + "."))
        for where in (ours, theirs):
            assert [len(_read(where / name)) for name in names] == [40] * len(names), kind
    # per_job_logs=0: the one file both clones append to.
    assert len(_read(ours / "b_bw.log")) == len(_read(theirs / "b_bw.log")) == 80


# Each clone's count and region as fio 3.33 makes them (fio's JSON has one entry per clone,
# ssdlab's one per job, as with group_reporting): number_ios per clone; size per clone
# (without number_ios, one pass of size each, sequential clones each from the region's
# start); number_ios above one pass of size stops at size; runtime without time_based stops
# at size too, with number_ios or without.
CLONE_COUNTS = """\
[global]
bs=4k
numjobs=3
write_lat_log
log_offset=1

[n]
rw=randread
size=1m
number_ios=40

[s]
rw=read
size=64k
offset=128k

[capped]
rw=randwrite
size=64k
number_ios=40

[timed]
rw=randread
size=32k
runtime=1s

[timed-capped]
rw=randread
size=64k
runtime=1s
number_ios=40
"""


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed (apt install fio)")
def test_each_clone_issues_its_own_count_over_its_own_size(tmp_path: Path) -> None:
    theirs, ours = tmp_path / "fio", tmp_path / "ours"
    theirs.mkdir()
    ours.mkdir()
    (theirs / "job.fio").write_text(CLONE_COUNTS)
    real = json.loads(run_fio_null(theirs / "job.fio", theirs, "--output-format=json"))
    (ours / "job.fio").write_text(CLONE_COUNTS)
    proc = run_cli(
        "run", "small-tlc", "--fio", ours / "job.fio", "-q", "--output-format", "json",
        "--log-dir", ours,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    mine = json.loads(proc.stdout)

    def ios(report: dict[str, Any]) -> dict[str, int]:
        out: dict[str, int] = {}
        for j in report["jobs"]:
            n = sum(j[d]["total_ios"] for d in ("read", "write", "trim"))
            out[j["jobname"]] = out.get(j["jobname"], 0) + n
        return out

    per_clone = {"n": 40, "s": 16, "capped": 16, "timed": 8, "timed-capped": 16}
    assert ios(mine) == ios(real) == {name: 3 * n for name, n in per_clone.items()}
    for number in range(1, 16):
        name = list(per_clone)[(number - 1) // 3]
        lines = {where: _read(where / f"{name}_lat.{number}.log") for where in (ours, theirs)}
        assert [len(x) for x in lines.values()] == [per_clone[name]] * 2, (name, number)
        if name == "s":
            # Each sequential clone reads the job's 64 KiB from offset 128 KiB, as fio's.
            offsets = {where: sorted(line[4] for line in x) for where, x in lines.items()}
            assert offsets[ours] == offsets[theirs] == [(128 + 4 * k) << 10 for k in range(16)]


def test_each_clone_s_log_holds_that_clone_s_requests(tmp_path: Path) -> None:
    """The oracle: each clone's file recounted from the run's records of its host queue; and
    the clone behind each number is fio's (``fio --numjobs=3 --offset_increment=1M`` writes
    NAME.2 from offset 2M, NAME.3 from 1M); each sequential clone writes its 50 requests from
    the region's start, as fio's clones do."""
    text = (
        "[s]\nrw=write\nbs=4k\nsize=3m\nnumjobs=3\nnumber_ios=50\nwrite_lat_log=s\nlog_offset=1\n"
    )
    (tmp_path / "job.fio").write_text(text)
    proc = run_cli("run", "small-tlc", "--fio", tmp_path / "job.fio", "-q", "--log-dir", tmp_path)
    assert proc.returncode == 0, proc.stderr
    parsed = fio.load(tmp_path / "job.fio")
    result = ssdlab.run("small-tlc", parsed.jobs[0].job(), record_requests=True)
    rows = np.frombuffer(result.record_bytes or b"", dtype="<u8").reshape(-1, 6)
    start, _ = fio_logs.measured_window(result.to_dict())
    assert len(rows) == 150
    for number, clone in ((1, 0), (2, 2), (3, 1)):
        assert fio_logs.clone_of(number - 1, 3) == clone
        lines = _read(tmp_path / f"s_lat.{number}.log")
        mine = rows[rows[:, 5] == clone]
        assert len(lines) == len(mine) > 0, number
        # time (ms), latency (ns), direction, size, offset, priority, from the clone's records.
        want = sorted(
            [
                (int(r[2] + r[3]) - start) // 10**9,
                int(r[3]) // 1000,
                int(r[0]),
                int(r[4]),
                int(r[1]),
                0,
            ]
            for r in mine
        )
        assert sorted(lines) == want, number
        # Each clone writes the region's first 50 blocks.
        assert sorted(line[4] for line in lines) == [4096 * k for k in range(50)], number
    # per_job_logs=0: one file, the clones' lines one clone after another (thread order).
    (tmp_path / "one").mkdir()
    (tmp_path / "job1.fio").write_text(text + "per_job_logs=0\n")
    proc = run_cli(
        "run", "small-tlc", "--fio", tmp_path / "job1.fio", "-q", "--log-dir", tmp_path / "one"
    )
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in (tmp_path / "one").glob("s_lat*")] == ["s_lat.log"]
    lines = _read(tmp_path / "one" / "s_lat.log")
    parts = [_read(tmp_path / f"s_lat.{n}.log") for n in (1, 2, 3)]
    assert lines == parts[0] + parts[1] + parts[2]
