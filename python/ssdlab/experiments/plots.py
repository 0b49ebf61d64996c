"""The common views of a sweep, drawn with matplotlib (PNG or SVG).

- ``bandwidth``: MiB/s (total, or of one op) against an axis;
- ``iops``: IOPS against an axis;
- ``latency``: latency percentiles (p50, p99, p99.9) against an axis, or against load
  (``--x total.iops``);
- ``latency-cdf``: the distribution of latencies per run, exact from per-request records, else
  drawn through the summary percentiles;
- ``waf``: write amplification against an axis;
- ``erases``: erases per block (mean ± standard deviation, min and max) against an axis;
- ``throughput``: throughput over simulated time per run, from per-request records;
- ``metric``: any table column (``--y``) against an axis.

Repetitions of a point are averaged; error bars span their minimum to maximum. Points whose run
failed are left out. Every figure is built on a ``matplotlib.figure.Figure`` (no pyplot state),
so drawing needs no display.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import _core
from .results import load_results, read_manifest, read_requests
from .sweep import column_for

VIEWS = ("bandwidth", "iops", "latency", "latency-cdf", "waf", "erases", "throughput", "metric")
OPS = tuple(_core.op_names())  # by their code in the per-request records
PERCENTILES = (("p50", "p50"), ("p99", "p99"), ("p99_9", "p99.9"))
CDF_PERCENTILES = (
    ("min", 0.0),
    ("p50", 0.5),
    ("p90", 0.9),
    ("p99", 0.99),
    ("p99_9", 0.999),
    ("p99_99", 0.9999),
    ("max", 1.0),
)
MAX_SERIES = 12
CDF_POINTS = 2000
PS_PER_S = 1e12
MIB = 1024 * 1024
FIGSIZE = (7.2, 4.3)


def _plain_number(value: float, _position: Any = None) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:g}"


def _plain_formatter() -> Any:
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(_plain_number)


class PlotError(_core.SsdlabError):
    """A view that cannot be drawn from this sweep (unknown column, no records, ...)."""


# --------------------------------------------------------------------------------------------
# Selecting data


def _literal(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_where(table: Any, where: Sequence[str]) -> Any:
    """Keep rows where each ``COLUMN=VALUE`` holds (an axis name may stand for its column)."""
    import polars as pl

    for item in where:
        name, sep, raw = item.partition("=")
        if not sep or not name.strip():
            raise PlotError(f"bad --where {item!r}: expected COLUMN=VALUE, e.g. job.rw=randread")
        column = column_for(name.strip(), table.columns)
        if column is None:
            raise PlotError(
                f"--where {item!r}: no column {name.strip()!r}: expected one of the"
                f" axes: {', '.join(_axis_names(table))}"
            )
        value = _literal(raw.strip())
        dtype = table.schema[column]
        if dtype.is_numeric() and isinstance(value, int | float) and not isinstance(value, bool):
            table = table.filter(pl.col(column) == value)
        else:
            table = table.filter(pl.col(column).cast(pl.Utf8) == str(value))
    return table


def _axis_names(table: Any) -> list[str]:
    return [c for c in table.columns if c.startswith(("config.", "job."))]


def _varying(table: Any, columns: Sequence[str]) -> list[str]:
    return [c for c in columns if c in table.columns and table[c].n_unique() > 1]


def short(column: str) -> str:
    """A column's name for a legend or an axis label: without ``config.``."""
    return column[len("config.") :] if column.startswith("config.") else column


