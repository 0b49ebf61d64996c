"""Spread and sensitivity of every prediction (issue 40 point 3).

A prediction is only as good as what it rests on. Two things move it besides the model itself:
the random streams (a run's seed: random offsets, GC victims, preconditioning) and the
parameters its preset assumes because no source gives them (each marked ``assumed`` where it is
set). For every reproduction with prediction rows this module runs

- the reproduction at seeds 1 to 5 (seed 1 is the shipped run): the **spread**;
- each of its :class:`~ssdlab.reproduce.Assumption`\\ s at both ends of its plausible range, one
  at a time, everything else as shipped: the **sensitivity**;

and records, for each prediction row, every figure it took. A row's **verdict** is its band on
the scoreboard (within 15 %, 15–50 %, over 50 %; a direction matches or not). A row whose verdict
differs anywhere inside that spread and range is **fragile**: the scoreboard counts it apart,
since its verdict is decided by a choice, not by the model.

``python scripts/fidelity.py --blocks prediction-sensitivity`` runs it (minutes: every run of
the reproductions with predictions, about eight times over) and writes
``docs/generated/sensitivity.json``; the fragile marks go into ``reproductions.json`` and the
scoreboard. A test checks that the artefact covers every prediction with the figure
``reproductions.json`` holds, so a model change that moves a prediction makes the artefact stale
until it is run again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from . import Experiment, Row, Variant, experiments, row_list, run_experiment
from .scoreboard import WITHIN

SEEDS = (1, 2, 3, 4, 5)
OVER = 0.5  # the scoreboard's second line: a prediction over 50 % off needs a written mechanism
ARTEFACT = "docs/generated/sensitivity.json"


def verdict(row: Row) -> str | None:
    """The band a prediction row falls in (None: not a scored prediction)."""
    if row.label != "prediction" or not row.compared or row.ssdlab is None:
        return None
    if row.difference is not None:
        off = round(abs(row.difference), 9)
        if off <= WITHIN:
            return "within 15 %"
        return "15–50 %" if off <= OVER else "over 50 %"
    if row.agrees is not None:
        return "matches" if row.agrees else "does not match"
    return None


def variants(experiment: Experiment) -> list[Variant]:
    """The runs beside the shipped one: the other seeds, then each assumption's values."""
    out = [Variant(seed=seed) for seed in SEEDS if seed != 1]
    for assumption in experiment.assumptions:
        out += [
            Variant(overrides=((assumption.parameter, v),), sweeps=assumption.sweeps)
            for v in assumption.values
        ]
    return out


def _slug(variant: Variant) -> str:
    return "".join(c if c.isalnum() or c in ".=-_" else "_" for c in variant.describe())


def _predictions(rows: Iterable[Row]) -> dict[str, Row]:
    return {row.metric: row for row in rows if verdict(row) is not None}


def measure_experiment(
    experiment: Experiment,
    base_out: Path,
    out: Path,
    workers: int | None = None,
    report: Callable[[str], None] = lambda _line: None,
) -> dict[str, Any] | None:
    """One reproduction's spread and sensitivity (None when it has no scored prediction).
    ``base_out`` holds (or gets) the shipped run, ``out`` the variants' runs."""
    base = run_experiment(experiment.name, base_out, workers=workers)
    rows = _predictions(base.rows)
    if not rows:
        return None
    figures: dict[str, dict[str, Any]] = {
        metric: {"seeds": {"1": row.ssdlab}, "assumed": []} for metric, row in rows.items()
    }
    verdicts: dict[str, set[str]] = {metric: {verdict(row)} for metric, row in rows.items()}  # type: ignore[misc]
    for variant in variants(experiment):
        report(f"{experiment.name}: {variant.describe()}")
        varied = run_experiment(
            experiment.name, out / _slug(variant), workers=workers, variant=variant
        )
        if varied.failed:
            point, error = varied.failed[0]
            raise RuntimeError(f"{experiment.name} at {variant.describe()}: point {point}: {error}")
        got = {row.metric: row for row in varied.rows}
        for metric in rows:
            row = got.get(metric)
            value = None if row is None else row.ssdlab
            if row is not None and verdict(row) is not None:
                verdicts[metric].add(verdict(row))  # type: ignore[arg-type]
            if variant.overrides:
                parameter, setting = variant.overrides[0]
                figures[metric]["assumed"].append(
                    {"parameter": parameter, "value": setting, "ssdlab": value}
                )
            else:
                figures[metric]["seeds"][str(variant.seed)] = value
    out_rows = []
    for metric, row in rows.items():
        seeds = [v for v in figures[metric]["seeds"].values() if v is not None]
        out_rows.append(
            {
                "metric": metric,
                "paper": row.paper,
                "ssdlab": row.ssdlab,
                "verdict": verdict(row),
                "seeds": figures[metric]["seeds"],
                "seed_min": min(seeds),
                "seed_max": max(seeds),
                "assumed": figures[metric]["assumed"],
                "verdicts": sorted(verdicts[metric]),
                "fragile": len(verdicts[metric]) > 1,
            }
        )
    return {
        "experiment": experiment.name,
        "assumptions": [
            {"parameter": a.parameter, "values": list(a.values), "why": a.why}
            for a in experiment.assumptions
        ],
        "rows": out_rows,
    }


