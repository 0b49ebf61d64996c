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
        self.banner = banner  # what the server printed once it listened

    @property
    def uri(self) -> str:
        return self.address or f"nbd+unix:///?socket={self.socket_path}"

    @property
    def port(self) -> int:
        assert self.address is not None
        return int(re.search(r":(\d+)(/|$)", self.address).group(1))  # type: ignore[union-attr]

    def stop(self) -> tuple[int, str, str]:
        """SIGTERM (if still running); the exit code and what it printed (stderr with the
        banner)."""
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
    proc, banner, _ = _serve(tmp, f"unix:{sock}", args)
    return Server(proc, sock, tmp / "session.json", None, banner)


def start_tcp_server(tmp: Path, *args: str) -> Server:
    """``ssdlab serve small-tlc`` on 127.0.0.1 at a port the system picks (read from the
    banner's address), its result to ``tmp/session.json``."""
    proc, banner, address = _serve(tmp, "tcp://127.0.0.1:0", args)
    return Server(proc, Path(), tmp / "session.json", address, banner)


def _serve(tmp: Path, listen: str, args: tuple[str, ...]) -> tuple[subprocess.Popen[str], str, str]:
    """Start the server; wait for its banner, which it prints once it listens (a SIGTERM that
    came sooner would stop it before it said anything). Returns the process, the banner and the
    address it names."""
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    command = [sys.executable, "-m", "ssdlab", "serve", "small-tlc", "--listen", listen,
               "--json", str(tmp / "session.json"), "--quiet", *args]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, env=env)  # fmt: skip
    assert proc.stderr is not None
    fd = proc.stderr.fileno()
    banner = b""
    deadline = time.monotonic() + 60
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        # The banner is one write: its address line, then the rest down to the session line.
        while not re.search(rb"over NBD at \S+ .*\n(.*\n)*session.*\n", banner):
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
    return proc, text, address.group(1)


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