class Selection:
    """The successful runs of a sweep, filtered, with the axes that vary among them."""

    def __init__(self, out_dir: str | os.PathLike[str], where: Sequence[str] = ()) -> None:
        import polars as pl

        self.out_dir = Path(out_dir)
        self.manifest = read_manifest(self.out_dir)
        table = load_results(self.out_dir)
        table = table.filter(pl.col("status") == "ok")
        self.table = apply_where(table, where)
        if self.table.height == 0:
            raise PlotError(f"{out_dir}: no successful run" + (" matches --where" if where else ""))
        axes = [a["column"] for a in self.manifest.get("sweep", {}).get("axes", [])]
        self.axes = _varying(self.table, axes)
        self.name = self.manifest.get("name", self.out_dir.name)

    def column(self, name: str, option: str) -> str:
        column = column_for(name, self.table.columns)
        if column is None:
            raise PlotError(
                f"{option} {name}: no such column: expected an axis"
                f" ({', '.join(self.axes) or 'none'}) or a result figure such as"
                " total.bandwidth_mib_s"
            )
        return column

    def default_x(self) -> str:
        return self.axes[0] if self.axes else "point"

    def hue_columns(self, x: str, hue: str | None) -> list[str]:
        if hue is not None:
            return [self.column(hue, "--hue")]
        return [c for c in self.axes if c != x]


def _label(row: Mapping[str, Any], columns: Sequence[str]) -> str:
    return ", ".join(f"{short(c)}={_fmt(row[c])}" for c in columns)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _is_numeric(table: Any, column: str) -> bool:
    return table.schema[column].is_numeric()


def _aggregate(table: Any, x: str, y: str, hue: Sequence[str]) -> list[tuple[str, Any]]:
    """Per series (hue label): x values in first-seen order, mean/min/max of y over repeats."""
    import polars as pl

    if table.schema[y] == pl.Utf8 or table.schema[y] == pl.Boolean:
        raise PlotError(f"--y {y}: a {table.schema[y]} column: expected a numeric figure")
    keys = [*hue, x] if x not in hue else list(hue)
    grouped = (
        table.filter(pl.col(y).is_not_null())
        .group_by(keys, maintain_order=True)
        .agg(
            pl.col(y).mean().alias("mean"),
            pl.col(y).min().alias("min"),
            pl.col(y).max().alias("max"),
            pl.col(y).count().alias("n"),
        )
    )
    series: list[tuple[str, Any]] = []
    labels: dict[str, list[dict[str, Any]]] = {}
    for row in grouped.iter_rows(named=True):
        labels.setdefault(_label(row, hue), []).append(row)
    for label, items in labels.items():
        series.append((label, items))
    return series


# --------------------------------------------------------------------------------------------
# Figures


def _figure(title: str, size: tuple[float, float] = FIGSIZE) -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    figure = Figure(figsize=size, layout="constrained")
    axes = figure.add_subplot()
    axes.set_title(title, fontsize=11)
    axes.grid(True, alpha=0.3)
    return figure, axes


def _auto_log(values: Sequence[float]) -> bool:
    positive = [v for v in values if v is not None and v > 0]
    return len(positive) >= 3 and min(positive) > 0 and max(positive) / min(positive) >= 64


def _draw_against(
    axes: Any,
    table: Any,
    x: str,
    y: str,
    hue: Sequence[str],
    label_prefix: str = "",
    marker: str = "o",
    logx: bool | None = None,
) -> None:
    series = _aggregate(table, x, y, hue)
    if not series:
        raise PlotError(f"no run has a value for {y}")
    # Error bars only where there is a spread to show: several repetitions of a point.
    repeated = any(r["n"] > 1 for _, items in series for r in items)
    if _is_numeric(table, x):
        xs_all: list[float] = []
        for label, items in series:
            items = sorted(items, key=lambda r: r[x])
            xs = [r[x] for r in items]
            means = np.array([r["mean"] for r in items], dtype=float)
            low = means - np.array([r["min"] for r in items], dtype=float)
            high = np.array([r["max"] for r in items], dtype=float) - means
            name = " ".join(p for p in (label_prefix, label) if p) or None
            axes.errorbar(
                xs,
                means,
                yerr=[low, high] if repeated else None,
                marker=marker,
                ms=4,
                capsize=3,
                label=name,
            )
            xs_all.extend(xs)
        if logx if logx is not None else _auto_log(xs_all):
            axes.set_xscale("log", base=2 if _powers_of_two(xs_all) else 10)
        else:
            axes.xaxis.set_major_formatter(_plain_formatter())
    else:
        categories: list[Any] = []
        for _, items in series:
            for r in items:
                if r[x] not in categories:
                    categories.append(r[x])
        width = 0.8 / len(series)
        for k, (label, items) in enumerate(series):
            by_x = {r[x]: r for r in items}
            positions, means, low, high = [], [], [], []
            for i, category in enumerate(categories):
                if category in by_x:
                    r = by_x[category]
                    positions.append(i - 0.4 + width * (k + 0.5))
                    means.append(r["mean"])
                    low.append(r["mean"] - r["min"])
                    high.append(r["max"] - r["mean"])
            name = " ".join(p for p in (label_prefix, label) if p) or None
            axes.bar(
                positions,
                means,
                width=width * 0.95,
                yerr=[low, high] if repeated else None,
                capsize=2,
                label=name,
            )
        axes.set_xticks(range(len(categories)), [_fmt(c) for c in categories])
        if len(categories) > 4:
            axes.tick_params(axis="x", labelrotation=30)
    axes.set_xlabel(short(x))