def measure(
    out: Path = Path("out"),
    workers: int | None = None,
    report: Callable[[str], None] = lambda _line: None,
    only: Collection[str] | None = None,
    previous: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Every reproduction's spread and sensitivity, as ``sensitivity.json`` keeps them. The
    shipped runs go to ``out/reproduce/NAME`` (where ``scripts/fidelity.py`` keeps them, so
    they are reused), the variants' to ``out/sensitivity/NAME/VARIANT``. With ``only``, the
    reproductions named there are measured and the others' entries kept from ``previous``
    (the artefact as it stands)."""
    kept = {e["experiment"]: e for e in (previous or {}).get("experiments", [])}
    measured = []
    for experiment in experiments():
        if only is not None and experiment.name not in only:
            if experiment.name in kept:
                measured.append(kept[experiment.name])
            continue
        entry = measure_experiment(
            experiment,
            out / "reproduce" / experiment.name,
            out / "sensitivity" / experiment.name,
            workers=workers,
            report=report,
        )
        if entry is not None:
            measured.append(entry)
    return {
        "written_by": "python scripts/fidelity.py --blocks prediction-sensitivity",
        "seeds": list(SEEDS),
        "experiments": measured,
    }


def _by_key(data: Mapping[str, Any]) -> dict[tuple[str, str], Mapping[str, Any]]:
    """The artefact's measured rows by (experiment, metric)."""
    return {
        (entry["experiment"], row["metric"]): row
        for entry in data["experiments"]
        for row in entry["rows"]
    }


def same_figure(a: float | None, b: float | None) -> bool:
    """Two figures equal but for rounding (both absent counts as equal)."""
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def stale(reproductions: Mapping[str, Any], data: Mapping[str, Any]) -> list[str]:
    """The predictions of ``reproductions.json`` that ``sensitivity.json`` does not cover with
    the same figure (empty: the artefact is current)."""
    by_key = _by_key(data)
    problems = []
    for entry in reproductions["experiments"]:
        for row in row_list(reproductions, entry["experiment"]):
            if verdict(row) is None:
                continue
            got = by_key.get((entry["experiment"], row.metric))
            if got is None:
                problems.append(f"{entry['experiment']}: {row.metric!r} has no spread")
            elif not same_figure(got["ssdlab"], row.ssdlab):
                problems.append(
                    f"{entry['experiment']}: {row.metric!r} is {row.ssdlab!r} in reproductions.json"
                    f" but {got['ssdlab']!r} in the sensitivity artefact"
                )
    return problems


def mark(reproductions: dict[str, Any], data: Mapping[str, Any]) -> None:
    """Set each prediction row's ``fragile`` in ``reproductions`` from ``data`` (where the
    artefact covers it with the same figure; otherwise it is left unset)."""
    by_key = _by_key(data)
    for entry in reproductions["experiments"]:
        for row in entry["rows"]:
            got = by_key.get((entry["experiment"], row["metric"]))
            if (
                row.get("label") == "prediction"
                and got
                and same_figure(got["ssdlab"], row["ssdlab"])
            ):
                row["fragile"] = got["fragile"]
                row["figure_range"] = figure_range(got)
            else:
                row["fragile"] = None
                row["figure_range"] = None


def figure_range(measured: Mapping[str, Any]) -> list[float]:
    """The lowest and highest figure of one measured prediction: as shipped, at every seed and
    at each end of every assumption's range."""
    values = [measured["ssdlab"], *measured["seeds"].values()]
    values += [point["ssdlab"] for point in measured["assumed"]]
    found = [v for v in values if v is not None]
    return [min(found), max(found)]
