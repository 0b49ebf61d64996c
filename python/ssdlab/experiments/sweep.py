"""Sweep files: one base configuration and job, a few knobs varied, many runs.

A sweep file (TOML) names a base configuration (a preset or a config file), a base job, the axes to
vary and how many repetitions to make. ``Sweep.load`` reads and checks it; ``Sweep.points`` expands
it into one :class:`Point` per run, each carrying the resolved configuration and job as the core's
canonical JSON, so that a worker (a local process or a Ray task) needs nothing but that text.

The format (every key is described in ``docs/experiments.md``)::

    name = "quick"
    config = "small-tlc"                 # a preset, or a config TOML relative to this file
    seed = 1                             # repetition 0 runs with this seed
    repeat = 2                           # repetitions per point, with derived seeds
    record_requests = false              # keep per-request records (latency CDFs, time series)
    stats_interval = "1ms"               # optional: periodic statistics, drawn in the report

    [set]                                # fixed config overrides
    "ftl.gc.policy" = "greedy"

    [job]                                # the base job, fio's field names (or job_file = "...")
    rw = "randwrite"
    bs = "4KiB"
    io_count = 20000

    [axes]                               # a grid: every combination of these
    "ftl.over_provisioning" = [0.07, 0.125, 0.25]
    "job.iodepth" = { start = 1, stop = 32, factor = 2 }

    [[zip]]                              # axes that vary together: one dimension of the grid
    "job.rw" = ["randread", "randwrite"]
    "precondition.fill" = ["sequential", "none"]

Instead of a job, a sweep may replay a trace: a ``[trace]`` table with the trace file (relative
to the sweep file) or ``model:NAME`` as ``trace``, and the replay options of ``ssdlab run
--trace`` (``format``, ``mode``, ``iodepth``, ``time_scale``, ...).

Or a sweep may page a memory-access workload through a swap device (the OS paging model,
``ssdlab swap``, docs/paging.md): a ``[swap]`` table with ``memory``, ``swap_size``,
``workload`` (a page-reference trace or valgrind lackey output relative to the sweep file, or
``"pc-mix"``) and any paging knob (``era``, ``congestion_wait``, ``pc_mix = { rounds = 8 }``,
...). ``config`` names the device: a preset, a config TOML, or one of seed 003's analytic NAND
parts (``seed003-slc-analytic``, ``seed003-mlc-analytic``).

An axis named ``job.<field>`` (or ``trace.<option>``) varies the workload; for a ``[swap]``
sweep ``swap.<knob>`` (``swap.era``, ``swap.pc_mix.rounds``, ``swap.memory``, ...) varies a
paging knob and ``swap.device`` the device (a preset, a config TOML or an analytic part). Any
other name is a dotted configuration path of the device (``config.`` in front is allowed and
means the same). Every value is checked by the core before anything runs; a mistake is a
:class:`SweepError` naming the file, the field, the value and what was expected.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import numbers
import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import _core
from ..files import read_input_text
from ..values import MAX_SEED, toml_literal

SWEEP_SCHEMA = "ssdlab.sweep/1"
MAX_AXIS_VALUES = 10_000
MAX_POINTS = 100_000
DERIVED_SEED_BITS = 63

TOP_LEVEL_KEYS = (
    "name",
    "description",
    "config",
    "seed",
    "seeds",
    "repeat",
    "record_requests",
    "stats_interval",
    "set",
    "job",
    "job_file",
    "trace",
    "swap",
    "axes",
    "zip",
)
RANGE_KEYS = ("start", "stop", "step", "num", "factor")
CONFIG_SECTIONS_HINT = (
    "a dotted config path such as ftl.over_provisioning, job.<field> or trace.<option>"
)
WORKLOADS = ("job", "trace", "swap")
# What a [swap] table must give: the arguments of ``ssdlab swap`` besides the device.
SWAP_REQUIRED = ("memory", "swap_size", "workload")
SWAP_DEVICE = "device"  # the axis swap.device: the device of ``ssdlab swap``

_PATH = re.compile(r"^[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)*$")


class SweepError(_core.SsdlabError):
    """A sweep file, axis or value that cannot be used (one line, ready after ``error: ``)."""


# --------------------------------------------------------------------------------------------
# Sizes, for ranges such as { start = "4KiB", stop = "1MiB", factor = 2 }


def parse_size(text: str) -> int | None:
    """``"4KiB"`` → 4096, by the core's grammar (the one configs and jobs use); None if the text
    is not a size."""
    try:
        return _core.parse_bytes(text)
    except (ValueError, OverflowError):
        return None


def format_size(count: int) -> str:
    """4096 → ``"4KiB"``: the largest binary unit that divides the count exactly (the core's)."""
    return _core.format_bytes(count)


# --------------------------------------------------------------------------------------------
# Axes


@dataclass(frozen=True)
class Axis:
    """One varied knob: ``kind`` is ``"job"``, ``"trace"`` or ``"config"``, ``key`` the field or
    dotted path, ``column`` its name in the results table (``job.iodepth``,
    ``config.ftl.over_provisioning``)."""

    name: str
    kind: str
    key: str
    values: tuple[Any, ...]

    @property
    def column(self) -> str:
        return f"{self.kind}.{self.key}"


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _tidy_float(value: float) -> float:
    """0.1 + 2 × 0.1 is 0.30000000000000004; round away the noise a step leaves behind."""
    return float(f"{value:.12g}")


def _show(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else repr(value)


def expand_range(spec: Mapping[str, Any], where: str) -> list[Any]:
    """The values of a range table: ``{start, stop, step}`` (stop included when hit),
    ``{start, stop, num}`` (evenly spaced, both ends included) or ``{start, stop, factor}``
    (geometric). Start and stop are numbers, or sizes like ``"4KiB"``."""
    unknown = [key for key in spec if key not in RANGE_KEYS]
    if unknown:
        raise SweepError(
            f"{where}: unknown range key {unknown[0]!r}: expected start, stop and one of"
            " step, num or factor"
        )
    for key in ("start", "stop"):
        if key not in spec:
            raise SweepError(
                f"{where}: range without {key!r}: expected start, stop and one of"
                " step, num or factor"
            )
    modes = [key for key in ("step", "num", "factor") if key in spec]
    if len(modes) != 1:
        raise SweepError(
            f"{where}: range needs exactly one of step, num or factor, got "
            + (", ".join(modes) if modes else "none")
        )
    mode = modes[0]
    start, stop = spec["start"], spec["stop"]

    sized = isinstance(start, str) or isinstance(stop, str)
    if sized:
        values = []
        for key, text in (("start", start), ("stop", stop)):
            count = parse_size(text) if isinstance(text, str) else None
            if count is None:
                raise SweepError(
                    f"{where}: range {key} = {_show(text)}: expected a number or a size such as"
                    ' "4KiB" (units B, KiB, MiB, GiB, TiB), with start and stop of the same kind'
                )
            values.append(count)
        start, stop = values
    for key, value in (("start", start), ("stop", stop)):
        if not _is_number(value) or not math.isfinite(value):
            raise SweepError(f"{where}: range {key} = {_show(value)}: expected a finite number")

    out: list[float | int] = []
    if mode == "step":
        step = spec["step"]
        if sized and isinstance(step, str):
            step = parse_size(step)
        if not _is_number(step) or step == 0 or not math.isfinite(step):
            raise SweepError(
                f"{where}: range step = {_show(spec['step'])}: expected a non-zero number"
            )
        if (stop - start) * step < 0:
            raise SweepError(
                f"{where}: range from {spec['start']} to {spec['stop']} with step {spec['step']}"
                " never reaches stop: expected a step of the sign of stop - start"
            )
        count = math.floor((stop - start) / step + 1e-9) + 1
        if count > MAX_AXIS_VALUES:
            raise SweepError(
                f"{where}: range has {count} values: expected at most {MAX_AXIS_VALUES}"
            )
        integral = all(isinstance(v, int) for v in (start, stop, step))
        for i in range(count):
            value = start + i * step
            out.append(value if integral else _tidy_float(value))
    elif mode == "num":
        num = spec["num"]
        if isinstance(num, bool) or not isinstance(num, int) or num < 1:
            raise SweepError(f"{where}: range num = {_show(num)}: expected a whole number >= 1")
        if num > MAX_AXIS_VALUES:
            raise SweepError(f"{where}: range num = {num}: expected at most {MAX_AXIS_VALUES}")
        if num == 1:
            out.append(start)
        else:
            span = stop - start
            integral = isinstance(start, int) and isinstance(stop, int) and span % (num - 1) == 0
            for i in range(num):
                out.append(
                    start + i * span // (num - 1)
                    if integral
                    else _tidy_float(start + i * span / (num - 1))
                )
    else:
        factor = spec["factor"]
        if not _is_number(factor) or not math.isfinite(factor) or factor <= 1:
            raise SweepError(f"{where}: range factor = {_show(factor)}: expected a number > 1")
        if start <= 0 or stop < start:
            raise SweepError(
                f"{where}: geometric range from {spec['start']} to {spec['stop']}: expected"
                " 0 < start <= stop"
            )
        integral = isinstance(start, int) and isinstance(factor, int)
        value: float | int = start
        while value <= stop * (1 + 1e-12):
            out.append(value if integral else _tidy_float(value))
            if len(out) > MAX_AXIS_VALUES:
                raise SweepError(f"{where}: range has more than {MAX_AXIS_VALUES} values")
            value = value * factor
    if sized:
        for value in out:
            if not isinstance(value, int) and not float(value).is_integer():
                raise SweepError(f"{where}: size range gives {value} bytes: expected whole bytes")
        return [format_size(int(value)) for value in out]
    return out


def _axis_values(raw: Any, where: str) -> tuple[Any, ...]:
    if isinstance(raw, Mapping):
        values = expand_range(raw, where)
    elif isinstance(raw, list):
        values = list(raw)
    else:
        raise SweepError(
            f"{where} = {_show(raw)}: expected a list of values or a range table"
            " { start, stop, step | num | factor }"
        )
    if not values:
        raise SweepError(f"{where}: no values: expected at least one")
    if len(values) > MAX_AXIS_VALUES:
        raise SweepError(f"{where}: {len(values)} values: expected at most {MAX_AXIS_VALUES}")
    for value in values:
        if isinstance(value, float) and not math.isfinite(value):
            raise SweepError(f"{where}: value {value}: expected a finite number")
    return tuple(values)


def _check_distinct(dim: Sequence[Axis], where: str) -> None:
    """A grid axis, or the rows of a zip group, must not repeat: that would be the same run."""
    seen: set[str] = set()
    for position in range(len(dim[0].values)):
        values = [axis.values[position] for axis in dim]
        key = json.dumps(values, sort_keys=True)
        if key in seen:
            shown = ", ".join(
                f"{axis.name} = {_show(v)}" for axis, v in zip(dim, values, strict=True)
            )
            raise SweepError(
                f"{where}: {shown} appears twice: expected distinct values (use"
                " repeat for repetitions)"
            )
        seen.add(key)


def _is_range_table(value: Any) -> bool:
    return isinstance(value, Mapping) and bool(value) and all(k in RANGE_KEYS for k in value)


def _flatten_table(table: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """``{"ftl": {"gc": {"policy": [..]}}}`` and ``{"ftl.gc.policy": [..]}`` name the same axis."""
    out: list[tuple[str, Any]] = []
    for key, value in table.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and not _is_range_table(value):
            out.extend(_flatten_table(value, path))
        else:
            out.append((path, value))
    return out


def _make_axis(name: str, raw: Any, where: str) -> Axis:
    if not _PATH.match(name):
        raise SweepError(f"{where}: axis name {name!r}: expected {CONFIG_SECTIONS_HINT}")
    head = name.split(".", 1)[0]
    if head in WORKLOADS:
        kind, key = head, name[len(head) + 1 :]
        if "." in key and kind != "swap":
            raise SweepError(f"{where}: axis {name!r}: expected {head}.<field> with one field name")
    else:
        kind, key = "config", name[len("config.") :] if name.startswith("config.") else name
    return Axis(name=name, kind=kind, key=key, values=_axis_values(raw, f"{where}.{name}"))


# --------------------------------------------------------------------------------------------
# Seeds


def derive_seed(base: int, repetition: int) -> int:
    """The seed of repetition ``r``: the base seed for r = 0, else a splitmix64 mix of
    (base, r) cut to 63 bits. Every point of one repetition shares its seed, so the points of a
    repetition see the same request stream (common random numbers)."""
    if repetition == 0:
        return base
    mask = (1 << 64) - 1
    z = (base + repetition * 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    z ^= z >> 31
    return z & ((1 << DERIVED_SEED_BITS) - 1)


# --------------------------------------------------------------------------------------------
# Points


@dataclass(frozen=True)
class Point:
    """One run of a sweep: a combination of axis values and a repetition."""

    index: int
    repetition: int
    seed: int
    params: dict[str, Any]  # table column → value, in axis order
    overrides: tuple[str, ...]
    job: dict[str, Any]  # the job, or the trace replay options
    config_json: str
    job_json: str
    record_requests: bool
    id: str = ""
    kind: str = "job"  # "job", "trace" or "swap"
    stats_interval: str | None = None  # periodic statistics (the result's samples)

    def task(self) -> dict[str, Any]:
        """What a worker needs: configuration and job (or trace replay) as text, the seed.
        Nothing large: a trace is named by its path, which workers read themselves."""
        return {
            "id": self.id,
            "kind": self.kind,
            "config_json": self.config_json,
            "job_json": self.job_json,
            "seed": self.seed,
            "record_requests": self.record_requests,
            "stats_interval": self.stats_interval,
        }

    def describe(self) -> str:
        parts = [f"{column}={_show(value)}" for column, value in self.params.items()]
        parts.append(f"seed={self.seed}")
        return ", ".join(parts)


def point_id(
    config_json: str,
    job_json: str,
    seed: int,
    record_requests: bool,
    kind: str = "job",
    stats_interval: str | None = None,
) -> str:
    """A run's identity: the hash of everything that determines its result. Resuming a sweep
    skips a point whose id already has a finished run in the output directory."""
    fields: dict[str, Any] = {
        "config": config_json,
        "job": job_json,
        "seed": seed,
        "requests": record_requests,
    }
    if kind != "job":
        fields["kind"] = kind  # job ids stay what they were before traces existed
    if stats_interval is not None:
        fields["stats_interval"] = stats_interval  # and before samples existed
    blob = json.dumps(fields, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


# --------------------------------------------------------------------------------------------
# The sweep


@dataclass
class Sweep:
    name: str
    config: str  # preset name or absolute path of a config TOML
    job: dict[str, Any]
    dims: list[list[Axis]] = field(default_factory=list)  # each: one grid axis or a zip group
    fixed: tuple[str, ...] = ()  # [set] overrides, as path=TOML-literal
    seeds: tuple[int, ...] = (1,)
    record_requests: bool = False
    stats_interval: str | None = None
    description: str = ""
    source: str = "<dict>"  # the file, for messages
    text: str | None = None  # the file's text, kept in the output for provenance
    kind: str = "job"  # the workload: a job, or a trace replay (then ``job`` holds its options)

    # -- loading ---------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Sweep:
        file = Path(path)
        text = read_input_text(file, "sweep file", SweepError)
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise SweepError(f"{file}: invalid TOML: {error}") from None
        return cls.from_dict(
            data, source=str(file), base_dir=file.resolve().parent, text=text, stem=file.stem
        )

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        source: str = "<dict>",
        base_dir: str | os.PathLike[str] | None = None,
        text: str | None = None,
        stem: str = "sweep",
    ) -> Sweep:
        base = Path(base_dir) if base_dir is not None else Path.cwd()
        for key in data:
            if key not in TOP_LEVEL_KEYS:
                raise SweepError(
                    f"{source}: unknown key {key!r}: expected one of " + ", ".join(TOP_LEVEL_KEYS)
                )

        def text_field(key: str, default: str) -> str:
            value = data.get(key, default)
            if not isinstance(value, str):
                raise SweepError(f"{source}: {key} = {_show(value)}: expected a string")
            return value

        name = text_field("name", stem)
        description = text_field("description", "")

        if "config" not in data:
            raise SweepError(
                f'{source}: no config: expected config = "<preset>" or a config TOML file'
            )
        kind, job = _base_workload(data, base, source)
        config = _config_spec(data["config"], base, source, kind)

        seeds = _seeds(data, source)
        record = data.get("record_requests", False)
        if not isinstance(record, bool):
            raise SweepError(f"{source}: record_requests = {_show(record)}: expected true or false")
        stats_interval = _stats_interval(data.get("stats_interval"), source)

        fixed_raw = data.get("set", {})
        if not isinstance(fixed_raw, Mapping):
            raise SweepError(f"{source}: set: expected a table of config path = value")
        fixed = []
        for path, value in _flatten_table(fixed_raw):
            if not _PATH.match(path):
                raise SweepError(f"{source}: set.{path}: expected a dotted config path")
            if path.startswith("job."):
                raise SweepError(
                    f"{source}: set.{path}: [set] holds config paths: put job fields in [job]"
                )
            key = path[len("config.") :] if path.startswith("config.") else path
            fixed.append(f"{key}={toml_literal(value)}")

        dims: list[list[Axis]] = []
        axes_raw = data.get("axes", {})
        if not isinstance(axes_raw, Mapping):
            raise SweepError(f"{source}: axes: expected a table of axis = [values]")
        for axis_name, raw in _flatten_table(axes_raw):
            dims.append([_make_axis(axis_name, raw, f"{source}: axes")])
            _check_distinct(dims[-1], f"{source}: axes")
        zips = data.get("zip", [])
        if isinstance(zips, Mapping):
            zips = [zips]
        if not isinstance(zips, list):
            raise SweepError(f"{source}: zip: expected [[zip]] tables of axis = [values]")
        for number, group_raw in enumerate(zips, start=1):
            where = f"{source}: zip #{number}"
            if not isinstance(group_raw, Mapping) or not group_raw:
                raise SweepError(f"{where}: expected a table of axis = [values]")
            group = [_make_axis(n, raw, where) for n, raw in _flatten_table(group_raw)]
            lengths = {axis.name: len(axis.values) for axis in group}
            if len(set(lengths.values())) > 1:
                shown = ", ".join(f"{n} has {count}" for n, count in lengths.items())
                raise SweepError(f"{where}: zipped axes need the same number of values: {shown}")
            _check_distinct(group, where)
            dims.append(group)

        columns = [axis.column for dim in dims for axis in dim]
        duplicate = next((c for c in columns if columns.count(c) > 1), None)
        if duplicate is not None:
            raise SweepError(f"{source}: axis {duplicate} is given twice: expected each axis once")
        fixed_keys = {item.split("=", 1)[0] for item in fixed}
        clash = next(
            (a for d in dims for a in d if a.kind == "config" and a.key in fixed_keys), None
        )
        if clash is not None:
            raise SweepError(f"{source}: {clash.key} is both in [set] and an axis: expected one")
        for dim in dims:
            for axis in dim:
                if axis.kind in WORKLOADS and axis.key == "seed":
                    raise SweepError(
                        f"{source}: axis {axis.name}: seeds are not a workload field: use"
                        " seed, seeds or repeat"
                    )
                if axis.kind in WORKLOADS and axis.kind != kind:
                    raise SweepError(
                        f"{source}: axis {axis.name}: this sweep runs a {kind}: expected"
                        f" {kind}.<field> or a config path"
                    )
        # An axis over trace files: each one relative to the sweep file, like [trace]'s own.
        dims = [
            [
                Axis(
                    a.name,
                    a.kind,
                    a.key,
                    tuple(_trace_path(v, base, f"{source}: axis {a.name}") for v in a.values),
                )
                if a.kind == "trace" and a.key == "trace"
                else Axis(
                    a.name,
                    a.kind,
                    a.key,
                    tuple(_swap_workload(v, base, f"{source}: axis {a.name}") for v in a.values),
                )
                if a.kind == "swap" and a.key == "workload"
                else Axis(
                    a.name,
                    a.kind,
                    a.key,
                    tuple(_swap_device(v, base, f"{source}: axis {a.name}") for v in a.values),
                )
                if a.kind == "swap" and a.key == SWAP_DEVICE
                else a
                for a in dim
            ]
            for dim in dims
        ]

        sweep = cls(
            name=name,
            config=config,
            job=job,
            dims=dims,
            fixed=tuple(fixed),
            seeds=seeds,
            record_requests=record,
            stats_interval=stats_interval,
            description=description,
            source=source,
            text=text,
            kind=kind,
        )
        total = sweep.point_count
        if total > MAX_POINTS:
            raise SweepError(f"{source}: {total} runs: expected at most {MAX_POINTS}")
        if kind == "swap":
            given = set(job) | {a.key for d in dims for a in d if a.kind == "swap"}
            missing = [key for key in SWAP_REQUIRED if key not in given]
            if missing:
                raise SweepError(
                    f"{source}: [swap] without {missing[0]}: expected memory, swap_size and"
                    ' workload (a trace file or "pc-mix"), in [swap] or as swap.<key> axes'
                )
        if kind == "swap" and stats_interval is not None:
            raise SweepError(
                f"{source}: stats_interval = {_show(stats_interval)}: a [swap] sweep has no"
                " periodic statistics (they sample a job's or a trace's run): leave it out"
            )
        if kind == "swap" and record:
            raise SweepError(
                f"{source}: record_requests = true: a [swap] sweep keeps no per-request records"
                " (ssdlab swap --swap-trace writes the swap trace): expected false"
            )
        return sweep

    # -- shape -----------------------------------------------------------------------------

    @property
    def axes(self) -> list[Axis]:
        return [axis for dim in self.dims for axis in dim]

    @property
    def point_count(self) -> int:
        return math.prod(len(dim[0].values) for dim in self.dims) * len(self.seeds)

    # -- expansion -------------------------------------------------------------------------

    def base_config_json(self) -> str | None:
        """The base device configuration as the core's JSON; None for a [swap] sweep on one
        of seed 003's analytic NAND parts (a cost model, not a device configuration)."""
        if self.kind == "swap":
            job = {**self._first_job(), SWAP_DEVICE: self.config}
            try:
                canonical, _ = self._swap_args(job, list(self.fixed))
            except _core.SsdlabError as error:
                raise SweepError(f"{self.source}: config/[set]/[swap]: {error}") from None
            device = json.loads(canonical)["device"]
            return json.dumps(device) if isinstance(device, Mapping) else None
        try:
            return _core.resolve_config(self.config, list(self.fixed))
        except _core.ConfigError as error:
            raise SweepError(f"{self.source}: config/[set]: {error}") from None

    def _swap_args(
        self, fields: Mapping[str, Any], overrides: Sequence[str]
    ) -> tuple[str, dict[str, Any]]:
        """One paging run: (the core's canonical JSON of it, the arguments of ``_core.swap``).
        ``fields`` is the [swap] table with the axes applied (knobs by dotted path), its
        ``device`` the device spec (default: the sweep's config). Raises the core's error."""
        missing = [key for key in SWAP_REQUIRED if key not in fields]
        if missing:
            raise SweepError(
                f"{self.source}: [swap] without {missing[0]}: expected memory, swap_size and"
                ' workload (a trace file or "pc-mix"), given in [swap] or as swap.<key> axes'
            )
        knobs = [
            f"swap.{key}={toml_literal(value)}"
            for key, value in fields.items()
            if key not in (*SWAP_REQUIRED, SWAP_DEVICE)
        ]
        args: dict[str, Any] = {
            "device": str(fields.get(SWAP_DEVICE, self.config)),
            "memory": str(fields["memory"]),
            "swap_size": str(fields["swap_size"]),
            "workload": str(fields["workload"]),
            "overrides": [*overrides, *knobs],
        }
        canonical = _core.check_swap(
            args["device"], args["memory"], args["swap_size"], args["workload"], args["overrides"]
        )
        return canonical, args

    def _first_job(self) -> dict[str, Any]:
        """The base workload with every workload axis at its first value."""
        job = dict(self.job)
        for axis in self.axes:
            if axis.kind == self.kind:
                job[axis.key] = axis.values[0]
        return job

    def _check_workload(self, fields: Mapping[str, Any], overrides: Sequence[str] = ()) -> str:
        """The core's canonical JSON of a job, trace replay or paging run (with the device
        overrides); raises the core's error."""
        if self.kind == "swap":
            return self._swap_args(fields, [*self.fixed, *overrides])[0]
        if self.kind == "trace":
            return _trace_checker()(json.dumps(fields))
        return _core.check_job(json.dumps(fields))

    def _check_axes(self) -> None:
        """Each axis value alone on the base: an error here names the axis and the value."""
        first = self._first_job()
        try:
            self._check_workload(first)
        except _core.SsdlabError as error:
            named = error.field  # the core's (or the API's) field, as data
            culprit = next((a for a in self.axes if a.kind == self.kind and a.key == named), None)
            if culprit is not None:
                where = f"axis {culprit.name} = {_show(culprit.values[0])}"
            else:
                where = f"[{self.kind}]" + (
                    "" if first == self.job else f" with the first value of each {self.kind} axis"
                )
            raise SweepError(f"{self.source}: {where}: {error}") from None
        for axis in self.axes:
            for value in axis.values:
                where = f"{self.source}: axis {axis.name} = {_show(value)}"
                if axis.kind == "config" and self.kind == "swap":
                    # The device's knobs, checked with the device (an analytic part has none).
                    try:
                        self._check_workload(first, [f"{axis.key}={toml_literal(value)}"])
                    except _core.SsdlabError as error:
                        raise SweepError(f"{where}: {error}") from None
                elif axis.kind == "config":
                    try:
                        _core.resolve_config(
                            self.config, [*self.fixed, f"{axis.key}={toml_literal(value)}"]
                        )
                    except _core.ConfigError as error:
                        raise SweepError(f"{where}: {error}") from None
                else:
                    try:
                        self._check_workload({**first, axis.key: value})
                    except _core.SsdlabError as error:
                        raise SweepError(f"{where}: {error}") from None

    def points(self) -> list[Point]:
        """Every run, in a stable order: the grid's first axis outermost, repetitions innermost.
        Raises SweepError for any value the core refuses."""
        self.base_config_json()
        self._check_axes()
        combos = itertools.product(*(range(len(dim[0].values)) for dim in self.dims))
        points: list[Point] = []
        seen: dict[str, int] = {}
        index = 0
        for combo in combos:
            params: dict[str, Any] = {}
            overrides = list(self.fixed)
            job = dict(self.job)
            for dim, position in zip(self.dims, combo, strict=True):
                for axis in dim:
                    value = axis.values[position]
                    params[axis.column] = value
                    if axis.kind == "config":
                        overrides.append(f"{axis.key}={toml_literal(value)}")
                    else:
                        job[axis.key] = value
            where = f"{self.source}: point " + (
                ", ".join(f"{c}={_show(v)}" for c, v in params.items()) or "(base)"
            )
            if self.kind == "swap":
                # The device and the paging model checked together; the point is identified
                # by the core's canonical JSON of both, and runs from _core.swap's arguments.
                job.setdefault(SWAP_DEVICE, self.config)
                try:
                    config_json, args = self._swap_args(job, overrides)
                except _core.SsdlabError as error:
                    raise SweepError(f"{where}: {error}") from None
                job_json = json.dumps(args, sort_keys=True)
            else:
                try:
                    config_json = _core.resolve_config(self.config, overrides)
                except _core.ConfigError as error:
                    raise SweepError(f"{where}: {error}") from None
                try:
                    job_json = self._check_workload(job)
                except _core.SsdlabError as error:
                    raise SweepError(f"{where}: {error}") from None
            for repetition, seed in enumerate(self.seeds):
                identity = "" if self.kind == "swap" else job_json
                pid = point_id(
                    config_json,
                    identity,
                    seed,
                    self.record_requests,
                    self.kind,
                    self.stats_interval,
                )
                if pid in seen:
                    raise SweepError(
                        f"{where}: the same run as point {seen[pid]}: expected distinct points"
                    )
                seen[pid] = index
                points.append(
                    Point(
                        index=index,
                        repetition=repetition,
                        seed=seed,
                        params=params,
                        overrides=tuple(overrides),
                        job=dict(job) if self.kind == "swap" else json.loads(job_json),
                        config_json=config_json,
                        job_json=job_json,
                        record_requests=self.record_requests,
                        id=pid,
                        kind=self.kind,
                        stats_interval=self.stats_interval,
                    )
                )
                index += 1
        return points

    def describe(self) -> dict[str, Any]:
        """The sweep as data, for the manifest and the report."""
        return {
            "name": self.name,
            "description": self.description,
            "source": self.source,
            "config": self.config,
            "set": list(self.fixed),
            "kind": self.kind,
            "job": self.job,
            "axes": [
                {"name": axis.name, "column": axis.column, "values": list(axis.values)}
                for axis in self.axes
            ],
            "dims": [[axis.column for axis in dim] for dim in self.dims],
            "seeds": list(self.seeds),
            "record_requests": self.record_requests,
            "stats_interval": self.stats_interval,
        }


def _stats_interval(raw: Any, source: str) -> str | None:
    """``stats_interval``: a positive duration such as "1ms", or absent."""
    if raw is None:
        return None
    expected = 'expected a positive duration such as "1ms"'
    if not isinstance(raw, str):
        raise SweepError(f"{source}: stats_interval = {_show(raw)}: {expected}")
    try:
        seconds = float(_core.parse_duration_s(raw))
    except ValueError as error:
        raise SweepError(f"{source}: stats_interval = {_show(raw)}: {error}") from None
    if seconds <= 0:
        raise SweepError(f"{source}: stats_interval = {_show(raw)}: {expected}")
    return raw


def _config_spec(raw: Any, base: Path, source: str, kind: str = "job") -> str:
    if not isinstance(raw, str) or not raw:
        raise SweepError(
            f"{source}: config = {_show(raw)}: expected a preset name or a config TOML file"
        )
    looks_like_path = "/" in raw or os.sep in raw or raw.endswith(".toml")
    if not looks_like_path and kind == "swap":
        # A preset or an analytic NAND part of seed 003: the core checks the name with the
        # rest of the paging run (Sweep.points), and its message lists both.
        return raw
    if not looks_like_path:
        names = [p["name"] for p in _core.presets()]
        if raw not in names:
            raise SweepError(
                f"{source}: config = {_show(raw)}: no such preset: expected one of "
                + ", ".join(names)
                + " or a config TOML file"
            )
        return raw
    path = (base / raw).resolve()
    if not path.is_file():
        raise SweepError(f"{source}: config = {_show(raw)}: no such file {path}")
    return str(path)


def _trace_checker() -> Any:
    check = getattr(_core, "check_trace_job", None)
    if check is None:
        raise SweepError("this build of ssdlab has no trace replay: expected a [job] table")
    return check


# A trace named ``@traces/FILE`` is one of the shared trace samples (the ``shared/traces``
# directory beside a checkout), found by ``traces_dir``.
TRACES_PREFIX = "@traces/"
TRACES_ENV = "SSDLAB_TRACES"

# Set by ``--traces DIR`` (``ssdlab sweep`` and ``ssdlab reproduce``); before the environment.
_traces_option: Path | None = None


def set_traces_dir(path: str | os.PathLike[str] | None) -> None:
    """Where ``@traces/`` points for the sweeps loaded after this call (``--traces DIR``)."""
    global _traces_option
    _traces_option = Path(path) if path is not None else None


def traces_dir(base: Path) -> tuple[Path | None, list[str]]:
    """The directory of the shared trace samples, and where it was looked for: ``--traces DIR``,
    then ``$SSDLAB_TRACES``, then a ``shared/traces`` beside any directory above ``base`` (a
    checkout: the package's sweep files sit in it)."""
    looked: list[str] = []
    if _traces_option is not None:
        looked.append(f"--traces {_traces_option}")
        return (_traces_option if _traces_option.is_dir() else None), looked
    env = os.environ.get(TRACES_ENV)
    if env:
        looked.append(f"{TRACES_ENV}={env}")
        return (Path(env) if Path(env).is_dir() else None), looked
    for parent in [base, *base.parents]:
        candidate = parent / "shared" / "traces"
        if candidate.is_dir():
            return candidate, looked
    looked.append(f"shared/traces above {base}")
    return None, looked


def _trace_path(raw: Any, base: Path, where: str) -> str:
    """A trace file relative to the sweep file, made absolute; ``model:NAME`` stays;
    ``@traces/FILE`` is a shared trace sample (``traces_dir``)."""
    if not isinstance(raw, str) or not raw:
        raise SweepError(f"{where}: trace = {_show(raw)}: expected a trace file or model:NAME")
    if raw.startswith("model:"):
        return raw
    if raw.startswith(TRACES_PREFIX):
        name = raw[len(TRACES_PREFIX) :]
        found, looked = traces_dir(base)
        hint = (
            f"point at the directory of the shared trace samples with --traces DIR or"
            f" {TRACES_ENV}=DIR"
        )
        if found is None:
            raise SweepError(
                f"{where}: trace = {_show(raw)}: needs the shared trace samples, not found"
                f" (looked at {'; '.join(looked)}): {hint}"
            )
        sample = (found / name).resolve()
        if not sample.is_file():
            raise SweepError(f"{where}: trace = {_show(raw)}: {name} is not in {found}: {hint}")
        return str(sample)
    path = (base / raw).resolve()
    if not path.is_file():
        raise SweepError(f"{where}: trace = {_show(raw)}: no such file {path}")
    return str(path)


def _swap_device(raw: Any, base: Path, where: str) -> str:
    """A device of ``swap.device``: a config TOML relative to the sweep file, made absolute; a
    preset or analytic part name stays (the core checks it)."""
    if not isinstance(raw, str) or not raw:
        raise SweepError(
            f"{where}: device = {_show(raw)}: expected a preset, a config TOML file or an"
            " analytic NAND part (seed003-slc-analytic, seed003-mlc-analytic)"
        )
    if "/" in raw or os.sep in raw or raw.endswith(".toml"):
        path = (base / raw).resolve()
        if not path.is_file():
            raise SweepError(f"{where}: device = {_show(raw)}: no such file {path}")
        return str(path)
    return raw


def _swap_workload(raw: Any, base: Path, where: str) -> str:
    """A paging workload relative to the sweep file, made absolute; ``pc-mix`` stays."""
    if not isinstance(raw, str) or not raw:
        raise SweepError(f'{where}: workload = {_show(raw)}: expected a trace file or "pc-mix"')
    if raw == "pc-mix":
        return raw
    path = (base / raw).resolve()
    if not path.is_file():
        raise SweepError(f"{where}: workload = {_show(raw)}: no such file {path}")
    return str(path)


def _base_swap(raw: Any, base: Path, source: str) -> dict[str, Any]:
    """The [swap] table with its knobs by dotted path (``pc_mix.rounds``) and an absolute
    workload path. Values are checked by the core with the device (Sweep.points)."""
    if not isinstance(raw, Mapping):
        raise SweepError(
            f"{source}: swap = {_show(raw)}: expected a [swap] table with memory, swap_size,"
            " workload and paging knobs"
        )
    fields: dict[str, Any] = {}
    for path, value in _flatten_table(raw):
        if not _PATH.match(path):
            raise SweepError(f"{source}: [swap] key {path!r}: expected a paging knob name")
        if path == SWAP_DEVICE:
            raise SweepError(
                f"{source}: [swap] device: the device is the sweep's config (or a swap.device"
                ' axis): expected config = "<preset, config TOML or analytic part>"'
            )
        fields[path] = value
    if "workload" in fields:
        fields["workload"] = _swap_workload(fields["workload"], base, f"{source}: [swap]")
    return fields


def _base_workload(data: Mapping[str, Any], base: Path, source: str) -> tuple[str, dict]:
    """("job", job fields), ("trace", replay options with an absolute trace path) or
    ("swap", the paging run's fields)."""
    given = [key for key in ("job", "job_file", "trace", "swap") if key in data]
    if len(given) != 1:
        raise SweepError(
            f"{source}: expected exactly one of a [job] table, job_file or a [trace] table"
            " (or a [swap] table for the paging model)"
            + (f", got {', '.join(given)}" if given else "")
        )
    if given[0] == "swap":
        return "swap", _base_swap(data["swap"], base, source)
    if given[0] != "trace":
        return "job", _base_job(data, base, source)
    raw = data["trace"]
    fields = {"trace": raw} if isinstance(raw, str) else raw
    if not isinstance(fields, Mapping) or "trace" not in fields:
        raise SweepError(
            f'{source}: trace: expected a [trace] table with trace = "FILE" (or "model:NAME")'
            " and replay options"
        )
    _trace_checker()
    options = dict(fields)
    options["trace"] = _trace_path(options["trace"], base, f"{source}: [trace]")
    return "trace", options


def _base_job(data: Mapping[str, Any], base: Path, source: str) -> dict[str, Any]:
    if "job_file" in data:
        raw = data["job_file"]
        if not isinstance(raw, str):
            raise SweepError(f"{source}: job_file = {_show(raw)}: expected a path")
        path = (base / raw).resolve()
        if not path.is_file():
            raise SweepError(f"{source}: job_file = {_show(raw)}: no such file {path}")
        try:
            return json.loads(_core.load_job(str(path)))
        except _core.JobError as error:
            raise SweepError(f"{source}: job_file: {error}") from None
    table = data["job"]
    if not isinstance(table, Mapping):
        raise SweepError(f"{source}: job = {_show(table)}: expected a [job] table")
    # Checked in Sweep.points, with the job axes filled in: an axis may supply a field the
    # base job leaves out (rw, say).
    return dict(table)


def _seeds(data: Mapping[str, Any], source: str) -> tuple[int, ...]:
    def check(value: Any, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEED:
            raise SweepError(
                f"{source}: {where} = {_show(value)}: expected a whole number from 0 to {MAX_SEED}"
            )
        return value

    if "seeds" in data:
        if "seed" in data or "repeat" in data:
            raise SweepError(
                f"{source}: seeds with seed or repeat: expected either seeds = [..]"
                " or seed and repeat"
            )
        raw = data["seeds"]
        if not isinstance(raw, list) or not raw:
            raise SweepError(f"{source}: seeds = {_show(raw)}: expected a non-empty list")
        seeds = tuple(check(value, "seeds") for value in raw)
        if len(set(seeds)) != len(seeds):
            raise SweepError(f"{source}: seeds = {raw}: expected distinct seeds")
        return seeds
    base = check(data.get("seed", 1), "seed")
    repeat = data.get("repeat", 1)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or not 1 <= repeat <= 10_000:
        raise SweepError(
            f"{source}: repeat = {_show(repeat)}: expected a whole number from 1 to 10000"
        )
    return tuple(derive_seed(base, r) for r in range(repeat))


def load(source: str | os.PathLike[str] | Mapping[str, Any] | Sweep) -> Sweep:
    """A Sweep from a file path, a dict in the file's shape, or a Sweep (returned as it is)."""
    if isinstance(source, Sweep):
        return source
    if isinstance(source, Mapping):
        return Sweep.from_dict(source)
    return Sweep.load(source)


def column_for(name: str, columns: Sequence[str] | Iterable[str]) -> str | None:
    """The table column an axis name given by a user refers to (``ftl.x`` → ``config.ftl.x``)."""
    known = list(columns)
    for candidate in (name, f"config.{name}"):
        if candidate in known:
            return candidate
    return None
