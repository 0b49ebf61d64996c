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

Repetitions of a point are averaged into one line, with a band from their minimum to their
maximum (error bars on bars). With two varying axes or more besides x, the first makes a panel
each. Series differ in colour, line style and marker, each line a little thinner than the one
before so coinciding lines both show; the legend stands beside the plot. Points whose run failed
are left out. Every figure is built on a ``matplotlib.figure.Figure`` (no pyplot state),
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


#: Panels in a row of a faceted figure.
FACETS_PER_ROW = 3


def _facets(title: str, names: Sequence[str]) -> tuple[Any, list[Any]]:
    """A figure of one panel per name (a value of the faceted axis), sharing the y axis; one
    plain panel when there are no names."""
    if not names:
        figure, axes = _figure(title)
        return figure, [axes]
    from matplotlib.figure import Figure

    columns = min(len(names), FACETS_PER_ROW)
    rows = -(-len(names) // columns)
    size = (max(FIGSIZE[0], 3.6 * columns + 1.8), FIGSIZE[1] * (0.75 * rows + 0.25))
    figure = Figure(figsize=size, layout="constrained")
    grid = figure.subplots(rows, columns, sharey=True, squeeze=False)
    panels = list(grid.flat)
    for axes, name in zip(panels, names, strict=False):
        axes.set_title(name, fontsize=9)
        axes.grid(True, alpha=0.3)
    for spare in panels[len(names) :]:
        spare.set_visible(False)
    figure.suptitle(title, fontsize=11)
    return figure, panels[: len(names)]


# Series are told apart by colour AND line style AND marker (a figure printed in grey, or read
# by someone who does not tell red from green, still separates them), and each line is drawn a
# little thinner than the one before it with a smaller marker, so a line that coincides with an
# earlier one shows inside it instead of hiding it (the WAF of two workloads that write alike).
_COLOURS = (
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
)  # fmt: skip
_LINE_STYLES = ("-", "--", "-.", ":")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
_HATCHES = ("", "//", "..", "xx", "\\\\", "--", "++", "oo")


def series_style(k: int, of: int) -> dict[str, Any]:
    """The look of the ``k``-th of ``of`` series: colour, line style, marker, widths."""
    shrink = k / max(1, of - 1)
    return {
        "color": _COLOURS[k % len(_COLOURS)],
        "linestyle": _LINE_STYLES[k % len(_LINE_STYLES)],
        "marker": _MARKERS[k % len(_MARKERS)],
        "lw": 2.6 - 1.4 * shrink,
        "ms": 8.0 - 4.0 * shrink,
    }


def _facet_split(hues: Sequence[str]) -> tuple[str | None, list[str]]:
    """With two varying axes or more besides x, the first makes the panels and the rest the
    lines of each: a figure of every combination as one tangle of lines does not read."""
    if len(hues) >= 2:
        return hues[0], list(hues[1:])
    return None, list(hues)


def _facet_tables(table: Any, facet: str | None) -> list[tuple[str, Any]]:
    """(panel title, its rows) per value of ``facet`` in first-seen order; one untitled panel
    without a facet."""
    import polars as pl

    if facet is None:
        return [("", table)]
    values = list(dict.fromkeys(table[facet].to_list()))
    return [(f"{short(facet)}={_fmt(v)}", table.filter(pl.col(facet) == v)) for v in values]


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
    logx: bool | None = None,
    styles: dict[str, int] | None = None,
    of: int | None = None,
) -> bool:
    """One line per series (or bars when x is not numeric): the mean over repetitions, with a
    band from their minimum to their maximum. ``styles`` numbers each series label for
    :func:`series_style` (the same in every panel); ``of`` is how many there are in all.
    False when no run of ``table`` has a value for ``y`` (nothing drawn)."""
    series = _aggregate(table, x, y, hue)
    if not series:
        axes.set_xlabel(short(x))
        return False
    styles = styles if styles is not None else {label: k for k, (label, _) in enumerate(series)}
    of = of if of is not None else len(styles)
    # A band only where there is a spread to show: several repetitions of a point.
    repeated = any(r["n"] > 1 for _, items in series for r in items)
    if _is_numeric(table, x):
        xs_all: list[float] = []
        for label, items in series:
            items = sorted(items, key=lambda r: r[x])
            xs = [r[x] for r in items]
            means = np.array([r["mean"] for r in items], dtype=float)
            name = " ".join(p for p in (label_prefix, label) if p) or None
            style = series_style(styles.get(label, 0), of)
            axes.plot(xs, means, label=name, **style)
            if repeated:
                low = np.array([r["min"] for r in items], dtype=float)
                high = np.array([r["max"] for r in items], dtype=float)
                axes.fill_between(xs, low, high, color=style["color"], alpha=0.15, lw=0)
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
            number = styles.get(label, k)
            axes.bar(
                positions,
                means,
                width=width * 0.95,
                yerr=[low, high] if repeated else None,
                capsize=2,
                label=name,
                color=_COLOURS[number % len(_COLOURS)],
                hatch=_HATCHES[number % len(_HATCHES)],
                edgecolor="white",
            )
        axes.set_xticks(range(len(categories)), [_fmt(c) for c in categories])
        if len(categories) > 4:
            axes.tick_params(axis="x", labelrotation=30)
    axes.set_xlabel(short(x))
    return True


