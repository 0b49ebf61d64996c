"""The Python face of the simulator: configurations, jobs, runs and their results.

Everything here passes text to ``ssdlab._core`` and back. The schema of a configuration and of a
job lives in Rust only, so nothing below re-declares a field: Python builds override strings and
JSON documents, and the core validates them.
"""

from __future__ import annotations

import json
import math
import operator
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _core
from .values import MAX_SEED, toml_literal
from .values import numpy_types as _numpy_types

if TYPE_CHECKING:
    import numpy as np


ProgressCallback = Callable[[int, int], None]

# Op codes of the per-request records, in the order the contract numbers them.
# Op names by their code in the per-request records, from the core.
OP_NAMES: tuple[str, ...] = tuple(_core.op_names())

PS_PER_US = 1_000_000.0
# (op, offset_bytes, issue_ps, latency_ps, size_bytes), each a little-endian u64
RECORD_FIELDS = 6


def _override_strings(overrides: Mapping[str, Any] | Iterable[str] | None) -> tuple[str, ...]:
    """Accept overrides as ``["a.b=1", ...]`` (values already TOML) or ``{"a.b": 1}``."""
    if overrides is None:
        return ()
    if isinstance(overrides, Mapping):
        return tuple(_override(path, value) for path, value in overrides.items())
    if isinstance(overrides, str):
        # A lone string is one override, not a sequence of characters.
        return (overrides,)
    if not isinstance(overrides, Iterable):
        raise TypeError(
            f"overrides: got {overrides!r} ({type(overrides).__name__}), expected a mapping"
            " {'path': value}, a list of 'path=value' strings, or None"
        )
    return tuple(str(item) for item in overrides)


def _override(path: str, value: Any) -> str:
    """``path=value`` with the value as a TOML literal, or a TypeError naming the path (TOML
    has no None)."""
    try:
        return f"{path}={toml_literal(value)}"
    except TypeError as error:
        raise TypeError(f"{path}: got {value!r}: {error}") from None


def _spec_text(name_or_path: str | os.PathLike[str]) -> str:
    """A preset name stays as it is; a file path is made absolute.

    Absolute paths keep a Config re-resolvable (``Config.set``) after the working directory
    changes. A bare word is left alone so that it is still looked up as a preset first.
    """
    if isinstance(name_or_path, os.PathLike):
        return str(Path(name_or_path).resolve())
    text = str(name_or_path)
    looks_like_path = os.sep in text or text.endswith(".toml")
    if looks_like_path and Path(text).is_file():
        return str(Path(text).resolve())
    return text


# --------------------------------------------------------------------------------------------
# Config


class Config:
    """A resolved configuration: a preset name or TOML file plus a list of overrides.

    The object is immutable; ``set`` returns a new Config, resolved again by the core so that an
    override is validated the moment it is made.
    """

    __slots__ = ("_spec", "_overrides", "_json")

    def __init__(
        self,
        name_or_path: str | os.PathLike[str],
        overrides: Mapping[str, Any] | Iterable[str] | None = None,
    ) -> None:
        self._spec = _spec_text(name_or_path)
        self._overrides = _override_strings(overrides)
        self._json: str = _core.resolve_config(self._spec, list(self._overrides))

    @classmethod
    def load(
        cls,
        name_or_path: str | os.PathLike[str],
        overrides: Mapping[str, Any] | Iterable[str] | None = None,
    ) -> Config:
        """Load a preset by name or a TOML file by path, then apply ``overrides``.

        ``overrides`` is either a list of ``"dotted.path=value"`` strings whose values are TOML
        literals (as on the command line), or a mapping from dotted path to a Python value.
        """
        return cls(name_or_path, overrides)

    def set(self, path: str, value: Any) -> Config:
        """A new Config with a dotted ``path`` (``"ftl.over_provisioning"``) set to ``value``."""
        return Config(self._spec, (*self._overrides, _override(path, value)))

    @property
    def spec(self) -> str:
        """The preset name or file path this configuration was loaded from."""
        return self._spec

    @property
    def overrides(self) -> tuple[str, ...]:
        """The overrides applied on top of the spec, oldest first, as ``path=value`` strings."""
        return self._overrides

    @property
    def name(self) -> str:
        """The configuration's own name (``meta.name``), else its preset name or file stem."""
        meta = self.to_dict().get("meta")
        declared = meta.get("name") if isinstance(meta, dict) else None
        if isinstance(declared, str) and declared:
            return declared
        spec = Path(self._spec)
        return spec.stem if spec.suffix == ".toml" else self._spec

    def to_json(self) -> str:
        """The canonical JSON the core resolved (what ``run`` hands back to the core)."""
        return self._json

    def to_dict(self) -> dict[str, Any]:
        return json.loads(self._json)

    def to_toml(self) -> str:
        return _core.config_toml(self._json)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and other._json == self._json

    def __hash__(self) -> int:
        return hash(self._json)

    def __repr__(self) -> str:
        extra = f", overrides={list(self._overrides)!r}" if self._overrides else ""
        return f"Config({self._spec!r}{extra})"