def _powers_of_two(values: Sequence[float]) -> bool:
    return all(v > 0 and float(v).is_integer() and (int(v) & (int(v) - 1)) == 0 for v in values)


def _legend(axes: Any, title: str | None = None) -> None:
    handles, labels = axes.get_legend_handles_labels()
    if labels:
        axes.legend(fontsize=8, title=title, title_fontsize=8)
    # Plain numbers on a linear y scale (25,000 rather than 2.5 with a 1e4 offset).
    if axes.yaxis.get_scale() == "linear":
        axes.yaxis.set_major_formatter(_plain_formatter())


def _op_column(selection: Selection, op: str | None, figure: str) -> str:
    if op is None:
        return f"total.{figure}"
    if op not in OPS:
        raise PlotError(f"--op {op}: expected one of {', '.join(OPS)}")
    return f"ops.{op}.{figure}"


def _default_latency_op(selection: Selection, op: str | None) -> str:
    if op is not None:
        if op not in OPS:
            raise PlotError(f"--op {op}: expected one of {', '.join(OPS)}")
        return op
    for candidate in OPS:
        column = f"ops.{candidate}.count"
        if column in selection.table.columns and selection.table[column].drop_nulls().len():
            return candidate
    raise PlotError("no run has any completed request")


def plot_against(
    selection: Selection,
    y: str,
    ylabel: str,
    title: str,
    x: str | None = None,
    hue: str | None = None,
    logx: bool | None = None,
    logy: bool = False,
) -> Any:
    x_column = selection.column(x, "--x") if x else selection.default_x()
    y_column = selection.column(y, "--y")
    figure, axes = _figure(title)
    hues = selection.hue_columns(x_column, hue)
    _draw_against(axes, selection.table, x_column, y_column, hues, logx=logx)
    axes.set_ylabel(ylabel)
    if logy:
        axes.set_yscale("log")
    elif not _is_numeric(selection.table, x_column) or y_column.endswith(("mib_s", "iops")):
        axes.set_ylim(bottom=0)
    _legend(axes)
    return figure


def plot_latency(
    selection: Selection,
    op: str | None,
    x: str | None,
    hue: str | None,
    logx: bool | None,
    logy: bool | None,
    title: str,
) -> Any:
    op = _default_latency_op(selection, op)
    x_column = selection.column(x, "--x") if x else selection.default_x()
    if not _is_numeric(selection.table, x_column):
        raise PlotError(
            f"--x {x_column}: latency against load needs a numeric x (an axis such"
            " as job.iodepth or job.rate_iops, or total.iops)"
        )
    figure, axes = _figure(title)
    hues = selection.hue_columns(x_column, hue)
    markers = ("o", "s", "^")
    for (key, name), marker in zip(PERCENTILES, markers, strict=True):
        column = f"ops.{op}.latency_us.{key}"
        if column not in selection.table.columns:
            continue
        _draw_against(
            axes,
            selection.table,
            x_column,
            column,
            hues,
            label_prefix=name,
            marker=marker,
            logx=logx,
        )
    axes.set_ylabel(f"{op} latency (µs)")
    if logy if logy is not None else True:
        axes.set_yscale("log")
    _legend(axes)
    return figure


