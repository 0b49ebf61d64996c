"""Seed 002's fusion device as a host FTL sees it: raw NAND and PCM behind a thin firmware.

``Hfsl`` runs the seed's host-side FTL on it, one host request per call: reads and writes by
logical address, each with its application id and metadata flag, and where each logical page
lives. ``FusionDevice`` opens a fusion device (``seed002-fusion`` by default) and issues raw
commands one at a time: PCM reads and writes by byte address, NAND page reads and programs and block
erases by physical address. Each returns a :class:`Command` with its status and its simulated
submission and completion times (picoseconds). Arguments beyond the geometry raise
:class:`ssdlab.JobError` naming the argument; what the media refuses (a program out of order)
is a status. All logic is in the core (``ssdlab::driver::fusion_host``); this module only
converts. See docs/fusion.md.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from . import _core
from .api import Config, check_int, check_seed

__all__ = ["Command", "FusionDevice", "Hfsl", "HostRequest"]


@dataclass(frozen=True)
class Command:
    """One raw command's outcome."""

    status: str
    """``ok``, or what the device refused: ``program_order``, ``misaligned``, …"""
    submitted_ps: int
    completed_ps: int
    latency_ps: int
    data: bytes = b""
    """A read's bytes."""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def latency_us(self) -> float:
        return self.latency_ps / 1e6


def _unsigned(bits: int = 64, **args: Any) -> list[int]:
    """Each argument as an int from 0 to 2^bits - 1 (numpy integers too), else a JobError
    naming it (not the bare OverflowError the conversion would raise)."""
    return [check_int(name, value, 0, (1 << bits) - 1) for name, value in args.items()]


def _command(d: dict[str, Any]) -> Command:
    return Command(**d)


class FusionDevice:
    """A fusion device built from ``config`` (a preset name, a TOML path or a :class:`Config`)."""

    def __init__(
        self,
        config: Config | str | os.PathLike[str] = "seed002-fusion",
        *,
        overrides: Mapping[str, Any] | Iterable[str] | None = None,
        seed: int = 1,
    ) -> None:
        cfg = config if isinstance(config, Config) else Config.load(config, overrides)
        self.config = cfg
        self._dev = _core.FusionDevice(cfg.to_json(), check_seed(seed))
        self.info: dict[str, int] = self._dev.info()
        """The hardware information the firmware publishes: channel and chip counts, page,
        block and line sizes, block count, the size of each space."""

    @property
    def now_ps(self) -> int:
        """The simulated present: when the last command completed."""
        return self._dev.now_ps()

    def erase_counts(self) -> list[int]:
        """The P/E count of every NAND block."""
        return self._dev.erase_counts()

    def next_page(self, block: int) -> int:
        """The next page of ``block`` a program may go to (pages per block when it is full)."""
        (block,) = _unsigned(block=block)
        return self._dev.next_page(block)

    def pcm_line_writes(self, address: int) -> int:
        """Writes so far to the PCM line holding byte ``address``."""
        (address,) = _unsigned(address=address)
        return self._dev.pcm_line_writes(address)

    def pcm_read(self, address: int, length: int, *, at_ps: int = 0) -> Command:
        address, length, at_ps = _unsigned(address=address, length=length, at_ps=at_ps)
        return _command(self._dev.pcm_read(address, length, at_ps))

    def pcm_write(self, address: int, data: bytes, *, at_ps: int = 0) -> Command:
        address, at_ps = _unsigned(address=address, at_ps=at_ps)
        return _command(self._dev.pcm_write(address, bytes(data), at_ps))

    def nand_read(self, page: int, pages: int = 1, *, at_ps: int = 0) -> Command:
        page, pages, at_ps = _unsigned(page=page, pages=pages, at_ps=at_ps)
        return _command(self._dev.nand_read(page, pages, at_ps))

    def nand_program(self, page: int, data: bytes, *, at_ps: int = 0) -> Command:
        """Program ``data`` from ``page`` on: whole pages, the last padded with 0xFF."""
        page, at_ps = _unsigned(page=page, at_ps=at_ps)
        return _command(self._dev.nand_program(page, bytes(data), at_ps))

    def nand_erase(self, block: int, blocks: int = 1, *, at_ps: int = 0) -> Command:
        block, blocks, at_ps = _unsigned(block=block, blocks=blocks, at_ps=at_ps)
        return _command(self._dev.nand_erase(block, blocks, at_ps))


