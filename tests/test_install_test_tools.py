"""scripts/install-test-tools.sh on a machine whose qemu-utils is newer than Debian's (issue 45,
point 15): asking for Debian's qemu-system-x86 alone made apt-get remove that qemu-utils, and
qemu-img was gone until a second pass. The script runs here against stand-ins for apt-get,
apt-cache and dpkg-query that log what they are asked, so no package is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "install-test-tools.sh"
DEBIAN = "1:7.2+dfsg-7+deb12u18"
BACKPORT = "1:9.2.2+ds-1~bpo12+1"


def _stub(directory: Path, name: str, body: str) -> None:
    path = directory / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def _run(tmp_path: Path, installed: dict[str, str], archive: dict[str, list[str]]) -> list[str]:
    """Run the script; return each apt-get command line it ran (after `update`)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("awk", "mktemp", "cat", "rm", "env"):
        real = shutil.which(tool)
        assert real is not None, tool
        (bin_dir / tool).symlink_to(real)
    log = tmp_path / "apt.log"
    _stub(bin_dir, "apt-get", f'echo "$*" >> {log}\n')
    _stub(bin_dir, "sudo", '[ "$1" = -n ] && shift; exec "$@"\n')
    status = "".join(
        f'[ "$3" = {name} ] && echo "install ok installed {version}" && exit 0\n'
        for name, version in installed.items()
    )
    _stub(bin_dir, "dpkg-query", status + "exit 1\n")
    madison = "".join(
        f'[ "$2" = {name} ] && printf "%s\\n" '
        + " ".join(
            f"'{name} | {v} | http://deb.debian.org/debian x/main amd64 Packages'" for v in vs
        )
        + " && exit 0\n"
        for name, vs in archive.items()
    )
    policy = "".join(
        f'[ "$2" = {name} ] && echo "  Candidate: {vs[0]}" && exit 0\n'
        for name, vs in archive.items()
    )
    _stub(bin_dir, "apt-cache", f'[ "$1" = madison ] && {{\n{madison}exit 0\n}}\n{policy}exit 0\n')
    if "qemu-utils" in installed:
        # What the installed qemu-utils puts on the PATH: the script sees it as present.
        _stub(bin_dir, "qemu-img", "exit 0\n")
        _stub(bin_dir, "qemu-io", "exit 0\n")
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "CI": ""}
    bash = shutil.which("bash")
    assert bash is not None
    proc = subprocess.run([bash, str(SCRIPT)], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = log.read_text().splitlines()
    assert lines[0].endswith("update"), lines
    return lines[1:]


@pytest.mark.skipif(os.name != "posix", reason="a bash script")
def test_qemu_system_comes_at_the_installed_qemu_utils_version_when_the_archive_has_it(
    tmp_path: Path,
) -> None:
    archive = {"qemu-system-x86": [DEBIAN, BACKPORT], "qemu-utils": [DEBIAN, BACKPORT]}
    installs = _run(tmp_path, {"qemu-utils": BACKPORT}, archive)
    assert len(installs) == 1, installs  # one pass, not two
    words = installs[0].split()
    assert f"qemu-system-x86={BACKPORT}" in words, words
    assert "qemu-system-x86" not in words and "--allow-downgrades" not in words, words
    assert not any(w.startswith("qemu-utils") for w in words), words


@pytest.mark.skipif(os.name != "posix", reason="a bash script")
def test_otherwise_the_installed_qemu_utils_moves_with_it_in_the_same_transaction(
    tmp_path: Path,
) -> None:
    archive = {"qemu-system-x86": [DEBIAN], "qemu-utils": [DEBIAN]}
    installs = _run(tmp_path, {"qemu-utils": BACKPORT}, archive)
    assert len(installs) == 1, installs
    words = installs[0].split()
    assert "qemu-system-x86" in words and f"qemu-utils={DEBIAN}" in words, words
    assert "--allow-downgrades" in words, words


@pytest.mark.skipif(os.name != "posix", reason="a bash script")
def test_a_machine_without_qemu_gets_plain_package_names(tmp_path: Path) -> None:
    archive = {"qemu-system-x86": [DEBIAN], "qemu-utils": [DEBIAN]}
    installs = _run(tmp_path, {}, archive)
    assert len(installs) == 1, installs
    words = installs[0].split()
    assert "qemu-system-x86" in words and "qemu-utils" in words, words
    assert not any("=" in w for w in words if w.startswith("qemu")), words
