"""`ssdlab run --fio FILE --output-format json` against fio 3.33's own JSON: the same job files
run through fio (its null engine: no device, fio's bookkeeping only) and through ssdlab give
the same keys, nesting and value types, recursively; and the figures ssdlab computes from its
per-request records hold against a simple recount of the same records."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ssdlab
from conftest import run_cli, run_fio_null
from ssdlab import fio

ROOT = Path(__file__).resolve().parent.parent
FILES = [
    ROOT / "tests" / "data" / "fio" / "random-read.fio",
    ROOT / "tests" / "data" / "fio" / "two-groups.fio",
    ROOT / "tests" / "data" / "fio" / "mixed-bssplit.fio",
    ROOT / "examples" / "fio" / "zoned-reads.fio",
    ROOT / "examples" / "fio" / "paced-writer.fio",
    ROOT / "examples" / "fio" / "latency-profile.fio",
]
ENV = {"SPAN": "64m"}  # paced-writer.fio's ${SPAN}

# ssdlab's own key in each job (the config it ran on); fio has none of it.
SSDLAB_ONLY = {"ssdlab"}


def _shape(value: Any, path: str = "") -> list[str]:
    """Every key path with its value's type, recursively; the contents of the option tables
    (a job file's own words) and of json+'s bins (latencies) are left out."""
    if isinstance(value, dict):
        out = [f"{path} dict"]
        if path.endswith(("job options", "global options", "bins")):
            return out
        for key, inner in value.items():
            if key in SSDLAB_ONLY:
                continue
            out += _shape(inner, f"{path}/{key}")
        return out
    if isinstance(value, list):
        return [f"{path} list"] + (_shape(value[0], f"{path}[]") if value else [])
    return [f"{path} {type(value).__name__}"]


def _fio_json(job_file: Path, tmp_path: Path, form: str = "json") -> dict[str, Any]:
    """fio's JSON of ``job_file`` with the null engine in every job."""
    out = run_fio_null(job_file, tmp_path, f"--output-format={form}", env=ENV)
    return json.loads(out[out.index("{") :])


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
    rows = np.frombuffer(result.record_bytes or b"", dtype="<u8").reshape(-1, 6)
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
    # fio's method: the first histogram bucket by which p % of the requests are counted. Each
    # bucket recounted here by a plain loop over the records.
    buckets = [int(fio.plat_index(np.array([x]))[0]) for x in lat]
    for key, value in read["clat_ns"]["percentile"].items():
        share = Fraction(float(key)) * n / 100  # fio's long double, taken exactly
        index = next(i for i in sorted(set(buckets)) if fio.plat_value(i) == value)
        assert sum(1 for b in buckets if b <= index) >= share
        assert sum(1 for b in buckets if b < index) < share
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


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed (apt install fio)")
def test_histogram_and_percentiles_are_fios(tmp_path: Path) -> None:
    """The oracle for fio's latency histogram: fio's own json+ bins are buckets' values under
    ssdlab's mapping, and ssdlab's percentile method on fio's bins gives fio's percentiles."""
    clat = _fio_json(FILES[0], tmp_path, "json+")["jobs"][0]["read"]["clat_ns"]
    bins = sorted((int(k), v) for k, v in clat["bins"].items())
    for value, _ in bins:
        assert fio.plat_value(int(fio.plat_index(np.array([value]))[0])) == value
    hist = [(int(fio.plat_index(np.array([v]))[0]), c) for v, c in bins]
    assert fio._percentiles(hist, fio.DEFAULT_PERCENTILES) == clat["percentile"]
    # The mapping itself at the edges: exact below 128 ns, then 64 buckets per power of two,
    # and everything past fio's last bucket (about 17 s) in it.
    edges = np.array([0, 1, 127, 128, 129, 255, 256, 10**6, 2**40])
    assert [fio.plat_value(int(i)) for i in fio.plat_index(edges)] == [
        0, 1, 127, 129, 129, 255, 258, 1_003_520, 17_112_760_320
    ]  # fmt: skip


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed (apt install fio)")
def test_json_plus_has_fios_shape_and_fios_tools_read_it(tmp_path: Path) -> None:
    job_file = FILES[3]
    proc = run_cli("run", "small-tlc", "--fio", job_file, "--output-format", "json+", "-q")
    assert proc.returncode == 0, proc.stderr
    ours = json.loads(proc.stdout)
    theirs = _fio_json(job_file, tmp_path, "json+")
    assert sum(ours["jobs"][0]["read"]["clat_ns"]["bins"].values()) == 4000
    assert set(_shape(ours)) == set(_shape(theirs))
    tool = shutil.which("fio_jsonplus_clat2csv")
    if tool is None:
        pytest.skip("fio_jsonplus_clat2csv (fio's tools) is not installed")
    (tmp_path / "ours.json").write_text(proc.stdout)
    # The tool is a python3 script needing `six`: the system's python3 has it where a
    # distribution ships the tool (Debian's python3-six), the python3 first on PATH may not.
    for python in ("/usr/bin/python3", "python3"):
        done = subprocess.run(
            [python, tool, str(tmp_path / "ours.json"), str(tmp_path / "clat")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if done.returncode == 0 or "ModuleNotFoundError" not in done.stderr:
            break
    if "ModuleNotFoundError" in done.stderr:
        pytest.skip(f"fio_jsonplus_clat2csv cannot run here: {done.stderr.strip()[-80:]}")
    assert done.returncode == 0, done.stderr
    lines = (tmp_path / "clat_job0").read_text().splitlines()
    assert "read_clat_ns_count" in lines[0]
    # One line per histogram bucket, the counts adding up to the job's 4,000 reads.
    bins = ours["jobs"][0]["read"]["clat_ns"]["bins"]
    assert len(lines) == 1 + len(bins)
    assert sum(int(line.split(",")[4]) for line in lines[1:]) == 4000
