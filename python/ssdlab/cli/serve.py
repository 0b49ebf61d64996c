"""``ssdlab serve``: the live device. A simulated drive served over NBD to real clients
(qemu-img, qemu-io, nbdinfo, nbdcopy, fio's nbd engine, a QEMU guest), every request timed by
the model. Ctrl-C or SIGTERM stops it cleanly and writes the session's result (the same JSON as
``ssdlab run``); with ``--power-cuts``, SIGUSR1 cuts the drive's power (docs/power-loss.md,
"A cut from ssdlab serve"). See docs/live-device.md.
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
from ..api import MAX_SEED, Config
from ..files import check_output_path, write_output_text
from .options import Interface, Overrides, State, UserError, check_overrides
from .table import print_result

DEFAULT_LISTEN = "tcp://127.0.0.1:10809"


# The realtime clock's lag (a reply sent after the wall time of its simulated completion) is
# worth a warning once its p99 passes this share of the mean latency the drive is serving: the
# clients then see latencies the model did not give.
LAG_WARN_SHARE = 0.1


def _live_line(figures: dict[str, Any]) -> str:
    read, write = figures["read"], figures["write"]
    # Without a write the WAF has no denominator (the figure holds 0): not a figure.
    waf = f"{figures['write_amplification']:.2f}" if write["count"] else "–"
    lag = figures.get("lag")
    return (
        f"{figures['wall_s']:7.1f} s  conns {figures['connections']}  "
        f"requests {figures['requests']:,}  "
        f"read {read['count']:,} (mean {read['mean_us']:.0f} µs, p99 {read['p99_us']:.0f} µs)  "
        f"write {write['count']:,} (mean {write['mean_us']:.0f} µs, p99 {write['p99_us']:.0f} µs)  "
        f"WAF {waf}  GC {figures['gc_runs']:,}"
        + (f"  lag p99 {lag['p99_us']:.0f} µs" if lag and lag["count"] else "")
    )


def lag_warning(
    lag: dict[str, Any] | None, read: dict[str, Any], write: dict[str, Any], time_scale: float
) -> str | None:
    """A warning when the realtime clock's reply lag (p99, wall µs) is over LAG_WARN_SHARE of
    the mean latency the clients are served (reads and writes together, simulated µs times
    ``time_scale``), else None. ``lag``, ``read`` and ``write`` hold counts and µs figures as
    the live figures and the result give them."""
    if not lag or not lag.get("count"):
        return None
    count = read["count"] + write["count"]
    if not count:
        return None
    mean_us = (
        time_scale * (read["count"] * read["mean_us"] + write["count"] * write["mean_us"]) / count
    )
    p99 = lag["p99_us"] if "p99_us" in lag else lag["p99"]
    if p99 <= LAG_WARN_SHARE * mean_us:
        return None
    return (
        f"warning: the server is behind real time: replies left up to {p99:.0f} µs (p99) after "
        f"their simulated completion, over {LAG_WARN_SHARE:.0%} of the {mean_us:.0f} µs mean "
        "latency it serves, so clients see latencies the model did not give (the result's "
        "figures are the model's); a larger --time-scale or --clock logical avoids it"
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
        seed: Annotated[int, typer.Option(help="Seed of the model.", min=0, max=MAX_SEED)] = 1,
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
        log_data: Annotated[
            Path | None,
            typer.Option(
                help="With --log: write each logged write's bytes here, in the log's order "
                "(for a replay that moves the data again, such as the guest crash test's).",
            ),
        ] = None,
        power_cuts: Annotated[
            bool,
            typer.Option(
                help="Arm the drive's power-loss model (page-mapped FTL): SIGUSR1 then cuts "
                "the power. Clients are disconnected, the data holds what the recovered drive "
                "holds, and the server goes on serving it.",
            ),
        ] = False,
        power_cut_event: Annotated[
            int | None,
            typer.Option(
                help="Cut the power once the device has handled this many events (implies "
                "--power-cuts; --clock logical only).",
                min=1,
            ),
        ] = None,
        tls: Annotated[
            str | None,
            typer.Option(
                help="off, on (TLS for clients that ask, plaintext too) or require (every "
                "option but STARTTLS refused until TLS is up). Default: require with "
                "--tls-psk or --tls-certificates, else off.",
            ),
        ] = None,
        tls_psk: Annotated[
            Path | None,
            typer.Option(
                help="PSK file of USER:HEXKEY lines (make one with 'psktool -u USER -p FILE'); "
                "clients authenticate with a user's key.",
            ),
        ] = None,
        tls_certificates: Annotated[
            Path | None,
            typer.Option(
                help="Directory with server-cert.pem, server-key.pem and ca-cert.pem (nbdkit's "
                "names).",
            ),
        ] = None,
        tls_verify_peer: Annotated[
            bool,
            typer.Option(
                help="With --tls-certificates: clients need a certificate signed by ca-cert.pem.",
            ),
        ] = True,
        max_connections: Annotated[
            int | None,
            typer.Option(help="Most connections at once, 1 to 1024 (default 16); more are closed."),
        ] = None,
        insecure_network: Annotated[
            bool,
            typer.Option(
                help="Serve an address other machines reach without TLS and client "
                "authentication (refused otherwise).",
            ),
        ] = False,
        quiet: Annotated[bool, typer.Option(help="No live figures.")] = False,
        overrides: Overrides = None,
        interface: Interface = None,
        state: State = None,
    ) -> None:
        """Serve a simulated drive over NBD until Ctrl-C; then print its result. With --state
        FILE the drive starts from FILE and, at a clean stop, writes its state back to it."""
        if clock not in ("realtime", "logical"):
            raise UserError(f"--clock {clock!r}: expected realtime or logical")
        cfg = Config(config, check_overrides(overrides, interface, state))
        # As `run --json` does: an output under a folder not made yet is made there. The
        # result is written when the server stops, so a path that cannot take it is refused
        # now, before a session's figures could be lost.
        for path in (log, json_out):
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
        if json_out is not None:
            check_output_path(json_out)
        err = Console(stderr=True, highlight=False)
        live = sys.stderr.isatty() and not quiet

        def ready(address: str, access: str) -> None:
            if address.startswith("nbds"):
                # qemu-img and qemu-io take TLS credentials as objects: docs/live-device.md.
                clients = f"  nbdinfo '{address}'\n  nbdcopy IMAGE '{address}'\n"
            else:
                clients = (
                    f"  qemu-img info {address}\n  qemu-io -f raw {address}\n  nbdinfo {address}\n"
                )
            err.print(
                f"serving {cfg.name} over NBD at {address} ({clock} clock); Ctrl-C stops.\n"
                f"{access}\n"
                + clients
                + (
                    f"session log: {log} (replay: ssdlab run {config} --trace {log})"
                    if log is not None
                    else "session not logged (--log PATH keeps it for a replay)"
                ),
                soft_wrap=True,
                markup=False,
            )

        warned = False
        cut_asked = False
        cuts_reported = refusals_reported = 0

        def tick(text: str) -> str | None:
            nonlocal warned, cut_asked, cuts_reported, refusals_reported
            figures = json.loads(text)
            for cut in figures["power_cuts"][cuts_reported:]:
                sys.stderr.write(("\n" if live else "") + power_cut_line(cut) + "\n")
            cuts_reported = len(figures["power_cuts"])
            if figures["power_cuts_refused"] > refusals_reported:
                refusals_reported = figures["power_cuts_refused"]
                sys.stderr.write(
                    "SIGUSR1: no power cut, the session was started without --power-cuts\n"
                )
            if not warned:
                warning = lag_warning(
                    figures.get("lag"), figures["read"], figures["write"], time_scale
                )
                if warning is not None:
                    warned = True
                    sys.stderr.write(("\n" if live else "") + warning + "\n")
            if live:
                sys.stderr.write("\r" + _live_line(figures) + "\x1b[K")
                sys.stderr.flush()
            if cut_asked:
                cut_asked = False
                return "power-cut"
            return None

        def on_term(signum: int, frame: FrameType | None) -> None:
            raise KeyboardInterrupt

        def on_usr1(signum: int, frame: FrameType | None) -> None:
            nonlocal cut_asked
            cut_asked = True

        previous = signal.signal(signal.SIGTERM, on_term)
        previous_usr1 = signal.signal(signal.SIGUSR1, on_usr1)
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
                log_data=log_data,
                tls=tls,
                tls_psk=tls_psk,
                tls_certificates=tls_certificates,
                tls_verify_peer=tls_verify_peer,
                max_connections=max_connections,
                insecure_network=insecure_network,
                power_cuts=power_cuts,
                power_cut_event=power_cut_event,
                ready=ready,
                tick=tick,
            )
        finally:
            signal.signal(signal.SIGTERM, previous)
            signal.signal(signal.SIGUSR1, previous_usr1)
            if live:
                sys.stderr.write("\n")
        if json_out is not None:
            write_output_text(json_out, result_json + "\n")
        result = json.loads(result_json)
        print_result(result, Console(highlight=False))
        print(_connections_line(result["job"]["serve"]["connections"]))
        lag = result["wall"].get("reply_lag_us")
        if lag is not None and lag["max"] > 0:
            print(
                f"reply lag behind real time: mean {lag['mean']:.1f} µs, p99 {lag['p99']:.1f} µs, "
                f"max {lag['max']:.1f} µs"
            )
            read, write = (
                result["ops"].get(op, {"count": 0, "latency_us": {"mean": 0}})
                for op in ("read", "write")
            )
            warning = lag_warning(
                {"count": read["count"] + write["count"], "p99": lag["p99"]},
                {"count": read["count"], "mean_us": read["latency_us"]["mean"]},
                {"count": write["count"], "mean_us": write["latency_us"]["mean"]},
                time_scale,
            )
            if warning is not None and not warned:
                print(warning, file=sys.stderr)


def power_cut_line(cut: dict[str, Any]) -> str:
    """One cut as the server reports it: what the drive lost, its recovery, what the store
    and the clients saw."""
    store = cut["store"]
    return (
        f"power cut at event {cut['event']:,} ({cut['at_us']:.0f} µs simulated): "
        f"{cut['writes_lost']:,} writes lost ({cut['acknowledged_writes_lost']:,} acknowledged), "
        f"{cut['programs_lost']:,} programs torn, {cut['cache_units_lost']:,} cache units lost; "
        f"recovery {cut['recovery_us']:.0f} µs ({cut['pages_scanned']:,} pages scanned); "
        f"{cut['connections_closed']} connections closed, {cut['requests_dropped']} requests "
        f"dropped; data store: {store['units_restored']:,} of {store['units_journaled']:,} "
        "journaled units put back; serving the recovered drive"
        + (
            f" (the store and the model disagree on {store['units_unmatched']} units)"
            if store["units_unmatched"]
            else ""
        )
        + (f" ({cut['store_error']})" if cut.get("store_error") else "")
    )


def _connections_line(c: dict[str, Any]) -> str:
    """Who came: e.g. 'connections: 5, served 3, refused 2 (tls_handshake_failed 2)'."""
    why = ", ".join(f"{k} {n:,}" for k, n in c["refused"].items() if n)
    refused = sum(c["refused"].values())
    return f"connections: {c['connected']:,}, served {c['served']:,}, refused {refused:,}" + (
        f" ({why})" if why else ""
    )
