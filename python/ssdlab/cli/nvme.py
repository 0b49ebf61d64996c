"""The ``ssdlab nvme`` commands: ``id-ctrl``, ``id-ns``, ``smart-log`` and ``list``; on a
zoned drive ``zns id-ns``, ``zns id-ctrl`` and ``zns report-zones``; on a drive with FDP ``fdp
configs|usage|stats|events``; printed as nvme-cli prints them.

Each command builds the device from CONFIG (a preset name or a TOML file), brings the
register-level controller up through its registers, optionally runs a job (``--job``) or
replays a trace (``--trace``) through the host driver model, then issues the admin command and
prints its answer: ``--output-format normal`` (nvme-cli's ``key : value`` text) or ``json``
(nvme-cli's JSON keys). Errors are ``SsdlabError`` subclasses, which ``cli.main`` prints as one
line ``error: ...`` with exit code 2.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from .. import _core
from ..api import MAX_SEED
from ..nvme import NvmeDevice
from .options import Overrides, check_overrides


class NvmeCliError(_core.SsdlabError):
    """A bad option of an nvme command (one line, exit code 2)."""


class OutputFormat(StrEnum):
    normal = "normal"
    json = "json"


nvme_app = typer.Typer(
    help="Query the register-level NVMe controller as nvme-cli would.",
    no_args_is_help=True,
)

ConfigArg = Annotated[str, typer.Argument(help="Preset name or config TOML file.")]
JobOpt = Annotated[
    Path | None,
    typer.Option("--job", help="Run this job TOML through the driver first."),
]
TraceOpt = Annotated[
    Path | None,
    typer.Option("--trace", help="Replay this trace file through the driver first."),
]
TraceFormatOpt = Annotated[
    str | None,
    typer.Option("--trace-format", help="Trace format (default: detected)."),
]
IodepthOpt = Annotated[
    int, typer.Option("--iodepth", help="Trace replay: commands per doorbell.", min=1)
]
FormatOpt = Annotated[
    OutputFormat,
    typer.Option("--output-format", "-o", help="normal or json.", case_sensitive=False),
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the model.", min=0, max=MAX_SEED)]
LbaOpt = Annotated[int, typer.Option("--lba-size", help="Logical block size: 512 or 4096.")]


def _device(
    config: str,
    job: Path | None,
    trace: Path | None,
    trace_format: str | None,
    iodepth: int,
    seed: int,
    lba_size: int,
    overrides: list[str] | None,
) -> NvmeDevice:
    overrides = check_overrides(overrides)
    if job is not None and trace is not None:
        raise NvmeCliError("give --job or --trace, not both")
    if lba_size not in (512, 4096):
        raise NvmeCliError(f"--lba-size: got {lba_size}, expected 512 or 4096")
    for flag, path in (("--job", job), ("--trace", trace)):
        # A device or pipe goes on to the readers, which bound what they read or refuse it.
        if path is not None and not path.exists():
            raise NvmeCliError(f"{flag}: file not found: {path}")
        if path is not None and path.is_dir():
            raise NvmeCliError(f"{flag}: {path} is a directory, expected a file")
    dev = NvmeDevice(config, overrides=overrides or None, seed=seed, lba_size=lba_size)
    if job is not None:
        dev.run_job(job)
    if trace is not None:
        dev.run_trace(trace, format=trace_format, iodepth=iodepth)
    return dev


# The options every command that builds a device takes, in the order --help lists them: the
# device and the workload first, the command's own options next, the output and the model last.
_WORKLOAD = ("job", "trace", "trace_format", "iodepth")


def _option(
    name: str, annotation: Any, default: Any = inspect.Parameter.empty
) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default
    )


def device_command(
    app: typer.Typer, name: str, *, zoned: bool = False, lba: bool = True, workload: bool = True
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register ``render(dev, output_format, **own)`` as command NAME of ``app``. The command
    takes the options every nvme command shares (CONFIG; ``--job``/``--trace`` and the replay's
    options when ``workload``; ``--output-format``, ``--seed``, ``--lba-size`` when ``lba``,
    ``--set``) and ``render``'s own after its first two parameters; it builds the device from
    them (a zoned drive when ``zoned``) and hands it to ``render``. Written once here, so that
    a command states only what is its own."""

    def register(render: Callable[..., None]) -> Callable[..., None]:
        own = list(inspect.signature(render, eval_str=True).parameters.values())[2:]
        head = [_option("config", ConfigArg)]
        if workload:
            head += [
                _option("job", JobOpt, None),
                _option("trace", TraceOpt, None),
                _option("trace_format", TraceFormatOpt, None),
                _option("iodepth", IodepthOpt, 32),
            ]
        tail = [
            _option("output_format", FormatOpt, OutputFormat.normal),
            _option("seed", SeedOpt, 1),
        ]
        if lba:
            tail.append(_option("lba_size", LbaOpt, 4096))
        tail.append(_option("overrides", Overrides, None))
        params = head + [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own] + tail

        def command(**kw: Any) -> None:
            config, output_format = kw.pop("config"), kw.pop("output_format")
            seed, overrides = kw.pop("seed"), kw.pop("overrides")
            lba_size = kw.pop("lba_size", 4096)
            job, trace, trace_format, iodepth = (kw.pop(k, None) for k in _WORKLOAD)
            iodepth = 32 if iodepth is None else iodepth
            if zoned:
                dev = _zoned_device(config, job, trace, trace_format, iodepth, seed, overrides)
            else:
                dev = _device(config, job, trace, trace_format, iodepth, seed, lba_size, overrides)
            render(dev, output_format, **kw)

        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__doc__ = render.__doc__
        command.__name__ = render.__name__
        app.command(name)(command)
        return render

    return register


