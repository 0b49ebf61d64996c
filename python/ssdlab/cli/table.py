"""Human-readable tables of a result dict (schema ``ssdlab.result/1``).

Every lookup tolerates a missing key or a zero count: a result of a write-only job has no read
row, and a run stopped early may have no latency figures at all. Missing figures print as "-".
"""

from __future__ import annotations

import io
import numbers
from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

MISSING = "-"
#: A ratio whose denominator is zero (a WAF with no host writes): not a figure, unlike 0.
NOT_DEFINED = "–"
OP_ORDER = ("read", "write", "trim", "flush")


def get_path(data: Any, *path: str) -> Any:
    """``data[path[0]][path[1]]…``, or None where a step is missing or not a mapping."""
    for key in path:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def fmt_int(value: Any) -> str:
    return f"{int(value):,}" if _is_number(value) else MISSING


def fmt_float(value: Any, decimals: int = 1) -> str:
    return f"{value:,.{decimals}f}" if _is_number(value) else MISSING


def fmt_latency(value: Any) -> str:
    """Microseconds with a precision that suits the magnitude (0.05 µs vs 12,345 µs)."""
    if not _is_number(value):
        return MISSING
    if value < 10:
        return f"{value:.2f}"
    if value < 1000:
        return f"{value:.1f}"
    return f"{value:,.0f}"


def fmt_seconds(value: Any) -> str:
    if not _is_number(value):
        return MISSING
    if value == 0:
        return "0 s"
    if value < 1e-3:
        return f"{value * 1e6:.1f} µs"
    if value < 1:
        return f"{value * 1e3:.2f} ms"
    return f"{value:.3f} s"


SECONDS_PER_YEAR = 365.25 * 86400


def fmt_years(value: Any) -> str:
    """A span given in years, in the largest unit that keeps it at 1 or more (a PCM line that
    wears out in hours reads "5.2 hours", not "0.0 years")."""
    if not _is_number(value):
        return MISSING
    seconds = value * SECONDS_PER_YEAR
    for unit, size in (("years", SECONDS_PER_YEAR), ("days", 86400.0), ("hours", 3600.0)):
        if seconds >= size:
            return f"{seconds / size:,.1f} {unit}"
    if seconds >= 1:
        return f"{seconds:.1f} s"
    return fmt_seconds(seconds)


def fmt_fraction(value: Any) -> str:
    """Utilisations are fractions of busy time, shown as percentages."""
    return f"{value * 100:.1f}%" if _is_number(value) else MISSING


def fmt_bytes(value: Any) -> str:
    if not _is_number(value):
        return MISSING
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return MISSING  # unreachable; keeps type checkers content


def _job_line(job: Any) -> str:
    if not isinstance(job, Mapping):
        return ""
    parts = []
    keys = ("rw", "bs", "iodepth", "numjobs", "rwmixread", "io_count", "runtime", "size")
    if "trace" in job:
        keys = ("trace", "mode", "time_scale", "iodepth", "queues", "repeat", "io_count", "runtime")
    for key in keys:
        value = job.get(key)
        if value is None:
            continue
        if isinstance(value, Mapping):
            value = ",".join(f"{k}:{v}" for k, v in value.items())
        parts.append(f"{key}={value}")
    return " ".join(parts)


