"""The results table of a sweep: one row per run, written as Parquet and CSV.

Columns, in this order:

- ``point``, ``id``, ``repetition``, ``seed``, ``status`` (``ok`` or ``failed``), ``error``;
- the axes: ``config.<dotted path>`` and ``job.<field>`` (the values the point was run with);
- ``config.<path>`` for every fixed ``[set]`` override, then every job field as ``job.<field>``
  (a block-size mix as ``"4KiB:70,64KiB:30"``), or for a trace replay every option as
  ``trace.<option>``;
- ``config_name``, ``config_hash``, ``ssdlab_version``, ``worker``, ``worker_seconds``;
- the result's figures by their path in the result JSON (``sim.*``, ``ops.flush.*``,
  ``ops.read.*``, ``ops.trim.*``, ``ops.write.*``, ``total.*``, ``device.*``, ``utilisation.*``,
  ``wall.*``), as the core lists them (``_core.result_columns()``).
  These columns are always present, empty where a run has no such figure (a write-only job has
  no ``ops.read.*``); lists (per-channel and per-die utilisation) stay in the per-run JSON;
- for a trace replay, what the replay did (the result's ``trace`` block) as ``replay.*``;
- when HFSL drove a fusion device, HFSL's figures as ``hfsl.*`` (``hfsl.counters.nand_updates``).

A ``[swap]`` sweep (the paging model, schema ``ssdlab.swap/1``) has instead ``swap.<knob>``
for the paging run (``swap.device``, ``swap.memory``, ``swap.era``, ``swap.pc_mix.rounds``, ...)
and the swap result's figures by their path (``faults.major``, ``swap_in_latency.mean_us``,
``swap_out.time_s``, ``wear.max_writes_per_page``, ...). Its histograms become one column per
bucket (``writes.size_histogram.4096`` = requests of 4 KiB, ``reads.ird_histogram.0``,
``wear.histogram.2``) and the lifetime table one column per endurance
(``wear.lifetime.100000.without_wear_levelling_y``).

The per-run JSON (exactly as the core wrote it) sits beside the table in
``runs/<id>/result.json``, with ``runs/<id>/point.json`` (what was run, and its status) and, when
recorded, ``runs/<id>/requests.npy`` (one row ``(op, offset_bytes, issue_ps, latency_ps,
size_bytes, queue)`` of unsigned 64-bit integers per request; ``queue`` the host queue, a job's
instance k of the run being queue k).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import _core
from ..files import write_output

TABLE_PARQUET = "results.parquet"
TABLE_CSV = "results.csv"
MANIFEST = "manifest.json"
RUNS = "runs"
RESULT_FILE = "result.json"
POINT_FILE = "point.json"
REQUESTS_FILE = "requests.npy"

META_COLUMNS = ("point", "id", "repetition", "seed", "status", "error")
RUN_COLUMNS = ("config_name", "config_hash", "ssdlab_version", "worker", "worker_seconds")
JOB_FIELDS: tuple[str, ...] = tuple(_core.job_fields())  # the core's JobSpec, in order
# Every scalar figure of schema ssdlab.result/1 that every run has (docs/binding-contract.md), in
# the order the core writes them: taken from the core's result type.
RESULT_COLUMNS: tuple[str, ...] = tuple(_core.result_columns())
_RESULT_TOP = (
    "sim",
    "ops",
    "total",
    "device",
    "utilisation",
    "cache",
    "pcm",
    "reliability",
    "power",
    "hfsl",
    "wall",
)
# The result of a trace replay describes the replay in its "trace" block: columns replay.*. The
# "interface" block (kind, link, device queue depth, the DRAM interface's counters) becomes
# iface.*, so that "interface.link" keeps naming the configuration's axis (config.interface.link).
_RESULT_RENAMED = {"trace": "replay", "interface": "iface"}


def flatten_result(result: Mapping[str, Any]) -> dict[str, Any]:
    """The result's figures as ``{"ops.read.iops": ..., ...}``; lists are left out."""
    out: dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                walk(value, f"{prefix}.{key}")
        elif not isinstance(node, list):
            out[prefix] = node

    for top in _RESULT_TOP:
        if top in result:
            walk(result[top], top)
    for top, prefix in _RESULT_RENAMED.items():
        if isinstance(result.get(top), Mapping):
            walk(result[top], prefix)
    return out


