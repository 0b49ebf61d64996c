"""The ``ssdlab`` command.

User errors (a bad configuration, job, flag or file) end with one line ``error: <message>`` on
stderr and exit code 2, never a traceback; an interrupted run prints ``interrupted`` and exits 130.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from .. import SimulationError, __version__, _core
from ..api import (
    BENCH_IO_COUNT,
    MAX_SEED,
    Config,
    Job,
    Result,
    Trace,
    config_schema,
    partial_result,
    preset_toml,
    presets,
    run,
    without_unused_fields,
)
from ..files import write_output_text
from .example import register as register_example
from .experiments import register as register_experiments
from .imports import register as register_import
from .nvme import register as register_nvme
from .options import Interface, Overrides, State, UserError, check_overrides
from .progress import progress_bar, with_estimate
from .serve import register as register_serve
from .stopping import STOPPED_BY, on_sigterm, stop_reason
from .swap import register as register_swap
from .table import key_value_table, print_result
from .trace import register as register_trace

EXIT_INTERNAL_ERROR = 1
EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130

DEMO_PRESET = "small-tlc"
DEMO_JOB: dict[str, Any] = {
    "name": "demo",
    "rw": "randrw",
    "rwmixread": 70,
    "bs": "4KiB",
    "iodepth": 16,
    "io_count": 20_000,
}


app = typer.Typer(
    name="ssdlab",
    help="A fast, deterministic simulator of solid-state storage architectures.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
config_app = typer.Typer(
    help="Show resolved configurations and preset files.",
    no_args_is_help=True,
)
app.add_typer(config_app, name="config")


def _stdout() -> Console:
    # Piped output gets a fixed width so tables are not squeezed into 80 columns.
    return Console() if sys.stdout.isatty() else Console(width=120)


def _version_callback(value: bool) -> None:
    if value:
        print(f"ssdlab {_core.version()}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_version_callback,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    """A fast, deterministic simulator of solid-state storage architectures."""


# --------------------------------------------------------------------------------------------
# helpers


def parse_bs(text: str) -> str | dict[str, float]:
    """``4KiB`` is one block size; ``4KiB:70,64KiB:30`` is a weighted mix (fio's bssplit)."""
    if ":" not in text and "," not in text:
        return text
    mix: dict[str, float] = {}
    for part in text.split(","):
        size, sep, weight = part.partition(":")
        try:
            value = float(weight) if sep else None
        except ValueError:
            value = None
        if not size.strip() or value is None:
            raise UserError(f"bad --bs {text!r}: expected SIZE or SIZE:WEIGHT,SIZE:WEIGHT,...")
        mix[size.strip()] = int(value) if value.is_integer() else value
    return mix


def _load_config(
    spec: str,
    overrides: Sequence[str] | None,
    interface: str | None = None,
    state: str | None = None,
) -> Config:
    return Config.load(spec, check_overrides(overrides, interface, state))


def _build_job(job_file: Path | None, flags: dict[str, Any]) -> Job:
    """The job from --job (if any), with every flag that was given replacing its field."""
    fields: dict[str, Any] = {}
    if job_file is not None:
        if not job_file.exists():
            raise UserError(f"job file not found: {job_file}")
        # Not only a regular file: `--job /dev/stdin`. The reader bounds what it reads.
        fields = Job.load(job_file).to_dict()
    fields.update({key: value for key, value in flags.items() if value is not None})
    return Job.from_dict(fields)


def _load_flows(job_file: Path | None, flags: dict[str, Any]) -> list[Job] | None:
    """The flows of a --job file of ``[[flow]]`` tables (None for a file of one job), with
    every flag that was given replacing its field in each flow."""
    from ..flows import is_flows_file, load_flows

    if job_file is None or not job_file.is_file():
        return None
    text = job_file.read_text(encoding="utf-8-sig", errors="replace")
    if not is_flows_file(text):
        return None
    given = {key: value for key, value in flags.items() if value is not None}
    return [Job.from_dict({**job.to_dict(), **given}) for job in load_flows(job_file)]


def _write_json(path: Path, text: str) -> None:
    if str(path) == "-":
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written as the core returned it, so two runs can be compared byte for byte.
    write_output_text(path, text)


@contextmanager
def _keep_partial(json_out: Path | None, quiet: bool) -> Iterator[None]:
    """A run stopped by Ctrl-C or SIGTERM keeps what it measured, as fio does: the core hands
    the result of the requests completed so far with ``Interrupted``; it is printed and written
    to --json marked ``"partial": {"reason": ...}`` (its ``sim.stop_reason`` is "interrupted"),
    and the command still ends as interrupted (exit 130)."""
    try:
        yield
    except _core.Interrupted as error:
        partial = partial_result(error)
        if partial is not None:
            data = partial.to_dict()
            reason = stop_reason()
            data["partial"] = {"reason": reason}
            if json_out is not None:
                _write_json(json_out, json.dumps(data, indent=2))
            if not quiet and not (json_out is not None and str(json_out) == "-"):
                print_result(data, _stdout())
            completed = (data.get("sim") or {}).get("requests", 0)
            sys.stderr.write(
                f"partial result: {reason}, {completed:,} requests completed"
                + (f" (written to {json_out})" if json_out is not None else "")
                + "\n"
            )
        raise


def _check_stats_interval(text: str | None) -> None:
    """``--stats-interval``: a positive duration, named as the option (the core's message
    names the API's argument)."""
    if text is None:
        return
    try:
        seconds = float(_core.parse_duration_s(text))
    except ValueError as error:
        raise UserError(f"--stats-interval: {error}") from None
    if seconds <= 0:
        raise UserError(f'--stats-interval: got "{text}", expected a positive duration such as 1ms')


def _run_with_progress(
    config: Config,
    job: Job | list[Job] | Trace,
    seed: int,
    quiet: bool,
    stats_interval: str | None = None,
    cut: dict[str, Any] | None = None,
) -> Result:
    _check_stats_interval(stats_interval)
    cut = cut or {}
    with progress_bar(enabled=not quiet) as progress:
        if isinstance(job, Trace):
            return run(
                config,
                seed=seed,
                progress=progress,
                trace=job,
                stats_interval=stats_interval,
                **cut,
            )
        return run(config, job, seed=seed, progress=progress, stats_interval=stats_interval, **cut)


#: A job of a fio file whose simulated length is at least this (s) has it said before it starts.
LONG_SIMULATION_S = 1.0


def _fio_overrides(overrides: Sequence[str] | None) -> tuple[list[str], list[tuple[str, str]]]:
    """``--set job.OPTION=VALUE`` are fio options for every job of a ``--fio`` file; the other
    ``--set`` are the config's."""
    config, job = [], []
    for item in overrides or []:
        if item.startswith("job."):
            key, sep, value = item[len("job.") :].partition("=")
            if not sep or not key.strip():
                raise UserError(f"bad --set {item!r}: expected job.OPTION=VALUE, e.g. job.size=1g")
            job.append((key.strip(), value.strip()))
        else:
            config.append(item)
    return config, job


def _simulated_length(job: Any) -> str | None:
    """What bounds a fio job, when it is long enough to say: its runtime or request count."""
    fields = job.model_fields()
    runtime = fields.get("runtime")
    if runtime is not None:
        seconds = float(_core.parse_duration_s(str(runtime)))
        if seconds >= LONG_SIMULATION_S:
            return f"up to {seconds:g} s of simulated time (runtime={job.options.get('runtime')})"
    return None


def _run_fio(
    config: Config,
    path: Path,
    seed: int,
    quiet: bool,
    output_format: str,
    json_out: Path | None,
    job_overrides: Sequence[tuple[str, str]] = (),
    fields: dict[str, Any] | None = None,
    fit: str | None = None,
    terse_version: int = 3,
    log_dir: Path | None = None,
) -> None:
    """Run a fio job file: the jobs of a group together on one drive, the groups one after
    another on it (one run of flows); print fio's report (text or JSON) and keep each job's
    result with --json.
    ``job_overrides`` are fio options for every job (``--set job.OPTION=VALUE``, fio's grammar);
    ``fields`` job fields for every job (``--size`` and the other flags, ssdlab's grammar); both
    replace what the file says."""
    from .. import fio, fio_logs

    formats = _output_formats(output_format)
    if terse_version not in fio.TERSE_VERSIONS:
        raise UserError(
            f"--terse-version {terse_version}: expected one of"
            f" {', '.join(map(str, fio.TERSE_VERSIONS))} (fio's 2 has another layout)"
        )
    if fit not in (None, "none", "scale"):
        raise UserError(f"--fit {fit!r} with --fio: expected scale or none (wrap is a trace's)")
    capacity = int(_core.job_capacity(config.to_json()))
    cores = int((config.to_dict().get("host") or {}).get("cores") or 1)
    try:
        parsed = fio.load(path, capacity=capacity, ncpus=cores, overrides=job_overrides)
        for job in parsed.jobs:
            for key, value in (fields or {}).items():
                job.fields[key] = value
                if key in ("size", "offset"):
                    job.where[key] = "--" + key
                    job.options[key] = str(value)
            if fields:
                job.job()  # the flags' values, checked as the core checks a job
        notes = fio.fit_to_drive(parsed, capacity, fit == "scale", config)
        priority_warning = fio.priority_warning(parsed, config)
        if priority_warning is not None:
            parsed.warnings.append(priority_warning)
        # The log files the file asks for (write_lat_log, ...), checked before the run.
        logs, log_notes = fio_logs.plan(parsed, log_dir if log_dir is not None else Path.cwd())
        notes += log_notes
    except fio.FioError as error:
        raise UserError(str(error)) from None
    except _core.SsdlabError as error:
        raise UserError(f"{path}: {error}") from None
    for warning in parsed.warnings:
        sys.stderr.write(f"warning: {warning}\n")
    for note in notes:
        sys.stderr.write(f"note: {note}\n")
    # fio's JSON and terse figures (stddev, percentiles, buckets, depths) come from each
    # request's record.
    # The log files too.
    record = bool(formats & {"json", "json+", "terse"}) or bool(logs)
    lengths = [(job.name, _simulated_length(job)) for job in parsed.jobs]
    for name, length in lengths:
        if length is not None and not quiet:
            sys.stderr.write(f"[{name}]: {length}\n")
    # One run: the jobs of a group together on the device, the groups one after another.
    label = f"[{parsed.jobs[0].name}]" if len(parsed.jobs) == 1 else f"[{path.name}]"
    with progress_bar(enabled=not quiet) as progress:
        callback = with_estimate(progress, label, sys.stderr) if not quiet else progress
        try:
            if len(parsed.jobs) == 1:
                whole = run(
                    config,
                    parsed.jobs[0].job(),
                    seed=seed,
                    progress=callback,
                    record_requests=record,
                )
                each = [whole]
            else:
                whole = run(
                    config,
                    [job.job() for job in parsed.jobs],
                    seed=seed,
                    progress=callback,
                    record_requests=record,
                )
                each = whole.flows
        except (_core.JobError, _core.ConfigError) as error:
            # What the drive refuses of a job (zonemode=zbd on a drive without zones): at the
            # line of the option, as the file's other errors; with several jobs, the core's
            # error says which flow (`flow`, its index: the jobs' order in the file).
            flow = getattr(error, "flow", None)
            culprit = (
                parsed.jobs[flow]
                if isinstance(flow, int) and 0 <= flow < len(parsed.jobs)
                else parsed.jobs[0]
                if len(parsed.jobs) == 1
                else None
            )
            if culprit is None:
                raise UserError(f"{path}: {error}") from None
            raise UserError(str(fio.job_error(culprit, error))) from None
    results = [result.to_dict() for result in each]
    records = [result.record_bytes for result in each]
    if json_out is not None:
        _write_json(json_out, json.dumps(results, indent=2))
    try:
        fio_logs.write(parsed, logs, records, [fio_logs.measured_window(r) for r in results])
    except OSError as error:
        raise UserError(f"writing fio's logs: {_describe_os_error(error)}") from None
    # fio writes its formats in this order whatever the order asked: terse, JSON, normal.
    if record:
        report = fio.to_json(parsed, results, __version__, records, "json+" in formats)
        if "terse" in formats:
            sys.stdout.write(fio.to_terse(parsed, report, terse_version))
        if formats & {"json", "json+"}:
            sys.stdout.write(json.dumps(report, indent=2) + "\n")
    if "normal" in formats and not (quiet and formats == {"normal"}):
        sys.stdout.write(fio.to_text(parsed, results))


#: fio's --output-format names (fio 3.33: a comma-separated list of them).
OUTPUT_FORMATS = ("normal", "terse", "json", "json+")


def _output_formats(text: str) -> set[str]:
    """fio's ``--output-format``: one of :data:`OUTPUT_FORMATS` or several, comma-separated
    (``normal,json``), as fio 3.33 takes it."""
    names = [part.strip() for part in text.split(",")]
    bad = [name for name in names if name not in OUTPUT_FORMATS]
    if bad or not names:
        raise UserError(
            f"--output-format {text!r}: {bad[0]!r} is not a format; expected"
            f" {', '.join(OUTPUT_FORMATS)}, or several of them comma-separated (normal,json)"
        )
    return set(names)


#: A timed replay whose timestamps are this coarse (µs, after --time-scale) or coarser, with
#: more than one request per tick on average, sends bursts: a device serves 4 KiB in tens of µs.
COARSE_TIMESTAMPS_US = 1000.0


def _warn_coarse_timestamps(trace: str, result: dict[str, Any]) -> None:
    """Warn when a timed replay's trace has timestamps so coarse that many requests share one
    (the Tencent CBS sample is in whole seconds): each tick's requests then arrive at one
    instant and their latencies measure the burst's queue, not the workload's."""
    outcome = result.get("trace") or {}
    resolution_us = outcome.get("time_resolution_us")
    if outcome.get("mode") != "timed" or not isinstance(resolution_us, int | float):
        return
    scaled_us = resolution_us * float(outcome.get("time_scale") or 1.0)
    ticks = float(outcome.get("duration_s") or 0.0) * 1e6 / resolution_us + 1
    per_tick = int(outcome.get("per_pass") or 0) / ticks
    if scaled_us < COARSE_TIMESTAMPS_US or per_tick <= 1:
        return
    sys.stderr.write(
        f"warning: {trace}: the timestamps are whole multiples of {_fmt_us(scaled_us)}"
        f" ({per_tick:,.0f} requests per tick on average), so a timed replay sends each tick's"
        " requests at one instant and their latencies include that burst's queue; --mode afap"
        " replays the trace closed loop at --iodepth instead\n"
    )


def _fmt_us(value: float) -> str:
    if value >= 1e6:
        return f"{value / 1e6:g} s"
    if value >= 1e3:
        return f"{value / 1e3:g} ms"
    return f"{value:g} µs"


def _build_trace(trace: str, flags: dict[str, Any], job_flags: dict[str, Any]) -> Trace:
    given = [flag for flag, value in job_flags.items() if value is not None]
    if given:
        raise UserError(f"{', '.join(given)} describe a synthetic job and cannot go with --trace")
    return Trace(trace, **{key: value for key, value in flags.items() if value is not None})


# --------------------------------------------------------------------------------------------
# commands


Seed = Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Random seed of the run.")]
JsonOut = Annotated[
    Path | None,
    typer.Option("--json", metavar="OUT", help="Write the result JSON to OUT ('-': stdout)."),
]


@app.command("run")
def run_command(
    config: Annotated[
        str, typer.Argument(metavar="CONFIG|PRESET", help="A preset name or a TOML file.")
    ],
    job_file: Annotated[
        Path | None,
        typer.Option("--job", metavar="FILE", help="Job TOML file; the flags below override it."),
    ] = None,
    fio_file: Annotated[
        Path | None,
        typer.Option(
            "--fio",
            metavar="FILE",
            help="A fio job file (INI: [global], job sections, stonewall groups); reported per"
            " job and per group as fio does (see docs/fio.md). The job flags below (--size,"
            " --runtime, ...) replace the file's value in every job; --set job.OPTION=VALUE sets a"
            " fio option in every job, in fio's grammar; --fit scale shrinks the file's sizes and"
            " offsets to the drive.",
        ),
    ] = None,
    output_format: Annotated[
        str,
        typer.Option(
            "--output-format",
            metavar="normal|terse|json|json+",
            help="With --fio: fio's text report (normal), fio's terse line per job (terse),"
            " fio's JSON (json) or JSON with the latency histogram's bins (json+); several"
            " comma-separated (normal,json), written in fio's order: terse, JSON, normal.",
        ),
    ] = "normal",
    terse_version: Annotated[
        int,
        typer.Option(
            "--terse-version",
            help="With --fio --output-format terse: fio's terse layout, 3 (fio's default),"
            " 4 (with trim) or 5 (with bw and IOPS samples).",
        ),
    ] = 3,
    log_dir: Annotated[
        Path | None,
        typer.Option(
            "--log-dir",
            help="With --fio: the folder for the files of write_lat_log, write_bw_log and"
            " write_iops_log (default: the working directory, as fio); nothing is written"
            " outside it.",
        ),
    ] = None,
    name: Annotated[str | None, typer.Option(help="Job name.")] = None,
    rw: Annotated[
        str | None,
        typer.Option(help="read, write, randread, randwrite, randrw, rw, trim or randtrim."),
    ] = None,
    bs: Annotated[
        str | None,
        typer.Option(
            help="Block size (4KiB) or a mix (4KiB:70,64KiB:30). Sizes here: KiB, MiB, k, m are"
            " powers of 1024, KB, MB powers of 1000 (fio's kb_base=1000 reading of KiB and KB;"
            " in a fio file, 4KB is 4096 B and 4KiB 4000 B unless it sets kb_base=1000)."
        ),
    ] = None,
    iodepth: Annotated[int | None, typer.Option(help="Requests in flight per job.")] = None,
    ioengine: Annotated[
        str | None,
        typer.Option(
            help="fio engine: libaio (default), io_uring, psync, sync (one in flight), "
            "posixaio (one per job at the device, glibc's queue per file).",
        ),
    ] = None,
    iodepth_batch: Annotated[
        int | None,
        typer.Option("--iodepth-batch", help="Requests per submitting system call (1..iodepth)."),
    ] = None,
    iodepth_low: Annotated[
        int | None,
        typer.Option("--iodepth-low", help="Refill when in-flight drops to this (1..iodepth)."),
    ] = None,
    rwmixread: Annotated[int | None, typer.Option(help="Percentage of reads in a mix.")] = None,
    numjobs: Annotated[
        int | None,
        typer.Option(help="Job instances; instance k uses NVMe queue k mod interface.io_queues."),
    ] = None,
    size: Annotated[
        str | None, typer.Option(help="Region size (default: the device); units as for --bs.")
    ] = None,
    offset: Annotated[str | None, typer.Option(help="Start of the region.")] = None,
    runtime: Annotated[str | None, typer.Option(help="Simulated time limit, e.g. 10ms.")] = None,
    rate_iops: Annotated[
        float | None, typer.Option("--rate-iops", help="Open-loop arrival rate.")
    ] = None,
    io_count: Annotated[
        int | None, typer.Option("--io-count", help="Requests in total over all jobs.")
    ] = None,
    ramp: Annotated[str | None, typer.Option(help="Warm-up time excluded from results.")] = None,
    stats_interval: Annotated[
        str | None,
        typer.Option(
            "--stats-interval",
            help="Sample the device's state (free blocks, GC, write amplification, requests in"
            " flight) every this much simulated time, e.g. 1ms: the result's samples (see"
            " docs/jobs.md).",
        ),
    ] = None,
    distribution: Annotated[
        str | None,
        typer.Option(
            help="Offset distribution: uniform, zipf:THETA, zoned:A/R%:... or zoned_abs:A/SIZE:..."
        ),
    ] = None,
    stream: Annotated[
        int | None,
        typer.Option(
            help="Write stream the job's writes carry (NVMe Streams directive), below the"
            " device's ftl.streams."
        ),
    ] = None,
    trace: Annotated[
        str | None,
        typer.Option(
            "--trace",
            metavar="FILE",
            help="Replay a trace file (plain, gz, bz2, xz) or model:NAME instead of a job.",
            rich_help_panel="Trace replay",
        ),
    ] = None,
    trace_format: Annotated[
        str | None,
        typer.Option(
            "--format",
            metavar="NAME",
            help="Trace format (default: found from content); see `ssdlab trace formats`.",
            rich_help_panel="Trace replay",
        ),
    ] = None,
    mode: Annotated[
        str | None,
        typer.Option(
            help="timed (arrivals at trace times) or afap (closed loop, --iodepth in flight).",
            rich_help_panel="Trace replay",
        ),
    ] = None,
    time_scale: Annotated[
        float | None,
        typer.Option(
            "--time-scale",
            help="Multiply trace times by this (0.5: twice as fast).",
            rich_help_panel="Trace replay",
        ),
    ] = None,
    device: Annotated[
        list[str] | None,
        typer.Option(
            "--device",
            metavar="LIST",
            help="Only these devices/volumes/ASUs: 0,2-5 (blkparse: 8:0).",
            rich_help_panel="Trace replay",
        ),
    ] = None,
    layout: Annotated[
        str | None,
        typer.Option(
            help="auto, overlay or side-by-side: how several devices share the drive.",
            rich_help_panel="Trace replay",
        ),
    ] = None,
    fit: Annotated[
        str | None,
        typer.Option(
            help="wrap, scale or none: a trace larger than the drive; with --fio, scale or none:"
            " a job file larger than the drive.",
            rich_help_panel="Trace replay",
        ),
    ] = None,
    start: Annotated[
        str | None,
        typer.Option(help="Skip trace time before this, e.g. 10s.", rich_help_panel="Trace replay"),
    ] = None,
    stop: Annotated[
        str | None,
        typer.Option(help="Stop reading at this trace time.", rich_help_panel="Trace replay"),
    ] = None,
    repeat: Annotated[
        int | None,
        typer.Option(help="Passes over the trace.", rich_help_panel="Trace replay"),
    ] = None,
    skip_bad_lines: Annotated[
        bool,
        typer.Option(
            "--skip-bad-lines",
            help="Count and skip malformed trace lines (reported in the result).",
            rich_help_panel="Trace replay",
        ),
    ] = False,
    blkparse_event: Annotated[
        str | None,
        typer.Option(
            "--blkparse-event",
            metavar="D|Q",
            help="blkparse: replay dispatch (D) or queue (Q) events.",
            rich_help_panel="Trace replay",
        ),
    ] = None,
    lba_bytes: Annotated[
        int | None,
        typer.Option(
            "--lba-bytes",
            metavar="N",
            help="nvme traces: the namespace's logical block size (default 512).",
            rich_help_panel="Trace replay",
        ),
    ] = None,
    ignore_placement: Annotated[
        bool,
        typer.Option(
            "--ignore-placement",
            help="nvme traces: send writes without their stream or placement directive.",
            rich_help_panel="Trace replay",
        ),
    ] = False,
    end_flush: Annotated[
        bool,
        typer.Option(
            "--end-flush",
            help="Send one Flush once the trace's last request has completed (fio's"
            " end_fsync): a write-back cache buffer writes every dirty line to the media.",
            rich_help_panel="Trace replay",
        ),
    ] = False,
    power_cut_event: Annotated[
        int | None,
        typer.Option(
            "--power-cut-event",
            metavar="N",
            min=1,
            help="Cut the power after the device's Nth event and report the recovery and what"
            " was lost (the result's power_loss; docs/power-loss.md). On a fusion config with"
            " [hfsl]: HFSL's cut and restart (hfsl.power_cut_event).",
        ),
    ] = None,
    power_cut_at: Annotated[
        str | None,
        typer.Option(
            "--power-cut-at",
            metavar="TIME",
            help="Cut the power at this simulated time (e.g. 2ms) and report the recovery and"
            " what was lost (page-mapped FTL; docs/power-loss.md).",
        ),
    ] = None,
    restart_cut_event: Annotated[
        int | None,
        typer.Option(
            "--restart-cut-event",
            metavar="N",
            min=1,
            help="With --power-cut-event: cut the restart too, after its Nth event, and restart"
            " again (hfsl.restart_cut_event).",
        ),
    ] = None,
    overrides: Overrides = None,
    interface: Interface = None,
    state: State = None,
    seed: Seed = 1,
    json_out: JsonOut = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print no table.")] = False,
) -> None:
    """Run a job (fio-style flags or --job FILE), or replay a trace (--trace FILE), on a preset
    or a configuration file."""
    fio_job_overrides: list[tuple[str, str]] = []
    if fio_file is not None:
        overrides, fio_job_overrides = _fio_overrides(overrides)
    resolved = _load_config(config, overrides, interface, state)
    under_hfsl = resolved.to_dict().get("hfsl") is not None
    # The page-mapped FTL's cut (run options); HFSL's is a config key.
    cut: dict[str, Any] = {"power_cut_event": None, "power_cut_at": power_cut_at}
    if power_cut_event is not None and under_hfsl:
        resolved = resolved.set("hfsl.power_cut_event", power_cut_event)
    elif power_cut_event is not None:
        cut["power_cut_event"] = power_cut_event
    if power_cut_at is not None and under_hfsl:
        raise UserError(
            f"--power-cut-at: config {resolved.name!r} drives a fusion device with HFSL, whose"
            " cut is --power-cut-event N"
        )
    if restart_cut_event is not None:
        if not under_hfsl:
            raise UserError(
                f"--restart-cut-event: config {resolved.name!r} has no [hfsl]; only HFSL"
                " restarts after a cut"
            )
        if power_cut_event is None:
            raise UserError(
                "--restart-cut-event: only a restart after a cut can be cut; give"
                " --power-cut-event N too"
            )
        resolved = resolved.set("hfsl.restart_cut_event", restart_cut_event)

    def job_flags() -> dict[str, Any]:
        # The job's fields the flags give (None: not given), for --fio and for a job alike.
        return {
            "rw": rw,
            "bs": parse_bs(bs) if bs is not None else None,
            "iodepth": iodepth,
            "ioengine": ioengine,
            "iodepth_batch": iodepth_batch,
            "iodepth_low": iodepth_low,
            "numjobs": numjobs,
            "size": size,
            "offset": offset,
            "runtime": runtime,
            "rate_iops": rate_iops,
            "io_count": io_count,
            "ramp": ramp,
            "distribution": distribution,
            "rwmixread": rwmixread,
            "stream": stream,
        }

    if fio_file is not None:
        if cut["power_cut_event"] is not None or power_cut_at is not None:
            raise UserError(
                "--power-cut-event/--power-cut-at cannot go with --fio yet; give the job with"
                " --job or the flags"
            )
        refused = [
            flag
            for flag, value in {"--job": job_file, "--trace": trace, "--name": name}.items()
            if value is not None
        ]
        if refused:
            raise UserError(
                f"{', '.join(refused)} cannot go with --fio: the job file names its jobs"
            )
        # The flags replace the field in every job of the file, in ssdlab's grammar as with
        # --job; --set job.OPTION=VALUE takes fio's (docs/fio.md).
        flags = job_flags()
        _run_fio(
            resolved,
            fio_file,
            seed,
            quiet,
            output_format,
            json_out,
            fio_job_overrides,
            {k: v for k, v in flags.items() if v is not None},
            fit,
            terse_version,
            log_dir,
        )
        return
    if output_format != "normal":
        raise UserError(f"--output-format {output_format}: only with --fio (see --json)")
    if log_dir is not None:
        raise UserError("--log-dir: only with --fio (the folder of a job file's write_*_log files)")
    trace_flags: dict[str, Any] = {
        "--format": trace_format,
        "--mode": mode,
        "--time-scale": time_scale,
        "--device": device,
        "--layout": layout,
        "--fit": fit,
        "--start": start,
        "--stop": stop,
        "--repeat": repeat,
        "--skip-bad-lines": skip_bad_lines or None,
        "--blkparse-event": blkparse_event,
        "--lba-bytes": lba_bytes,
        "--ignore-placement": ignore_placement or None,
        "--end-flush": end_flush or None,
    }
    if trace is not None:
        replay = _build_trace(
            trace,
            {
                "name": name,
                "format": trace_format,
                "mode": mode,
                "time_scale": time_scale,
                "iodepth": iodepth,
                "queues": numjobs,
                "devices": device,
                "layout": layout,
                "fit": fit,
                "start": start,
                "stop": stop,
                "repeat": repeat,
                "io_count": io_count,
                "runtime": runtime,
                "ramp": ramp,
                "skip_bad_lines": skip_bad_lines or None,
                "blkparse_event": blkparse_event.upper() if blkparse_event else None,
                "lba_bytes": lba_bytes,
                "ignore_placement": ignore_placement or None,
                "end_flush": end_flush or None,
            },
            {
                "--job": job_file,
                "--rw": rw,
                "--bs": bs,
                "--rwmixread": rwmixread,
                "--size": size,
                "--offset": offset,
                "--rate-iops": rate_iops,
                "--distribution": distribution,
                "--stream": stream,
                "--ioengine": ioengine,
                "--iodepth-batch": iodepth_batch,
                "--iodepth-low": iodepth_low,
            },
        )
        with _keep_partial(json_out, quiet):
            result = _run_with_progress(resolved, replay, seed, quiet, stats_interval, cut)
        _warn_coarse_timestamps(trace, result.to_dict())
        if json_out is not None:
            _write_json(json_out, result.to_json())
        if not quiet and not (json_out is not None and str(json_out) == "-"):
            print_result(result.to_dict(), _stdout())
        return
    given = [flag for flag, value in trace_flags.items() if value is not None]
    if given:
        raise UserError(f"{', '.join(given)} need --trace FILE")
    flags = {"name": name, **job_flags()}
    if job_file is None and rw is None:
        raise UserError(
            "what to run: --rw (read, write, randread, randwrite, randrw, rw, trim, randtrim), "
            "a --job FILE or a --trace FILE; e.g. --rw randread --io-count 10000"
        )
    flows = _load_flows(job_file, flags)
    if flows is not None:
        # Several jobs at once (docs/jobs.md, "Flows"): the device's tables, then each flow's.
        with _keep_partial(json_out, quiet):
            result = _run_with_progress(resolved, flows, seed, quiet, stats_interval, cut)
        if json_out is not None:
            _write_json(json_out, result.to_json())
        if not quiet and not (json_out is not None and str(json_out) == "-"):
            console = _stdout()
            print_result(result.to_dict(), console)
            for flow in result.flows:
                f = flow["flow"]
                console.print(
                    f"\nflow {f['name']} (group {f['group']}, from {f['start_s']:.6f} s"
                    f" to {f['end_s']:.6f} s):"
                )
                print_result(flow.to_dict(), console)
        return
    job = _build_job(job_file, flags)
    with _keep_partial(json_out, quiet):
        result = _run_with_progress(resolved, job, seed, quiet, stats_interval, cut)
    if json_out is not None:
        _write_json(json_out, result.to_json())
    if not quiet and not (json_out is not None and str(json_out) == "-"):
        print_result(result.to_dict(), _stdout())


@app.command("demo")
def demo_command(
    seed: Seed = 1,
) -> None:
    """Run a short mixed workload on a small preset and print what comes out."""
    names = [p["name"] for p in presets()]
    if not names:
        raise UserError("no presets are available")
    preset = DEMO_PRESET if DEMO_PRESET in names else names[0]
    config = Config.load(preset)
    job = Job.from_dict(DEMO_JOB)
    console = _stdout()
    console.print(
        Text.assemble(
            ("ssdlab demo", "bold"),
            f": preset {preset}, 4 KiB random I/O, 70% reads, queue depth 16, "
            f"{DEMO_JOB['io_count']:,} requests",
        )
    )
    result = _run_with_progress(config, job, seed, quiet=False)
    print_result(result.to_dict(), console)
    console.print(
        Text(
            "\nThis was a demo. To go further:\n"
            "  ssdlab presets                  the modelled systems\n"
            f"  ssdlab config show {preset}    every knob of one of them\n"
            f"  ssdlab run {preset} --rw randwrite --bs 16KiB --io-count 100000 "
            "--set ftl.over_provisioning=0.2 --json out/run.json\n"
            "  python: ssdlab.run(ssdlab.Config.load(...), ssdlab.Job(rw=..., bs=...), seed=1)",
            style="dim",
        )
    )


@app.command("presets")
def presets_command(
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the list as JSON (name, description, source).")
    ] = False,
) -> None:
    """List the shipped presets."""
    if json_out:
        sys.stdout.write(json.dumps(presets(), indent=2, ensure_ascii=False) + "\n")
        return
    table = Table(title="presets", title_justify="left")
    table.add_column("name", style="bold", no_wrap=True)
    table.add_column("description")
    table.add_column("source")
    for preset in presets():
        table.add_row(
            Text(str(preset.get("name", ""))),
            Text(str(preset.get("description", ""))),
            Text(str(preset.get("source", ""))),
        )
    _stdout().print(table)