def header(result: Mapping[str, Any]) -> Text:
    text = Text()
    text.append(str(result.get("config_name", "?")), style="bold")
    text.append(f"  seed {result.get('seed', '?')}")
    job = _job_line(result.get("job"))
    if job:
        text.append(f"  job: {job}")
    sim = result.get("sim") or {}
    text.append(
        f"\nsimulated {fmt_seconds(sim.get('simulated_time_s'))}"
        f" (measured {fmt_seconds(sim.get('measured_time_s'))}),"
        f" {fmt_int(sim.get('requests'))} requests, {fmt_int(sim.get('events'))} events,"
        f" stop: {sim.get('stop_reason', MISSING)}"
    )
    trace = result.get("trace")
    if isinstance(trace, Mapping) and trace.get("format") == "session":
        recorded = trace.get("recorded") or {}
        same = trace.get("same_config") and trace.get("same_seed")
        text.append(
            f"\nsession log {trace.get('log')}: {fmt_int(trace.get('replayed'))} requests"
            f" replayed; recorded on {recorded.get('config_name', '?')}"
            f" (seed {recorded.get('seed', '?')}, {recorded.get('clock', '?')} clock)"
            + (
                ": the same device and seed, so the same simulated figures"
                if same
                else ": another config or seed than this run's, so other figures"
            )
        )
    elif isinstance(trace, Mapping):
        mapping = trace.get("mapping") or {}
        packed = trace.get("compression")
        packed = f" ({packed})" if packed not in (None, "none") else ""
        line = (
            f"\ntrace: {trace.get('format', '?')}{packed}"
            f", {fmt_int(trace.get('replayed'))} of {fmt_int(trace.get('records'))} requests"
            f" replayed ({fmt_int(trace.get('passes'))} pass(es));"
            f" {mapping.get('layout', '?')} over {fmt_int(mapping.get('devices_total'))}"
            f" device(s), span {fmt_bytes(mapping.get('span_bytes'))}"
        )
        if mapping.get("applied"):
            line += f", {mapping.get('fit')} to {fmt_bytes(mapping.get('capacity_bytes'))}"
            line += f" ({fmt_int(mapping.get('moved'))} moved)"
        skipped = [
            f"{fmt_int(trace.get(key))} {label}"
            for key, label in (
                ("skipped_bad_lines", "bad lines skipped"),
                ("filtered_device", "other devices"),
                ("filtered_window", "outside the window"),
                ("zero_length", "zero-length"),
                ("unaligned", "unaligned (widened)"),
                ("out_of_order", "out of order"),
            )
            if _is_number(trace.get(key)) and trace.get(key)
        ]
        if skipped:
            line += "; " + ", ".join(skipped)
        gap = trace.get("leading_gap_s")
        if _is_number(gap):
            line += (
                f"; the first request lies {gap:,.1f} s of trace time before the second, and the"
                " device idles through it (an outlier? skip it with --start)"
            )
        text.append(line)
    return text


def ops_table(result: Mapping[str, Any]) -> Table:
    table = Table(
        box=box.SIMPLE_HEAD, title="I/O", title_justify="left", pad_edge=False, show_edge=False
    )
    table.add_column("op")
    for column in ("count", "IOPS", "MiB/s", "MB/s"):
        table.add_column(column, justify="right")
    for column in ("mean", "p50", "p99", "p99.9", "max"):
        table.add_column(f"{column} µs", justify="right")

    ops = result.get("ops") if isinstance(result.get("ops"), Mapping) else {}
    names = [op for op in OP_ORDER if op in ops] + [op for op in ops if op not in OP_ORDER]
    for op in names:
        stats = ops.get(op) or {}
        latency = stats.get("latency_us") or {}
        has_latency = _is_number(stats.get("count")) and stats.get("count") > 0
        table.add_row(
            op,
            fmt_int(stats.get("count")),
            fmt_float(stats.get("iops"), 0),
            fmt_float(stats.get("bandwidth_mib_s")),
            fmt_float(stats.get("bandwidth_mb_s")),
            *(
                fmt_latency(latency.get(key)) if has_latency else MISSING
                for key in ("mean", "p50", "p99", "p99_9", "max")
            ),
        )
    above = [
        f"{fmt_int(n)} {op}"
        for op in names
        if _is_number(n := ((ops.get(op) or {}).get("latency_us") or {}).get("above_histogram"))
        and n > 0
    ]
    if above:
        # The histogram stops at one simulated hour: say so rather than print clamped figures.
        table.caption = (
            f"latencies above one hour: {', '.join(above)}; percentiles among them read as "
            "3.6e9 µs, the histogram's top (mean and max are exact)"
        )
        table.caption_justify = "left"
    total = result.get("total")
    if isinstance(total, Mapping):
        table.add_row(
            Text("total", style="bold"),
            fmt_int(total.get("count")),
            fmt_float(total.get("iops"), 0),
            fmt_float(total.get("bandwidth_mib_s")),
            fmt_float(total.get("bandwidth_mb_s")),
            *([""] * 5),
            end_section=False,
        )
    return table


