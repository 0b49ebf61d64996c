"""``ssdlab import mqsim``: MQSim's ssdconfig.xml (and workload.xml) as an ssdlab config and
flows (docs/import.md).

Element names, units and defaults are MQSim's (github.com/CMU-SAFARI/MQSim at commit 7ec40e3):
``src/exec/Device_Parameter_Set.cpp``, ``Flash_Parameter_Set.cpp``, ``Host_Parameter_Set.cpp``
and ``IO_Flow_Parameter_Set.cpp`` read the elements; an element a file leaves out takes the
default those files give it, as MQSim does. MQSim's times are nanoseconds; sizes are bytes, a
request's size and alignment 512-byte sectors. An element MQSim does not read is an error here
(MQSim skips it without a word), except the few its own shipped files carry that its reader
never looks at, which get a warning.
"""

from __future__ import annotations

import difflib
import json
import os
from typing import Any

from .. import _core
from ..api import Job
from .common import (
    Imported,
    ImportInputError,
    Reader,
    XmlElement,
    duration,
    read_xml,
    resolve,
    size,
)

SECTOR_BYTES = 512
NS = 1000  # picoseconds

# MQSim's compiled-in defaults for an element a file leaves out (the source files named in the
# module's docstring, at 7ec40e3).
HOST_DEFAULTS = {
    "PCIe_Lane_Bandwidth": "0.4",  # GB/s
    "PCIe_Lane_Count": "4",
    "SATA_Processing_Delay": "0",  # ns (left uninitialised in MQSim: a static, so 0)
    "Enable_ResponseTime_Logging": "false",
    "ResponseTime_Logging_Period_Length": "400000",  # ns
}
DEVICE_DEFAULTS = {
    "Seed": "123",
    "Enabled_Preconditioning": "true",
    "Memory_Type": "FLASH",
    "HostInterface_Type": "NVME",
    "IO_Queue_Depth": "1024",
    "Queue_Fetch_Size": "512",
    "Caching_Mechanism": "ADVANCED",
    "Data_Cache_Sharing_Mode": "SHARED",
    "Data_Cache_Capacity": str(512 << 20),
    "Data_Cache_DRAM_Row_Size": "8192",
    "Data_Cache_DRAM_Data_Rate": "800",
    "Data_Cache_DRAM_Data_Busrt_Size": "4",
    "Data_Cache_DRAM_tRCD": "13",
    "Data_Cache_DRAM_tCL": "13",
    "Data_Cache_DRAM_tRP": "13",
    "Address_Mapping": "PAGE_LEVEL",
    "Ideal_Mapping_Table": "false",
    "CMT_Capacity": str(2 << 20),
    "CMT_Sharing_Mode": "SHARED",
    "Plane_Allocation_Scheme": "CWDP",
    "Transaction_Scheduling_Policy": "OUT_OF_ORDER",
    "Overprovisioning_Ratio": "0.07",
    "GC_Exec_Threshold": "0.05",
    "GC_Block_Selection_Policy": "RGA",
    "Use_Copyback_for_GC": "false",
    "Preemptible_GC_Enabled": "true",
    "GC_Hard_Threshold": "0.005",
    "Dynamic_Wearleveling_Enabled": "true",
    "Static_Wearleveling_Enabled": "true",
    "Static_Wearleveling_Threshold": "100",
    "Preferred_suspend_erase_time_for_read": "700000",
    "Prefered_suspend_erase_time_for_read": "700000",
    "Preferred_suspend_erase_time_for_write": "700000",
    "Preferred_suspend_write_time_for_read": "100000",
    "Flash_Channel_Count": "8",
    "Flash_Channel_Width": "1",
    "Channel_Transfer_Rate": "300",
    "Chip_No_Per_Channel": "4",
    "Flash_Comm_Protocol": "NVDDR2",
}
FLASH_DEFAULTS = {
    "Flash_Technology": "MLC",
    "CMD_Suspension_Support": "ERASE",
    "Page_Read_Latency_LSB": "75000",
    "Page_Read_Latency_CSB": "75000",
    "Page_Read_Latency_MSB": "75000",
    "Page_Program_Latency_LSB": "750000",
    "Page_Program_Latency_CSB": "750000",
    "Page_Program_Latency_MSB": "750000",
    "Block_Erase_Latency": "3800000",
    "Block_PE_Cycles_Limit": "10000",
    "Suspend_Erase_Time": "700000",
    "Suspend_Program_Time": "100000",
    "Die_No_Per_Chip": "2",
    "Plane_No_Per_Die": "2",
    "Block_No_Per_Plane": "2048",
    "Page_No_Per_Block": "256",
    "Page_Capacity": "8192",
    "Page_Metadat_Capacity": "1872",
}
FLOW_COMMON = {
    "Priority_Class",
    "Device_Level_Data_Caching_Mode",
    "Channel_IDs",
    "Chip_IDs",
    "Die_IDs",
    "Plane_IDs",
    "Initial_Occupancy_Percentage",
}
SYNTHETIC = FLOW_COMMON | {
    "Working_Set_Percentage",
    "Synthetic_Generator_Type",
    "Read_Percentage",
    "Address_Distribution",
    "Percentage_of_Hot_Region",
    "Generated_Aligned_Addresses",
    "Address_Alignment_Unit",
    "Request_Size_Distribution",
    "Average_Request_Size",
    "Variance_Request_Size",
    "Seed",
    "Average_No_of_Reqs_in_Queue",
    "Bandwidth",
    "Stop_Time",
    "Total_Requests_To_Generate",
    "Intensity",  # in MQSim's shipped workload.xml, but its reader looks for Bandwidth
}
TRACE_BASED = FLOW_COMMON | {"File_Path", "Percentage_To_Be_Executed", "Relay_Count", "Time_Unit"}

# Elements MQSim's own files carry that its reader never reads (a misspelt or unread name).
UNREAD = {
    "Preferred_suspend_erase_time_for_read": "MQSim's reader looks for the misspelt"
    " Prefered_suspend_erase_time_for_read, so MQSim ignores it too",
    "Intensity": "MQSim's reader has no such element (its bandwidth generator reads Bandwidth),"
    " so MQSim ignores it too",
}

