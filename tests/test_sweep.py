"""Sweep files: parsing, ranges, points, seeds, and every mistake as one clear error."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ssdlab
from conftest import assert_user_error, run_cli
from ssdlab.experiments.sweep import (
    Sweep,
    SweepError,
    derive_seed,
    expand_range,
    format_size,
    parse_size,
)

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples" / "sweeps"

BASE: dict[str, Any] = {
    "config": "small-tlc",
    "job": {"rw": "randwrite", "bs": "4KiB", "iodepth": 4, "io_count": 500},
}


def sweep_of(**extra: Any) -> Sweep:
    return Sweep.from_dict({**BASE, **extra}, source="test.toml")


# -- the shipped examples ---------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
def test_examples_load_and_expand(path: Path) -> None:
    sweep = Sweep.load(path)
    points = sweep.points()
    assert len(points) == sweep.point_count > 0
    assert len({p.id for p in points}) == len(points)


def test_quick_example_shape() -> None:
    sweep = Sweep.load(EXAMPLES / "quick.toml")
    points = sweep.points()
    assert [a.column for a in sweep.axes] == ["config.ftl.over_provisioning", "job.rw"]
    assert len(points) == 3 * 2 * 2
    # First axis outermost, repetitions innermost.
    assert [p.params["config.ftl.over_provisioning"] for p in points[:4]] == [0.07] * 4
    assert [p.params["job.rw"] for p in points[:4]] == ["randwrite"] * 2 + ["randrw"] * 2
    assert [p.repetition for p in points[:2]] == [0, 1]
    assert points[0].seed == 1 and points[1].seed == derive_seed(1, 1)
    assert points[0].job["rw"] == "randwrite" and points[0].job["iodepth"] == 16
    assert json.loads(points[0].config_json)["ftl"]["over_provisioning"] == 0.07


def test_scale_example_has_200_points() -> None:
    assert Sweep.load(EXAMPLES / "scale200.toml").point_count == 200


def test_point_ids_are_stable_and_depend_on_what_is_run() -> None:
    first = [p.id for p in Sweep.load(EXAMPLES / "quick.toml").points()]
    again = [p.id for p in Sweep.load(EXAMPLES / "quick.toml").points()]
    assert first == again
    other = sweep_of(axes={"ftl.over_provisioning": [0.07]}, seed=1).points()[0]
    moved = sweep_of(axes={"ftl.over_provisioning": [0.07]}, seed=2).points()[0]
    assert other.id != moved.id


def test_task_is_small_text_only() -> None:
    point = Sweep.load(REPO / "python/ssdlab/reproduce/seed004_fig5.toml").points()[0]
    task = point.task()
    assert set(task) == {
        "id",
        "kind",
        "config_json",
        "job_json",
        "seed",
        "record_requests",
        "stats_interval",
    }
    assert len(json.dumps(task)) < 8192


# -- axes and ranges --------------------------------------------------------------------------


def test_nested_tables_and_config_prefix_name_the_same_axis() -> None:
    nested = sweep_of(axes={"ftl": {"gc": {"policy": ["greedy", "cost-benefit"]}}})
    prefixed = sweep_of(axes={"config.ftl.gc.policy": ["greedy", "cost-benefit"]})
    assert [a.column for a in nested.axes] == ["config.ftl.gc.policy"]
    assert [p.id for p in nested.points()] == [p.id for p in prefixed.points()]


def test_zip_varies_axes_together_within_a_grid() -> None:
    sweep = sweep_of(
        axes={"job.iodepth": [1, 8]},
        zip=[{"job.rw": ["randread", "randwrite"], "precondition.fill": ["sequential", "none"]}],
    )
    combos = [(p.params["job.iodepth"], p.params["job.rw"], p.params["config.precondition.fill"])
              for p in sweep.points()]  # fmt: skip
    assert combos == [
        (1, "randread", "sequential"),
        (1, "randwrite", "none"),
        (8, "randread", "sequential"),
        (8, "randwrite", "none"),
    ]


def test_axes_may_supply_fields_the_base_job_lacks() -> None:
    sweep = Sweep.from_dict(
        {"config": "small-tlc", "job": {"io_count": 100}, "axes": {"job.rw": ["read", "write"]}}
    )
    assert [p.job["rw"] for p in sweep.points()] == ["read", "write"]


def test_seeds_list_and_repeat() -> None:
    assert sweep_of(seeds=[5, 9]).seeds == (5, 9)
    repeated = sweep_of(seed=7, repeat=3).seeds
    assert repeated[0] == 7 and len(set(repeated)) == 3


@pytest.mark.parametrize(
    ("spec", "values"),
    [
        ({"start": 1, "stop": 10, "step": 3}, [1, 4, 7, 10]),
        ({"start": 10, "stop": 1, "step": -4}, [10, 6, 2]),
        ({"start": 0.1, "stop": 0.3, "step": 0.05}, [0.1, 0.15, 0.2, 0.25, 0.3]),
        ({"start": 0, "stop": 1, "num": 5}, [0, 0.25, 0.5, 0.75, 1]),
        ({"start": 0, "stop": 100, "num": 3}, [0, 50, 100]),
        ({"start": 1, "stop": 100, "factor": 4}, [1, 4, 16, 64]),
        ({"start": 0.5, "stop": 2, "factor": 2}, [0.5, 1.0, 2.0]),
        ({"start": "4KiB", "stop": "64KiB", "factor": 2},
         ["4KiB", "8KiB", "16KiB", "32KiB", "64KiB"]),
        ({"start": "512KiB", "stop": "2MiB", "step": "512KiB"},
         ["512KiB", "1MiB", "1536KiB", "2MiB"]),
    ],
)  # fmt: skip
def test_ranges(spec: dict[str, Any], values: list[Any]) -> None:
    assert expand_range(spec, "axes.x") == values


@given(
    start=st.integers(-1000, 1000),
    length=st.integers(0, 500),
    step=st.integers(1, 50),
)
def test_integer_step_range_is_pythons_inclusive_range(start: int, length: int, step: int) -> None:
    stop = start + length
    assert expand_range({"start": start, "stop": stop, "step": step}, "x") == list(
        range(start, stop + 1, step)
    )


@given(
    start=st.integers(1, 1000),
    factor=st.integers(2, 10),
    stop=st.integers(1, 10**9),
)
def test_geometric_range_stops_at_the_last_value_within_stop(
    start: int, factor: int, stop: int
) -> None:
    if stop < start:
        with pytest.raises(SweepError):
            expand_range({"start": start, "stop": stop, "factor": factor}, "x")
        return
    values = expand_range({"start": start, "stop": stop, "factor": factor}, "x")
    assert values[0] == start and values[-1] <= stop < values[-1] * factor
    assert all(b == a * factor for a, b in zip(values, values[1:], strict=False))


@given(count=st.integers(0, 2**50))
def test_sizes_round_trip(count: int) -> None:
    assert parse_size(format_size(count)) == count


@settings(max_examples=25, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 4), min_size=0, max_size=3),
    repeat=st.integers(1, 3),
)
def test_grid_size_is_the_product_of_axis_lengths(lengths: list[int], repeat: int) -> None:
    candidates = {
        "job.iodepth": [1, 2, 4, 8],
        "ftl.over_provisioning": [0.1, 0.15, 0.2, 0.25],
        "job.rw": ["randwrite", "randrw", "write", "rw"],
    }
    axes = {name: values[:n] for (name, values), n in zip(candidates.items(), lengths,
                                                          strict=False)}  # fmt: skip
    sweep = sweep_of(axes=axes, repeat=repeat)
    points = sweep.points()
    assert len(points) == math.prod(lengths) * repeat
    assert len({p.id for p in points}) == len(points)
    assert [p.index for p in points] == list(range(len(points)))


def test_derived_seeds_are_distinct_and_fit_63_bits() -> None:
    seeds = [derive_seed(1, r) for r in range(1000)]
    assert seeds[0] == 1 and len(set(seeds)) == 1000
    assert all(0 <= s < 2**63 for s in seeds)
    assert derive_seed(2, 1) != derive_seed(1, 2)


# -- mistakes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "needles"),
    [
        ({**BASE, "frobnicate": 1}, ["frobnicate", "expected one of"]),
        ({"job": BASE["job"]}, ["no config"]),
        ({**BASE, "config": "no-such-preset"}, ["no-such-preset", "small-tlc"]),
        ({**BASE, "config": "missing/drive.toml"}, ["drive.toml", "no such file"]),
        ({"config": "small-tlc"}, ["[job] table, job_file or a [trace] table"]),
        ({**BASE, "trace": "x.csv"}, ["trace"]),
        ({**BASE, "axes": {"ftl.warp_drive": [1, 2]}}, ["ftl.warp_drive", "warp_drive"]),
        ({**BASE, "axes": {"nope.x": [1]}}, ["nope", "expected one of"]),
        ({**BASE, "axes": {"ftl.over_provisioning": [0.1, 5.0]}},
         ["ftl.over_provisioning", "5", "expected"]),
        ({**BASE, "axes": {"job.iodepth": [4, 0]}}, ["job.iodepth", "0", "expected 1"]),
        ({**BASE, "axes": {"job.rw": ["read", "sideways"]}}, ["job.rw", "sideways"]),
        ({**BASE, "axes": {"job.warp": [1]}}, ["warp", "unknown field"]),
        ({**BASE, "axes": {"job.iodepth": []}}, ["job.iodepth", "at least one"]),
        ({**BASE, "axes": {"job.iodepth": 4}}, ["job.iodepth", "expected a list"]),
        ({**BASE, "axes": {"job.iodepth": [1, 2, 1]}}, ["job.iodepth", "twice"]),
        ({**BASE, "axes": {"job.iodepth": {"start": 1, "stop": 8}}}, ["step, num or factor"]),
        ({**BASE, "axes": {"job.iodepth": {"start": 1, "stop": 8, "step": 0}}}, ["step", "0"]),
        ({**BASE, "axes": {"job.iodepth": {"start": 8, "stop": 1, "step": 1}}},
         ["never reaches stop"]),
        ({**BASE, "axes": {"job.iodepth": {"start": 1, "stop": 8, "factor": 1}}},
         ["factor", "> 1"]),
        # "4KB" is 4000 bytes in the one size grammar: the range is fine, the job refuses it.
        ({**BASE, "axes": {"job.bs": {"start": "4KB", "stop": "1MiB", "factor": 2}}},
         ["job.bs", "4000", "multiple of 512"]),
        ({**BASE, "axes": {"job.bs": {"start": "4 quarts", "stop": "1MiB", "factor": 2}}},
         ["4 quarts"]),
        ({**BASE, "axes": {"job.iodepth": {"start": 1, "stop": 10**9, "step": 1}}},
         ["at most"]),
        ({**BASE, "zip": [{"job.rw": ["read", "write"], "job.iodepth": [1]}]},
         ["same number of values", "job.rw has 2"]),
        ({**BASE, "axes": {"job.iodepth": [1]}, "zip": [{"job.iodepth": [2]}]},
         ["job.iodepth", "twice"]),
        ({**BASE, "set": {"ftl.over_provisioning": 0.2},
          "axes": {"ftl.over_provisioning": [0.1]}}, ["both in [set] and an axis"]),
        ({**BASE, "set": {"ftl.over_provisioning": 9}}, ["[set]", "over_provisioning"]),
        ({**BASE, "set": {"job.iodepth": 9}}, ["set.job.iodepth", "[job]"]),
        ({**BASE, "seed": -1}, ["seed", "-1"]),
        ({**BASE, "seeds": [1, 1]}, ["distinct"]),
        ({**BASE, "seeds": [1], "repeat": 2}, ["seeds", "repeat"]),
        ({**BASE, "repeat": 0}, ["repeat", "0"]),
        ({**BASE, "record_requests": "yes"}, ["record_requests", "true or false"]),
        ({**BASE, "stats_interval": "soon"}, ["stats_interval", "soon"]),
        ({**BASE, "stats_interval": "0ms"}, ["stats_interval", "positive duration"]),
        ({**BASE, "stats_interval": 5}, ["stats_interval", "positive duration"]),
        ({**BASE, "job": {**BASE["job"], "iodepth": "deep"}}, ["[job]", "iodepth"]),
        ({**BASE, "zip": [{"interface.mdts": ["4KiB", "1KiB"], "job.io_count": [1, 2]}]},
         ["interface.mdts", "1KiB", "multiple of 4KiB"]),
        # Each value fine alone, the combination not: the message names the whole point.
        ({**BASE, "axes": {"ftl.map_unit": ["4KiB", "16KiB"],
                           "nand.page_size": ["16KiB", "8KiB"]}},
         ["point", "config.ftl.map_unit=\"16KiB\"", "config.nand.page_size=\"8KiB\"",
          "divides the page size"]),
    ],
)  # fmt: skip
def test_mistakes_are_sweep_errors_naming_field_and_value(
    data: dict[str, Any], needles: list[str]
) -> None:
    with pytest.raises(SweepError) as caught:
        Sweep.from_dict(data, source="bad.toml").points()
    message = str(caught.value)
    assert message.startswith("bad.toml"), message
    assert "\n" not in message
    for needle in needles:
        assert needle.lower() in message.lower(), (needle, message)


def test_sweep_error_is_an_ssdlab_error() -> None:
    assert issubclass(SweepError, ssdlab.SsdlabError)


# -- the same mistakes on the command line: one line, exit 2, no traceback --------------------


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ('config = "small-tlc"\n[job\nrw = "read"\n', ["bad.toml", "invalid TOML", "line 2"]),
        ('config = "small-tlc"\n[job]\nrw = "read"\n[axes]\n"ftl.nope" = [1]\n',
         ["bad.toml", "ftl.nope", "unknown field"]),
        ('config = "small-tlc"\n[job]\nrw = "read"\n[axes]\n"job.iodepth" = [1, -3]\n',
         ["bad.toml", "job.iodepth", "-3"]),
        ('config = "small-tlc"\n[job]\nrw = "read"\n[axes]\n'
         '"job.iodepth" = { start = 1, stop = 4 }\n', ["bad.toml", "job.iodepth", "step"]),
    ],
)  # fmt: skip
def test_cli_bad_sweep_file(tmp_path: Path, text: str, needles: list[str]) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    proc = run_cli("sweep", path, "--out", tmp_path / "out")
    assert_user_error(proc, *needles)
    assert not (tmp_path / "out" / "runs").exists()  # nothing ran


def test_cli_missing_sweep_file(tmp_path: Path) -> None:
    assert_user_error(run_cli("sweep", tmp_path / "nope.toml", "--out", tmp_path / "o"),
                      "nope.toml")  # fmt: skip


def test_cli_out_is_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    proc = run_cli("sweep", EXAMPLES / "quick.toml", "--out", blocker)
    assert_user_error(proc, "file", "not a directory")


def test_cli_unknown_executor(tmp_path: Path) -> None:
    proc = run_cli("sweep", EXAMPLES / "quick.toml", "--out", tmp_path / "o", "--executor", "mpi")
    assert_user_error(proc, "mpi", "local, ray")


def test_cli_dry_run_lists_points(tmp_path: Path) -> None:
    proc = run_cli("sweep", EXAMPLES / "quick.toml", "--out", tmp_path / "o", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "12 points" in proc.stdout and "randwrite" in proc.stdout
    assert not (tmp_path / "o").exists()


def test_sweep_sizes_use_the_config_grammar() -> None:
    """A size valid in a config is valid in a sweep range: one grammar, the core's."""
    from ssdlab.experiments.sweep import format_size, parse_size

    assert parse_size("1.5MiB") == 1536 * 1024
    assert parse_size("16 KiB") == 16384
    assert parse_size("1GB") == 10**9
    assert parse_size("4096") == 4096
    assert parse_size("four KiB") is None
    assert parse_size("-4KiB") is None
    assert format_size(4096) == "4KiB"
    assert format_size(1536 * 1024) == "1536KiB"
    assert format_size(1000) == "1000B"