def _print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2) + "\n")


# Fields nvme-cli prints in hexadecimal in its normal output.
_HEX = {
    "vid",
    "ssvid",
    "cntlid",
    "ver",
    "rtd3r",
    "rtd3e",
    "oaes",
    "ctratt",
    "oacs",
    "frmw",
    "lpa",
    "avscc",
    "apsta",
    "sqes",
    "cqes",
    "oncs",
    "fuses",
    "fna",
    "vwc",
    "sgls",
    "cmic",
    "icsvscc",
    "nsze",
    "ncap",
    "nuse",
    "nsfeat",
    "dpc",
    "dps",
    "nmic",
    "rescap",
    "fpi",
    "dlfeat",
    "critical_warning",
}


def _plain(key: str, value: Any) -> str:
    if key == "ieee":
        return f"{value:06x}"
    if isinstance(value, int) and key in _HEX:
        return hex(value)
    return str(value)


def _print_fields(title: str, fields: dict[str, Any], skip: set[str]) -> None:
    lines = [title]
    width = max(len(k) for k in fields if k not in skip)
    for key, value in fields.items():
        if key in skip:
            continue
        lines.append(f"{key:<{width}} : {_plain(key, value)}")
    sys.stdout.write("\n".join(lines) + "\n")


@device_command(nvme_app, "id-ctrl")
def id_ctrl_command(dev: NvmeDevice, output_format: OutputFormat) -> None:
    """Identify Controller (nvme id-ctrl)."""
    fields = dev.id_ctrl()
    if output_format is OutputFormat.json:
        _print_json(fields)
        return
    _print_fields("NVME Identify Controller:", fields, {"psds"})
    for i, ps in enumerate(fields["psds"]):
        sys.stdout.write(
            f"ps {i:>4} : mp:{ps['max_power'] / 100:.2f}W operational enlat:{ps['entry_lat']}"
            f" exlat:{ps['exit_lat']} rrt:{ps['read_tput']} rrl:{ps['read_lat']}\n"
            f"          rwt:{ps['write_tput']} rwl:{ps['write_lat']}"
            f" idle_power:- active_power:-\n"
        )


@device_command(nvme_app, "id-ns")
def id_ns_command(dev: NvmeDevice, output_format: OutputFormat) -> None:
    """Identify Namespace 1 (nvme id-ns)."""
    fields = dev.id_ns()
    if output_format is OutputFormat.json:
        _print_json(fields)
        return
    _print_fields("NVME Identify Namespace 1:", fields, {"lbafs"})
    in_use = fields["flbas"] & 0xF
    for i, f in enumerate(fields["lbafs"]):
        mark = " (in use)" if i == in_use else ""
        sys.stdout.write(
            f"lbaf {i:>2} : ms:{f['ms']:<3} lbads:{f['ds']:<2} rp:{f['rp']:#x}{mark}\n"
        )