# The PCIe generations ssdlab models, by their usable bandwidth per lane in GB/s (transfer rate
# × encoding: 2.5 GT/s 8b/10b, 5 GT/s 8b/10b, 8 GT/s 128b/130b, 16 and 32 GT/s 128b/130b).
PCIE_LANE_GBPS = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938}
PCIE_LANES = (1, 2, 4, 8, 16)
# MQSim's GC victim policies and ssdlab's nearest (`ftl.gc.policy`).
GC_POLICIES = {
    "GREEDY": ("greedy", ""),
    "RGA": (
        "greedy",
        "randomised greedy (the best of a random sample); ssdlab's nearest is greedy",
    ),
    "RANDOM": ("random", ""),
    "RANDOM_P": ("random", "random among blocks with invalid pages; ssdlab's random is plain"),
    "RANDOM_PP": ("random", "random among blocks above a threshold; ssdlab's random is plain"),
    "FIFO": ("greedy", "oldest block first has no ssdlab policy; greedy used"),
}
CELLS = {"SLC": "slc", "MLC": "mlc", "TLC": "tlc"}


class _Params:
    """One parameter set's elements (``tag -> element``), read with MQSim's defaults."""

    def __init__(
        self, path: str, parent: XmlElement, defaults: dict[str, str], nested: set[str]
    ) -> None:
        self.path = path
        self.defaults = defaults
        self.given: dict[str, XmlElement] = {}
        for child in parent.children:
            if child.tag in nested:
                continue
            if child.tag not in defaults:
                close = difflib.get_close_matches(child.tag, list(defaults), n=1)
                expected = (
                    f"did you mean <{close[0]}>?"
                    if close
                    else f"expected one of {', '.join(sorted(defaults))}"
                )
                raise ImportInputError(
                    f"{path}, line {child.line}: <{child.tag}> in <{parent.tag}>: not an element"
                    f" MQSim reads there; {expected}"
                )
            if child.tag in self.given:
                raise ImportInputError(
                    f"{path}, line {child.line}: <{child.tag}> given twice in <{parent.tag}>"
                )
            self.given[child.tag] = child

    def __call__(self, tag: str) -> Reader:
        element = self.given.get(tag)
        if element is None:
            return Reader(f"{self.path}: <{tag}> (MQSim's default)", self.defaults[tag])
        return Reader(f"{self.path}, line {element.line}: <{tag}>", element.text)

    def text(self, tag: str) -> str:
        return self(tag).value


def _section(path: str, root: XmlElement, tag: str) -> XmlElement | None:
    found = [c for c in root.children if c.tag == tag]
    if len(found) > 1:
        raise ImportInputError(f"{path}, line {found[1].line}: <{tag}> given twice")
    return found[0] if found else None


def import_mqsim(
    ssdconfig: str | os.PathLike[str], workload: str | os.PathLike[str] | None = None
) -> Imported:
    """The ssdlab config (and, from ``workload``, each IO_Scenario's flows) for MQSim's
    ``ssdconfig`` file; see docs/import.md for each element's conversion."""
    path = os.fspath(ssdconfig)
    root = read_xml(path, "MQSim ssdconfig.xml")
    if root.tag != "Execution_Parameter_Set":
        raise ImportInputError(
            f"{path}, line {root.line}: root element <{root.tag}>, expected"
            " <Execution_Parameter_Set> (MQSim's ssdconfig.xml)"
        )
    for child in root.children:
        if child.tag not in ("Host_Parameter_Set", "Device_Parameter_Set"):
            raise ImportInputError(
                f"{path}, line {child.line}: <{child.tag}> in <Execution_Parameter_Set>, expected"
                " <Host_Parameter_Set> or <Device_Parameter_Set>"
            )
    empty = XmlElement("", 0)
    host = _Params(path, _section(path, root, "Host_Parameter_Set") or empty, HOST_DEFAULTS, set())
    device_el = _section(path, root, "Device_Parameter_Set") or empty
    device = _Params(path, device_el, DEVICE_DEFAULTS, {"Flash_Parameter_Set"})
    flash_el = _section(path, device_el, "Flash_Parameter_Set") or empty
    flash = _Params(path, flash_el, FLASH_DEFAULTS, set())

    out = Imported(source=path)
    name = os.path.splitext(os.path.basename(path))[0]
    out.header = [
        f"Imported from MQSim's {os.path.basename(path)}"
        + (f" and {os.path.basename(os.fspath(workload))}" if workload else "")
        + " by `ssdlab import mqsim` (docs/import.md).",
        "Each line names the MQSim element it comes from; MQSim times are ns, sizes bytes.",
    ]
    out.set("meta", "name", name)
    out.set("meta", "description", f"MQSim config {os.path.basename(path)}, imported")
    out.set("meta", "source", f"MQSim {os.path.basename(path)} (ssdlab import mqsim)")

    flows = _read_workload(os.fspath(workload)) if workload is not None else None
    if workload is not None:
        out.flow_source = os.fspath(workload)
    _nand(out, device, flash)
    _ftl(out, device, flash)
    _controller_and_host(out)
    _interface(out, host, device, flows)
    _cache(out, device, flows)
    _precondition(out, device, flows)
    _unread(out, host, device, flash, flows)
    if flows is not None:
        _flows(out, flows)
    return out


def _ns(r: Reader, high_ns: int = 10**12) -> int:
    """An MQSim time (whole nanoseconds) as picoseconds."""
    return r.integer(0, high_ns) * NS


