"""The ``ssdlab trace`` commands: ``stats``, ``formats``, ``models`` and ``generate``.

They live apart from ``cli.py`` and are added to its app by :func:`register`. Errors are
``SsdlabError`` subclasses (``TraceError`` from the core, ``TraceCliError`` here), which
``cli.main`` prints as one line ``error: ...`` with exit code 2.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .. import _core
from ..api import MAX_SEED, generate_trace, trace_formats, trace_models, trace_stats
from ..files import write_output_text
from .table import fmt_bytes, fmt_float, fmt_int, get_path


class TraceCliError(_core.SsdlabError):
    """A bad option of a trace command (one line, exit code 2)."""


trace_app = typer.Typer(
    help="Read, describe and generate block-I/O traces.",
    no_args_is_help=True,
)


def _stdout() -> Console:
    return Console() if sys.stdout.isatty() else Console(width=120)


def _write_text(path: Path, text: str) -> None:
    if str(path) == "-":
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    write_output_text(path, text if text.endswith("\n") else text + "\n")


def _pct(value: Any) -> str:
    return f"{value * 100:.1f}%" if isinstance(value, int | float) else "-"


def _us(value: Any) -> str:
    if not isinstance(value, int | float):
        return "-"
    if value >= 1e6:
        return f"{value / 1e6:,.2f} s"
    if value >= 1e3:
        return f"{value / 1e3:,.2f} ms"
    return f"{value:,.1f} µs"


def stats_tables(stats: Mapping[str, Any]) -> list[Table]:
    """The statistics of ``trace stats`` as rich tables."""
    src = stats.get("source") or {}
    title = f"{src.get('file', '?')}  ({src.get('format', '?')}"
    if src.get("compression") not in (None, "none"):
        title += f", {src['compression']}"
    title += ")"
    main = Table(title=title, title_justify="left", show_header=False, box=None, pad_edge=False)
    main.add_column(style="bold")
    main.add_column(justify="right")
    main.add_column(style="dim")
    rows: list[tuple[str, str, str]] = [
        ("requests", fmt_int(stats.get("requests")), ""),
        (
            "reads / writes",
            f"{fmt_int(stats.get('reads'))} / {fmt_int(stats.get('writes'))}",
            f"trims {fmt_int(stats.get('trims'))}, flushes {fmt_int(stats.get('flushes'))}",
        ),
    ]
    # NVMe traces: zone commands and writes by directive (absent from other formats' stats).
    if stats.get("appends") or stats.get("zone_management"):
        rows.append(
            (
                "zone appends / management",
                f"{fmt_int(stats.get('appends', 0))} / {fmt_int(stats.get('zone_management', 0))}",
                "",
            )
        )
    for d in stats.get("directives") or []:
        rows.append(
            (
                f"writes with {d['directive']} id {d['id']}",
                fmt_int(d["writes"]),
                fmt_bytes(d["bytes"]),
            )
        )
    rows += [
        (
            "read ratio",
            f"{_pct(stats.get('read_ratio_by_count'))} of requests",
            f"{_pct(stats.get('read_ratio_by_bytes'))} of bytes",
        ),
        (
            "mean read / write size",
            f"{fmt_bytes(get_path(stats, 'read', 'mean_bytes'))} / "
            f"{fmt_bytes(get_path(stats, 'write', 'mean_bytes'))}",
            "",
        ),
        (
            "footprint",
            fmt_bytes(get_path(stats, "footprint", "bytes")),
            f"written {fmt_bytes(get_path(stats, 'footprint', 'written_bytes'))}, "
            f"span {fmt_bytes(get_path(stats, 'footprint', 'address_span_bytes'))} over "
            f"{fmt_int(get_path(stats, 'footprint', 'devices'))} device(s)",
        ),
        (
            "duration",
            f"{fmt_float(get_path(stats, 'time', 'duration_s'), 3)} s",
            f"{fmt_float(get_path(stats, 'time', 'iops'), 1)} requests/s, "
            f"{fmt_int(get_path(stats, 'time', 'out_of_order'))} out of order",
        ),
        (
            "timestamp resolution",
            _us(get_path(stats, "time", "resolution_us")),
            "every timestamp is a whole number of these apart",
        ),
        (
            "inter-arrival",
            f"mean {_us(get_path(stats, 'time', 'inter_arrival_us', 'mean'))}",
            f"p50 {_us(get_path(stats, 'time', 'inter_arrival_us', 'p50'))}, "
            f"p90 {_us(get_path(stats, 'time', 'inter_arrival_us', 'p90'))}, "
            f"p99 {_us(get_path(stats, 'time', 'inter_arrival_us', 'p99'))}",
        ),
        (
            "IRD = 0 (sequential)",
            _pct(get_path(stats, "ird", "sequential_fraction")),
            f"near (< {fmt_bytes(get_path(stats, 'ird', 'block_bytes'))}) "
            f"{_pct(get_path(stats, 'ird', 'near_fraction'))}, "
            f"far {_pct(get_path(stats, 'ird', 'far_fraction'))}",
        ),
        (
            "sequential runs",
            f"{fmt_float(get_path(stats, 'sequential', 'mean_run_requests'), 2)} requests",
            f"{fmt_bytes(get_path(stats, 'sequential', 'mean_run_bytes'))} mean run",
        ),
        (
            "overwrite ratio",
            _pct(get_path(stats, "overwrite", "overwrite_ratio")),
            f"of written bytes; {_pct(get_path(stats, 'overwrite', 'rewrite_request_ratio'))}"
            " of writes rewrite",
        ),
        (
            "hot set",
            f"{_pct(get_path(stats, 'hot_set', 'fraction_for_80pct'))} of blocks",
            f"take 80% of accesses; the top 10% take "
            f"{_pct(get_path(stats, 'hot_set', 'top_10pct_share'))}",
        ),
    ]
    skipped = src.get("skipped_bad_lines")
    if skipped:
        rows.append(("skipped bad lines", fmt_int(skipped), ""))
    if get_path(stats, "footprint", "tracked_fraction") not in (None, 1, 1.0):
        rows.append(
            (
                "footprint tracked",
                _pct(get_path(stats, "footprint", "tracked_fraction")),
                "of reads and writes (memory budget reached)",
            )
        )
    for name, value, note in rows:
        main.add_row(name, value, Text(note))

    sizes = Table(title="request sizes", title_justify="left")
    sizes.add_column("size ≤", justify="right")
    sizes.add_column("reads", justify="right")
    sizes.add_column("writes", justify="right")
    read_h = {b["le_bytes"]: b["count"] for b in get_path(stats, "read", "histogram") or []}
    write_h = {b["le_bytes"]: b["count"] for b in get_path(stats, "write", "histogram") or []}
    for le in sorted(set(read_h) | set(write_h)):
        sizes.add_row(fmt_bytes(le), fmt_int(read_h.get(le, 0)), fmt_int(write_h.get(le, 0)))
    return [main, sizes]


def _bars(ax: Any, labels: Sequence[str], series: Mapping[str, Sequence[float]]) -> None:
    width = 0.8 / max(1, len(series))
    for k, (name, values) in enumerate(series.items()):
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(values))]
        ax.bar(xs, values, width=width, label=name)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
    if len(series) > 1:
        ax.legend()
    ax.grid(axis="y", alpha=0.3)


#: Requests the address-over-time scatter shows at most twice (spread evenly over the trace).
PLOT_SAMPLE_POINTS = 5000


def write_plots(stats: Mapping[str, Any], out_dir: Path) -> list[Path]:
    """PNG histograms of request sizes, inter-arrival times and inter-request distances."""
    from matplotlib.figure import Figure

    out_dir.mkdir(parents=True, exist_ok=True)
    name = Path(str(get_path(stats, "source", "file") or "trace")).name
    written: list[Path] = []

    def save(fig: Any, file: str) -> None:
        path = out_dir / file
        fig.tight_layout()
        fig.savefig(path, format="png", dpi=110, metadata={"Software": "ssdlab (matplotlib)"})
        written.append(path)

    read_h = {b["le_bytes"]: b["count"] for b in get_path(stats, "read", "histogram") or []}
    write_h = {b["le_bytes"]: b["count"] for b in get_path(stats, "write", "histogram") or []}
    les = sorted(set(read_h) | set(write_h))
    fig = Figure(figsize=(7, 4))
    ax = fig.add_subplot()
    _bars(
        ax,
        [f"≤{fmt_bytes(le)}" for le in les],
        {"reads": [read_h.get(x, 0) for x in les], "writes": [write_h.get(x, 0) for x in les]},
    )
    ax.set_ylabel("requests")
    ax.set_title(f"{name}: request sizes")
    save(fig, "sizes.png")

    iat = get_path(stats, "time", "inter_arrival_us", "histogram") or []
    # The first bucket holds equal timestamps; then powers of two from 1 ns, shown from the
    # first one used.
    used = [i for i, b in enumerate(iat) if i > 0 and b["count"]]
    iat = iat[:1] + (iat[used[0] :] if used else [])

    def gap(i: int, lt_us: float) -> str:
        if i == 0:
            return "same time"
        return f"<{lt_us * 1000:.0f} ns" if lt_us < 1 else f"<{_us(lt_us)}"

    fig = Figure(figsize=(7, 4))
    ax = fig.add_subplot()
    _bars(ax, [gap(i, b["lt_us"]) for i, b in enumerate(iat)], {"gaps": [b["count"] for b in iat]})
    ax.set_ylabel("gaps between arrivals")
    ax.set_title(f"{name}: inter-arrival times")
    save(fig, "inter_arrival.png")

    ird = get_path(stats, "ird", "histogram") or []

    def span(lo: int, hi: int) -> str:
        if lo == hi == 0:
            return "0"
        sign = "-" if lo < 0 else "+"
        return f"{sign}{fmt_bytes(min(abs(lo), abs(hi)))}"

    fig = Figure(figsize=(8, 4))
    ax = fig.add_subplot()
    _bars(
        ax,
        [span(b["from_bytes"], b["to_bytes"]) for b in ird],
        {"pairs": [b["count"] for b in ird]},
    )
    # Sequential pairs (IRD 0) often outnumber every other bucket by orders of magnitude: on a
    # linear axis the rest would be invisible.
    ax.set_yscale("log")
    ax.set_ylabel("consecutive request pairs (log scale)")
    ax.set_title(f"{name}: inter-request distance (end → next start)")
    save(fig, "ird.png")

    sample = stats.get("sample")
    if sample and sample["time_s"]:
        save(_address_over_time(sample, name), "lba.png")
    return written


# Colours and markers of the ops in the address-over-time scatter: reads and writes told apart
# by shape too, so the picture reads in grey.
_OP_STYLE = {
    "read": ("#1f77b4", "o"),
    "write": ("#d62728", "x"),
    "trim": ("#2ca02c", "s"),
    "flush": ("#7f7f7f", "|"),
}


def _address_over_time(sample: Mapping[str, Any], name: str) -> Any:
    """The picture a blktrace user looks at first (seekwatcher's): each request's byte offset
    against its time, one point per sampled request, reads and writes apart."""
    import numpy as np
    from matplotlib.figure import Figure

    times = np.asarray(sample["time_s"], dtype=float)
    offsets = np.asarray(sample["offset_bytes"], dtype=float)
    ops = np.asarray(sample["op"])
    scale, unit = (1.0, "s") if times.max(initial=0) >= 1 else (1e3, "ms")
    top = offsets.max(initial=0)
    exponent = max(0, min(5, int(np.log2(top)) // 10 if top > 0 else 0))
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
    fig = Figure(figsize=(8, 4.5))
    ax = fig.add_subplot()
    for op, (colour, marker) in _OP_STYLE.items():
        chosen = ops == op
        if chosen.any():
            ax.scatter(
                times[chosen] * scale,
                offsets[chosen] / 1024**exponent,
                s=4,
                c=colour,
                marker=marker,
                linewidths=0.6,
                label=f"{op}s ({int(chosen.sum()):,})",
                rasterized=True,
            )
    ax.set_xlabel(f"time from the first request ({unit})")
    ax.set_ylabel(f"offset ({units[exponent]})")
    every = int(sample.get("every") or 1)
    shown = "every request" if every == 1 else f"one request in {every:,}"
    ax.set_title(f"{name}: offset over time ({shown})")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, markerscale=3)
    return fig


Format = Annotated[
    str | None,
    typer.Option("--format", metavar="NAME", help="Trace format (default: found from content)."),
]


@trace_app.command("stats")
def stats_command(
    trace: Annotated[
        str, typer.Argument(metavar="FILE", help="A trace file (plain, gz, bz2, xz) or model:NAME.")
    ],
    format: Format = None,
    json_out: Annotated[
        Path | None,
        typer.Option(
            "--json", metavar="OUT", help="Write the statistics JSON to OUT ('-': stdout)."
        ),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", metavar="DIR", help="Write PNG histograms to DIR."),
    ] = None,
    skip_bad_lines: Annotated[
        bool,
        typer.Option("--skip-bad-lines", help="Count and skip malformed lines."),
    ] = False,
    blkparse_event: Annotated[
        str, typer.Option("--blkparse-event", metavar="D|Q", help="blkparse events to count.")
    ] = "D",
    device: Annotated[
        list[str] | None,
        typer.Option("--device", metavar="LIST", help="Only these devices/volumes/ASUs (0,2-5)."),
    ] = None,
    ird_block: Annotated[
        str,
        typer.Option("--ird-block", metavar="SIZE", help="IRD below this is 'near' (1MiB)."),
    ] = "1MiB",
    seed: Annotated[
        int, typer.Option(min=0, max=MAX_SEED, help="Seed for model:NAME sources.")
    ] = 1,
    lba_bytes: Annotated[
        int | None,
        typer.Option(
            "--lba-bytes",
            metavar="N",
            help="nvme traces: the namespace's logical block size (default 512).",
        ),
    ] = None,
) -> None:
    """Describe a trace: ratios, sizes, footprint, inter-arrival times, IRD, locality."""
    if blkparse_event.upper() not in ("D", "Q"):
        raise TraceCliError(f"bad --blkparse-event {blkparse_event!r}: expected D or Q")
    block = _parse_size(ird_block, "--ird-block")
    stats = trace_stats(
        trace,
        format,
        skip_bad_lines=skip_bad_lines,
        blkparse_event=blkparse_event.upper(),
        devices=device,
        ird_block=block,
        seed=seed,
        sample_points=PLOT_SAMPLE_POINTS if plot is not None else 0,
        lba_bytes=lba_bytes,
    )
    sample = stats.pop("sample", None)
    if json_out is not None:
        _write_text(json_out, json.dumps(stats, indent=2))
    if plot is not None:
        write_plots({**stats, "sample": sample}, plot)
    if json_out is not None and str(json_out) == "-":
        return
    console = _stdout()
    for table in stats_tables(stats):
        console.print(table)
        console.print()
    if plot is not None:
        console.print(
            Text(f"plots in {plot}: sizes.png, inter_arrival.png, ird.png, lba.png", style="dim")
        )


def _parse_size(text: str, flag: str) -> int:
    try:
        value = _core.parse_bytes(text)
    except (ValueError, OverflowError):
        value = 0
    if value <= 0:
        raise TraceCliError(f"bad {flag} {text!r}: expected a size such as 1MiB or 4096")
    return value


@trace_app.command("formats")
def formats_command() -> None:
    """List the trace formats ssdlab reads."""
    table = Table(title="trace formats", title_justify="left")
    table.add_column("name", style="bold", no_wrap=True)
    table.add_column("also")
    table.add_column("line")
    table.add_column("description")
    for f in trace_formats():
        table.add_row(
            Text(f["name"]),
            Text(", ".join(f["aliases"])),
            Text(f["layout"]),
            Text(f["description"]),
        )
    _stdout().print(table)


@trace_app.command("models")
def models_command(
    json_out: Annotated[
        Path | None,
        typer.Option("--json", metavar="OUT", help="Write the models and parameters as JSON."),
    ] = None,
) -> None:
    """List the workload models (stand-ins fitted to published statistics, not the traces)."""
    models = trace_models()
    if json_out is not None:
        _write_text(json_out, json.dumps(models, indent=2))
        if str(json_out) == "-":
            return
    table = Table(title="workload models (stand-ins, not the traces)", title_justify="left")
    table.add_column("name", style="bold", no_wrap=True)
    table.add_column("read", justify="right")
    table.add_column("read size", justify="right")
    table.add_column("write size", justify="right")
    table.add_column("hot", justify="right")
    table.add_column("overwrite", justify="right")
    table.add_column("run", justify="right")
    table.add_column("IOPS", justify="right")
    table.add_column("what it stands for")
    for m in models:
        p = m["params"]

        def mean(dist: Mapping[str, Any]) -> str:
            if dist.get("kind") == "geometric":
                return fmt_bytes(max(512.0, dist["mean_bytes"]))
            sizes = dist.get("sizes") or []
            total = sum(w for _, w in sizes) or 1
            return fmt_bytes(sum(b * w for b, w in sizes) / total)

        name = m["name"] + (f" ({', '.join(m['aliases'])})" if m["aliases"] else "")
        table.add_row(
            Text(name),
            _pct(p["read_fraction"]),
            mean(p["read_size"]),
            mean(p["write_size"]),
            _pct(p["hot_fraction"]),
            _pct(p["overwrite_ratio"]),
            fmt_float(p["seq_run_requests"], 2),
            fmt_float(p["iops"], 1),
            Text(m["description"]),
        )
    console = _stdout()
    console.print(table)
    console.print(
        Text("sources: ssdlab trace models --json -, or docs/traces.md", style="dim"),
    )


@trace_app.command("generate")
def generate_command(
    model: Annotated[
        str, typer.Argument(metavar="MODEL", help="A model name, with ,key=value overrides.")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", metavar="FILE", help="The trace to write.")],
    format: Annotated[
        str, typer.Option("--format", metavar="NAME", help="Format to write.")
    ] = "disksim",
    count: Annotated[
        int | None, typer.Option("--count", "-n", min=1, help="Requests to generate.")
    ] = None,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Random seed.")] = 1,
) -> None:
    """Write a workload model's requests as a trace file (.gz: gzip-compressed)."""
    spec = model.removeprefix("model:")
    if count is not None:
        spec += f",count={count}"
    out.parent.mkdir(parents=True, exist_ok=True)
    result = generate_trace(spec, out, format=format, seed=seed)
    note = f" ({result['dropped']:,} the format cannot hold)" if result["dropped"] else ""
    _stdout().print(f"wrote {result['written']:,} requests to {out}{note}")


def register(app: typer.Typer) -> None:
    """Add ``ssdlab trace ...`` to the main app."""
    app.add_typer(trace_app, name="trace")
