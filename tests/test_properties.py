"""Property tests: any valid job runs to completion and its counts add up."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ssdlab

SIZES = {"4KiB": 4096, "8KiB": 8192, "16KiB": 16384, "64KiB": 65536, "1MiB": 1 << 20}
READS = {"read", "randread"}
WRITES = {"write", "randwrite"}
TRIMS = {"trim", "randtrim"}
MIXED = {"rw", "randrw"}

block_size = st.sampled_from(sorted(SIZES))
block_size_mix = st.dictionaries(block_size, st.integers(1, 100), min_size=1, max_size=3)


@st.composite
def jobs(draw: st.DrawFn) -> dict[str, Any]:
    job: dict[str, Any] = {
        "rw": draw(st.sampled_from(sorted(READS | WRITES | TRIMS | MIXED))),
        "bs": draw(st.one_of(block_size, block_size_mix)),
        "iodepth": draw(st.integers(1, 64)),
        "numjobs": draw(st.integers(1, 4)),
        "io_count": draw(st.integers(1, 1500)),
    }
    if job["rw"] in MIXED:
        job["rwmixread"] = draw(st.integers(0, 100))
    if draw(st.booleans()):
        job["distribution"] = draw(st.sampled_from(["uniform", "zipf:0.8", "zipf:1.2"]))
    if draw(st.booleans()):
        # A region inside the device, 1 to 64 MiB long, at a MiB-aligned offset.
        job["size"] = f"{draw(st.integers(1, 64))}MiB"
        job["offset"] = f"{draw(st.integers(0, 256))}MiB"
    return job


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(job=jobs(), seed=st.integers(0, 2**32))
def test_any_valid_job_runs_and_adds_up(
    small_config: ssdlab.Config, job: dict[str, Any], seed: int
) -> None:
    result = ssdlab.run(small_config, job, seed=seed).to_dict()
    ops = result["ops"]
    counts = {op: stats["count"] for op, stats in ops.items()}

    assert result["total"]["count"] == job["io_count"]
    assert sum(counts.values()) == job["io_count"]
    assert sum(stats["bytes"] for stats in ops.values()) == result["total"]["bytes"]

    kinds = {op for op, count in counts.items() if count}
    if job["rw"] in READS:
        assert kinds == {"read"}
    elif job["rw"] in WRITES:
        assert kinds == {"write"}
    elif job["rw"] in TRIMS:
        assert kinds == {"trim"}
    else:
        assert kinds <= {"read", "write"}
        if job["rwmixread"] == 100:
            assert kinds == {"read"}
        if job["rwmixread"] == 0:
            assert kinds == {"write"}

    if isinstance(job["bs"], str):
        for stats in ops.values():
            assert stats["bytes"] == stats["count"] * SIZES[job["bs"]]

    for stats in ops.values():
        if stats["count"]:
            latency = stats["latency_us"]
            assert 0 < latency["min"] <= latency["mean"] <= latency["max"]