# --------------------------------------------------------------------------------------------
# Job


def _json_default(value: Any) -> Any:
    """Let numpy scalars (a common source of job values) pass through json.dumps."""
    if isinstance(value, _numpy_types("generic")):
        return value.item()
    raise TypeError(f"cannot put a {type(value).__name__} into a job: {value!r}")


def _bound_text(n: int) -> str:
    """2^k - 1 for the top of a k-bit range, else the number."""
    return f"2^{(n + 1).bit_length() - 1} - 1" if n > 255 and (n + 1) & n == 0 else str(n)


def check_int(
    name: str,
    value: Any,
    lo: int = 0,
    hi: int = 2**64 - 1,
    *,
    error: type[Exception] | None = None,
) -> int:
    """``value`` as an int when it is an integer from ``lo`` to ``hi`` (a Python int, a numpy
    integer, anything with ``__index__``), else ``error`` (JobError by default) naming the
    argument, the value and the range. The core's own conversion would raise a bare
    OverflowError ("int too big to convert") or a TypeError without the argument's name, and a
    bool would pass as 0 or 1."""
    try:
        number = (
            None if isinstance(value, (bool, *_numpy_types("bool_"))) else operator.index(value)
        )
    except TypeError:
        number = None
    if number is None or not lo <= number <= hi:
        got = repr(value) if number is not None else f"{value!r} ({type(value).__name__})"
        raise (error or _core.JobError)(
            f"{name}: got {got}, expected an integer from {lo} to {_bound_text(hi)}"
        )
    return number


def check_seed(seed: Any) -> int:
    """A seed the core can take (0 to 2^64 - 1), or a ValueError naming it: Python's own error
    for an int too big for the core is a bare "int too big to convert"."""
    return check_int("seed", seed, 0, MAX_SEED, error=ValueError)


def _check_numbers(what: str, fields: Mapping[str, Any]) -> None:
    """JSON has no NaN or infinity, and the core's JSON reader takes an integer beyond 64 bits
    for a float: name the field here rather than let the core report a position in text, or a
    float, the user never wrote."""
    floats = (float, *_numpy_types("floating"))
    for key, value in fields.items():
        if isinstance(value, floats) and not math.isfinite(value):
            raise field_error(_core.JobError, what, key, value, "a finite number")
        if isinstance(value, int) and not -(2**63) <= value < 2**64:
            raise field_error(_core.JobError, what, key, value, "an integer below 2^64")


def field_error(
    cls: type[_core.SsdlabError], origin: str, field: str, value: Any, expected: str
) -> _core.SsdlabError:
    """An error of class ``cls`` as the core makes one (``{origin}, field `{field}`: got
    {value}, expected {expected}``), its parts set as the core sets them: a caller reads
    ``error.field``, whichever side raised it."""
    error = cls(f"{origin}, field `{field}`: got {value}, expected {expected}")
    error.origin, error.field, error.value, error.expected = origin, field, str(value), expected
    return error


