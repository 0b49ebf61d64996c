"""Calibrations as data (issue 40 point 1): every ``calibrated`` row's target and tolerance.

A calibrated row is a figure of a document that a model parameter was set to hit. If a later
change moves that figure, the parameter no longer does what its note says, and every row that
holds it fixed rests on a value that is no longer true. So each calibrated row is listed here
with the parameter that was fitted, the document's figure (the target), a tolerance (2 %
unless ``why_tolerance`` gives a reason for another) and the fewest reproduction points that
give the figure at the document's setup. ``tests/test_calibration_guards.py`` runs them and
fails when a figure leaves its tolerance; ``scripts/fidelity.py --refit NAME`` refits one
(:func:`refit`: a bisection over ``search``) and rewrites the value, its note and the docs
together.
"""

from __future__ import annotations

import dataclasses
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import Row, get, seed000

# The tolerance of a calibrated row unless its entry says why another (issue 40: "say 2 %").
DEFAULT_TOLERANCE = 0.02
ROOT = Path(__file__).resolve().parents[3]  # the checkout: python/ssdlab/reproduce/ → root


@dataclass(frozen=True)
class Mention:
    """A place that quotes the fitted value or the figure it gives, rewritten by a refit.

    ``pattern`` is a regular expression with the named groups ``value`` (the parameter's
    value) and/or ``figure`` (what it gives); a refit replaces each group it finds."""

    path: str  # relative to the checkout
    pattern: str
    figure_format: str = "{:,.1f}"


@dataclass(frozen=True)
class Calibration:
    """One calibrated row: what was fitted, to which figure, how close it must stay, and how
    to measure it cheaply."""

    name: str  # for --refit NAME
    experiment: str
    metric: str  # the row's metric
    parameter: str  # the fitted parameter, a dotted config path
    where: str  # where its value lives (a file of the checkout)
    target: float  # the document's figure (the row's ``paper``)
    tolerance: float = DEFAULT_TOLERANCE
    why_tolerance: str = ""  # the reason for a tolerance other than 2 %
    # The points the figure needs: per sweep file (the experiment's main sweep or an extra
    # one), the values to keep of each axis column (``job.bs``, ``config.interface.link``);
    # an axis not named keeps all its values. An experiment without a sweep runs nothing.
    points: Mapping[str, Mapping[str, Sequence[Any]]] = field(default_factory=dict)
    # Instead of the experiment's row: a function of the overrides ("path=TOML") that returns
    # the figure (for a figure the row does not show at the level where it was fitted).
    measure: Callable[[Sequence[str]], float | None] | None = None
    # For a refit: the parameter's range, whether it takes integers, and where the value and
    # the figure it gives are quoted (rewritten together with the value).
    search: tuple[float, float] | None = None
    integer: bool = False
    value_pattern: str = ""  # in ``where``: a regex whose group ``value`` is the value
    mentions: tuple[Mention, ...] = ()

    def within(self, figure: float | None) -> bool:
        return figure is not None and abs(figure / self.target - 1) <= self.tolerance + 1e-12

    def failure(self, figure: float | None) -> str:
        """The message of a guard that fails: the row, the parameter, target and figure."""
        got = "no value" if figure is None else f"{figure:,.4g} ({figure / self.target - 1:+.1%})"
        return (
            f"calibrated row {self.experiment} / {self.metric!r} left its tolerance: "
            f"{self.parameter} (in {self.where}) was fitted to {self.target:,.4g}, "
            f"tolerance ±{self.tolerance:.0%}; the figure is now {got}. "
            f"refit (scripts/fidelity.py --refit {self.name}) or re-model"
        )


def _matches(value: Any, wanted: Sequence[Any]) -> bool:
    """An axis value among ``wanted``; a trace named "@traces/NAME" matches the file the
    sweep resolved it to."""
    for item in wanted:
        if value == item:
            return True
        if isinstance(item, str) and item.startswith("@traces/") and isinstance(value, str):
            if Path(value).name == item.removeprefix("@traces/"):
                return True
    return False