@config_app.command("show")
def config_show_command(
    config: Annotated[
        str, typer.Argument(metavar="NAME|FILE", help="A preset name or a TOML file.")
    ],
    overrides: Overrides = None,
    interface: Interface = None,
) -> None:
    """Print the resolved configuration (preset or file, plus overrides) as TOML, without the
    interface fields its kind does not use."""
    text = without_unused_fields(_load_config(config, overrides, interface).to_toml())
    # Plain write, not rich: TOML's [section] headers would be read as markup.
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


@config_app.command("preset")
def config_preset_command(
    name: Annotated[str, typer.Argument(help="A preset name.")],
) -> None:
    """Print a preset's TOML file as shipped, to copy and edit."""
    text = preset_toml(name)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


@config_app.command("schema")
def config_schema_command(
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Write the schema to this file instead of stdout."),
    ] = None,
) -> None:
    """Print the JSON Schema of config files, for editors (e.g. with taplo or a TOML plugin)."""
    _write_json(out if out is not None else Path("-"), config_schema())


@app.command("precondition")
def precondition_command(
    config: Annotated[str, typer.Argument(metavar="CONFIG|PRESET", help="A preset or TOML.")],
    save: Annotated[
        Path,
        typer.Option(
            "--save",
            metavar="FILE",
            help="Write the preconditioned drive's state here (written whole, then renamed).",
        ),
    ],
    overrides: Overrides = None,
    interface: Interface = None,
    state: State = None,
    seed: Seed = 1,
    json_out: JsonOut = None,
) -> None:
    """Precondition a drive as its [precondition] says and save its state, for run, serve, swap
    and sweeps to start from (--state FILE; docs/state.md)."""
    resolved = _load_config(config, overrides, interface, state)
    with progress_bar(enabled=True, description="preconditioning") as progress:
        figures = _core.precondition_to_state(resolved.to_json(), seed, str(save), progress)
    if json_out is not None:
        _write_json(json_out, figures)
        if str(json_out) == "-":
            return
    _stdout().print(key_value_table(json.loads(figures), title="precondition"))