def _temp(kelvin: int) -> str:
    return f"{kelvin - 273} °C ({kelvin} K)"


@device_command(nvme_app, "smart-log")
def smart_log_command(dev: NvmeDevice, output_format: OutputFormat) -> None:
    """The SMART / Health log (nvme smart-log)."""
    fields = dev.smart_log()
    if output_format is OutputFormat.json:
        _print_json(fields)
        return
    shown: dict[str, Any] = {}
    for key, value in fields.items():
        if key in ("temperature", "temperature_sensor_1"):
            shown[key] = _temp(value)
        elif key in ("avail_spare", "spare_thresh", "percent_used"):
            shown[key] = f"{value}%"
        elif key in ("data_units_read", "data_units_written"):
            shown[key] = f"{value:,} ({value * 512_000 / 1e9:.2f} GB)"
        else:
            shown[key] = value
    _print_fields("Smart Log for NVME device:nvme0n1 namespace-id:ffffffff", shown, set())


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:6.2f} {unit:>2}"
        n /= 1000
    return f"{n:.2f}"


@device_command(nvme_app, "list")
def list_command(dev: NvmeDevice, output_format: OutputFormat) -> None:
    """The device as nvme list shows it."""
    e = dev.list_entry()
    if output_format is OutputFormat.json:
        _print_json({"Devices": [e]})
        return
    header = (
        f"{'Node':<21} {'Generic':<21} {'SN':<20} {'Model':<40} {'Namespace':<9}"
        f" {'Usage':<26} {'Format':<16} {'FW Rev':<8}"
    )
    rule = " ".join("-" * n for n in (21, 21, 20, 40, 9, 26, 16, 8))
    usage = f"{_size(e['UsedBytes'])} / {_size(e['PhysicalSize'])}"
    fmt = f"{e['SectorSize']:>4} B + 0 B"
    row = (
        f"{e['DevicePath']:<21} {e['GenericPath']:<21} {e['SerialNumber']:<20}"
        f" {e['ModelNumber']:<40} {e['NameSpace']:<9} {usage:<26} {fmt:<16} {e['Firmware']:<8}"
    )
    sys.stdout.write("\n".join(line.rstrip() for line in (header, rule, row)) + "\n")


zns_app = typer.Typer(
    help="The Zoned Namespace Command Set of a zoned drive (a config with [zns]), as nvme-cli's"
    " zns plugin shows it.",
    no_args_is_help=True,
)
nvme_app.add_typer(zns_app, name="zns")


def _zoned_device(
    config: str,
    job: Path | None,
    trace: Path | None,
    trace_format: str | None,
    iodepth: int,
    seed: int,
    overrides: list[str] | None,
) -> NvmeDevice:
    dev = _device(config, job, trace, trace_format, iodepth, seed, 4096, overrides)
    if not dev.zoned:
        raise NvmeCliError(
            f"{config}: this drive has no zones (a zoned drive has a [zns] section; the preset"
            " zns-tlc is one)"
        )
    return dev


@device_command(zns_app, "id-ns", zoned=True, lba=False)
def zns_id_ns_command(dev: NvmeDevice, output_format: OutputFormat) -> None:
    """ZNS Identify Namespace 1 (nvme zns id-ns)."""
    fields = dev.zns_id_ns()
    if output_format is OutputFormat.json:
        _print_json(fields)
        return
    _print_fields("ZNS Command Set Identify Namespace:", fields, {"lbafe"})
    in_use = dev.id_ns()["flbas"] & 0xF
    for i, f in enumerate(fields["lbafe"]):
        mark = " (in use)" if i == in_use else ""
        sys.stdout.write(f"lbafe {i:>2}: zsze:{f['zsze']:#x} zdes:{f['zdes']}{mark}\n")


@device_command(zns_app, "id-ctrl", zoned=True, lba=False, workload=False)
def zns_id_ctrl_command(dev: NvmeDevice, output_format: OutputFormat) -> None:
    """ZNS Identify Controller (nvme zns id-ctrl)."""
    fields = dev.zns_id_ctrl()
    if output_format is OutputFormat.json:
        _print_json(fields)
        return
    _print_fields("NVMe ZNS Identify Controller:", fields, set())


