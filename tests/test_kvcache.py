"""The key-value cache example (docs/kvcache.md) in a tiny version, and the request lists it
runs on (``ssdlab.run_requests``, ``driver/requests.rs``)."""

from __future__ import annotations

import numpy as np
import pytest

import ssdlab
from conftest import run_cli
from ssdlab.examples import kvcache
from ssdlab.reproduce import blocks
from ssdlab.request_list import OP_CODES

# A quarter of the example's drive (512 MiB raw), a short warm-up: under a second a run.
TINY = {
    "extra": ("nand.blocks_per_plane=64",),
    "warmup_drive_writes": 3.0,
    "measured_drive_writes": 1.0,
    "key_count": 100_000,
}


@pytest.fixture(scope="module")
def tiny_points() -> dict[str, dict]:
    return {d: kvcache.run_point(d, 0.95, 1, **TINY) for d in kvcache.DRIVES}


def test_placement_lowers_the_conventional_drives_write_amplification(
    tiny_points: dict[str, dict],
) -> None:
    conventional, placement = tiny_points["conventional"], tiny_points["placement"]
    # At 95 % the conventional drive's GC copies live LOC data it mixed with buckets.
    assert conventional["device_waf"] > placement["device_waf"] + 0.05
    # With a handle per region the LOC's blocks die whole: its stream moves nothing.
    loc, soc = placement["handle_waf"]
    assert loc == 1.0 and soc > 1.0
    assert conventional["host_waf"] == placement["host_waf"] == 1.0


def test_a_drive_in_service_amplifies_where_a_fresh_one_has_room() -> None:
    # At half the drive, the fresh drive keeps the other half as spare room and copies next to
    # nothing; the drive in service holds data there and has only its over-provisioning.
    in_service = kvcache.run_point("conventional", 0.5, 1, **TINY)
    fresh = kvcache.run_point("fresh", 0.5, 1, **TINY)
    assert fresh["device_waf"] < 1.02
    assert in_service["device_waf"] > fresh["device_waf"] + 0.05


def test_the_zoned_drive_writes_what_the_host_writes(tiny_points: dict[str, dict]) -> None:
    zoned = tiny_points["zoned"]
    assert zoned["device_waf"] == 1.0
    assert zoned["zone_errors"] == {}  # every write at its write pointer, every reset valid
    # The host's SOC collection copies live buckets: its amplification is the host's.
    assert zoned["soc_gc_resets"] > 0
    assert zoned["host_waf"] > 1.0


def test_the_same_seed_gives_the_same_list_and_figures() -> None:
    logical, zoned = kvcache.capacities(TINY["extra"])
    options = {
        "logical_bytes": logical,
        "zoned_bytes": zoned,
        "warmup_drive_writes": 1.0,
        "measured_drive_writes": 0.5,
        "key_count": 10_000,
    }
    drive = kvcache.DRIVES["zoned"]
    a = kvcache.plan(drive, 0.8, 7, **options)
    b = kvcache.plan(drive, 0.8, 7, **options)
    c = kvcache.plan(drive, 0.8, 8, **options)
    for name in ("ops", "offsets", "lens", "streams"):
        assert getattr(a, name).tobytes() == getattr(b, name).tobytes()
    assert a.offsets.tobytes() != c.offsets.tobytes()
    small = {**TINY, "key_count": 10_000, "warmup_drive_writes": 1.0}
    assert kvcache.run_point("placement", 0.8, 7, **small) == kvcache.run_point(
        "placement", 0.8, 7, **small
    )


def test_the_docs_figures_are_what_the_model_gives() -> None:
    """One point of docs/kvcache.md's table (a few seconds) run again: if the model or the
    example moved, docs/generated/kvcache.json is stale."""
    kept = [
        p
        for p in blocks.load(blocks.find("kvcache").artefact_path)["points"]
        if p["drive"] == "placement" and p["utilisation"] == 0.95
    ]
    assert kept, "docs/generated/kvcache.json has no placement point at 95 %"
    assert kvcache.run_point("placement", 0.95, 1) == kept[0], (
        "docs/generated/kvcache.json is stale: python scripts/fidelity.py --blocks kvcache"
    )


def test_a_zoned_layout_without_room_for_the_soc_is_refused() -> None:
    # A drive of 16 zones of 16 MiB (224 MiB logical when conventional): at 50 % the cache has
    # 8 zones, 6 of them segments; its 1,146 buckets need one zone and two free ones, not 2.
    with pytest.raises(ValueError, match="gives the SOC 2 zones, expected at least 3"):
        kvcache.layout(kvcache.DRIVES["zoned"], 0.5, 224 << 20, 256 << 20)


# -- run_requests ---------------------------------------------------------------------------


def _fresh() -> ssdlab.Config:
    return ssdlab.Config.load("small-tlc", ['precondition.fill="none"'])


def test_a_request_list_runs_in_order_and_measures_after_its_warmup() -> None:
    n = 200
    result = ssdlab.run_requests(
        _fresh(),
        np.full(n, OP_CODES["write"]),
        np.arange(n) * 4096,
        np.full(n, 4096),
        iodepth=8,
        warmup=50,
    ).to_dict()
    assert result["job"] == {"requests": n, "warmup": 50, "iodepth": 8}
    assert result["requests"]["issued"] == n
    assert result["requests"]["measured"]["host_units_written"] == n - 50
    assert result["requests"]["measured"]["write_amplification"] == 1.0
    assert result["ops"]["write"]["count"] == n - 50


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        (([1, 1], [0], [4096, 4096], None), "`offsets`: got shape (1,), expected 2 values"),
        (([1], [-4096], [4096], None), "`offsets`: got values from -4096 to -4096"),
        (([99], [0], [4096], None), "`ops`: got values from 99 to 99, expected 0 up to"),
        (([1], [0], [4096], [1.5]), "`streams`: got float64 values, expected integers"),
        (([1, 1], [0, 4096], [4096, 4096], [0, 1]), "request 1"),
    ],
)
def test_bad_request_lists_are_named(arrays: tuple, message: str) -> None:
    ops, offsets, lens, streams = arrays
    with pytest.raises(ssdlab.JobError) as caught:
        ssdlab.run_requests(_fresh(), ops, offsets, lens, streams)
    assert message in str(caught.value)


def test_a_warmup_that_leaves_nothing_to_measure_is_refused() -> None:
    with pytest.raises(ssdlab.JobError, match="`warmup`: got 1, expected fewer than the 1"):
        ssdlab.run_requests(_fresh(), [1], [0], [4096], warmup=1)


def test_the_cli_names_a_bad_drive_or_share() -> None:
    proc = run_cli("example", "kvcache", "--drive", "tape")
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "error: --drive: got 'tape', expected one of conventional, placement, fresh, zoned"
    )
    proc = run_cli("example", "kvcache", "--utilisation", "1.5")
    assert proc.returncode == 2
    assert "--utilisation: got 1.5, expected a share above 0 up to 1" in proc.stderr