@app.command("bench")
def bench_command(
    io_count: Annotated[
        int, typer.Option("--io-count", min=1, help="Requests per benchmark run.")
    ] = BENCH_IO_COUNT,
    seed: Seed = 1,
    json_out: JsonOut = None,
    state_file: Annotated[
        Path | None,
        typer.Option(
            "--state-file",
            metavar="FILE",
            help="Instead: time preconditioning the benchmark's drive against loading its"
            " state saved to FILE, and check that both give the same result (docs/state.md).",
        ),
    ] = None,
) -> None:
    """Measure the simulator's own speed."""
    # The raw JSON, not ssdlab.bench()'s dict, so that --json writes exactly what the core wrote.
    # Its runs (preconditioning, the timed run, GC's tail, the cached map) report one by one.
    with progress_bar(enabled=True, description="benchmark run") as progress:
        if state_file is not None:
            figures = _core.bench_state(io_count, seed, str(state_file), progress=progress)
        else:
            figures = _core.bench(io_count, seed, progress=progress)
    if json_out is not None:
        _write_json(json_out, figures)
        if str(json_out) == "-":
            return
    _stdout().print(key_value_table(json.loads(figures), title="bench"))


# sweep, plot, report, reproduce: see cli_experiments.py
register_experiments(app)
# trace stats, formats, models, generate: see cli_trace.py
register_trace(app)
register_nvme(app)  # nvme id-ctrl, id-ns, smart-log, list: see cli/nvme.py
register_serve(app)  # the live device over NBD: see cli/serve.py
register_swap(app)  # the OS paging model: see cli/swap.py
register_import(app)  # other simulators' configs: see cli/imports.py
register_example(app)  # host programs (the key-value cache): see cli/example.py


