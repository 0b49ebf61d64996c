"""The Ray executor, on Ray instances these tests start themselves (CI installs ssdlab[ray]).

Two ways in: ``--executor ray`` alone starts a local Ray for the sweep; ``--address`` connects to
a running cluster, here a one-node cluster started with ``ray start --head --block`` and stopped
by ending that process. Both must give the local pool's results.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from conftest import run_cli

ray = pytest.importorskip("ray", reason="pip install 'ssdlab[ray]' (scripts/test.sh does)")

REPO = Path(__file__).resolve().parent.parent
QUICK = REPO / "examples" / "sweeps" / "quick.toml"
# What depends on the wall clock or on which process ran the point.
UNSTABLE = ("worker", "worker_seconds")


def _comparable(out: Path) -> pl.DataFrame:
    table = pl.read_parquet(out / "results.parquet")
    return table.drop([c for c in table.columns if c.startswith("wall.") or c in UNSTABLE])


def _ray_env() -> dict[str, str]:
    env = dict(os.environ)
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    # Ray 2.59+ uses token authentication for clusters it starts; a driver connecting by address
    # needs the mode set too (the token itself is read from Ray's default token file).
    env["RAY_AUTH_MODE"] = "token"
    # Single-machine mode: every Ray process listens on and talks to 127.0.0.1 only (without it
    # Ray uses the machine's routable address even for a one-node cluster).
    env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    return env


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def local_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("local") / "out"
    proc = run_cli("sweep", QUICK, "--out", out)
    assert proc.returncode == 0, proc.stderr
    return out


def test_ray_started_for_the_sweep(local_results: Path, tmp_path: Path) -> None:
    out = tmp_path / "ray"
    proc = subprocess.run(
        [sys.executable, "-m", "ssdlab", "sweep", str(QUICK), "--out", str(out), "--executor",
         "ray", "--workers", "2"],
        capture_output=True, text=True, timeout=300, env=_ray_env(), stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "ran 12 now (12 ok, 0 failed)" in proc.stdout and "a local Ray" in proc.stdout
    assert _comparable(out).equals(_comparable(local_results))


def test_ray_cluster_by_address(local_results: Path, tmp_path: Path) -> None:
    port = _free_port()
    env = _ray_env()
    head = subprocess.Popen(
        [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", f"--port={port}",
         "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats", "--block"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
        text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out = tmp_path / "cluster"
        deadline = time.monotonic() + 120
        proc = None
        while time.monotonic() < deadline:
            assert head.poll() is None, head.communicate()[1]
            proc = subprocess.run(
                [sys.executable, "-m", "ssdlab", "sweep", str(QUICK), "--out", str(out),
                 "--executor", "ray", "--address", f"127.0.0.1:{port}"],
                capture_output=True, text=True, timeout=300, env=env, stdin=subprocess.DEVNULL,
            )  # fmt: skip
            if proc.returncode == 0 or "cannot reach a Ray cluster" not in proc.stderr:
                break
            time.sleep(1)  # the head is still starting
        assert proc is not None and proc.returncode == 0, proc.stderr if proc else "no attempt"
        assert f"Ray at 127.0.0.1:{port}" in proc.stdout
        assert _comparable(out).equals(_comparable(local_results))
        workers = pl.read_parquet(out / "results.parquet")["worker"].unique().to_list()
        assert all(name.startswith(socket.gethostname()) for name in workers)
    finally:
        # `ray start --block` stops the Ray processes it started when it is terminated.
        if head.poll() is None:
            head.send_signal(signal.SIGTERM)
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)  # its own session: only what this test started
            head.wait(timeout=30)


def test_unreachable_cluster_is_a_clean_error(tmp_path: Path) -> None:
    port = _free_port()  # nothing listens there
    env = _ray_env()
    proc = subprocess.run(
        [sys.executable, "-m", "ssdlab", "sweep", str(QUICK), "--out", str(tmp_path / "o"),
         "--executor", "ray", "--address", f"127.0.0.1:{port}"],
        capture_output=True, text=True, timeout=300, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("error: cannot reach a Ray cluster")
