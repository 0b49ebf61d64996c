"""Who may talk to the live device: ``ssdlab serve`` over TLS (NBD_OPT_STARTTLS) with a PSK file
or X.509 certificates made here by GnuTLS's psktool and certtool, driven by real clients
(nbdinfo, nbdcopy, qemu-img, qemu-io) and by scripted hostile ones; and the safe defaults (no
network in the clear, an owner-only socket, a connection limit, exact export names, a handshake
time limit), each counted in the session's result."""

from __future__ import annotations

import json
import os
import shutil
import socket
import ssl
import stat
import struct
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import assert_user_error, run_cli
from nbd_rig import OPTS_MAGIC, Server, start_server, start_tcp_server
from nbd_rig import connect as _connect
from nbd_rig import go as _go
from nbd_rig import recv as _recv

NBDINFO = shutil.which("nbdinfo")
NBDCOPY = shutil.which("nbdcopy")
QEMU_IMG = shutil.which("qemu-img")
QEMU_IO = shutil.which("qemu-io")
PSKTOOL = shutil.which("psktool")
CERTTOOL = shutil.which("certtool")
needs_libnbd = pytest.mark.skipif(
    NBDINFO is None or NBDCOPY is None, reason="nbdinfo/nbdcopy not installed (libnbd-bin)"
)
needs_qemu = pytest.mark.skipif(
    QEMU_IMG is None or QEMU_IO is None, reason="qemu-img/qemu-io not installed (qemu-utils)"
)
needs_gnutls = pytest.mark.skipif(
    PSKTOOL is None or CERTTOOL is None, reason="psktool/certtool not installed (gnutls-bin)"
)

OPT_ABORT, OPT_STARTTLS, OPT_GO, OPT_LIST = 2, 5, 7, 3
REP_ACK, REP_SERVER, REP_INFO = 1, 2, 3
REP_ERR_INVALID, REP_ERR_TLS_REQD, REP_ERR_UNKNOWN = 0x80000003, 0x80000005, 0x80000006
CAPACITY = 896 << 20  # small-tlc's logical capacity
REASONS = {"too_many_connections", "tls_required", "tls_handshake_failed", "unknown_export",
           "handshake_timeout", "protocol_error"}  # fmt: skip


# Credentials, made with GnuTLS's own tools as a user would.


def make_psk(folder: Path, user: str = "alice") -> Path:
    """``folder/keys.psk`` with a fresh key for ``user`` (the name QEMU's tls-creds-psk reads)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "keys.psk"
    subprocess.run([PSKTOOL or "psktool", "-u", user, "-p", str(path)], check=True,
                   capture_output=True, timeout=60)  # fmt: skip
    return path


def psk_key(path: Path) -> str:
    return path.read_text().strip().split(":", 1)[1]


def _certtool(*args: str) -> None:
    subprocess.run([CERTTOOL or "certtool", *args], check=True, capture_output=True, timeout=60)


def make_ca(folder: Path, name: str) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    key, cert, info = folder / "ca-key.pem", folder / "ca-cert.pem", folder / "ca.info"
    info.write_text(f"cn = {name}\nca\ncert_signing_key\nexpiration_days = 2\n")
    _certtool("--generate-privkey", "--outfile", str(key))
    _certtool("--generate-self-signed", "--load-privkey", str(key), "--template", str(info),
              "--outfile", str(cert))  # fmt: skip
    return key, cert


def make_cert(folder: Path, ca: tuple[Path, Path], role: str) -> None:
    """``folder/{role}-cert.pem`` and ``-key.pem`` signed by ``ca``, and the CA's certificate
    beside them as ``ca-cert.pem`` (the layout nbdkit, libnbd and QEMU read)."""
    folder.mkdir(parents=True, exist_ok=True)
    key, cert, info = folder / f"{role}-key.pem", folder / f"{role}-cert.pem", folder / "x.info"
    usage = "tls_www_server" if role == "server" else "tls_www_client"
    info.write_text(f"cn = localhost\ndns_name = localhost\nip_address = 127.0.0.1\n{usage}\n"
                    "encryption_key\nsigning_key\nexpiration_days = 2\n")  # fmt: skip
    _certtool("--generate-privkey", "--outfile", str(key))
    _certtool("--generate-certificate", "--load-privkey", str(key), "--load-ca-certificate",
              str(ca[1]), "--load-ca-privkey", str(ca[0]), "--template", str(info),
              "--outfile", str(cert))  # fmt: skip
    shutil.copy(ca[1], folder / "ca-cert.pem")


@pytest.fixture
def pki(tmp_path: Path) -> dict[str, Path]:
    """A CA with a server and a client certificate, and a client certificate of another CA."""
    if PSKTOOL is None or CERTTOOL is None:
        pytest.skip("psktool/certtool not installed (gnutls-bin)")
    ca = make_ca(tmp_path / "ca", "ssdlab test CA")
    make_cert(tmp_path / "server", ca, "server")
    make_cert(tmp_path / "client", ca, "client")
    make_cert(tmp_path / "stranger", make_ca(tmp_path / "other-ca", "another CA"), "client")
    return {k: tmp_path / k for k in ("server", "client", "stranger")}


@pytest.fixture
def serve_tcp(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    started: list[Server] = []

    def start(*args: str) -> Server:
        folder = tmp_path / f"server{len(started)}"
        folder.mkdir()
        started.append(start_tcp_server(folder, *args))
        return started[-1]

    yield start
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.communicate()


def stop(server: Server) -> tuple[dict[str, Any], str]:
    """Stop the server: the session's connection counts and everything it printed."""
    code, out, err = server.stop()
    assert code == 0, err
    assert "Traceback" not in err, err
    session = server.session()
    connections: dict[str, Any] = session["job"]["serve"]["connections"]
    assert set(connections["refused"]) == REASONS
    return connections, out + err + server.result.read_text()


