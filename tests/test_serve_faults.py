"""Faults the model decides, as the live device reports them: an undecodable read is EIO, a
write to a read-only (spare-exhausted) drive or into a write-protected range is EPERM, and a
refused request changes nothing the client can read back."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import assert_user_error, run_cli
from nbd_rig import CMD_FLUSH, CMD_READ, CMD_TRIM, CMD_WRITE, EPERM, start_server
from nbd_rig import connect as _connect
from nbd_rig import go as _go
from nbd_rig import recv as _recv
from nbd_rig import reply as _reply
from nbd_rig import request as _request

EIO = 5


def _write(s, handle: int, offset: int, data: bytes) -> int:  # type: ignore[no-untyped-def]
    _request(s, CMD_WRITE, handle, offset, len(data), payload=data)
    error, h = _reply(s)
    assert h == handle
    return error


def _read(s, handle: int, offset: int, length: int) -> tuple[int, bytes]:  # type: ignore[no-untyped-def]
    _request(s, CMD_READ, handle, offset, length)
    error, h = _reply(s)
    assert h == handle
    return error, (_recv(s, length) if error == 0 else b"")


def test_a_read_the_ecc_cannot_decode_is_eio_and_the_session_counts_it(tmp_path: Path) -> None:
    # 4 correctable bits per 1 KiB at a raw bit-error rate of 1 %, no read retry: every NAND
    # read fails. Unwritten data (no preconditioning) is answered by the controller without
    # NAND, so it reads.
    srv = start_server(tmp_path, "--clock", "logical",
                       "--set", 'precondition.fill="none"',
                       "--set", "precondition.random_overwrite=0",
                       "--set", "reliability.ecc_correctable_bits=4",
                       "--set", "reliability.rber_fresh=1e-2",
                       "--set", "reliability.read_retry_max=0")  # fmt: skip
    try:
        s = _connect(srv.socket_path)
        _go(s)
        assert _read(s, 1, 1 << 20, 4096) == (0, bytes(4096))
        assert _write(s, 2, 0, b"\xab" * 4096) == 0
        _request(s, CMD_FLUSH, 3, 0, 0)
        assert _reply(s) == (0, 3)
        assert _read(s, 4, 0, 4096) == (EIO, b"")
        s.close()
    finally:
        code, _, err = srv.stop()
    assert code == 0, err
    rel = srv.session()["reliability"]
    assert rel["uncorrectable_reads"] == 1
    assert rel["failed_reads"] == 1


def test_a_spare_exhausted_drive_refuses_writes_with_eperm_and_still_reads(
    tmp_path: Path,
) -> None:
    # A fifth of small-tlc's blocks bad from the factory: fewer good blocks than its logical
    # space and GC's reserve need, so the drive starts read-only.
    srv = start_server(tmp_path, "--clock", "logical",
                       "--set", "reliability.factory_bad_block_rate=0.2",
                       "--set", 'precondition.fill="none"',
                       "--set", "precondition.random_overwrite=0")  # fmt: skip
    try:
        s = _connect(srv.socket_path)
        _go(s)
        assert _write(s, 1, 0, b"\x11" * 4096) == EPERM
        _request(s, CMD_TRIM, 2, 0, 4096)
        assert _reply(s) == (EPERM, 2)
        assert _read(s, 3, 0, 4096) == (0, bytes(4096))
        s.close()
    finally:
        code, _, err = srv.stop()
    assert code == 0, err
    rel = srv.session()["reliability"]
    assert rel["read_only"] is True
    assert rel["refused_writes_read_only"] == 2


def test_a_write_into_a_protected_range_is_eperm_and_changes_nothing(tmp_path: Path) -> None:
    srv = start_server(tmp_path, "--clock", "logical",
                       "--set", 'controller.write_protect=[{offset=0, len="1MiB"}]')  # fmt: skip
    try:
        s = _connect(srv.socket_path)
        _go(s)
        assert _write(s, 1, (1 << 20) - 512, b"\x22" * 1024) == EPERM
        assert _write(s, 2, 1 << 20, b"\x33" * 4096) == 0
        assert _read(s, 3, (1 << 20) - 512, 1024) == (0, bytes(512) + b"\x33" * 512)
        s.close()
    finally:
        code, _, err = srv.stop()
    assert code == 0, err


QEMU_IO = shutil.which("qemu-io")


@pytest.mark.skipif(QEMU_IO is None, reason="qemu-io not installed (qemu-utils)")
def test_qemu_io_sees_the_models_errors(tmp_path: Path) -> None:
    srv = start_server(tmp_path, "--clock", "logical",
                       "--set", 'controller.write_protect=[{offset=0, len="64KiB"}]')  # fmt: skip
    try:
        proc = subprocess.run([QEMU_IO or "qemu-io", "-f", "raw", srv.uri,
                               "-c", "write -P 7 0 4k", "-c", "write -P 7 64k 4k"],
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        out = proc.stdout + proc.stderr
        assert "Operation not permitted" in out, out
        assert "wrote 4096/4096 bytes at offset 65536" in out, out
    finally:
        srv.stop()


def test_filling_a_drive_that_starts_read_only_is_a_clear_error() -> None:
    assert_user_error(
        run_cli(
            "run",
            "small-tlc",
            "--rw",
            "randread",
            "--io-count",
            "10",
            "--set",
            "reliability.factory_bad_block_rate=0.2",
        ),  # fmt: skip
        "starts read-only",
        "factory_bad_block_rate",
    )