def _nand(out: Imported, device: _Params, flash: _Params) -> None:
    if device("Memory_Type").choice({"FLASH": 1}) != 1:  # pragma: no cover - choice raises
        return
    cell_name = flash("Flash_Technology").choice(CELLS)
    out.set("nand", "cell", cell_name, f"Flash_Technology = {flash.text('Flash_Technology')}")
    geometry = (
        ("channels", device, "Flash_Channel_Count", 1024),
        ("packages_per_channel", device, "Chip_No_Per_Channel", 1024),
        ("dies_per_package", flash, "Die_No_Per_Chip", 64),
        ("planes_per_die", flash, "Plane_No_Per_Die", 64),
        ("blocks_per_plane", flash, "Block_No_Per_Plane", 1 << 24),
        ("pages_per_block", flash, "Page_No_Per_Block", 1 << 16),
    )
    for key, params, tag, high in geometry:
        n = params(tag).integer(1, high)
        out.set("nand", key, n, f"{tag} = {n}")
    page = flash("Page_Capacity").integer(512, 1 << 20)
    if page % SECTOR_BYTES:
        raise flash("Page_Capacity").fail("a whole number of 512-byte sectors")
    spare = flash.text("Page_Metadat_Capacity")
    out.set("nand", "page_size", size(page), f"Page_Capacity = {page}")
    out.warn("<Page_Metadat_Capacity>", spare, "the spare area is not modelled")
    out.set("nand", "multiplane", True, "MQSim's TSU issues multi-plane commands; no element")

    bits = {"slc": 1, "mlc": 2, "tlc": 3}[cell_name]
    kinds = {1: ["LSB"], 2: ["LSB", "MSB"], 3: ["LSB", "CSB", "MSB"]}[bits]
    for key, what in (("read", "Read"), ("program", "Program")):
        tags = [f"Page_{what}_Latency_{k}" for k in kinds]
        times = [duration(_ns(flash(t))) for t in tags]
        note = ", ".join(f"{t} = {flash.text(t)}" for t in tags) + " ns"
        out.set("nand.timing", key, times, note)
        # A page type the cell lacks (MLC's CSB) is read by neither simulator: not warned.
    erase = _ns(flash("Block_Erase_Latency"))
    note = f"Block_Erase_Latency = {flash.text('Block_Erase_Latency')} ns"
    out.set("nand.timing", "erase", duration(erase), note)
    out.set("nand.timing", "ecc_decode", "0ns", "MQSim has no ECC decode time")

    rate = device("Channel_Transfer_Rate").integer(1, 100_000)
    protocol = device("Flash_Comm_Protocol").choice({"NVDDR2": "NVDDR2"})
    out.set("nand.bus", "rate", f"{rate}MT/s", f"Channel_Transfer_Rate = {rate}, {protocol}")
    width = device("Flash_Channel_Width").integer(1, 8)
    out.set("nand.bus", "width_bits", width * 8, f"Flash_Channel_Width = {width} (bytes)")
    out.set("nand.bus", "cmd_addr", "0ns", "MQSim charges no command/address cycles")


def _ftl(out: Imported, device: _Params, flash: _Params) -> None:
    mapping = device("Address_Mapping").choice({"PAGE_LEVEL": "page", "HYBRID": "hybrid"})
    if mapping == "hybrid":
        raise device("Address_Mapping").fail(
            "PAGE_LEVEL (MQSim's HYBRID mapping unit is an empty stub in its source,"
            " Address_Mapping_Unit_Hybrid.cpp, so MQSim cannot run it either)"
        )
    page = flash("Page_Capacity").integer(512, 1 << 20)
    out.set("ftl", "map_unit", size(page), "Address_Mapping = PAGE_LEVEL: one entry per page")
    op = device("Overprovisioning_Ratio").real(0.0, 0.9)
    out.set(
        "ftl",
        "over_provisioning",
        op,
        f"Overprovisioning_Ratio = {device.text('Overprovisioning_Ratio')}",
    )
    order = device("Plane_Allocation_Scheme").value.upper()
    if sorted(order) != sorted("CWDP"):
        raise device("Plane_Allocation_Scheme").fail("a permutation of C, W, D, P (e.g. CWDP)")
    out.set("ftl", "allocation", order, f"Plane_Allocation_Scheme = {order}")
    ideal = device("Ideal_Mapping_Table").boolean(("true",), ("false",))
    if ideal:
        out.set("ftl", "mapping", "full", "Ideal_Mapping_Table = true: the whole map in DRAM")
    else:
        cmt = device("CMT_Capacity").integer(1, 2**32 - 1)
        out.set("ftl", "mapping", "cached", "Ideal_Mapping_Table = false: a cached mapping table")
        out.set("ftl", "mapping_cache", size(cmt), f"CMT_Capacity = {cmt}")
        out.set("ftl", "mapping_cache_location", "dram", "MQSim keeps the CMT in DRAM")
        sharing = device("CMT_Sharing_Mode").choice(
            {"SHARED": "SHARED", "EQUAL_PARTITIONING": "EQUAL_PARTITIONING"}
        )
        if sharing != "SHARED":
            out.warn("<CMT_Sharing_Mode>", sharing, "ssdlab's mapping cache is shared by all flows")

    blocks = flash("Block_No_Per_Plane").integer(1, 1 << 24)
    policy = device("GC_Block_Selection_Policy").choice(GC_POLICIES)
    name = device.text("GC_Block_Selection_Policy").upper()
    out.set("ftl.gc", "policy", policy[0], f"GC_Block_Selection_Policy = {name}")
    if policy[1]:
        out.warn("<GC_Block_Selection_Policy>", name, policy[1])
    threshold = device("GC_Exec_Threshold").real(0.0, 0.5)
    out.set(
        "ftl.gc",
        "free_threshold",
        threshold,
        f"GC_Exec_Threshold = {device.text('GC_Exec_Threshold')}",
    )
    preemptible = device("Preemptible_GC_Enabled").boolean(("true",), ("false",))
    hard = device("GC_Hard_Threshold").real(0.0, 0.5)
    if preemptible:
        # MQSim's GC yields to user I/O until the free pages fall below GC_Hard_Threshold:
        # ssdlab's preemptible GC until hard_free_blocks, counted in blocks of a plane.
        hard_blocks = max(1, round(hard * blocks))
        urgent = max(2, hard_blocks)
        out.set(
            "ftl.gc", "urgent_free_blocks", urgent, "ssdlab default 2, at least hard_free_blocks"
        )
        out.set("ftl.gc", "preemptible", True, "Preemptible_GC_Enabled = true")
        out.set(
            "ftl.gc",
            "hard_free_blocks",
            hard_blocks,
            f"GC_Hard_Threshold = {hard} × {blocks} blocks",
        )
    else:
        out.set(
            "ftl.gc",
            "urgent_free_blocks",
            2,
            "ssdlab default: GC_Hard_Threshold acts only with preemptible GC",
        )
        out.set("ftl.gc", "preemptible", False, "Preemptible_GC_Enabled = false")
    copyback = device("Use_Copyback_for_GC").boolean(("true",), ("false",))
    out.set("ftl.gc", "copyback", copyback, f"Use_Copyback_for_GC = {str(copyback).lower()}")

    dynamic = device("Dynamic_Wearleveling_Enabled").boolean(("true",), ("false",))
    static = device("Static_Wearleveling_Enabled").boolean(("true",), ("false",))
    gap = device("Static_Wearleveling_Threshold").integer(0, 2**32 - 1)
    out.set(
        "ftl.wear_leveling",
        "dynamic",
        dynamic,
        f"Dynamic_Wearleveling_Enabled = {str(dynamic).lower()}",
    )
    out.set(
        "ftl.wear_leveling",
        "static_gap",
        gap if static else 0,
        f"Static_Wearleveling_Enabled = {str(static).lower()},"
        f" Static_Wearleveling_Threshold = {gap}",
    )