# --------------------------------------------------------------------------------------------
# entry point


def _one_line(message: str) -> str:
    return " ".join(str(message).split()) or "unknown error"


def _fail(message: str) -> int:
    sys.stderr.write(f"error: {_one_line(message)}\n")
    return EXIT_USER_ERROR


def _interrupted() -> int:
    sys.stderr.write("interrupted\n")
    return EXIT_INTERRUPTED


def _describe_os_error(error: OSError) -> str:
    if (
        isinstance(error, FileExistsError)
        and error.filename is not None
        and not os.path.isdir(error.filename)
    ):
        # Making an output file's directories met a file where a directory belongs
        # (`--out /dev/null/x.csv`); "File exists" alone does not say what is wrong.
        return f"{error.filename}: is not a directory, expected one on the output's path"
    if error.filename is not None and error.strerror:
        return f"{error.filename}: {error.strerror}"
    return str(error)


def _is_usage_error(error: BaseException) -> bool:
    # Recent typer releases vendor click privately, older ones use click itself: recognise a
    # command-line error by its shape (click's ClickException API) rather than by its class.
    return hasattr(error, "format_message") and isinstance(getattr(error, "exit_code", None), int)


def _commands(command: Any) -> Iterator[Any]:
    yield command
    for sub in getattr(command, "commands", {}).values():
        yield from _commands(sub)


