"""The PCM-only device through the `ssdlab` command and the results table (docs/pcm.md)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli
from ssdlab.experiments.results import flatten_result

READS = ["--rw", "randread", "--bs", "4KiB", "--iodepth", "1", "--io-count", "300",
         "--size", "64MiB"]  # fmt: skip


def run_json(tmp_path: Path, preset: str, *args: str) -> dict:
    out = tmp_path / f"{preset}.json"
    proc = run_cli("run", preset, *READS, *args, "--json", out, "-q")
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


def test_the_seed002_pcm_preset_runs_from_the_command_line(tmp_path: Path) -> None:
    result = run_json(tmp_path, "seed002-pcm")
    pcm = result["pcm"]
    # 4 KiB = 8 lines of 512 B, each one Table 7 read (45.9 us), four per channel in parallel.
    assert pcm["reads_by_size"] == {"512": 2400}
    assert pcm["writes"] == 0
    mean = result["ops"]["read"]["latency_us"]["mean"]
    assert 4 * 45.9 <= mean < 195.0
    # The PCM figures are columns of a results table.
    flat = flatten_result(result)
    assert flat["pcm.reads"] == 2400
    assert flat["pcm.wear.max_line_writes"] == 0
    assert "pcm.energy.write_uj" in flat


def test_an_optane_class_drive_against_a_nand_drive(tmp_path: Path) -> None:
    scm = run_json(tmp_path, "pcm-optane-class")
    nand = run_json(tmp_path, "small-tlc")
    assert "pcm" not in nand
    scm_us = scm["ops"]["read"]["latency_us"]["mean"]
    nand_us = nand["ops"]["read"]["latency_us"]["mean"]
    assert scm_us * 5 < nand_us, (scm_us, nand_us)
    # The table printed for a PCM run names the PCM figures.
    proc = run_cli("run", "pcm-optane-class", *READS)
    assert proc.returncode == 0, proc.stderr
    assert "PCM" in proc.stdout


def test_a_bad_pcm_field_is_a_one_line_error() -> None:
    proc = run_cli("run", "seed002-pcm", *READS, "--set", "pcm.line=384B")
    assert proc.returncode != 0
    message = proc.stderr.strip()
    assert "pcm.line" in message and "384" in message
    assert "Traceback" not in proc.stderr
