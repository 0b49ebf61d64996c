"""Shared helpers: a small preset, a tiny job, and a way to run the `ssdlab` command."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import ssdlab

SMALL_PRESET = "small-tlc"
# A run of this takes a fraction of a second on the small preset.
TINY_JOB: dict[str, Any] = {
    "rw": "randrw",
    "rwmixread": 70,
    "bs": "4KiB",
    "iodepth": 8,
    "io_count": 2_000,
}


@pytest.fixture(scope="session")
def preset_name() -> str:
    names = [p["name"] for p in ssdlab.presets()]
    assert SMALL_PRESET in names, f"tests expect preset {SMALL_PRESET!r}; have {names}"
    return SMALL_PRESET


@pytest.fixture(scope="session")
def small_config(preset_name: str) -> ssdlab.Config:
    return ssdlab.Config.load(preset_name)


@pytest.fixture(scope="session")
def tiny_result(small_config: ssdlab.Config) -> ssdlab.Result:
    return ssdlab.run(small_config, TINY_JOB, seed=7, record_requests=True)


def without_wall(json_text: str) -> dict[str, Any]:
    """A result dict minus the only part allowed to change between identical runs."""
    data = json.loads(json_text)
    data.pop("wall", None)
    return data


def run_cli(
    *args: str | os.PathLike[str], cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run `python -m ssdlab ARGS` as a user would, capturing its output."""
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    return subprocess.run(
        [sys.executable, "-m", "ssdlab", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def assert_user_error(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Exit code 2, one line `error: ...` on stderr naming each needle, and no traceback."""
    context = f"stdout={proc.stdout!r} stderr={proc.stderr!r}"
    assert proc.returncode == 2, context
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, context
    # A run that took more than a few seconds before its error printed progress lines first
    # (off a terminal, one every few seconds: cli/progress.py); the error is still one line.
    progress = ("simulating: ", "preconditioning the drive: ")
    lines = [line for line in proc.stderr.strip().splitlines() if not line.startswith(progress)]
    assert len(lines) == 1, context
    assert lines[0].startswith("error: "), context
    for needle in needles:
        assert needle.lower() in lines[0].lower(), context
    return lines[0]


def wait_for_stderr(proc: subprocess.Popen[str], prefix: str, timeout: float = 300) -> list[str]:
    """Read `proc`'s stderr until a line starting with `prefix` (a progress line: a command off
    a terminal prints one every few seconds), so that a test signals a command once it is at
    work rather than after a fixed sleep that a loaded machine outlasts. Returns the lines read;
    fails if the process ends or the time passes first."""
    import selectors
    import time

    assert proc.stderr is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stderr, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            line = proc.stderr.readline()
            if line == "":
                raise AssertionError(f"ended before a {prefix!r} line: {''.join(lines)}")
            lines.append(line)
            if line.startswith(prefix):
                return lines
    raise AssertionError(f"no {prefix!r} line in {timeout} s: {''.join(lines)}")


def run_fio_null(
    job_file: Path, tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> str:
    """Real fio's stdout for ``job_file`` with the null engine in every job (fio's own command
    line cannot override a file's ioengine, so the copy says it after each section header),
    run in ``tmp_path`` (where fio writes any log files)."""
    text = job_file.read_text()
    text = re.sub(r"^(\[[^\]]+\])\s*$", r"\1\nioengine=null", text, flags=re.MULTILINE)
    copy = tmp_path / job_file.name
    copy.write_text(text)
    out = subprocess.run(
        ["fio", *args, str(copy)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **(env or {})},
        cwd=tmp_path,
        timeout=120,
    )
    return out.stdout