def _controller_and_host(out: Imported) -> None:
    out.set("controller", "cmd_overhead", "0ns", "MQSim charges no firmware time per command")
    out.set("controller", "multiplane_window", 16, "ssdlab default; MQSim has no element for it")
    for key in ("submit_cost", "complete_cost", "poll_cost"):
        out.set("host", key, "0ns", "MQSim's host model charges no CPU time")
    out.sections["host"].insert(0, ("cores", 1, "MQSim's host has no cores to model"))


def _interface(
    out: Imported, host: _Params, device: _Params, flows: list[_Scenario] | None
) -> None:
    kind = device("HostInterface_Type").choice({"NVME": "nvme", "SATA": "sata"})
    depth = device("IO_Queue_Depth").integer(1, 65535)
    queues = max((len(s.flows) for s in flows), default=1) if flows else 1
    note = (
        "the most flows of a workload.xml IO_Scenario, one queue pair each"
        if flows
        else ("one queue (no workload.xml: MQSim gives each flow its own queue pair)")
    )
    if kind == "nvme":
        lanes = host("PCIe_Lane_Count").integer(1, 16)
        if lanes not in PCIE_LANES:
            raise host("PCIe_Lane_Count").fail("1, 2, 4, 8 or 16 lanes (the widths ssdlab models)")
        lane_gbps = host("PCIe_Lane_Bandwidth").real(0.01, 100.0)
        gen = min(PCIE_LANE_GBPS, key=lambda g: abs(PCIE_LANE_GBPS[g] - lane_gbps))
        nearest = PCIE_LANE_GBPS[gen]
        out.set("interface", "kind", "nvme", "HostInterface_Type = NVME")
        out.set(
            "interface",
            "link",
            f"pcie{gen}x{lanes}",
            f"PCIe_Lane_Count = {lanes},"
            f" PCIe_Lane_Bandwidth = {host.text('PCIe_Lane_Bandwidth')} GB/s;"
            f" Gen{gen} gives {nearest} GB/s per lane",
        )
        if abs(nearest - lane_gbps) > 0.05 * lane_gbps:
            out.warn(
                "<PCIe_Lane_Bandwidth>",
                host.text("PCIe_Lane_Bandwidth"),
                f"ssdlab models PCIe generations, not a free rate: Gen{gen} ({nearest} GB/s per"
                " lane) is the nearest",
            )
        out.set(
            "interface", "max_payload", "256B", "MQSim has no TLP payload element; ssdlab default"
        )
        out.set("interface", "tlp_overhead", "24B", "as max_payload: ssdlab's default")
        out.set("interface", "link_latency", "0ns", "MQSim's link has no latency element")
        out.set("interface", "io_queues", queues, note)
        out.set("interface", "queue_depth", depth, f"IO_Queue_Depth = {depth}")
        out.set("interface", "mdts", "1MiB", "MQSim has no transfer limit; ssdlab default")
        fetch = device("Queue_Fetch_Size").integer(1, 65535)
        out.set("interface", "arbitration_burst", fetch, f"Queue_Fetch_Size = {fetch}")
        out.set("interface", "interrupt", "msix", "MQSim completes through its host model")
        out.set("interface", "interrupt_latency", "0ns", "MQSim has no interrupt element")
        delay = host.given.get("SATA_Processing_Delay")
        if delay is not None:
            out.warn(
                "<SATA_Processing_Delay>",
                delay.text.strip(),
                "used only with HostInterface_Type = SATA",
            )
    else:
        out.set("interface", "kind", "sata", "HostInterface_Type = SATA")
        out.set(
            "interface", "link", "sata3", "MQSim's SATA has no generation element: SATA 3 (6 Gb/s)"
        )
        out.set("interface", "io_queues", 1, "SATA has one command queue")
        ncq = min(depth, 32)
        out.set("interface", "queue_depth", ncq, f"IO_Queue_Depth = {depth} (NCQ holds at most 32)")
        if depth > 32:
            out.warn("<IO_Queue_Depth>", depth, "SATA's NCQ holds at most 32 commands; 32 used")
        delay_ns = host("SATA_Processing_Delay").integer(0, 10**9)
        out.set(
            "interface",
            "link_latency",
            duration(delay_ns * NS),
            f"SATA_Processing_Delay = {delay_ns} ns",
        )
        out.set("interface", "mdts", "512KiB", "MQSim has no transfer limit; Linux's SATA default")
        out.set("interface", "interrupt", "msix", "MQSim completes through its host model")
        out.set("interface", "interrupt_latency", "0ns", "MQSim has no interrupt element")
        for tag in ("PCIe_Lane_Count", "PCIe_Lane_Bandwidth", "Queue_Fetch_Size"):
            params = host if tag.startswith("PCIe") else device
            if tag in params.given:
                out.warn(f"<{tag}>", params.text(tag), "NVMe only; the interface is SATA")


