"""`ssdlab run --fio FILE --output-format json` against fio 3.33's own JSON: the same job files
run through fio (its null engine: no device, fio's bookkeeping only) and through ssdlab give
the same keys, nesting and value types, recursively; and the figures ssdlab computes from its
per-request records hold against a simple recount of the same records."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ssdlab
from conftest import run_cli
from ssdlab import fio

ROOT = Path(__file__).resolve().parent.parent
FILES = [
    ROOT / "tests" / "data" / "fio" / "random-read.fio",
    ROOT / "tests" / "data" / "fio" / "two-groups.fio",
    ROOT / "tests" / "data" / "fio" / "mixed-bssplit.fio",
    ROOT / "examples" / "fio" / "zoned-reads.fio",
    ROOT / "examples" / "fio" / "paced-writer.fio",
]
ENV = {"SPAN": "64m"}  # paced-writer.fio's ${SPAN}

# ssdlab's own key in each job (the config it ran on); fio has none of it.
SSDLAB_ONLY = {"ssdlab"}


def _shape(value: Any, path: str = "") -> list[str]:
    """Every key path with its value's type, recursively; the contents of the option tables
    (a job file's own words) are left out."""
    if isinstance(value, dict):
        out = [f"{path} dict"]
        if path.endswith(("job options", "global options")):
            return out
        for key, inner in value.items():
            if key in SSDLAB_ONLY:
                continue
            out += _shape(inner, f"{path}/{key}")
        return out
    if isinstance(value, list):
        return [f"{path} list"] + (_shape(value[0], f"{path}[]") if value else [])
    return [f"{path} {type(value).__name__}"]


def _fio_json(job_file: Path, tmp_path: Path) -> dict[str, Any]:
    """fio's JSON of ``job_file`` with the null engine in every job (fio's own command line
    cannot override a file's ioengine, so the copy says it after each section header)."""
    text = job_file.read_text()
    text = re.sub(r"^(\[[^\]]+\])\s*$", r"\1\nioengine=null", text, flags=re.MULTILINE)
    copy = tmp_path / job_file.name
    copy.write_text(text)
    out = subprocess.run(
        ["fio", "--output-format=json", str(copy)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **ENV},
        cwd=tmp_path,
        timeout=120,
    )
    return json.loads(out.stdout[out.stdout.index("{") :])


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed (apt install fio)")
@pytest.mark.parametrize("job_file", FILES, ids=lambda p: p.name)
def test_json_has_fios_keys_and_types(job_file: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        ["python", "-m", "ssdlab", "run", "small-tlc", "--fio", str(job_file)]
        + ["--output-format", "json", "-q"],
        capture_output=True,
        text=True,
        env={**os.environ, **ENV},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    ours = json.loads(proc.stdout)
    theirs = _fio_json(job_file, tmp_path)
    # fio lists each numjobs clone as a job unless group_reporting is set; ssdlab reports the
    # clones together (its records do not say which clone issued a request).
    assert [j["jobname"] for j in ours["jobs"]] == list(
        dict.fromkeys(j["jobname"] for j in theirs["jobs"])
    )
    # fio writes each direction's percentiles only where it has requests; so does ssdlab, and
    # the two runs need not agree on which (fio's null engine ignores rate and thinktime).
    for report in (ours, theirs):
        for job in report["jobs"]:
            for op in ("read", "write", "trim"):
                job[op]["clat_ns"].pop("percentile", None)
    ours_shape, theirs_shape = _shape(ours), _shape(theirs)
    missing = sorted(set(theirs_shape) - set(ours_shape))
    extra = sorted(set(ours_shape) - set(theirs_shape))
    assert not missing and not extra, f"missing: {missing}\nextra: {extra}"


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed (apt install fio)")
def test_percentile_keys_are_fios_defaults(tmp_path: Path) -> None:
    theirs = _fio_json(FILES[0], tmp_path)["jobs"][0]["read"]["clat_ns"]["percentile"]
    assert list(theirs) == [f"{p:.6f}" for p in fio.DEFAULT_PERCENTILES]


def test_json_figures_recount_from_the_records() -> None:
    """The oracle: each figure recounted plainly from the run's own records."""
    parsed = fio.load(FILES[0])
    (job,) = parsed.jobs
    result = ssdlab.run("small-tlc", job.job(), record_requests=True)
    out = fio.job_json(job, result.to_dict(), result.record_bytes)
    rows = np.frombuffer(result.record_bytes or b"", dtype="<u8").reshape(-1, 5)
    lat = sorted(int(r[3]) // 1000 for r in rows)
    n = len(lat)
    read = out["read"]
    assert read["total_ios"] == n == 2000
    assert read["clat_ns"]["N"] == n and read["lat_ns"]["min"] == lat[0]
    assert read["lat_ns"]["max"] == lat[-1]
    assert read["lat_ns"]["mean"] == pytest.approx(sum(lat) / n)
    mean = sum(lat) / n
    var = sum((x - mean) ** 2 for x in lat) / (n - 1)
    assert read["lat_ns"]["stddev"] == pytest.approx(var**0.5)
    # Nearest rank: the smallest value with at least p % of the values at or below it.
    for key, value in read["clat_ns"]["percentile"].items():
        p = float(key)
        at_or_below = sum(1 for x in lat if x <= value)
        assert at_or_below >= p / 100 * n
        assert sum(1 for x in lat if x < value) < p / 100 * n
    # Every request falls in one latency bucket.
    total = sum(out["latency_ns"].values()) + sum(out["latency_us"].values())
    total += sum(out["latency_ms"].values())
    assert total == pytest.approx(100.0, abs=1e-3)
    # Depths at issue: iodepth=16 closed loop, so nearly all at 16 (the bucket "16" holds 16-31)
    # and none above 16.
    levels = out["iodepth_level"]
    assert sum(levels.values()) == pytest.approx(100.0, abs=1e-3)
    assert levels["32"] == 0 and levels[">=64"] == 0 and levels["16"] > 90
    # Results the same inputs make are the same, byte for byte.
    again = ssdlab.run("small-tlc", job.job(), record_requests=True)
    assert json.dumps(fio.to_json(parsed, [again.to_dict()], "x", [again.record_bytes])) == (
        json.dumps(fio.to_json(parsed, [result.to_dict()], "x", [result.record_bytes]))
    )


def test_cli_json_report_runs() -> None:
    proc = run_cli("run", "small-tlc", "--fio", FILES[3], "--output-format", "json", "-q")
    assert proc.returncode == 0, proc.stderr
    (job,) = json.loads(proc.stdout)["jobs"]
    assert job["read"]["total_ios"] == 4000
