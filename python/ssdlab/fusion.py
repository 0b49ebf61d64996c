"""Seed 002's fusion device as a host FTL sees it: raw NAND and PCM behind a thin firmware.

``FusionDevice`` opens a fusion device (``seed002-fusion`` by default) and issues raw commands
one at a time: PCM reads and writes by byte address, NAND page reads and programs and block
erases by physical address. Each returns a :class:`Command` with its status and its simulated
submission and completion times (picoseconds). Arguments beyond the geometry raise
:class:`ssdlab.JobError` naming the argument; what the media refuses (a program out of order)
is a status. All logic is in the core (``ssdlab::driver::fusion_host``); this module only
converts. See docs/fusion.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from . import _core
from .api import Config, check_seed

__all__ = ["Command", "FusionDevice"]


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
        return self._dev.next_page(block)

    def pcm_line_writes(self, address: int) -> int:
        """Writes so far to the PCM line holding byte ``address``."""
        return self._dev.pcm_line_writes(address)

    def pcm_read(self, address: int, length: int, *, at_ps: int = 0) -> Command:
        return _command(self._dev.pcm_read(address, length, at_ps))

    def pcm_write(self, address: int, data: bytes, *, at_ps: int = 0) -> Command:
        return _command(self._dev.pcm_write(address, bytes(data), at_ps))

    def nand_read(self, page: int, pages: int = 1, *, at_ps: int = 0) -> Command:
        return _command(self._dev.nand_read(page, pages, at_ps))

    def nand_program(self, page: int, data: bytes, *, at_ps: int = 0) -> Command:
        """Program ``data`` from ``page`` on: whole pages, the last padded with 0xFF."""
        return _command(self._dev.nand_program(page, bytes(data), at_ps))

    def nand_erase(self, block: int, blocks: int = 1, *, at_ps: int = 0) -> Command:
        return _command(self._dev.nand_erase(block, blocks, at_ps))