def _cache(out: Imported, device: _Params, flows: list[_Scenario] | None) -> None:
    modes = sorted({f.caching for s in flows or [] for f in s.flows})
    if not modes:
        mode = "WRITE_CACHE"
        out.warn(
            "Device_Level_Data_Caching_Mode",
            "(no workload.xml)",
            "MQSim sets the caching mode per flow in workload.xml; WRITE_CACHE assumed",
        )
    else:
        mode = flows[0].flows[0].caching if flows and flows[0].flows else modes[0]
        if len(modes) > 1:
            out.warn(
                "<Device_Level_Data_Caching_Mode>",
                ", ".join(modes),
                f"ssdlab's cache has one mode for the device: the first flow's {mode} used",
                source=out.flow_source,
            )
    mechanism = device("Caching_Mechanism").choice({"SIMPLE": "SIMPLE", "ADVANCED": "ADVANCED"})
    ideal = device("Ideal_Mapping_Table").boolean(("true",), ("false",))
    cmt = 0 if ideal else device("CMT_Capacity").integer(1, 2**32 - 1)
    if mode == "TURNED_OFF":
        # No data cache; the CMT keeps its own size (ftl.mapping_cache).
        out.set("cache", "enabled", False, "Device_Level_Data_Caching_Mode = TURNED_OFF")
        return
    capacity = device("Data_Cache_Capacity").integer(0, 2**32 - 1)
    out.set(
        "cache",
        "capacity",
        size(capacity + cmt),
        f"Data_Cache_Capacity = {capacity}"
        + (f" + CMT_Capacity = {cmt} (the map's pages share cache.capacity)" if cmt else ""),
    )
    out.set("cache", "map_reserved", "0B", "MQSim sets no DRAM aside beyond the CMT")
    write = mode in ("WRITE_CACHE", "WRITE_READ_CACHE")
    out.set(
        "cache",
        "mode",
        "write-back" if write else "write-through",
        f"Device_Level_Data_Caching_Mode = {mode}",
    )
    out.set("cache", "replacement", "lru", f"Caching_Mechanism = {mechanism}: LRU slots")
    if mechanism == "SIMPLE":
        out.warn(
            "<Caching_Mechanism>",
            mechanism,
            "MQSim's simple cache has no ssdlab twin; the LRU cache used",
        )
    read = mode in ("READ_CACHE", "WRITE_READ_CACHE")
    out.set(
        "cache",
        "read_allocate",
        read,
        f"{mode}: reads that miss are {'' if read else 'not '}cached",
    )
    trcd = device("Data_Cache_DRAM_tRCD").integer(0, 10**6)
    tcl = device("Data_Cache_DRAM_tCL").integer(0, 10**6)
    trp = device("Data_Cache_DRAM_tRP").integer(0, 10**6)
    out.set(
        "cache",
        "dram",
        "ddr3",
        f"Data_Cache_DRAM_tRCD/tCL/tRP = {trcd}/{tcl}/{trp} ns; nearest set DDR3-1600 (13.75 ns)",
    )
    if max(abs(t - 13.75) for t in (trcd, tcl, trp)) > 2:
        out.warn(
            "<Data_Cache_DRAM_tRCD/tCL/tRP>",
            f"{trcd}/{tcl}/{trp}",
            "ssdlab's DRAM timings are JEDEC sets (ddr2, ddr3, lpddr3): DDR3-1600 used",
        )
    burst = device("Data_Cache_DRAM_Data_Busrt_Size").integer(1, 64)
    out.set("cache", "bus_bits", burst * 8, f"Data_Cache_DRAM_Data_Busrt_Size = {burst} (bytes)")
    out.set("cache", "ports", "single", "one DRAM port")
    out.set("cache", "flush_high_watermark", 0.0, "MQSim flushes on demand, when a slot is needed")
    out.set("cache", "flush_low_watermark", 0.0)
    for tag in ("Data_Cache_DRAM_Data_Rate", "Data_Cache_DRAM_Row_Size"):
        if tag in device.given:
            out.warn(
                f"<{tag}>",
                device.text(tag),
                "no ssdlab knob: the DRAM timing sets are JEDEC speed bins",
            )
    sharing = device("Data_Cache_Sharing_Mode").choice({"SHARED": 1, "EQUAL_PARTITIONING": 2})
    if sharing != 1:
        out.warn(
            "<Data_Cache_Sharing_Mode>",
            "EQUAL_PARTITIONING",
            "ssdlab's cache is shared by all flows",
        )


def _precondition(out: Imported, device: _Params, flows: list[_Scenario] | None) -> None:
    enabled = device("Enabled_Preconditioning").boolean(("true",), ("false",))
    if not enabled:
        out.set("precondition", "fill", "none", "Enabled_Preconditioning = false")
        out.set("precondition", "random_overwrite", 0.0)
        return
    # MQSim brings each flow's share of the drive to Initial_Occupancy_Percentage and a steady
    # state of its access pattern; ssdlab's nearest is the whole drive in its steady state.
    out.set("precondition", "fill", "steady-state", "Enabled_Preconditioning = true")
    occupancy = sorted({f.occupancy for s in flows or [] for f in s.flows})
    if occupancy and occupancy != [100]:
        out.warn(
            "<Initial_Occupancy_Percentage>",
            ", ".join(map(str, occupancy)),
            "ssdlab preconditions the whole logical space (precondition.fill = steady-state)",
            source=out.flow_source,
        )