def device_table(result: Mapping[str, Any]) -> Table:
    device = result.get("device") if isinstance(result.get("device"), Mapping) else {}
    util = result.get("utilisation") if isinstance(result.get("utilisation"), Mapping) else {}

    table = _figure_table("device")

    erase = device.get("erase_count") or {}
    if _is_number(device.get("logical_bytes")):
        table.add_row("logical capacity", fmt_bytes(device["logical_bytes"]), "seen by the host")
    if device.get("host_pages_written") == 0:
        # NAND pages per host page is not defined without host pages; the result holds 0.
        table.add_row("write amplification", NOT_DEFINED, "nothing written by the host")
    else:
        table.add_row("write amplification", fmt_float(device.get("write_amplification"), 3), "")
    steady = device.get("steady_state")
    if isinstance(steady, Mapping):
        table.add_row(
            "steady-state WAF",
            fmt_float(steady.get("write_amplification"), 3),
            "preconditioning's model plane, "
            + ("steady" if steady.get("converged") else "not yet steady at its cap")
            + f" after {fmt_float(steady.get('overwrite'), 2)} × capacity",
        )
    table.add_row(
        "pages written",
        fmt_int(device.get("nand_pages_written")),
        f"NAND, for {fmt_int(device.get('host_pages_written'))} pages of host data",
    )
    table.add_row(
        "pages read",
        fmt_int(device.get("nand_pages_read")),
        f"NAND, for {fmt_int(device.get('host_pages_read'))} pages of host data",
    )
    if _is_number(device.get("page_register_hits")) and device["page_register_hits"]:
        table.add_row(
            "page-register hits",
            fmt_int(device["page_register_hits"]),
            "pages read again from a plane's register, no sense",
        )
    if _is_number(device.get("read_ahead_pages")):
        table.add_row(
            "pages read ahead", fmt_int(device["read_ahead_pages"]), "firmware read-ahead"
        )
    table.add_row(
        "GC runs",
        fmt_int(device.get("gc_runs")),
        f"{fmt_int(device.get('gc_units_moved'))} map units moved",
    )
    table.add_row(
        "erases",
        fmt_int(device.get("erases")),
        # `erases` counts the run's; a block's count also holds its wear before the run
        # (preconditioning, `[reliability]` ageing), so the two differ on a used drive.
        f"in the run; a block's count min {fmt_int(erase.get('min'))}"
        f" / mean {fmt_float(erase.get('mean'), 2)} / max {fmt_int(erase.get('max'))}",
    )
    if _is_number(device.get("wear_level_migrations")) and device["wear_level_migrations"]:
        table.add_row("wear-level migrations", fmt_int(device["wear_level_migrations"]), "")
    if _is_number(device.get("trimmed_units")) and device["trimmed_units"]:
        table.add_row("trimmed map units", fmt_int(device["trimmed_units"]), "")
    if _is_number(device.get("unmapped_reads")) and device["unmapped_reads"]:
        table.add_row("unmapped reads", fmt_int(device["unmapped_reads"]), "never written")
    nand_ops = device.get("nand_ops")
    if isinstance(nand_ops, Mapping):
        table.add_row(
            "multi-plane operations",
            fmt_int(nand_ops.get("multi_plane_ops")),
            f"{fmt_int(nand_ops.get('single_plane_ops'))} on one plane;"
            f" {fmt_int(nand_ops.get('partners_refused'))} partners refused by the address rule",
        )
        table.add_row(
            "suspensions",
            fmt_int(nand_ops.get("program_suspensions")),
            f"programs; {fmt_int(nand_ops.get('erase_suspensions'))} erases",
        )
    merges = device.get("merges")
    if isinstance(merges, Mapping):
        # Only a block-mapped FTL (ftl.kind = "block", "bast" or "fast") reports merges.
        table.add_row(
            "merges",
            fmt_int(merges.get("full")),
            f"full; {fmt_int(merges.get('partial'))} partial, {fmt_int(merges.get('switch'))}"
            f" switch; {fmt_int(merges.get('pages_copied'))} pages copied",
        )
    ftl = result.get("ftl") if isinstance(result.get("ftl"), Mapping) else {}
    streams = ftl.get("streams")
    if isinstance(streams, list):
        # Only with ftl.streams > 1: one row per host write stream.
        for s in streams:
            if not isinstance(s, Mapping):
                continue
            table.add_row(
                f"stream {s.get('stream')} WAF",
                NOT_DEFINED
                if s.get("host_units_written") == 0
                else fmt_float(s.get("write_amplification"), 3),
                f"{fmt_int(s.get('host_units_written'))} host map units written,"
                f" {fmt_int(s.get('gc_units_moved'))} moved by GC",
            )
    mapping = ftl.get("mapping")
    if isinstance(mapping, Mapping):
        table.add_row(
            "mapping cache hits",
            fmt_fraction(mapping.get("hit_ratio")),
            f"{fmt_int(mapping.get('hits'))} hits / {fmt_int(mapping.get('misses'))} misses;"
            f" {fmt_int(mapping.get('cache_pages'))} of"
            f" {fmt_int(mapping.get('translation_pages'))} translation pages"
            f" in {str(mapping.get('location', '')).upper()}",
        )
        table.add_row(
            "translation pages",
            fmt_int(mapping.get("translation_reads")),
            f"read; {fmt_int(mapping.get('translation_writes'))} written",
        )

    for unit in ("channel", "die"):
        stats = util.get(unit) or {}
        if stats.get("per_unit") == []:
            # A device without NAND (PCM-only) has no channel or die to show.
            continue
        count = len(stats.get("per_unit") or [])
        table.add_row(
            f"{unit} utilisation",
            fmt_fraction(stats.get("mean")),
            f"mean of {count}, min {fmt_fraction(stats.get('min'))}"
            f" / max {fmt_fraction(stats.get('max'))}",
        )
    iface = result.get("interface") if isinstance(result.get("interface"), Mapping) else {}
    if iface:
        table.add_row(
            "host interface",
            str(iface.get("kind", "")),
            f"{iface.get('link', '')};"
            f" device queue depth {fmt_int(iface.get('device_queue_depth'))}",
        )
    if iface.get("kind") != "dram" and ("link_up" in util or "link_down" in util):
        table.add_row(
            "link utilisation",
            "",
            f"up {fmt_fraction(util.get('link_up'))} / down {fmt_fraction(util.get('link_down'))}",
        )
    return table


