"""The paging model through the Python API and ``ssdlab swap``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import ssdlab
from ssdlab.cli.app import app


@pytest.fixture
def sweep_trace(tmp_path: Path) -> Path:
    """1,000 pages written, then read back twice: four times the memory of 1 MiB."""
    lines = [f"{p * 4096:#x} W" for p in range(1000)]
    lines += [f"{p * 4096:#x} R" for _ in range(2) for p in range(1000)]
    path = tmp_path / "pages.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_swap_returns_the_result_latencies_and_trace(sweep_trace: Path) -> None:
    r = ssdlab.swap("small-tlc", memory="1MiB", swap_size="64MiB", workload=sweep_trace)
    assert r.data["schema"] == "ssdlab.swap/1"
    assert r.data["oracle_mismatches"] == 0
    major = r.data["faults"]["major"]
    assert major > 0
    # One latency per swap-in that waited for the device, each above the software steps.
    assert len(r.swap_in_us) >= major and r.swap_in_us.min() > 12.7
    ops = r.trace["op"]
    assert (ops == 0).sum() == r.data["reads"]["requests"]
    assert (ops == 1).sum() == r.data["writes"]["requests"]
    assert np.all(r.trace["done_ps"] >= r.trace["submit_ps"])


def test_swap_overrides_go_to_the_paging_model_or_the_device(sweep_trace: Path) -> None:
    a = ssdlab.swap(
        "small-tlc",
        memory="1MiB",
        swap_size="64MiB",
        workload=sweep_trace,
        overrides=["swap.era=modern", "swap.page_cluster=0"],
    )
    assert a.data["era"] == "modern"
    # No read-ahead: every read is one page.
    assert a.data["reads"]["size_histogram"] == [[4096, a.data["reads"]["requests"]]]

    # A [swap] setting is a PagingError, with its parts as data; a ConfigError still catches
    # it (a subclass, as these were ConfigErrors before paging had its own class). A device
    # setting of the same run stays the config's.
    def refused(override: str) -> ssdlab.ConfigError:
        with pytest.raises(ssdlab.ConfigError) as caught:
            ssdlab.swap(
                "small-tlc",
                memory="1MiB",
                swap_size="64MiB",
                workload=sweep_trace,
                overrides=[override],
            )
        return caught.value

    paging = refused("swap.page_cluster=99")
    assert isinstance(paging, ssdlab.PagingError)
    assert (paging.origin, paging.field, paging.value) == ("swap", "page_cluster", "99")
    device = refused("nand.page_size=3")
    assert not isinstance(device, ssdlab.PagingError) and "nand.page_size" in str(device)


def test_swap_command_json_and_one_line_errors(sweep_trace: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "r.json"
    args = ["swap", "small-tlc", "--memory", "1MiB", "--swap-size", "64MiB"]
    res = runner.invoke(app, [*args, "--workload", str(sweep_trace), "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["faults"]["accesses"] == 3000
    # As a user runs it: one line on stderr, exit code 2.
    proc = subprocess.run(
        [sys.executable, "-m", "ssdlab", *args, "--workload", str(tmp_path / "missing.out")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and "missing.out: cannot read" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_swap_trace_is_written_and_trace_stats_reads_it(sweep_trace: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    iolog = tmp_path / "swap.iolog"
    args = ["swap", "small-tlc", "--memory", "1MiB", "--swap-size", "64MiB"]
    res = runner.invoke(
        app, [*args, "--workload", str(sweep_trace), "--swap-trace", str(iolog), "--json", "-"]
    )
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    stats_json = tmp_path / "stats.json"
    res = runner.invoke(app, ["trace", "stats", str(iolog), "--json", str(stats_json)])
    assert res.exit_code == 0, res.output
    s = json.loads(stats_json.read_text())
    text = json.dumps(s)
    # The requests written are the run's: reads, writes and the swap area's discards.
    n = d["reads"]["requests"] + d["writes"]["requests"] + d["trims"]
    assert str(n) in text
    lines = [ln for ln in iolog.read_text().splitlines()[1:] if " dev0 " in ln]
    assert len(lines) == n
    assert sum(" read " in ln for ln in lines) == d["reads"]["requests"]
    assert sum(" trim " in ln for ln in lines) == d["trims"]
    # A format that is not one: one line naming it, exit code 2, before the run.
    proc = subprocess.run(
        [sys.executable, "-m", "ssdlab", *args, "--workload", str(sweep_trace)]
        + ["--swap-trace", str(iolog), "--swap-trace-format", "tarot"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert "swap-trace-format" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


# The PC mix small enough to run in a fraction of a second (one round on 16 MiB).
SMALL_MIX = [
    "swap.pc_mix.rounds=1",
    "swap.pc_mix.base_memory=4MiB",
    "swap.pc_mix.tab_memory=2MiB",
    "swap.pc_mix.image_bytes=100000",
    "swap.pc_mix.copy_bytes=2MB",
    "swap.pc_mix.download_bytes=1MB",
    "swap.pc_mix.office_memory=2MiB",
    "swap.pc_mix.search_bytes=10MB",
    "swap.pc_mix.search_memory=1MiB",
    "swap.pc_mix.visit_touches=500",
]


def test_pc_mix_is_a_workload_with_knobs(tmp_path: Path) -> None:
    small = SMALL_MIX
    r = ssdlab.swap(
        "small-tlc", memory="16MiB", swap_size="64MiB", workload="pc-mix", overrides=small
    )
    assert r.data["oracle_mismatches"] == 0 and r.data["faults"]["major"] > 0
    with pytest.raises(ssdlab.ConfigError, match=r"pc_mix\.hot_share"):
        ssdlab.swap(
            "small-tlc",
            memory="16MiB",
            swap_size="64MiB",
            workload="pc-mix",
            overrides=[*small, "swap.pc_mix.hot_share=2"],
        )


def test_an_aged_run_prints_its_counted_window() -> None:
    """With aging rounds the printed figures are the counted rounds': the table says from when,
    and a slowdown against a baseline of no time (no first touches in the window, accesses
    free by default) is shown as not defined, not as 0."""
    small = [*SMALL_MIX, "swap.pc_mix.aging_rounds=2"]
    args = ["swap", "small-tlc", "--memory", "16MiB", "--swap-size", "64MiB"]
    args += ["--workload", "pc-mix"]
    for s in small:
        args += ["--set", s]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    counted = next(ln for ln in out.output.splitlines() if ln.startswith("counted from"))
    assert "aging page writes" in counted
    sim = next(ln for ln in out.output.splitlines() if ln.startswith("simulated time"))
    assert sim.rstrip().endswith("/ –"), sim
    r = ssdlab.swap(
        "small-tlc", memory="16MiB", swap_size="64MiB", workload="pc-mix", overrides=small
    )
    assert r.data["baseline_time_s"] == 0 and r.data["wear"]["aging_page_writes"] > 0


def test_a_large_memory_and_a_request_that_never_ends(sweep_trace: Path) -> None:
    # 4 TiB of memory allocated 25 bytes per page before the first access, and the abort took
    # the caller's interpreter with it (issue 45, defect 1).
    r = ssdlab.swap("small-tlc", memory="4TiB", swap_size="64MiB", workload=sweep_trace)
    assert r.data["memory_pages"] == 2**30 and r.data["faults"]["major"] == 0
    # 10^6 s per link crossing: the model woke every jiffy for days of simulated time
    # (issue 45, defect 3); now the request's age past the block layer's timeout is the error.
    with pytest.raises(
        ssdlab.PagingError, match=r"^paging: .* past the kernel's block-layer timeout \(30 s\)"
    ):
        ssdlab.swap(
            "small-tlc",
            memory="1MiB",
            swap_size="64MiB",
            workload=sweep_trace,
            overrides=["interface.link_latency=1000000s"],
        )


def test_the_device_s_host_costs_are_not_charged_on_top_of_the_kernel_s() -> None:
    """Issue 40 point 4: the paging model charges the kernel's software itself (seed 003's 12
    µs "swap page read" holds the block layer and the driver), so the device's own [host]
    submit and completion are not added to its device read: a preset with them pages exactly
    as the same preset with them at 0. On seed003-swapin's idle-device faults the read is the
    SCM-400's own: 4 KiB at 400 MB/s (10.24 µs), the interrupt (1 µs), firmware (0.5 µs) and
    the link, nothing of the host's 1.5 µs submit and 2 µs completion."""
    from ssdlab.reproduce import seed003

    pages = Path(seed003.__file__).resolve().parent / "seed003_swapin.pages"
    setup = {
        "memory": "1MiB",
        "swap_size": "64MiB",
        "workload": pages,
    }
    knobs = ["swap.page_cluster=0", 'swap.cost.access="100us"']
    zero = ['host.submit_cost="0ns"', 'host.complete_cost="0ns"', 'host.poll_cost="0ns"']
    with_costs = ssdlab.swap("seed003-scm-400", **setup, overrides=knobs)
    without = ssdlab.swap("seed003-scm-400", **setup, overrides=knobs + zero)
    assert with_costs.data["faults"]["major"] > 0
    device = with_costs.data["swap_in_breakdown"]["device_us"]
    assert device == without.data["swap_in_breakdown"]["device_us"], (
        "the device read carries the host's submit and completion again"
    )
    assert 10.24 < device < 10.24 + 3.5, device
