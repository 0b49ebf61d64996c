"""What the live-device tests share: a server started as a user would (``python -m ssdlab serve``
on a Unix socket in the test's folder, or on 127.0.0.1 at a port the system picks) and a plain
NBD client (fixed newstyle, NBD_OPT_GO, simple replies) written from the protocol's wire
format."""

from __future__ import annotations

import json
import os
import re
import selectors
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

NBD_MAGIC = 0x4E42444D41474943
OPTS_MAGIC = 0x49484156454F5054
REQUEST_MAGIC = 0x25609513
SIMPLE_REPLY_MAGIC = 0x67446698
OPT_GO = 7
CMD_READ, CMD_WRITE, CMD_DISC, CMD_FLUSH, CMD_TRIM, CMD_WRITE_ZEROES = 0, 1, 2, 3, 4, 6
EINVAL, EOVERFLOW, ENOSPC, EPERM = 22, 75, 28, 1


class Server:
    def __init__(self, proc: subprocess.Popen[str], socket_path: Path, result: Path,
                 address: str | None = None, banner: str = "") -> None:  # fmt: skip
        self.proc = proc
        self.socket_path = socket_path
        self.result = result
        self.address = address  # the URI the banner names (TCP servers)
        self.banner = banner  # what the server printed before it listened (TCP servers)

    @property
    def uri(self) -> str:
        return self.address or f"nbd+unix:///?socket={self.socket_path}"

    @property
    def port(self) -> int:
        assert self.address is not None
        return int(re.search(r":(\d+)(/|$)", self.address).group(1))  # type: ignore[union-attr]

    def stop(self) -> tuple[int, str, str]:
        """SIGTERM (if still running); the exit code and what it printed (stderr with the
        banner, for a TCP server)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=120)
        return self.proc.returncode, out, self.banner + err

    def session(self) -> dict[str, Any]:
        """The session's result JSON (written when the server stopped)."""
        data: dict[str, Any] = json.loads(self.result.read_text())
        return data


def start_server(tmp: Path, *args: str) -> Server:
    """``ssdlab serve small-tlc`` on ``tmp/nbd.sock``, its result to ``tmp/session.json``."""
    sock = tmp / "nbd.sock"
    result = tmp / "session.json"
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    command = [sys.executable, "-m", "ssdlab", "serve", "small-tlc", "--listen", f"unix:{sock}",
               "--json", str(result), "--quiet", *args]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, env=env)  # fmt: skip
    deadline = time.monotonic() + 60
    # The socket file appears at bind(), a moment before the server listens (the standard
    # library binds and listens in two system calls); a client that came in that moment would be
    # refused, so the rig waits until the kernel lists the socket as listening.
    while not _listening(sock):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(f"server did not start: {out}\n{err}")
        time.sleep(0.05)
    return Server(proc, sock, result)


def start_tcp_server(tmp: Path, *args: str) -> Server:
    """``ssdlab serve small-tlc`` on 127.0.0.1 at a port the system picks (read from the banner,
    which the server prints once it listens), its result to ``tmp/session.json``."""
    result = tmp / "session.json"
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    command = [sys.executable, "-m", "ssdlab", "serve", "small-tlc", "--listen",
               "tcp://127.0.0.1:0", "--json", str(result), "--quiet", *args]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, env=env)  # fmt: skip
    assert proc.stderr is not None
    fd = proc.stderr.fileno()
    banner = b""
    deadline = time.monotonic() + 60
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        # The banner is one write: its address line, then the rest down to the session line.
        while not re.search(rb"over NBD at \S+ .*\n(.*\n)*session", banner):
            left = deadline - time.monotonic()
            chunk = os.read(fd, 65536) if left > 0 and sel.select(timeout=left) else b""
            if not chunk:
                proc.kill()
                out, err = proc.communicate()
                raise AssertionError(f"server did not start: {out}\n{banner.decode()}{err}")
            banner += chunk
    text = banner.decode()
    address = re.search(r"over NBD at (\S+) ", text)
    assert address is not None, text
    return Server(proc, Path(), result, address.group(1), text)


def _listening(path: Path) -> bool:
    """Whether /proc/net/unix lists a listening socket (flag __SO_ACCEPTCON) bound at ``path``."""
    with open("/proc/net/unix") as table:
        next(table)
        for line in table:
            fields = line.split()
            if len(fields) >= 8 and fields[7] == str(path) and int(fields[3], 16) & 0x10000:
                return True
    return False


def connect(path: Path, timeout: float | None = 30) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(str(path))
    return s


def recv(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise EOFError(f"closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def go(s: socket.socket) -> int:
    """Handshake to transmission with NBD_OPT_GO (simple replies); returns the export size."""
    magic, opts, _flags = struct.unpack(">QQH", recv(s, 18))
    assert (magic, opts) == (NBD_MAGIC, OPTS_MAGIC)
    s.sendall(struct.pack(">I", 3))
    payload = struct.pack(">I", 0) + struct.pack(">H", 0)
    s.sendall(struct.pack(">QII", OPTS_MAGIC, OPT_GO, len(payload)) + payload)
    size = None
    while True:
        _m, _opt, kind, length = struct.unpack(">QIII", recv(s, 20))
        data = recv(s, length)
        if kind == 3 and struct.unpack(">H", data[:2])[0] == 0:
            size = int(struct.unpack(">Q", data[2:10])[0])
        if kind == 1:
            assert size is not None
            return size


def header(cmd: int, handle: int, offset: int, length: int, flags: int = 0) -> bytes:
    return struct.pack(">IHHQQI", REQUEST_MAGIC, flags, cmd, handle, offset, length)


def request(s: socket.socket, cmd: int, handle: int, offset: int, length: int,
            payload: bytes = b"", flags: int = 0) -> None:  # fmt: skip
    s.sendall(header(cmd, handle, offset, length, flags) + payload)


def reply(s: socket.socket) -> tuple[int, int]:
    """A simple reply: (error, handle)."""
    magic, error, handle = struct.unpack(">IIQ", recv(s, 16))
    assert magic == SIMPLE_REPLY_MAGIC
    return error, handle