def _subset_sweep(path: Path, keep: Mapping[str, Sequence[Any]], overrides: Sequence[str]) -> Any:
    """The sweep file at ``path`` cut to the axis values ``keep`` names, with ``overrides``
    added to its [set], and no per-request records (the figure needs the summary only)."""
    from ..experiments.sweep import Sweep

    sweep = Sweep.load(path)
    dims = []
    for dim in sweep.dims:
        positions: list[int] = list(range(len(dim[0].values)))
        for axis in dim:
            wanted = keep.get(axis.column, keep.get(axis.name))
            if wanted is not None:
                positions = [i for i in positions if _matches(axis.values[i], wanted)]
        if not positions:
            names = ", ".join(axis.column for axis in dim)
            raise ValueError(f"{path.name}: no point of {names} is among {dict(keep)}")
        dims.append(
            [dataclasses.replace(a, values=tuple(a.values[i] for i in positions)) for a in dim]
        )
    return dataclasses.replace(
        sweep, dims=dims, fixed=(*sweep.fixed, *overrides), record_requests=False
    )


def measure(
    calibration: Calibration, overrides: Sequence[str] = (), workers: int | None = None
) -> float | None:
    """The figure the calibrated row shows now (with ``overrides``, "path=TOML", on top of its
    sweeps), from the calibration's points alone."""
    if calibration.measure is not None:
        return calibration.measure(overrides)
    return _row(_rows(calibration, overrides, workers), calibration).ssdlab


def measure_all(
    chosen: Iterable[Calibration], overrides: Sequence[str] = (), workers: int | None = None
) -> list[tuple[Calibration, float | None]]:
    """Each calibration's figure; calibrations of one experiment on the same points share
    their runs."""
    cache: dict[tuple[str, str], list[Row]] = {}
    out = []
    for calibration in chosen:
        if calibration.measure is not None:
            out.append((calibration, calibration.measure(overrides)))
            continue
        key = (calibration.experiment, repr(sorted(calibration.points.items())))
        if key not in cache:
            cache[key] = _rows(calibration, overrides, workers)
        out.append((calibration, _row(cache[key], calibration).ssdlab))
    return out


def _rows(calibration: Calibration, overrides: Sequence[str], workers: int | None) -> list[Row]:
    """The experiment's rows from the calibration's points (all its rows; those that need
    other points have no ssdlab value)."""
    from ..experiments.runner import run_sweep
    from . import concat_tables

    experiment = get(calibration.experiment)
    table = None
    with tempfile.TemporaryDirectory(prefix="ssdlab-calibration-") as scratch:
        for path in [experiment.sweep_path(), *experiment.extra_sweep_paths()]:
            if path is None or path.name not in calibration.points:
                continue
            sweep = _subset_sweep(path, calibration.points[path.name], overrides)
            outcome = run_sweep(sweep, Path(scratch) / path.stem, workers=workers)
            if outcome.failed_total:
                raise RuntimeError(f"{calibration.name}: runs failed: {outcome.errors}")
            more = outcome.table()
            table = more if table is None else concat_tables(table, more)
        if experiment.sweep_path() is not None and table is None and overrides:
            raise ValueError(f"{calibration.name}: no points given for {experiment.name}")
        return experiment.compare(table)


def _row(rows: Iterable[Row], calibration: Calibration) -> Row:
    for row in rows:
        if row.metric == calibration.metric:
            return row
    raise LookupError(f"{calibration.experiment} has no row {calibration.metric!r}")


def calibrations() -> list[Calibration]:
    return list(CALIBRATIONS)


def find(name: str) -> Calibration:
    for calibration in CALIBRATIONS:
        if calibration.name == name:
            return calibration
    names = ", ".join(c.name for c in CALIBRATIONS)
    raise LookupError(f"unknown calibration {name!r}: expected one of {names}")


def for_row(experiment: str, metric: str) -> Calibration | None:
    for calibration in CALIBRATIONS:
        if calibration.experiment == experiment and calibration.metric == metric:
            return calibration
    return None