def _figure_table(title: str) -> Table:
    """An empty titled table of (figure, value, detail) rows."""
    table = Table(
        box=box.SIMPLE_HEAD,
        title=title,
        title_justify="left",
        pad_edge=False,
        show_edge=False,
    )
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_column("detail")
    return table


def dram_interface_table(dram: Mapping[str, Any]) -> Table:
    """The DRAM-interface protocol's shared buffer, copies and bus traffic."""
    table = _figure_table("DRAM interface")
    table.add_row(
        "interface bandwidth",
        f"{fmt_float(dram.get('interface_bandwidth_mb_s'))} MB/s",
        "data over the host's copy time (invalidation, DMA and waits for it)",
    )
    table.add_row(
        "DRAM bus traffic",
        fmt_bytes(_sum(dram, "storage_channel_bytes", "memory_channel_bytes")),
        f"storage channel {fmt_bytes(dram.get('storage_channel_bytes'))}"
        f" + memory channel {fmt_bytes(dram.get('memory_channel_bytes'))}"
        f" for {fmt_bytes(dram.get('data_bytes'))} of data",
    )
    table.add_row(
        "buffer waits",
        fmt_int(dram.get("buffer_waits")),
        f"{fmt_int(dram.get('fragmentation_waits'))} with enough space free but fragmented;"
        f" peak use {fmt_bytes(dram.get('peak_buffer_bytes'))}",
    )
    table.add_row(
        "bank conflicts",
        fmt_int(dram.get("bank_conflicts")),
        f"controller pre-empted by the host, {fmt_float(dram.get('bank_stall_ns'), 0)} ns in all",
    )
    return table


def _sum(values: Mapping[str, Any], *keys: str) -> Any:
    parts = [values.get(k) for k in keys]
    return sum(parts) if all(_is_number(p) for p in parts) else None


