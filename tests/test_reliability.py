"""Endurance and errors from the command line and the results table: `[reliability]` figures
in the run's table and JSON, and as reliability.* columns of a flattened result."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import assert_user_error, run_cli
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