def _powers_of_two(values: Sequence[float]) -> bool:
    return all(v > 0 and float(v).is_integer() and (int(v) & (int(v) - 1)) == 0 for v in values)


def _legend(axes: Any, title: str | None = None) -> None:
    """The legend beside the plot, never over the data; each label once however many panels
    draw it."""
    panels = axes if isinstance(axes, list) else [axes]
    seen: dict[str, Any] = {}
    for panel in panels:
        for handle, label in zip(*panel.get_legend_handles_labels(), strict=True):
            seen.setdefault(label, handle)
    if seen:
        panels[0].figure.legend(
            list(seen.values()),
            list(seen),
            loc="outside right upper",
            fontsize=8,
            title=title,
            title_fontsize=8,
        )
    # Plain numbers on a linear y scale (25,000 rather than 2.5 with a 1e4 offset).
    for panel in panels:
        if panel.yaxis.get_scale() == "linear":
            panel.yaxis.set_major_formatter(_plain_formatter())


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
    facet, hues = _facet_split(selection.hue_columns(x_column, hue))
    panels = _facet_tables(selection.table, facet)
    figure, axes_list = _facets(title, [name for name, _ in panels if name])
    labels = [label for label, _ in _aggregate(selection.table, x_column, y_column, hues)]
    styles = {label: k for k, label in enumerate(labels)}
    drawn = False
    for axes, (_, table) in zip(axes_list, panels, strict=True):
        drawn |= _draw_against(axes, table, x_column, y_column, hues, logx=logx, styles=styles)
        if logy:
            axes.set_yscale("log")
        elif not _is_numeric(selection.table, x_column) or y_column.endswith(("mib_s", "iops")):
            axes.set_ylim(bottom=0)
    if not drawn:
        raise PlotError(f"no run has a value for {y_column}")
    axes_list[0].set_ylabel(ylabel)
    _legend(axes_list, " ".join(short(h) for h in hues) or None)
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
    # Only the runs that have this op's latencies: a panel of none would stand empty.
    selection = _with_op(selection, op)
    facet, hues = _facet_split(selection.hue_columns(x_column, hue))
    if facet is None and hues:
        # Three percentiles for each value of an axis: a panel per value reads better.
        facet, hues = hues[0], []
    panels = _facet_tables(selection.table, facet)
    figure, axes_list = _facets(title, [name for name, _ in panels if name])
    columns = [
        (f"ops.{op}.latency_us.{key}", name)
        for key, name in PERCENTILES
        if f"ops.{op}.latency_us.{key}" in selection.table.columns
    ]
    if not columns:
        raise PlotError(f"no run has {op} latency percentiles")
    # The percentiles' lines with each series, numbered the same way in every panel.
    labels = [label for label, _ in _aggregate(selection.table, x_column, columns[0][0], hues)]
    series = [" ".join(p for p in (name, label) if p) for _, name in columns for label in labels]
    drawn = False
    for axes, (_, table) in zip(axes_list, panels, strict=True):
        for column, name in columns:
            styles = {
                label: series.index(" ".join(p for p in (name, label) if p)) for label in labels
            }
            drawn |= _draw_against(
                axes,
                table,
                x_column,
                column,
                hues,
                label_prefix=name,
                logx=logx,
                styles=styles,
                of=len(series),
            )
        if logy if logy is not None else True:
            axes.set_yscale("log")
    if not drawn:
        raise PlotError(f"no run has {op} latencies")
    axes_list[0].set_ylabel(f"{op} latency (µs)")
    _legend(axes_list)
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


