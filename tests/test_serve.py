"""The live device: ``ssdlab serve`` answering real NBD clients (qemu-img, qemu-io) and a
scripted hostile client, then writing the session's result when it is stopped."""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import ssdlab
from conftest import assert_user_error, run_cli
from nbd_rig import (
    CMD_DISC,
    CMD_FLUSH,
    CMD_READ,
    CMD_TRIM,
    CMD_WRITE,
    CMD_WRITE_ZEROES,
    EINVAL,
    ENOSPC,
    EOVERFLOW,
    EPERM,
    OPTS_MAGIC,
    Server,
    start_server,
)
from nbd_rig import connect as _connect
from nbd_rig import go as _go
from nbd_rig import recv as _recv
from nbd_rig import reply as _reply
from nbd_rig import request as _request
from ssdlab.cli.serve import lag_warning

QEMU_IMG = shutil.which("qemu-img")
QEMU_IO = shutil.which("qemu-io")
needs_qemu = pytest.mark.skipif(
    QEMU_IMG is None or QEMU_IO is None, reason="qemu-img/qemu-io not installed (qemu-utils)"
)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    s = start_server(tmp_path, "--clock", "logical")
    yield s
    if s.proc.poll() is None:
        s.stop()


def qemu_io(uri: str, *commands: str) -> str:
    args = [QEMU_IO or "qemu-io", "-f", "raw", uri]
    for c in commands:
        args += ["-c", c]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "fail" not in proc.stdout.lower(), proc.stdout
    return proc.stdout


