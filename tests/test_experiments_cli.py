"""`ssdlab sweep`, `plot`, `report` and `reproduce`, run as a user runs them."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

import ssdlab
from conftest import assert_user_error, run_cli, wait_for_stderr

REPO = Path(__file__).resolve().parent.parent
QUICK = REPO / "examples" / "sweeps" / "quick.toml"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="session")
def quick_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("quick") / "out"
    proc = run_cli("sweep", QUICK, "--out", out)
    assert proc.returncode == 0, proc.stderr
    # No progress bar when stderr is not a terminal: at most a plain line every few seconds
    # (on a loaded machine the sweep takes long enough for one).
    assert "\r" not in proc.stderr and "\x1b" not in proc.stderr, proc.stderr
    assert all(
        re.fullmatch(r"quick: [0-9.]+% \(\d+ of 12\), .* elapsed, .*", line)
        for line in proc.stderr.splitlines()
    ), proc.stderr
    assert "quick: 12 points; ran 12 now (12 ok, 0 failed), 0 already done" in proc.stdout
    assert "runs/min" in proc.stdout
    return out


@pytest.fixture(scope="session")
def fig5(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, Path, subprocess.CompletedProcess]:
    """The seed 004 Fig. 5 reproduction, run once (28 runs on the 1 TiB drive, about 30 s)."""
    base = tmp_path_factory.mktemp("fig5")
    out, rows = base / "out", base / "rows.json"
    proc = run_cli("reproduce", "seed004-fig5", "--out", out, "--json", rows, timeout=900)
    return out, rows, proc


# -- sweep --------------------------------------------------------------------------------------


def test_sweep_writes_table_runs_and_provenance(quick_dir: Path) -> None:
    for name in ("results.parquet", "results.csv", "manifest.json", "sweep.toml", "config.toml"):
        assert (quick_dir / name).is_file(), name
    table = pl.read_parquet(quick_dir / "results.parquet")
    assert table.height == 12 and set(table["status"]) == {"ok"}
    for run_id in table["id"]:
        assert (quick_dir / "runs" / run_id / "result.json").is_file()
        assert (quick_dir / "runs" / run_id / "requests.npy").is_file()
    assert (quick_dir / "sweep.toml").read_text() == QUICK.read_text()


def test_sweep_again_runs_nothing(quick_dir: Path) -> None:
    proc = run_cli("sweep", QUICK, "--out", quick_dir)
    assert proc.returncode == 0, proc.stderr
    assert "ran 0 now (0 ok, 0 failed), 12 already done" in proc.stdout


def test_sweep_with_a_failing_point_finishes_and_exits_1(tmp_path: Path) -> None:
    sweep = tmp_path / "failing.toml"
    sweep.write_text(
        'config = "small-tlc"\n[job]\nrw = "randwrite"\nbs = "4KiB"\nio_count = 500\n'
        '[axes]\n"interface.queue_depth" = [1024, 8]\n"job.iodepth" = [4, 16]\n'
    )
    proc = run_cli("sweep", sweep, "--out", tmp_path / "out")
    assert proc.returncode == 1, proc.stderr
    assert "ran 4 now (3 ok, 1 failed)" in proc.stdout
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("failed: config.interface.queue_depth=8, job.iodepth=16")
    assert lines[-1].startswith("error: 1 of 4 points failed")
    assert pl.read_csv(tmp_path / "out" / "results.csv")["status"].to_list().count("ok") == 3
    # The report lists the failure with its error.
    assert run_cli("report", tmp_path / "out").returncode == 0
    page = (tmp_path / "out" / "report.html").read_text()
    assert "<h2>Failures</h2>" in page and "queue_depth" in page


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupted_sweep_continues_where_it_stopped(tmp_path: Path, signum: int) -> None:
    # SIGTERM (issue 45, point 10) killed the sweep without its table; now it stops as Ctrl-C.
    sweep = tmp_path / "long.toml"
    sweep.write_text(
        'config = "small-tlc"\nrepeat = 20\n[job]\nrw = "randwrite"\nbs = "4KiB"\n'
        'iodepth = 8\nio_count = 40000\n[axes]\n"ftl.over_provisioning" = [0.1, 0.15, 0.2, 0.25]\n'
    )
    out = tmp_path / "out"

    def restore_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    proc = subprocess.Popen(
        [sys.executable, "-m", "ssdlab", "sweep", str(sweep), "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        preexec_fn=restore_sigint, env=dict(os.environ),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        # Wait until a few points are done, then press Ctrl-C.
        while time.monotonic() < deadline and len(list(out.glob("runs/*/point.json"))) < 3:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "interrupted"
    done = len(list(out.glob("runs/*/point.json")))
    partial = stderr.strip().splitlines()[-2]
    reason = (
        "terminated by SIGTERM" if signum == signal.SIGTERM else "interrupted by SIGINT (Ctrl-C)"
    )
    assert partial.startswith(f"partial result: {reason}, {done} of 80 points done"), stderr
    assert 3 <= done < 80
    table = pl.read_parquet(out / "results.parquet")  # the table covers what was done
    assert table.height == done
    again = run_cli("sweep", sweep, "--out", out)
    assert again.returncode == 0, again.stderr
    match = re.search(r"ran (\d+) now \(\d+ ok, 0 failed\), (\d+) already done", again.stdout)
    assert match is not None, again.stdout
    assert int(match.group(2)) == done and int(match.group(1)) == 80 - done
    assert pl.read_parquet(out / "results.parquet").height == 80


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text()
        found.update(int(p) for p in text.split())
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc (Linux)")
def test_workers_end_when_the_sweep_driver_is_killed(tmp_path: Path) -> None:
    """After `kill -9` of the driver its workers ran on for good (issue 15, defect 8)."""
    sweep = tmp_path / "long.toml"
    sweep.write_text(
        'config = "small-tlc"\nrepeat = 50\n[job]\nrw = "randwrite"\nbs = "4KiB"\n'
        'iodepth = 8\nio_count = 200000\n[axes]\n"ftl.over_provisioning" = [0.1, 0.2]\n'
    )
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ssdlab", "sweep", str(sweep), "--out", str(out), "--workers", "2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(workers) < 2:
            assert proc.poll() is None
            # The pool's workers (spawned interpreters; a resource tracker may be among them).
            workers = _children(proc.pid)
            time.sleep(0.1)
        assert workers, "no worker started"
        proc.kill()
        proc.wait(timeout=10)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(_alive(p) for p in workers):
            time.sleep(0.1)
        assert not any(_alive(p) for p in workers), "workers outlived the driver"
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in workers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


# -- plot ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (["bandwidth"], "bandwidth.png"),
        (["bandwidth", "--op", "write", "--x", "job.rw"], "bandwidth-write.png"),
        (["iops"], "iops.png"),
        (["latency", "--op", "write"], "latency-write.png"),
        (["latency-cdf", "--op", "read"], "latency-cdf-read.png"),
        (["waf"], "waf.png"),
        (["erases"], "erases.png"),
        (["throughput", "--where", "job.rw=randwrite", "--bins", "50"], "throughput.png"),
        (["throughput", "--y", "iops", "--where", "ftl.over_provisioning=0.25"],
         "throughput.png"),
        (["metric", "--y", "device.gc_runs", "--hue", "job.rw"], "metric.png"),
    ],
)  # fmt: skip
def test_plot_views(quick_dir: Path, tmp_path: Path, args: list[str], name: str) -> None:
    target = tmp_path / "plots"
    proc = run_cli("plot", quick_dir, *args, "--out", target / name)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(target / name)
    assert (target / name).read_bytes()[:8] == PNG_MAGIC


def test_plot_default_path_and_svg(quick_dir: Path) -> None:
    proc = run_cli("plot", quick_dir, "waf", "--format", "svg")
    assert proc.returncode == 0, proc.stderr
    path = quick_dir / "plots" / "waf.svg"
    assert proc.stdout.strip() == str(path)
    text = path.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    again = run_cli("plot", quick_dir, "waf", "--format", "svg")
    assert again.returncode == 0 and path.read_text() == text  # no date: the same bytes


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["sideways"], ["sideways", "bandwidth"]),
        (["bandwidth", "--x", "job.warp"], ["--x", "job.warp"]),
        (["bandwidth", "--where", "nonsense"], ["--where", "COLUMN=VALUE"]),
        (["bandwidth", "--where", "job.warp=1"], ["job.warp", "axes"]),
        (["bandwidth", "--where", "job.rw=trim"], ["no successful run"]),
        (["bandwidth", "--op", "scrub"], ["--op", "scrub", "expected one of"]),
        (["metric"], ["--y"]),
        (["latency", "--x", "job.rw"], ["--x", "numeric"]),
        (["bandwidth", "--format", "gif"], ["--format", "gif"]),
        (["bandwidth", "--out", "x.jpeg"], ["x.jpeg", ".png or .svg"]),
    ],
)
def test_plot_mistakes(quick_dir: Path, tmp_path: Path, args: list[str], needles: list[str]
                       ) -> None:  # fmt: skip
    assert_user_error(run_cli("plot", quick_dir, *args, cwd=tmp_path), *needles)


def test_plot_needs_a_sweep_directory(tmp_path: Path) -> None:
    assert_user_error(run_cli("plot", tmp_path, "bandwidth"), str(tmp_path), "manifest.json")


def test_a_damaged_manifest_is_one_line_naming_the_file(quick_dir: Path, tmp_path: Path) -> None:
    """Issue 15, defect 8: plot and report gave json's traceback."""
    damaged = tmp_path / "out"
    shutil.copytree(quick_dir, damaged)
    (damaged / "manifest.json").write_text('{"name": "quick", "points": [')
    for args in (["plot", damaged, "waf"], ["report", damaged, "--out", tmp_path / "r.html"]):
        assert_user_error(
            run_cli(*args), str(damaged / "manifest.json"), "not valid JSON", "run the sweep again"
        )