def _field_mapping(fields: Any, expected: str) -> dict[str, Any]:
    """``fields`` as a dict of field names, or a TypeError naming what it got (``dict(None)``
    says only "'NoneType' object is not iterable")."""
    if not isinstance(fields, Mapping):
        raise TypeError(
            f"fields: got {fields!r} ({type(fields).__name__}), expected a mapping of {expected}"
        )
    for key in fields:
        if not isinstance(key, str):
            raise TypeError(f"fields: got the key {key!r}, expected field names (strings)")
    return dict(fields)


class Job:
    """A synthetic workload, with fio's field names (``rw``, ``bs``, ``iodepth``, ...).

    Construction validates through the core, so a bad field fails here, not in the middle of a run.
    """

    __slots__ = ("_json",)

    def __init__(self, **fields: Any) -> None:
        _check_numbers("job", fields)
        self._json: str = _core.check_job(json.dumps(fields, default=_json_default))

    @classmethod
    def from_dict(cls, fields: Mapping[str, Any]) -> Job:
        return cls(
            **_field_mapping(fields, "job fields (e.g. {'rw': 'randread', 'io_count': 1000})")
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Job:
        """Read and validate a job TOML file."""
        job = cls.__new__(cls)
        job._json = _core.load_job(os.fspath(path))
        return job

    def replace(self, **fields: Any) -> Job:
        """A new Job with ``fields`` replacing those of this one."""
        return Job.from_dict({**self.to_dict(), **fields})

    def to_json(self) -> str:
        return self._json

    def to_dict(self) -> dict[str, Any]:
        return json.loads(self._json)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Job) and other._json == self._json

    def __hash__(self) -> int:
        return hash(self._json)

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items() if v is not None)
        return f"Job({fields})"


# --------------------------------------------------------------------------------------------
# Trace


def _trace_source(source: str | os.PathLike[str]) -> str:
    """A file path is made absolute; ``model:NAME,...`` stays as it is.

    Symbolic links are not followed: ``/dev/stdin`` and ``/dev/fd/N`` (bash's ``<(...)``) lead
    to ``pipe:[...]`` names that cannot be opened, so the path is kept as given.
    """
    text = os.fspath(source)
    if text.startswith("model:"):
        return text
    return os.path.abspath(text)


def _devices(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (str, int, *_numpy_types("integer"))):
        return [str(value)]
    return [str(item) for item in value]


class Trace:
    """A trace replay: a trace file (or ``model:NAME[,key=value...]``) and how to play it.

    Options keep the names of the core's trace job: ``format``, ``mode`` (``timed`` or
    ``afap``), ``time_scale``, ``iodepth``, ``queues``, ``devices``, ``layout`` (``auto``,
    ``overlay``, ``side-by-side``), ``fit`` (``wrap``, ``scale``, ``none``), ``start``, ``stop``,
    ``repeat``, ``io_count``, ``runtime``, ``ramp``, ``skip_bad_lines``, ``blkparse_event``
    (``D`` or ``Q``), ``lba_bytes`` (nvme traces: the namespace's logical block size, 512 by
    default), ``ignore_placement`` (send the writes without their directives), ``end_flush``
    (one Flush once the last request has completed, as fio's ``end_fsync``) and ``name``.
    Construction validates through the core.
    """

    __slots__ = ("_json",)

    def __init__(self, trace: str | os.PathLike[str], **options: Any) -> None:
        fields = {key: value for key, value in options.items() if value is not None}
        if "devices" in fields:
            fields["devices"] = _devices(fields["devices"])
        fields["trace"] = _trace_source(trace)
        _check_numbers("trace job", fields)
        self._json: str = _core.check_trace_job(json.dumps(fields, default=_json_default))

    @classmethod
    def from_dict(cls, fields: Mapping[str, Any]) -> Trace:
        rest = _field_mapping(fields, "trace job fields (e.g. {'trace': 'x.csv'})")
        if "trace" not in rest:
            raise TypeError("fields: no `trace` key, expected the trace file (or model:NAME)")
        return cls(rest.pop("trace"), **rest)

    def replace(self, **options: Any) -> Trace:
        """A new Trace with ``options`` replacing those of this one."""
        return Trace.from_dict({**self.to_dict(), **options})

    @property
    def source(self) -> str:
        return str(self.to_dict()["trace"])

    def to_json(self) -> str:
        return self._json

    def to_dict(self) -> dict[str, Any]:
        return json.loads(self._json)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Trace) and other._json == self._json

    def __hash__(self) -> int:
        return hash(self._json)

    def __repr__(self) -> str:
        data = self.to_dict()
        source = data.pop("trace")
        fields = "".join(f", {k}={v!r}" for k, v in data.items() if v not in (None, [], False))
        return f"Trace({source!r}{fields})"


