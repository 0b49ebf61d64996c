"""``ssdlab import``: other simulators' configs as ssdlab configs and flows (docs/import.md).

Added to the app by :func:`register`. Each setting that could not be carried over is one
``warning:`` line on stderr; bad input is an ``ImportInputError`` (a ``ConfigError``), which
``cli.main`` prints as one line ``error: ...`` with exit code 2.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ..api import Config
from ..importers import Imported, import_mqsim, import_simplessd, write_imported

OutOption = Annotated[
    Path | None,
    typer.Option(
        "-o",
        "--out",
        metavar="DIR|CONFIG.toml",
        help="Where to write: a .toml path is the config (flows files beside it, named"
        " CONFIG-scenario-N.toml); any other path a directory that gets config.toml and"
        " config-scenario-N.toml. Without it the config is printed (no flows then).",
    ),
]

import_app = typer.Typer(
    help="Write an ssdlab config (and flows) from another simulator's config files.",
    no_args_is_help=True,
)


def _check(path: Path) -> None:
    Config.load(path)


def _finish(imported: Imported, out: Path | None) -> None:
    written = write_imported(imported, out, _check)
    for line in imported.warnings:
        sys.stderr.write(f"warning: {line}\n")
    if written.config is None:
        sys.stdout.write(written.config_text)
        return
    print(f"wrote {written.config}")
    for path in written.flows:
        print(f"wrote {path}")
    kept = len(imported.warnings)
    print(f"{kept} setting(s) not carried over (the warnings above)" if kept else "all carried")
    for command in written.commands:
        print(f"run: {command}")


@import_app.command("mqsim")
def mqsim_command(
    ssdconfig: Annotated[Path, typer.Argument(help="MQSim's device file (ssdconfig.xml).")],
    workload: Annotated[
        Path | None,
        typer.Argument(
            help="MQSim's workload file (workload.xml): each IO_Scenario becomes a flows file"
            " (synthetic flows) or a trace replay command (trace-based flows; MQSim's ASCII"
            " traces are format disksim).",
        ),
    ] = None,
    out: OutOption = None,
) -> None:
    """Import MQSim's ssdconfig.xml and workload.xml.

    Carried over: geometry, NAND timings, channel rate, over-provisioning, GC, the cached
    mapping table, NVMe or SATA and their queues, the data cache; each IO_Scenario's flows.
    A warning names each element not carried over (docs/import.md)."""
    _finish(import_mqsim(ssdconfig, workload), out)


@import_app.command("simplessd")
def simplessd_command(
    config: Annotated[Path, typer.Argument(help="SimpleSSD's config file (.cfg).")],
    simulation: Annotated[
        Path | None,
        typer.Argument(
            help="SimpleSSD-Standalone's simulation file ([global], [generator], [trace]): its"
            " interface and host latencies, and its request generator as a flows file.",
        ),
    ] = None,
    interface: Annotated[
        str | None,
        typer.Option(
            "--interface",
            metavar="nvme|sata",
            help="Which of the .cfg's host interface sections the drive uses (SimpleSSD picks it"
            " outside the .cfg: the simulation file's Interface, else NVMe).",
        ),
    ] = None,
    out: OutOption = None,
) -> None:
    """Import SimpleSSD's .cfg file (and SimpleSSD-Standalone's simulation file).

    Carried over from [pal], [ftl], [nvme] or [sata], [icl] and [dram]: geometry, NAND timings,
    the channel's DMA, over-provisioning, GC, the host interface, the internal cache; from the
    simulation file the host latencies and the request generator. A warning names each key not
    carried over (docs/import.md)."""
    _finish(import_simplessd(config, interface, simulation), out)


def register(app: typer.Typer) -> None:
    app.add_typer(import_app, name="import")