def test_throughput_needs_records(tmp_path: Path) -> None:
    sweep = tmp_path / "norec.toml"
    sweep.write_text('config = "small-tlc"\n[job]\nrw = "randread"\nio_count = 300\n'
                     '[axes]\n"job.iodepth" = [1, 4]\n')  # fmt: skip
    assert run_cli("sweep", sweep, "--out", tmp_path / "o").returncode == 0
    assert_user_error(run_cli("plot", tmp_path / "o", "throughput"), "record_requests = true")
    # The latency CDF falls back on the summary percentiles.
    proc = run_cli("plot", tmp_path / "o", "latency-cdf")
    assert proc.returncode == 0, proc.stderr


# -- report -------------------------------------------------------------------------------------


def test_report_is_self_contained(quick_dir: Path) -> None:
    proc = run_cli("report", quick_dir)
    assert proc.returncode == 0, proc.stderr
    path = quick_dir / "report.html"
    assert proc.stdout.strip() == str(path)
    page = path.read_text()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    # Nothing is fetched: no remote or local resource, every image inline.
    assert not re.search(r"""(src|href)\s*=\s*['"]?(https?:|//)""", page)
    assert "<script" not in page and "<link" not in page and "@import" not in page
    images = re.findall(r"<img [^>]*src='([^']*)'", page)
    assert len(images) >= 6 and all(src.startswith("data:image/png;base64,") for src in images)
    for needle in ("quick", "config.ftl.over_provisioning", "Provenance", "small-tlc",
                   "ssdlab version", "Invocations", "[job]", "record_requests"):  # fmt: skip
        assert needle in page, needle
    # The configuration shows what the (NVMe) device uses, not the other interfaces' tables
    # (issue 45, point 12).
    configuration = page[page.index("<h2>Configuration</h2>") :]
    assert "tlp_overhead" in configuration
    for table in ("[interface.ata]", "[interface.ufs]", "[interface.emmc]", "[interface.dram]"):
        assert table not in configuration, table


