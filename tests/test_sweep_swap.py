"""Sweeps over the OS paging model: a [swap] table, swap.<knob> and swap.device axes, checked
before the run, run by the executors through _core.swap, a results table from the swap result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ssdlab
from conftest import assert_user_error, run_cli
from ssdlab.experiments.runner import run_sweep
from ssdlab.experiments.sweep import Sweep, SweepError

# The PC mix scaled down (as in test_swap.py): a run takes a fraction of a second.
SMALL_MIX = {
    "rounds": 1,
    "base_memory": "4MiB",
    "tab_memory": "2MiB",
    "image_bytes": "100000",
    "copy_bytes": "2MB",
    "download_bytes": "1MB",
    "office_memory": "2MiB",
    "search_bytes": "10MB",
    "search_memory": "1MiB",
    "visit_touches": 500,
}
TINY: dict[str, Any] = {
    "name": "tiny-swap",
    "config": "seed003-scm-400",
    "seed": 3,
    "swap": {"memory": "16MiB", "swap_size": "64MiB", "workload": "pc-mix", "pc_mix": SMALL_MIX},
    "axes": {
        "swap.device": ["seed003-scm-400", "seed003-slc-analytic"],
        "swap.congestion_wait": [True, False],
    },
}


def tiny(**changes: Any) -> Sweep:
    data = json.loads(json.dumps(TINY))
    data.update(changes)
    return Sweep.from_dict(data, source="tiny.toml")


def test_a_tiny_swap_sweep_runs_end_to_end(tmp_path: Path) -> None:
    outcome = run_sweep(tiny(), tmp_path / "out", workers=2)
    assert (outcome.total, outcome.ok, outcome.failed) == (4, 4, 0)
    table = outcome.table()
    assert table["status"].to_list() == ["ok"] * 4
    assert table["swap.device"].to_list() == [
        "seed003-scm-400",
        "seed003-scm-400",
        "seed003-slc-analytic",
        "seed003-slc-analytic",
    ]
    assert table["swap.congestion_wait"].to_list() == [True, False, True, False]
    # Knobs of [swap] are columns too; the run result's columns are not.
    assert table["swap.memory"].to_list() == ["16MiB"] * 4
    assert "ops.read.iops" not in table.columns
    # Each row is exactly what ssdlab.swap gives for that point (same core path, same seed).
    knobs = [f"swap.pc_mix.{k}={json.dumps(v)}" for k, v in SMALL_MIX.items()]
    direct = ssdlab.swap(
        "seed003-slc-analytic",
        memory="16MiB",
        swap_size="64MiB",
        workload="pc-mix",
        overrides=[*knobs, "swap.congestion_wait=false"],
        seed=3,
    ).data
    row = table.row(3, named=True)
    assert row["config_name"] == "seed003-slc-analytic"
    assert row["faults.major"] == direct["faults"]["major"] > 0
    assert row["swap_in_latency.mean_us"] == direct["swap_in_latency"]["mean_us"]
    assert row["device_merges"] == direct["device_merges"]
    # Histograms: one column per bucket, summing to the requests.
    sizes = [c for c in table.columns if c.startswith("writes.size_histogram.")]
    assert sizes and sum(row[c] or 0 for c in sizes) == direct["writes"]["requests"]
    for bucket, count in direct["writes"]["size_histogram"]:
        assert row[f"writes.size_histogram.{bucket}"] == count
    life = direct["wear"]["lifetime"][1]
    assert life["endurance"] == 100_000
    assert row["wear.lifetime.100000.without_wear_levelling_y"] == life["without_wear_levelling_y"]
    # The SCM rows ran on the device model (no merges); no config.toml for an analytic base.
    assert table.row(0, named=True)["device_merges"] is None
    assert (tmp_path / "out" / "config.toml").is_file()
    # Run again into the same directory: nothing left to run.
    again = run_sweep(tiny(), tmp_path / "out", workers=1)
    assert again.ran == 0 and again.already_done == 4


def test_analytic_base_device_has_no_config_file(tmp_path: Path) -> None:
    outcome = run_sweep(
        tiny(config="seed003-mlc-analytic", axes={"swap.page_cluster": [0, 3]}),
        tmp_path / "out",
        workers=1,
    )
    assert outcome.ok == 2
    assert not (tmp_path / "out" / "config.toml").exists()
    table = outcome.table()
    assert table["swap.page_cluster"].to_list() == [0, 3]
    assert table["swap.device"].to_list() == ["seed003-mlc-analytic"] * 2
    # No read-ahead: every read is one page.
    assert table.row(0, named=True)["reads.size_histogram.4096"] == table["reads.requests"][0]


def test_points_are_identified_by_the_run() -> None:
    points = tiny().points()
    assert len({p.id for p in points}) == 4
    # The same runs spelled otherwise (a default written out, the size in KiB) keep their ids.
    spelled = tiny(
        swap={**TINY["swap"], "memory": "16384KiB", "page_cluster": 3},
    ).points()
    assert [p.id for p in spelled] == [p.id for p in points]
    # Another seed is another run.
    assert tiny(seed=4).points()[0].id != points[0].id


@pytest.mark.parametrize(
    ("changes", "needles"),
    [
        ({"axes": {"swap.page_cluster": [3, 11]}}, ["swap.page_cluster = 11", "page_cluster"]),
        ({"axes": {"swap.device": ["seed003-scm-400", "no-such"]}}, ["swap.device", "no-such"]),
        (
            {"config": "seed003-slc-analytic", "axes": {"pcm.channels": [1, 2]}},
            ["pcm.channels", "no device knobs"],
        ),
        ({"axes": {"swap.memory": ["16MiB", "64KiB"]}}, ["swap.memory", "watermarks"]),
        ({"axes": {"swap.swap_size": ["64MiB", "2GiB"]}}, ["swap.swap_size", "do not fit"]),
        ({"axes": {"swap.pc_mix.hot_share": [0.5, 2]}}, ["pc_mix.hot_share", "2"]),
        ({"axes": {"swap.era": ["2.6.32", "3.0"]}}, ["swap.era", "3.0"]),
        ({"swap": {"swap_size": "64MiB", "workload": "pc-mix"}}, ["[swap]", "memory"]),
        ({"swap": {**TINY["swap"], "device": "seed003-scm-400"}}, ["[swap] device"]),
        ({"swap": {**TINY["swap"], "workload": "missing.pages"}}, ["workload", "missing.pages"]),
        ({"record_requests": True}, ["record_requests"]),
        ({"stats_interval": "1ms"}, ["stats_interval", "[swap]"]),
        ({"job": {"rw": "randread"}}, ["exactly one of"]),
    ],
)
def test_mistakes_are_one_line_before_anything_runs(
    changes: dict[str, Any], needles: list[str]
) -> None:
    with pytest.raises(SweepError) as raised:
        tiny(**changes).points()
    message = str(raised.value)
    assert "\n" not in message
    for needle in needles:
        assert needle in message, message


def test_the_shipped_example_and_the_command(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parent.parent / "examples" / "sweeps" / "swap-devices.toml"
    sweep = Sweep.load(example)
    points = sweep.points()
    assert len(points) == 16
    assert {p.job["device"] for p in points} == {
        "seed003-scm-400",
        "seed003-scm-133",
        "seed003-slc-analytic",
        "seed003-mlc-analytic",
    }
    # The command, as a user runs it, on a tiny sweep file with a trace workload beside it.
    trace = tmp_path / "pages.txt"
    trace.write_text("".join(f"{p * 4096:#x} W\n" for p in range(600)) * 2)
    (tmp_path / "s.toml").write_text(
        'config = "seed003-scm-133"\n[swap]\nmemory = "1MiB"\nswap_size = "8MiB"\n'
        'workload = "pages.txt"\n[axes]\n"swap.congestion_wait" = [true, false]\n'
    )
    proc = run_cli("sweep", tmp_path / "s.toml", "--out", tmp_path / "out", "-q", "-j", "1")
    assert proc.returncode == 0, proc.stderr
    table = ssdlab.load_results(tmp_path / "out")
    assert table["status"].to_list() == ["ok", "ok"]
    assert all(v > 0 for v in table["faults.major"].to_list())
    (tmp_path / "bad.toml").write_text(
        'config = "seed003-scm-133"\n[swap]\nmemory = "1MiB"\nswap_size = "8MiB"\n'
        'workload = "pages.txt"\n[axes]\n"swap.hz" = [250, 251]\n'
    )
    proc = run_cli("sweep", tmp_path / "bad.toml", "--out", tmp_path / "bad")
    assert_user_error(proc, "swap.hz = 251", "hz")