@dataclass(frozen=True)
class HostRequest:
    """One host request's outcome under HFSL (simulated picoseconds)."""

    submitted_ps: int
    """Its arrival: the simulated present, or ``at_ps`` if later."""
    completed_ps: int
    """When its last raw command completed."""
    latency_ps: int
    raw_commands: int
    """The raw PCM and NAND commands it became (0: a read of pages never written)."""
    power_cut: bool = False
    """The power failed during the call (:meth:`Hfsl.arm_power_cut`): :meth:`Hfsl.restart`
    next. ``completed_ps`` is then the cut's time unless the request was acknowledged."""
    acknowledged: bool = True
    """The request completed (before the cut, if there was one)."""
    version: int = 0
    """Its number among the host requests started (from 1): for a write, what
    :meth:`Hfsl.read_back` reports for the sub-pages that hold its bytes."""
    data: bytes | None = None
    """A read's bytes, with ``track_data`` (None otherwise, for writes, and for a read the
    power cut)."""
    torn_sub_pages: int = 0
    """Sub-pages of a read that a cut write left torn: their bytes are neither write's whole,
    and read as zeros here."""

    @property
    def latency_us(self) -> float:
        return self.latency_ps / 1e6


DEFAULT_LOGICAL_BYTES = 1 << 30