def _prepare_help(command: Any, terminal: bool) -> None:
    """Help texts are written plain (``[hfsl]`` is a config section, not markup). On a terminal
    typer draws them with rich, which would read brackets as markup and drop them: escape them.
    Off a terminal (``ssdlab run --help | less``, a file) rich would also cut long words at 80
    columns with "…": use click's plain help there, which wraps and cuts nothing."""
    for cmd in _commands(command):
        if not terminal:
            cmd.rich_markup_mode = None
            continue
        for owner in (cmd, *cmd.params):
            for attr in ("help", "short_help", "epilog"):
                text = getattr(owner, attr, None)
                if isinstance(text, str):
                    setattr(owner, attr, escape(text))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (the console script passes it to sys.exit).

    SIGTERM (a job scheduler, `timeout`, `kill`) stops a command as Ctrl-C does: a run keeps and
    writes what it measured, a sweep its finished points (serve installs its own handler)."""
    STOPPED_BY.clear()
    try:
        try:
            previous = signal.signal(signal.SIGTERM, on_sigterm)
        except ValueError:  # not the main thread: signals are not ours to take
            return _main(argv)
        try:
            return _main(argv)
        finally:
            signal.signal(signal.SIGTERM, previous)
    except KeyboardInterrupt:
        # Ctrl-C before a command started (building the command line on a loaded machine
        # takes seconds): the same quiet exit as during one, not a traceback.
        return _interrupted()


def _main(argv: Sequence[str] | None) -> int:
    command = typer.main.get_command(app)
    _prepare_help(command, terminal=sys.stdout is not None and sys.stdout.isatty())
    args = list(argv) if argv is not None else sys.argv[1:]
    if sys.stdout is None:
        # Started with standard output closed (`ssdlab run … >&-`): Python has no stream to
        # print to. Refuse up front, as coreutils do, rather than fail midway in a traceback.
        if sys.stderr is not None:
            sys.stderr.write(
                "error: standard output is closed; redirect it (to a file or /dev/null) instead\n"
            )
        return EXIT_USER_ERROR
    try:
        code = command.main(args=args, prog_name="ssdlab", standalone_mode=False)
    except _core.Interrupted:
        return _interrupted()
    except KeyboardInterrupt:
        return _interrupted()
    except SimulationError as error:
        # Not the user's fault: still one line, but a distinct exit code and a plea to report it.
        sys.stderr.write(f"error: {_one_line(str(error))} (a bug in ssdlab: please report it)\n")
        return EXIT_INTERNAL_ERROR
    except _core.SsdlabError as error:
        return _fail(str(error))
    except UserError as error:
        return _fail(str(error))
    except BrokenPipeError:
        # `ssdlab presets | head`: the reader left; say nothing and let the exit be quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except OSError as error:
        return _fail(_describe_os_error(error))
    except typer.Abort:
        return _interrupted()
    except Exception as error:
        if not _is_usage_error(error):
            raise
        if type(error).__name__ == "NoArgsIsHelpError":
            # `ssdlab` or `ssdlab config` alone: the message is the help text.
            sys.stdout.write(error.format_message() + "\n")  # type: ignore[attr-defined]
            return 0
        message = error.format_message()  # type: ignore[attr-defined]
        ctx = getattr(error, "ctx", None)
        if ctx is not None and getattr(ctx, "command_path", None):
            message = f"{_one_line(message)} (see '{ctx.command_path} --help')"
        return _fail(message)
    if code == EXIT_INTERRUPTED:
        # typer turns a KeyboardInterrupt outside a run into a silent exit 130.
        return _interrupted()
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    raise SystemExit(main())
