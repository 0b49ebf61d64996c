"""The result table renders whatever the result holds, and never crashes on a gap."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import ssdlab
from conftest import TINY_JOB
from ssdlab.cli.table import flatten, key_value_table, render_text
from ssdlab.experiments.results import RESULT_COLUMNS, flatten_result


def test_full_result_renders(tiny_result: ssdlab.Result) -> None:
    text = render_text(tiny_result.to_dict())
    for needle in ("read", "write", "total", "p99.9", "write amplification", "GC runs",
                   "channel utilisation", "die utilisation", "requests per wall-clock second",
                   "wall time"):  # fmt: skip
        assert needle in text, needle


def test_a_device_without_nand_shows_no_channel_or_die_rows(tiny_result: ssdlab.Result) -> None:
    # A PCM-only device's result lists no NAND channel or die (`per_unit` empty).
    data = copy.deepcopy(tiny_result.to_dict())
    for unit in ("channel", "die"):
        data["utilisation"][unit] = {"mean": 0.0, "min": 0.0, "max": 0.0, "per_unit": []}
    text = render_text(data)
    assert "channel utilisation" not in text and "die utilisation" not in text
    assert "channel utilisation" in render_text(tiny_result.to_dict())


def _without(data: dict[str, Any], *path: str) -> dict[str, Any]:
    trimmed = copy.deepcopy(data)
    node = trimmed
    for key in path[:-1]:
        node = node[key]
    node.pop(path[-1], None)
    return trimmed


@pytest.mark.parametrize(
    "path",
    [("ops", "read"), ("ops",), ("device",), ("utilisation",), ("wall",), ("sim",), ("job",),
     ("total",), ("device", "erase_count"), ("ops", "write", "latency_us")],
)  # fmt: skip
def test_gaps_print_as_dashes(tiny_result: ssdlab.Result, path: tuple[str, ...]) -> None:
    text = render_text(_without(tiny_result.to_dict(), *path))
    assert text


def test_zero_counts_and_empty_results() -> None:
    zero_op = {"count": 0, "bytes": 0, "iops": 0.0, "bandwidth_mib_s": 0.0, "bandwidth_mb_s": 0.0,
               "latency_us": {}}  # fmt: skip
    text = render_text({"ops": {"read": zero_op}, "total": {"count": 0}})
    assert "read" in text
    assert render_text({})
    assert render_text({"ops": None, "device": "?", "wall": []})


def test_key_value_table_flattens() -> None:
    rows = flatten({"a": {"b": 1, "c": [1, 2]}, "d": "x"})
    assert rows == [("a.b", 1), ("a.c", [1, 2]), ("d", "x")]
    assert key_value_table({"speed": {"requests_per_s": 1.5e6}, "note": "[bold]"}).row_count == 2


def test_multiplane_rule_and_suspension_figures_show(small_config: ssdlab.Config) -> None:
    config = small_config.set("nand.multiplane_rule", "onfi").set("nand.suspend", True)
    data = ssdlab.run(config, TINY_JOB, seed=7).to_dict()
    ops = data["device"]["nand_ops"]
    assert ops["single_plane_ops"] + ops["multi_plane_ops"] > 0
    assert ops["program_suspensions"] + ops["erase_suspensions"] > 0
    figures = flatten_result(data)
    for key in ops:
        assert f"device.nand_ops.{key}" in RESULT_COLUMNS
        assert figures[f"device.nand_ops.{key}"] == ops[key]
    text = render_text(data)
    assert "multi-plane operations" in text
    assert "suspensions" in text
    assert "merges" not in text


def test_merges_show_only_with_a_block_mapped_ftl(preset_name: str) -> None:
    config = ssdlab.Config.load(
        preset_name,
        {
            "ftl.kind": "fast",
            "ftl.log_blocks": 3,
            "ftl.map_unit": "16KiB",
            "ftl.over_provisioning": 0.5,
            "precondition.fill": "none",
            "precondition.random_overwrite": 0.0,
        },
    )
    data = ssdlab.run(config, TINY_JOB, seed=7).to_dict()
    merges = data["device"]["merges"]
    figures = flatten_result(data)
    for key in ("switch", "partial", "full", "pages_copied"):
        assert figures[f"device.merges.{key}"] == merges[key]
        assert f"device.merges.{key}" in RESULT_COLUMNS
    text = render_text(data)
    assert "merges" in text
    assert f"{merges['pages_copied']} pages copied" in text


def test_mapping_cache_figures_show_only_when_cached(small_config: ssdlab.Config) -> None:
    plain = ssdlab.run(small_config, TINY_JOB, seed=7).to_dict()
    assert "ftl" not in plain
    assert "mapping cache" not in render_text(plain)
    # Both keys at once: each needs the other (set one by one, the first is refused).
    config = ssdlab.Config.load(
        small_config.spec, {"ftl.mapping": "cached", "ftl.mapping_cache": "16KiB"}
    )
    data = ssdlab.run(config, TINY_JOB, seed=7).to_dict()
    mapping = data["ftl"]["mapping"]
    assert mapping["hits"] + mapping["misses"] > 0
    assert mapping["location"] == "dram"
    text = render_text(data)
    assert "mapping cache hits" in text
    assert "translation pages" in text


def test_latencies_above_the_histogram_top_are_named_under_the_table(
    tiny_result: ssdlab.Result,
) -> None:
    data = tiny_result.to_dict()
    assert "above one hour" not in render_text(data)
    data["ops"]["read"]["latency_us"]["above_histogram"] = 3
    text = render_text(data)
    assert "latencies above one hour: 3 read" in text


def test_page_register_hits_and_read_ahead_show_when_there_are_some() -> None:
    data = {"device": {"page_register_hits": 12, "read_ahead_pages": 30}}
    text = render_text(data)
    assert "page-register hits" in text
    assert "pages read ahead" in text
    quiet = render_text({"device": {"page_register_hits": 0}})
    assert "page-register hits" not in quiet
    assert "pages read ahead" not in quiet
    assert "device.page_register_hits" in RESULT_COLUMNS
