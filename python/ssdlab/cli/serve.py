"""``ssdlab serve``: the live device. A simulated drive served over NBD to real clients
(qemu-img, qemu-io, nbdinfo, nbdcopy, fio's nbd engine, a QEMU guest), every request timed by
the model. Ctrl-C or SIGTERM stops it cleanly and writes the session's result (the same JSON as
``ssdlab run``). See docs/live-device.md.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import typer
from rich.console import Console

from .. import _core
from ..api import Config
from ..files import write_output_text
from .options import Interface, Overrides, UserError, check_overrides
from .table import print_result

DEFAULT_LISTEN = "tcp://127.0.0.1:10809"


def _live_line(figures: dict[str, Any]) -> str:
    read, write = figures["read"], figures["write"]
    # Without a write the WAF has no denominator (the figure holds 0): not a figure.
    waf = f"{figures['write_amplification']:.2f}" if write["count"] else "–"
    return (
        f"{figures['wall_s']:7.1f} s  conns {figures['connections']}  "
        f"requests {figures['requests']:,}  "
        f"read {read['count']:,} (mean {read['mean_us']:.0f} µs, p99 {read['p99_us']:.0f} µs)  "
        f"write {write['count']:,} (mean {write['mean_us']:.0f} µs, p99 {write['p99_us']:.0f} µs)  "
        f"WAF {waf}  GC {figures['gc_runs']:,}"
    )


def register(app: typer.Typer) -> None:
    @app.command()
    def serve(
        config: Annotated[str, typer.Argument(help="Preset name or config TOML file.")],
        listen: Annotated[
            str,
            typer.Option(
                help="tcp://HOST:PORT or unix:PATH (the NBD port is 10809).",
            ),
        ] = DEFAULT_LISTEN,
        export_name: Annotated[
            str, typer.Option(help="The export's name (clients may also ask for '').")
        ] = "",
        read_only: Annotated[bool, typer.Option(help="Refuse writes, trims and zeroes.")] = False,
        clock: Annotated[
            str,
            typer.Option(
                help="realtime: a reply leaves when the wall clock reaches its simulated "
                "completion; logical: as soon as the model has finished it.",
            ),
        ] = "realtime",
        time_scale: Annotated[
            float, typer.Option(help="Wall seconds per simulated second (realtime clock).")
        ] = 1.0,
        seed: Annotated[int, typer.Option(help="Seed of the model.", min=0)] = 1,
        json_out: Annotated[
            Path | None,
            typer.Option("--json", help="Write the session's result JSON here when it stops."),
        ] = None,
        data: Annotated[
            str,
            typer.Option(
                help="Where the drive's bytes live: memory (sparse, gone when the server "
                "stops) or file:PATH (a file of the device's size, created if missing).",
            ),
        ] = "memory",
        log: Annotated[
            Path | None,
            typer.Option(
                help="Log the session here: every request the model took, and when; "
                "'ssdlab run CONFIG --trace LOG' replays it with the same simulated latencies.",
            ),
        ] = None,
        quiet: Annotated[bool, typer.Option(help="No live figures.")] = False,
        overrides: Overrides = None,
        interface: Interface = None,
    ) -> None:
        """Serve a simulated drive over NBD until Ctrl-C; then print its result."""
        if clock not in ("realtime", "logical"):
            raise UserError(f"--clock {clock!r}: expected realtime or logical")
        cfg = Config(config, check_overrides(overrides, interface))
        if log is not None:
            # As `run --json` does: a log under a directory not made yet is made there.
            log.parent.mkdir(parents=True, exist_ok=True)
        err = Console(stderr=True, highlight=False)
        live = sys.stderr.isatty() and not quiet

        def ready(address: str) -> None:
            err.print(
                f"serving {cfg.name} over NBD at {address} ({clock} clock); Ctrl-C stops.\n"
                f"  qemu-img info {address}\n"
                f"  qemu-io -f raw {address}\n"
                f"  nbdinfo {address}\n"
                + (
                    f"session log: {log} (replay: ssdlab run {config} --trace {log})"
                    if log is not None
                    else "session not logged (--log PATH keeps it for a replay)"
                ),
                soft_wrap=True,
            )

        def tick(text: str) -> None:
            if live:
                sys.stderr.write("\r" + _live_line(json.loads(text)) + "\x1b[K")
                sys.stderr.flush()

        def on_term(signum: int, frame: FrameType | None) -> None:
            raise KeyboardInterrupt

        previous = signal.signal(signal.SIGTERM, on_term)
        try:
            result_json = _core.serve(
                cfg.to_json(),
                listen,
                export_name=export_name,
                read_only=read_only,
                clock=clock,
                time_scale=time_scale,
                seed=seed,
                data=data,
                log=log,
                ready=ready,
                tick=tick,
            )
        finally:
            signal.signal(signal.SIGTERM, previous)
            if live:
                sys.stderr.write("\n")
        if json_out is not None:
            write_output_text(json_out, result_json + "\n")
        print_result(json.loads(result_json), Console(highlight=False))