# -- the shared trace samples: @traces/ ------------------------------------------------------


def traces_sweep(base_dir: Path) -> Sweep:
    return Sweep.from_dict(
        {"config": "small-tlc", "trace": {"trace": "@traces/hm0.csv", "mode": "afap"}},
        source="samples.toml",
        base_dir=base_dir,
    )


def test_traces_are_found_by_option_then_environment_then_above_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ssdlab.experiments import sweep as sweep_module

    monkeypatch.delenv("SSDLAB_TRACES", raising=False)
    checkout = tmp_path / "checkout"
    (checkout / "shared" / "traces").mkdir(parents=True)
    (checkout / "shared" / "traces" / "hm0.csv").write_text("x\n")
    deep = checkout / "repo" / "python" / "reproduce"
    deep.mkdir(parents=True)
    found = traces_sweep(deep).job["trace"]
    assert found == str((checkout / "shared" / "traces" / "hm0.csv").resolve())

    elsewhere = tmp_path / "installed"
    elsewhere.mkdir()
    samples = tmp_path / "samples"
    samples.mkdir()
    (samples / "hm0.csv").write_text("x\n")
    monkeypatch.setenv("SSDLAB_TRACES", str(samples))
    assert traces_sweep(elsewhere).job["trace"] == str((samples / "hm0.csv").resolve())

    other = tmp_path / "other"
    other.mkdir()
    (other / "hm0.csv").write_text("x\n")
    sweep_module.set_traces_dir(other)
    try:
        assert traces_sweep(elsewhere).job["trace"] == str((other / "hm0.csv").resolve())
    finally:
        sweep_module.set_traces_dir(None)