def trace_stats(
    source: str | os.PathLike[str],
    format: str | None = None,
    *,
    skip_bad_lines: bool = False,
    blkparse_event: str = "D",
    devices: Any = None,
    ird_block: int = 1 << 20,
    seed: int = 1,
    progress: ProgressCallback | None = None,
    sample_points: int = 0,
    lba_bytes: int | None = None,
) -> dict[str, Any]:
    """Statistics of a trace file (or of ``model:NAME``): the dict ``ssdlab trace stats --json``
    writes (schema ``ssdlab.trace_stats/1``). With ``sample_points`` it also holds ``sample``:
    between that many and twice as many requests spread evenly over the trace (one in
    ``every``), each with its time from the first request, byte offset and op, for an
    address-over-time picture."""
    text = _core.trace_stats(
        _trace_source(source),
        format,
        bool(skip_bad_lines),
        blkparse_event,
        _devices(devices),
        check_int("ird_block", ird_block, 1, error=_core.TraceError),
        check_seed(seed),
        _progress_callback(progress),
        check_int("sample_points", sample_points, 0, 1 << 24, error=_core.TraceError),
        None if lba_bytes is None else check_int("lba_bytes", lba_bytes, 1, error=_core.TraceError),
    )
    return json.loads(text)


def trace_formats() -> list[dict[str, Any]]:
    """The formats ssdlab reads: name, aliases, line layout, description."""
    return list(_core.trace_formats())


def trace_models() -> list[dict[str, Any]]:
    """The shipped workload models, each with its parameters (``params``) and their sources."""
    models = []
    for item in _core.trace_models():
        entry = dict(item)
        entry["params"] = json.loads(entry.pop("params_json"))
        models.append(entry)
    return models


def generate_trace(
    model: str,
    path: str | os.PathLike[str],
    format: str = "disksim",
    seed: int = 1,
) -> dict[str, int]:
    """Write a workload model's requests (``NAME[,key=value...]``) to a trace file in ``format``
    (gzip-compressed when the path ends in ``.gz``)."""
    written, dropped = _core.write_model_trace(model, os.fspath(path), format, check_seed(seed))
    return {"written": written, "dropped": dropped}


# --------------------------------------------------------------------------------------------
# Result


# The periodic statistics' columns that are not counts.
_FLOAT_SAMPLES = (
    "time_s",
    "write_amplification",
    "channel_utilisation_mean",
    "die_utilisation_mean",
    "die_utilisation_max",
    "fdp_handle_write_amplification",
)