def _with_op(selection: Selection, op: str) -> Selection:
    """The same selection, only runs that completed requests of ``op``."""
    import copy

    import polars as pl

    column = f"ops.{op}.count"
    narrowed = copy.copy(selection)
    if column not in selection.table.columns:
        raise PlotError(f"no run has {op} requests")
    narrowed.table = selection.table.filter(pl.col(column).fill_null(0) > 0)
    if narrowed.table.height == 0:
        raise PlotError(f"no run has {op} requests")
    return narrowed


def _series_rows(selection: Selection) -> tuple[list[dict[str, Any]], list[str]]:
    """The runs to draw one line each for, at most MAX_SERIES (first repetition if too many)."""
    import polars as pl

    table = selection.table
    if table.height > MAX_SERIES:
        table = table.filter(pl.col("repetition") == 0)
    if table.height > MAX_SERIES:
        raise PlotError(
            f"{table.height} runs would be {table.height} lines: expected at most {MAX_SERIES};"
            " choose runs with --where AXIS=VALUE"
        )
    columns = list(selection.axes)
    if table["repetition"].n_unique() > 1:
        columns.append("repetition")
    return list(table.iter_rows(named=True)), columns


def plot_latency_cdf(selection: Selection, op: str | None, logx: bool | None, title: str) -> Any:
    op = _default_latency_op(selection, op)
    code = OPS.index(op)
    runs, columns = _series_rows(_with_op(selection, op))
    figure, axes = _figure(title)
    exact = approximated = 0
    all_latencies: list[float] = []
    for row in runs:
        label = _label(row, columns) or row["id"]
        records = read_requests(selection.out_dir, row["id"])
        if records is not None:
            latencies = np.sort(records[records[:, 0] == code][:, 3] / 1e6)
            if latencies.size == 0:
                continue
            quantiles = np.linspace(0, 1, min(CDF_POINTS, latencies.size))
            values = np.quantile(latencies, quantiles, method="inverted_cdf")
            axes.step(values, quantiles, where="post", label=label, lw=1.2)
            all_latencies.extend([float(values[0]), float(values[-1])])
            exact += 1
        else:
            xs, ps = [], []
            for key, p in CDF_PERCENTILES:
                value = row.get(f"ops.{op}.latency_us.{key}")
                if value is not None:
                    xs.append(value)
                    ps.append(p)
            if not xs:
                continue
            axes.plot(xs, ps, marker="o", ms=3, lw=1, ls="--", label=label)
            all_latencies.extend([min(xs), max(xs)])
            approximated += 1
    if not exact and not approximated:
        raise PlotError(f"no run has {op} latencies")
    if logx if logx is not None else _auto_log(all_latencies + [min(all_latencies) * 64]):
        axes.set_xscale("log")
    axes.set_xlabel(f"{op} latency (µs)")
    axes.set_ylabel("fraction of requests")
    axes.set_ylim(0, 1.02)
    if approximated:
        axes.text(
            0.99,
            0.02,
            "dashed: from summary percentiles (no per-request records)",
            transform=axes.transAxes,
            ha="right",
            fontsize=7,
            alpha=0.7,
        )
    _legend(axes)
    return figure