def _unread(
    out: Imported,
    host: _Params,
    device: _Params,
    flash: _Params,
    flows: list[_Scenario] | None,
) -> None:
    """A warning for each element given that no ssdlab setting took (in the file's order)."""
    reasons: dict[str, str] = {
        "Seed": "a run option in ssdlab: pass --seed",
        "Enable_ResponseTime_Logging": "a run option in ssdlab: pass --stats-interval",
        "ResponseTime_Logging_Period_Length": "a run option in ssdlab: --stats-interval",
        "Prefered_suspend_erase_time_for_read": "ssdlab suspends at once, no preferred time",
        "Preferred_suspend_erase_time_for_write": "ssdlab suspends at once, no preferred time",
        "Preferred_suspend_write_time_for_read": "ssdlab suspends at once, no preferred time",
        "Block_PE_Cycles_Limit": "endurance is [reliability]'s, which needs a wear model MQSim"
        " does not give",
        "Suspend_Erase_Time": "set only with suspension (see CMD_Suspension_Support)",
        "Suspend_Program_Time": "set only with suspension (see CMD_Suspension_Support)",
        **UNREAD,
    }
    if not host("Enable_ResponseTime_Logging").boolean(("true",), ("false",)):
        # Off: nothing to carry, and the period is not used.
        reasons.pop("Enable_ResponseTime_Logging")
        reasons.pop("ResponseTime_Logging_Period_Length")
    if flash.text("CMD_Suspension_Support").upper() == "PROGRAM_ERASE":
        reasons.pop("Suspend_Erase_Time")  # carried with nand.suspend below
        reasons.pop("Suspend_Program_Time")
    for params in (host, device, flash):
        for tag, element in params.given.items():
            if tag in reasons:
                out.warn(f"<{tag}>", element.text.strip(), reasons[tag])
    policy = device("Transaction_Scheduling_Policy").choice(
        {k: k for k in ("OUT_OF_ORDER", "PRIORITY_OUT_OF_ORDER", "FLIN")}
    )
    # OUT_OF_ORDER serves a chip's reads before its writes and erases (TSU_OutofOrder.cpp):
    # ssdlab's default die order, controller.scheduler = "read-priority". It ignores the flows'
    # classes, as ssdlab's default round robin does.
    if policy == "PRIORITY_OUT_OF_ORDER":
        _priority_classes(out, device, flash, flows)
    elif policy == "FLIN":
        out.warn(
            "<Transaction_Scheduling_Policy>",
            policy,
            "FLIN's fairness control has no ssdlab twin; ssdlab's dies serve reads first",
        )
    mode = flash("CMD_Suspension_Support").choice(
        {"NONE": "NONE", "ERASE": "ERASE", "PROGRAM": "PROGRAM", "PROGRAM_ERASE": "PROGRAM_ERASE"}
    )
    if mode == "PROGRAM_ERASE":
        out.set("nand", "suspend", True, "CMD_Suspension_Support = PROGRAM_ERASE")
        prog = _ns(flash("Suspend_Program_Time"))
        erase = _ns(flash("Suspend_Erase_Time"))
        out.set("nand", "program_suspend_latency", duration(prog), "Suspend_Program_Time (ns)")
        out.set("nand", "erase_suspend_latency", duration(erase), "Suspend_Erase_Time (ns)")
    elif mode != "NONE":
        out.warn(
            "<CMD_Suspension_Support>",
            mode,
            "ssdlab's nand.suspend suspends programs and erases alike; left off",
        )


# --------------------------------------------------------------------------------------------
# workload.xml


class _Flow:
    def __init__(self, kind: str, params: _Params, element: XmlElement) -> None:
        self.kind = kind
        self.params = params
        self.line = element.line
        self.caching = params("Device_Level_Data_Caching_Mode").choice(
            {m: m for m in ("TURNED_OFF", "WRITE_CACHE", "READ_CACHE", "WRITE_READ_CACHE")}
        )
        self.occupancy = params("Initial_Occupancy_Percentage").integer(0, 100)


class _Scenario:
    def __init__(self, line: int, flows: list[_Flow]) -> None:
        self.line = line
        self.flows = flows


def _priority_classes(
    out: Imported, device: _Params, flash: _Params, flows: list[_Scenario] | None
) -> None:
    """PRIORITY_OUT_OF_ORDER: MQSim orders each chip's transactions by their flow's class
    (urgent first, then weights 4/2/1: TSU_Priority_OutOfOrder.cpp,
    Host_Interface_NVMe_Priorities.h). ssdlab serves the classes where NVMe does, at the SQ
    arbiter (whose default weights are MQSim's), when a scenario's flows differ in class: with
    a controller of one command slot per plane, the classes compete for the planes as MQSim's
    transaction queues make them."""
    policy = "PRIORITY_OUT_OF_ORDER"
    mixed = flows is not None and any(
        len({f.params.text("Priority_Class").upper() for f in s.flows}) > 1 for s in flows
    )
    nvme = device.text("HostInterface_Type").upper() == "NVME"
    if not mixed:
        why = "reads first, as ssdlab's read-priority dies; no scenario's flows differ in class"
    elif not nvme:
        why = "SATA has one queue: the flows' priority classes are not modelled"
    else:
        planes = (
            device("Flash_Channel_Count").integer(1, 1024)
            * device("Chip_No_Per_Channel").integer(1, 1024)
            * flash("Die_No_Per_Chip").integer(1, 64)
            * flash("Plane_No_Per_Die").integer(1, 64)
        )
        out.set(
            "interface",
            "arbitration",
            "weighted-round-robin",
            f"Transaction_Scheduling_Policy = {policy}, flows of several Priority_Class",
        )
        out.set("interface", "controller_slots", planes, "one command per plane (warned)")
        why = (
            "the flows' priority classes are served by NVMe weighted round robin over their"
            f" queues with {planes} controller slots (one per plane), not in each chip's"
            " transaction queues; reads first, as ssdlab's read-priority dies"
        )
    out.warn("<Transaction_Scheduling_Policy>", policy, why)