def test_report_out_follows_a_symlink_and_writes_a_fifo_in_place(
    quick_dir: Path, tmp_path: Path
) -> None:
    """--out never replaces what stands at its path with a new file: a symlink stays a link
    (its target gets the report), a FIFO (as a device node would) gets the bytes in place, a
    directory is refused. Before, a temporary was renamed over the path itself — as root,
    `--out /dev/null` turned the device into a file."""
    import stat
    import threading

    real = tmp_path / "real.html"
    real.write_text("old")
    link = tmp_path / "link.html"
    link.symlink_to(real)
    assert run_cli("report", quick_dir, "--out", link).returncode == 0
    assert link.is_symlink() and real.read_text().startswith("<!DOCTYPE html>")

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    proc = run_cli("report", quick_dir, "--out", fifo)
    reader.join(timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert got and got[0].startswith(b"<!DOCTYPE html>")
    assert not list(tmp_path.glob(".*.tmp"))

    directory = tmp_path / "a-dir"
    directory.mkdir()
    assert_user_error(run_cli("report", quick_dir, "--out", directory), str(directory))


def _drawn(figure) -> list:  # noqa: ANN001
    """The labelled lines of each panel, after drawing (so that extents are known)."""
    from ssdlab.experiments.plots import figure_bytes

    figure_bytes(figure)
    return [
        [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")] for ax in figure.axes
    ]


def test_sweep_figures_read_at_twelve_runs(quick_dir: Path) -> None:
    """Issue 45 item 12: 12 runs (3 over-provisionings × 2 workloads × 2 repetitions) drawn as
    two lines, each with a band over its repetitions; the lines differ in colour, line style and
    marker and in width (the two workloads' WAF coincide: the thinner shows inside the
    thicker); the legend stands beside the data."""
    from matplotlib.collections import PolyCollection

    from ssdlab.experiments.plots import make_plot

    for view in ("waf", "bandwidth"):
        figure = make_plot(quick_dir, view)
        (lines,) = _drawn(figure)
        assert len(lines) == 2, [ln.get_label() for ln in lines]
        for attribute in ("get_color", "get_linestyle", "get_marker", "get_linewidth"):
            assert len({getattr(ln, attribute)() for ln in lines}) == 2, attribute
        axes = figure.axes[0]
        assert sum(isinstance(c, PolyCollection) for c in axes.collections) == 2
        assert axes.get_legend() is None and len(figure.legends) == 1
        legend = figure.legends[0].get_window_extent()
        assert not legend.overlaps(axes.get_window_extent())
    # A CDF per point, the repetitions pooled into one line with a band.
    (lines,) = _drawn(make_plot(quick_dir, "latency-cdf", op="write"))
    assert len(lines) == 6
    assert len({(ln.get_color(), ln.get_linestyle()) for ln in lines}) == 6


def test_a_third_axis_makes_panels(tmp_path: Path) -> None:
    from ssdlab.experiments.plots import make_plot

    sweep = tmp_path / "three.toml"
    sweep.write_text(
        'config = "small-tlc"\n[job]\nbs = "4KiB"\nio_count = 300\n'
        '[axes]\n"job.iodepth" = [1, 4]\n"job.rw" = ["randread", "randwrite"]\n'
        '"ftl.over_provisioning" = [0.1, 0.2]\n'
    )
    out = tmp_path / "out"
    assert run_cli("sweep", sweep, "--out", out).returncode == 0
    figure = make_plot(out, "bandwidth")
    panels = _drawn(figure)
    # x = job.iodepth; a panel per job.rw, a line per over-provisioning in each.
    assert len(panels) == 2 and all(len(lines) == 2 for lines in panels)
    assert [ax.get_title() for ax in figure.axes] == ["job.rw=randread", "job.rw=randwrite"]
    # The same series looks the same in every panel, and the legend names it once.
    assert [ln.get_color() for ln in panels[0]] == [ln.get_color() for ln in panels[1]]
    assert len(figure.legends[0].get_texts()) == 2


def test_the_configuration_shown_is_what_the_device_reads(tmp_path: Path) -> None:
    from ssdlab.api import without_unused_fields

    fusion = without_unused_fields(ssdlab.Config.load("seed002-fusion").to_toml())
    # No FTL on the device (HFSL, on the host, has its own GC): no FTL GC or wear levelling.
    assert "[ftl.gc]" not in fusion and "[ftl.wear_leveling]" not in fusion
    assert "[hfsl]" in fusion and "[interface.ata]" not in fusion
    # What is shown still loads as the device.
    (tmp_path / "shown.toml").write_text(fusion)
    assert ssdlab.Config.load(tmp_path / "shown.toml").to_dict()["hfsl"] is not None
    small = without_unused_fields(ssdlab.Config.load("small-tlc").to_toml())
    assert "[ftl.gc]" in small


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def test_report_renders_in_headless_chromium(quick_dir: Path, tmp_path: Path) -> None:
    from matplotlib.image import imread

    if _chromium() is None:
        # CI installs Chromium (scripts/install-test-tools.sh): there a skip would hide that the
        # report was never rendered, so it fails instead.
        if os.environ.get("CI") == "true":
            pytest.fail("no Chromium under CI: scripts/install-test-tools.sh should install it")
        pytest.skip("no Chromium on this machine (scripts/install-test-tools.sh installs it)")

    report = quick_dir / "report.html"
    if not report.is_file():
        assert run_cli("report", quick_dir).returncode == 0
    shot = tmp_path / "shot.png"
    proc = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,2400",
         f"--screenshot={shot}", report.as_uri()],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert shot.is_file(), proc.stderr
    pixels = imread(shot)[..., :3]
    assert pixels.shape[0] >= 2000 and pixels.shape[1] >= 1000
    # matplotlib's first colour (#1f77b4) appears only inside the embedded figures.
    blue = (abs(pixels[..., 0] - 0x1F / 255) < 0.05) & (abs(pixels[..., 1] - 0x77 / 255) < 0.05) \
        & (abs(pixels[..., 2] - 0xB4 / 255) < 0.05)  # fmt: skip
    assert blue.sum() > 500
    # The results table scrolls inside its box (both ways, its header staying) rather than
    # running off the page.
    html = report.read_text()
    assert "overflow: auto" in html and "max-height" in html and "position: sticky" in html


# -- reproduce ----------------------------------------------------------------------------------


def test_reproduce_list() -> None:
    proc = run_cli("reproduce", "--list")
    assert proc.returncode == 0, proc.stderr
    for needle in ("seed004-fig5", "seed004-fig6", "seed004-fig7", "004_a7ed53a6f100eeb3",
                   "Fig. 5", "Fig. 6", "Fig. 7"):  # fmt: skip
        assert needle in proc.stdout, needle


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["reproduce", "no-such-figure"], ["no-such-figure", "seed004-fig5"]),
        (["reproduce"], ["NAME", "--list"]),
        (["reproduce", "seed004-fig5", "--list"], ["NAME or --list"]),
    ],
)
def test_reproduce_mistakes(args: list[str], needles: list[str], tmp_path: Path) -> None:
    assert_user_error(run_cli(*args, cwd=tmp_path), *needles)