def test_missing_trace_samples_say_where_they_were_sought_and_how_to_point_at_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSDLAB_TRACES", raising=False)
    with pytest.raises(SweepError) as info:
        traces_sweep(tmp_path)
    message = str(info.value)
    assert "@traces/hm0.csv" in message and "shared trace samples, not found" in message
    assert f"shared/traces above {tmp_path}" in message
    assert "--traces DIR" in message and "SSDLAB_TRACES=DIR" in message
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("SSDLAB_TRACES", str(empty))
    with pytest.raises(SweepError, match=r"hm0.csv is not in .*empty"):
        traces_sweep(tmp_path)


def test_reproduction_of_the_samples_from_elsewhere_needs_traces(tmp_path: Path) -> None:
    sample = REPO / "python" / "ssdlab" / "reproduce" / "seed001_samples.toml"
    copy = tmp_path / "seed001_samples.toml"
    copy.write_text(sample.read_text())
    proc = run_cli("sweep", copy, "--out", tmp_path / "out", "--dry-run")
    assert_user_error(proc, "shared trace samples", "--traces DIR")
    shared = REPO.parent / "shared" / "traces"
    if shared.is_dir():
        proc = run_cli("sweep", copy, "--out", tmp_path / "out", "--dry-run", "--traces", shared)
        assert proc.returncode == 0, proc.stderr
