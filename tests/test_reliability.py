"""Endurance and errors from the command line and the results table: `[reliability]` figures
in the run's table and JSON, and as reliability.* columns of a flattened result."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from conftest import assert_user_error, run_cli
from ssdlab.cli.table import reliability_table
from ssdlab.experiments.results import flatten_result

WEAK_ECC = ("--set", "reliability.ecc_correctable_bits=6", "--set", "reliability.rber_fresh=1e-3")


def test_a_run_with_weak_ecc_reports_retries_in_its_table_and_json(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = run_cli("run", "small-tlc", "--rw", "randread", "--io-count", "500", *WEAK_ECC,
                   "--json", out)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "endurance and errors" in proc.stdout
    assert "read retries" in proc.stdout
    result = json.loads(out.read_text())
    rel = result["reliability"]
    # 6 bits per 1 KiB at rate 1e-3 (8.2 errors a codeword on average): nearly every read of
    # four codewords fails its first decode.
    assert 480 <= rel["reads_retried"] <= 500
    assert rel["read_retry_steps"] >= 500
    assert rel["uncorrectable_reads"] == 0
    flat = flatten_result(result)
    assert flat["reliability.reads_retried"] == rel["reads_retried"]
    assert flat["reliability.read_only"] is False


def test_without_the_section_there_is_no_reliability_block(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = run_cli("run", "small-tlc", "--rw", "randread", "--io-count", "100", "--json", out)
    assert proc.returncode == 0, proc.stderr
    assert "endurance and errors" not in proc.stdout
    assert "reliability" not in json.loads(out.read_text())


def test_a_bad_reliability_value_names_the_field() -> None:
    assert_user_error(
        run_cli(
            "run",
            "small-tlc",
            "--rw",
            "randread",
            "--io-count",
            "10",
            "--set",
            "reliability.read_retry_rber_factor=2",
        ),  # fmt: skip
        "reliability.read_retry_rber_factor",
        "got 2",
    )


def test_a_block_mapped_drive_reports_wear_and_retries(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = run_cli("run", "small-tlc", "--set", 'ftl.kind="bast"', "--set", "ftl.log_blocks=2",
                   "--set", 'ftl.map_unit="16KiB"', "--set", "ftl.over_provisioning=0.2",
                   "--rw", "randrw", "--bs", "16KiB", "--io-count", "2000", *WEAK_ECC,
                   "--json", out)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "endurance and errors" in proc.stdout
    rel = json.loads(out.read_text())["reliability"]
    assert rel["reads_retried"] > 0
    assert rel["percentage_used"] > 0
    assert "offline_zones" not in rel


def test_a_zoned_drive_reports_worn_zones_offline(tmp_path: Path) -> None:
    job = tmp_path / "zbd.fio"
    # zns-tlc: 128 zones of 8 MiB; 1.25 drives of sequential writes reset 32 zones. fio's
    # number_ios stops at the end of size (the drive) unless the job is time_based.
    job.write_text(
        "[w]\nrw=write\nbs=128k\niodepth=8\nzonemode=zbd\ntime_based=1\nruntime=60s\n"
        "number_ios=10240\n"
    )
    out = tmp_path / "r.json"
    proc = run_cli("run", "zns-tlc", "--fio", job, "--set", "reliability.pe_limit=1",
                   "--json", out)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    # A fio job file's run writes a list of results, one for each group.
    rel = json.loads(out.read_text())[0]["reliability"]
    assert rel["offline_zones"] == 32
    assert rel["available_spare_percent"] == 75.0
    # The results table speaks of zones, not of a read-only level in blocks.
    console = Console(width=200, record=True)
    console.print(reliability_table(rel))
    text = console.export_text()
    assert "32 zones offline" in text
    assert "read-only below" not in text