def plot_erases(selection: Selection, x: str | None, hue: str | None, title: str) -> Any:
    import polars as pl

    x_column = selection.column(x, "--x") if x else selection.default_x()
    table = selection.table
    if "device.erase_count.mean" not in table.columns:
        raise PlotError("no erase figures in this sweep")
    figure, axes = _figure(title)
    hues = selection.hue_columns(x_column, hue)
    keys = [*hues, x_column] if x_column not in hues else hues
    grouped = table.group_by(keys, maintain_order=True).agg(
        pl.col("device.erase_count.mean").mean().alias("mean"),
        pl.col("device.erase_count.stddev").mean().alias("stddev"),
        pl.col("device.erase_count.min").min().alias("min"),
        pl.col("device.erase_count.max").max().alias("max"),
    )
    series: dict[str, list[dict[str, Any]]] = {}
    for row in grouped.iter_rows(named=True):
        series.setdefault(_label(row, hues), []).append(row)
    numeric = _is_numeric(table, x_column)
    categories = list(dict.fromkeys(row[x_column] for rows in series.values() for row in rows))
    for k, (label, items) in enumerate(series.items()):
        if numeric:
            items = sorted(items, key=lambda r: r[x_column])
            xs = np.array([r[x_column] for r in items], dtype=float)
        else:
            offset = (k - (len(series) - 1) / 2) * 0.8 / max(1, len(series))
            xs = np.array([categories.index(r[x_column]) + offset for r in items], dtype=float)
        means = np.array([r["mean"] for r in items], dtype=float)
        std = np.array([r["stddev"] or 0.0 for r in items], dtype=float)
        line = axes.errorbar(
            xs,
            means,
            yerr=std,
            marker="o",
            ms=4,
            capsize=3,
            label=f"{label + ': ' if label else ''}mean ± sd",
        )
        colour = line[0].get_color()
        axes.scatter(xs, [r["max"] for r in items], marker="^", s=18, color=colour)
        axes.scatter(xs, [r["min"] for r in items], marker="v", s=18, color=colour)
    if not numeric:
        axes.set_xticks(range(len(categories)), [_fmt(c) for c in categories])
    axes.set_xlabel(short(x_column))
    axes.set_ylabel("erases per block (▲ max, ▼ min)")
    axes.set_ylim(bottom=0)
    _legend(axes)
    return figure


def _bytes_per_request(row: Mapping[str, Any]) -> dict[int, float]:
    out = {}
    for code, op in enumerate(OPS):
        count, size = row.get(f"ops.{op}.count"), row.get(f"ops.{op}.bytes")
        if count and size is not None:
            out[code] = size / count
    return out


def plot_throughput(selection: Selection, op: str | None, bins: int, iops: bool, title: str) -> Any:
    if op is not None and op not in OPS:
        raise PlotError(f"--op {op}: expected one of {', '.join(OPS)}")
    runs, columns = _series_rows(_with_op(selection, op) if op is not None else selection)
    figure, axes = _figure(title)
    lines: list[tuple[np.ndarray, np.ndarray, str]] = []
    for row in runs:
        records = read_requests(selection.out_dir, row["id"])
        if records is None:
            continue
        if op is not None:
            records = records[records[:, 0] == OPS.index(op)]
        if records.shape[0] == 0:
            continue
        done = (records[:, 2] + records[:, 3]).astype(float) / PS_PER_S
        end = float(done.max())
        edges = np.linspace(0.0, end, bins + 1)
        width = end / bins
        if iops:
            counts, _ = np.histogram(done, bins=edges)
            values = counts / width
        else:
            if records.shape[1] > 4:
                # Each request's own size (records written since the size column was added).
                weights = records[:, 4].astype(float) / MIB
            else:
                sizes = _bytes_per_request(row)
                weights = np.array([sizes.get(int(code), 0.0) for code in records[:, 0]]) / MIB
            values, _ = np.histogram(done, bins=edges, weights=weights)
            values = values / width
        centres = (edges[:-1] + edges[1:]) / 2
        lines.append((centres, values, _label(row, columns) or row["id"]))
    if lines:
        # One time unit for all lines, from the longest run.
        scale, unit = _time_unit(max(float(centres[-1]) for centres, _, _ in lines))
        for centres, values, label in lines:
            axes.plot(centres * scale, values, lw=1.2, label=label)
        axes.set_xlabel(f"simulated time ({unit})")
    else:
        raise PlotError(
            f"{selection.out_dir}: no per-request records: set record_requests = true in the"
            " sweep file and run it again"
        )
    what = f"{op} " if op else ""
    axes.set_ylabel(f"{what}IOPS" if iops else f"{what}MiB/s (completions × mean request size)")
    axes.set_ylim(bottom=0)
    _legend(axes)
    return figure


