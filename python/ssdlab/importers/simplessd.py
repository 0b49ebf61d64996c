"""``ssdlab import simplessd``: SimpleSSD's .cfg as an ssdlab config (docs/import.md).

Section and key names, units and defaults are SimpleSSD's (github.com/SimpleSSD/SimpleSSD at
commit 2be3716): each section's ``config.cc`` (``cpu/``, ``dram/``, ``ftl/``, ``hil/nvme/``,
``hil/sata/``, ``hil/ufs/``, ``icl/``, ``pal/``) names its keys and gives a key left out its
default; ``config/sample.cfg`` documents them. SimpleSSD's times are picoseconds, sizes bytes,
the channel's DMA speed MT/s and its width bits. A key SimpleSSD does not know is an error here
(SimpleSSD prints "not handled" and goes on).

The file is INI as SimpleSSD's bundled inih reads it: ``[section]``, ``key = value`` (or
``key: value``), whole-line comments with ``#`` or ``;``, and a value's trailing ``# ...`` is a
comment (SimpleSSD's number parsing stops there). It is read here line by line rather than with
``configparser``, so that every error can name its line.
"""

from __future__ import annotations

import difflib
import os
import re

from .. import _core
from ..api import Job
from ..files import read_input_text
from .common import Imported, ImportInputError, Reader, duration, size

# Each section's keys and SimpleSSD's default for a key left out (the config.cc files, 2be3716).
KEYS: dict[str, dict[str, str]] = {
    "cpu": {
        "ClockSpeed": "400000000",
        "HILCoreCount": "1",
        "ICLCoreCount": "1",
        "FTLCoreCount": "1",
    },
    "dram": {
        **{k: "" for k in ("Model", "Channel", "Rank", "Bank", "Chip", "BusWidth", "BurstLength")},
        **{k: "" for k in ("ChipSize", "PageSize", "tCK", "tRCD", "tCL", "tRP", "tRAS", "tWR")},
        **{k: "" for k in ("tRTP", "tBURST", "tCCD_L", "tRFC", "tREFI", "tWTR", "tRTW", "tCS")},
        **{k: "" for k in ("tRRD", "tRRD_L", "tXAW", "tXP", "tXPDLL", "tXS", "tXSDLL")},
    },
    "ftl": {
        "MappingMode": "0",
        "OverProvisioningRatio": "0.25",
        "GCThreshold": "0.05",
        "EraseThreshold": "100000",
        "FillingMode": "0",
        "FillRatio": "0.0",
        "InvalidPageRatio": "0.0",
        "GCMode": "0",
        "GCReclaimBlocks": "1",
        "GCReclaimThreshold": "0.1",
        "EvictPolicy": "0",
        "DChoiceParam": "3",
        "EnableRandomIOTweak": "1",
    },
    "nvme": {
        "PCIEGeneration": "2",
        "PCIELane": "4",
        "AXIBusWidth": "2",
        "AXIClock": "250000000",
        "FIFOTransferUnit": "4096",
        "WorkInterval": "50000",
        "MaxRequestCount": "4",
        "MaxIOCQueue": "16",
        "MaxIOSQueue": "16",
        "WRRHigh": "2",
        "WRRMedium": "2",
        "DefaultNamespace": "1",
        "LBASize": "512",
        "EnableDiskImage": "0",
        "StrictSizeCheck": "0",
        "DiskImageFile": "",
        "UseCopyOnWriteDisk": "0",
    },
    "sata": {
        "PCIEGeneration": "2",
        "PCIELane": "4",
        "AXIBusWidth": "2",
        "AXIClock": "250000000",
        "SATAMode": "2",
        "WorkInterval": "50000",
        "MaxRequestCount": "4",
        "LBASize": "512",
        "EnableDiskImage": "0",
        "StrictSizeCheck": "0",
        "DiskImageFile": "",
        "UseCopyOnWriteDisk": "0",
    },
    "ufs": {
        k: ""
        for k in (
            "WorkInterval",
            "MaxRequestCount",
            "LBASize",
            "EnableDiskImage",
            "StrictSizeCheck",
            "DiskImageFile",
            "UseCopyOnWriteDisk",
            "AXIBusWidth",
            "AXIClock",
            "MPHYMode",
            "MPHYLane",
        )
    },
    "icl": {
        "EnableReadCache": "0",
        "EnableWriteCache": "1",
        "EnableReadPrefetch": "0",
        "EvictPolicy": "2",
        "EvictMode": "1",
        "CacheSize": "33554432",
        "CacheWaySize": "1",
        "ReadPrefetchCount": "1",
        "ReadPrefetchRatio": "0.5",
        "ReadPrefetchMode": "1",
        "CacheLatency": "10",
    },
    "pal": {
        "Channel": "8",
        "Package": "4",
        "Die": "2",
        "Plane": "1",
        "Block": "512",
        "Page": "512",
        "PageSize": "16384",
        "EnableMultiPlaneOperation": "1",
        "NANDType": "1",
        "LSBRead": "40000000",
        "LSBWrite": "500000000",
        "CSBRead": "0",
        "CSBWrite": "0",
        "MSBRead": "65000000",
        "MSBWrite": "1300000000",
        "Erase": "3500000000",
        "DMASpeed": "400",
        "DMAWidth": "8",
        "SuperblockSize": "",
        "PageAllocation": "",
        **{k: "" for k in ("Voltage", "ReadCurrent", "ProgramCurrent", "EraseCurrent")},
        **{k: "" for k in ("IdleCurrent", "StandbyCurrent")},
    },
}
KEYS["ufs"]["EnableDiskImage"] = "0"

