"""Reproductions: shipped experiments that set ssdlab's numbers beside a document's.

Each :class:`Experiment` names the document and the figure or table it targets, a sweep to run
(a TOML file in this package, an ordinary sweep file) and a comparison that turns the results
table into rows of ``{experiment, metric, unit, paper, ssdlab, difference}``, where
``difference = ssdlab / paper - 1`` and ``abs_difference = ssdlab - paper`` (in the row's unit;
the only difference there is when the document's value is 0). Only numbers the document states
are used; a number computed from stated ones says so in ``basis``. A configuration ssdlab cannot
model yet is a row with no ssdlab value and a note naming the issue that will add it: it is
shown, not dropped.

Each row carries a ``label`` saying what ssdlab's number is (issue 14): only ``prediction`` rows
count in :func:`fidelity`, the scoreboard's tally of predictions within 15 % of the document.
"""

from __future__ import annotations

import contextvars
import json
import os
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from .. import _core

Table = Any  # a polars DataFrame


class ReproduceError(_core.SsdlabError):
    """An unknown experiment, or one whose runs failed."""


ROW_LABELS = ("prediction", "calibrated", "input", "derived")


@dataclass
class Row:
    """One figure: the document's number (or None), ssdlab's (or None) and how they compare."""

    experiment: str
    metric: str
    unit: str
    paper: float | None
    ssdlab: float | None
    basis: str = ""  # where the document's number comes from ("§5.2 text", "derived: ...")
    note: str = ""  # e.g. "not modelled yet (issue 4)"
    # What the ssdlab number is (issue 14): "prediction" (from the document's setup, nothing
    # fitted to it), "calibrated" (a parameter was fitted to this or another figure: the note
    # says which), "input" (it repeats a model input) or "derived" (computed from other rows).
    label: str = "prediction"
    difference: float | None = field(default=None)
    # ssdlab − document in the row's unit: the one comparison left when the document's value
    # is 0, where a relative difference does not exist (seed 000 Fig. 8's "no gain").
    abs_difference: float | None = field(default=None)
    # For a row the document states as a direction, not a number ("stated as below 1"):
    # whether ssdlab's value goes the same way (None: no direction, or no ssdlab value).
    agrees: bool | None = None
    # A calibrated row's guard (issue 40): how far its figure may move from the document's
    # before CI fails, and the parameter that was fitted to it (reproduce/calibration.py).
    tolerance: float | None = None
    fitted: str = ""
    # A prediction whose verdict changes with the seed or with an assumed parameter inside its
    # plausible range (``reproduce.sensitivity``): counted apart on the scoreboard. None: not
    # measured (not a prediction, or the sensitivity artefact does not cover this figure).
    fragile: bool | None = None
    # The lowest and highest figure the prediction took over the seeds and the assumptions'
    # ranges (``reproduce.sensitivity``; None: not measured).
    figure_range: list[float] | None = None

    def __post_init__(self) -> None:
        if self.label not in ROW_LABELS:
            raise ValueError(f"row label {self.label!r}: expected one of {', '.join(ROW_LABELS)}")
        if self.paper not in (None, 0) and self.ssdlab is not None:
            self.difference = self.ssdlab / self.paper - 1
        if self.paper is not None and self.ssdlab is not None:
            self.abs_difference = self.ssdlab - self.paper

    @property
    def compared(self) -> bool:
        """Whether the document states something this row is held against: a number, or a
        direction ("stated as below 1") or a number derived from stated ones."""
        return self.paper is not None or self.basis.startswith(("stated", "derived"))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        order = (
            "experiment",
            "metric",
            "unit",
            "paper",
            "ssdlab",
            "difference",
            "abs_difference",
            "agrees",
            "label",
            "tolerance",
            "fitted",
            "fragile",
            "figure_range",
            "basis",
            "note",
        )
        return {key: data[key] for key in order}


def row_list(data: Mapping[str, Any], experiment: str) -> list[Row]:
    """An experiment's rows from the reproductions' data (``docs/generated/reproductions.json``),
    in order."""
    out = []
    for entry in data["experiments"]:
        if entry["experiment"] != experiment:
            continue
        for fields in entry["rows"]:
            kept = {k: fields[k] for k in Row.__dataclass_fields__ if k in fields}
            kept.pop("difference", None)
            kept.pop("abs_difference", None)
            out.append(Row(**kept))
    if not out:
        raise LookupError(f"the reproductions' data has no rows of {experiment}")
    return out


# The plausible range of an assumed value that no source bounds (docs/experiments.md).
HALF_TO_TWICE = "half to twice the preset's value, the range of an assumed value no source bounds"


