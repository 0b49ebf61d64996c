"""Power from the command line and the results table: `[power]` figures in the run's table and
JSON, as power.* columns of a flattened result, and a bad figure refused naming its field."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import assert_user_error, run_cli
from ssdlab.experiments.results import flatten_result


def test_a_run_with_power_reports_it_in_its_table_and_json(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = run_cli("run", "small-tlc", "--rw", "randwrite", "--io-count", "2000",
                   "--set", "power.controller_idle_mw=50", "--json", out)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Power" in proc.stdout and "NAND arrays" in proc.stdout
    power = json.loads(out.read_text())["power"]
    # The other figures take [power]'s defaults: programs draw array current, the controller
    # at least its idle power.
    assert power["nand_array_mw"] > 0 and power["controller_mw"] >= 50
    flat = flatten_result(json.loads(out.read_text()))
    assert flat["power.average_mw"] == power["average_mw"]


def test_without_the_section_there_is_no_power_block(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = run_cli("run", "small-tlc", "--rw", "randread", "--io-count", "100", "--json", out)
    assert proc.returncode == 0, proc.stderr
    assert "NAND arrays" not in proc.stdout
    assert "power" not in json.loads(out.read_text())


def test_a_bad_power_value_names_the_field() -> None:
    assert_user_error(
        run_cli("run", "small-tlc", "--io-count", "10", "--set", "power.nand_io_ma=-3"),
        "power.nand_io_ma",
        "-3",
    )
