"""Saved drive states from the command line and Python (docs/state.md): `ssdlab precondition
--save`, `--state` on run and swap, `ssdlab.run(state=...)`, and the refusals (exit code 2)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import ssdlab
from conftest import assert_user_error, run_cli, without_wall
from nbd_rig import start_server

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
    assert_user_error(proc, "state file", "damaged")
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


QEMU_IMG = shutil.which("qemu-img")
QEMU_IO = shutil.which("qemu-io")
needs_qemu = pytest.mark.skipif(
    QEMU_IMG is None or QEMU_IO is None, reason="qemu-img/qemu-io not installed (qemu-utils)"
)


def _qemu_io(uri: str, *commands: str) -> None:
    args = [QEMU_IO or "qemu-io", "-f", "raw", uri]
    for c in commands:
        args += ["-c", c]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "fail" not in proc.stdout.lower(), proc.stdout + proc.stderr


def _extents(uri: str) -> list[tuple[int, int, bool]]:
    proc = subprocess.run([QEMU_IMG or "", "map", "--output=json", "-f", "raw", uri],
                          capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    return [(e["start"], e["length"], e["data"]) for e in json.loads(proc.stdout)]


@needs_qemu
def test_serve_with_a_state_restarts_where_it_stopped(tmp_path: Path) -> None:
    """The first server discards a range (the FTL unmaps it) and writes another; it writes its
    state back at the stop. The second, started from that state, sees the same map: the
    discarded range is a hole, where a drive preconditioned afresh maps everything."""
    state = tmp_path / "drive.state"
    disk = tmp_path / "disk.img"
    assert (
        run_cli(
            "precondition", "small-tlc", "--save", state, "--json", str(tmp_path / "o")
        ).returncode
        == 0
    )
    before = state.read_bytes()
    mib = 1 << 20
    first_dir, second_dir = tmp_path / "1", tmp_path / "2"
    first_dir.mkdir()
    second_dir.mkdir()
    args = ("--clock", "logical", "--data", f"file:{disk}", "--state", str(state))
    first = start_server(first_dir, *args)
    try:
        _qemu_io(first.uri, "write -P 0x7e 5M 1M", "discard 8M 1M")
        seen = _extents(first.uri)
    finally:
        assert first.stop()[0] == 0
    saved = json.loads(first.result.read_text())["job"]["serve"]["state_saved"]
    assert saved["path"] == str(state) and saved["bytes"] == state.stat().st_size
    assert state.read_bytes() != before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    assert (8 * mib, mib, False) in seen
    second = start_server(second_dir, *args)
    try:
        assert _extents(second.uri) == seen
        _qemu_io(second.uri, "read -P 0x7e 5M 1M", "read -P 0 8M 1M")
    finally:
        assert second.stop()[0] == 0
    # Without the state, the drive is preconditioned again: the hole is gone.
    third_dir = tmp_path / "3"
    third_dir.mkdir()
    third = start_server(third_dir, "--clock", "logical")
    try:
        assert (8 * mib, mib, False) not in _extents(third.uri)
    finally:
        assert third.stop()[0] == 0


def test_sweep_with_a_state_starts_every_point_from_it(tmp_path: Path) -> None:
    state = tmp_path / "s.state"
    assert (
        run_cli("precondition", "small-tlc", "--save", state, "--json", tmp_path / "o").returncode
        == 0
    )
    sweep = tmp_path / "sw.toml"
    sweep.write_text(
        'name = "st"\nconfig = "small-tlc"\n[job]\nrw = "randwrite"\nbs = "4KiB"\n'
        'iodepth = 4\nio_count = 500\n[axes]\n"ftl.gc.policy" = ["greedy", "cost-benefit"]\n'
    )
    proc = run_cli("sweep", sweep, "--out", tmp_path / "out", "--state", state, "-q")
    assert proc.returncode == 0, proc.stderr
    configs = [json.loads(p.read_text()) for p in (tmp_path / "out" / "runs").glob("*/point.json")]
    assert len(configs) == 2 and all(str(state) in json.dumps(c) for c in configs)
    missing = run_cli("sweep", sweep, "--out", tmp_path / "o2", "--state", tmp_path / "none")
    assert_user_error(missing, "--state", "no such file")


SKEWED = ["--set", 'precondition.fill="steady-state"', "--set", "precondition.hot_fraction=0.2",
          "--set", "precondition.hot_write_fraction=0.8"]  # fmt: skip


def test_a_skewed_steady_state_saves_and_runs_as_preconditioned(tmp_path: Path) -> None:
    state = tmp_path / "skewed.state"
    proc = run_cli("precondition", "small-tlc", *SKEWED, "--save", state, "--json", "-")
    assert proc.returncode == 0, proc.stderr
    saved = json.loads(proc.stdout)
    assert saved["steady_state"]["converged"] is True
    # The skew's slowest part (the cold 80 %, a quarter of the writes per unit) turns over
    # four times slower: the model plane overwrote at least 4 × 2 capacities.
    assert saved["steady_state"]["overwrite"] >= 8
    args = ("run", "small-tlc", *SKEWED, *SMALL_RUN, "--seed", "1", "--json", "-", "-q")
    fresh = run_cli(*args)
    loaded = run_cli(*args, "--state", state)
    assert fresh.returncode == 0 and loaded.returncode == 0, fresh.stderr + loaded.stderr
    assert _figures(fresh.stdout) == _figures(loaded.stdout)


@pytest.mark.parametrize(
    ("sets", "needles"),
    [
        (["precondition.hot_fraction=1.5", "precondition.hot_write_fraction=0.8"],
         ["precondition.hot_fraction", "1.5", "between 0 and 1"]),
        (["precondition.hot_fraction=0.2", "precondition.hot_write_fraction=nan"],
         ["precondition.hot_write_fraction", "NaN", "between 0 and 1"]),
        (["precondition.hot_fraction=0.2"], ["precondition.hot_write_fraction", "not set"]),
        (['precondition.fill="none"', "precondition.random_overwrite=0",
          "precondition.hot_fraction=0.2", "precondition.hot_write_fraction=0.8"],
         ["precondition.hot_fraction", "0.2", "nothing overwrites at random"]),
    ],
)  # fmt: skip
def test_a_bad_preconditioning_skew_is_one_line_exit_2(
    tmp_path: Path, sets: list[str], needles: list[str]
) -> None:
    args = [a for s in sets for a in ("--set", s)]
    assert_user_error(
        run_cli("precondition", "small-tlc", *args, "--save", tmp_path / "s.state"), *needles
    )
    assert not (tmp_path / "s.state").exists()