def _series_groups(selection: Selection) -> tuple[list[tuple[str, list[dict[str, Any]]]], str]:
    """The lines to draw: one per point (the repetitions of a point are one line, drawn with a
    band), at most MAX_SERIES; and the legend's title, the axes that tell them apart (a label
    is their values alone, an axis that does not vary among these runs is left out)."""
    table = selection.table
    columns = _varying(table, selection.axes)
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in table.iter_rows(named=True):
        label = ", ".join(_fmt(row[c]) for c in columns) or row["id"]
        groups.setdefault(label, []).append(row)
    if len(groups) > MAX_SERIES:
        raise PlotError(
            f"{len(groups)} points would be {len(groups)} lines: expected at most {MAX_SERIES};"
            " choose runs with --where AXIS=VALUE"
        )
    return list(groups.items()), ", ".join(short(c) for c in columns)


#: Probabilities a latency CDF is drawn at (each repetition's quantiles at the same ones, so
#: that they average into one line with a band).
CDF_GRID = np.concatenate([np.linspace(0.0, 0.99, 991), np.linspace(0.99, 1.0, 1001)[1:]])


def plot_latency_cdf(selection: Selection, op: str | None, logx: bool | None, title: str) -> Any:
    op = _default_latency_op(selection, op)
    code = OPS.index(op)
    groups, legend_title = _series_groups(_with_op(selection, op))
    figure, axes = _figure(title)
    exact = approximated = 0
    all_latencies: list[float] = []
    for k, (label, rows) in enumerate(groups):
        style = series_style(k, len(groups))
        look = {key: style[key] for key in ("color", "linestyle", "lw")}
        curves = []
        for row in rows:
            records = read_requests(selection.out_dir, row["id"])
            if records is None:
                continue
            latencies = records[records[:, 0] == code][:, 3] / 1e6
            if latencies.size:
                curves.append(np.quantile(latencies, CDF_GRID, method="inverted_cdf"))
        if curves:
            stack = np.vstack(curves)
            axes.step(stack.mean(axis=0), CDF_GRID, where="post", label=label, **look)
            if len(curves) > 1:
                # The repetitions' spread: at each fraction, their least and most latency.
                axes.fill_betweenx(
                    CDF_GRID, stack.min(axis=0), stack.max(axis=0), color=look["color"],
                    alpha=0.15, lw=0, step="post",
                )  # fmt: skip
            all_latencies.extend([float(stack.min()), float(stack.max())])
            exact += 1
            continue
        points: dict[float, list[float]] = {}
        for row in rows:
            for key, p in CDF_PERCENTILES:
                value = row.get(f"ops.{op}.latency_us.{key}")
                if value is not None:
                    points.setdefault(p, []).append(value)
        if not points:
            continue
        ps = sorted(points)
        xs = [float(np.mean(points[p])) for p in ps]
        axes.plot(xs, ps, marker=style["marker"], ms=3, label=label, **look)
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
            "with markers: through the summary percentiles (no per-request records)",
            transform=axes.transAxes,
            ha="right",
            fontsize=7,
            alpha=0.7,
        )
    _legend(axes, legend_title or None)
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
        style = series_style(k, len(series))
        axes.errorbar(
            xs,
            means,
            yerr=std,
            capsize=3,
            label=f"{label + ': ' if label else ''}mean ± sd",
            **style,
        )
        colour = style["color"]
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
    groups, legend_title = _series_groups(_with_op(selection, op) if op is not None else selection)
    figure, axes = _figure(title)
    # Per line: each repetition's records; binned on one time grid so they average.
    lines: list[tuple[str, list[Any], list[dict[str, Any]]]] = []
    for label, rows in groups:
        kept, kept_rows = [], []
        for row in rows:
            records = read_requests(selection.out_dir, row["id"])
            if records is None:
                continue
            if op is not None:
                records = records[records[:, 0] == OPS.index(op)]
            if records.shape[0]:
                kept.append(records)
                kept_rows.append(row)
        if kept:
            lines.append((label, kept, kept_rows))
    if not lines:
        raise PlotError(
            f"{selection.out_dir}: no per-request records: set record_requests = true in the"
            " sweep file and run it again"
        )
    end = max(float((r[:, 2] + r[:, 3]).max()) / PS_PER_S for _, runs, _ in lines for r in runs)
    edges = np.linspace(0.0, end, bins + 1)
    width = end / bins
    centres = (edges[:-1] + edges[1:]) / 2
    # One time unit for all lines, from the longest run.
    scale, unit = _time_unit(float(centres[-1]))
    for k, (label, runs, rows) in enumerate(lines):
        curves = []
        for records, row in zip(runs, rows, strict=True):
            done = (records[:, 2] + records[:, 3]).astype(float) / PS_PER_S
            if iops:
                weights = None
            elif records.shape[1] > 4:
                # Each request's own size (records written since the size column was added).
                weights = records[:, 4].astype(float) / MIB
            else:
                sizes = _bytes_per_request(row)
                weights = np.array([sizes.get(int(code), 0.0) for code in records[:, 0]]) / MIB
            values, _ = np.histogram(done, bins=edges, weights=weights)
            curves.append(values / width)
        stack = np.vstack(curves)
        style = series_style(k, len(lines))
        look = {key: style[key] for key in ("color", "linestyle", "lw")}
        axes.plot(centres * scale, stack.mean(axis=0), label=label, **look)
        if len(curves) > 1:
            axes.fill_between(
                centres * scale, stack.min(axis=0), stack.max(axis=0), color=look["color"],
                alpha=0.15, lw=0,
            )  # fmt: skip
    axes.set_xlabel(f"simulated time ({unit})")
    what = f"{op} " if op else ""
    axes.set_ylabel(f"{what}IOPS" if iops else f"{what}MiB/s (completions × mean request size)")
    axes.set_ylim(bottom=0)
    _legend(axes, legend_title or None)
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


