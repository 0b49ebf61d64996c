"""The experiment commands of ``ssdlab``: ``sweep``, ``plot``, ``report`` and ``reproduce``.

They live apart from ``cli.py`` and are added to its app by :func:`register`. Errors are
``SsdlabError`` subclasses, which ``cli.main`` prints as one line ``error: ...`` with exit code 2.
A sweep or a reproduction whose runs partly failed finishes, writes everything, reports the
failures on stderr and exits 1.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .. import _core
from ..files import write_output_text
from .options import State, UserError, toml_string
from .progress import line_progress
from .stopping import stop_reason

if TYPE_CHECKING:
    from ..experiments.runner import SweepOutcome
    from ..experiments.sweep import Point

EXIT_RUNS_FAILED = 1
MAX_LISTED_FAILURES = 5


class ExperimentError(_core.SsdlabError):
    """A bad option of an experiment command (one line, exit code 2)."""


def _stdout() -> Console:
    return Console() if sys.stdout.isatty() else Console(width=120)


def _stderr() -> Console:
    return Console(stderr=True) if sys.stderr.isatty() else Console(stderr=True, width=120)


# --------------------------------------------------------------------------------------------
# progress


class _Bar:
    """The sweep's progress on stderr: points done of all, failures so far, ETA; a bar on a
    terminal, a line every few seconds elsewhere (``progress.line_progress``)."""

    def __init__(self, label: str, enabled: bool) -> None:
        self.label = label
        self.enabled = enabled
        self.bar: Any = None
        self.task: Any = None
        self.failed = 0
        self.line: Any = None
        self.done = self.total = 0

    def start(self, total: int, done: int, failed: int) -> None:
        if not self.enabled:
            return
        self.failed, self.done, self.total = failed, done, total
        if not sys.stderr.isatty():
            self.line = line_progress(self.label, sys.stderr)
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.failed = failed
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("points, [red]{task.fields[failed]} failed[/red]"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
        )
        self.bar.start()
        self.task = self.bar.add_task(self.label, total=total, completed=done, failed=failed)

    def advance(self, point: Point, status: str, error: str | None) -> None:
        self.failed += status != "ok"
        self.done += 1
        if self.line is not None:
            self.line(self.done, self.total)
        if self.bar is None:
            return
        self.bar.update(self.task, advance=1, failed=self.failed)

    def finish(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def _bar(label: str, quiet: bool) -> _Bar:
    return _Bar(label, enabled=not quiet)


# --------------------------------------------------------------------------------------------
# shared options

OutDir = Annotated[Path, typer.Option("--out", "-o", metavar="DIR", help="Output directory.")]
Executor = Annotated[
    str,
    typer.Option(
        "--executor",
        metavar="local|ray",
        help="local: a process pool on this machine; ray: a Ray cluster (pip install"
        " 'ssdlab[ray]').",
    ),
]
Workers = Annotated[
    int | None,
    typer.Option(
        "--workers", "-j", min=1, help="Runs at once (default: one per core, or the Ray CPUs)."
    ),
]
Address = Annotated[
    str | None,
    typer.Option(
        "--address",
        metavar="ADDR",
        help="Ray cluster address (auto, HOST:PORT, ray://HOST:10001); default: a local Ray.",
    ),
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar, no summary.")]
Traces = Annotated[
    Path | None,
    typer.Option(
        "--traces",
        metavar="DIR",
        help="The shared trace samples (traces named @traces/FILE); default: $SSDLAB_TRACES,"
        " else shared/traces above the sweep file, as in a checkout.",
    ),
]


def _use_traces(traces: Path | None) -> None:
    from ..experiments.sweep import set_traces_dir

    set_traces_dir(traces)


def _summary(outcome: SweepOutcome) -> str:
    rate = f", {outcome.runs_per_minute:,.0f} runs/min" if outcome.ran else ""
    executor = outcome.executor
    if executor.get("executor") == "ray":
        where = f"Ray at {executor['address']}" if executor.get("address") else "a local Ray"
        used = f"{where}" + (f", {executor['workers']} at once" if executor.get("workers") else "")
    else:
        used = f"{executor.get('workers')} local worker processes"
    return (
        f"{outcome.name}: {outcome.total} points; ran {outcome.ran} now ({outcome.ok} ok,"
        f" {outcome.failed} failed), {outcome.already_done} already done;"
        f" {outcome.seconds:.1f} s{rate}; {used}"
    )


def _report_failures(outcome: SweepOutcome) -> int:
    if not outcome.failed_total:
        return 0
    err = sys.stderr
    for described, error in outcome.errors[:MAX_LISTED_FAILURES]:
        err.write(f"failed: {described}: {' '.join(error.split())}\n")
    if len(outcome.errors) > MAX_LISTED_FAILURES:
        err.write(f"failed: ... and {len(outcome.errors) - MAX_LISTED_FAILURES} more\n")
    err.write(
        f"error: {outcome.failed_total} of {outcome.total} points failed; their errors are in"
        f" {outcome.out_dir / 'results.csv'} (columns status, error)\n"
    )
    return EXIT_RUNS_FAILED


# --------------------------------------------------------------------------------------------
# sweep


def sweep_command(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="A sweep file (TOML).")],
    out: OutDir,
    executor: Executor = "local",
    workers: Workers = None,
    address: Address = None,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="Run points that failed before again.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List the points and what is done; run nothing.")
    ] = False,
    quiet: Quiet = False,
    traces: Traces = None,
    state: State = None,
) -> None:
    """Run every point of a sweep file into DIR; points already in DIR are not run again.
    With --state FILE every point starts from that saved drive state (docs/state.md)."""
    import dataclasses

    from ..experiments.runner import run_sweep
    from ..experiments.sweep import Sweep

    _use_traces(traces)
    sweep = Sweep.load(file)
    if state is not None:
        # As one more [set] line, with the path made absolute: the points' workers may run
        # elsewhere. A state the base config cannot take is refused here, before any point.
        if not Path(state).is_file():
            raise UserError(
                f"--state {state}: no such file (make one with `ssdlab precondition --save`)"
            )
        where = toml_string(str(Path(state).resolve()))
        sweep = dataclasses.replace(sweep, fixed=(*sweep.fixed, f"precondition.state={where}"))
        sweep.base_config_json()
    if dry_run:
        _dry_run(sweep, out)
        return
    try:
        outcome = run_sweep(
            sweep,
            out,
            executor=executor,
            workers=workers,
            address=address,
            retry_failed=retry_failed,
            progress=_bar(sweep.name, quiet),
        )
    except KeyboardInterrupt:
        # Ctrl-C or SIGTERM: the runner has written the table of the finished points.
        _say_partial(sweep, out)
        raise
    if not quiet:
        console = _stdout()
        console.print(Text(_summary(outcome)))
        console.print(Text("results: " + ", ".join(str(p) for p in outcome.tables)))
    code = _report_failures(outcome)
    if code:
        raise typer.Exit(code)


def _say_partial(sweep: Any, out: Path) -> None:
    """What an interrupted sweep kept: its finished points, in the table beside them."""
    from ..experiments.results import read_point

    points = sweep.points()
    done = sum(1 for p in points if (read_point(out, p.id) or {}).get("status") in ("ok", "failed"))
    reason = stop_reason()
    sys.stderr.write(
        f"partial result: {reason}, {done} of {len(points)} points done; the tables in {out}"
        " cover them, and the same command runs the rest\n"
    )


def _dry_run(sweep: Any, out: Path) -> None:
    from ..experiments.results import read_point

    points = sweep.points()
    table = Table(title=f"{sweep.name}: {len(points)} points", title_justify="left")
    for column in ("point", "id", *(a.column for a in sweep.axes), "seed", "in DIR"):
        table.add_column(column, justify="right" if column in ("point", "seed") else "left")
    for point in points:
        record = read_point(out, point.id) if out.is_dir() else None
        state = (record or {}).get("status", "-")
        table.add_row(
            str(point.index),
            point.id,
            *(Text(str(point.params[a.column])) for a in sweep.axes),
            str(point.seed),
            state,
        )
    _stdout().print(table)


# --------------------------------------------------------------------------------------------
# plot


def plot_command(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="A sweep output directory.")],
    view: Annotated[
        str,
        typer.Argument(
            metavar="VIEW",
            help="bandwidth, iops, latency, latency-cdf, waf, erases, throughput or metric.",
        ),
    ],
    x: Annotated[str | None, typer.Option("--x", help="Column on the x axis.")] = None,
    y: Annotated[
        str | None,
        typer.Option("--y", help="Column on the y axis (metric; throughput: 'iops')."),
    ] = None,
    hue: Annotated[str | None, typer.Option("--hue", help="One line per value of this.")] = None,
    op: Annotated[str | None, typer.Option("--op", help="read, write or trim.")] = None,
    where: Annotated[
        list[str] | None,
        typer.Option("--where", metavar="COLUMN=VALUE", help="Keep matching runs (repeatable)."),
    ] = None,
    logx: Annotated[
        bool | None, typer.Option("--logx/--linx", help="Log or linear x (default: by data).")
    ] = None,
    logy: Annotated[bool | None, typer.Option("--logy/--liny", help="Log or linear y.")] = None,
    bins: Annotated[int, typer.Option("--bins", help="Time bins of throughput.")] = 100,
    title: Annotated[str | None, typer.Option("--title", help="Figure title.")] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", metavar="FILE", help="Default: DIR/plots/VIEW.FORMAT."),
    ] = None,
    fmt: Annotated[str | None, typer.Option("--format", help="png or svg.")] = None,
) -> None:
    """Draw a common view of a sweep as PNG or SVG."""
    from ..experiments.plots import make_plot, save_figure

    if fmt is not None and fmt not in ("png", "svg"):
        raise ExperimentError(f"--format {fmt}: expected png or svg")
    figure = make_plot(
        directory,
        view,
        x=x,
        y=y,
        hue=hue,
        op=op,
        where=where or (),
        logx=logx,
        logy=logy,
        bins=bins,
        title=title,
    )
    if out is None:
        kind = fmt or "png"
        name = view + (f"-{op}" if op else "")
        out = directory / "plots" / f"{name}.{kind}"
    elif fmt is None and out.suffix.lower() not in (".png", ".svg"):
        raise ExperimentError(f"--out {out}: expected a .png or .svg file, or --format")
    path = save_figure(figure, out, fmt)
    _stdout().print(Text(str(path)))


# --------------------------------------------------------------------------------------------
# report


def report_command(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="A sweep output directory.")],
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", metavar="FILE", help="Default: DIR/report.html."),
    ] = None,
) -> None:
    """Write one self-contained HTML page: figures, results, configuration, provenance."""
    from ..experiments.report import write_report

    path = write_report(directory, out)
    _stdout().print(Text(str(path)))


# --------------------------------------------------------------------------------------------
# reproduce


def _fmt_number(value: Any) -> str:
    from ..experiments.report import significant

    return significant(value)


def _list_experiments() -> None:
    from ..reproduce import experiments

    table = Table(title="reproductions", title_justify="left")
    table.add_column("name", style="bold", no_wrap=True)
    table.add_column("document")
    table.add_column("target")
    table.add_column("what it runs")
    for experiment in experiments():
        table.add_row(
            Text(experiment.name),
            Text(f"{experiment.document}: {experiment.title}"),
            Text(experiment.target),
            Text(experiment.summary),
        )
    _stdout().print(table)


def _print_reproduction(reproduction: Any) -> None:
    """One experiment's comparison table (or overview), its tally of predictions, its notes."""
    from ..reproduce import scoreboard

    experiment = reproduction.experiment
    console = _stdout()
    if reproduction.overview is not None:
        headers, cells = reproduction.overview
        view = Table(title=f"{experiment.name}: {experiment.target}", title_justify="left")
        for i, header in enumerate(headers):
            view.add_column(header, justify="left" if i < 2 else "right")
        for line in cells:
            view.add_row(*line)
        console.print(view)
    else:
        table = Table(
            title=f"{experiment.name}: {experiment.document} {experiment.target}",
            title_justify="left",
        )
        for column, justify in (
            ("metric", "left"),
            ("unit", "left"),
            ("document", "right"),
            ("ssdlab", "right"),
            ("difference", "right"),
            ("label", "left"),
            ("document's number", "left"),
            ("note", "left"),
        ):
            table.add_column(column, justify=justify)  # type: ignore[arg-type]
        for row in reproduction.rows:
            table.add_row(
                Text(row.metric),
                Text(row.unit),
                _fmt_number(row.paper),
                _fmt_number(row.ssdlab),
                scoreboard.format_difference(row),
                Text(row.label),
                Text(row.basis),
                Text(row.note),
            )
        console.print(table)
        console.print(
            Text(
                "difference = ssdlab / document - 1 (where the document's value is 0: ssdlab -"
                " document); label: prediction, calibrated, input or derived",
                style="dim",
            )
        )
        if any(row.compared for row in reproduction.rows):
            console.print(Text(scoreboard.tally(reproduction.rows).line()), soft_wrap=True)
    for note in experiment.notes:
        console.print(Text(f"note: {note}", style="dim"))
    written = [*reproduction.plots]
    if reproduction.report is not None:
        written.append(reproduction.report)
    console.print(
        Text(
            f"output: {reproduction.out_dir}"
            + ("; " + ", ".join(str(p) for p in written) if written else "")
        )
    )


