"""A real Linux guest on the live device: ``scripts/guest.sh`` boots the machine's distribution
kernel in qemu-system-x86_64 with an NVMe disk served by ``ssdlab serve`` over NBD, runs fio's
4 KiB random reads on it, makes an ext4 file system, writes files and reads them back through
a cold cache, then does it again with fio alone; every server's result counts fio's reads.

The kernel, busybox, mke2fs and fio are the machine's own (Debian packages), never the
project's: without them the test skips, naming the packages. Without a usable /dev/kvm the guest
runs under TCG: about 50 s for the whole test on a 2-core machine, far below the 10 minutes that
would make it a skip, so it runs either way."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "guest.sh"
# (command, Debian package): what the guest is built from and booted with.
TOOLS = [
    ("qemu-system-x86_64", "qemu-system-x86"),
    ("busybox", "busybox-static"),
    ("mke2fs", "e2fsprogs"),
    ("fio", "fio"),
    ("cpio", "cpio"),
]
SESSION_TIMEOUT = 900  # seconds, each of the two boots: generous for TCG


def missing_for_guest() -> list[str]:
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    missing = [f"{tool} ({pkg})" for tool, pkg in TOOLS if shutil.which(tool, path=path) is None]
    if not any(os.access(k, os.R_OK) for k in Path("/boot").glob("vmlinuz-*")):
        missing.append("a readable /boot/vmlinuz-* (linux-image-cloud-amd64)")
    return missing


MISSING = missing_for_guest() if sys.platform == "linux" else ["Linux"]
needs_guest_tools = pytest.mark.skipif(
    bool(MISSING) or os.uname().machine != "x86_64",
    reason=f"a guest needs an x86_64 host with {', '.join(MISSING) or 'x86_64'}",
)


@needs_guest_tools
def test_a_linux_guest_checks_its_files_and_runs_fio_on_the_live_device(tmp_path: Path) -> None:
    work = tmp_path / "guest"
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    env["SSDLAB"] = f"{sys.executable} -m ssdlab"
    env["PYTHON"] = sys.executable
    started = time.monotonic()
    # --retries 3: a session whose guest NVMe driver timed out a command runs again (a queue
    # stall that reproduces at earlier commits under TCG with Debian 12's QEMU 7.2, with no
    # request reaching the server: docs/live-device.md, "Known issue"); every stalled attempt
    # is printed below and kept in the work directory.
    args = ["--workdir", str(work), "--no-install", "--runtime", "3", "--retries", "3"]
    args += ["--timeout", str(SESSION_TIMEOUT), "small-tlc"]
    proc = subprocess.run(
        ["bash", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=2 * SESSION_TIMEOUT + 300,
        stdin=subprocess.DEVNULL,
    )
    output = proc.stdout + proc.stderr
    print(output, f"\nguest.sh took {time.monotonic() - started:.0f} s")
    assert proc.returncode == 0, output

    summary = json.loads((work / "summary.json").read_text())
    assert set(summary["sessions"]) == {"full", "fio"}
    for name, session in summary["sessions"].items():
        for stall in session["stalled_attempts"]:
            print(f"[{name}] stalled attempt, run again: {json.dumps(stall)}")
    full = (work / "full" / "console.txt").read_text()
    assert "SSDLAB-GUEST: checksums ok (5 files)" in full, full[-4000:]
    assert "SSDLAB-GUEST-FAIL" not in full
    assert summary["sessions"]["full"]["checksums_ok"] is True

    for name in ("full", "fio"):
        text = (work / name / "fio.json").read_text()
        fio = json.loads(text[text.index("{") :])
        jobs = {job["jobname"]: job for job in fio["jobs"]}
        assert set(jobs) == {"qd1", "qd8"}, name
        for job in jobs.values():
            assert job["error"] == 0, (name, job["jobname"])
            assert job["read"]["iops"] > 0 and job["read"]["total_ios"] > 0, (name, job)
            assert job["write"]["total_ios"] == 0, (name, job["jobname"])
        fio_reads = sum(job["read"]["total_ios"] for job in jobs.values())

        result = json.loads((work / name / "result.json").read_text())
        assert result["schema"] == "ssdlab.result/1"
        assert result["sim"]["stop_reason"] == "server stopped"
        assert result["job"]["serve"]["clock"] == "realtime"
        assert result["ops"]["read"]["count"] >= fio_reads, (name, result["ops"]["read"])
        assert result["ops"]["read"]["latency_us"]["mean"] > 0
        if name == "full":  # mke2fs, 64 MiB of files, the journal
            assert result["ops"]["write"]["bytes"] >= 64 << 20
        else:  # fio's reads and the kernel's few partition probes, nothing else
            assert result["ops"]["read"]["count"] - fio_reads < 64, result["ops"]["read"]
            assert result["ops"].get("write", {}).get("count", 0) == 0

        # Nothing went wrong on the way: qemu's NBD client and the guest's NVMe driver quiet.
        qemu_said = (work / name / "qemu-messages.txt").read_text().lower()
        assert "nbd" not in qemu_said and "error" not in qemu_said, qemu_said
        dmesg = (work / name / "dmesg.txt").read_text().lower()
        for trouble in ("i/o error", "timeout", "abort", "reset"):
            assert trouble not in dmesg, dmesg