def reliability_table(rel: Mapping[str, Any]) -> Table:
    """Wear-out and read errors (present only when the config has ``[reliability]``)."""
    table = _figure_table("endurance and errors")
    table.add_row(
        "percentage used",
        f"{fmt_float(rel.get('percentage_used'), 1)} %",
        f"mean erases of the good blocks against the P/E limit of {fmt_int(rel.get('pe_limit'))}",
    )
    offline = rel.get("offline_zones")
    if offline is None:
        spare = (
            f"{fmt_int(rel.get('good_blocks'))} good blocks, read-only below"
            f" {fmt_int(rel.get('min_good_blocks'))}"
        )
    else:
        # A zoned drive keeps no spare blocks: a worn zone goes offline with its capacity.
        spare = f"usable zones against those at the start; {fmt_int(offline)} zones offline"
    table.add_row(
        "available spare",
        f"{fmt_float(rel.get('available_spare_percent'), 1)} %",
        f"{spare}; {fmt_int(rel.get('retired_blocks'))} retired,"
        f" {fmt_int(rel.get('factory_bad_blocks'))} bad from the factory",
    )
    table.add_row("read-only", "yes" if rel.get("read_only") else "no", "")
    table.add_row(
        "read retries",
        fmt_int(rel.get("reads_retried")),
        f"map-unit reads retried, {fmt_int(rel.get('read_retry_steps'))} steps in all",
    )
    table.add_row(
        "uncorrectable reads",
        fmt_int(rel.get("uncorrectable_reads")),
        f"{fmt_int(rel.get('failed_reads'))} requests failed",
    )
    table.add_row(
        "refused writes",
        fmt_int(_sum(rel, "refused_writes_read_only", "refused_writes_no_space")),
        f"read-only {fmt_int(rel.get('refused_writes_read_only'))},"
        f" no room {fmt_int(rel.get('refused_writes_no_space'))}",
    )
    return table


def cache_table(cache: Mapping[str, Any]) -> Table:
    """The cache buffer's figures (present only when the config has a ``[cache]``)."""
    table = _figure_table("cache buffer")
    lines, line_bytes = cache.get("lines"), cache.get("line_bytes")
    size = lines * line_bytes if _is_number(lines) and _is_number(line_bytes) else None
    table.add_row("lines", fmt_int(lines), f"{fmt_bytes(size)} of data")
    if _is_number(cache.get("translation_bytes")) and cache["translation_bytes"] > 0:
        # A cached map's translation pages share the DRAM (docs/cache.md).
        table.add_row(
            "DRAM",
            fmt_bytes(cache.get("dram_bytes")),
            f"{fmt_bytes(cache.get('data_bytes'))} of data lines,"
            f" {fmt_bytes(cache.get('translation_bytes'))} of translation pages,"
            f" {fmt_bytes(cache.get('reserved_bytes'))} reserved",
        )
    for op in ("read", "write"):
        table.add_row(
            f"{op} hit ratio",
            fmt_fraction(cache.get(f"{op}_hit_ratio")),
            f"{fmt_int(cache.get(f'{op}_hits'))} hits, {fmt_int(cache.get(f'{op}_misses'))} misses",
        )
    flushes = cache.get("flushes") if isinstance(cache.get("flushes"), Mapping) else {}
    table.add_row(
        "flushes",
        fmt_int(sum(v for v in flushes.values() if _is_number(v))),
        f"on-demand {fmt_int(flushes.get('on_demand'))}, background"
        f" {fmt_int(flushes.get('background'))}, pre-emptive {fmt_int(flushes.get('preemptive'))},"
        f" explicit {fmt_int(flushes.get('explicit'))}",
    )
    table.add_row(
        "writes that waited", fmt_int(cache.get("write_waits")), "for a line to be flushed"
    )
    table.add_row(
        "port conflicts",
        fmt_int(cache.get("port_conflicts")),
        f"host port waited {fmt_float(cache.get('host_port_wait_us'), 1)} µs in all",
    )
    energy = cache.get("energy") if isinstance(cache.get("energy"), Mapping) else {}
    table.add_row(
        "energy",
        f"{fmt_float(energy.get('dynamic_mj'), 3)} mJ",
        f"dynamic; leakage {fmt_float(energy.get('leakage_mw'), 3)} mW"
        f" ({fmt_float(energy.get('leakage_mj'), 3)} mJ)",
    )
    return table


def power_table(power: Mapping[str, Any]) -> Table:
    """Energy and average power (present only when the config has ``[power]``)."""
    table = _figure_table("Power")
    table.add_row(
        "average",
        f"{fmt_float(power.get('average_mw'), 1)} mW",
        f"{fmt_float(power.get('energy_mj'), 3)} mJ over the simulated time",
    )
    for key, label, what in (
        ("nand_array_mw", "NAND arrays", "sensing, programming, erasing"),
        ("nand_io_mw", "NAND I/O", "while the channels transfer"),
        ("nand_standby_mw", "NAND standby", "idle dies"),
        ("controller_mw", "controller", "idle power and busy cores"),
        ("data_path_mw", "data path", "ECC, buffer and host PHY per bit"),
        ("cache_mw", "cache buffer", "its DRAM, dynamic and leakage"),
        ("pcm_mw", "PCM", "reads and writes"),
    ):
        if key in power:
            table.add_row(label, f"{fmt_float(power.get(key), 1)} mW", what)
    return table