def test_cache_figures_compare_runs_with_and_without_the_cache() -> None:
    import polars as pl

    from ssdlab.reproduce import seed004

    # Every write bar doubles with the cache, every read bar stays: a mean gain of 50 %, and
    # cached sequential write over sequential read of 2. The IDE and SATA bars come from their
    # own sweeps (interface.kind set; the NVMe sweeps leave it to the preset).
    bars = [(None, link) for link in seed004.LINKS] + list(seed004.LEGACY)
    rows = [
        {
            "config.interface.kind": kind,
            "config.cache.enabled": enabled,
            "config.interface.link": link,
            "job.rw": rw,
            "status": "ok",
            "total.bandwidth_mib_s": 200.0 if enabled and "write" in rw else 100.0,
        }
        for enabled in (False, True)
        for kind, link in bars
        for rw in seed004.ACCESS
    ]
    table = pl.DataFrame(rows)
    gain = seed004.compare_fig6(table)[-1]
    assert gain.paper == 80.0 and gain.ssdlab == pytest.approx(50.0)
    by_metric = {row.metric: row for row in seed004.compare_fig6(table)}
    ide = by_metric["IDE-ideal sequential write with a 512 MiB cache"]
    assert ide.ssdlab == 200.0 and "no cache: 100 MiB/s" in ide.note
    fig7 = {row.metric: row for row in seed004.compare_fig7(table)}
    ratio = fig7["1 GiB cache: sequential write over sequential read, mean of the NVMe links"]
    assert ratio.paper == 2.3 and ratio.ssdlab == pytest.approx(2.0)
    # Without runs the document's numbers still appear, with no ssdlab value.
    empty = {row.metric: row for row in seed004.compare_fig7(None)}
    assert empty[ratio.metric].paper == 2.3 and empty[ratio.metric].ssdlab is None
    # Fig. 7 against Fig. 6 (seed004_fig7_512.toml): the 512 MiB writes run beside the 1 GiB
    # runs and are kept out of Fig. 7's own rows.
    half = pl.DataFrame(
        [
            {"config.cache.enabled": True, "config.interface.link": link, "job.rw": "write",
             "status": "ok", "total.bandwidth_mib_s": 50.0, "config.cache.capacity": "512MiB"}
            for link in seed004.LINKS
        ]
    )  # fmt: skip
    both = pl.concat(
        [table.with_columns(pl.lit("1GiB").alias("config.cache.capacity")), half],
        how="diagonal_relaxed",
    )
    fig7 = {row.metric: row for row in seed004.compare_fig7(both)}
    assert fig7[ratio.metric].ssdlab == pytest.approx(2.0)
    over = fig7["sequential write, 1 GiB cache over 512 MiB cache, mean of the NVMe links"]
    assert over.paper is None and over.ssdlab == pytest.approx(4.0) and over.agrees is True
    assert empty[over.metric].ssdlab is None and empty[over.metric].agrees is None


