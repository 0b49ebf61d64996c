"""``ssdlab example``: host programs built on the simulator (``ssdlab.examples``).

Added to the app by :func:`register`. Bad options end with one line ``error: ...`` and exit
code 2 (``UserError``), as every command's do.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from ..api import MAX_SEED
from ..files import write_output_text
from .options import UserError

example_app = typer.Typer(
    help="Host programs that use the drive's features, run on the simulator.",
    no_args_is_help=True,
)


@example_app.command("kvcache")
def kvcache_command(
    drive: Annotated[
        list[str] | None,
        typer.Option(
            "--drive",
            metavar="NAME",
            help="conventional, placement or zoned (repeat for several; default all three).",
        ),
    ] = None,
    utilisation: Annotated[
        list[float] | None,
        typer.Option(
            "--utilisation",
            metavar="SHARE",
            help="Share of the drive's logical capacity the cache uses (repeatable; default"
            " 0.5, 0.8, 0.95).",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Random seed.")] = 1,
    json_out: Annotated[
        Path | None, typer.Option("--json", metavar="FILE", help="Also write the points as JSON.")
    ] = None,
) -> None:
    """A CacheLib-like key-value flash cache (docs/kvcache.md): device and host write
    amplification and throughput on a conventional, a placement and a zoned drive."""
    from ..examples import kvcache

    drives = drive or list(kvcache.DRIVES)
    for name in drives:
        if name not in kvcache.DRIVES:
            raise UserError(f"--drive: got {name!r}, expected one of {', '.join(kvcache.DRIVES)}")
    shares = utilisation or list(kvcache.UTILISATIONS)
    for share in shares:
        if not 0.0 < share <= 1.0:
            raise UserError(f"--utilisation: got {share}, expected a share above 0 up to 1")
    try:
        points = kvcache.run_all(drives, shares, seed)
    except ValueError as error:
        raise UserError(str(error)) from None
    sys.stdout.write(kvcache.table(points))
    if json_out is not None:
        write_output_text(json_out, json.dumps(points, indent=1) + "\n")


def register(app: typer.Typer) -> None:
    app.add_typer(example_app, name="example")