@dataclass(frozen=True)
class Assumption:
    """A parameter a reproduction assumes (no source gives it) and its plausible range.

    ``parameter`` is a dotted config path set on every run of the experiment (as a sweep's
    ``[set]``); ``values`` are the ends of the range the reproduction is run at, beside the
    preset's own value; ``why`` says what the preset assumes and where the range comes from."""

    parameter: str
    values: tuple[Any, ...]
    why: str
    # The sweep files (stems) whose preset assumes it, when the experiment's sweeps run more than
    # one device (empty: every sweep of the experiment).
    sweeps: tuple[str, ...] = ()


@dataclass(frozen=True)
class Variant:
    """A reproduction run off its own setup: another seed, or assumed parameters at other values
    (issue 40 point 3). The default is the reproduction as shipped."""

    seed: int = 1
    overrides: tuple[tuple[str, Any], ...] = ()
    sweeps: tuple[str, ...] = ()  # the sweeps the overrides apply to (empty: all)

    def applies_to(self, sweep: str) -> bool:
        return not self.sweeps or sweep in self.sweeps

    def describe(self) -> str:
        parts = [f"seed={self.seed}"] if self.seed != 1 or not self.overrides else []
        parts += [f"{path}={value}" for path, value in self.overrides]
        return ",".join(parts)


_VARIANT: contextvars.ContextVar[Variant | None] = contextvars.ContextVar("variant", default=None)


def current_variant() -> Variant:
    """The variant the running comparison belongs to: comparisons that run their own models
    (not a sweep) apply its seed and overrides to them."""
    return _VARIANT.get() or Variant()


def varied_sweep(path: Path, variant: Variant) -> Any:
    """The sweep file ``path`` with the variant's seed and its overrides added to ``[set]``.
    An override of a parameter the sweep varies itself is refused: the sweep decides it."""
    from ..experiments.sweep import Sweep, _flatten_table

    text = path.read_text(encoding="utf-8")
    data = tomllib.loads(text)
    data.pop("seeds", None)
    data["seed"] = variant.seed
    varied = {name.removeprefix("config.") for name, _ in _flatten_table(data.get("axes", {}))}
    for group in data.get("zip", []):
        varied |= {name.removeprefix("config.") for name, _ in _flatten_table(group)}
    fixed = dict(_flatten_table(data.get("set", {})))
    for parameter, value in variant.overrides if variant.applies_to(path.stem) else ():
        if parameter in varied:
            raise ReproduceError(
                f"{path.name}: {parameter} is an axis of the sweep, not an assumption"
            )
        head, _, rest = parameter.partition(".")
        if head in ("swap", "job", "trace"):  # a workload knob: into its own table
            table = data.setdefault(head, {})
            *parents, last = rest.split(".")
            for key in parents:
                table = table.setdefault(key, {})
            table[last] = value
        else:
            fixed[parameter] = value
    if fixed:
        data["set"] = fixed
    return Sweep.from_dict(data, source=str(path), base_dir=path.parent, stem=path.stem)


@dataclass(frozen=True)
class Experiment:
    name: str
    document: str  # the seed file
    title: str  # the document's title and authors
    target: str  # "Fig. 5"
    summary: str
    compare: Callable[[Table | None], list[Row]]
    sweep: str | None = None  # a TOML file in this package
    plots: Callable[[Table, Path], list[Path]] | None = None
    notes: tuple[str, ...] = ()
    # Further sweeps (TOML files in this package) on another base configuration, each run into
    # DIR/<file stem>/; their rows are added to the main sweep's table (``config_name`` tells
    # the presets apart). A sweep has one base configuration, so comparing two devices that
    # differ in many settings takes one sweep per device.
    extra_sweeps: tuple[str, ...] = ()
    # For an experiment with no document to compare with: a compact view of the results as
    # (column headers, rows of cells), printed instead of the comparison rows.
    overview: Callable[[Table | None], tuple[list[str], list[list[str]]]] | None = None
    # The parameters its predictions rest on that no source gives (issue 40 point 3): each is
    # run at the ends of its plausible range, one at a time, by ``reproduce.sensitivity``.
    assumptions: tuple[Assumption, ...] = ()

    def sweep_path(self) -> Path | None:
        if self.sweep is None:
            return None
        return Path(str(resources.files(__name__).joinpath(self.sweep)))

    def extra_sweep_paths(self) -> list[Path]:
        return [Path(str(resources.files(__name__).joinpath(name))) for name in self.extra_sweeps]

    def describe(self) -> dict[str, Any]:
        return {
            "experiment": self.name,
            "document": self.document,
            "title": self.title,
            "target": self.target,
            "summary": self.summary,
        }


