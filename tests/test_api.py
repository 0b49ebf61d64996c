"""The Python API: configurations, jobs, runs, results and per-request arrays."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import ssdlab
from conftest import TINY_JOB, without_wall
from ssdlab import _core
from ssdlab.nvme import NvmeDevice

RESULT_KEYS = {"schema", "ssdlab_version", "config_name", "config_hash", "seed", "job", "sim",
               "ops", "total", "device", "utilisation", "wall"}  # fmt: skip


# -- package --------------------------------------------------------------------------------


def test_every_core_name_is_in_the_binding_contract() -> None:
    # docs/binding-contract.md is the contract of the compiled module: each public name of
    # `_core` (function, class, exception, constant) must be listed there (9 of 33 were not).
    text = (Path(__file__).resolve().parent.parent / "docs" / "binding-contract.md").read_text(
        encoding="utf-8"
    )
    public = sorted(name for name in dir(_core) if not name.startswith("_"))
    missing = [name for name in public if not re.search(rf"[`.]{name}\b", text)]
    assert not missing, f"docs/binding-contract.md does not describe: {missing}"


def test_exports_and_version() -> None:
    assert ssdlab.__version__ == _core.version()
    assert issubclass(ssdlab.ConfigError, ssdlab.SsdlabError)
    assert issubclass(ssdlab.JobError, ssdlab.SsdlabError)
    assert issubclass(ssdlab.Interrupted, ssdlab.SsdlabError)
    assert issubclass(ssdlab.SsdlabError, Exception)


def test_presets_are_sorted_and_described(preset_name: str) -> None:
    presets = ssdlab.presets()
    names = [p["name"] for p in presets]
    assert names == sorted(names)
    assert preset_name in names
    for preset in presets:
        assert set(preset) >= {"name", "description", "source"}
        assert preset["source"], f"preset {preset['name']} names no source"


def test_preset_toml_is_the_shipped_file(preset_name: str) -> None:
    text = ssdlab.preset_toml(preset_name)
    assert tomllib.loads(text)["meta"]["name"] == preset_name


def test_unknown_preset_is_a_config_error() -> None:
    with pytest.raises(ssdlab.ConfigError, match="no-such-preset"):
        ssdlab.Config.load("no-such-preset")
    with pytest.raises(ssdlab.ConfigError):
        ssdlab.preset_toml("no-such-preset")


# -- Config ---------------------------------------------------------------------------------


def test_load_preset(small_config: ssdlab.Config, preset_name: str) -> None:
    data = small_config.to_dict()
    assert small_config.name == preset_name
    assert data["meta"]["name"] == preset_name
    assert tomllib.loads(small_config.to_toml())["meta"]["name"] == preset_name


def test_set_returns_a_new_config(small_config: ssdlab.Config) -> None:
    changed = small_config.set("ftl.over_provisioning", 0.25).set("ftl.gc.policy", "cost-benefit")
    assert changed.to_dict()["ftl"]["over_provisioning"] == 0.25
    assert changed.to_dict()["ftl"]["gc"]["policy"] == "cost-benefit"
    assert small_config.to_dict()["ftl"]["over_provisioning"] != 0.25
    assert changed != small_config
    assert changed.overrides == ("ftl.over_provisioning=0.25", 'ftl.gc.policy="cost-benefit"')


def test_set_keeps_units_and_booleans(small_config: ssdlab.Config) -> None:
    changed = small_config.set("nand.page_size", "8KiB").set("nand.multiplane", False)
    toml = tomllib.loads(changed.to_toml())
    assert toml["nand"]["multiplane"] is False
    assert changed.to_dict() != small_config.to_dict()


def test_overrides_as_strings_or_mapping(preset_name: str) -> None:
    from_strings = ssdlab.Config.load(preset_name, ["ftl.over_provisioning=0.2"])
    from_mapping = ssdlab.Config.load(preset_name, {"ftl.over_provisioning": 0.2})
    assert from_strings == from_mapping


@pytest.mark.parametrize(
    ("path", "value", "needle"),
    [
        ("ftl.no_such_knob", 1, "no_such_knob"),
        ("nand.channels", 0, "nand.channels"),
        ("ftl.over_provisioning", 0.01, "over_provisioning"),  # no room left for GC
        ("ftl.gc.policy", "psychic", "policy"),
    ],
)
def test_bad_override_is_a_config_error(
    small_config: ssdlab.Config, path: str, value: object, needle: str
) -> None:
    with pytest.raises(ssdlab.ConfigError, match=needle) as caught:
        small_config.set(path, value)
    assert "\n" not in str(caught.value)


def test_load_from_file_equals_preset(tmp_path: Path, preset_name: str) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(ssdlab.preset_toml(preset_name))
    from_file = ssdlab.Config.load(path)
    assert from_file.to_dict() == ssdlab.Config.load(preset_name).to_dict()
    # A relative path keeps working after `set`, wherever the process is.
    assert Path(from_file.spec).is_absolute()
    assert from_file.set("ftl.over_provisioning", 0.2).to_dict()["ftl"]["over_provisioning"] == 0.2


def test_malformed_file_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text("[meta]\nname = 'x'\n[nand\nchannels = 4\n")
    with pytest.raises(ssdlab.ConfigError, match="broken.toml") as caught:
        ssdlab.Config.load(path)
    assert "line 3" in str(caught.value)


def test_unknown_key_in_file(tmp_path: Path, preset_name: str) -> None:
    path = tmp_path / "extra.toml"
    path.write_text("warp_drive = true\n" + ssdlab.preset_toml(preset_name))
    with pytest.raises(ssdlab.ConfigError, match="warp_drive"):
        ssdlab.Config.load(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ssdlab.ConfigError, match="missing.toml"):
        ssdlab.Config.load(tmp_path / "missing.toml")


def test_toml_literal() -> None:
    from ssdlab.api import toml_literal

    assert toml_literal("16KiB") == '"16KiB"'
    assert toml_literal('say "hi"\n') == '"say \\"hi\\"\\n"'
    assert toml_literal(True) == "true"
    assert toml_literal(np.bool_(False)) == "false"
    assert toml_literal(3) == "3"
    assert toml_literal(np.int64(3)) == "3"
    assert toml_literal(0.125) == "0.125"
    assert toml_literal(float("inf")) == "inf"
    assert toml_literal(["1us", 2]) == '["1us", 2]'
    assert toml_literal({"a": 1, "b c": "x"}) == '{ a = 1, "b c" = "x" }'
    with pytest.raises(TypeError):
        toml_literal(object())


# -- Job ------------------------------------------------------------------------------------


def test_job_is_validated_and_canonical() -> None:
    job = ssdlab.Job(rw="randread", bs="4KiB", iodepth=4, io_count=100)
    data = job.to_dict()
    assert data["rw"] == "randread"
    assert data["iodepth"] == 4
    assert ssdlab.Job.from_dict(data) == job
    assert job.replace(iodepth=8).to_dict()["iodepth"] == 8


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"rw": "sideways"}, "rw"),
        ({"rw": "read", "iodepth": 0}, "iodepth"),
        ({"rw": "randrw", "rwmixread": 101}, "rwmixread"),
        ({"rw": "read", "bs": "4 parsecs"}, "bs"),
        ({"rw": "read", "bogus": 1}, "bogus"),
    ],
)
def test_bad_job_is_a_job_error(fields: dict[str, object], needle: str) -> None:
    with pytest.raises(ssdlab.JobError, match=needle):
        ssdlab.Job(**fields)


@pytest.mark.parametrize(
    ("call", "error", "needles"),
    [
        # Each was a message that named neither the value nor what was expected ("expected
        # value"), a float the user never wrote, or a bare Python error without the argument.
        (lambda: ssdlab.Job(rw=5), ssdlab.JobError, ("`rw`", "got 5", "`randread`")),
        (lambda: ssdlab.Job(rw=None), ssdlab.JobError, ("`rw`", "got null", "`randread`")),
        (
            lambda: ssdlab.Job(rw="read", io_count=2**70),
            ssdlab.JobError,
            ("`io_count`", "got 1180591620717411303424", "2^64"),
        ),
        (lambda: ssdlab.run("small-tlc", "x"), TypeError, ("job", "'x'", "a Job or a mapping")),
        (
            lambda: ssdlab.bench(io_count=-5),
            ValueError,
            ("io_count", "got -5", "from 1 to 2^64 - 1"),
        ),
        # serde's words for a Rust type ("expected u64", "expected struct NandConfig") said in
        # the user's: the range, a table.
        (
            lambda: ssdlab.Job(rw="read", io_count=-1),
            ssdlab.JobError,
            ("`io_count`", "got -1, expected an integer from 0 to 18446744073709551615"),
        ),
        (
            lambda: ssdlab.Config.load("small-tlc").set("nand", 3),
            ssdlab.ConfigError,
            ("`nand`", "got 3, expected a table of fields"),
        ),
        (
            lambda: ssdlab.Config.load("small-tlc", ["ftl.over_provisioning=1e400"]),
            ssdlab.ConfigError,
            ("`ftl.over_provisioning`", 'got "1e400", expected a finite number'),
        ),
        (
            lambda: ssdlab.Config.load("small-tlc", ["nand.timing.read=[]"]),
            ssdlab.ConfigError,
            ("`nand.timing.read`", 'one per page type of cell = "tlc"'),
        ),
        (lambda: ssdlab.Job.from_dict(None), TypeError, ("fields", "got None", "a mapping")),
        (
            lambda: ssdlab.Config.load("small-tlc").set("nand.channels", None),
            TypeError,
            ("nand.channels", "got None"),
        ),
        (lambda: ssdlab.Config.load("small-tlc", 5), TypeError, ("overrides", "got 5")),
        (
            lambda: ssdlab.swap("small-tlc", memory=None, swap_size="8MiB", workload="pc-mix"),
            TypeError,
            ("memory", "got None", "'64MiB'"),
        ),
        (lambda: ssdlab.Job.from_dict({1: 2}), TypeError, ("fields", "the key 1", "names")),
        (lambda: ssdlab.Trace.from_dict(None), TypeError, ("fields", "got None", "a mapping")),
        (lambda: ssdlab.Trace.from_dict({}), TypeError, ("fields", "no `trace`")),
        (
            lambda: ssdlab.trace_stats("model:web1", ird_block=-1),
            ssdlab.TraceError,
            ("ird_block", "got -1", "from 1 to 2^64 - 1"),
        ),
        (
            lambda: ssdlab.trace_stats("model:web1", seed=2**64),
            ValueError,
            ("seed", "got 18446744073709551616", "2^64 - 1"),
        ),
        (
            lambda: ssdlab.Config.load("seed002-fusion").set("hfsl.power_cut_event", 2**64 - 1),
            ssdlab.ConfigError,
            ("`hfsl.power_cut_event`", "got 18446744073709551615", "0 to 9223372036854775807"),
        ),
        (
            lambda: ssdlab.swap(
                "seed002-fusion", memory="64MiB", swap_size="64MiB", workload="pc-mix"
            ),
            ssdlab.ConfigError,
            ("seed002-fusion", "fusion device", "cannot overwrite in place"),
        ),
    ],
)  # fmt: skip
def test_api_errors_name_the_argument_the_value_and_what_is_expected(
    call: Callable[[], object], error: type[Exception], needles: tuple[str, ...]
) -> None:
    with pytest.raises(error) as caught:
        call()
    for needle in needles:
        assert needle in str(caught.value), str(caught.value)


def test_swap_takes_sizes_as_text_or_bytes(tmp_path: Path) -> None:
    trace = tmp_path / "pages.txt"
    trace.write_text("".join(f"{page * 4096} W\n" for page in range(600)))
    as_text = ssdlab.swap("small-tlc", memory="1MiB", swap_size="4MiB", workload=trace)
    as_bytes = ssdlab.swap("small-tlc", memory=1 << 20, swap_size=4 << 20, workload=trace)
    wall = ("wall_seconds", "accesses_per_wall_second")  # host timing, not the result
    assert {k: v for k, v in as_text.data.items() if k not in wall} == {
        k: v for k, v in as_bytes.data.items() if k not in wall
    }
    assert as_text.data["memory_pages"] == 256


def test_swap_takes_overrides_as_config_does(tmp_path: Path) -> None:
    # A lone string is one override (it was read as one override per character), and a mapping
    # gives each value as a TOML literal.
    trace = tmp_path / "pages.txt"
    trace.write_text("".join(f"{page * 4096} W\n" for page in range(600)))
    runs = [
        ssdlab.swap(
            "small-tlc", memory="1MiB", swap_size="4MiB", workload=trace, overrides=overrides
        ).data["era"]
        for overrides in ("swap.era=modern", ["swap.era=modern"], {"swap.era": "modern"})
    ]
    assert runs == ["modern"] * 3


def test_job_file(tmp_path: Path) -> None:
    path = tmp_path / "job.toml"
    path.write_text('name = "j"\nrw = "randwrite"\nbs = { "4KiB" = 70, "64KiB" = 30 }\n'
                    "iodepth = 4\nio_count = 500\n")  # fmt: skip
    job = ssdlab.Job.load(path)
    assert job.to_dict()["rw"] == "randwrite"
    bad = tmp_path / "bad.toml"
    bad.write_text('rw = "randwrite"\niodepth = "deep"\n')
    with pytest.raises(ssdlab.JobError, match="iodepth"):
        ssdlab.Job.load(bad)


# -- run and Result -------------------------------------------------------------------------


def test_result_keys(tiny_result: ssdlab.Result, preset_name: str) -> None:
    data = tiny_result.to_dict()
    assert set(data) >= RESULT_KEYS
    assert data["schema"] == "ssdlab.result/1"
    assert data["config_name"] == preset_name
    assert data["seed"] == 7
    assert data["total"]["count"] == TINY_JOB["io_count"]
    assert sum(op["count"] for op in data["ops"].values()) == data["total"]["count"]
    for op in data["ops"].values():
        if op["count"]:
            latency = op["latency_us"]
            assert 0 < latency["min"] <= latency["p50"] <= latency["p99"] <= latency["max"]
    assert json.loads(tiny_result.to_json()) == data


def test_request_arrays(tiny_result: ssdlab.Result) -> None:
    columns = tiny_result.requests()
    assert set(columns) == {
        "op",
        "op_name",
        "offset_bytes",
        "size_bytes",
        "issue_us",
        "latency_us",
    }
    count = tiny_result.to_dict()["total"]["count"]
    for name, array in columns.items():
        assert isinstance(array, np.ndarray)
        assert array.shape == (count,), name
    assert columns["op"].dtype == np.uint8
    assert columns["size_bytes"].dtype == np.uint64
    assert np.all(columns["size_bytes"] == 4096)
    assert columns["offset_bytes"].dtype == np.uint64
    assert columns["issue_us"].dtype == np.float64
    assert columns["latency_us"].dtype == np.float64
    assert set(np.unique(columns["op"])) <= {0, 1}  # randrw: reads and writes only
    assert np.all(columns["offset_bytes"] % 4096 == 0)
    assert np.all(columns["latency_us"] > 0)
    assert np.all(columns["issue_us"] >= 0)


def test_latencies_agree_with_the_summary(tiny_result: ssdlab.Result) -> None:
    ops = tiny_result.to_dict()["ops"]
    for op in ("read", "write"):
        latencies = tiny_result.latencies(op)
        assert latencies.size == ops[op]["count"]
        summary = ops[op]["latency_us"]
        # The summary comes from a histogram: equal to within its resolution.
        assert latencies.mean() == pytest.approx(summary["mean"], rel=0.01)
        assert latencies.max() == pytest.approx(summary["max"], rel=0.01)
    assert tiny_result.latencies("trim").size == 0
    with pytest.raises(ValueError):
        tiny_result.latencies("scribble")


def test_requests_need_recording(small_config: ssdlab.Config) -> None:
    result = ssdlab.run(small_config, ssdlab.Job(rw="read", bs="4KiB", io_count=100))
    assert not result.has_requests
    with pytest.raises(ValueError, match="record_requests"):
        result.requests()


def test_summary_is_text(tiny_result: ssdlab.Result) -> None:
    text = tiny_result.summary()
    assert "read" in text and "write" in text
    assert "write amplification" in text


def test_same_inputs_same_result(small_config: ssdlab.Config) -> None:
    first = ssdlab.run(small_config, TINY_JOB, seed=3)
    second = ssdlab.run(small_config, TINY_JOB, seed=3)
    assert without_wall(first.to_json()) == without_wall(second.to_json())
    other_seed = ssdlab.run(small_config, TINY_JOB, seed=4)
    assert without_wall(other_seed.to_json()) != without_wall(first.to_json())


def test_run_accepts_a_preset_name_and_a_dict(preset_name: str) -> None:
    result = ssdlab.run(preset_name, {"rw": "write", "bs": "16KiB", "io_count": 200})
    assert result.to_dict()["ops"]["write"]["count"] == 200


def test_job_larger_than_the_device(small_config: ssdlab.Config) -> None:
    with pytest.raises(ssdlab.JobError, match="size"):
        ssdlab.run(small_config, {"rw": "randread", "size": "100PiB", "io_count": 10})


def test_negative_seed_is_refused(small_config: ssdlab.Config) -> None:
    with pytest.raises(ValueError, match="seed"):
        ssdlab.run(small_config, TINY_JOB, seed=-1)


@pytest.mark.parametrize("seed", [2**64, 2**70, 1.5])
def test_a_seed_the_core_cannot_take_is_named(small_config: ssdlab.Config, seed: object) -> None:
    # Python's own words for an int too big for the core are a bare "int too big to convert".
    expected = r"seed: got .*, expected an integer from 0 to 2\^64 - 1"
    with pytest.raises(ValueError, match=expected):
        ssdlab.run(small_config, TINY_JOB, seed=seed)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=expected):
        NvmeDevice(small_config, seed=seed)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=expected):
        ssdlab.swap("small-tlc", memory="1MiB", swap_size="1MiB", workload="pc-mix", seed=seed)  # type: ignore[arg-type]


def test_progress_and_interrupt(small_config: ssdlab.Config) -> None:
    calls: list[tuple[int, int]] = []

    def stop(done: int, total: int) -> None:
        calls.append((done, total))
        raise KeyboardInterrupt

    # Long enough that the core reports progress before it finishes.
    job = {"rw": "randwrite", "bs": "4KiB", "iodepth": 32, "io_count": 50_000_000}
    with pytest.raises(ssdlab.Interrupted):
        ssdlab.run(small_config, job, progress=stop)
    assert calls, "the progress callback was never called"
    done, total = calls[-1]
    assert 0 <= done <= total