def _print_scoreboard(reproductions: list[Any], markdown: bool) -> None:
    """Every reproduction's compared rows in one table, and the count of predictions within
    15 % (issue 14 point 8)."""
    from ..reproduce import scoreboard

    board = scoreboard.entries(reproductions)
    if markdown:
        sys.stdout.write(scoreboard.markdown(board))
        return
    console = _stdout()
    table = Table(title="fidelity scoreboard", title_justify="left")
    # The spread column is filled by the sensitivity runs (scripts/fidelity.py), not by these.
    shown = [
        i
        for i, header in enumerate(scoreboard.HEADERS)
        if header != "over seeds and assumptions" or any(e.row.figure_range for e in board)
    ]
    for i in shown:
        header = scoreboard.HEADERS[i]
        right = header in ("document value", "ssdlab", "difference")
        table.add_column(header, justify="right" if right else "left")
    for entry in board:
        cells = scoreboard.cells(entry)
        table.add_row(*(Text(cells[i]) for i in shown))
    console.print(table)
    console.print(Text(scoreboard.tally(e.row for e in board).line()), soft_wrap=True)


def reproduce_command(
    name: Annotated[
        str | None, typer.Argument(metavar="NAME", help="An experiment (see --list).")
    ] = None,
    list_: Annotated[
        bool, typer.Option("--list", help="List the experiments and what each targets.")
    ] = False,
    all_: Annotated[
        bool,
        typer.Option("--all", help="Run every experiment, each into DIR/NAME (see --out)."),
    ] = False,
    summary: Annotated[
        bool,
        typer.Option(
            "--summary",
            help="Print one table of the rows held against the document (document, figure,"
            " metric, values, difference, label) and the count of predictions within 15 %,"
            " instead of every row.",
        ),
    ] = False,
    markdown: Annotated[
        bool,
        typer.Option("--markdown", help="With --summary: print the table as Markdown."),
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            metavar="DIR",
            help="Default: out/reproduce/NAME (with --all: out/reproduce, one directory per"
            " experiment).",
        ),
    ] = None,
    json_out: Annotated[
        Path | None,
        typer.Option("--json", metavar="OUT", help="Write the comparison rows as JSON ('-')."),
    ] = None,
    executor: Executor = "local",
    workers: Workers = None,
    address: Address = None,
    quiet: Quiet = False,
    traces: Traces = None,
) -> None:
    """Run a shipped experiment and set the document's numbers beside ssdlab's."""
    _use_traces(traces)
    if list_:
        if name is not None:
            raise ExperimentError("give NAME or --list, not both")
        if all_:
            raise ExperimentError("give --all or --list, not both")
        _list_experiments()
        return
    if all_ and name is not None:
        raise ExperimentError(f"give NAME or --all, not both (got NAME {name!r} and --all)")
    if name is None and not all_:
        raise ExperimentError(
            "missing NAME: expected an experiment or --all (ssdlab reproduce --list)"
        )
    if markdown and not summary:
        raise ExperimentError("--markdown: expected together with --summary")
    from ..reproduce import experiments, get, run_experiment

    names = [e.name for e in experiments()] if all_ else [get(name).name]  # type: ignore[arg-type]
    reproductions = []
    failed: list[tuple[str, str, str]] = []
    for number, each in enumerate(names, 1):
        if all_:
            directory = (out if out is not None else Path("out") / "reproduce") / each
        else:
            directory = out if out is not None else Path("out") / "reproduce" / each
        try:
            reproduction = run_experiment(
                each,
                directory,
                executor=executor,
                workers=workers,
                address=address,
                # --all: which experiment of how many, as well as its own points.
                progress=_bar(f"{each} ({number}/{len(names)})" if all_ else each, quiet),
            )
        except KeyboardInterrupt:
            reason = stop_reason()
            sys.stderr.write(
                f"partial result: {reason} in {each}, {number - 1} of {len(names)} experiments"
                f" done; the finished points are kept in {directory}, and the same command"
                " runs the rest\n"
            )
            raise
        reproductions.append(reproduction)
        failed += [(each, point, error) for point, error in reproduction.failed]
    to_stdout = json_out is not None and str(json_out) == "-"
    if json_out is not None:
        if all_:
            import json

            rows = [row.to_dict() for r in reproductions for row in r.rows]
            text = json.dumps(rows, indent=2, ensure_ascii=False) + "\n"
        else:
            text = reproductions[0].to_json()
        if to_stdout:
            sys.stdout.write(text)
        else:
            json_out.parent.mkdir(parents=True, exist_ok=True)
            write_output_text(json_out, text)
    if not quiet and not to_stdout:
        if summary:
            _print_scoreboard(reproductions, markdown)
        else:
            for reproduction in reproductions:
                _print_reproduction(reproduction)
    if failed:
        for each, point, error in failed[:MAX_LISTED_FAILURES]:
            where = f"{each}: " if all_ else ""
            sys.stderr.write(f"failed: {where}point {point}: {' '.join(error.split())}\n")
        which = names[0] if len(names) == 1 else f"{len({f[0] for f in failed})} experiments"
        sys.stderr.write(f"error: {len(failed)} runs of {which} failed\n")
        raise typer.Exit(EXIT_RUNS_FAILED)


def register(app: typer.Typer) -> None:
    """Add the experiment commands to the ``ssdlab`` app."""
    app.command("sweep")(sweep_command)
    app.command("plot")(plot_command)
    app.command("report")(report_command)
    app.command("reproduce")(reproduce_command)