def _read_workload(path: str) -> list[_Scenario]:
    root = read_xml(path, "MQSim workload.xml")
    if root.tag != "MQSim_IO_Scenarios":
        raise ImportInputError(
            f"{path}, line {root.line}: root element <{root.tag}>, expected <MQSim_IO_Scenarios>"
            " (MQSim's workload.xml)"
        )
    scenarios = []
    for scenario in root.children:
        if scenario.tag != "IO_Scenario":
            raise ImportInputError(
                f"{path}, line {scenario.line}: <{scenario.tag}> in <MQSim_IO_Scenarios>,"
                " expected <IO_Scenario>"
            )
        flows = []
        for element in scenario.children:
            if element.tag == "IO_Flow_Parameter_Set_Synthetic":
                names = SYNTHETIC
                kind = "synthetic"
            elif element.tag == "IO_Flow_Parameter_Set_Trace_Based":
                names = TRACE_BASED
                kind = "trace"
            else:
                raise ImportInputError(
                    f"{path}, line {element.line}: <{element.tag}> in <IO_Scenario>, expected"
                    " <IO_Flow_Parameter_Set_Synthetic> or <IO_Flow_Parameter_Set_Trace_Based>"
                )
            defaults = {n: FLOW_DEFAULTS.get(n, "") for n in names}
            flows.append(_Flow(kind, _Params(path, element, defaults, set()), element))
        if not flows:
            raise ImportInputError(
                f"{path}, line {scenario.line}: <IO_Scenario> with no flow, expected one or more"
            )
        scenarios.append(_Scenario(scenario.line, flows))
    if not scenarios:
        raise ImportInputError(f"{path}: no <IO_Scenario>, expected one or more")
    return scenarios


# A flow's element left out: MQSim leaves these uninitialised (IO_Flow_Parameter_Set.h has no
# defaults), so ssdlab takes neutral values (docs/import.md): the shipped file's classes and
# caching mode, every resource, the whole share, one request in flight, 4 KiB requests aligned
# to their size, no preconditioning share; with neither Stop_Time nor a request count the flow
# is refused, as it would never stop.
FLOW_DEFAULTS = {
    "Priority_Class": "HIGH",
    "Device_Level_Data_Caching_Mode": "WRITE_CACHE",
    "Channel_IDs": "",
    "Chip_IDs": "",
    "Die_IDs": "",
    "Plane_IDs": "",
    "Initial_Occupancy_Percentage": "0",
    "Working_Set_Percentage": "100",
    "Synthetic_Generator_Type": "QUEUE_DEPTH",
    "Read_Percentage": "0",
    "Address_Distribution": "RANDOM_UNIFORM",
    "Percentage_of_Hot_Region": "0",
    "Generated_Aligned_Addresses": "true",
    "Address_Alignment_Unit": "8",
    "Request_Size_Distribution": "FIXED",
    "Average_Request_Size": "8",
    "Variance_Request_Size": "0",
    "Seed": "0",
    "Average_No_of_Reqs_in_Queue": "1",
    "Bandwidth": "0",
    "Stop_Time": "0",
    "Total_Requests_To_Generate": "0",
    "Intensity": "0",
    "File_Path": "",
    "Percentage_To_Be_Executed": "100",
    "Relay_Count": "1",
    "Time_Unit": "NANOSECOND",
}


def _ids(r: Reader, count: int) -> set[int] | None:
    """A resource list (``0,1,2``): the set of ids, or None when not given."""
    if not r.value:
        return None
    ids = set()
    for part in r.value.split(","):
        sub = Reader(r.where, part)
        try:
            ids.add(sub.integer(0, count - 1))
        except ImportInputError:
            raise r.fail(f"comma-separated ids from 0 to {count - 1}") from None
    return ids


def _flows(out: Imported, scenarios: list[_Scenario]) -> None:
    config_json = resolve(out)
    capacity = _core.job_capacity(config_json)
    resolved = json.loads(config_json)
    nand = resolved["nand"]
    counts = {
        "Channel_IDs": int(nand["channels"]),
        "Chip_IDs": int(nand["packages_per_channel"]),
        "Die_IDs": int(nand["dies_per_package"]),
        "Plane_IDs": int(nand["planes_per_die"]),
    }
    depth = int(resolved["interface"]["queue_depth"])
    for number, scenario in enumerate(scenarios, start=1):
        label = f"scenario-{number}"
        synthetic = [f for f in scenario.flows if f.kind == "synthetic"]
        traces = [f for f in scenario.flows if f.kind == "trace"]
        for flow in scenario.flows:
            _flow_common(out, flow, counts)
        if traces:
            first = traces[0]
            if len(scenario.flows) > 1:
                out.warn(
                    f"IO_Scenario {number} (line {scenario.line})",
                    f"{len(scenario.flows)} flows",
                    "a trace replay runs alone in ssdlab: only the first trace flow is kept",
                    source=out.flow_source,
                )
            out.replays.append((label, _replay_args(first)))
            percent = first.params("Percentage_To_Be_Executed").integer(1, 100)
            if percent != 100:
                out.warn(
                    f"<Percentage_To_Be_Executed> (line {first.line})",
                    percent,
                    "pass --io-count with that share of the trace's requests (ssdlab trace stats"
                    " counts them)",
                    source=out.flow_source,
                )
            continue
        # MQSim gives each of n flows sharing every resource 1/n of the logical space.
        share = capacity // len(synthetic)
        jobs = [_synthetic_job(out, i, f, share, depth) for i, f in enumerate(synthetic)]
        for job, flow in zip(jobs, synthetic, strict=True):
            try:
                Job(**job)
            except _core.SsdlabError as e:
                raise ImportInputError(
                    f"{out.flow_source}, line {flow.line}: the flow ssdlab would run is refused:"
                    f" {e}"
                ) from None
        out.flows.append((label, jobs))


def _flow_common(out: Imported, flow: _Flow, counts: dict[str, int]) -> None:
    p = flow.params
    # Every flow's class is checked, a trace flow's too (a synthetic one carries it as its
    # job's priority; a trace replay runs alone, where a class changes nothing).
    p("Priority_Class").choice({k: k for k in ("URGENT", "HIGH", "MEDIUM", "LOW")})
    for tag, count in counts.items():
        ids = _ids(p(tag), count)
        if ids is not None and len(ids) < count:
            out.warn(
                f"<{tag}> (line {p.given[tag].line})",
                p.text(tag),
                "resource partitioning is not modelled: the flow uses every resource",
                source=out.flow_source,
            )
    for tag, why in UNREAD.items():
        if tag in p.given:
            element = p.given[tag]
            out.warn(
                f"<{tag}> (line {element.line})", element.text.strip(), why, source=out.flow_source
            )


