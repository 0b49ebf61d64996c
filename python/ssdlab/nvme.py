"""The register-level NVMe controller, as a host sees it.

``NvmeDevice`` builds a controller from a configuration, brings it up through its registers the
way Linux's nvme driver does (CC.EN, CSTS.RDY, Identify, Set Features, I/O queue creation) and
offers what nvme-cli shows: Identify Controller and Namespace, the SMART log, and an
``nvme list`` entry. Reads and writes go through PRPs in simulated host memory; completion
times come from the performance model. All logic is in the core (``ssdlab::nvme``); this module
only converts.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from . import _core
from .api import Config, Job, check_int, check_seed

__all__ = ["ZONE_ACTIONS", "ZONE_STATES", "NvmeAccessError", "NvmeDevice"]

# Zone Send Actions 01h–05h in order (ZNS, Zone Management Send), and the zone states the
# Report Zones reporting options 1–7 select, in nvme-cli's words.
ZONE_ACTIONS = ("close", "finish", "open", "reset", "offline")
ZONE_STATES = ("empty", "imp_opened", "exp_opened", "closed", "full", "readonly", "offline")

# Host memory read back in one call at most (the simulated memory is sparse; a larger read is a
# mistake, and would try to allocate it).
MAX_MEM_READ = 1 << 30


class NvmeAccessError(_core.SsdlabError):
    """A register, configuration-space or host-memory access of a size or range that does not
    exist. (The controller itself ignores such accesses from a guest, as hardware does; from
    Python they are a mistake worth saying.)"""


def _check(what: str, value: int, allowed: Iterable[int]) -> int:
    allowed = tuple(allowed)
    number = _check_range(what, value, 64)
    if number not in allowed:
        raise NvmeAccessError(f"{what}: got {value!r}, expected one of {allowed}")
    return number


def _check_range(what: str, value: Any, bits: int, lo: int = 0) -> int:
    """``value`` as an int from ``lo`` to 2^bits - 1 (numpy integers too), else an
    NvmeAccessError naming it: the core's conversion raises a bare OverflowError."""
    return check_int(what, value, lo, (1 << bits) - 1, error=NvmeAccessError)


