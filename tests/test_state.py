"""Saved drive states from the command line and Python (docs/state.md): `ssdlab precondition
--save`, `--state` on run and swap, `ssdlab.run(state=...)`, and the refusals (exit code 2)."""

from __future__ import annotations

import json
from pathlib import Path

import ssdlab
from conftest import assert_user_error, run_cli, without_wall

SMALL_RUN = ["--rw", "randrw", "--rwmixread", "50", "--bs", "4KiB", "--iodepth", "8",
             "--io-count", "3000"]  # fmt: skip


def _figures(json_text: str) -> dict:
    data = without_wall(json_text)
    data.pop("config_hash")
    return data


def test_precondition_save_then_run_from_the_state_gives_the_same_result(tmp_path: Path) -> None:
    state = tmp_path / "small.state"
    proc = run_cli("precondition", "small-tlc", "--save", state, "--seed", "4", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    saved = json.loads(proc.stdout)
    assert saved["bytes"] == state.stat().st_size > 0
    # Only the file the user named is written: no temporary file is left beside it.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.state"]
    fresh = run_cli("run", "small-tlc", *SMALL_RUN, "--seed", "4", "--json", "-", "-q")
    loaded = run_cli(
        "run", "small-tlc", *SMALL_RUN, "--seed", "4", "--state", state, "--json", "-", "-q"
    )
    assert fresh.returncode == 0 and loaded.returncode == 0, fresh.stderr + loaded.stderr
    assert _figures(fresh.stdout) == _figures(loaded.stdout)


def test_python_precondition_and_run_with_state(tmp_path: Path) -> None:
    state = tmp_path / "s.state"
    cfg = ssdlab.Config.load("small-tlc")
    info = ssdlab.precondition(cfg, state, seed=2)
    assert info["bytes"] == state.stat().st_size
    job = ssdlab.Job(rw="randwrite", bs="4KiB", iodepth=4, io_count=2000)
    fresh = ssdlab.run(cfg, job, seed=2)
    loaded = ssdlab.run(cfg, job, seed=2, state=state)
    assert _figures(fresh.to_json()) == _figures(loaded.to_json())


def test_a_damaged_state_is_one_line_error_exit_2(tmp_path: Path) -> None:
    state = tmp_path / "s.state"
    assert (
        run_cli(
            "precondition", "small-tlc", "--save", state, "--json", str(tmp_path / "o")
        ).returncode
        == 0
    )
    data = bytearray(state.read_bytes())
    data[len(data) // 2] ^= 0x10
    state.write_bytes(bytes(data))
    proc = run_cli("run", "small-tlc", *SMALL_RUN, "--state", state)
    assert_user_error(proc, "state file", "checksum")
    state.write_bytes(bytes(data[:100]))
    assert_user_error(run_cli("run", "small-tlc", *SMALL_RUN, "--state", state), "truncated")


def test_a_state_for_another_drive_or_back_end_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "s.state"
    assert (
        run_cli(
            "precondition", "small-tlc", "--save", state, "--json", str(tmp_path / "o")
        ).returncode
        == 0
    )
    proc = run_cli("run", "small-tlc", *SMALL_RUN, "--state", state, "--set", "nand.channels=2")
    assert_user_error(proc, "made for another drive", "nand.channels: the state's 4")
    proc = run_cli("precondition", "seed003-mlc-bast", "--save", tmp_path / "b.state")
    assert_user_error(proc, "not supported for the block-mapped back end")
    assert not (tmp_path / "b.state").exists()