class Hfsl:
    """HFSL, seed 002's host-side FTL, on the fusion device ``config`` describes (with its
    ``[hfsl]``: SSW, fusion method, GC, write protection), over ``logical_bytes`` of logical
    space (1 GiB by default: the map holds an entry per 2 KiB page, so the whole 32 GB NAND
    would take some 400 MB). Each call runs one host request to completion.

    A write into a range another application owns (``hfsl.protect``) raises
    :class:`ssdlab.JobError` naming both applications and changes nothing; so does a range
    beyond the logical space.

    With ``track_data=True`` HFSL keeps a model of the data on the media (each sub-page holds
    the number of the write request whose bytes it holds), and the power may be cut: at a
    device event (:meth:`arm_power_cut`) or between requests (:meth:`cut_power`); then
    :meth:`restart` recovers the map from the PCM and reports what was lost. Writes may then
    carry bytes (``data=``) and reads return them: each write's bytes are kept per sub-page
    under its number, and a read takes each sub-page's bytes from the write the media model
    says it holds, so what a read returns after a cut is what the media kept. The bytes are
    kept for the object's life (as much memory as the data written).
    """

    def __init__(
        self,
        config: Config | str | os.PathLike[str] = "seed002-fusion",
        *,
        overrides: Mapping[str, Any] | Iterable[str] | None = None,
        logical_bytes: int = DEFAULT_LOGICAL_BYTES,
        seed: int = 1,
        track_data: bool = False,
    ) -> None:
        cfg = config if isinstance(config, Config) else Config.load(config, overrides)
        self.config = cfg
        (logical_bytes,) = _unsigned(logical_bytes=logical_bytes)
        self._hfsl = _core.Hfsl(cfg.to_json(), logical_bytes, check_seed(seed), bool(track_data))
        self.info: dict[str, int] = self._hfsl.info()
        """The device's hardware information (as :attr:`FusionDevice.info`), and
        ``sub_page_bytes``, the unit HFSL tracks data in."""
        self._track = bool(track_data)
        self._sub = self.info["sub_page_bytes"]
        self._per_page = self.info["nand_page_bytes"] // self._sub
        # (write number, logical sub-page) -> that sub-page's bytes as the write left it.
        self._bytes: dict[tuple[int, int], bytes] = {}

    @property
    def logical_bytes(self) -> int:
        return self._hfsl.logical_bytes()

    @property
    def now_ps(self) -> int:
        return self._hfsl.now_ps()

    def write(
        self,
        offset: int,
        length: int | None = None,
        *,
        data: bytes | None = None,
        app: int = 0,
        meta: bool = False,
        at_ps: int = 0,
    ) -> HostRequest:
        """Write ``length`` bytes at logical byte ``offset`` as application ``app``, or the
        bytes ``data`` (needs ``track_data``; ``length`` is then its length); ``meta`` flags
        it metadata (it goes to PCM whatever its size)."""
        if data is not None:
            if not self._track:
                raise ValueError("data: writing bytes needs Hfsl(..., track_data=True)")
            data = bytes(data)
            if length is not None and length != len(data):
                raise ValueError(f"length: got {length}, expected len(data) = {len(data)}")
            length = len(data)
        if length is None:
            raise ValueError("length: missing, expected a byte count (or data=)")
        offset, length, at_ps = _unsigned(offset=offset, length=length, at_ps=at_ps)
        (app,) = _unsigned(32, app=app)
        # What each touched sub-page will hold: its bytes now, overlaid with the new ones (a
        # write of part of a sub-page keeps the rest, as HFSL's merge does).
        staged = self._stage(offset, data) if data is not None else {}
        done = self._hfsl.submit(True, offset, length, app, bool(meta), at_ps)
        for sub, content in staged.items():
            self._bytes[(done["version"], sub)] = content
        return HostRequest(**done)

    def read(self, offset: int, length: int, *, app: int = 0, at_ps: int = 0) -> HostRequest:
        """Read ``length`` bytes at logical byte ``offset``; with ``track_data`` the request
        carries them (``data``): bytes never written read as zeros."""
        offset, length, at_ps = _unsigned(offset=offset, length=length, at_ps=at_ps)
        (app,) = _unsigned(32, app=app)
        done = self._hfsl.submit(False, offset, length, app, False, at_ps)
        if not self._track or done["power_cut"]:
            return HostRequest(**done)
        data, torn = self._gather(offset, length)
        return HostRequest(**done, data=data, torn_sub_pages=torn)

    def _held(self, offset: int, end: int) -> Iterator[tuple[int, bytes, bool]]:
        """Each logical sub-page touching bytes ``offset`` to ``end`` as the media model holds
        it: (sub-page, its bytes, torn), reading each logical page's write numbers once."""
        versions: dict[int, list[int]] = {}
        for sub in range(offset // self._sub, -(-end // self._sub)):
            lpn, k = divmod(sub, self._per_page)
            if lpn not in versions:
                versions[lpn] = self._hfsl.read_back(lpn)
            version = versions[lpn][k]
            if version == -1:
                yield sub, bytes(self._sub), True
            else:
                # A write made without data= left no bytes: zeros, as for one never written.
                yield sub, self._bytes.get((version, sub), bytes(self._sub)), False

    def _stage(self, offset: int, data: bytes) -> dict[int, bytes]:
        out: dict[int, bytes] = {}
        end = offset + len(data)
        if end > self.logical_bytes:
            return out  # the core refuses the request, naming the range
        for sub, held, _ in self._held(offset, end):
            base = sub * self._sub
            page = bytearray(held)
            lo, hi = max(offset, base), min(end, base + self._sub)
            page[lo - base : hi - base] = data[lo - offset : hi - offset]
            out[sub] = bytes(page)
        return out

    def _gather(self, offset: int, length: int) -> tuple[bytes, int]:
        out = bytearray()
        torn = 0
        end = offset + length
        for sub, held, was_torn in self._held(offset, end):
            torn += was_torn
            base = sub * self._sub
            out += held[max(offset, base) - base : min(end, base + self._sub) - base]
        return bytes(out), torn

    def location(self, lpn: int) -> str | None:
        """Where logical page ``lpn`` lives: ``"pcm"``, ``"nand"``, or None (never written)."""
        (lpn,) = _unsigned(lpn=lpn)
        return self._hfsl.location(lpn)

    def erase_counts(self) -> list[int]:
        """The P/E count of every NAND block."""
        return self._hfsl.erase_counts()

    def report(self) -> dict[str, Any]:
        """What HFSL did so far: host requests, raw commands, ``counters`` (NAND updates,
        programs, erases, PCM reads and writes, evictions, GC), where data lives, refusals."""
        return json.loads(self._hfsl.report_json())

    @property
    def events(self) -> int:
        """Device events handled so far (a power cut is armed at an event count)."""
        return self._hfsl.events()

    def arm_power_cut(self, event: int) -> None:
        """Cut the power once the device has handled ``event`` events in all (more than
        :attr:`events`): the call whose request gets there returns with ``power_cut`` set.
        Armed while the power is off, it counts the restarted device's events (from 0), so it
        may cut the :meth:`restart` itself. Needs ``track_data``."""
        (event,) = _unsigned(event=event)
        self._hfsl.arm_power_cut(event)

    def cut_power(self) -> None:
        """Cut the power now, between requests: what HFSL holds in DRAM is lost."""
        self._hfsl.cut_power()

    def restart(self) -> dict[str, Any]:
        """The power comes back: HFSL reads its map back from the PCM's map area and rebuilds
        it. Returns the cut and the restart as a run's ``hfsl.power_cut`` block:
        ``recovery_us``, ``map_bytes_read``, ``lost_pages`` and ``lost_sub_pages`` (what no
        longer reads back its acknowledged write), and more. If a cut armed while the power
        was off fires first, ``restart_cut`` is true, the loss counts wait, and the power is
        off again: restart again."""
        return json.loads(self._hfsl.restart_json())

    def halt(self) -> dict[str, int]:
        """Halt (seed 002 section 2.6.1): write every map entry changed since it was last
        written to the PCM (none with ``hfsl.map_store = "pcm"``). Returns ``took_ps`` and
        ``bytes``."""
        took, written = self._hfsl.halt()
        return {"took_ps": took, "bytes": written}

    def read_back(self, lpn: int) -> list[int]:
        """What logical page ``lpn``'s sub-pages hold, read through the map: for each, the
        number of the write request (counted from 1) whose bytes it holds, 0 if never written,
        -1 if a cut write left it torn. Needs ``track_data``."""
        (lpn,) = _unsigned(lpn=lpn)
        return self._hfsl.read_back(lpn)