class Result:
    """The outcome of one run: the core's JSON (schema ``ssdlab.result/1``) and, if recorded,
    the per-request records."""

    __slots__ = ("_json", "_records", "_flow_records")

    def __init__(
        self,
        json_text: str,
        records: bytes | None = None,
        flow_records: Sequence[bytes] | None = None,
    ) -> None:
        self._json = json_text
        self._records = records
        self._flow_records = list(flow_records) if flow_records is not None else None

    @property
    def flows(self) -> list[Result]:
        """A run of several flows (``run(config, [job, job, ...])``): each flow's own result, in
        the order the flows were given. Its ``ops``, ``total`` and ``sim.measured_time_s`` are
        the flow's own requests, from the end of its ramp to its last completion; its ``job``
        is the flow's; ``flow`` says its group, start and end; the device's figures
        (``device``, ``utilisation``, ...) are the whole run's, shared by the flows. Records,
        when the run kept them, are the flow's. Empty for a run of one job."""
        data = self.to_dict()
        flows = data.get("flows") or []
        out = []
        for i, flow in enumerate(flows):
            own = {k: v for k, v in data.items() if k != "flows"}
            own["job"] = data["job"][i]
            own["flow"] = {
                k: flow[k] for k in ("name", "group", "start_s", "end_s", "measured_time_s")
            }
            own["ops"] = flow["ops"]
            own["total"] = flow["total"]
            if "latency_depth" in flow:
                own["latency_depth"] = flow["latency_depth"]
            own["sim"] = {
                **data["sim"],
                "simulated_time_s": flow["end_s"],
                "measured_time_s": flow["measured_time_s"],
            }
            records = self._flow_records[i] if self._flow_records is not None else None
            out.append(Result(json.dumps(own, indent=2), records))
        return out

    @property
    def power_loss(self) -> dict[str, Any] | None:
        """A run cut by ``power_cut_event`` or ``power_cut_at``: the cut, the recovery (its
        simulated time, checkpoint pages read, pages scanned) and what was lost (writes,
        acknowledged writes, the units); None for a run without a cut (docs/power-loss.md)."""
        return self.to_dict().get("power_loss")

    @property
    def fdp(self) -> dict[str, Any] | None:
        """Flexible Data Placement's figures (``device.fdp``, docs/fdp.md) on a drive with
        ``[fdp]``: ``write_amplification`` in total and ``per_handle`` (each ``placement_id``,
        ``host_bytes_written``, ``media_bytes_written``, ``write_amplification``,
        ``ru_fills``); None on a drive without FDP."""
        fdp: dict[str, Any] | None = self.to_dict()["device"].get("fdp")
        return fdp

    def to_json(self) -> str:
        """The JSON exactly as the core wrote it (byte-identical across runs outside ``wall``)."""
        return self._json

    def to_dict(self) -> dict[str, Any]:
        return json.loads(self._json)

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def summary(self, width: int = 100) -> str:
        """The result as a plain-text table, as ``ssdlab run`` prints it."""
        from .cli.table import render_text  # rich is only needed when a table is asked for

        return render_text(self.to_dict(), width=width)

    def samples(self) -> dict[str, np.ndarray]:
        """The periodic statistics (``run(..., stats_interval="1ms")``) as numpy arrays, one
        entry per sample: ``time_s``, ``free_blocks``, ``gc_runs``, ``gc_units_moved``,
        ``write_amplification``, ``requests_in_flight``, ``requests_completed``, the channels'
        and dies' utilisation per interval (``channel_utilisation_mean``,
        ``die_utilisation_mean``, ``die_utilisation_max``); with a cache ``cache_lines_used``,
        ``cache_dirty_lines``; on a zoned drive ``open_zones``, ``active_zones``,
        ``zone_resets``; on an FDP drive ``fdp_handle_write_amplification``, a 2-D array with a
        row per placement handle (docs/jobs.md)."""
        series = self.to_dict().get("samples")
        if series is None:
            raise ValueError("no periodic statistics in this result: run with stats_interval=")
        import numpy as np

        return {
            name: np.asarray(values, dtype=np.float64 if name in _FLOAT_SAMPLES else np.uint64)
            for name, values in series.items()
        }

    def plot_samples(self, path: str | os.PathLike[str]) -> Path:
        """Draw :meth:`samples` against simulated time, a panel per group of columns, to
        ``path`` (PNG or SVG by its suffix); returns the file written."""
        from .experiments.plots import plot_samples, save_figure

        return save_figure(plot_samples(self.samples()), path)

    @property
    def has_requests(self) -> bool:
        return self._records is not None

    @property
    def record_bytes(self) -> bytes | None:
        """The per-request records as the core wrote them, six little-endian u64 a request:
        op, offset, issue time (ps), latency (ps), length (bytes), host queue (a job's
        instance k of the run: queue k); None without
        ``record_requests=True``. :meth:`requests` reads them into columns."""
        return self._records

    def requests(self) -> dict[str, np.ndarray]:
        """Per-request columns, one row per measured request in completion order: ``op`` (its
        code: 0 read, 1 write, 2 trim, 3 flush), ``op_name`` (the same as text),
        ``offset_bytes``, ``size_bytes``, ``issue_us`` and ``latency_us``. Needs
        ``run(..., record_requests=True)``."""
        if self._records is None:
            raise ValueError("no per-request records in this result: run with record_requests=True")
        import numpy as np

        rows = np.frombuffer(self._records, dtype="<u8").reshape(-1, RECORD_FIELDS)
        op = rows[:, 0].astype(np.uint8)
        return {
            "op": op,
            "op_name": np.array(OP_NAMES)[op],
            "offset_bytes": rows[:, 1].astype(np.uint64),
            "size_bytes": rows[:, 4].astype(np.uint64),
            "issue_us": rows[:, 2] / PS_PER_US,
            "latency_us": rows[:, 3] / PS_PER_US,
        }

    def to_polars(self) -> Any:
        """The per-request records as a polars DataFrame: ``op`` a categorical of the op names
        (``pl.Enum``, so every op keeps its place even where absent), ``offset_bytes``,
        ``size_bytes``, ``issue_us``, ``latency_us``. Needs ``record_requests=True``."""
        import polars as pl

        columns = self.requests()
        return pl.DataFrame(
            {
                "op": pl.Series(columns["op_name"], dtype=pl.Enum(list(OP_NAMES))),
                "offset_bytes": columns["offset_bytes"],
                "size_bytes": columns["size_bytes"],
                "issue_us": columns["issue_us"],
                "latency_us": columns["latency_us"],
            }
        )

    def to_pandas(self) -> Any:
        """:meth:`to_polars` as a pandas DataFrame, ``op`` a ``pd.Categorical``. pandas is
        optional (``pip install 'ssdlab[pandas]'``); without it this raises ImportError saying
        so."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError(
                "Result.to_pandas needs pandas: pip install 'ssdlab[pandas]' (or use to_polars)"
            ) from None
        columns = self.requests()
        return pd.DataFrame(
            {
                "op": pd.Categorical(columns["op_name"], categories=list(OP_NAMES)),
                "offset_bytes": columns["offset_bytes"],
                "size_bytes": columns["size_bytes"],
                "issue_us": columns["issue_us"],
                "latency_us": columns["latency_us"],
            }
        )

    def latencies(self, op: str = "read") -> np.ndarray:
        """Latencies in microseconds of every recorded request of one kind, in issue order."""
        if op not in OP_NAMES:
            raise ValueError(f"unknown op {op!r}: expected one of {', '.join(OP_NAMES)}")
        columns = self.requests()
        return columns["latency_us"][columns["op"] == OP_NAMES.index(op)]

    def __repr__(self) -> str:
        data = self.to_dict()
        count = data.get("total", {}).get("count")
        return f"<Result config={data.get('config_name')!r} seed={data.get('seed')} count={count}>"


# The [interface] fields only NVMe's queue-pair path reads (`iface/nvme.rs`, its PCIe link), and
# the sub-tables each other kind reads (`iface/ata.rs`, `ufs.rs`, `emmc.rs`, `dramif.rs`).
NVME_ONLY_INTERFACE_FIELDS = ("max_payload", "tlp_overhead", "arbitration_burst")
INTERFACE_TABLE_KINDS = {
    "interface.ata": ("ide", "sata"),
    "interface.ufs": ("ufs",),
    "interface.emmc": ("emmc",),
    "interface.dram": ("dram",),
}


#: Tables a device without an FTL (``ftl.kind = "none"``: raw, fusion and zoned back ends, whose
#: host manages the media) never reads: garbage collection and wear levelling are the host's.
FTL_ONLY_TABLES = ("ftl.gc", "ftl.wear_leveling")


def without_unused_fields(text: str) -> str:
    """The resolved config TOML ``text`` (``Config.to_toml()``) without what the device never
    reads (``ssdlab config show``, a report's configuration): the tables and fields of other
    interface kinds (a SATA drive shown with PCIe's TLP fields misleads) and, on a device
    without an FTL, the FTL's GC and wear-levelling tables. Every field left out has a default,
    so the text still loads as a device that behaves the same."""
    import tomllib

    parsed = tomllib.loads(text)
    kind = str(parsed.get("interface", {}).get("kind", "nvme"))
    no_ftl = parsed.get("ftl", {}).get("kind") == "none"
    kept: list[str] = []
    section = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("[") and not stripped.startswith("[["):
            section = stripped.strip("[]").strip()
        if kind not in INTERFACE_TABLE_KINDS.get(section, (kind,)):
            continue
        if no_ftl and section.startswith(FTL_ONLY_TABLES):
            continue
        key = stripped.partition("=")[0].strip()
        if section == "interface" and kind != "nvme" and key in NVME_ONLY_INTERFACE_FIELDS:
            continue
        kept.append(line)
    return "\n".join(kept) + "\n"


# --------------------------------------------------------------------------------------------
# Functions


def partial_result(error: BaseException) -> Result | None:
    """What a run stopped by Ctrl-C had measured: the ``Interrupted`` that :func:`run` raised
    carries the result of the requests completed by then (its ``sim.stop_reason``
    "interrupted"); None when it stopped before any (while preconditioning) or for another
    exception."""
    if not isinstance(error, _core.Interrupted) or len(error.args) < 2:
        return None
    partial = error.args[1]
    return Result(partial, None) if isinstance(partial, str) else None


def _progress_callback(progress: ProgressCallback | None) -> ProgressCallback:
    """The callback the core calls, or a TypeError naming ``progress`` when it cannot be
    called (``progress=5`` was accepted and then failed, or was never called, without a word)."""
    if progress is None:
        return _let_interrupts_through
    if not callable(progress):
        raise TypeError(
            f"progress: got {progress!r} ({type(progress).__name__}), expected a callable"
            " progress(done, total) or None"
        )
    return progress


def _let_interrupts_through(done: int, total: int) -> None:
    """A do-nothing progress callback.

    The core releases the GIL while it runs; a Ctrl-C is only turned into KeyboardInterrupt when
    Python code runs, so without any callback a run could not be interrupted.
    """


def _job_of(job: Any) -> Job:
    if isinstance(job, Job):
        return job
    if not isinstance(job, Mapping):
        raise TypeError(
            f"job: got {job!r}, expected a Job or a mapping of job fields"
            " (e.g. {'rw': 'randread', 'io_count': 1000}), or a list of them (flows)"
        )
    return Job.from_dict(job)


def run(
    config: Config | str | os.PathLike[str],
    job: Job | Mapping[str, Any] | Sequence[Job | Mapping[str, Any]] | None = None,
    seed: int = 1,
    record_requests: bool = False,
    progress: ProgressCallback | None = None,
    *,
    trace: Trace | str | os.PathLike[str] | None = None,
    stats_interval: str | None = None,
    power_cut_event: int | None = None,
    power_cut_at: str | None = None,
    state: str | os.PathLike[str] | None = None,
    **trace_options: Any,
) -> Result:
    """Simulate ``job`` on ``config``, or replay ``trace`` on it; the same inputs and seed always
    give the same result.

    ``trace`` is a :class:`Trace`, or a trace file (or ``model:NAME``) with the replay options
    given as keywords (``run(cfg, trace="x.csv", mode="afap", iodepth=16)``).
    ``job`` may be a list of jobs: flows, those of a ``group`` running together on the device,
    the groups one after another (docs/jobs.md, "Flows"); :attr:`Result.flows` has each one's
    figures.
    ``stats_interval`` (``"1ms"``) samples the device's state at that interval of simulated
    time (free blocks, GC, write amplification, requests in flight): the result's ``samples``,
    :meth:`Result.samples` as numpy arrays.
    ``power_cut_event`` (N) or ``power_cut_at`` (``"2ms"``) cuts the power of a page-mapped drive
    after its Nth device event or at that simulated time: the run ends there and the result's
    ``power_loss`` (:attr:`Result.power_loss`) says what recovery found and what was lost
    (docs/power-loss.md).
    ``state`` (a file :func:`precondition` saved) starts the drive from that state instead of
    preconditioning it: the config's ``precondition.state`` (docs/state.md).
    ``progress(done, total)`` is called about ten times a second of wall time. A KeyboardInterrupt
    stops the run and raises ``Interrupted``.
    """
    if not isinstance(config, Config):
        config = Config.load(config)
    if state is not None:
        config = config.set("precondition.state", os.fspath(state))
    seed = check_seed(seed)
    if power_cut_event is not None:
        power_cut_event = check_int("power_cut_event", power_cut_event, 1)
    cut = (power_cut_event, power_cut_at)
    callback = _progress_callback(progress)
    if trace is not None:
        if job is not None:
            raise ValueError("give either a job or a trace, not both")
        if isinstance(trace, Trace):
            replay = trace.replace(**trace_options) if trace_options else trace
        else:
            replay = Trace(trace, **trace_options)
        json_text, records = _core.run_trace(
            config.to_json(),
            replay.to_json(),
            int(seed),
            bool(record_requests),
            callback,
            stats_interval,
            *cut,
        )
        return Result(json_text, bytes(records) if records is not None else None)
    if trace_options:
        names = ", ".join(sorted(trace_options))
        raise TypeError(f"replay options ({names}) need a trace=")
    if job is None:
        raise ValueError("run needs a job or a trace")
    if isinstance(job, Sequence) and not isinstance(job, (str, bytes)):
        if not job:
            raise ValueError("run: got an empty list of jobs, expected at least one")
        jobs = [_job_of(j) for j in job]
        flows_json = "[" + ",".join(j.to_json() for j in jobs) + "]"
        json_text, records, flow_records = _core.run_flows(
            config.to_json(),
            flows_json,
            int(seed),
            bool(record_requests),
            callback,
            stats_interval,
            *cut,
        )
        return Result(
            json_text,
            bytes(records) if records is not None else None,
            [bytes(r) for r in flow_records] if flow_records is not None else None,
        )
    job = _job_of(job)
    json_text, records = _core.run(
        config.to_json(),
        job.to_json(),
        int(seed),
        bool(record_requests),
        callback,
        stats_interval,
        *cut,
    )
    return Result(json_text, bytes(records) if records is not None else None)


def precondition(
    config: Config | str | os.PathLike[str],
    save: str | os.PathLike[str],
    seed: int = 1,
    progress: ProgressCallback | None = None,
) -> dict[str, Any]:
    """Precondition ``config``'s drive as its ``[precondition]`` says and save its state to
    ``save`` (written whole, then renamed over it), for :func:`run` ``(state=...)`` and the
    config's ``precondition.state`` to start from (docs/state.md). Returns what it took: the
    file's bytes, the seconds preconditioning and saving took, the steady state reached."""
    if not isinstance(config, Config):
        config = Config.load(config)
    text = _core.precondition_to_state(
        config.to_json(), check_seed(seed), os.fspath(save), _progress_callback(progress)
    )
    return json.loads(text)


def presets() -> list[dict[str, str]]:
    """The shipped presets: ``[{"name", "description", "source"}]``, sorted by name."""
    return list(_core.presets())


def preset_toml(name: str) -> str:
    """The text of a preset's TOML file, to copy and edit."""
    return _core.preset_toml(name)


def config_schema() -> str:
    """The JSON Schema of a config file, from the core's config types (for editors)."""
    return _core.config_schema()


#: The benchmark's default request count. The preconditioned drive's planes have their host
#: write pointers spread round their blocks (docs/ftl.md, Steady state), so GC runs from the
#: first requests at any count (seed 1: 416 GC runs in 100,000 requests, 5,009 in a million);
#: the default stays a million.
BENCH_IO_COUNT = 1_000_000


def bench(io_count: int = BENCH_IO_COUNT, seed: int = 1) -> dict[str, Any]:
    """Run the core's built-in benchmark and return its figures."""
    count = check_int("io_count", io_count, 1, error=ValueError)
    return json.loads(_core.bench(count, check_seed(seed)))
