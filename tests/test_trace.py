"""Trace replay, trace statistics and workload models, from Python and from the command line."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ssdlab
from conftest import assert_user_error, run_cli, without_wall

FIXTURES = Path(__file__).resolve().parents[1] / "crates/ssdlab/tests/fixtures/traces"
SHARED = Path(__file__).resolve().parents[2] / "shared/traces"


def shared(name: str) -> Path:
    path = SHARED / name
    if not path.exists():
        pytest.skip(f"{path} is not there")
    return path


# --------------------------------------------------------------------------------------------
# API


def test_replay_from_python_is_deterministic(small_config: ssdlab.Config) -> None:
    trace = ssdlab.Trace(FIXTURES / "umass_spc.csv", repeat=2, mode="timed")
    a = ssdlab.run(small_config, trace=trace, seed=3)
    b = ssdlab.run(small_config, trace=str(FIXTURES / "umass_spc.csv"), repeat=2, seed=3)
    assert without_wall(a.to_json()) == without_wall(b.to_json())
    data = a.to_dict()
    assert data["job"]["trace"].endswith("umass_spc.csv")
    assert data["trace"]["format"] == "spc"
    assert data["trace"]["replayed"] == 14
    assert data["trace"]["mapping"]["layout"] == "side-by-side"
    assert data["sim"]["stop_reason"] == "trace end"
    assert "trace:" in a.summary()


def test_synthetic_results_have_no_trace_section(tiny_result: ssdlab.Result) -> None:
    assert "trace" not in tiny_result.to_dict()


def test_flush_records_and_latencies(small_config: ssdlab.Config) -> None:
    result = ssdlab.run(
        small_config, trace=FIXTURES / "fio_v2.log", mode="afap", record_requests=True
    )
    assert result.to_dict()["ops"]["flush"]["count"] == 1
    assert len(result.latencies("flush")) == 1
    assert 3 in set(result.requests()["op"].tolist())


def test_end_flush_writes_the_buffers_dirty_lines_back(small_config: ssdlab.Config) -> None:
    # Seed 001 (issue 40): a replay that ends with a Flush leaves no dirty line in a write-back
    # buffer, and the Flush is not counted as a trace request.
    cached = (
        small_config.set("cache.capacity", "1MiB")
        .set("cache.mode", "write-back")
        .set("cache.flush_high_watermark", 0.0)
    )
    kept, drained = (
        ssdlab.run(cached, trace=FIXTURES / "umass_spc.csv", end_flush=flag, seed=3).to_dict()
        for flag in (False, True)
    )
    assert kept["cache"]["dirty_lines_at_end"] > 0
    assert "flush" not in kept["ops"]
    assert drained["cache"]["dirty_lines_at_end"] == 0
    assert drained["cache"]["flushes"]["explicit"] == kept["cache"]["dirty_lines_at_end"]
    assert drained["ops"]["flush"]["count"] == 1
    assert drained["trace"]["replayed"] == kept["trace"]["replayed"]
    # The writes' latencies are the same; the run (and so IOPS over it) lasts until the drain.
    assert drained["ops"]["write"]["latency_us"] == kept["ops"]["write"]["latency_us"]
    assert drained["ops"]["write"]["count"] == kept["ops"]["write"]["count"]


def test_cli_end_flush_drains_the_buffer(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = run_cli(
        "run", "small-tlc", "--set", 'cache.capacity="1MiB"', "--set", 'cache.mode="write-back"',
        "--trace", FIXTURES / "umass_spc.csv", "--end-flush", "--json", out, "-q",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result["job"]["end_flush"] is True
    assert result["cache"]["dirty_lines_at_end"] == 0
    assert result["ops"]["flush"]["count"] == 1


def test_bad_options_are_job_errors(small_config: ssdlab.Config) -> None:
    with pytest.raises(ssdlab.JobError, match="format"):
        ssdlab.Trace(FIXTURES / "msr.csv", format="nope")
    with pytest.raises(ssdlab.JobError, match="time_scale"):
        ssdlab.Trace(FIXTURES / "msr.csv", time_scale=0)
    with pytest.raises(ValueError, match="either a job or a trace"):
        ssdlab.run(small_config, {"rw": "read"}, trace=FIXTURES / "msr.csv")
    with pytest.raises(TypeError, match="need a trace"):
        ssdlab.run(small_config, {"rw": "read", "io_count": 10}, mode="afap")


def test_trace_errors_name_file_line_and_text(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("0,1,4096,w,0.0\n0,2,4096,q,0.1\n")
    with pytest.raises(ssdlab.TraceError) as info:
        ssdlab.trace_stats(bad, format="spc")
    message = str(info.value)
    assert "bad.csv, line 2" in message and "Opcode" in message and "0,2,4096,q,0.1" in message
    stats = ssdlab.trace_stats(bad, format="spc", skip_bad_lines=True)
    assert stats["source"]["skipped_bad_lines"] == 1
    assert stats["requests"] == 1


def test_stats_of_fixtures_and_compressed_files(tmp_path: Path) -> None:
    plain = ssdlab.trace_stats(FIXTURES / "blkparse.txt")
    assert plain["source"]["format"] == "blkparse"
    assert (plain["reads"], plain["writes"], plain["trims"], plain["flushes"]) == (2, 2, 1, 1)
    packed = tmp_path / "blk.txt.gz"
    packed.write_bytes(gzip.compress((FIXTURES / "blkparse.txt").read_bytes()))
    zipped = ssdlab.trace_stats(packed)
    assert zipped["source"]["compression"] == "gzip"
    assert {k: v for k, v in zipped.items() if k != "source"} == {
        k: v for k, v in plain.items() if k != "source"
    }
    queued = ssdlab.trace_stats(FIXTURES / "blkparse.txt", blkparse_event="Q")
    assert queued["requests"] == 6


def test_formats_and_models_are_listed() -> None:
    names = {f["name"] for f in ssdlab.trace_formats()}
    assert {"msr", "spc", "disksim", "blkparse", "tencent", "alibaba", "fio"} <= names
    models = {m["name"]: m for m in ssdlab.trace_models()}
    assert {"financial1", "financial2", "msnfs", "radius", "web1"} <= set(models)
    assert "Table 8" in models["financial1"]["source"]
    assert models["msnfs"]["params"]["read_fraction"] == pytest.approx(0.85)


def test_generate_then_measure_round_trip(tmp_path: Path) -> None:
    out = tmp_path / "fin2.csv"
    counts = ssdlab.generate_trace("financial2,count=20000", out, format="msr", seed=4)
    assert counts == {"written": 20_000, "dropped": 0}
    stats = ssdlab.trace_stats(out)
    assert stats["source"]["format"] == "msr"
    # Seed 002 Table 8, Financial2: WR 0.84, RR 0.16, WS 2.49 KB.
    assert stats["read_ratio_by_count"] == pytest.approx(0.16, abs=0.01)
    assert stats["write"]["mean_bytes"] == pytest.approx(2.49 * 1024, rel=0.05)


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=400))
def test_no_bytes_crash_the_reader(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "t"
    path.write_bytes(data)
    for fmt in (None, "msr", "blkparse", "fio"):
        try:
            ssdlab.trace_stats(path, format=fmt, skip_bad_lines=True)
        except ssdlab.TraceError:
            pass


# --------------------------------------------------------------------------------------------
# CLI


def test_cli_replays_each_shared_trace(tmp_path: Path, preset_name: str) -> None:
    for name, fmt in (
        ("msr_hm0_sample.csv", "msr"),
        ("disksim_tpcc_small.trace", "disksim"),
        ("ssdsim_financial1_sample.ascii", "ssdsim"),
    ):
        out = tmp_path / f"{name}.json"
        proc = run_cli(
            "run", preset_name, "--trace", shared(name), "--format", fmt, "--json", out, "-q"
        )
        assert proc.returncode == 0, proc.stderr
        data = json.loads(out.read_text())
        assert data["trace"]["replayed"] == data["trace"]["per_pass"] > 0


def test_cli_closed_loop_with_options(tmp_path: Path, preset_name: str) -> None:
    out = tmp_path / "r.json"
    proc = run_cli(
        "run", preset_name, "--trace", FIXTURES / "umass_spc.csv", "--mode", "afap",
        "--iodepth", "4", "--device", "0-1", "--layout", "overlay", "--fit", "scale",
        "--repeat", "3", "--io-count", "10", "--json", out,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "trace: spc" in proc.stdout
    data = json.loads(out.read_text())
    assert data["sim"]["requests"] == 10
    assert data["trace"]["filtered_device"] == 2
    assert data["job"]["mode"] == "afap"


def test_cli_bad_trace_line_is_one_line_exit_2(tmp_path: Path, preset_name: str) -> None:
    bad = tmp_path / "bad.trace"
    bad.write_text("0 0 8 8 1\n10 0 16 8 1\n20 0 x 8 1\n")
    proc = run_cli("run", preset_name, "--trace", bad)
    line = assert_user_error(proc, "bad.trace, line 3", "start_sector", "20 0 x 8 1")
    assert line.endswith(
        ', field `start_sector`: got "x", expected a sector number (integer) (disksim trace: '
        'time_ns device start_sector size_sectors op); the line: "20 0 x 8 1"'
    )
    # `trace stats` says the same in one line, exit 2; so does a line of another format.
    proc = run_cli("trace", "stats", bad)
    assert_user_error(proc, 'bad.trace, line 3, field `start_sector`: got "x"')
    fio = tmp_path / "bad.iolog"
    fio.write_text("fio version 3 iolog\n1 f add\n2 f erase 0 8\n")
    proc = run_cli("run", preset_name, "--trace", fio, "--format", "fio")
    assert_user_error(proc, 'bad.iolog, line 3, field `action`: got "erase", expected read,')
    out = tmp_path / "r.json"
    proc = run_cli("run", preset_name, "--trace", bad, "--skip-bad-lines", "--json", out, "-q")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["trace"]["skipped_bad_lines"] == 1


def test_cli_rejects_mixed_flags(preset_name: str) -> None:
    proc = run_cli("run", preset_name, "--trace", FIXTURES / "msr.csv", "--rw", "read")
    assert_user_error(proc, "--rw", "--trace")
    proc = run_cli("run", preset_name, "--rw", "read", "--mode", "afap")
    assert_user_error(proc, "--mode", "--trace")
    proc = run_cli("run", preset_name, "--trace", FIXTURES / "msr.csv", "--format", "nope")
    assert_user_error(proc, "format", "msr")
    proc = run_cli("run", preset_name, "--trace", "/no/such/file.csv")
    assert_user_error(proc, "/no/such/file.csv")


def test_cli_trace_stats_table_json_and_plots(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    plots = tmp_path / "plots"
    proc = run_cli(
        "trace", "stats", shared("ssdsim_financial1_sample.ascii"), "--json", out, "--plot", plots
    )
    assert proc.returncode == 0, proc.stderr
    for needle in ("read ratio", "footprint", "inter-arrival", "IRD", "overwrite", "hot set"):
        assert needle in proc.stdout
    data = json.loads(out.read_text())
    assert data["schema"] == "ssdlab.trace_stats/1"
    assert data["requests"] == 10_000
    for png in ("sizes.png", "inter_arrival.png", "ird.png", "lba.png"):
        assert (plots / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The address-over-time sample behind lba.png stays out of the JSON.
    assert "sample" not in data


def test_trace_stats_samples_requests_evenly_for_the_address_over_time_scatter() -> None:
    data = ssdlab.trace_stats(shared("ssdsim_financial1_sample.ascii"), sample_points=1000)
    sample = data["sample"]
    assert 1000 <= len(sample["time_s"]) < 2000 and sample["every"] == 8
    assert len(sample["offset_bytes"]) == len(sample["op"]) == len(sample["time_s"])
    assert sample["time_s"] == sorted(sample["time_s"]) and sample["time_s"][0] == 0
    assert set(sample["op"]) <= {"read", "write"}
    assert "sample" not in ssdlab.trace_stats(shared("ssdsim_financial1_sample.ascii"))


def test_cli_generate_models_and_formats(tmp_path: Path) -> None:
    out = tmp_path / "web1.trace.gz"
    proc = run_cli("trace", "generate", "web1", "-n", "5000", "-o", out)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("trace", "stats", out, "--json", "-")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["source"]["compression"] == "gzip"
    assert data["requests"] == 5000
    proc = run_cli("trace", "models")
    assert proc.returncode == 0 and "financial1" in proc.stdout and "stand-ins" in proc.stdout
    proc = run_cli("trace", "formats")
    assert proc.returncode == 0 and "blkparse" in proc.stdout
    proc = run_cli("trace", "stats", FIXTURES / "msr.csv", "--blkparse-event", "X")
    assert_user_error(proc, "--blkparse-event")


# --------------------------------------------------------------------------------------------
# Issue 15: real blkparse output, pipes, filters that select nothing


def test_cli_reads_real_blkparse_output_without_skip_bad_lines(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    proc = run_cli("trace", "stats", FIXTURES / "blkparse_real.txt", "--json", out)
    assert proc.returncode == 0, proc.stderr
    stats = json.loads(out.read_text())
    assert stats["source"]["format"] == "blkparse"
    assert stats["source"]["skipped_bad_lines"] == 0
    assert stats["source"]["not_request_lines"] == 18
    assert (stats["requests"], stats["reads"], stats["writes"], stats["flushes"]) == (4, 2, 1, 1)


def _fifo_writer(path: Path, text: str) -> threading.Thread:
    def write() -> None:
        with contextlib.suppress(OSError), path.open("w") as f:
            f.write(text)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_cli_replay_of_a_fifo_is_refused_not_hung(tmp_path: Path, preset_name: str) -> None:
    fifo = tmp_path / "t.fifo"
    os.mkfifo(fifo)
    # A writer, as a user's `mkfifo` + producer would have: before, the replay read the pipe in
    # the prescan, then opened it again and waited forever.
    writer = _fifo_writer(fifo, "0 0 8 8 1\n1000 0 16 8 0\n")
    proc = run_cli("run", preset_name, "--trace", fifo, "-q", timeout=60)
    assert_user_error(proc, "t.fifo", "pipe or fifo", "regular file")
    # Unblock the writer if the replay did not open the pipe.
    with contextlib.suppress(OSError):
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        os.close(fd)
    writer.join(timeout=5)


@pytest.mark.parametrize(
    "command",
    [
        ("trace", "stats", "/dev/zero"),
        ("swap", "small-tlc", "--memory", "1MiB", "--swap-size", "1MiB", "--workload", "/dev/zero"),
    ],
)
def test_cli_an_input_with_no_line_break_is_refused_not_read_forever(
    command: tuple[str, ...],
) -> None:
    # Before: `trace stats` read /dev/zero forever (an over-long line was drained to its end)
    # and `swap` held it all in memory until the machine killed it.
    proc = run_cli(*command, timeout=60)
    assert_user_error(proc, "/dev/zero", "line 1", "no line break in 16 MiB")


def test_cli_trace_stats_reads_dev_stdin_from_a_pipe(tmp_path: Path) -> None:
    text = (FIXTURES / "umass_spc.csv").read_text()
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "ssdlab", "trace", "stats", "/dev/stdin", "--json", "-"],
        input=text,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["requests"] == 7


@pytest.mark.parametrize(
    ("flags", "needles"),
    [
        (("--device", "99"), ("--device", "got 99", "device(s) 0, 1, 2")),
        (("--start", "10s"), ("--start", "got 10 s", "span 0 s to 0.03")),
        (("--stop", "0s"), ("--stop", "got 0 s", "first request (at 0 s)")),
    ],
)
def test_cli_filters_that_select_nothing_are_refused(
    preset_name: str, flags: tuple[str, ...], needles: tuple[str, ...]
) -> None:
    proc = run_cli("run", preset_name, "--trace", FIXTURES / "umass_spc.csv", *flags, "-q")
    assert_user_error(proc, *needles)


def test_cli_blkparse_event_not_in_the_file_is_refused(tmp_path: Path, preset_name: str) -> None:
    trace = tmp_path / "d_only.txt"
    trace.write_text(
        "  8,0    1        1     0.000000000  4162  D  WS 2048 + 8 [fio]\n"
        "  8,0    1        2     0.000100000  4162  D   R 4096 + 16 [fio]\n"
    )
    proc = run_cli("run", preset_name, "--trace", trace, "--blkparse-event", "Q", "-q")
    assert_user_error(proc, "--blkparse-event", "got Q", "2 D events")


def test_cli_trace_stats_of_a_device_not_in_the_trace_is_refused() -> None:
    proc = run_cli("trace", "stats", FIXTURES / "umass_spc.csv", "--device", "99")
    assert_user_error(proc, "(--device): got 99", "device(s) 0, 1, 2")


def test_cli_timed_replay_names_a_leading_outlier(tmp_path: Path, preset_name: str) -> None:
    """A line stamped long before the rest makes a timed replay idle; the result and the
    summary say so (issue 15, defect 3)."""
    trace = tmp_path / "outlier.trace"
    # DiskSim/MQSim ASCII, times in ns: one request at 0, three 10 s later, 1 µs apart.
    trace.write_text("0 0 0 8 1\n10000000000 0 8 8 1\n10000001000 0 16 8 1\n10000002000 0 24 8 1\n")
    out = tmp_path / "r.json"
    proc = run_cli("run", preset_name, "--trace", trace, "--json", out)
    assert proc.returncode == 0, proc.stderr
    gap = json.loads(out.read_text())["trace"]["leading_gap_s"]
    assert gap == pytest.approx(10.0)
    assert "before the second" in proc.stdout and "--start" in proc.stdout


def test_nvme_traces_through_the_cli_and_python(tmp_path: Path) -> None:
    """The kernel's NVMe tracepoint text (docs/traces.md): detected, described by `trace
    stats`, replayed with each write's placement identifier on an FDP drive; a placement the
    drive lacks is one line naming the trace's line (exit 2)."""
    fdp, zns = FIXTURES / "nvme_fdp.txt", FIXTURES / "nvme_zns.txt"
    stats = ssdlab.trace_stats(fdp)
    assert stats["source"]["format"] == "nvme"
    s = stats
    assert s["writes"] == 16 and s["reads"] == 2 and s["flushes"] == 1
    by_id = {(d["directive"], d["id"]): d["writes"] for d in s["directives"]}
    assert by_id == {("placement", 1): 8, ("placement", 3): 4, ("placement", 2): 1}
    zs = ssdlab.trace_stats(zns, lba_bytes=4096)
    assert zs["appends"] == 3 and zs["zone_management"] == 4
    with pytest.raises(ssdlab.TraceError, match="lba_bytes"):
        ssdlab.trace_stats(FIXTURES / "msr.csv", format="msr", lba_bytes=4096)
    out = tmp_path / "r.json"
    proc = run_cli(
        "run", "small-tlc", "--set", "fdp.handles=4", "--trace", fdp, "--json", out, "-q"
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    handles = result["device"]["fdp"]["per_handle"]
    assert [h["host_bytes_written"] for h in handles] == [69632, 262144, 8192, 131072]
    proc = run_cli("run", "small-tlc", "--set", "fdp.handles=2", "--trace", fdp, "-q")
    assert_user_error(proc, "nvme_fdp.txt, line 21: placement identifier 3")
    proc = run_cli("run", "small-tlc", "--trace", fdp, "--ignore-placement", "-q")
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("trace", "stats", zns, "--lba-bytes", "4096")
    assert proc.returncode == 0, proc.stderr
    assert "zone appends / management" in proc.stdout
    proc = run_cli("trace", "stats", fdp)
    assert proc.returncode == 0, proc.stderr
    assert "writes with placement id 3" in proc.stdout