class NvmeDevice:
    """An NVMe device built from ``config`` (a preset name, a TOML path or a :class:`Config`)."""

    def __init__(
        self,
        config: Config | str | os.PathLike[str],
        *,
        overrides: Mapping[str, Any] | Iterable[str] | None = None,
        seed: int = 1,
        lba_size: int = 4096,
        queue_depth: int = 1024,
    ) -> None:
        cfg = config if isinstance(config, Config) else Config.load(config, overrides)
        # The host driver would clamp it to what CAP.MQES allows, without a word.
        queue_depth = check_int("queue_depth", queue_depth, 2, 65536, error=NvmeAccessError)
        lba_size = _check_range("lba_size", lba_size, 32)
        self._config = cfg
        self._dev = _core.NvmeDevice(cfg.to_json(), check_seed(seed), lba_size, queue_depth)

    @property
    def config(self) -> Config:
        return self._config

    # Registers, configuration space and host memory.
    def mmio_read(self, offset: int, size: int = 4) -> int:
        size = _check("mmio_read size", size, (1, 2, 4, 8))
        offset = _check_range("mmio_read offset", offset, 64)
        return self._dev.mmio_read(offset, size)

    def mmio_write(self, offset: int, value: int, size: int = 4) -> None:
        size = _check("mmio_write size", size, (4, 8))
        offset = _check_range("mmio_write offset", offset, 64)
        value = _check_range("mmio_write value", value, 8 * size)
        self._dev.mmio_write(offset, value, size)

    def config_read(self, offset: int, size: int = 4) -> int:
        size = _check("config_read size", size, (1, 2, 4))
        offset = _check_range("config_read offset", offset, 12)
        return self._dev.config_read(offset, size)

    def config_write(self, offset: int, value: int, size: int = 4) -> None:
        size = _check("config_write size", size, (1, 2, 4))
        offset = _check_range("config_write offset", offset, 12)
        value = _check_range("config_write value", value, 8 * size)
        self._dev.config_write(offset, value, size)

    def mem_read(self, addr: int, length: int) -> bytes:
        addr = _check_range("mem_read addr", addr, 64)
        length = _check_range("mem_read length", length, 64)
        if not 0 <= length <= MAX_MEM_READ or addr + length > 1 << 64:
            raise NvmeAccessError(
                f"mem_read length: got {length} bytes at {addr:#x}, expected 0 to"
                f" {MAX_MEM_READ} bytes within the 64-bit address space"
            )
        return self._dev.mem_read(addr, length)

    def mem_write(self, addr: int, data: bytes) -> None:
        addr = _check_range("mem_write addr", addr, 64)
        if addr + len(data) > 1 << 64:
            raise NvmeAccessError(f"mem_write: {len(data)} bytes at {addr:#x} pass 2^64")
        self._dev.mem_write(addr, data)

    # Admin commands.
    def identify(self, cns: int, nsid: int = 0) -> bytes:
        """The raw 4096-byte Identify data structure for ``cns``."""
        return self._dev.identify(_check_range("cns", cns, 32), _check_range("nsid", nsid, 32))

    def get_log(self, lid: int, length: int) -> bytes:
        return self._dev.get_log(_check_range("lid", lid, 8), _check_range("length", length, 32))

    def id_ctrl(self) -> dict[str, Any]:
        """Identify Controller with nvme-cli's JSON keys."""
        return self._dev.id_ctrl()

    def id_ns(self, nsid: int = 1) -> dict[str, Any]:
        """Identify Namespace with nvme-cli's JSON keys."""
        return self._dev.id_ns(_check_range("nsid", nsid, 32))

    def smart_log(self) -> dict[str, Any]:
        """The SMART / Health log with nvme-cli's JSON keys (temperature in Kelvin)."""
        return self._dev.smart_log()

    def fdp_log(self, page: str, host_events: bool = False) -> dict[str, Any]:
        """A Flexible Data Placement log page of endurance group 1, with nvme-cli's JSON keys:
        ``configs`` (20h), ``usage`` (21h, reclaim unit handle usage), ``stats`` (22h: host and
        media bytes written, media bytes erased) or ``events`` (23h; ``host_events``: the host
        events, else the controller events). Needs a config with ``[fdp]`` (docs/fdp.md)."""
        return self._dev.fdp_log(page, host_events)

    def list_entry(self) -> dict[str, Any]:
        """This device as an entry of ``nvme list -o json``'s ``Devices``."""
        ctrl = self.id_ctrl()
        ns = self.id_ns()
        lbaf = ns["lbafs"][ns["flbas"] & 0xF]
        sector = 1 << lbaf["ds"]
        return {
            "NameSpace": 1,
            "DevicePath": "/dev/nvme0n1",
            "GenericPath": "/dev/ng0n1",
            "Firmware": ctrl["fr"],
            "Index": 0,
            "ModelNumber": ctrl["mn"],
            "SerialNumber": ctrl["sn"],
            "UsedBytes": ns["nuse"] * sector,
            "MaximumLBA": ns["nsze"],
            "PhysicalSize": ns["nsze"] * sector,
            "SectorSize": sector,
        }

    # I/O commands.
    def read(self, slba: int, nlb: int) -> bytes:
        return self._dev.read(_check_range("slba", slba, 64), _check_range("nlb", nlb, 32))

    def write(self, slba: int, data: bytes) -> dict[str, Any]:
        """Write whole blocks; returns the completion (status, times in picoseconds)."""
        return self._dev.write(_check_range("slba", slba, 64), data)

    def flush(self) -> dict[str, Any]:
        return self._dev.flush()

    def deallocate(self, slba: int, nlb: int) -> dict[str, Any]:
        # A range of no blocks deallocates nothing; it was accepted without a word.
        nlb = _check_range("deallocate nlb", nlb, 32, lo=1)
        return self._dev.deallocate(_check_range("deallocate slba", slba, 64), nlb)

    # Zoned Namespace Command Set (a config with [zns]; docs/zns.md).
    def _require_zones(self, what: str) -> None:
        if not self._dev.zoned:
            raise NvmeAccessError(
                f"{what}: {self._config.name} has no zones (a zoned drive has a [zns] section;"
                " the preset zns-tlc is one)"
            )

    def zns_id_ns(self) -> dict[str, Any]:
        """The ZNS Identify Namespace with nvme-cli's ``zns id-ns`` JSON keys."""
        self._require_zones("zns id-ns")
        return self._dev.zns_id_ns()

    def zns_id_ctrl(self) -> dict[str, Any]:
        """The ZNS Identify Controller with nvme-cli's ``zns id-ctrl`` JSON keys."""
        self._require_zones("zns id-ctrl")
        return self._dev.zns_id_ctrl()

    def report_zones(
        self,
        slba: int = 0,
        *,
        state: str | None = None,
        partial: bool = False,
        max_zones: int | None = None,
    ) -> dict[str, Any]:
        """Report Zones from the zone of ``slba`` as nvme-cli's ``zns report-zones`` JSON
        (``nr_zones``, ``zone_list``), only zones in ``state`` when given (one of
        ``ZONE_STATES``), at most ``max_zones``."""
        self._require_zones("report-zones")
        if state is not None and state not in ZONE_STATES:
            raise NvmeAccessError(
                f"report-zones state: got {state!r}, expected one of {', '.join(ZONE_STATES)}"
            )
        option = 0 if state is None else ZONE_STATES.index(state) + 1
        slba = _check_range("report-zones slba", slba, 64)
        most = (1 << 64) - 1 if max_zones is None else _check_range("max_zones", max_zones, 64, 1)
        return self._dev.report_zones(slba, option, partial, most)

    def zone_mgmt_send(
        self, action: str, slba: int = 0, *, select_all: bool = False
    ) -> dict[str, Any]:
        """Zone Management Send: ``action`` (one of ``ZONE_ACTIONS``) on the zone starting at
        ``slba``, or on every zone with ``select_all``. Returns the completion: a refusal is
        the drive's status (``status_name``), not an exception."""
        self._require_zones("zone-mgmt-send")
        if action not in ZONE_ACTIONS:
            raise NvmeAccessError(
                f"zone action: got {action!r}, expected one of {', '.join(ZONE_ACTIONS)}"
            )
        code = ZONE_ACTIONS.index(action) + 1
        return self._dev.zone_mgmt_send(_check_range("slba", slba, 64), code, bool(select_all))

    def zone_append(self, zslba: int, data: bytes) -> dict[str, Any]:
        """Zone Append whole blocks to the zone starting at ``zslba``; the completion has
        ``lba``, where the data went, when it succeeded."""
        self._require_zones("zone-append")
        return self._dev.zone_append(_check_range("zslba", zslba, 64), data)

    @property
    def zoned(self) -> bool:
        """Whether the namespace is zoned (the Zoned Namespace Command Set)."""
        return self._dev.zoned

    # Workloads.
    def run_job(self, job: Job | str | os.PathLike[str]) -> dict[str, Any]:
        """Run a job (a :class:`Job` or a job TOML file) through the driver; see
        docs/nvme-controller.md for how its requests are issued."""
        j = job if isinstance(job, Job) else Job.load(job)
        return self._dev.run_job(j.to_json())

    def run_trace(
        self,
        path: str | os.PathLike[str],
        *,
        format: str | None = None,
        iodepth: int = 32,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """Replay a trace file through the driver, ``iodepth`` commands per doorbell (at least
        1; a depth beyond the I/O queue's size less one is issued as that many, the most the
        queue holds)."""
        iodepth = _check_range("iodepth", iodepth, 32)
        limit = None if limit is None else _check_range("limit", limit, 64)
        return self._dev.run_trace(os.fspath(path), format, iodepth, limit)

    # State.
    @property
    def clock_ps(self) -> int:
        return self._dev.clock_ps

    @property
    def serial(self) -> str:
        return self._dev.serial

    @property
    def model(self) -> str:
        return self._dev.model

    @property
    def lba_size(self) -> int:
        return self._dev.lba_size

    @property
    def nsze(self) -> int:
        return self._dev.nsze

    @property
    def blocks_in_use(self) -> int:
        return self._dev.blocks_in_use

    @property
    def precondition_seconds(self) -> float:
        """Wall seconds the config's ``[precondition]`` took when the device was built."""
        return self._dev.precondition_seconds

    @property
    def steady_state(self) -> dict[str, Any] | None:
        """What a ``fill = "steady-state"`` preconditioning reached (``write_amplification``,
        ``converged``, ``overwrite``, as a job result's ``device.steady_state``), or None."""
        return self._dev.steady_state

    @property
    def max_transfer(self) -> int:
        return self._dev.max_transfer

    @property
    def intx(self) -> bool:
        return self._dev.intx

    @property
    def msix_messages(self) -> list[tuple[int, int, int, int]]:
        """(time in ps, vector, address, data) of every MSI-X message sent."""
        return self._dev.msix_messages