SWAP_SCHEMA = "ssdlab.swap/1"
# Lists of (bucket, count) pairs in the swap result: one column per bucket.
_SWAP_HISTOGRAMS = ("size_histogram", "ird_histogram", "histogram")


def flatten_swap_result(result: Mapping[str, Any]) -> dict[str, Any]:
    """A paging result's figures as ``{"faults.major": ..., "writes.size_histogram.4096": ...}``:
    every scalar by its path, each histogram bucket as a column, the lifetime table by
    endurance."""
    out: dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                walk(value, f"{prefix}.{key}" if prefix else str(key))
        elif isinstance(node, list):
            leaf = prefix.rsplit(".", 1)[-1]
            if leaf in _SWAP_HISTOGRAMS:
                for bucket, count in node:
                    out[f"{prefix}.{bucket}"] = count
            elif leaf == "lifetime":
                for entry in node:
                    for key, value in entry.items():
                        if key != "endurance":
                            out[f"{prefix}.{entry['endurance']}.{key}"] = value
            # any other list (the endurance knob, say) stays in the per-run JSON
        else:
            out[prefix] = node

    walk({k: v for k, v in result.items() if k != "schema"}, "")
    return out


def job_cell(value: Any) -> Any:
    """A job field as one table cell: a block-size mix becomes ``"4KiB:70,64KiB:30"``."""
    if isinstance(value, Mapping):
        return ",".join(f"{k}:{v}" for k, v in value.items())
    if isinstance(value, list):
        return json.dumps(value)
    return value


def cell(value: Any) -> Any:
    """An axis value as one cell: scalars stay, lists and tables become JSON text."""
    if isinstance(value, Mapping | list):
        return json.dumps(value, sort_keys=True)
    return value


# --------------------------------------------------------------------------------------------
# Reading a sweep directory