def refused(connections: dict[str, Any], **expect: int) -> None:
    """Every reason's count: those named as given, the rest zero."""
    assert connections["refused"] == {r: expect.get(r, 0) for r in REASONS}


def nbdinfo(uri: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([NBDINFO or "nbdinfo", *args, uri], capture_output=True, text=True,
                          timeout=120)  # fmt: skip


def psk_uri(server: Server, psk: Path, user: str = "alice") -> str:
    return f"nbds://{user}@127.0.0.1:{server.port}/?tls-psk-file={psk}"


# Real clients over TLS.


@needs_libnbd
@needs_gnutls
def test_nbdinfo_and_nbdcopy_over_tls_with_a_psk(
    serve_tcp: Callable[..., Server], tmp_path: Path
) -> None:
    psk = make_psk(tmp_path / "keys")
    server = serve_tcp("--clock", "logical", "--tls-psk", str(psk))
    # The banner's address is the client's URI: TLS, the file's first user, the file.
    assert server.uri == f"nbds://alice@127.0.0.1:{server.port}/?tls-psk-file={psk.resolve()}"
    assert (
        "who can connect: any process on this machine (loopback only), over TLS only, "
        f"with the key of a user in {psk} (alice)" in server.banner
    )
    info = nbdinfo(server.uri, "--json")
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)["exports"][0]["export-size"] == CAPACITY
    image, back = tmp_path / "in.raw", tmp_path / "out.raw"
    with image.open("wb") as f:
        f.write(os.urandom(8 << 20))
        f.seek(24 << 20)
        f.write(os.urandom(1 << 20))
        f.truncate(CAPACITY)
    for src, dst in [(str(image), server.uri), (server.uri, str(back))]:
        copy = subprocess.run([NBDCOPY or "nbdcopy", "--connections=4", src, dst],
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        assert copy.returncode == 0, copy.stderr
    with image.open("rb") as a, back.open("rb") as b:
        assert a.read(32 << 20) == b.read(32 << 20)
    connections, printed = stop(server)
    assert connections["served"] == connections["connected"] >= 3  # nbdinfo, nbdcopy twice
    refused(connections)
    assert psk_key(psk) not in printed  # the key is never shown


@needs_libnbd
@needs_gnutls
def test_libnbd_over_a_unix_socket_with_a_psk(tmp_path: Path) -> None:
    psk = make_psk(tmp_path / "keys")
    server = start_server(tmp_path, "--clock", "logical", "--tls-psk", str(psk))
    try:
        uri = f"nbds+unix://alice@/?socket={server.socket_path}&tls-psk-file={psk}"
        info = nbdinfo(uri, "--size")
        assert info.returncode == 0, info.stderr
        assert int(info.stdout) == CAPACITY
        # In the clear: the server requires TLS.
        plain = nbdinfo(f"nbd+unix:///?socket={server.socket_path}", "--size")
        assert plain.returncode != 0
    finally:
        connections, _ = stop(server)
    refused(connections, tls_required=1)


@needs_libnbd
@needs_gnutls
def test_x509_clients_need_a_certificate_of_the_servers_ca(
    serve_tcp: Callable[..., Server], pki: dict[str, Path]
) -> None:
    server = serve_tcp("--clock", "logical", "--tls-certificates", str(pki["server"]))
    assert server.uri == f"nbds://127.0.0.1:{server.port}"
    assert f"with a client certificate signed by {pki['server'] / 'ca-cert.pem'}" in server.banner
    ok = nbdinfo(f"nbds://localhost:{server.port}/?tls-certificates={pki['client']}", "--size")
    assert ok.returncode == 0, ok.stderr
    assert int(ok.stdout) == CAPACITY
    # A client certificate from another CA, and none at all.
    stranger = nbdinfo(f"nbds://localhost:{server.port}/?tls-certificates={pki['stranger']}")
    assert stranger.returncode != 0
    bare = pki["client"].parent / "bare"
    bare.mkdir()
    shutil.copy(pki["client"] / "ca-cert.pem", bare / "ca-cert.pem")
    anonymous = nbdinfo(f"nbds://localhost:{server.port}/?tls-certificates={bare}")
    assert anonymous.returncode != 0
    connections, _ = stop(server)
    assert connections["served"] == 1
    refused(connections, tls_handshake_failed=2)


@needs_libnbd
@needs_gnutls
def test_without_peer_verification_any_client_gets_tls(
    serve_tcp: Callable[..., Server], pki: dict[str, Path]
) -> None:
    server = serve_tcp("--clock", "logical", "--tls-certificates", str(pki["server"]),
                       "--no-tls-verify-peer")  # fmt: skip
    assert "any client (client certificates are not checked)" in server.banner
    bare = pki["client"].parent / "bare"
    bare.mkdir()
    shutil.copy(pki["client"] / "ca-cert.pem", bare / "ca-cert.pem")
    ok = nbdinfo(f"nbds://localhost:{server.port}/?tls-certificates={bare}", "--size")
    assert ok.returncode == 0, ok.stderr
    connections, _ = stop(server)
    refused(connections)


def _qemu_io(*args: str) -> str:
    proc = subprocess.run([QEMU_IO or "qemu-io", *args], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "fail" not in proc.stdout.lower(), proc.stdout
    return proc.stdout


@needs_qemu
@needs_gnutls
def test_qemu_img_and_qemu_io_with_tls_credential_objects(
    serve_tcp: Callable[..., Server], pki: dict[str, Path], tmp_path: Path
) -> None:
    psk = make_psk(tmp_path / "keys")
    for args, creds in [
        (["--tls-psk", str(psk)],
         f"tls-creds-psk,id=tls0,endpoint=client,dir={psk.parent},username=alice"),
        (["--tls-certificates", str(pki["server"])],
         f"tls-creds-x509,id=tls0,endpoint=client,dir={pki['client']}"),
    ]:  # fmt: skip
        server = serve_tcp("--clock", "logical", *args)
        image = f"driver=nbd,host=127.0.0.1,port={server.port},tls-creds=tls0"
        info = subprocess.run([QEMU_IMG or "qemu-img", "info", "--output=json", "--object", creds,
                               "--image-opts", image], capture_output=True, text=True,
                              timeout=120)  # fmt: skip
        assert info.returncode == 0, info.stderr
        assert json.loads(info.stdout)["virtual-size"] == CAPACITY
        _qemu_io("--object", creds, "--image-opts", image,
                 "-c", "write -P 0x5a 0 1M", "-c", "write -P 0x11 4096 512", "-c", "flush",
                 "-c", "read -P 0x5a 0 4096", "-c", "read -P 0x11 4096 512",
                 "-c", "read -P 0x5a 4608 1043968")  # fmt: skip
        # Without the credentials: refused.
        plain = subprocess.run([QEMU_IMG or "qemu-img", "info",
                                f"nbd://127.0.0.1:{server.port}"], capture_output=True,
                               text=True, timeout=120)  # fmt: skip
        assert plain.returncode != 0
        assert "TLS" in plain.stderr, plain.stderr
        connections, _ = stop(server)
        assert connections["served"] == 2
        refused(connections, tls_required=1)


# Refused: plaintext under require, wrong keys, unknown users.


def _option(s: socket.socket, option: int, data: bytes = b"") -> None:
    s.sendall(struct.pack(">QII", OPTS_MAGIC, option, len(data)) + data)


def _option_reply(s: socket.socket) -> tuple[int, int, bytes]:
    _magic, opt, kind, length = struct.unpack(">QIII", _recv(s, 20))
    return opt, kind, _recv(s, length)


def _hello(s: socket.socket) -> None:
    _recv(s, 18)
    s.sendall(struct.pack(">I", 3))


def _go_data(name: bytes = b"") -> bytes:
    return struct.pack(">I", len(name)) + name + struct.pack(">H", 0)


def _closed(s: socket.socket) -> bool:
    """Whether the server closed the connection (within 30 s)."""
    s.settimeout(30)
    try:
        while s.recv(65536):
            pass
        return True
    except (ConnectionResetError, BrokenPipeError):
        return True


@needs_libnbd
@needs_gnutls
def test_plaintext_wrong_keys_and_unknown_users_are_refused(
    serve_tcp: Callable[..., Server], tmp_path: Path
) -> None:
    psk = make_psk(tmp_path / "keys")
    server = serve_tcp("--clock", "logical", "--tls-psk", str(psk), "--tls", "require")
    # A plaintext client meets NBD_REP_ERR_TLS_REQD for every option but STARTTLS.
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        _hello(s)
        for option, data in [(OPT_LIST, b""), (OPT_GO, _go_data())]:
            _option(s, option, data)
            assert _option_reply(s)[:2] == (option, REP_ERR_TLS_REQD)
        _option(s, OPT_ABORT)
        assert _option_reply(s)[:2] == (OPT_ABORT, REP_ACK)
    plain = nbdinfo(f"nbd://127.0.0.1:{server.port}")
    assert plain.returncode != 0
    # The same user with another key; a user the file does not have.
    wrong = make_psk(tmp_path / "wrong")
    assert psk_key(wrong) != psk_key(psk)
    assert nbdinfo(psk_uri(server, wrong)).returncode != 0
    carol = make_psk(tmp_path / "carol", "carol")
    assert nbdinfo(psk_uri(server, carol, "carol")).returncode != 0
    good = nbdinfo(psk_uri(server, psk), "--size")
    assert good.returncode == 0, good.stderr
    connections, printed = stop(server)
    assert connections["served"] == 1
    refused(connections, tls_required=2, tls_handshake_failed=2)
    assert "connections: 5, served 1, refused 4 (tls_handshake_failed 2, tls_required 2)" in printed
    for key in (psk, wrong, carol):
        assert psk_key(key) not in printed


# Hostile handshakes: each ends its own connection, and the server goes on.


def _starttls(s: socket.socket) -> None:
    _hello(s)
    _option(s, OPT_STARTTLS)
    assert _option_reply(s)[:2] == (OPT_STARTTLS, REP_ACK)


def _client_hello() -> bytes:
    """The first bytes a real TLS client (Python's) sends: its ClientHello record."""
    a, b = socket.socketpair()
    with a, b:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        tls = ctx.wrap_socket(a, do_handshake_on_connect=False)
        tls.setblocking(False)
        try:
            tls.do_handshake()
        except ssl.SSLWantReadError:
            pass
        return b.recv(65536)


@needs_libnbd
@needs_gnutls
def test_hostile_handshakes_end_only_their_own_connection(
    serve_tcp: Callable[..., Server], pki: dict[str, Path]
) -> None:
    server = serve_tcp("--clock", "logical", "--tls-certificates", str(pki["server"]))
    address = ("127.0.0.1", server.port)
    hello = _client_hello()
    assert hello[0] == 0x16  # a TLS handshake record
    # A well-behaved client keeps its connection open through all of it.
    bystander = socket.create_connection(address, timeout=30)
    ctx = ssl.create_default_context(cafile=str(pki["client"] / "ca-cert.pem"))
    ctx.load_cert_chain(pki["client"] / "client-cert.pem", pki["client"] / "client-key.pem")
    _starttls(bystander)
    bystander = ctx.wrap_socket(bystander, server_hostname="localhost")
    # 1. A truncated ClientHello, then the client hangs up.
    with socket.create_connection(address, timeout=30) as s:
        _starttls(s)
        s.sendall(hello[: len(hello) // 2])
        s.shutdown(socket.SHUT_WR)
        assert _closed(s)
    # 2. STARTTLS twice in the clear: the second option's bytes are not a ClientHello.
    with socket.create_connection(address, timeout=30) as s:
        _hello(s)
        _option(s, OPT_STARTTLS)
        _option(s, OPT_STARTTLS)
        assert _option_reply(s)[:2] == (OPT_STARTTLS, REP_ACK)
        assert _closed(s)
    # 3. Garbage for a handshake, then options in the clear after it failed.
    with socket.create_connection(address, timeout=30) as s:
        _starttls(s)
        s.sendall(b"\x16\x03\x01\x00\x05hello")
        time.sleep(0.2)
        try:
            _option(s, OPT_GO, _go_data())
            _option(s, OPT_LIST)
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert _closed(s)
    # 4. Over TLS, STARTTLS again is invalid, and the session goes on to transmission.
    _option(bystander, OPT_STARTTLS)  # type: ignore[arg-type]
    assert _option_reply(bystander)[:2] == (OPT_STARTTLS, REP_ERR_INVALID)  # type: ignore[arg-type]
    _option(bystander, OPT_GO, _go_data())  # type: ignore[arg-type]
    kinds = []
    while True:
        opt, kind, _ = _option_reply(bystander)  # type: ignore[arg-type]
        kinds.append(kind)
        if kind == REP_ACK:
            break
    assert kinds[0] == REP_INFO
    # The server still serves a new client.
    ok = nbdinfo(f"nbds://localhost:{server.port}/?tls-certificates={pki['client']}", "--size")
    assert ok.returncode == 0, ok.stderr
    bystander.close()
    connections, _ = stop(server)
    assert connections["served"] == 2
    refused(connections, tls_handshake_failed=3)


# Safe defaults.


def test_the_network_is_refused_in_the_clear_and_bad_tls_options_are_one_line_errors(
    tmp_path: Path,
) -> None:
    # Nothing binds: each is refused before the server listens.
    r = run_cli("serve", "small-tlc", "--listen", "tcp://0.0.0.0:10809")
    assert_user_error(r, "--listen tcp://0.0.0.0:10809", "reaches other machines")
    assert "--insecure-network" in r.stderr
    keys = tmp_path / "keys.psk"
    keys.write_text("alice:00112233445566778899aabbccddeeff\n")
    r = run_cli("serve", "small-tlc", "--listen", "tcp://0.0.0.0:10809", "--tls-psk", str(keys),
                "--tls", "on")  # fmt: skip
    assert_user_error(r, "--listen tcp://0.0.0.0:10809", "TLS optional")
    assert_user_error(run_cli("serve", "small-tlc", "--tls", "yes"), "--tls", "off, on or require")
    assert_user_error(run_cli("serve", "small-tlc", "--tls", "require"), "--tls require",
                      "--tls-psk")  # fmt: skip
    assert_user_error(run_cli("serve", "small-tlc", "--max-connections", "0"),
                      "--max-connections 0", "1 to 1024")  # fmt: skip
    assert_user_error(run_cli("serve", "small-tlc", "--tls-psk", "a", "--tls-certificates", "b"),
                      "--tls-psk and --tls-certificates")  # fmt: skip
    missing = tmp_path / "none.psk"
    assert_user_error(run_cli("serve", "small-tlc", "--tls-psk", str(missing)), str(missing))
    secret = "0123456789abcdef0123456789abcdef"
    bad = tmp_path / "bad.psk"
    bad.write_text(f"alice:{secret}\nbob {secret}\n")
    r = run_cli("serve", "small-tlc", "--tls-psk", str(bad))
    assert_user_error(r, f"--tls-psk {bad}, line 2", "USER:HEXKEY")
    assert secret not in r.stdout + r.stderr
    assert_user_error(run_cli("serve", "small-tlc", "--tls-certificates", str(tmp_path)),
                      "server-cert.pem")  # fmt: skip


def test_the_unix_socket_is_owner_only_and_the_banner_says_who_can_connect(
    tmp_path: Path,
) -> None:
    server = start_server(tmp_path, "--clock", "logical")
    try:
        assert stat.S_IMODE(server.socket_path.stat().st_mode) == 0o600
    finally:
        _, _, err = server.stop()
    assert (
        "who can connect: this user's processes (and root's): the socket is mode 0600, "
        "in the clear, without authentication; at most 16 connections at once" in err
    )


def test_connections_beyond_the_limit_are_closed_and_counted(tmp_path: Path) -> None:
    server = start_server(tmp_path, "--clock", "logical", "--max-connections", "2")
    try:
        first, second = _connect(server.socket_path), _connect(server.socket_path)
        assert _go(first) == CAPACITY
        _recv(second, 18)  # greeted: the server took it
        with _connect(server.socket_path) as third:
            assert _closed(third)
        first.close()
        second.close()
        # Slots come back when connections end.
        deadline = time.monotonic() + 30
        while True:
            with _connect(server.socket_path) as again:
                try:
                    assert _go(again) == CAPACITY
                    break
                except EOFError:
                    assert time.monotonic() < deadline
                    time.sleep(0.1)
    finally:
        connections, _ = stop(server)
    assert connections["served"] >= 2
    assert connections["refused"]["too_many_connections"] >= 1


def test_an_export_name_must_match_exactly(tmp_path: Path) -> None:
    server = start_server(tmp_path, "--clock", "logical", "--export-name", "ssd")
    try:
        with _connect(server.socket_path) as s:
            _hello(s)
            for name in (b"", b"other"):
                _option(s, OPT_GO, _go_data(name))
                assert _option_reply(s)[:2] == (OPT_GO, REP_ERR_UNKNOWN)
            _option(s, OPT_ABORT)
            assert _option_reply(s)[:2] == (OPT_ABORT, REP_ACK)
        with _connect(server.socket_path) as s:
            _hello(s)
            _option(s, OPT_GO, _go_data(b"ssd"))
            kinds = [_option_reply(s)[1]]
            while kinds[-1] == REP_INFO:
                kinds.append(_option_reply(s)[1])
            assert kinds[0] == REP_INFO and kinds[-1] == REP_ACK, kinds
    finally:
        connections, _ = stop(server)
    assert connections["served"] == 1
    refused(connections, unknown_export=1)


def test_a_client_silent_in_its_handshake_is_cut_off(tmp_path: Path) -> None:
    server = start_server(tmp_path, "--clock", "logical")
    try:
        with _connect(server.socket_path) as s:
            _recv(s, 18)  # then nothing: the handshake limit (10 s) ends it
            start = time.monotonic()
            assert _closed(s)
            assert time.monotonic() - start < 25
    finally:
        connections, _ = stop(server)
    refused(connections, handshake_timeout=1)


@needs_libnbd
@needs_gnutls
def test_a_tls_1_2_client_gets_a_psk_suite(tmp_path: Path) -> None:
    """GnuTLS told by its system configuration to leave TLS 1.3 out: the server's TLS 1.2 PSK
    suites serve it."""
    psk = make_psk(tmp_path / "keys")
    config = tmp_path / "gnutls.conf"
    config.write_text("[overrides]\ndisabled-version = tls1.3\n")
    server = start_server(tmp_path, "--clock", "logical", "--tls-psk", str(psk))
    try:
        env = dict(os.environ, GNUTLS_SYSTEM_PRIORITY_FILE=str(config), GNUTLS_DEBUG_LEVEL="2")
        uri = f"nbds+unix://alice@/?socket={server.socket_path}&tls-psk-file={psk}"
        info = subprocess.run([NBDINFO or "nbdinfo", "--size", uri], capture_output=True,
                              text=True, timeout=120, env=env)  # fmt: skip
        assert "disabling version tls1.3" in info.stderr, info.stderr
        assert info.returncode == 0, info.stderr
        assert int(info.stdout) == CAPACITY
    finally:
        connections, _ = stop(server)
    refused(connections)


def test_connections_that_end_give_back_their_descriptors(tmp_path: Path) -> None:
    server = start_server(tmp_path, "--clock", "logical")
    fds = Path(f"/proc/{server.proc.pid}/fd")
    try:
        with _connect(server.socket_path) as s:
            assert _go(s) == CAPACITY
        before = len(list(fds.iterdir()))
        for _ in range(300):
            with _connect(server.socket_path) as s:
                _recv(s, 18)
        # The accepting thread forgets an ended connection within a few of its 10 ms turns.
        deadline = time.monotonic() + 30
        while len(list(fds.iterdir())) > before + 10 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(list(fds.iterdir())) <= before + 10
    finally:
        connections, _ = stop(server)
    assert connections["connected"] == 301


@needs_libnbd
@needs_gnutls
def test_tls_on_serves_clients_with_and_without_tls(tmp_path: Path) -> None:
    psk = make_psk(tmp_path / "keys")
    server = start_server(tmp_path, "--clock", "logical", "--tls-psk", str(psk), "--tls", "on")
    try:
        plain = f"nbd+unix:///?socket={server.socket_path}"
        tls = f"nbds+unix://alice@/?socket={server.socket_path}&tls-psk-file={psk}"
        for uri in (plain, tls):
            info = nbdinfo(uri, "--size")
            assert info.returncode == 0, info.stderr
            assert int(info.stdout) == CAPACITY
    finally:
        connections, printed = stop(server)
    assert connections["served"] == 2
    refused(connections)
    assert "over TLS with the key of a user in" in printed
    assert "or in the clear without authentication" in printed


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def test_out_of_descriptors_the_server_waits_rather_than_spins(tmp_path: Path) -> None:
    """With its descriptors used up, accept() fails (EMFILE) while a client waits in the
    backlog: the accepting thread waits its turn instead of retrying at once, forever."""
    import resource
    import sys

    sock, result = tmp_path / "nbd.sock", tmp_path / "session.json"

    def few_descriptors() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (96, 96))

    proc = subprocess.Popen([sys.executable, "-m", "ssdlab", "serve", "small-tlc", "--listen",
                             f"unix:{sock}", "--clock", "logical", "--quiet", "--json",
                             str(result), "--max-connections", "1024"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=few_descriptors)  # fmt: skip
    clients: list[socket.socket] = []
    server = Server(proc, sock, result)
    try:
        deadline = time.monotonic() + 60
        while not sock.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        time.sleep(0.5)
        # Connections until the server cannot take another (each holds its descriptors).
        for _ in range(200):
            s = _connect(sock, timeout=2)
            clients.append(s)
            try:
                _recv(s, 18)
            except (TimeoutError, EOFError, ConnectionResetError):
                break
        else:
            pytest.fail("the server took 200 connections on 96 descriptors")
        before = _cpu_s(proc.pid)
        time.sleep(4)
        spent = _cpu_s(proc.pid) - before
        assert spent < 0.5, f"{spent:.2f} s of CPU in 4 s while out of descriptors"
    finally:
        for s in clients:
            s.close()
        if proc.poll() is None:
            server.stop()


def test_a_stop_while_the_banner_prints_still_gives_the_sessions_result(tmp_path: Path) -> None:
    """SIGTERM becomes KeyboardInterrupt in Python; if it lands while the banner is printed,
    the session stops as it would a moment later, with its result."""
    from ssdlab import _core
    from ssdlab.api import Config

    def ready(address: str, access: str) -> None:
        raise KeyboardInterrupt

    result = json.loads(_core.serve(Config("small-tlc").to_json(), f"unix:{tmp_path / 's.sock'}",
                                    clock="logical", ready=ready))  # fmt: skip
    assert result["sim"]["stop_reason"] == "server stopped"
    assert result["job"]["serve"]["connections"]["connected"] == 0
