"""Progress of long work (issue 45, point 11): runtime-bound runs report a fraction of their
runtime (they reported no total, fio's time_based a total of 2^62 and an ETA of 110319336018
hours); off a terminal, a line on stderr every few seconds; the trace replay says when its
timestamps are too coarse for a timed replay (point 14)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

import ssdlab
from conftest import run_cli
from ssdlab.cli.progress import LINE_EVERY_S, line_progress, progress_line

TRACES = Path(__file__).resolve().parents[1] / "crates" / "ssdlab" / "tests" / "fixtures" / "traces"


def _reports(job: dict[str, object]) -> list[tuple[int, int]]:
    seen: list[tuple[int, int]] = []
    result = ssdlab.run(
        ssdlab.Config.load("small-tlc"),
        job,
        seed=1,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert result.to_dict()["sim"]["stop_reason"] == "runtime reached"
    return [(done, total) for done, total in seen if done > 0]


def test_a_runtime_bound_run_reports_a_fraction_of_its_runtime() -> None:
    base = {"rw": "randread", "bs": "4KiB", "iodepth": 32, "runtime": "3s"}
    for job in (base, {**base, "io_count": 1 << 62}):  # the second: fio's time_based
        reports = _reports(job)
        assert reports, "a run of a few wall seconds reports its progress"
        for done, total in reports:
            assert 0 < total < 1 << 40, (job, done, total)
            assert done / total < 1.05, (job, done, total)


def test_a_progress_line_has_a_fraction_and_the_time_left() -> None:
    assert progress_line("simulating", 250, 1000, 30.0) == (
        "simulating: 25.0% (250 of 1,000), 0:30 elapsed, about 1:30 left"
    )
    assert progress_line("simulating", 0, 0, 65.0) == "preconditioning the drive: 1:05 elapsed"
    assert progress_line("simulating", 12, 0, 3700.0) == (
        "simulating: 12 requests, 1:01:40 elapsed"
    )


def test_after_the_last_request_the_line_says_the_drive_works_on() -> None:
    """Every request completed, the run waits for the device to be idle (a write cache's
    write-back, GC): no "about 0:00 left" while it does."""
    assert progress_line("simulating", 40_000, 40_000, 157.0) == (
        "simulating: 40,000 of 40,000 requests done, 2:37 elapsed;"
        " the run goes on until the device is idle (write-back, GC)"
    )


def test_off_a_terminal_a_line_every_few_seconds() -> None:
    now = [100.0]
    out = io.StringIO()
    update = line_progress("simulating", out, clock=lambda: now[0])
    for step in range(40):
        now[0] = 100.0 + step * 0.5
        update(step, 40)
    lines = out.getvalue().splitlines()
    # 19.5 s at one line per LINE_EVERY_S, none before the first LINE_EVERY_S.
    assert len(lines) == int(19.5 // LINE_EVERY_S), lines
    assert lines[0].startswith("simulating: 25.0% (10 of 40), 0:05 elapsed")


def test_a_short_run_off_a_terminal_prints_no_progress() -> None:
    proc = run_cli("run", "small-tlc", "--rw", "randread", "--io-count", "500")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_a_timed_replay_of_whole_second_timestamps_warns_and_suggests_afap() -> None:
    tencent = TRACES / "tencent.csv"  # Tencent CBS: Unix time in whole seconds
    proc = run_cli("run", "small-tlc", "--trace", tencent, "-q")
    assert proc.returncode == 0, proc.stderr
    assert "warning:" in proc.stderr and "1 s" in proc.stderr, proc.stderr
    assert "--mode afap" in proc.stderr
    afap = run_cli("run", "small-tlc", "--trace", tencent, "--mode", "afap", "-q")
    assert afap.returncode == 0 and afap.stderr == "", afap.stderr
    fine = run_cli("run", "small-tlc", "--trace", TRACES / "msr.csv", "-q")
    assert fine.returncode == 0 and "warning" not in fine.stderr, fine.stderr


def test_trace_stats_reports_the_timestamp_resolution() -> None:
    proc = run_cli("trace", "stats", TRACES / "tencent.csv")
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if "timestamp resolution" in line)
    assert "1.00 s" in row, row
    stats = ssdlab.trace_stats(str(TRACES / "tencent.csv"))
    assert stats["time"]["resolution_us"] == 1e6


def test_the_ird_plot_has_a_log_count_axis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 45, point 12: sequential pairs (IRD 0) dwarfed every other bucket on a linear axis.
    from matplotlib.figure import Figure

    from ssdlab.cli.trace import write_plots

    scales: dict[str, str] = {}
    save = Figure.savefig

    def keep_scale(self: Figure, path: object, **kwargs: object) -> None:
        scales[Path(str(path)).name] = self.axes[0].get_yscale()
        save(self, path, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep_scale)
    write_plots(ssdlab.trace_stats(str(TRACES / "msr.csv")), tmp_path)
    assert scales["ird.png"] == "log", scales