# Keys whose value, as given, changes nothing ssdlab could model: no warning for these values.
INERT = {
    ("nvme", "EnableDiskImage"): {"0"},
    ("nvme", "StrictSizeCheck"): {"0"},
    ("nvme", "UseCopyOnWriteDisk"): {"0"},
    ("sata", "EnableDiskImage"): {"0"},
    ("sata", "StrictSizeCheck"): {"0"},
    ("sata", "UseCopyOnWriteDisk"): {"0"},
    ("nvme", "LBASize"): {"512"},
    ("sata", "LBASize"): {"512"},
    ("nvme", "DefaultNamespace"): {"1"},
    ("ftl", "MappingMode"): {"0"},
    ("ftl", "FillingMode"): {"0", "1", "2"},  # its effect is the fill's, handled there
    ("ftl", "InvalidPageRatio"): {"0", "0.0"},
    ("ftl", "DChoiceParam"): set(),
}
CELLS = {"0": ("slc", ["LSB"]), "1": ("mlc", ["LSB", "MSB"]), "2": ("tlc", ["LSB", "CSB", "MSB"])}

# SimpleSSD-Standalone's simulation file (github.com/SimpleSSD/SimpleSSD-Standalone at commit
# 8255367: sim/global_config.cc, igl/request/request_config.cc, igl/trace/trace_config.cc; the
# defaults are those files' constructors).
STANDALONE: dict[str, dict[str, str]] = {
    "global": {
        "Mode": "0",
        "LogPeriod": "0",
        "LogFile": "",
        "DebugLogFile": "",
        "LatencyLogFile": "",
        "ProgressPeriod": "0",
        "Interface": "1",
        "Scheduler": "0",
        "SubmissionLatency": "0",
        "CompletionLatency": "0",
    },
    "generator": {
        "io_size": "0",
        "readwrite": "read",
        "rwmixread": "0",
        "blocksize": "0",
        "blockalign": "0",
        "iomode": "sync",
        "iodepth": "0",
        "offset": "0",
        "size": "0",
        "thinktime": "0",
        "randseed": "0",
        "time_based": "0",
        "runtime": "0",
    },
    "trace": {
        k: ""
        for k in (
            "File",
            "TimingMode",
            "QueueDepth",
            "IOLimit",
            "Regex",
            "Operation",
            "ByteOffset",
            "ByteLength",
            "LBAOffset",
            "LBALength",
            "Second",
            "Millisecond",
            "Microsecond",
            "Nanosecond",
            "Picosecond",
            "LBASize",
            "UseHexadecimal",
        )
    },
}
# Standalone's integers take a suffix: k, m, g, t powers of 1000, K, M, G, T powers of 1024
# (util/convert.cc); its times s, ms, us, ns, ps, and a bare number is picoseconds.
INTEGER_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
INTEGER_SUFFIX.update({"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40})
TIME_SUFFIX = {"": 1, "s": 10**12, "ms": 10**9, "us": 10**6, "ns": 10**3, "ps": 1}


class _Ini:
    """The file's ``section -> key -> (value, line)``, with SimpleSSD's defaults behind it."""

    def __init__(
        self, path: str, keys: dict[str, dict[str, str]], what: str = "SimpleSSD config"
    ) -> None:
        self.path = path
        self.keys = keys
        self.values: dict[str, dict[str, tuple[str, int]]] = {}
        text = read_input_text(path, what, ImportInputError)
        section: str | None = None
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                if not line.endswith("]"):
                    raise ImportInputError(
                        f"{path}, line {number}: {line!r}: expected a section header [name]"
                    )
                section = line[1:-1].strip()
                if section in STANDALONE and keys is KEYS:
                    raise ImportInputError(
                        f"{path}, line {number}: [{section}]: a section of SimpleSSD-Standalone's"
                        " simulation file (its [global], [generator] and [trace]), expected the"
                        " SSD's config (the .cfg of [pal], [ftl], [nvme], ...)"
                    )
                if section not in keys:
                    raise ImportInputError(
                        f"{path}, line {number}: [{section}]: not a section of a {what}, expected"
                        f" one of {', '.join('[' + s + ']' for s in keys)}"
                    )
                if section in self.values:
                    raise ImportInputError(f"{path}, line {number}: [{section}] given twice")
                self.values[section] = {}
                continue
            key, sep, value = _split(line)
            if not sep or not key:
                raise ImportInputError(
                    f"{path}, line {number}: {line!r}: expected key = value or a [section]"
                )
            if section is None:
                raise ImportInputError(
                    f"{path}, line {number}: {key} before any [section], expected it in one"
                )
            if key not in keys[section] and not _disk_image_key(section, key):
                close = difflib.get_close_matches(key, list(keys[section]), n=1)
                expected = (
                    f"did you mean {close[0]}?"
                    if close
                    else f"expected one of {', '.join(keys[section])}"
                )
                raise ImportInputError(
                    f"{path}, line {number}: [{section}] {key}: not a key SimpleSSD reads there;"
                    f" {expected}"
                )
            if key in self.values[section]:
                raise ImportInputError(f"{path}, line {number}: [{section}] {key} given twice")
            self.values[section][key] = (value, number)

    def __call__(self, section: str, key: str) -> Reader:
        given = self.values.get(section, {}).get(key)
        if given is None:
            return Reader(
                f"{self.path}: [{section}] {key} (SimpleSSD's default)", self.keys[section][key]
            )
        return Reader(f"{self.path}, line {given[1]}: [{section}] {key}", given[0])

    def where(self, section: str, key: str) -> str:
        """``[section] key (line N)`` for a warning; without the line when the key is absent."""
        given = self.values.get(section, {}).get(key)
        return f"[{section}] {key}" + (f" (line {given[1]})" if given else "")

    def given(self, section: str, key: str) -> bool:
        return key in self.values.get(section, {})

    def flag(self, section: str, key: str) -> bool:
        # SimpleSSD's convertBool: "true" (any case) or a non-zero number.
        r = self(section, key)
        if r.value.lower() == "true":
            return True
        if r.value.lower() == "false":
            return False
        return r.integer(0, 2**32 - 1) != 0


def _disk_image_key(section: str, key: str) -> bool:
    # SimpleSSD's NVMe reads one disk image per namespace: DiskImageFile1, DiskImageFile2, ...
    number = key.removeprefix("DiskImageFile")
    return section == "nvme" and number != key and number.isdigit()


def _split(line: str) -> tuple[str, str, str]:
    cut = [i for i in (line.find("="), line.find(":")) if i >= 0]
    if not cut:
        return line, "", ""
    i = min(cut)
    key, value = line[:i].strip(), line[i + 1 :].strip()
    for mark in (" #", "\t#", " ;", "\t;"):
        j = value.find(mark)
        if j >= 0:
            value = value[:j].strip()
    return key, line[i], value


def import_simplessd(
    path: str | os.PathLike[str],
    interface: str | None = None,
    simulation: str | os.PathLike[str] | None = None,
) -> Imported:
    """The ssdlab config for SimpleSSD's ``path``, and from SimpleSSD-Standalone's
    ``simulation`` file its request generator as a flows file. The host interface (``nvme`` or
    ``sata``) is ``interface``, else the simulation file's ``Interface``, else NVMe (SimpleSSD
    chooses it outside the SSD's .cfg)."""
    name = os.fspath(path)
    if interface not in (None, "nvme", "sata"):
        raise ImportInputError(f"--interface {interface!r}: expected nvme or sata")
    sim = None
    if simulation is not None:
        sim = _Ini(os.fspath(simulation), STANDALONE, "SimpleSSD-Standalone simulation file")
    direct = False
    if sim is not None:
        kind = sim("global", "Interface")
        chosen = kind.choice({"0": "direct", "1": "nvme", "2": "sata", "3": "ufs"}, upper=False)
        if chosen == "ufs":
            raise kind.fail("0 (none), 1 (NVMe) or 2 (SATA): a UFS drive is not imported")
        direct = chosen == "direct"
        from_sim = "nvme" if direct else chosen
        if interface is not None and sim.given("global", "Interface") and interface != from_sim:
            raise sim("global", "Interface").fail(
                f"the interface --interface names ({interface}), or no --interface"
            )
        interface = interface or from_sim
    interface = interface or "nvme"
    ini = _Ini(name, KEYS)
    out = Imported(source=name)
    stem = os.path.splitext(os.path.basename(name))[0]
    out.header = [
        f"Imported from SimpleSSD's {os.path.basename(name)} by `ssdlab import simplessd`"
        " (docs/import.md).",
        "Each line names the SimpleSSD key it comes from; SimpleSSD times are ps, sizes bytes.",
    ]
    out.set("meta", "name", stem)
    out.set("meta", "description", f"SimpleSSD config {os.path.basename(name)}, imported")
    out.set("meta", "source", f"SimpleSSD {os.path.basename(name)} (ssdlab import simplessd)")
    used: set[tuple[str, str]] = set()

    def take(section: str, key: str) -> Reader:
        used.add((section, key))
        return ini(section, key)

    # [pal]: geometry, NAND timings, channel.
    geometry = (
        ("channels", "Channel", 1024),
        ("packages_per_channel", "Package", 1024),
        ("dies_per_package", "Die", 64),
        ("planes_per_die", "Plane", 64),
        ("blocks_per_plane", "Block", 1 << 24),
        ("pages_per_block", "Page", 1 << 16),
    )
    cell_reader = take("pal", "NANDType")
    cell, kinds = cell_reader.choice(CELLS, upper=False)
    out.set("nand", "cell", cell, f"NANDType = {cell_reader.value}")
    for key, ini_key, high in geometry:
        n = take("pal", ini_key).integer(1, high)
        out.set("nand", key, n, f"{ini_key} = {n}")
    page = take("pal", "PageSize").integer(512, 1 << 20)
    if page % 512:
        raise ini("pal", "PageSize").fail("a whole number of 512-byte sectors")
    out.set("nand", "page_size", size(page), f"PageSize = {page}")
    used.add(("pal", "EnableMultiPlaneOperation"))
    multiplane = ini.flag("pal", "EnableMultiPlaneOperation")
    out.set("nand", "multiplane", multiplane, f"EnableMultiPlaneOperation = {int(multiplane)}")
    for key, what in (("read", "Read"), ("program", "Write")):
        times = []
        for kind in kinds:
            r = take("pal", f"{kind}{what}")
            ps = r.integer(0, 10**13)
            if ps == 0:
                raise r.fail(f"a time above 0 ps (a {cell.upper()} cell has {kind} pages)")
            times.append(duration(ps))
        note = ", ".join(f"{k}{what} = {ini('pal', f'{k}{what}').value}" for k in kinds) + " ps"
        out.set("nand.timing", key, times, note)
    # A page type the cell lacks (MLC's CSB) is read by neither simulator: not warned.
    used.update({("pal", f"{k}{w}") for k in ("LSB", "CSB", "MSB") for w in ("Read", "Write")})
    erase = take("pal", "Erase").integer(1, 10**13)
    out.set("nand.timing", "erase", duration(erase), f"Erase = {erase} ps")
    out.set("nand.timing", "ecc_decode", "0ns", "SimpleSSD has no ECC decode time")
    speed = take("pal", "DMASpeed").integer(1, 100_000)
    width = take("pal", "DMAWidth").integer(8, 64)
    if width % 8:
        raise ini("pal", "DMAWidth").fail("a multiple of 8 bits (8 or 16), as SimpleSSD requires")
    out.set("nand.bus", "rate", f"{speed}MT/s", f"DMASpeed = {speed} (MT/s)")
    out.set("nand.bus", "width_bits", width, f"DMAWidth = {width} (bits)")
    # SimpleSSD charges 7 bus cycles of command and address per read or program (pal/config.cc,
    # "based on ONFI 3.x"); its cycle is 1 / (DMASpeed × 2^20) s.
    cycle_ps = 10**12 / (speed * 1048576)
    out.set(
        "nand.bus",
        "cmd_addr",
        duration(round(7 * cycle_ps)),
        "7 cycles at DMASpeed (SimpleSSD's readCycle/writeCycle)",
    )
    order_reader = take("pal", "PageAllocation")
    order = order_reader.value.upper() or "CWDP"
    if sorted(order) != sorted("CWDP"):
        raise order_reader.fail("a permutation of C, W, D, P (e.g. CWDP)")
    superblock = take("pal", "SuperblockSize").value
    if superblock:
        out.warn(
            ini.where("pal", "SuperblockSize"),
            superblock,
            "ssdlab maps pages, not superpages: each page is mapped alone (map_unit = the page)",
        )

    # [ftl]
    mode = take("ftl", "MappingMode").integer(0, 0)
    out.set("ftl", "map_unit", size(page), f"MappingMode = {mode}: page-level mapping")
    op_reader = take("ftl", "OverProvisioningRatio")
    op = op_reader.real(0.0, 0.89)
    out.set("ftl", "over_provisioning", op, f"OverProvisioningRatio = {op_reader.value}")
    out.set("ftl", "allocation", order, f"PageAllocation = {order_reader.value or '(empty: CWDP)'}")
    out.set("ftl", "mapping", "full", "SimpleSSD keeps the whole page map in memory")
    policy_reader = take("ftl", "EvictPolicy")
    policy = policy_reader.choice(
        {"0": "greedy", "1": "cost-benefit", "2": "random", "3": "d-choice"}, upper=False
    )
    if policy == "d-choice":
        d = ini("ftl", "DChoiceParam").value
        out.warn(
            ini.where("ftl", "EvictPolicy"),
            f"3 (d-choice, DChoiceParam = {d})",
            "no ssdlab policy samples blocks: greedy used",
        )
        policy = "greedy"
    out.set("ftl.gc", "policy", policy, f"EvictPolicy = {policy_reader.value}")
    gc_reader = take("ftl", "GCThreshold")
    out.set(
        "ftl.gc",
        "free_threshold",
        gc_reader.real(0.0, 0.5),
        f"GCThreshold = {gc_reader.value} (of a plane's blocks)",
    )
    gc_mode = take("ftl", "GCMode").choice({"0": 0, "1": 1}, upper=False)
    if gc_mode == 0:
        reclaim = take("ftl", "GCReclaimBlocks").value
        out.warn(
            ini.where("ftl", "GCMode"),
            f"0 (reclaim {reclaim} block(s) a time)",
            "ssdlab's GC reclaims until the plane is back above free_threshold",
        )
    else:
        t = take("ftl", "GCReclaimThreshold").value
        out.warn(
            ini.where("ftl", "GCMode"),
            f"1 (reclaim until {t})",
            "ssdlab's GC reclaims until the plane is back above free_threshold",
        )
    used.update(
        {("ftl", "GCReclaimBlocks"), ("ftl", "GCReclaimThreshold"), ("ftl", "DChoiceParam")}
    )
    fill = take("ftl", "FillRatio").real(0.0, 1.0)
    invalid = take("ftl", "InvalidPageRatio").real(0.0, 1.0)
    if fill == 0.0:
        out.set("precondition", "fill", "none", "FillRatio = 0")
    else:
        # SimpleSSD writes FillRatio of the logical pages, then overwrites InvalidPageRatio of
        # them (FillingMode picks sequential or random for each); ssdlab fills the whole space
        # in order and then overwrites a fraction of it at random.
        out.set("precondition", "fill", "sequential", f"FillRatio = {fill}")
        out.set("precondition", "random_overwrite", invalid, f"InvalidPageRatio = {invalid}")
        if fill < 1.0:
            out.warn(
                ini.where("ftl", "FillRatio"), fill, "ssdlab's fill writes the whole logical space"
            )
        filling = ini("ftl", "FillingMode").value
        if filling == "2":
            out.warn(ini.where("ftl", "FillingMode"), "2 (random filling)", "ssdlab fills in order")
    used.add(("ftl", "FillingMode"))

    # [nvme] or [sata]
    if interface == "nvme":
        gen = take("nvme", "PCIEGeneration").choice({"0": 1, "1": 2, "2": 3}, upper=False)
        lanes_reader = take("nvme", "PCIELane")
        lanes = lanes_reader.integer(1, 16)
        if lanes not in (1, 2, 4, 8, 16):
            raise lanes_reader.fail("1, 2, 4, 8 or 16 lanes")
        out.set("interface", "kind", "nvme", "NVMe: the [nvme] section")
        out.set(
            "interface",
            "link",
            f"pcie{gen}x{lanes}",
            f"PCIEGeneration = {ini('nvme', 'PCIEGeneration').value} (Gen{gen}),"
            f" PCIELane = {lanes}",
        )
        sq = take("nvme", "MaxIOSQueue").integer(1, 65535)
        cq = take("nvme", "MaxIOCQueue").integer(1, 65535)
        out.set("interface", "io_queues", min(sq, cq), f"MaxIOSQueue = {sq}, MaxIOCQueue = {cq}")
        # hil/nvme/controller.cc advertises 4096 entries a queue (CAP.MQES) and no MDTS.
        out.set("interface", "queue_depth", 4096, "SimpleSSD's CAP.MQES: 4096 entries")
        out.set("interface", "mdts", "1MiB", "SimpleSSD sets no MDTS; ssdlab's 1 MiB")
        out.set("interface", "interrupt", "msix", "SimpleSSD has no interrupt key; MSI-X")
    else:
        mode_reader = take("sata", "SATAMode")
        gen = mode_reader.choice({"0": 1, "1": 2, "2": 3}, upper=False)
        out.set("interface", "kind", "sata", "SATA: the [sata] section")
        out.set("interface", "link", f"sata{gen}", f"SATAMode = {mode_reader.value}")
        out.set("interface", "io_queues", 1, "SATA has one command queue")
        out.set("interface", "queue_depth", 32, "NCQ: 32 tags")
        out.set("interface", "mdts", "512KiB", "Linux's default max_sectors 1024 × 512 B")
        out.set("interface", "interrupt", "msix", "AHCI adapters signal with MSI")

    # [icl]
    write = ini.flag("icl", "EnableWriteCache")
    read = ini.flag("icl", "EnableReadCache")
    used.update({("icl", "EnableWriteCache"), ("icl", "EnableReadCache")})
    capacity = take("icl", "CacheSize").integer(0, 2**40)
    if not write and not read:
        out.set("cache", "enabled", False, "EnableWriteCache = EnableReadCache = 0")
    else:
        out.set("cache", "capacity", size(capacity), f"CacheSize = {capacity}")
        out.set(
            "cache",
            "mode",
            "write-back" if write else "write-through",
            f"EnableWriteCache = {int(write)}",
        )
        out.set("cache", "read_allocate", read, f"EnableReadCache = {int(read)}")
        evict_reader = take("icl", "EvictPolicy")
        evict = evict_reader.choice({"0": "random", "1": "fifo", "2": "lru"}, upper=False)
        if evict == "random":
            out.warn(
                ini.where("icl", "EvictPolicy"),
                "0 (random)",
                "ssdlab's cache has no random replacement: lru used",
            )
            evict = "lru"
        out.set("cache", "replacement", evict, f"EvictPolicy = {evict_reader.value}")
        ways = ini("icl", "CacheWaySize").integer(0, 2**32 - 1)
        used.add(("icl", "CacheWaySize"))
        if ways != 0:
            out.warn(
                ini.where("icl", "CacheWaySize"),
                ways,
                "ssdlab's cache is fully associative (SimpleSSD's 0)",
            )
        if ini.flag("icl", "EnableReadPrefetch"):
            out.warn(
                ini.where("icl", "EnableReadPrefetch"),
                1,
                "SimpleSSD's sequential-read prefetch has no ssdlab twin",
            )
        used.add(("icl", "EnableReadPrefetch"))
        for key in ("ReadPrefetchCount", "ReadPrefetchRatio", "ReadPrefetchMode"):
            used.add(("icl", key))
        bus = ini("dram", "BusWidth")
        if ini.given("dram", "BusWidth"):
            used.add(("dram", "BusWidth"))
            out.set("cache", "bus_bits", bus.integer(8, 1024), f"[dram] BusWidth = {bus.value}")
        out.set(
            "cache",
            "dram",
            "ddr3",
            "SimpleSSD's DRAM defaults are DDR3-1600 timings (tCK 1250 ps, tRCD 13750 ps)",
        )

    # Every key given that nothing above took, in the file's order, is named once.
    reasons = {
        "cpu": "SimpleSSD's firmware cost (instructions per function at ClockSpeed on its"
        " cores) has no ssdlab twin",
        "dram": "ssdlab's DRAM timings are JEDEC sets; only the bus width is carried",
        "nvme": "SimpleSSD's HIL internals (AXI bus, FIFO, work interval) have no ssdlab knob",
        "sata": "SimpleSSD's HIL internals (AXI bus, work interval) have no ssdlab knob",
        "ufs": "the drive imports as NVMe or SATA (--interface); ssdlab's UFS is not mapped",
        "icl": "no ssdlab knob for it",
        "ftl": "no ssdlab knob for it",
        "pal": "no ssdlab knob for it",
    }
    special = {
        ("nvme", "WRRHigh"): "ssdlab serves every queue with the same weight",
        ("nvme", "WRRMedium"): "ssdlab serves every queue with the same weight",
        (
            "ftl",
            "EraseThreshold",
        ): "bad blocks from wear are [reliability]'s, which needs a wear model",
        ("ftl", "EnableRandomIOTweak"): "a superpage mapping's tweak; ssdlab maps pages",
        ("icl", "CacheLatency"): "ssdlab charges the cache's DRAM timing instead",
        ("icl", "EvictMode"): "ssdlab evicts one line at a time",
        ("nvme", "LBASize"): "ssdlab's logical blocks are 512 bytes",
        ("sata", "LBASize"): "ssdlab's logical blocks are 512 bytes",
    }
    other = "sata" if interface == "nvme" else "nvme"
    for section, keys in ini.values.items():
        for key, (value, _) in keys.items():
            if (section, key) in used or value in INERT.get((section, key), {None}):
                continue
            if key.startswith("DiskImageFile") and not ini.flag(section, "EnableDiskImage"):
                continue  # SimpleSSD reads no image unless EnableDiskImage is on
            if section == other:
                why = f"the drive uses [{interface}] (--interface {interface})"
            elif section == "pal" and key in (
                "Voltage",
                "ReadCurrent",
                "ProgramCurrent",
                "EraseCurrent",
                "IdleCurrent",
                "StandbyCurrent",
            ):
                why = "NAND power is [power]'s, with per-operation energies rather than currents"
            else:
                why = special.get((section, key), reasons[section])
            out.warn(ini.where(section, key), value, why)

    if sim is not None:
        _simulation(out, sim, direct)
    return out


def _integer(r: Reader, low: int = 0, high: int = 2**62) -> int:
    """Standalone's integer: digits and an optional suffix (util/convert.cc)."""
    found = re.fullmatch(r"(\d+)([kKmMgGtT]?)", r.value)
    if found is None:
        raise r.fail("a whole number with an optional k, m, g, t (×1000) or K, M, G, T (×1024)")
    number = int(found.group(1)) * INTEGER_SUFFIX[found.group(2)]
    if not low <= number <= high:
        raise r.fail(f"a number from {low} to {high}")
    return number


def _time_ps(r: Reader, high_ps: int = 10**19, what: str = "about 115 days") -> int:
    """Standalone's time: digits and s, ms, us, ns or ps; a bare number is picoseconds."""
    found = re.fullmatch(r"(\d+)(s|ms|us|ns|ps|)", r.value.lower())
    if found is None:
        raise r.fail("a time such as 10s, 5us or 100 (ps)")
    ps = int(found.group(1)) * TIME_SUFFIX[found.group(2)]
    if ps > high_ps:
        raise r.fail(f"a time of at most {duration(high_ps)} ({what})")
    return ps


def _standalone_flag(r: Reader) -> bool:
    # Standalone's convertBoolean: a number above 0, t, y, true or yes (any case).
    text = r.value.lower()
    return text in ("t", "y", "true", "yes") or (text.isdigit() and int(text) > 0)


def _simulation(out: Imported, sim: _Ini, direct: bool) -> None:
    """SimpleSSD-Standalone's [global] host costs and its [generator] as a flow."""
    out.flow_source = sim.path
    if direct:
        out.set(
            "interface", "link", "ideal", "[global] Interface = 0: requests go straight to the HIL"
        )
        out.warn(
            sim.where("global", "Interface"),
            "0 (none)",
            "ssdlab keeps NVMe's command steps, on an ideal link",
            source=sim.path,
        )
    for key, field in (
        ("SubmissionLatency", "submit_cost"),
        ("CompletionLatency", "complete_cost"),
    ):
        ps = _time_ps(sim("global", key), 10**12, "a host cost per request")
        out.set("host", field, duration(ps), f"[global] {key} = {sim('global', key).value or 0}")
    period = sim("global", "LogPeriod").integer(0, 2**32 - 1)
    if period:
        out.warn(
            sim.where("global", "LogPeriod"),
            period,
            f"a run option: --stats-interval {period}ms",
            source=sim.path,
        )
    # Noop, Standalone's only scheduler, sends requests in order, as ssdlab's block layer does.
    sim("global", "Scheduler").choice({"0": "noop"}, upper=False)
    mode = sim("global", "Mode").choice({"0": "generator", "1": "trace"}, upper=False)
    if mode == "trace":
        out.warn(
            sim.where("global", "Mode"),
            "1 (trace replayer)",
            "Standalone's trace reader is a regular expression ssdlab does not take: replay the"
            " trace with ssdlab run CONFIG --trace FILE --format FORMAT (docs/traces.md)",
            source=sim.path,
        )
        return
    # Standalone compares the pattern's name without case (strcasecmp).
    pattern = sim("generator", "readwrite")
    rw = Reader(pattern.where, pattern.value.lower()).choice(
        {
            "read": "read",
            "write": "write",
            "randread": "randread",
            "randwrite": "randwrite",
            "readwrite": "rw",
            "randrw": "randrw",
        },
        upper=False,
    )
    job: dict[str, object] = {"name": "generator", "rw": rw}
    if rw in ("rw", "randrw"):
        mix = sim("generator", "rwmixread").real(0.0, 1.0) * 100
        job["rwmixread"] = round(mix)
        if abs(mix - round(mix)) > 1e-9:
            out.warn(
                sim.where("generator", "rwmixread"),
                sim("generator", "rwmixread").value,
                f"ssdlab's rwmixread is a whole percentage: {round(mix)} used",
                source=sim.path,
            )
    bs = _integer(sim("generator", "blocksize"), 512, 1 << 30)
    if bs % 512:
        raise sim("generator", "blocksize").fail(
            "a multiple of 512 bytes (the drive's logical block)"
        )
    job["bs"] = size(bs)
    align = _integer(sim("generator", "blockalign")) if sim("generator", "blockalign").value else 0
    if align not in (0, bs):
        out.warn(
            sim.where("generator", "blockalign"),
            align,
            "ssdlab aligns a job's offsets to its request size",
            source=sim.path,
        )
    iomode = sim("generator", "iomode")
    sync = Reader(iomode.where, iomode.value.lower()).choice(
        {"sync": True, "async": False}, upper=False
    )
    job["iodepth"] = 1 if sync else _integer(sim("generator", "iodepth"), 1, 65535)
    offset = _integer(sim("generator", "offset")) if sim("generator", "offset").value else 0
    region = _integer(sim("generator", "size")) if sim("generator", "size").value else 0
    if offset:
        job["offset"] = size(offset)
    if region:
        job["size"] = size(region)
    think = _time_ps(sim("generator", "thinktime")) if sim("generator", "thinktime").value else 0
    if think:
        job["thinktime"] = duration(think)
    if _standalone_flag(sim("generator", "time_based")):
        job["runtime"] = duration(_time_ps(sim("generator", "runtime")))
    else:
        io_size = _integer(sim("generator", "io_size"))
        if io_size < bs:
            raise sim("generator", "io_size").fail(
                f"at least one request ({bs} B), or time_based = 1 with a runtime"
            )
        job["io_count"] = io_size // bs
        if io_size % bs:
            out.warn(
                sim.where("generator", "io_size"),
                io_size,
                f"not a whole number of {bs}-byte requests: rounded down",
                source=sim.path,
            )
    if sim.given("generator", "randseed"):
        out.warn(
            sim.where("generator", "randseed"),
            sim("generator", "randseed").value,
            "a run option in ssdlab: pass --seed",
            source=sim.path,
        )
    try:
        Job(**job)
    except _core.SsdlabError as e:
        raise ImportInputError(
            f"{sim.path}: [generator]: the job ssdlab would run is refused: {e}"
        ) from None
    out.flows.append(("generator", [job]))


__all__ = ["import_simplessd"]