def replayed_traces(table: Table | None) -> list[str]:
    """The traces a results table replayed (its ``trace.trace`` column), in first-seen order."""
    if table is None or "trace.trace" not in table.columns:
        return []
    seen: list[str] = []
    for value in table["trace.trace"].to_list():
        if value not in seen:
            seen.append(value)
    return seen


def trace_label(trace: str) -> str:
    """A replayed trace as a row names it: a workload model as ``NAME (stand-in)``, a file by
    its name."""
    if trace.startswith("model:"):
        return trace[len("model:") :].split(",")[0] + " (stand-in)"
    return Path(trace).name


def _registry() -> dict[str, Experiment]:
    from . import interfaces, seed000, seed001, seed002, seed003, seed004

    experiments = [
        *seed000.EXPERIMENTS,
        *seed001.EXPERIMENTS,
        *seed002.EXPERIMENTS,
        *seed003.EXPERIMENTS,
        *seed004.EXPERIMENTS,
        *interfaces.EXPERIMENTS,
    ]
    return {experiment.name: experiment for experiment in experiments}


def experiments() -> list[Experiment]:
    return list(_registry().values())


def get(name: str) -> Experiment:
    registry = _registry()
    if name not in registry:
        raise ReproduceError(
            f"unknown experiment {name!r}: expected one of {', '.join(registry)}"
            " (ssdlab reproduce --list)"
        )
    return registry[name]


@dataclass
class Reproduction:
    experiment: Experiment
    rows: list[Row]
    out_dir: Path
    plots: list[Path]
    failed: list[tuple[str, str]]
    report: Path | None = None
    overview: tuple[list[str], list[list[str]]] | None = None

    def to_json(self) -> str:
        return json.dumps([row.to_dict() for row in self.rows], indent=2, ensure_ascii=False) + "\n"


def run_experiment(
    name: str,
    out: str | os.PathLike[str],
    executor: str = "local",
    workers: int | None = None,
    address: str | None = None,
    progress: Any = None,
    variant: Variant | None = None,
) -> Reproduction:
    """Run an experiment's sweep into ``out`` (resumably), compare, and draw its plots.

    With a ``variant``, every sweep runs with its seed and overrides (``varied_sweep``) and a
    comparison that runs its own models applies them too (``current_variant``)."""
    from ..experiments.report import COMPARISON_FILE, write_report
    from ..experiments.runner import run_sweep

    experiment = get(name)
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    table = None
    failed: list[tuple[str, str]] = []
    sweep = experiment.sweep_path()

    def source(path: Path) -> Any:
        return path if variant is None else varied_sweep(path, variant)

    if sweep is not None:
        outcome = run_sweep(
            source(sweep),
            directory,
            executor=executor,
            workers=workers,
            address=address,
            progress=progress,
        )
        table = outcome.table()
        failed_rows = table.filter(table["status"] != "ok")
        failed = [(str(r["point"]), str(r["error"])) for r in failed_rows.iter_rows(named=True)]
        for extra in experiment.extra_sweep_paths():
            outcome = run_sweep(
                source(extra),
                directory / extra.stem,
                executor=executor,
                workers=workers,
                address=address,
                progress=progress,
            )
            more = outcome.table()
            failed_rows = more.filter(more["status"] != "ok")
            failed += [
                (f"{extra.stem}:{r['point']}", str(r["error"]))
                for r in failed_rows.iter_rows(named=True)
            ]
            table = concat_tables(table, more)
    token = _VARIANT.set(variant)
    try:
        rows = experiment.compare(table)
    finally:
        _VARIANT.reset(token)
    from .calibration import annotate

    annotate(rows)
    comparison = {
        **experiment.describe(),
        "difference": "ssdlab / paper - 1",
        "rows": [row.to_dict() for row in rows],
        "notes": list(experiment.notes),
    }
    (directory / COMPARISON_FILE).write_text(
        json.dumps(comparison, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    plots: list[Path] = []
    report = None
    if table is not None and experiment.plots is not None and table.height:
        plots = experiment.plots(table, directory)
    if sweep is not None:
        images = [
            (path, f"{experiment.name}: {path.stem}") for path in plots if path.suffix == ".png"
        ]
        report = write_report(directory, images=images)
    overview = experiment.overview(table) if experiment.overview is not None else None
    return Reproduction(experiment, rows, directory, plots, failed, report, overview)


def concat_tables(first: Table, second: Table) -> Table:
    """Stack two results tables whose columns differ (a column missing from one is null
    there; a column whose types differ is widened)."""
    import polars as pl

    return pl.concat([first, second], how="diagonal_relaxed")


def rows_for(rows: Sequence[Row]) -> list[dict[str, Any]]:
    return [row.to_dict() for row in rows]