def pcm_table(pcm: Mapping[str, Any]) -> Table:
    """A PCM-only device's figures (present only when the config has a ``[pcm]``)."""
    table = _figure_table("PCM media")

    def by_size(sizes: Any) -> str:
        if not isinstance(sizes, Mapping) or not sizes:
            return ""
        return ", ".join(f"{fmt_int(n)} x {fmt_bytes(int(s))}" for s, n in sizes.items())

    table.add_row("reads", fmt_int(pcm.get("reads")), by_size(pcm.get("reads_by_size")))
    table.add_row("writes", fmt_int(pcm.get("writes")), by_size(pcm.get("writes_by_size")))
    pauses = fmt_int(pcm.get("write_pauses"))
    table.add_row("write pauses", pauses, "reads that suspended a program")
    table.add_row("Start-Gap moves", fmt_int(pcm.get("gap_moves")), "")
    wear = pcm.get("wear") if isinstance(pcm.get("wear"), Mapping) else {}
    years = wear.get("years_to_first_wear_out")
    wear_out = f"; first wear-out in {fmt_years(years)} at this rate"
    table.add_row(
        "line wear (max)",
        fmt_int(wear.get("max_line_writes")),
        f"mean {fmt_float(wear.get('mean_line_writes'), 6)} writes per line over"
        f" {fmt_int(wear.get('lines'))} lines" + (wear_out if _is_number(years) else ""),
    )
    energy = pcm.get("energy") if isinstance(pcm.get("energy"), Mapping) else {}
    table.add_row(
        "energy",
        f"{fmt_float(energy.get('write_uj'), 3)} µJ",
        f"writes; reads {fmt_float(energy.get('read_uj'), 3)} µJ"
        f" ({MISSING}: no figure in the config)",
    )
    return table