def test_reproduce_fig5(fig5: tuple[Path, Path, subprocess.CompletedProcess]) -> None:
    out, rows_path, proc = fig5
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(rows_path.read_text())
    for row in rows:
        assert set(row) >= {"experiment", "metric", "unit", "paper", "ssdlab", "difference"}
    by_metric = {row["metric"]: row for row in rows}
    read = by_metric["NVMe-ideal sequential read bandwidth"]
    write = by_metric["NVMe-ideal sequential write bandwidth"]
    assert (read["paper"], read["unit"], write["paper"]) == (2370, "MiB/s", 353)
    for row in (read, write):
        assert row["ssdlab"] > 0
        assert row["difference"] == pytest.approx(row["ssdlab"] / row["paper"] - 1)
    # The table's figures are the runs' own.
    table = pl.read_parquet(out / "results.parquet")
    ideal_read = table.filter((pl.col("config.interface.link") == "ideal")
                              & (pl.col("job.rw") == "read"))  # fmt: skip
    assert read["ssdlab"] == pytest.approx(ideal_read["total.bandwidth_mib_s"][0])
    # IDE-ideal and IDE-SATA3 come from their own sweeps; derived numbers say so.
    ide = by_metric["IDE-ideal sequential read bandwidth"]
    assert ide["ssdlab"] > 0 and "derived" in ide["basis"]
    assert ide["paper"] == pytest.approx(2370 / 5.5, abs=0.05)
    # No queue: IDE-ideal is below NVMe-ideal, and IDE-SATA3 under its 600 MB/s link.
    ratio = by_metric["NVMe-ideal over IDE-ideal, sequential read"]
    assert ratio["paper"] == 5.5 and ratio["ssdlab"] > 1.2
    assert ratio["ssdlab"] == pytest.approx(read["ssdlab"] / ide["ssdlab"])
    assert 0 < by_metric["IDE-SATA3 sequential read bandwidth"]["ssdlab"] < 600e6 / 2**20
    assert (out / "seed004_fig5_ide" / "results.parquet").is_file()
    # Link-bound reads sit under Table 2's rates: TLP overhead, and the host and flash time
    # of one request at a time (posixaio) in series with each transfer.
    for link, rate in (("Gen.1", 250), ("Gen.2", 500), ("Gen.3", 985)):
        row = by_metric[f"NVMe {link} x1 sequential read against Table 2 real bandwidth"]
        assert row["paper"] == rate and -0.30 < row["difference"] < 0
    # Printed next to each other, with the relative difference.
    assert "2,370" in proc.stdout and "IDE-SATA3" in proc.stdout
    assert re.search(r"\+\d+\.\d %", proc.stdout)
    for name in ("fig5-bandwidth.png", "fig5-bandwidth.svg", "fig5-ideal-throughput.png",
                 "report.html", "comparison.json"):  # fmt: skip
        assert (out / name).is_file(), name
    assert "Against the document" in (out / "report.html").read_text()