def _read_json(path: Path, remedy: str) -> Any:
    """A sweep file's JSON; a damaged one (truncated, garbage) is a one-line error naming the
    file, what is wrong and ``remedy``, never a traceback."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise _core.SsdlabError(
            f"{path}: not valid JSON ({e.msg} at line {e.lineno} column {e.colno}); {remedy}"
        ) from None
    except UnicodeDecodeError as e:
        message = f"{path}: not valid JSON (not UTF-8: {e.reason}); {remedy}"
        raise _core.SsdlabError(message) from None


def read_manifest(out_dir: str | os.PathLike[str]) -> dict[str, Any]:
    path = Path(out_dir) / MANIFEST
    if not path.is_file():
        raise _core.SsdlabError(f"{out_dir}: not a sweep output directory (no {MANIFEST})")
    manifest = _read_json(path, "run the sweep again into this directory to rewrite it")
    if not isinstance(manifest, dict):
        raise _core.SsdlabError(
            f"{path}: expected a JSON object, got {type(manifest).__name__}; "
            "run the sweep again into this directory to rewrite it"
        )
    return manifest


def read_point(out_dir: Path, point_id: str) -> dict[str, Any] | None:
    path = out_dir / RUNS / point_id / POINT_FILE
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None  # a half-written file is as good as none: the point runs again


def read_result(out_dir: str | os.PathLike[str], point_id: str) -> dict[str, Any] | None:
    path = Path(out_dir) / RUNS / point_id / RESULT_FILE
    if not path.is_file():
        return None
    return _read_json(path, "run the sweep again into this directory to run the point again")


def result_is_readable(out_dir: Path, point_id: str) -> bool:
    """Whether a finished point's result.json is there and whole: a point marked ok without it
    (deleted, truncated by a full disk) has no figures and must run again."""
    try:
        return read_result(out_dir, point_id) is not None
    except (_core.SsdlabError, OSError):
        return False


def read_requests(out_dir: str | os.PathLike[str], point_id: str) -> np.ndarray | None:
    """The per-request records of one run: an (n, 5) uint64 array (before the size column was
    added, (n, 4)), or None if not recorded."""
    path = Path(out_dir) / RUNS / point_id / REQUESTS_FILE
    if not path.is_file():
        return None
    return np.load(path, allow_pickle=False)


def rows(out_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """One dict per finished run of the manifest's points, in point order."""
    directory = Path(out_dir)
    manifest = read_manifest(directory)
    sweep = manifest.get("sweep", {})
    fixed = [item.split("=", 1) for item in sweep.get("set", [])]
    out = []
    for point in manifest.get("points", []):
        record = read_point(directory, point["id"])
        if record is None or record.get("status") not in ("ok", "failed"):
            continue
        row: dict[str, Any] = {
            "point": point["index"],
            "id": point["id"],
            "repetition": point["repetition"],
            "seed": point["seed"],
            "status": record["status"],
            "error": record.get("error"),
        }
        for column, value in point["params"].items():
            row[column] = cell(value)
        for key, literal in fixed:
            row.setdefault(f"config.{key}", _literal_cell(literal))
        if "swap" in record:
            for key, value in (record.get("swap") or {}).items():
                row.setdefault(f"swap.{key}", cell(value))
        elif "trace" in record:
            for key, value in (record.get("trace") or {}).items():
                row.setdefault(f"trace.{key}", job_cell(value))
        else:
            job = record.get("job") or {}
            for key in JOB_FIELDS:
                row.setdefault(f"job.{key}", job_cell(job.get(key)))
            for key, value in job.items():
                row.setdefault(f"job.{key}", job_cell(value))
        result = read_result(directory, point["id"]) if record["status"] == "ok" else None
        swap_result = result is not None and result.get("schema") == SWAP_SCHEMA
        if result is not None and swap_result:  # a paging result names its device, no hash
            result = {"config_name": result["device"], **result}
        row["config_name"] = (result or {}).get("config_name", record.get("config_name"))
        row["config_hash"] = (result or {}).get("config_hash")
        row["ssdlab_version"] = (result or {}).get("ssdlab_version", record.get("ssdlab_version"))
        row["worker"] = record.get("worker")
        row["worker_seconds"] = record.get("worker_seconds")
        if result is not None and swap_result:
            row.update(flatten_swap_result({k: v for k, v in result.items() if k != "config_name"}))
        elif result is not None:
            row.update(flatten_result(result))
        out.append(row)
    return out


def _literal_cell(literal: str) -> Any:
    """A ``[set]`` override's TOML literal back as a value, for its table column."""
    import tomllib

    try:
        return cell(tomllib.loads(f"v = {literal}")["v"])
    except tomllib.TOMLDecodeError:
        return literal


def column_order(all_rows: Sequence[Mapping[str, Any]], axis_columns: Sequence[str]) -> list[str]:
    present: list[str] = []
    seen: set[str] = set()
    for row in all_rows:
        for key in row:
            if key not in seen:
                seen.add(key)
                present.append(key)
    fixed = [*META_COLUMNS, *axis_columns]
    configs = sorted(c for c in present if c.startswith("config.") and c not in fixed)
    if any(c.startswith("swap.") for c in present):
        # A paging sweep: its knobs, then the swap result's figures in the core's order
        # (the run result's columns do not apply).
        knobs = [c for c in present if c.startswith("swap.") and c not in fixed]
        known = [*fixed, *configs, *knobs, *RUN_COLUMNS]
        return [*known, *(c for c in present if c not in known)]
    if any(c.startswith("trace.") for c in present):
        jobs = [c for c in present if c.startswith("trace.") and c not in fixed]
    else:
        jobs = [f"job.{k}" for k in JOB_FIELDS if f"job.{k}" not in fixed]
        jobs += sorted(
            c for c in present if c.startswith("job.") and c not in fixed and c not in jobs
        )
    known = [*fixed, *configs, *jobs, *RUN_COLUMNS, *RESULT_COLUMNS]
    replay = sorted(c for c in present if c.startswith("replay.") and c not in known)
    known += replay
    extra = sorted(c for c in present if c not in known)
    return [*known, *extra]