def hfsl_table(hfsl: Mapping[str, Any]) -> Table:
    """What HFSL, seed 002's host-side FTL, did (present only when it drove the device)."""
    table = _figure_table("HFSL (host-side FTL)")
    c = hfsl.get("counters") if isinstance(hfsl.get("counters"), Mapping) else {}
    table.add_row(
        "raw commands",
        fmt_int(hfsl.get("raw_commands")),
        f"{fmt_float(hfsl.get('raw_commands_per_request'), 2)} per host request",
    )
    table.add_row(
        "page writes",
        fmt_int((c.get("writes_to_pcm") or 0) + (c.get("writes_to_nand") or 0)),
        f"host writes by logical page: {fmt_int(c.get('writes_to_pcm'))} to PCM (small or"
        f" metadata), {fmt_int(c.get('writes_to_nand'))} to NAND",
    )
    table.add_row(
        "NAND programs",
        fmt_int(c.get("nand_programs")),
        f"reads {fmt_int(c.get('nand_reads'))}, erases {fmt_int(c.get('nand_erases'))}",
    )
    table.add_row(
        "NAND updates",
        fmt_int(c.get("nand_updates")),
        "NAND pages read to merge a partial write (seed 002 Fig. 15)",
    )
    table.add_row(
        "PCM writes",
        fmt_int(c.get("pcm_writes")),
        f"{fmt_bytes(c.get('pcm_bytes_written') or 0)}; reads {fmt_int(c.get('pcm_reads'))}"
        f" ({fmt_bytes(c.get('pcm_bytes_read') or 0)})",
    )
    table.add_row(
        "evictions",
        fmt_int(c.get("evictions")),
        "logical pages moved from a full PCM to NAND",
    )
    table.add_row(
        "GC runs",
        fmt_int(c.get("gc_runs")),
        f"{fmt_int(c.get('gc_pages_moved'))} pages moved",
    )
    table.add_row(
        "unwritten reads",
        fmt_int(c.get("unmapped_reads")),
        "logical pages read before any write: zeros, no raw command (hfsl.request_cost only)",
    )
    table.add_row(
        "data in PCM",
        fmt_int(hfsl.get("pcm_pages")),
        f"logical pages at the end; {fmt_int(hfsl.get('nand_pages'))} in NAND",
    )
    refused = hfsl.get("refused_writes") or 0
    reasons = hfsl.get("refusals") if isinstance(hfsl.get("refusals"), list) else []
    table.add_row(
        "refused writes",
        fmt_int(refused),
        str(reasons[0]) if reasons else "writes into another application's range (hfsl.protect)",
    )
    q = hfsl.get("queues") if isinstance(hfsl.get("queues"), Mapping) else {}
    table.add_row(
        "queue sends",
        fmt_int(q.get("batches")),
        f"{fmt_float(q.get('commands_per_batch'), 2)} commands each; mean wait"
        f" {fmt_float(q.get('mean_wait_us'), 2)} µs; {fmt_int(q.get('timer_waits'))} waited"
        " for the timer",
    )
    if hfsl.get("skipped_requests"):
        table.add_row(
            "skipped",
            fmt_int(hfsl.get("skipped_requests")),
            "trims and flushes: HFSL has no command for them",
        )
    table.add_row(
        "map writes",
        fmt_int(c.get("map_writes")),
        f"{fmt_bytes(c.get('map_bytes_written') or 0)} of entries to the PCM's map area"
        f" ({fmt_bytes(hfsl.get('map_area_bytes') or 0)}); map kept in"
        f" {str(hfsl.get('map_store') or 'pcm').upper()}",
    )
    cut = hfsl.get("power_cut")
    if isinstance(cut, Mapping):
        table.add_row(
            "power cut",
            f"event {fmt_int(cut.get('event'))}",
            f"at {fmt_float(cut.get('at_us'), 1)} µs, after"
            f" {fmt_int(cut.get('requests_acknowledged'))} acknowledged requests"
            f"{', one under way' if cut.get('request_cut') else ''};"
            f" {fmt_int(cut.get('commands_in_flight'))} commands in the device,"
            f" {fmt_int(cut.get('commands_queued'))} queued",
        )
        table.add_row(
            "restart",
            f"{fmt_float(cut.get('recovery_us'), 1)} µs",
            f"read {fmt_bytes(cut.get('map_bytes_read') or 0)} of map from PCM,"
            f" {fmt_int(cut.get('recovery_erases'))} erases;"
            f" {fmt_int(cut.get('entries_recovered'))} entries recovered,"
            f" {fmt_int(cut.get('entries_dropped'))} dropped"
            + ("; the restart before it was cut too" if cut.get("restart_cut") else ""),
        )
        table.add_row(
            "lost",
            f"{fmt_int(cut.get('lost_pages'))} pages",
            f"{fmt_int(cut.get('lost_sub_pages'))} sub-pages do not read back their acknowledged"
            f" write; the cut write reads back old {fmt_int(cut.get('cut_write_old'))},"
            f" new {fmt_int(cut.get('cut_write_new'))}, torn {fmt_int(cut.get('cut_write_torn'))}",
        )
    return table


def power_loss_table(cut: Mapping[str, Any]) -> Table:
    """A power cut on the page-mapped FTL and the recovery after it (docs/power-loss.md)."""
    table = _figure_table("Power loss")
    plp = "with" if cut.get("power_loss_protection") else "without"
    table.add_row(
        "power cut",
        f"event {fmt_int(cut.get('event'))}",
        f"at {fmt_float(cut.get('at_us'), 1)} µs, {plp} power-loss protection;"
        f" {fmt_int(cut.get('checkpoints'))} map checkpoints taken"
        f" ({fmt_int(cut.get('checkpoints_on_flash'))} on flash),"
        f" {fmt_int(cut.get('checkpoint_pages_written'))} map pages programmed"
        f" (WAF share {fmt_float(cut.get('checkpoint_write_amplification'), 3)})",
    )
    table.add_row(
        "at the cut",
        f"{fmt_int(cut.get('programs_lost'))} programs lost",
        f"{fmt_int(cut.get('programs_finished_on_plp'))} finished on the capacitors;"
        f" cache units lost {fmt_int(cut.get('cache_units_lost'))},"
        f" written out on the capacitors {fmt_int(cut.get('cache_units_flushed_on_plp'))}",
    )
    table.add_row(
        "recovery",
        f"{fmt_float(cut.get('recovery_us'), 1)} µs",
        f"checkpoint {fmt_int(cut.get('checkpoint_pages_read'))} pages"
        f" ({fmt_float(cut.get('checkpoint_read_us'), 1)} µs), then out-of-band areas of"
        f" {fmt_int(cut.get('pages_scanned'))} pages in {fmt_int(cut.get('blocks_scanned'))}"
        f" blocks ({fmt_float(cut.get('scan_us'), 1)} µs)",
    )
    units = cut.get("lost_units") if isinstance(cut.get("lost_units"), list) else []
    shown = ", ".join(str(u) for u in units[:8])
    more = "" if len(units) <= 8 else ", ..."
    table.add_row(
        "lost",
        f"{fmt_int(cut.get('writes_lost'))} writes",
        f"{fmt_int(cut.get('acknowledged_writes_lost'))} of them acknowledged,"
        f" {fmt_int(cut.get('trims_lost'))} trims; {fmt_int(cut.get('units_lost'))} units"
        + (f" ({shown}{more})" if shown else "")
        + f"; unreadable {fmt_int(cut.get('units_unreadable'))}"
        + f"; trims durable by erase {fmt_int(cut.get('trims_durable_by_erase'))}",
    )
    return table