# The periodic statistics' panels: a title and the columns drawn in it, each drawn when the run
# sampled it (the cache's and the zones' columns come only with a cache or zones).
_SAMPLE_PANELS = (
    ("utilisation", ("channel_utilisation_mean", "die_utilisation_mean", "die_utilisation_max")),
    ("requests in flight", ("requests_in_flight",)),
    ("free blocks", ("free_blocks",)),
    ("write amplification", ("write_amplification",)),
    ("cache lines", ("cache_lines_used", "cache_dirty_lines")),
    ("zones", ("open_zones", "active_zones", "zone_resets")),
)

# A column holding one series per placement handle (a row each), drawn as a panel of its own.
_PER_HANDLE_SAMPLES = "fdp_handle_write_amplification"


def plot_samples(samples: Mapping[str, Sequence[float]], title: str = "periodic statistics") -> Any:
    """The periodic statistics of one run (``Result.samples()``) against simulated time: one
    panel per group of columns the run has."""
    from matplotlib.figure import Figure

    if "time_s" not in samples:
        raise PlotError("no periodic statistics: run with stats_interval=")
    panels = [(name, [c for c in cols if c in samples]) for name, cols in _SAMPLE_PANELS]
    panels = [(name, cols) for name, cols in panels if cols]
    handles = list(samples.get(_PER_HANDLE_SAMPLES, ()))
    if handles:
        panels.append(("write amplification per FDP placement handle", []))
    figure = Figure(figsize=(FIGSIZE[0], 1.9 * len(panels) + 0.8), layout="constrained")
    grid = figure.subplots(len(panels), 1, sharex=True, squeeze=False)
    time_ms = [1e3 * float(t) for t in samples["time_s"]]
    for axes, (name, cols) in zip(grid.flat, panels, strict=True):
        axes.set_title(name, fontsize=9)
        axes.grid(True, alpha=0.3)
        lines = [(col, samples[col]) for col in cols] or [
            (f"handle {h}", row) for h, row in enumerate(handles)
        ]
        for k, (label, values) in enumerate(lines):
            style = series_style(k, len(lines))
            style.pop("marker", None)
            axes.plot(time_ms, [float(v) for v in values], label=label, **style)
        if len(lines) > 1:
            axes.legend(fontsize=7)
    grid.flat[-1].set_xlabel("simulated time (ms)")
    figure.suptitle(title, fontsize=11)
    return figure


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