@needs_qemu
def test_qemu_img_round_trips_an_image_and_the_session_is_a_result(
    server: Server, tmp_path: Path
) -> None:
    info = json.loads(
        subprocess.run(
            [QEMU_IMG or "", "info", "--output=json", server.uri],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout  # fmt: skip
    )
    size = info["virtual-size"]
    assert size == 896 * 1024 * 1024  # small-tlc's logical capacity
    image = tmp_path / "in.raw"
    with image.open("wb") as f:
        f.write(os.urandom(16 * 1024 * 1024))
        f.truncate(size)
    subprocess.run([QEMU_IMG or "", "convert", "-n", "-f", "raw", "-O", "raw", str(image),
                    server.uri], check=True, timeout=300)  # fmt: skip
    compare = subprocess.run([QEMU_IMG or "", "compare", "-f", "raw", "-F", "raw", str(image),
                              server.uri], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert compare.returncode == 0, compare.stdout + compare.stderr
    back = tmp_path / "out.raw"
    subprocess.run([QEMU_IMG or "", "convert", "-f", "raw", "-O", "raw", server.uri, str(back)],
                   check=True, timeout=300)  # fmt: skip
    assert back.read_bytes()[: 16 << 20] == image.read_bytes()[: 16 << 20]
    code, out, _ = server.stop()
    assert code == 0
    result = json.loads(server.result.read_text())
    assert result["schema"] == "ssdlab.result/1"
    assert result["sim"]["stop_reason"] == "server stopped"
    assert result["job"]["serve"]["clock"] == "logical"
    assert result["ops"]["write"]["count"] > 0 and result["ops"]["read"]["count"] > 0
    assert "write amplification" in out


@needs_qemu
def test_qemu_io_patterns_discard_zeroes_and_flush(server: Server) -> None:
    qemu_io(
        server.uri,
        "write -P 0xab 0 1M",
        "write -P 0x11 4096 512",  # a partial map unit
        "read -P 0xab 0 4096",
        "read -P 0x11 4096 512",
        "read -P 0xab 4608 3584",
        "discard 512k 512k",
        "read -P 0 512k 512k",
        "write -z 16k 8k",
        "read -P 0 16k 8k",
        "read -P 0xab 24k 8k",
        "write -P 0x5a -f 2M 64k",  # FUA
        "flush",
        "read -P 0x5a 2M 64k",
    )


@needs_qemu
def test_qemu_img_map_sees_data_and_holes_through_block_status(server: Server) -> None:
    """base:allocation: written ranges are data; discarded ones holes that read as zeros (the
    FTL's map unit is the grain); ranges the preconditioning mapped but no client wrote are
    allocated zeros."""
    qemu_io(server.uri, "write -P 0xcd 1M 2M", "discard 2M 512k")
    proc = subprocess.run([QEMU_IMG or "", "map", "--output=json", "-f", "raw", server.uri],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    extents = [(e["start"], e["length"], e["data"], e["zero"]) for e in json.loads(proc.stdout)]
    mib = 1 << 20
    assert extents[0] == (0, mib, True, True)  # small-tlc preconditions the whole drive
    assert extents[1] == (mib, mib, True, False)
    assert extents[2] == (2 * mib, mib // 2, False, True)
    assert extents[3] == (2 * mib + mib // 2, mib // 2, True, False)
    assert extents[4][:1] == (3 * mib,) and extents[4][2:] == (True, True)
    assert sum(e[1] for e in extents) == 896 * mib


@needs_qemu
@pytest.mark.parametrize("clock", ["logical", "realtime"])
def test_a_session_log_replays_the_sessions_simulated_figures_byte_for_byte(
    tmp_path: Path, clock: str
) -> None:
    log = tmp_path / "session.log"
    server = start_server(tmp_path, "--clock", clock, "--log", str(log))
    image = tmp_path / "in.raw"
    image.write_bytes(os.urandom(8 << 20))
    try:
        # Many requests in flight (convert), FUA writes, discards, flushes and reads.
        subprocess.run([QEMU_IMG or "", "convert", "-n", "-f", "raw", "-O", "raw", "-W",
                        str(image), server.uri], check=True, timeout=300)  # fmt: skip
        qemu_io(server.uri, "write -P 0x11 -f 16M 64k", "discard 1M 1M", "flush",
                "read -P 0x11 16M 64k", "read 0 2M",
                *(f"aio_write -P 0x22 {32 + k}M 4k" for k in range(16)), "aio_flush",
                *(f"aio_read -P 0x22 {32 + k}M 4k" for k in range(16)), "aio_flush")  # fmt: skip
    finally:
        code, _, err = server.stop()
    assert code == 0, err
    session = json.loads(server.result.read_text())
    assert session["job"]["serve"]["log"] == str(log)
    assert log.read_text().startswith("# ssdlab session log v1\n")
    replayed = tmp_path / "replay.json"
    proc = run_cli("run", "small-tlc", "--trace", str(log), "--json", str(replayed))
    assert proc.returncode == 0, proc.stderr
    replay = json.loads(replayed.read_text())
    assert replay["trace"]["same_config"] and replay["trace"]["same_seed"]
    assert session["ops"]["write"]["count"] > 16 and session["ops"]["read"]["count"] > 16
    for block in ("ops", "total", "device", "utilisation", "interface"):
        assert json.dumps(replay[block]) == json.dumps(session[block]), block
    for key in ("simulated_time_s", "requests", "events"):
        assert replay["sim"][key] == session["sim"][key], key
    # Replay options have nothing to change in a session: refused, not ignored.
    assert_user_error(
        run_cli("run", "small-tlc", "--trace", str(log), "--iodepth", "4"),
        "iodepth",
    )


@pytest.mark.parametrize(
    ("body", "needles"),
    [
        ("at 0\nwrite 0 4096 0 fua\nat 5\nmove 0 1 0\n", ["line 8", "op", "move"]),
        ("at 10\nat 9\n", ["line 6", "at", "before"]),
        ("read 0 4096 0\n", ["line 5", "before the first"]),
        ("at 0\nread 0 x 0\n", ["line 6", "len", '"x"']),
        ("at 0\nread 0 4096 0 fua\n", ["line 6", "fua"]),
        ("at 0\nwrite 18446744073709551615 4096 0\n", ["line 6", "past the device"]),
    ],
)
def test_a_malformed_session_log_is_an_error_naming_its_line(
    tmp_path: Path, body: str, needles: list[str]
) -> None:
    log = tmp_path / "bad.log"
    log.write_text("# ssdlab session log v1\n# config x y\n# seed 1\n# clock logical\n" + body)
    assert_user_error(run_cli("run", "small-tlc", "--trace", str(log)), str(log), *needles)


@needs_qemu
def test_file_data_outlives_the_server(tmp_path: Path) -> None:
    disk = tmp_path / "disk.img"
    first = start_server(tmp_path, "--clock", "logical", "--data", f"file:{disk}")
    try:
        qemu_io(first.uri, "write -P 0x7e 5M 1M", "write -P 0x3c 100M 64k", "discard 5M 64k")
        # One server per file: a second one is refused, naming the file.
        second = ("--listen", f"unix:{tmp_path / 'b.sock'}", "--data", f"file:{disk}")
        assert_user_error(
            run_cli("serve", "small-tlc", *second),
            str(disk),
            "another server",
        )
    finally:
        assert first.stop()[0] == 0
    assert disk.stat().st_size == 896 << 20
    assert disk.stat().st_blocks * 512 < 8 << 20  # sparse: only what was written
    second_dir = tmp_path / "again"
    second_dir.mkdir()
    second = start_server(second_dir, "--clock", "logical", "--data", f"file:{disk}")
    try:
        # Reads through structured replies: the discarded range comes back as a hole chunk.
        qemu_io(second.uri, "read -P 0 5M 64k", "read -P 0x7e 5184k 960k",
                "read -P 0x3c 100M 64k", "read -P 0 0 1M")  # fmt: skip
    finally:
        assert second.stop()[0] == 0
    wrong = tmp_path / "wrong.img"
    wrong.write_bytes(b"x" * 4096)
    wrong_size = ("--listen", f"unix:{tmp_path / 'c.sock'}", "--data", f"file:{wrong}")
    assert_user_error(
        run_cli("serve", "small-tlc", *wrong_size),
        "4096",
        str(896 << 20),
    )
    assert_user_error(
        run_cli("serve", "small-tlc", "--data", "disk:/x"), "--data", "memory or file:PATH"
    )


@pytest.mark.parametrize("seed", [1, 2])
def test_random_writes_trims_zeroes_and_reads_over_four_connections_match_a_plain_model(
    server: Server, seed: int
) -> None:
    """The data a client reads back is what a flat byte array says, whichever connection
    wrote, trimmed or zeroed it. Each round, every connection sends a batch of requests to its
    own stripe (pipelined: many in flight at once), then one connection works across all
    stripes alone, so the order of every overlapping change is known."""
    import random

    rng = random.Random(seed)
    span, conns = 8 << 20, 4
    model = bytearray(span)
    socks = [_connect(server.socket_path) for _ in range(conns)]
    for s in socks:
        _go(s)
    handle = 0

    def random_op(lo: int, hi: int) -> tuple[int, int, int, bytes]:
        length = rng.randrange(1, 129) * 512
        offset = lo + rng.randrange(0, (hi - lo - length) // 512 + 1) * 512
        kind = rng.choices([CMD_WRITE, CMD_TRIM, CMD_WRITE_ZEROES, CMD_READ], [5, 1, 1, 3])[0]
        payload = rng.randbytes(length) if kind == CMD_WRITE else b""
        return kind, offset, length, payload

    def apply(kind: int, offset: int, length: int, payload: bytes) -> None:
        if kind == CMD_WRITE:
            model[offset : offset + length] = payload
        elif kind in (CMD_TRIM, CMD_WRITE_ZEROES):
            model[offset : offset + length] = bytes(length)

    def expect_reply(s: socket.socket, kind: int, offset: int, length: int) -> None:
        error, _ = _reply(s)
        assert error == 0, (kind, offset, length)
        if kind == CMD_READ:
            assert _recv(s, length) == bytes(model[offset : offset + length]), (offset, length)

    for _round in range(6):
        stripe = span // conns
        batches = []
        for k in range(conns):
            batches.append([random_op(k * stripe, (k + 1) * stripe) for _ in range(24)])
        # Each connection's first requests all go out before any reply is read: the four
        # connections' changes to their own stripes are in the model together.
        for k, s in enumerate(socks):
            kind, offset, length, payload = batches[k][0]
            handle += 1
            _request(s, kind, handle, offset, length, payload=payload)
        for k, s in enumerate(socks):
            kind, offset, length, payload = batches[k][0]
            expect_reply(s, kind, offset, length)
            apply(kind, offset, length, payload)
            for kind, offset, length, payload in batches[k][1:]:
                handle += 1
                _request(s, kind, handle, offset, length, payload=payload)
                expect_reply(s, kind, offset, length)
                apply(kind, offset, length, payload)
        # Many reads in flight on every connection at once; replies come in any order.
        in_flight: list[dict[int, tuple[int, int]]] = []
        for s in socks:
            mine = {}
            for _ in range(16):
                offset, length = random_op(0, span)[1:3]
                handle += 1
                mine[handle] = (offset, length)
                _request(s, CMD_READ, handle, offset, length)
            in_flight.append(mine)
        for s, mine in zip(socks, in_flight, strict=True):
            while mine:
                error, h = _reply(s)
                offset, length = mine.pop(h)
                assert error == 0
                assert _recv(s, length) == bytes(model[offset : offset + length]), (offset, length)
        # One connection across every stripe.
        s = socks[rng.randrange(conns)]
        for kind, offset, length, payload in (random_op(0, span) for _ in range(16)):
            handle += 1
            _request(s, kind, handle, offset, length, payload=payload)
            expect_reply(s, kind, offset, length)
            apply(kind, offset, length, payload)
    for s in socks:
        _request(s, CMD_DISC, 0, 0, 0)
        s.close()


def test_a_hostile_client_gets_the_protocols_errors_and_stays_in_step(server: Server) -> None:
    s = _connect(server.socket_path)
    size = _go(s)
    # Past the end, overflowing 64 bits, an unknown command, an unknown flag, zero length.
    _request(s, CMD_READ, 1, size, 512)
    assert _reply(s) == (EINVAL, 1)
    _request(s, CMD_READ, 2, 2**64 - 256, 512)
    assert _reply(s) == (EOVERFLOW, 2)
    _request(s, 77, 3, 0, 512)
    assert _reply(s) == (EINVAL, 3)
    _request(s, CMD_READ, 4, 0, 512, flags=1 << 9)
    assert _reply(s) == (EINVAL, 4)
    _request(s, CMD_READ, 5, 0, 0)
    assert _reply(s) == (EINVAL, 5)
    # A 33 MiB write: its payload is skipped to stay in step, then refused.
    big = 33 * 1024 * 1024
    _request(s, CMD_WRITE, 6, 0, big)
    s.sendall(bytes(big))
    assert _reply(s) == (EINVAL, 6)
    _request(s, CMD_WRITE, 7, size - 512, 1024, payload=bytes(1024))
    assert _reply(s) == (ENOSPC, 7)
    # Still in step: a write and its read-back.
    _request(s, CMD_WRITE, 8, 8192, 512, payload=b"\x42" * 512)
    assert _reply(s) == (0, 8)
    _request(s, CMD_READ, 9, 8192, 512)
    assert _reply(s) == (0, 9)
    assert _recv(s, 512) == b"\x42" * 512
    _request(s, CMD_FLUSH, 10, 0, 0)
    assert _reply(s) == (0, 10)
    _request(s, CMD_DISC, 11, 0, 0)
    s.close()
    # A wrong magic at once, and a handshake cut short: the server goes on serving others.
    bad = _connect(server.socket_path)
    _recv(bad, 18)
    bad.sendall(b"\xff" * 20)
    bad.close()
    cut = _connect(server.socket_path)
    _recv(cut, 18)
    cut.sendall(struct.pack(">I", 3) + struct.pack(">Q", OPTS_MAGIC)[:5])
    cut.close()
    again = _connect(server.socket_path)
    assert _go(again) == size
    _request(again, CMD_READ, 12, 8192, 512)
    assert _reply(again) == (0, 12)
    assert _recv(again, 512) == b"\x42" * 512
    again.close()
    code, _, err = server.stop()
    assert code == 0, err
    assert "Traceback" not in err


@pytest.mark.parametrize("clock", ["logical", "realtime"])
def test_a_soft_disconnect_gets_every_reply_it_is_owed(tmp_path: Path, clock: str) -> None:
    srv = start_server(tmp_path, "--clock", clock, "--time-scale", "50")
    try:
        s = _connect(srv.socket_path)
        _go(s)
        # Sixteen writes and DISC at once, before reading any reply.
        for k in range(16):
            _request(s, CMD_WRITE, k, k * 65536, 4096, payload=bytes([k + 1]) * 4096)
        _request(s, CMD_DISC, 99, 0, 0)
        replies = sorted(_reply(s) for _ in range(16))
        assert replies == [(0, k) for k in range(16)]
        assert s.recv(1) == b"", "closed after the last reply"
        s.close()
        again = _connect(srv.socket_path)
        _go(again)
        for k in range(16):
            _request(again, CMD_READ, k, k * 65536, 4096)
            assert _reply(again) == (0, k)
            assert _recv(again, 4096) == bytes([k + 1]) * 4096
        again.close()
    finally:
        code, _, err = srv.stop()
    assert code == 0, err


def test_read_only_refuses_writes(tmp_path: Path) -> None:
    srv = start_server(tmp_path, "--clock", "logical", "--read-only")
    try:
        s = _connect(srv.socket_path)
        _go(s)
        _request(s, CMD_WRITE, 1, 0, 512, payload=bytes(512))
        assert _reply(s) == (EPERM, 1)
        _request(s, CMD_READ, 2, 0, 512)
        assert _reply(s) == (0, 2)
        assert _recv(s, 512) == bytes(512)
        s.close()
    finally:
        srv.stop()


def test_the_realtime_clock_holds_replies_until_their_simulated_completion(
    tmp_path: Path,
) -> None:
    # Played 2,000 times slower, a 4 KiB read of tens of simulated µs takes tens of wall ms.
    srv = start_server(tmp_path, "--clock", "realtime", "--time-scale", "2000")
    try:
        s = _connect(srv.socket_path)
        _go(s)
        walls = []
        for handle in range(5):
            t0 = time.monotonic()
            _request(s, CMD_READ, handle, handle * 4096 * 97, 4096)
            assert _reply(s) == (0, handle)
            _recv(s, 4096)
            walls.append(time.monotonic() - t0)
        s.close()
    finally:
        code, _, err = srv.stop()
    assert code == 0, err
    result = json.loads(srv.result.read_text())
    mean_us = result["ops"]["read"]["latency_us"]["mean"]
    # The client waited at least the simulated latency, scaled (less a margin for rounding).
    assert min(walls) >= 0.9 * 2000 * result["ops"]["read"]["latency_us"]["min"] / 1e6
    assert sum(walls) / len(walls) >= 0.9 * 2000 * mean_us / 1e6
    # How late the replies left against their simulated completion: measured, and small
    # beside the tens of wall ms each took (a loose bound: the machine may be busy).
    lag = result["wall"]["reply_lag_us"]
    assert 0 <= lag["min"] <= lag["p99"] <= lag["max"], lag
    assert lag["max"] < 0.5 * 2000 * mean_us, lag


def test_the_lag_warning_compares_the_p99_lag_with_the_latency_clients_see() -> None:
    read = {"count": 90, "mean_us": 100.0}
    write = {"count": 10, "mean_us": 1000.0}
    # Mean served 190 µs at scale 1: warned above 19 µs of p99 lag, not at or below.
    assert lag_warning({"count": 5, "p99_us": 19.0}, read, write, 1.0) is None
    warning = lag_warning({"count": 5, "p99_us": 25.0}, read, write, 1.0)
    assert warning is not None and "25 µs" in warning and "190 µs" in warning
    # Played 10 times slower, clients see 1,900 µs: 25 µs late is nothing to warn of.
    assert lag_warning({"count": 5, "p99_us": 25.0}, read, write, 10.0) is None
    # Nothing served, or the logical clock (no lag figures): no warning.
    assert lag_warning({"count": 0, "p99_us": 0.0}, read, write, 1.0) is None
    assert lag_warning(None, read, write, 1.0) is None


def test_bad_options_are_one_line_errors() -> None:
    assert_user_error(run_cli("serve", "small-tlc", "--listen", "http://x"), "--listen", "tcp://")
    assert_user_error(run_cli("serve", "small-tlc", "--clock", "fast"), "--clock", "logical")
    assert_user_error(run_cli("serve", "small-tlc", "--time-scale", "0"), "--time-scale")
    assert_user_error(run_cli("serve", "no-such-preset"), "no-such-preset")


@pytest.mark.parametrize(
    ("option", "target", "needles"),
    [
        ("--json", "{tmp}/plain/r.json", ["plain"]),
        ("--json", "{tmp}", ["is a directory"]),
        ("--log", "/dev/full", ["--log /dev/full", "cannot be written"]),
    ],
    ids=["json-under-a-file", "json-directory", "log-full-device"],
)
def test_an_output_path_the_session_cannot_be_written_to_is_refused_at_start(
    tmp_path: Path, option: str, target: str, needles: list[str]
) -> None:
    # Checked only when the server stopped: the session's result was lost (issue 45, defect 8).
    if target == "/dev/full" and not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    sock = tmp_path / "s.sock"
    (tmp_path / "plain").write_text("a file, not a folder")
    path = target.format(tmp=tmp_path)
    proc = run_cli("serve", "small-tlc", "--listen", f"unix:{sock}", option, path, timeout=60)
    assert_user_error(proc, *needles)
    assert not sock.exists()


def test_serve_errors_are_serve_errors_with_their_parts(tmp_path: Path) -> None:
    """What serve refuses is a ServeError (a ConfigError, as before serve had its own class)
    whose option, value and expectation are data; an error of its config stays a ConfigError."""
    from ssdlab import _core

    config = _core.resolve_config("small-tlc", [])
    with pytest.raises(ssdlab.ServeError) as caught:
        _core.serve(config, "http://x")
    error = caught.value
    assert isinstance(error, ssdlab.ConfigError)
    assert (error.origin, error.field, error.value) == ("--listen", None, '"http://x"')
    assert error.expected is not None and error.expected.startswith("tcp://HOST:PORT")
    # A file an option names: the option and the path, the system's words in the message.
    missing = tmp_path / "none" / "x.log"
    with pytest.raises(ssdlab.ServeError) as caught:
        _core.serve(config, f"unix:{tmp_path / 's.sock'}", clock="logical", log=str(missing))
    assert (caught.value.origin, caught.value.value) == ("--log", str(missing))
    assert str(caught.value).startswith(f"--log {missing}: ")
    zoned = _core.resolve_config("zns-tlc", [])
    with pytest.raises(ssdlab.ServeError, match="NBD has no zones") as caught:
        _core.serve(zoned, "unix:/nonexistent/s.sock")
    assert caught.value.origin == "serve"