def speed_line(result: Mapping[str, Any]) -> Text:
    wall = result.get("wall") if isinstance(result.get("wall"), Mapping) else {}
    line = (
        f"speed: {fmt_float(wall.get('requests_per_s'), 0)} simulated requests per wall-clock"
        f" second ({fmt_float(wall.get('events_per_s'), 0)} events/s);"
        f" wall time {fmt_float(wall.get('seconds'), 3)} s"
    )
    if _is_number(wall.get("precondition_seconds")) and wall["precondition_seconds"]:
        line += f" (+ {fmt_float(wall['precondition_seconds'], 3)} s preconditioning)"
    if _is_number(wall.get("peak_memory_bytes")):
        line += f"; peak memory {fmt_bytes(wall['peak_memory_bytes'])}"
    memory = wall.get("memory") if isinstance(wall.get("memory"), Mapping) else {}
    if _is_number(memory.get("total_bytes")) and memory["total_bytes"]:
        line += f" (model tables {fmt_bytes(memory['total_bytes'])})"
    return Text(line, style="dim")


def result_renderable(result: Mapping[str, Any]) -> RenderableType:
    gap = Text("")
    parts: list[RenderableType] = [
        header(result),
        gap,
        ops_table(result),
        gap,
        device_table(result),
    ]
    iface = result.get("interface")
    if isinstance(iface, Mapping) and isinstance(iface.get("dram"), Mapping):
        parts += [gap, dram_interface_table(iface["dram"])]
    if isinstance(result.get("cache"), Mapping):
        parts += [gap, cache_table(result["cache"])]
    if isinstance(result.get("reliability"), Mapping):
        parts += [gap, reliability_table(result["reliability"])]
    if isinstance(result.get("power"), Mapping):
        parts += [gap, power_table(result["power"])]
    if isinstance(result.get("pcm"), Mapping):
        parts += [gap, pcm_table(result["pcm"])]
    if isinstance(result.get("hfsl"), Mapping):
        parts += [gap, hfsl_table(result["hfsl"])]
    if isinstance(result.get("power_loss"), Mapping):
        parts += [gap, power_loss_table(result["power_loss"])]
    parts += [gap, speed_line(result)]
    return Group(*parts)


def print_result(result: Mapping[str, Any], console: Console) -> None:
    console.print(result_renderable(result))


def render_text(result: Mapping[str, Any], width: int = 100) -> str:
    """The same tables as plain text (no colour), for ``Result.summary()`` and logs."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None, force_terminal=False)
    console.print(result_renderable(result))
    return buffer.getvalue()


def key_value_table(data: Mapping[str, Any], title: str | None = None) -> Table:
    """Any nested dict as rows of dotted key and value (for ``ssdlab bench``)."""
    table = Table(
        box=box.SIMPLE_HEAD, title=title, title_justify="left", pad_edge=False, show_edge=False
    )
    table.add_column("figure")
    table.add_column("value", justify="right")
    for key, value in flatten(data):
        if _is_number(value) and not isinstance(value, int):
            shown = f"{value:,.3f}" if abs(value) < 1000 else f"{value:,.0f}"
        elif isinstance(value, int) and not isinstance(value, bool):
            shown = f"{value:,}"
        else:
            shown = str(value)
        # Text, not str: a value such as "[1, 2]" must not be read as rich markup.
        table.add_row(Text(key), Text(shown))
    return table


def flatten(data: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(data, Mapping):
        rows: list[tuple[str, Any]] = []
        for key, value in data.items():
            rows.extend(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return rows
    return [(prefix, data)]