def _time_unit(seconds: float) -> tuple[float, str]:
    if seconds >= 1:
        return 1.0, "s"
    if seconds >= 1e-3:
        return 1e3, "ms"
    return 1e6, "µs"


# --------------------------------------------------------------------------------------------
# Entry point


def make_plot(
    out_dir: str | os.PathLike[str],
    view: str,
    x: str | None = None,
    y: str | None = None,
    hue: str | None = None,
    op: str | None = None,
    where: Sequence[str] = (),
    logx: bool | None = None,
    logy: bool | None = None,
    bins: int = 100,
    title: str | None = None,
) -> Any:
    """One view of a sweep directory as a matplotlib Figure."""
    if view not in VIEWS:
        raise PlotError(f"unknown view {view!r}: expected one of {', '.join(VIEWS)}")
    selection = Selection(out_dir, where)
    heading = title or f"{selection.name}: {view}"
    if view == "bandwidth":
        column = y or _op_column(selection, op, "bandwidth_mib_s")
        what = f"{op} " if op else ""
        return plot_against(
            selection, column, f"{what}bandwidth (MiB/s)", heading, x, hue, logx, bool(logy)
        )
    if view == "iops":
        column = y or _op_column(selection, op, "iops")
        return plot_against(
            selection, column, f"{op + ' ' if op else ''}IOPS", heading, x, hue, logx, bool(logy)
        )
    if view == "latency":
        return plot_latency(selection, op, x, hue, logx, logy, heading)
    if view == "latency-cdf":
        return plot_latency_cdf(selection, op, logx, heading)
    if view == "waf":
        # Write amplification is 0 for a run without host writes: those runs are left out.
        return plot_against(
            _with_op(selection, "write"),
            "device.write_amplification",
            "write amplification",
            heading,
            x,
            hue,
            logx,
            bool(logy),
        )
    if view == "erases":
        return plot_erases(selection, x, hue, heading)
    if view == "throughput":
        if bins < 1 or bins > 100_000:
            raise PlotError(f"--bins {bins}: expected 1 to 100000")
        return plot_throughput(selection, op, bins, iops=(y == "iops"), title=heading)
    if y is None:
        raise PlotError("view metric needs --y COLUMN, e.g. --y device.gc_runs")
    return plot_against(selection, y, short(y), heading, x, hue, logx, bool(logy))


def save_figure(figure: Any, path: str | os.PathLike[str], fmt: str | None = None) -> Path:
    """Write a figure as PNG or SVG (from ``fmt``, else the file's suffix). SVG output carries no
    date, so the same figure gives the same file."""
    target = Path(path)
    kind = (fmt or target.suffix.lstrip(".") or "png").lower()
    if kind not in ("png", "svg"):
        raise PlotError(f"format {kind!r}: expected png or svg")
    if target.suffix.lower() != f".{kind}":
        target = target.with_name(target.name + f".{kind}")
    target.parent.mkdir(parents=True, exist_ok=True)
    metadata = {"Date": None} if kind == "svg" else {"Software": "ssdlab (matplotlib)"}
    import matplotlib

    with matplotlib.rc_context({"svg.hashsalt": "ssdlab"}):
        figure.savefig(target, format=kind, dpi=120, metadata=metadata)
    return target


def figure_bytes(figure: Any, fmt: str = "png") -> bytes:
    import io

    import matplotlib

    buffer = io.BytesIO()
    metadata = {"Date": None} if fmt == "svg" else {"Software": "ssdlab (matplotlib)"}
    with matplotlib.rc_context({"svg.hashsalt": "ssdlab"}):
        figure.savefig(buffer, format=fmt, dpi=110, metadata=metadata)
    return buffer.getvalue()


def finite(values: Sequence[Any]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]
