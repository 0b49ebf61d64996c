"""One self-contained HTML page for a sweep directory.

Figures are embedded as PNG data URIs and the style sheet is inline: the page needs no network
and no other file. It lists what was run (the sweep file, the base configuration, the axes), how
(executor, times, versions) and what came out (the comparison with a document when the directory
comes from ``ssdlab reproduce``, the figures, the results table and any failures).
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import html
import json
import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .. import _core
from ..api import without_unused_fields
from ..files import write_output_text
from .plots import (
    MAX_SERIES,
    OPS,
    PlotError,
    Selection,
    figure_bytes,
    make_plot,
    plot_samples,
    short,
)
from .results import load_results, read_manifest, read_result

COMPARISON_FILE = "comparison.json"
# A sweep with stats_interval: the periodic statistics of this many runs (the first of
# repetition 0) are drawn, a figure each; the others are named in a note.
MAX_SAMPLE_FIGURES = 6
MAX_TABLE_ROWS = 1000
KEY_FIGURES = (
    "total.bandwidth_mib_s",
    "total.iops",
    "ops.read.latency_us.p50",
    "ops.read.latency_us.p99",
    "ops.write.latency_us.p50",
    "ops.write.latency_us.p99",
    "device.write_amplification",
    "device.erases",
    "wall.seconds",
)

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1100px; padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { font-size: 1.25em; margin-top: 1.8em;
     border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
.sub { color: #666; margin-top: 0; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.5em; text-align: right; vertical-align: top; }
th { background: #f3f3f3; } td.text, th.text { text-align: left; }
tr.failed td { background: #fdecea; }
.scroll { overflow: auto; max-width: 100%; max-height: 36em; border: 1px solid #ddd; }
.scroll table { margin: 0; } .scroll thead th { position: sticky; top: 0; z-index: 1; }
figure { margin: 1em 0; display: inline-block; }
figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.85em; color: #555; }
pre { background: #f7f7f7; padding: 0.7em; overflow-x: auto; font-size: 0.8em; }
.note { color: #8a5a00; } .muted { color: #777; }
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _number(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value == 0:
            return "0"
        magnitude = abs(value)
        if magnitude >= 1000:
            return f"{value:,.0f}"
        if magnitude >= 10:
            return f"{value:.1f}"
        return f"{value:.3g}"
    return _e(value)


def _table(
    headers: Sequence[str],
    rows: Iterable[Sequence[Any]],
    text_columns: set[int],
    row_classes: Sequence[str] | None = None,
    numeric_text: set[int] | None = None,
) -> str:
    """An HTML table: ``text_columns`` left-aligned text, ``numeric_text`` right-aligned text
    (already formatted), the rest numbers."""
    out = ["<div class='scroll'><table><thead><tr>"]
    for i, header in enumerate(headers):
        out.append(f"<th class='{'text' if i in text_columns else ''}'>{_e(header)}</th>")
    out.append("</tr></thead><tbody>")
    for n, row in enumerate(rows):
        cls = row_classes[n] if row_classes else ""
        out.append(f"<tr class='{cls}'>")
        for i, value in enumerate(row):
            if i in text_columns:
                out.append(f"<td class='text'>{_e(value)}</td>")
            elif numeric_text and i in numeric_text:
                out.append(f"<td>{_e(value)}</td>")
            else:
                out.append(f"<td>{_number(value)}</td>")
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _figure_html(figure: Any, caption: str) -> str:
    data = base64.b64encode(figure_bytes(figure, "png")).decode("ascii")
    return (
        f"<figure><img alt='{_e(caption)}' src='data:image/png;base64,{data}'>"
        f"<figcaption>{_e(caption)}</figcaption></figure>"
    )


def _figures(out_dir: Path, selection: Selection) -> tuple[list[str], list[str]]:
    """The standard views that make sense for this sweep; notes for the ones left out."""
    table = selection.table
    drawn: list[str] = []
    notes: list[str] = []

    def has(column: str) -> bool:
        return (
            column in table.columns
            and table[column].drop_nulls().len() > 0
            and bool((table[column].drop_nulls() != 0).any())
        )

    x = selection.default_x()
    numeric_x = x in table.columns and table.schema[x].is_numeric()
    ops = [op for op in OPS if has(f"ops.{op}.count")]
    records = any((out_dir / "runs" / rid / "requests.npy").is_file() for rid in table["id"])
    runs_for_lines = (
        table.height
        if table["repetition"].n_unique() == 1
        else table.filter(table["repetition"] == 0).height
    )

    plan: list[tuple[str, dict[str, Any], str]] = [
        (
            "bandwidth",
            {},
            f"Bandwidth (all ops) against {short(x)}; error bars: min–max over repetitions.",
        ),
        ("iops", {}, f"IOPS (all ops) against {short(x)}."),
    ]
    for op in ops:
        if numeric_x:
            plan.append(("latency", {"op": op}, f"{op} latency percentiles against {short(x)}."))
        else:
            plan.append(
                (
                    "metric",
                    {"y": f"ops.{op}.latency_us.p99"},
                    f"{op} p99 latency (µs) per {short(x)}.",
                )
            )
    if has("device.write_amplification"):
        plan.append(("waf", {}, f"Write amplification against {short(x)}."))
    if has("device.erases"):
        plan.append(
            (
                "erases",
                {},
                "Erases per block: mean ± standard deviation over blocks,"
                " with the least and most erased block.",
            )
        )
    for op in ops:
        source = "per-request records" if records else "summary percentiles"
        plan.append(("latency-cdf", {"op": op}, f"Distribution of {op} latency ({source})."))
    if records:
        caption = "Throughput over simulated time, from per-request records (completions per"
        if runs_for_lines <= MAX_SERIES:
            plan.append(("throughput", {}, f"{caption} time bin)."))
        else:
            for op in ops:
                plan.append(
                    ("throughput", {"op": op}, f"{op} {caption[0].lower()}{caption[1:]} time bin).")
                )
    for view, options, caption in plan:
        what = options.get("op") or options.get("y", "").removeprefix("ops.") or ""
        title = f"{selection.name}: {view}{f' ({what})' if what else ''}"
        try:
            figure = make_plot(out_dir, view, title=title, **options)
        except PlotError as error:
            notes.append(f"{view}{' ' + options['op'] if 'op' in options else ''}: {error}")
            continue
        drawn.append(_figure_html(figure, caption))
    return drawn, notes


def _sample_figures(directory: Path, table: Any, axis_columns: list[str]) -> list[str]:
    """The periodic statistics (a sweep with ``stats_interval``) of the first runs of
    repetition 0, a figure each, and a note naming how many more runs have them."""
    drawn: list[str] = []
    more = 0
    runs = table.filter((table["status"] == "ok") & (table["repetition"] == 0))
    for row in runs.iter_rows(named=True):
        samples = (read_result(directory, row["id"]) or {}).get("samples")
        if not samples:
            continue
        if len(drawn) >= MAX_SAMPLE_FIGURES:
            more += 1
            continue
        where = ", ".join(f"{short(c)} = {_plain(row.get(c))}" for c in axis_columns)
        title = f"point {row['point']}" + (f": {where}" if where else "")
        drawn.append(
            _figure_html(
                plot_samples(samples, title=title),
                f"Periodic statistics of {title}, against simulated time (stats_interval).",
            )
        )
    if more:
        drawn.append(
            f"<p class='muted'>Periodic statistics of {more} more run(s) are in their"
            f" result.json (<code>samples</code>); the report draws the first"
            f" {MAX_SAMPLE_FIGURES}.</p>"
        )
    return drawn


def significant(value: Any, digits: int = 4) -> str:
    """A number with ``digits`` significant digits, no trailing zeros, thousands separated."""
    if value is None:
        return "–"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    number = float(value)
    if number == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(number))))
    text = f"{number:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _comparison_html(rows: list[dict[str, Any]]) -> str:
    body = []
    for row in rows:
        difference = row.get("difference")
        absolute = row.get("abs_difference")
        if isinstance(difference, int | float):
            shown = f"{difference * 100:+.1f} %"
        elif isinstance(absolute, int | float):
            # A document value of 0: only the absolute difference says anything.
            unit = "pp" if row.get("unit") == "%" else row.get("unit") or ""
            shown = f"{'+' if absolute >= 0 else '-'}{significant(abs(absolute))} {unit}"
            shown = shown.rstrip() + " (absolute)"
        else:
            shown = "–"
        body.append(
            [
                row.get("metric"),
                row.get("unit"),
                significant(row.get("paper")),
                significant(row.get("ssdlab")),
                shown,
                row.get("label") or "",
                row.get("basis") or "",
                row.get("note") or "",
            ]
        )
    headers = [
        "metric",
        "unit",
        "document",
        "ssdlab",
        "difference",
        "label",
        "document's number",
        "note",
    ]
    return _table(headers, body, {0, 1, 5, 6, 7}, numeric_text={2, 3, 4})


def write_report(
    out_dir: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    images: Sequence[tuple[str | os.PathLike[str], str]] = (),
) -> Path:
    """Write the HTML report of a sweep directory (default ``DIR/report.html``).

    ``images`` are extra PNG files, with captions, placed first among the figures (a
    reproduction's own plots)."""
    directory = Path(out_dir)
    manifest = read_manifest(directory)
    table = load_results(directory)
    target = Path(out) if out is not None else directory / "report.html"
    sweep = manifest.get("sweep", {})
    name = manifest.get("name", directory.name)

    parts: list[str] = []
    add = parts.append
    add("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>")
    add("<meta name='viewport' content='width=device-width, initial-scale=1'>")
    add(f"<title>ssdlab report: {_e(name)}</title><style>{STYLE}</style></head><body>")
    add(f"<h1>ssdlab report: {_e(name)}</h1>")
    if sweep.get("description"):
        add(f"<p class='sub'>{_e(sweep['description'])}</p>")

    ok = table.filter(table["status"] == "ok").height if table.height else 0
    failed = table.height - ok
    total = len(manifest.get("points", []))
    add("<h2>Summary</h2><ul>")
    add(
        f"<li>{total} points ({len(sweep.get('seeds', [1]))} repetition(s) each): {ok} ok,"
        f" {failed} failed, {total - table.height} not run yet.</li>"
    )
    config_name = sweep.get("config")
    add(
        f"<li>Base configuration: <code>{_e(Path(str(config_name)).name)}</code>"
        + (f" with {len(sweep.get('set', []))} fixed override(s)" if sweep.get("set") else "")
        + ".</li>"
    )
    axes = sweep.get("axes", [])
    if axes:
        add(
            "<li>Axes: "
            + "; ".join(
                f"<code>{_e(a['column'])}</code> = {_e(', '.join(map(_plain, a['values'])))}"
                for a in axes
            )
            + ".</li>"
        )
    zipped = [dim for dim in sweep.get("dims", []) if len(dim) > 1]
    for dim in zipped:
        add(f"<li>Varied together: {_e(', '.join(dim))}.</li>")
    add("</ul>")

    comparison_path = directory / COMPARISON_FILE
    if comparison_path.is_file():
        comparison = json.loads(comparison_path.read_text(encoding="utf-8"))
        rows = comparison.get("rows", [])
        add(
            f"<h2>Against the document: {_e(comparison.get('document', ''))}"
            f" {_e(comparison.get('target', ''))}</h2>"
        )
        add(
            "<p class='muted'>difference = ssdlab ÷ document − 1 (where the document's value is"
            " 0: ssdlab − document). label: prediction, calibrated (a parameter was fitted to"
            " it: the note says which), input (it repeats a model input) or derived (computed"
            " from other rows). Rows without an ssdlab value"
            " are configurations ssdlab does not model yet; rows without a document value are"
            " ssdlab's figures where the document's text gives none.</p>"
        )
        add(_comparison_html(rows))
        for note in comparison.get("notes", []):
            add(f"<p class='note'>{_e(note)}</p>")

    add("<h2>Figures</h2>")
    for image, caption in images:
        data = base64.b64encode(Path(image).read_bytes()).decode("ascii")
        add(
            f"<figure><img alt='{_e(caption)}' src='data:image/png;base64,{data}'>"
            f"<figcaption>{_e(caption)}</figcaption></figure>"
        )
    if ok:
        selection = Selection(directory)
        figures, notes = _figures(directory, selection)
        parts.extend(figures)
        for note in notes:
            add(f"<p class='muted'>Not drawn: {_e(note)}</p>")
        parts.extend(_sample_figures(directory, table, [a["column"] for a in axes]))
    else:
        add("<p>No successful run to draw.</p>")

    add("<h2>Results</h2>")
    axis_columns = [a["column"] for a in axes]
    columns = [
        "point",
        "repetition",
        "seed",
        "status",
        *axis_columns,
        *(c for c in KEY_FIGURES if c in table.columns and table[c].drop_nulls().len() > 0),
    ]
    text_columns = {
        i
        for i, c in enumerate(columns)
        if c == "status" or (c in table.columns and not table.schema[c].is_numeric())
    }
    shown = table.head(MAX_TABLE_ROWS)
    # Seeds are names, not quantities: no thousands separators.
    plain = {i for i, c in enumerate(columns) if c in ("point", "repetition", "seed")}
    add(
        _table(
            [short(c) for c in columns],
            (
                [str(row.get(c)) if i in plain else row.get(c) for i, c in enumerate(columns)]
                for row in shown.iter_rows(named=True)
            ),
            text_columns,
            ["failed" if s != "ok" else "" for s in shown["status"]],
            numeric_text=plain,
        )
    )
    if table.height > MAX_TABLE_ROWS:
        add(f"<p class='muted'>First {MAX_TABLE_ROWS} of {table.height} rows.</p>")
    add(
        "<p class='muted'>Every run with all its figures: <a href='results.csv'>results.csv</a>"
        " and results.parquet beside this page; the per-run JSON in runs/&lt;id&gt;/.</p>"
    )

    failures = table.filter(table["status"] != "ok") if table.height else table
    if failures.height:
        add("<h2>Failures</h2>")
        add(
            _table(
                ["point", "seed", *[short(c) for c in axis_columns], "error"],
                (
                    [str(r["point"]), str(r["seed"]), *[r.get(c) for c in axis_columns], r["error"]]
                    for r in failures.iter_rows(named=True)
                ),
                {2 + i for i in range(len(axis_columns) + 1)},
                numeric_text={0, 1},
            )
        )

    add("<h2>Configuration</h2>")
    add(f"<p>Base configuration <code>{_e(config_name)}</code>, resolved:</p>")
    config_text = directory / "config.toml"
    if config_text.is_file():
        # Without what the device never reads (another interface kind's tables, PCIe's fields;
        # an FTL's GC on a device without one).
        shown = without_unused_fields(config_text.read_text(encoding="utf-8"))
        add(f"<pre>{_e(shown)}</pre>")
    add("<p>Base job (axes replace its fields):</p>")
    add(f"<pre>{_e(json.dumps(sweep.get('job', {}), indent=2))}</pre>")
    sweep_text = directory / "sweep.toml"
    if sweep_text.is_file():
        text = sweep_text.read_text(encoding="utf-8")
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        add(f"<p>Sweep file <code>{_e(sweep.get('source'))}</code> (sha256 {digest}…):</p>")
        add(f"<pre>{_e(text)}</pre>")
    else:
        add("<p>Sweep (given as data):</p>")
        add(f"<pre>{_e(json.dumps(sweep, indent=2))}</pre>")

    add("<h2>Provenance</h2><ul>")
    environment = manifest.get("environment", {})
    versions = environment.get("versions", {})
    seen = (
        sorted(v for v in table["ssdlab_version"].drop_nulls().unique().to_list())
        if ("ssdlab_version" in table.columns)
        else []
    )
    add(
        f"<li>ssdlab version of the runs: {_e(', '.join(seen) or '–')}; of this report:"
        f" {_e(_core.version())}.</li>"
    )
    if versions:
        add(
            "<li>Environment of the last sweep: "
            + _e(", ".join(f"{k} {v}" for k, v in versions.items() if v))
            + "; "
            + _e(environment.get("platform", ""))
            + ".</li>"
        )
    hashes = (
        table["config_hash"].drop_nulls().unique().len() if "config_hash" in (table.columns) else 0
    )
    add(
        f"<li>{hashes} distinct resolved configuration(s) (sha256 config hashes in the"
        " table's <code>config_hash</code> column).</li>"
    )
    add(
        f"<li>Output directory created {_e(manifest.get('created'))}, last updated"
        f" {_e(manifest.get('updated'))}; report written"
        f" {_e(_dt.datetime.now(_dt.UTC).isoformat(timespec='seconds'))}.</li>"
    )
    add("</ul>")
    invocations = manifest.get("invocations", [])
    if invocations:
        add("<p>Invocations of the sweep into this directory:</p>")
        add(
            _table(
                [
                    "started",
                    "executor",
                    "workers",
                    "points",
                    "already done",
                    "ran",
                    "ok",
                    "failed",
                    "seconds",
                    "runs/min",
                ],
                (
                    [
                        i.get("started"),
                        i.get("executor"),
                        i.get("workers") or i.get("address"),
                        i.get("points"),
                        i.get("already_done"),
                        i.get("ran"),
                        i.get("ok"),
                        i.get("failed"),
                        i.get("seconds"),
                        i.get("runs_per_minute"),
                    ]
                    for i in invocations
                ),
                {0, 1},
            )
        )
    add("<p class='muted'>Written by ssdlab report. Everything on this page is in this file.</p>")
    add("</body></html>")

    target.parent.mkdir(parents=True, exist_ok=True)
    return write_output_text(target, "\n".join(parts))


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)
