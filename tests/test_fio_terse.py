"""`ssdlab run --fio FILE --output-format terse` against fio 3.33's own terse lines: the same
job files run through fio's null engine and through ssdlab give lines with the same number of
fields, each of the same kind (whole number, six-decimal number, percentage, percentile, text);
the fields say what the job's JSON figures say; several formats at once come in fio's order."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import assert_user_error, run_cli, run_fio_null
from test_fio_json import ENV, FILES

needs_fio = pytest.mark.skipif(
    shutil.which("fio") is None, reason="fio is not installed (apt install fio)"
)

_KINDS = (
    ("int", re.compile(r"^\d+$")),
    ("float6", re.compile(r"^\d+\.\d{6}$")),
    ("percentile", re.compile(r"^(\d+\.\d{6}%=\d+|0%=0)$")),
    ("pct1", re.compile(r"^\d+\.\d%$")),
    ("pct2", re.compile(r"^\d+\.\d\d%$")),
    ("pct6", re.compile(r"^\d+\.\d{6}%$")),
)


def _kind(field: str) -> str:
    return next((name for name, pattern in _KINDS if pattern.match(field)), "text")


def _ssdlab(job_file: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["python", "-m", "ssdlab", "run", "small-tlc", "--fio", str(job_file), "-q", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **ENV},
        timeout=300,
    )


def _lines(stdout: str) -> dict[str, list[str]]:
    """Each job's first terse line by job name (fio lists numjobs clones one by one)."""
    out: dict[str, list[str]] = {}
    for line in stdout.splitlines():
        fields = line.split(";")
        if len(fields) > 100 and fields[0] in ("3", "4", "5"):
            out.setdefault(fields[2], fields)
    return out


@needs_fio
@pytest.mark.parametrize("version", [3, 4, 5])
@pytest.mark.parametrize("job_file", FILES, ids=lambda p: p.name)
def test_terse_has_fios_fields(job_file: Path, version: int, tmp_path: Path) -> None:
    proc = _ssdlab(job_file, "--output-format", "terse", "--terse-version", str(version))
    assert proc.returncode == 0, proc.stderr
    ours = _lines(proc.stdout)
    theirs = _lines(
        run_fio_null(
            job_file, tmp_path, "--output-format=terse", f"--terse-version={version}", env=ENV
        )
    )
    assert list(ours) == list(theirs)
    assert len(proc.stdout.splitlines()) == len(ours)
    for name, fields in ours.items():
        assert len(fields) == len(theirs[name]), name
        kinds = [_kind(f) for f in fields]
        assert kinds == [_kind(f) for f in theirs[name]], name
        assert fields[0] == str(version) and fields[1].startswith("ssdlab-")


def test_terse_fields_are_the_json_figures(tmp_path: Path) -> None:
    """The oracle: the terse line read back field by field against the JSON of the same run,
    with the layout fio documents (HOWTO, "Terse output")."""
    job_file = FILES[2]  # mixed-bssplit.fio: reads and writes
    proc = _ssdlab(job_file, "--output-format", "terse,json")
    assert proc.returncode == 0, proc.stderr
    terse, _, rest = proc.stdout.partition("{")
    report = json.loads("{" + rest)
    lines = terse.splitlines()
    assert len(lines) == len(report["jobs"])
    for line, job in zip(lines, report["jobs"], strict=True):
        f = line.split(";")
        assert len(f) == 121
        assert f[2] == job["jobname"] and int(f[3]) == job["groupid"]
        for base, op in ((5, "read"), (46, "write")):
            d = job[op]
            assert int(f[base]) == d["io_bytes"] // 1024
            if d["runtime"]:
                assert int(f[base + 1]) == 1000 * d["io_bytes"] // d["runtime"] // 1024
                assert int(f[base + 2]) == 1000 * d["total_ios"] // d["runtime"]
            assert int(f[base + 3]) == d["runtime"]
            clat = d["clat_ns"]
            if clat["N"]:
                assert int(f[base + 8]) == clat["min"] // 1000
                assert int(f[base + 9]) == clat["max"] // 1000
                assert float(f[base + 10]) == pytest.approx(clat["mean"] / 1000, abs=1e-6)
                assert float(f[base + 11]) == pytest.approx(clat["stddev"] / 1000, abs=1e-6)
                slots = f[base + 12 : base + 32]
                points = list(clat["percentile"].items())
                for slot, (key, value) in zip(slots, points, strict=False):
                    assert slot == f"{float(key):f}%={value // 1000}"
                assert all(s == "0%=0" for s in slots[len(points) :])
            assert f[base + 32 : base + 36] == f[base + 8 : base + 12]  # lat = clat here
        # CPU, then the depths: the JSON's iodepth_level to one decimal.
        assert f[87:92] == ["0.000000%", "0.000000%", "0", "0", "0"]
        depths = [float(v.rstrip("%")) for v in f[92:99]]
        assert depths == [float(f"{v:.1f}") for v in job["iodepth_level"].values()]
        latency = [float(v.rstrip("%")) for v in f[99:121]]
        assert sum(latency) == pytest.approx(100.0, abs=0.2)


@needs_fio
def test_formats_come_in_fios_order(tmp_path: Path) -> None:
    """fio writes terse, then JSON, then normal, whatever the order asked."""
    job_file = FILES[0]
    proc = _ssdlab(job_file, "--output-format", "normal,json,terse")
    assert proc.returncode == 0, proc.stderr
    theirs = run_fio_null(job_file, tmp_path, "--output-format=normal,json,terse", env=ENV)

    def order(text: str) -> list[str]:
        marks = {"terse": r"^3;", "json": r"^\{", "normal": r"^Run status group"}
        where = {k: re.search(v, text, re.MULTILINE) for k, v in marks.items()}
        assert all(where.values()), text[:400]
        return sorted(where, key=lambda k: where[k].start())  # type: ignore[union-attr]

    assert order(proc.stdout) == order(theirs) == ["terse", "json", "normal"]


def test_bad_format_and_version_are_named() -> None:
    proc = run_cli("run", "small-tlc", "--fio", FILES[0], "--output-format", "json,xml", "-q")
    assert_user_error(proc, "'xml' is not a format", "normal, terse, json, json+")
    proc = run_cli("run", "small-tlc", "--fio", FILES[0], "--output-format", "terse")
    assert proc.returncode == 0
    proc = run_cli(
        "run", "small-tlc", "--fio", FILES[0], "--output-format", "terse", "--terse-version", "2"
    )
    assert_user_error(proc, "--terse-version 2", "3, 4, 5")
