"""The interface report: every host interface ssdlab models, on one back end.

Not a document's figure: ssdlab's own comparison (issue 4), shipped like a reproduction so that
``ssdlab reproduce interfaces`` measures it, prints it and draws it. The back end is the
``small-tlc`` preset (4 channels × 2 dies of TLC, 800 MT/s buses; its FTL, controller and host
costs); only ``[interface]`` differs between rows. Each row is one sweep file
(``interfaces_*.toml``), since the kinds' queue-depth rules differ and a sweep has one base.

Per interface: the device's queue depth (commands it holds at once), the QD1 4 KiB random read
latency (mean and median), and the sequential read and write bandwidth with 1 MiB requests 32
deep. No row has a document value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import Experiment, Row

# (sweep file, interface.kind, interface.link, label), in the report's order.
INTERFACES = (
    ("interfaces_nvme.toml", "nvme", "pcie3x4", "NVMe, PCIe Gen3 x4"),
    ("interfaces_nvme.toml", "nvme", "pcie1x1", "NVMe, PCIe Gen1 x1"),
    ("interfaces_sata.toml", "sata", "sata3", "SATA 3, NCQ 32"),
    ("interfaces_ide-udma6.toml", "ide", "udma6", "IDE, UDMA6"),
    ("interfaces_ide-ideal.toml", "ide", "ideal", "IDE, ideal link"),
    ("interfaces_ufs-g3x2.toml", "ufs", "hs-g3x2", "UFS 2.0, HS-G3 ×2"),
    ("interfaces_ufs-g4x2.toml", "ufs", "hs-g4x2", "UFS 3.x, HS-G4 ×2"),
    ("interfaces_emmc51.toml", "emmc", "hs400", "eMMC 5.1 HS400, CQ 32"),
    ("interfaces_emmc50.toml", "emmc", "hs200", "eMMC 5.0 HS200, no CQ"),
    ("interfaces_dram.toml", "dram", "lpddr3-1200x32", "DRAM interface (LPDDR3, DMA 450 MB/s)"),
)
SWEEPS = tuple(dict.fromkeys(sweep for sweep, *_ in INTERFACES))

NOTES = (
    "One back end for all: the small-tlc preset's NAND (4 channels × 2 dies × 2 planes of TLC,"
    " 800 MT/s buses), FTL, controller and host costs; every figure of a row comes from its"
    " interface alone. Sequential writes are bound by the TLC program time (about 180 MB/s)"
    " unless the interface is slower; sequential reads by the NAND buses (about 3 GB/s) unless"
    " the interface is slower, or, without a queue, by one command's latency.",
    "Device queue depth is what the device holds at once (NVMe: queues × (entries − 1));"
    " the host keeps the rest of fio's iodepth waiting. Requests are cut into commands of at"
    " most interface.mdts (256 KiB here) or, for the DRAM interface, its chunk (256 KiB).",
    "The DRAM interface row uses the seed000-lpddr3-dramif preset's protocol settings (host DMA"
    " 450 MB/s, cache invalidation 290 µs per 512 KB, 1 MiB buffer) on this back end; its read"
    " bandwidth is bound by the host's copies, not by the LPDDR3 channel.",
)


def _rows(table: Any, kind: str, link: str) -> Any:
    column = "config.interface.kind"
    if column in table.columns:
        kinds = table[column].fill_null("nvme")
    else:
        import polars as pl

        kinds = pl.Series(["nvme"] * table.height)
    return table.filter((kinds == kind) & (table["config.interface.link"] == link))


def _value(table: Any, kind: str, link: str, rw: str, column: str) -> float | None:
    if table is None or column not in table.columns:
        return None
    rows = _rows(table, kind, link)
    rows = rows.filter((rows["job.rw"] == rw) & (rows["status"] == "ok"))
    if rows.height == 0:
        return None
    values = rows[column].drop_nulls()
    return float(values.mean()) if values.len() else None


def measure(table: Any) -> list[dict[str, Any]]:
    """One dict per interface: label, kind, link, queue depth, latency and bandwidths."""
    out = []
    for _, kind, link, label in INTERFACES:
        depth = _value(table, kind, link, "randread", "iface.device_queue_depth")
        out.append(
            {
                "interface": label,
                "kind": kind,
                "link": link,
                "device_queue_depth": int(depth) if depth is not None else None,
                "read_latency_us_mean": _value(
                    table, kind, link, "randread", "ops.read.latency_us.mean"
                ),
                "read_latency_us_p50": _value(
                    table, kind, link, "randread", "ops.read.latency_us.p50"
                ),
                "seq_read_mb_s": _value(table, kind, link, "read", "total.bandwidth_mb_s"),
                "seq_write_mb_s": _value(table, kind, link, "write", "total.bandwidth_mb_s"),
            }
        )
    return out


def overview(table: Any) -> tuple[list[str], list[list[str]]]:
    """The report as one table: an interface a row."""

    def num(value: float | None, fmt: str) -> str:
        return "–" if value is None else format(value, fmt)

    headers = [
        "interface",
        "link",
        "device queue depth",
        "QD1 4 KiB read mean µs",
        "p50 µs",
        "seq read MB/s",
        "seq write MB/s",
    ]
    cells = [
        [
            e["interface"],
            e["link"],
            num(e["device_queue_depth"], ","),
            num(e["read_latency_us_mean"], ".1f"),
            num(e["read_latency_us_p50"], ".1f"),
            num(e["seq_read_mb_s"], ",.0f"),
            num(e["seq_write_mb_s"], ",.0f"),
        ]
        for e in measure(table)
    ]
    return headers, cells


def compare(table: Any) -> list[Row]:
    name = "interfaces"
    rows: list[Row] = []
    for entry in measure(table):
        label = entry["interface"]
        depth = entry["device_queue_depth"]
        basis = "ssdlab only (no document)"
        note = f"{entry['kind']} link {entry['link']}; device queue depth " + (
            str(depth) if depth is not None else "–"
        )
        p50 = entry["read_latency_us_p50"]
        rows += [
            Row(
                name,
                f"{label}: QD1 4 KiB random read latency, mean",
                "µs",
                None,
                entry["read_latency_us_mean"],
                basis,
                note + ("" if p50 is None else f"; p50 {p50:.1f} µs"),
            ),
            Row(
                name,
                f"{label}: sequential read, 1 MiB × 32",
                "MB/s",
                None,
                entry["seq_read_mb_s"],
                basis,
            ),
            Row(
                name,
                f"{label}: sequential write, 1 MiB × 32",
                "MB/s",
                None,
                entry["seq_write_mb_s"],
                basis,
            ),
        ]
    return rows


def plot(table: Any, out_dir: Path) -> list[Path]:
    import numpy as np
    from matplotlib.figure import Figure

    from ..experiments.plots import save_figure

    entries = measure(table)
    labels = [e["interface"] for e in entries]
    xs = np.arange(len(entries))
    figure = Figure(figsize=(10, 6.4), layout="constrained")
    top, bottom = figure.subplots(2, 1, sharex=True)
    width = 0.4
    for offset, key, label in (
        (-width / 2, "seq_read_mb_s", "sequential read"),
        (width / 2, "seq_write_mb_s", "sequential write"),
    ):
        pairs = [(x + offset, e[key]) for x, e in zip(xs, entries, strict=True) if e[key]]
        top.bar([x for x, _ in pairs], [v for _, v in pairs], width=width * 0.95, label=label)
    top.set_yscale("log")
    top.set_ylabel("MB/s (1 MiB × 32)")
    top.grid(True, axis="y", alpha=0.3)
    top.legend(fontsize=8)
    top.set_title("ssdlab interfaces on the small-tlc back end", fontsize=11)
    pairs = [(x, e["read_latency_us_mean"]) for x, e in zip(xs, entries, strict=True)]
    pairs = [(x, v) for x, v in pairs if v is not None]
    bottom.bar([x for x, _ in pairs], [v for _, v in pairs], width=0.6, color="#777777")
    bottom.set_ylabel("QD1 4 KiB read latency (µs)")
    bottom.grid(True, axis="y", alpha=0.3)
    bottom.set_xticks(xs, labels, rotation=25, ha="right", fontsize=8)
    return [save_figure(figure, out_dir / "interfaces.png")]


EXPERIMENTS = (
    Experiment(
        name="interfaces",
        document="ssdlab (issue 4: host interfaces)",
        title="Every host interface on one back end",
        target="interface report",
        summary="NVMe, SATA, IDE, UFS, eMMC and the DRAM interface on the small-tlc NAND: QD1"
        " 4 KiB read latency, sequential 1 MiB read and write",
        sweep=SWEEPS[0],
        extra_sweeps=SWEEPS[1:],
        compare=compare,
        plots=plot,
        notes=NOTES,
        overview=overview,
    ),
)
