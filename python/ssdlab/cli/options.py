"""What several command groups share: the ``--set`` option and its check, and the error for a
command-line mistake the core never sees (``cli.main`` prints it as one line, exit code 2)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated

import typer


class UserError(Exception):
    """A mistake on the command line that the core never sees (bad --set, missing --job file)."""


Overrides = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="PATH=VALUE",
        help="Override a configuration field, e.g. --set ftl.over_provisioning=0.1 (repeatable).",
    ),
]

Interface = Annotated[
    str | None,
    typer.Option(
        "--interface",
        metavar="KIND",
        help="Move the configuration to another host interface (nvme, ide, sata, ufs, emmc or"
        " dram): its link, queues, queue depth and interrupt take the kind's defaults unless"
        " --set gives them. Same as --set interface.kind=KIND.",
    ),
]

State = Annotated[
    str | None,
    typer.Option(
        "--state",
        metavar="FILE",
        help="Start from the drive state `ssdlab precondition --save` wrote, instead of"
        " preconditioning (docs/state.md). Same as --set precondition.state=FILE.",
    ),
]

_OVERRIDE = re.compile(r"^\s*[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)*\s*=")


def check_overrides(
    overrides: Sequence[str] | None, interface: str | None = None, state: str | None = None
) -> list[str]:
    """Reject a --set without ``PATH=VALUE`` shape here, with the flag's name in the message.
    ``--interface KIND`` becomes one more override, ``interface.kind=KIND``, after them; the core
    gives the other interface fields the kind's defaults (``SsdConfig::resolve``). ``--state
    FILE`` becomes ``precondition.state=FILE``."""
    checked = []
    for item in overrides or []:
        if not _OVERRIDE.match(item):
            raise UserError(
                f"bad --set {item!r}: expected PATH=VALUE, e.g. --set ftl.over_provisioning=0.1"
            )
        checked.append(item)
    if interface is not None:
        checked.append(f"interface.kind={toml_string(interface)}")
    if state is not None:
        checked.append(f"precondition.state={toml_string(state)}")
    return checked


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string, so that any value reaches the core's check intact."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'