def annotate(rows: Iterable[Row]) -> None:
    """Give each calibrated row its tolerance and fitted parameter from the registry."""
    for row in rows:
        if row.label != "calibrated":
            continue
        calibration = for_row(row.experiment, row.metric)
        if calibration is not None:
            row.tolerance = calibration.tolerance
            row.fitted = calibration.parameter


# -- the registry --------------------------------------------------------------------------


_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(ps|ns|us|µs|ms|s)\s*$")
_PS_PER = {"ps": 1, "ns": 1e3, "us": 1e6, "µs": 1e6, "ms": 1e9, "s": 1e12}


def _duration_ps(text: str) -> float:
    """A duration as the core's config JSON writes it ("60100ns") in picoseconds."""
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"duration {text!r}: expected a number and ps, ns, us, ms or s")
    return float(match.group(1)) * _PS_PER[match.group(2)]


def _rate_mt_s(text: str) -> float:
    """A bus rate as the config JSON writes it ("133MT/s") in MT/s."""
    match = re.match(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*MT/s\s*$", text)
    if match is None:
        raise ValueError(f"bus rate {text!r}: expected a number of MT/s")
    return float(match.group(1))


def _seed002_nand_media_us(what: str) -> Callable[[Sequence[str]], float | None]:
    """Table 7's NAND time where the document measured it, at the media controller: the
    array time (tR or tPROG) and one 2 KiB page over the NAND bus, from the resolved
    ``seed002-fusion`` (the row itself shows the raw command end to end)."""

    def media(overrides: Sequence[str]) -> float | None:
        import json

        from .. import _core

        config = json.loads(_core.resolve_config("seed002-fusion", list(overrides)))
        nand = config["nand"]
        array_ps = _duration_ps(nand["timing"]["read" if what == "read" else "program"][0])
        bus = nand["bus"]
        rate_mt_s = _rate_mt_s(bus["rate"])
        page_bytes = _core.parse_bytes(str(nand["page_size"]))
        transfer_ps = page_bytes * 8 / bus["width_bits"] / rate_mt_s * 1e6
        return (array_ps + transfer_ps + _duration_ps(bus["cmd_addr"])) / 1e6

    return media


# "152 gives 2,370.8)": a fitted value and the figure it gives, as the notes quote them.
_GIVES = r"(?P<value>\d+) gives (?P<figure>[\d,.]+)\)"

# seed003-devices' SCM-400 runs, clean and aged: the request sizes' points.
_SEED003_SCM400: dict[str, dict[str, Sequence[Any]]] = {
    "seed003_devices.toml": {
        "swap.device": ["seed003-scm-400"],
        "swap.pc_mix.aging_rounds": [0, 30],
    }
}

CALIBRATIONS: tuple[Calibration, ...] = (
    Calibration(
        name="seed004-nvme-ideal-read",
        experiment="seed004-fig5",
        metric="NVMe-ideal sequential read bandwidth",
        parameter="host.kib_instructions",
        where="configs/seed004-64ch-mlc.toml",
        target=2370.0,
        points={
            "seed004_fig5.toml": {"config.interface.link": ["ideal"], "job.rw": ["read"]},
        },
        search=(0, 1000),
        integer=True,
        value_pattern=r"(?m)^kib_instructions = (?P<value>\d+)",
        mentions=(
            Mention("configs/seed004-64ch-mlc.toml", _GIVES),
            Mention("docs/host.md", _GIVES),
            Mention("docs/host.md", r"`kib_instructions = (?P<value>\d+)`"),
            Mention("docs/experiments.md", _GIVES),
            Mention("docs/experiments.md", r"`host\.kib_instructions = (?P<value>\d+)`"),
        ),
    ),
    Calibration(
        name="seed000-interface-bandwidth",
        experiment="seed000-fig6",
        metric="interface bandwidth, 512 KB read chunk",
        parameter="interface.dram.invalidate_piece",
        where="configs/seed000-lpddr3-dramif.toml",
        target=366.7,
        points={"seed000_fig6.toml": {"job.bs": ["512KiB"]}},
    ),
    Calibration(
        name="seed000-overhead-512k",
        experiment="seed000-fig6",
        metric="protocol overhead, 512 KB chunk",
        parameter="interface.dram.dma_setup",
        where="configs/seed000-lpddr3-dramif.toml",
        target=3.8,
        points={"seed000_fig6.toml": {"job.bs": ["512KiB"]}},
    ),
    Calibration(
        name="seed000-overhead-latency-512k",
        experiment="seed000-fig7",
        metric="512 KB chunk: protocol overhead latency, prototype",
        parameter="interface.dram.dma_setup",
        where="configs/seed000-lpddr3-dramif.toml",
        target=seed000.FIG7_OVERHEAD_512K_US,  # 56.48 µs, derived from §6.2
        points={"seed000_fig6.toml": {"job.bs": ["512KiB"]}},
    ),
    Calibration(
        name="seed000-max-write",
        experiment="seed000-fig9",
        metric="maximum write throughput (512 KB chunk, QD4)",
        parameter="nand.timing.program",
        where="configs/seed000-lpddr3-dramif.toml",
        target=95.8,
        points={
            "seed000_fig9.toml": {"job.rw": ["write"], "job.numjobs": [4], "job.bs": ["512KiB"]}
        },
    ),
    Calibration(
        name="seed000-dma-read",
        experiment="seed000-dma",
        metric="4 KB random read at QD4: IOPS with the DMA over IOPS with CPU copies",
        parameter="interface.dram.cpu_read_copy_rate",
        where="configs/seed000-lpddr3-dramif.toml",
        target=10.0,
        tolerance=0.10,
        why_tolerance="the document's figure is 'an order of magnitude' (§5.4), read as 10×:"
        " not a measured number, so a fit closer than 10 % would claim more than it says",
        points={"seed000_dma.toml": {"job.rw": ["randread"]}},
    ),
    Calibration(
        name="seed001-leakage",
        experiment="seed001-fig3-4",
        metric="dual / single2x leakage power",
        parameter="cache.energy.port_area_overhead",
        where="configs/seed001-16g-mlc-dram-cache.toml",
        target=0.51,
        # Leakage follows the buffers' area, not the workload: one stand-in is enough.
        points={
            "seed001_fig34.toml": {
                "trace.trace": ["model:fin1,count=40000"],
                "config.cache.ports": ["single", "dual"],
                "config.cache.capacity": ["32MiB", "16MiB"],
            }
        },
    ),
    Calibration(
        name="seed001-leakage-samples",
        experiment="seed001-fig3-4-samples",
        metric="dual / single2x leakage power",
        parameter="cache.energy.port_area_overhead",
        where="configs/seed001-16g-mlc-dram-cache.toml",
        target=0.51,
        points={
            "seed001_samples.toml": {
                "trace.trace": ["@traces/ssdsim_financial1_sample.ascii"],
                "config.cache.ports": ["single", "dual"],
                "config.cache.capacity": ["32MiB", "16MiB"],
            }
        },
    ),
    *(
        Calibration(
            name=f"seed002-{key}-{what.replace(' ', '-')}",
            experiment="seed002-fig14",
            metric=f"{workload} (stand-in): {what}",
            parameter=f"the {key} trace model (crates/ssdlab/src/trace/models)",
            where="crates/ssdlab/src/trace",
            target=target,
        )
        for key, workload, size_kb, ratio in (
            ("financial1", "Financial1", 2.91, 0.59),
            ("financial2", "Financial2", 2.49, 0.84),
            ("msnfs", "MSNFS", 10.06, 0.15),
            ("radius", "RADIUS", 7.2, 0.91),
        )
        for what, target in (("mean write size", size_kb), ("write ratio", ratio))
    ),
    Calibration(
        name="seed002-nand-read",
        experiment="seed002-table7",
        metric="NAND read of a 2048 B page",
        parameter="nand.timing.read",
        where="configs/seed002-fusion.toml",
        target=75.5,
        measure=_seed002_nand_media_us("read"),
    ),
    Calibration(
        name="seed002-nand-write",
        experiment="seed002-table7",
        metric="NAND write of a 2048 B page",
        parameter="nand.timing.program",
        where="configs/seed002-fusion.toml",
        target=213.2,
        measure=_seed002_nand_media_us("write"),
    ),
    Calibration(
        name="seed003-lifetime-writes",
        experiment="seed003-lifetime",
        metric="swap writes (4 KiB pages)",
        parameter="swap.pc_mix.rounds and swap.pc_mix.tab_memory",
        where="python/ssdlab/reproduce/seed003_lifetime.toml",
        target=215_022,
        tolerance=0.05,
        why_tolerance="two knobs fitted together to three figures (the writes, the pages"
        " written and the maximum of 4), one of them a whole number of rounds, the response not"
        " monotone: the nearest fit with the seed's maximum (tab_memory 141 MiB) leaves −4.4 %"
        " here and −0.5 % on the pages (docs/paging.md 'Calibration', refitted in issue 40);"
        " the tolerance holds that residual, not a 2 % fit",
        points={"seed003_lifetime.toml": {}},
    ),
    Calibration(
        name="seed003-lifetime-pages",
        experiment="seed003-lifetime",
        metric="pages written",
        parameter="swap.pc_mix.tab_memory and swap.pc_mix.rounds",
        where="python/ssdlab/reproduce/seed003_lifetime.toml",
        target=163_177,
        points={"seed003_lifetime.toml": {}},
    ),
    Calibration(
        name="seed003-lifetime-max",
        experiment="seed003-lifetime",
        metric="writes per page, max",
        parameter="swap.pc_mix.cold_sweep",
        where="python/ssdlab/reproduce/seed003_lifetime.toml",
        target=4,
        points={"seed003_lifetime.toml": {}},
    ),
    Calibration(
        name="seed003-aged-writes-size",
        experiment="seed003-devices",
        metric="aged writes: most frequent request size",
        parameter="swap.pc_mix.idle_memory",
        where="python/ssdlab/reproduce/seed003_devices.toml",
        target=4,
        points=_SEED003_SCM400,
    ),
    *(
        Calibration(
            name=f"seed003-{state}-reads-size",
            experiment="seed003-devices",
            metric=f"{state} reads: most frequent request size",
            parameter="swap.pc_mix.run_pages (its default, 8)",
            where="crates/ssdlab/src/paging/pcmix.rs",
            target=32,
            points=_SEED003_SCM400,
        )
        for state in ("clean", "aged")
    ),
)


# -- refitting ------------------------------------------------------------------------------


@dataclass
class Refit:
    """What a refit found: the search (value, figure) in the order it ran, the old and the new
    value and the figure the new one gives."""

    calibration: Calibration
    old: float
    new: float
    figure: float
    steps: list[tuple[float, float]]
    files: list[str] = field(default_factory=list)


def current_value(calibration: Calibration, root: Path = ROOT) -> float:
    """The fitted parameter's value as ``where`` holds it."""
    text = (root / calibration.where).read_text(encoding="utf-8")
    match = re.search(calibration.value_pattern, text)
    if not calibration.value_pattern or match is None:
        raise ValueError(f"{calibration.where}: no value of {calibration.parameter} found")
    return float(match.group("value"))


def _show(value: float, integer: bool) -> str:
    return str(int(value)) if integer else f"{value:.6g}"


def search(
    calibration: Calibration,
    evaluate: Callable[[float], float | None],
    report: Callable[[str], None] = print,
) -> tuple[float, float, list[tuple[float, float]]]:
    """Bisect the parameter's range for the value whose figure is nearest the target. The
    figure must move one way over the range (it is measured at both ends first); an integer
    parameter stops at two neighbours and takes the nearer."""
    if calibration.search is None:
        raise ValueError(f"{calibration.name}: no search range: it cannot be refitted")
    lo, hi = calibration.search
    steps: list[tuple[float, float]] = []

    def at(value: float) -> float:
        figure = evaluate(value)
        if figure is None:
            raise RuntimeError(f"{calibration.name}: no figure at {value}")
        steps.append((value, figure))
        report(
            f"  {calibration.parameter} = {_show(value, calibration.integer)}:"
            f" {figure:,.2f} ({figure / calibration.target - 1:+.2%})"
        )
        return figure

    f_lo, f_hi = at(lo), at(hi)
    target = calibration.target
    if (f_lo - target) * (f_hi - target) > 0:
        raise RuntimeError(
            f"{calibration.name}: the target {target:,} is not between {f_lo:,.2f} and"
            f" {f_hi:,.2f} over {calibration.parameter} = {lo}..{hi}: re-model, or widen the"
            " range with a reason"
        )
    rising = f_hi > f_lo
    for _ in range(64):
        if calibration.integer and hi - lo <= 1:
            break
        if not calibration.integer and abs(f_hi - f_lo) <= target * 1e-4:
            break
        mid = (lo + hi) // 2 if calibration.integer else (lo + hi) / 2
        f_mid = at(mid)
        if (f_mid < target) == rising:
            lo, f_lo = mid, f_mid
        else:
            hi, f_hi = mid, f_mid
    best = min(((lo, f_lo), (hi, f_hi)), key=lambda vf: abs(vf[1] - target))
    return best[0], best[1], steps


def _rewrite(text: str, pattern: str, groups: Mapping[str, str]) -> tuple[str, int]:
    """``text`` with each named group of each match of ``pattern`` replaced."""
    out, last, count = [], 0, 0
    for match in re.finditer(pattern, text):
        spans = sorted(
            (match.start(n), match.end(n), groups[n])
            for n in groups
            if n in match.groupdict() and match.group(n) is not None
        )
        for start, end, new in spans:
            out.append(text[last:start])
            out.append(new)
            last = end
        count += 1
    out.append(text[last:])
    return "".join(out), count


def refit(
    calibration: Calibration,
    report: Callable[[str], None] = print,
    workers: int | None = None,
    write: bool = True,
    root: Path = ROOT,
) -> Refit:
    """Find the value that hits the target and write it, with the figure it gives, into the
    value's file and every mention (its note, the docs) together."""
    if calibration.search is None or not calibration.value_pattern:
        raise ValueError(
            f"{calibration.name}: no search range for {calibration.parameter}: it cannot be"
            " bisected; refit it by hand and record the search where its value lives"
            f" ({calibration.where}), or re-model"
        )
    old = current_value(calibration, root)
    report(
        f"refit {calibration.name}: {calibration.parameter} = {_show(old, calibration.integer)}"
        f" in {calibration.where}; target {calibration.target:,} ({calibration.experiment},"
        f" {calibration.metric!r})"
    )

    def evaluate(value: float) -> float | None:
        literal = _show(value, calibration.integer)
        return measure(calibration, [f"{calibration.parameter}={literal}"], workers)

    new, figure, steps = search(calibration, evaluate, report)
    result = Refit(calibration, old, new, figure, steps)
    value_text = _show(new, calibration.integer)
    if not write:
        return result
    edits: dict[str, list[tuple[str, dict[str, str]]]] = {}
    edits.setdefault(calibration.where, []).append(
        (calibration.value_pattern, {"value": value_text})
    )
    for mention in calibration.mentions:
        edits.setdefault(mention.path, []).append(
            (mention.pattern, {"value": value_text, "figure": mention.figure_format.format(figure)})
        )
    for path, changes in edits.items():
        file = root / path
        text = file.read_text(encoding="utf-8")
        for pattern, groups in changes:
            text, count = _rewrite(text, pattern, groups)
            if count == 0:
                raise ValueError(f"{path}: no match of {pattern!r}: the mention moved")
        file.write_text(text, encoding="utf-8")
        result.files.append(path)
    report(
        f"{calibration.parameter} = {value_text} gives {figure:,.2f}"
        f" ({figure / calibration.target - 1:+.2%}); rewrote {', '.join(result.files)}"
    )
    if calibration.where.startswith("configs/"):
        report(
            "presets are compiled into the extension: rebuild it (maturin develop --release)"
            " before the guard (tests/test_calibration_guards.py) and python scripts/fidelity.py"
        )
    return result