def _synthetic_job(
    out: Imported, index: int, flow: _Flow, share: int, depth: int
) -> dict[str, Any]:
    p = flow.params

    def at(tag: str) -> str:
        element = p.given.get(tag)
        return f"(line {element.line})" if element else f"(the flow at line {flow.line})"

    job: dict[str, Any] = {"name": f"flow{index + 1}"}
    # MQSim's four classes are NVMe's (Host_Interface_NVMe_Priorities.h): the flow's queue is
    # created with it; only weighted round robin (interface.arbitration) tells them apart.
    job["priority"] = p("Priority_Class").choice(
        {k: k.lower() for k in ("URGENT", "HIGH", "MEDIUM", "LOW")}
    )
    reads = p("Read_Percentage").integer(0, 100)
    distribution = p("Address_Distribution").choice(
        {"STREAMING": "seq", "RANDOM_UNIFORM": "uniform", "RANDOM_HOTCOLD": "hotcold"}
    )
    random = distribution != "seq"
    if reads == 100:
        job["rw"] = "randread" if random else "read"
    elif reads == 0:
        job["rw"] = "randwrite" if random else "write"
    else:
        job["rw"] = "randrw" if random else "rw"
        job["rwmixread"] = reads
    sectors = p("Average_Request_Size").integer(1, 1 << 16)
    bs = sectors * SECTOR_BYTES
    job["bs"] = size(bs)
    if p("Request_Size_Distribution").choice({"FIXED": "FIXED", "NORMAL": "NORMAL"}) == "NORMAL":
        out.warn(
            f"<Request_Size_Distribution> {at('Request_Size_Distribution')}",
            f"NORMAL (variance {p.text('Variance_Request_Size')} sectors)",
            "ssdlab's sizes are fixed or a weighted mix: the mean size used",
            source=out.flow_source,
        )
    aligned = p("Generated_Aligned_Addresses").boolean(("true",), ("false",))
    unit = p("Address_Alignment_Unit").integer(1, 1 << 16)
    if not aligned or unit != sectors:
        out.warn(
            f"<Address_Alignment_Unit> {at('Address_Alignment_Unit')}",
            f"{unit} sectors (aligned {str(aligned).lower()})",
            "ssdlab aligns a job's offsets to its request size",
            source=out.flow_source,
        )
    ws = p("Working_Set_Percentage").integer(0, 2**31 - 1)
    if not 1 <= ws <= 100:
        out.warn(
            f"<Working_Set_Percentage> {at('Working_Set_Percentage')}",
            ws,
            "outside 1..100: 100 used, as MQSim does",
            source=out.flow_source,
        )
        ws = 100
    region = share * ws // 100 // bs * bs
    if region < bs:
        raise p("Working_Set_Percentage").fail(
            f"a working set of at least one request ({bs} B) of the flow's {share} B share"
        )
    job["offset"] = size(index * share // bs * bs)
    job["size"] = size(region)
    if distribution == "hotcold":
        hot = p("Percentage_of_Hot_Region").integer(1, 99)
        # MQSim: (100 − H) % of the requests go to the first H % of the working set.
        job["distribution"] = f"zoned:{100 - hot}/{hot}:{hot}/{100 - hot}"
    generator = p("Synthetic_Generator_Type").choice({"QUEUE_DEPTH": "qd", "BANDWIDTH": "bw"})
    if generator == "qd":
        job["iodepth"] = p("Average_No_of_Reqs_in_Queue").integer(1, 65535)
    else:
        # MQSim's mean gap is 10^9 / ((Bandwidth / 512) / Average_Request_Size) ns, in whole
        # numbers (Host_System.cpp): rate_iops = Bandwidth // request bytes.
        bandwidth = p("Bandwidth").integer(1, 2**32 - 1)
        if bandwidth < bs:
            raise p("Bandwidth").fail(f"at least one {bs}-byte request per second ({bs} B/s)")
        job["rate_iops"] = bandwidth // bs
        job["iodepth"] = min(depth, 1024)
        out.warn(
            f"<Synthetic_Generator_Type> {at('Synthetic_Generator_Type')}",
            f"BANDWIDTH ({bandwidth} B/s)",
            "MQSim's gaps between arrivals are exponential (Poisson arrivals); ssdlab's"
            f" rate_iops = {bandwidth // bs} spaces them evenly",
            source=out.flow_source,
        )
    stop = p("Stop_Time").integer(0, 10**16)  # ns; ssdlab's clock holds about 213 days
    total = p("Total_Requests_To_Generate").integer(0, 2**32 - 1)
    if stop:
        job["runtime"] = duration(stop * NS)
    elif total:
        job["io_count"] = total
    else:
        raise p("Stop_Time").fail(
            "Stop_Time (ns) or Total_Requests_To_Generate above 0 (else the flow never stops)"
        )
    if "Seed" in p.given:
        out.warn(
            f"<Seed> {at('Seed')}",
            p.text("Seed"),
            "each flow's generator is seeded from the run's --seed",
            source=out.flow_source,
        )
    return job


def _replay_args(flow: _Flow) -> list[str]:
    p = flow.params
    path = p.text("File_Path")
    if not path:
        raise p("File_Path").fail("the trace file's path")
    scale = p("Time_Unit").choice({"PICOSECOND": "0.001", "NANOSECOND": "1", "MICROSECOND": "1000"})
    repeat = p("Relay_Count").integer(1, 1 << 20)
    args = ["--trace", path, "--format", "disksim"]
    if scale != "1":
        args += ["--time-scale", scale]
    if repeat != 1:
        args += ["--repeat", str(repeat)]
    return args


__all__ = ["import_mqsim"]