class ZoneStateOpt(StrEnum):
    empty = "empty"
    imp_opened = "imp_opened"
    exp_opened = "exp_opened"
    closed = "closed"
    full = "full"
    readonly = "readonly"
    offline = "offline"


@device_command(zns_app, "report-zones", zoned=True, lba=False)
def report_zones_command(
    dev: NvmeDevice,
    output_format: OutputFormat,
    start_lba: Annotated[
        int, typer.Option("--start-lba", "-s", help="Report from the zone of this LBA.", min=0)
    ] = 0,
    descs: Annotated[
        int | None,
        typer.Option("--descs", "-d", help="At most this many zones (default: all).", min=1),
    ] = None,
    state: Annotated[
        ZoneStateOpt | None,
        typer.Option("--state", "-S", help="Only zones in this state.", case_sensitive=False),
    ] = None,
    partial: Annotated[
        bool, typer.Option("--partial", "-p", help="Count only the zones returned.")
    ] = False,
) -> None:
    """Report Zones (nvme zns report-zones): each zone's start, write pointer, capacity and
    state, after the job or trace given ran on the drive."""
    if start_lba >= dev.nsze:
        raise NvmeCliError(
            f"--start-lba: got {start_lba}, expected below the namespace's {dev.nsze} blocks"
        )
    report = dev.report_zones(
        start_lba,
        state=None if state is None else state.value,
        partial=partial,
        max_zones=descs,
    )
    if output_format is OutputFormat.json:
        _print_json(report)
        return
    lines = [f"nr_zones: {report['nr_zones']}"]
    for z in report["zone_list"]:
        lines.append(
            f"SLBA: {z['slba']:<#12x} WP: {z['wp']:<#12x} Cap: {z['cap']:<#9x}"
            f" State: {z['state']:<12} Type: {z['type']:<14} Attrs: {z['attrs']:#x}"
            f"    AttrsInfo: {z['attrs_info']:#x}"
        )
    sys.stdout.write("\n".join(lines) + "\n")


fdp_app = typer.Typer(
    help="Flexible Data Placement log pages (nvme fdp), of a config with [fdp].",
    no_args_is_help=True,
)
nvme_app.add_typer(fdp_app, name="fdp")


def _print_fdp(page: str, fields: dict[str, Any], output_format: OutputFormat) -> None:
    if output_format is OutputFormat.json:
        _print_json(fields)
        return
    lists = {k: v for k, v in fields.items() if isinstance(v, list)}
    _print_fields(f"FDP {page} log page (endurance group 1):", fields, set(lists))
    for key, items in lists.items():
        for k, item in enumerate(items):
            parts = []
            for name, value in item.items():
                if isinstance(value, list):
                    value = ",".join(str(next(iter(v.values()))) for v in value)
                parts.append(f"{name}:{value}")
            sys.stdout.write(f"{key}[{k}] : {' '.join(parts)}\n")


def _fdp_page(page: str, doc: str) -> None:
    """Register ``ssdlab nvme fdp PAGE``, whose help is ``doc``."""

    def render(dev: NvmeDevice, output_format: OutputFormat) -> None:
        _print_fdp(page, dev.fdp_log(page, False), output_format)

    render.__doc__ = doc
    render.__name__ = f"fdp_{page}_command"
    device_command(fdp_app, page)(render)


_fdp_page("configs", "FDP Configurations log page, 20h (nvme fdp configs).")
_fdp_page("usage", "Reclaim Unit Handle Usage log page, 21h (nvme fdp usage).")
_fdp_page(
    "stats",
    "FDP Statistics log page, 22h: host and media bytes written, media bytes erased (nvme"
    " fdp stats).",
)


@device_command(fdp_app, "events")
def fdp_events_command(
    dev: NvmeDevice,
    output_format: OutputFormat,
    host_events: Annotated[
        bool, typer.Option("--host-events", "-E", help="The host events (else the controller's).")
    ] = False,
) -> None:
    """FDP Events log page, 23h (nvme fdp events)."""
    _print_fdp("events", dev.fdp_log("events", host_events), output_format)


def register(app: typer.Typer) -> None:
    """Add ``ssdlab nvme ...`` to the main app."""
    app.add_typer(nvme_app, name="nvme")