def test_reproduce_again_reuses_the_runs(fig5: tuple[Path, Path, subprocess.CompletedProcess],
                                         tmp_path: Path) -> None:  # fmt: skip
    out, rows_path, _ = fig5
    # Nothing runs again: every run's files stay as they were (not a wall-time bound, which a
    # loaded machine breaks).
    runs = {p: p.stat().st_mtime_ns for p in out.rglob("runs/*/*") if p.is_file()}
    assert runs
    proc = run_cli("reproduce", "seed004-fig5", "--out", out, "--json", tmp_path / "again.json",
                   "--quiet")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert json.loads((tmp_path / "again.json").read_text()) == json.loads(rows_path.read_text())
    assert {p: p.stat().st_mtime_ns for p in out.rglob("runs/*/*") if p.is_file()} == runs


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_an_interrupted_reproduce_all_says_what_it_kept(tmp_path: Path) -> None:
    # Issue 45, point 10: SIGTERM stops `reproduce --all` as Ctrl-C does, saying how far it got.
    proc = subprocess.Popen(
        [sys.executable, "-m", "ssdlab", "reproduce", "--all", "--out", str(tmp_path / "out")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env=dict(os.environ),
    )  # fmt: skip
    try:
        # At work: its first progress line (one every few seconds off a terminal).
        before = wait_for_stderr(proc, "")
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=120)
        stderr = "".join(before) + stderr
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    lines = stderr.strip().splitlines()
    assert lines[-1] == "interrupted", stderr
    assert re.match(
        r"partial result: terminated by SIGTERM in \S+, \d+ of \d+ experiments done", lines[-2]
    ), stderr
