"""A power cut of the live device (``ssdlab serve --power-cuts``, SIGUSR1 or
``--power-cut-event``): clients are disconnected, the backing file holds what the recovered drive
holds (what a client reading after the restart sees), and the server goes on serving it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbd_rig as n

# A small volatile DRAM write cache: writes complete once in it, a FLUSH writes them out.
WRITE_BACK = ("--set", 'cache.capacity="4MiB"', "--set", 'cache.mode="write-back"')
UNIT = 4096


def read(s: object, handle: int, offset: int) -> bytes:
    n.request(s, n.CMD_READ, handle, offset, UNIT)  # type: ignore[arg-type]
    assert n.reply(s) == (0, handle)  # type: ignore[arg-type]
    return n.recv(s, UNIT)  # type: ignore[arg-type]


def test_sigusr1_cuts_the_power_the_file_holds_the_recovered_drive_and_clients_reconnect(
    tmp_path: Path,
) -> None:
    img = tmp_path / "img"
    srv = n.start_server(tmp_path, "--power-cuts", "--data", f"file:{img}", "--clock",
                         "logical", *WRITE_BACK)  # fmt: skip
    s = n.connect(srv.socket_path)
    n.go(s)
    a, b, c = b"A" * UNIT, b"B" * UNIT, b"C" * UNIT
    n.request(s, n.CMD_WRITE, 1, 0, UNIT, a)
    assert n.reply(s) == (0, 1)
    n.request(s, n.CMD_FLUSH, 2, 0, 0)
    assert n.reply(s) == (0, 2)
    # A FUA write is durable when acknowledged (the server flushes after it).
    n.request(s, n.CMD_WRITE, 5, 16 * UNIT, UNIT, c, flags=1 << 0)
    assert n.reply(s) == (0, 5)
    # Acknowledged, never flushed: in the volatile cache only.
    n.request(s, n.CMD_WRITE, 3, 0, UNIT, b)
    assert n.reply(s) == (0, 3)
    n.request(s, n.CMD_WRITE, 4, 8 * UNIT, UNIT, c)
    assert n.reply(s) == (0, 4)
    assert img.read_bytes()[:UNIT] == b  # the store had the write before the cut
    srv.proc.send_signal(signal.SIGUSR1)
    s.settimeout(10)
    assert s.recv(1) == b""  # disconnected, as from a pulled drive
    s.close()

    s = n.connect(srv.socket_path)
    n.go(s)
    # The flushed data and the FUA write survive; the cache's lines are gone.
    got = [read(s, 10 + k, off) for k, off in enumerate((0, 8 * UNIT, 16 * UNIT))]
    assert got == [a, bytes(UNIT), c]
    data = img.read_bytes()
    assert [data[o : o + UNIT] for o in (0, 8 * UNIT, 16 * UNIT)] == got
    # The recovered drive takes writes like any other.
    n.request(s, n.CMD_WRITE, 20, 0, UNIT, b)
    assert n.reply(s) == (0, 20)
    assert read(s, 21, 0) == b
    s.close()
    rc, _out, err = srv.stop()
    assert rc == 0, err
    assert "power cut at event" in err and "serving the recovered drive" in err, err
    result = srv.session()
    cuts = result["job"]["serve"]["power_cuts"]["cuts"]
    assert len(cuts) == 1
    cut = cuts[0]
    assert cut["cache_units_lost"] == 2 and cut["acknowledged_writes_lost"] == 2
    assert cut["lost_units"] == [0, 8]
    assert cut["connections_closed"] == 1 and cut["requests_dropped"] == 0
    assert cut["store"] == {
        "units_journaled": 3,
        "units_restored": 2,
        "units_unmatched": 0,
        "unmatched": [],
        "units_zeroed_unreadable": 0,
    }
    assert cut["recovery_us"] > 0 and cut["pages_scanned"] > 0
    # The result's power_loss is the cut's; the figures are the restarted drive's.
    assert result["power_loss"]["event"] == cut["event"]
    assert result["ops"]["write"]["count"] == 1


def test_a_cut_at_an_event_is_deterministic_on_the_logical_clock(tmp_path: Path) -> None:
    """Cut at a fixed device event while a QD1 client writes: two sessions give the same
    bytes and the same report."""
    images = []
    reports = []
    for k in range(2):
        d = tmp_path / f"s{k}"
        d.mkdir()
        img = d / "img"
        srv = n.start_server(d, "--power-cut-event", "400", "--data", f"file:{img}", "--clock",
                             "logical", *WRITE_BACK)  # fmt: skip
        s = n.connect(srv.socket_path)
        n.go(s)
        answered = 0
        try:
            for i in range(200):
                payload = bytes([i % 251 + 1]) * UNIT
                n.request(s, n.CMD_WRITE, i, (i % 37) * UNIT, UNIT, payload)
                assert n.reply(s) == (0, i)
                answered += 1
                if i % 10 == 9:
                    n.request(s, n.CMD_FLUSH, 1000 + i, 0, 0)
                    assert n.reply(s) == (0, 1000 + i)
        except (EOFError, ConnectionError):
            pass
        assert 0 < answered < 200
        rc, _out, err = srv.stop()
        assert rc == 0, err
        cut = srv.session()["job"]["serve"]["power_cuts"]["cuts"][0]
        assert cut["event"] == 400 and cut["store"]["units_unmatched"] == 0
        images.append(img.read_bytes()[: 37 * UNIT])
        reports.append({k: v for k, v in cut.items() if k != "wall_s"} | {"answered": answered})
    assert images[0] == images[1]
    assert reports[0] == reports[1]


def test_cut_options_are_checked(tmp_path: Path) -> None:
    def serve(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ssdlab", "serve", "small-tlc", "--listen",
             f"unix:{tmp_path / 's.sock'}", "--quiet", *args],
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    r = serve("--power-cut-event", "10")
    assert r.returncode == 2 and "--power-cut-event: expected --clock logical" in r.stderr
    assert "\n" not in r.stderr.strip().splitlines()[-1]
    r = serve("--log-data", str(tmp_path / "d"))
    assert r.returncode == 2 and "--log-data: expected --log too" in r.stderr
    r = serve("--power-cuts", "--set", 'ftl.kind="block"', "--set", 'ftl.map_unit="16KiB"')
    assert r.returncode == 2 and "--power-cuts: the power-loss model covers" in r.stderr


def test_sigusr1_without_power_cuts_is_refused_and_the_session_goes_on(tmp_path: Path) -> None:
    srv = n.start_server(tmp_path)
    srv.proc.send_signal(signal.SIGUSR1)
    time.sleep(1.0)
    s = n.connect(srv.socket_path)
    n.go(s)
    s.close()
    rc, _out, err = srv.stop()
    assert rc == 0, err
    assert "SIGUSR1: no power cut, the session was started without --power-cuts" in err
    assert json.loads(srv.result.read_text())["job"]["serve"]["power_cuts"] is None