def _series(name: str, values: list[Any]) -> Any:
    """One typed column: booleans, integers, floats or text, nulls where a value is missing."""
    import polars as pl

    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return pl.Series(name, values, dtype=pl.Boolean)
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        if all(-(2**63) <= v < 2**63 for v in present):
            return pl.Series(name, values, dtype=pl.Int64)
        if all(0 <= v < 2**64 for v in present):
            return pl.Series(name, values, dtype=pl.UInt64)
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in present)
    if present and numeric:
        return pl.Series(
            name, [float(v) if v is not None else None for v in values], dtype=pl.Float64
        )
    if not present:
        # A figure no run has (ops.trim.* of a sweep without trims) still has its numeric type.
        numeric_figure = name in RESULT_COLUMNS and name != "sim.stop_reason"
        return pl.Series(name, values, dtype=pl.Float64 if numeric_figure else pl.Utf8)
    return pl.Series(name, [str(v) if v is not None else None for v in values], dtype=pl.Utf8)


def build_table(out_dir: str | os.PathLike[str]) -> Any:
    """The results table of a sweep directory as a polars DataFrame (rebuilt from the runs)."""
    import polars as pl

    manifest = read_manifest(out_dir)
    axis_columns = [axis["column"] for axis in manifest.get("sweep", {}).get("axes", [])]
    all_rows = rows(out_dir)
    columns = column_order(all_rows, axis_columns)
    return pl.DataFrame([_series(c, [row.get(c) for row in all_rows]) for c in columns])


def write_table(out_dir: str | os.PathLike[str]) -> list[Path]:
    """Write ``results.parquet`` and ``results.csv`` (atomically) and return their paths."""
    directory = Path(out_dir)
    table = build_table(directory)
    paths = []
    for name, write in ((TABLE_PARQUET, table.write_parquet), (TABLE_CSV, table.write_csv)):
        paths.append(write_output(directory / name, write))
    return paths


def load_results(
    out_dir: str | os.PathLike[str], backend: str = "polars", rebuild: bool = False
) -> Any:
    """The results table of a sweep: a polars DataFrame, or pandas with ``backend="pandas"``.

    Reads ``results.parquet``; with ``rebuild`` (or when the file is missing) rebuilds it from
    the per-run files first.
    """
    import polars as pl

    directory = Path(out_dir)
    parquet = directory / TABLE_PARQUET
    if rebuild or not parquet.is_file():
        read_manifest(directory)  # a clear error if this is no sweep directory
        write_table(directory)
    try:
        table = pl.read_parquet(parquet)
    except (pl.exceptions.PolarsError, OSError):
        # The table is derived from the per-run files: a damaged copy (truncated, overwritten)
        # is rebuilt from them rather than reported as polars' traceback.
        read_manifest(directory)
        write_table(directory)
        table = pl.read_parquet(parquet)
    if backend == "polars":
        return table
    if backend == "pandas":
        return to_pandas(table)
    raise ValueError(f"unknown backend {backend!r}: expected 'polars' or 'pandas'")


def to_pandas(table: Any) -> Any:
    """A polars DataFrame as pandas, without needing pyarrow (``pip install 'ssdlab[pandas]'``)."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("pandas is not installed: pip install 'ssdlab[pandas]'") from None
    return pd.DataFrame(
        {name: table[name].to_list() for name in table.columns}, columns=list(table.columns)
    )


def ok_rows(table: Any) -> Any:
    import polars as pl

    return table.filter(pl.col("status") == "ok")


def distinct(values: Iterable[Any]) -> list[Any]:
    seen: list[Any] = []
    for value in values:
        if value not in seen:
            seen.append(value)
    return seen
