"""``ssdlab swap``: page a memory-access trace through a simulated swap device.

Added to the app by :func:`register`; errors from the core are ``SsdlabError`` subclasses,
which ``cli.main`` prints as one line ``error: ...`` with exit code 2.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ..api import MAX_SEED
from ..files import write_output_text
from ..swap import swap
from .options import State, UserError, toml_string
from .table import key_value_table


def swap_command(
    config: Annotated[
        str, typer.Argument(metavar="CONFIG|PRESET", help="The swap device: a preset or TOML.")
    ],
    memory: Annotated[str, typer.Option(help="Physical memory, e.g. 64MiB.")],
    swap_size: Annotated[str, typer.Option("--swap-size", help="Swap area, e.g. 256MiB.")],
    workload: Annotated[
        Path,
        typer.Option(
            metavar="FILE|pc-mix",
            help=(
                "Page-reference trace (address [R|W] per line), valgrind lackey output, or "
                "pc-mix: seed 003's PC application mix (knobs: --set swap.pc_mix.KEY=VALUE)."
            ),
        ),
    ],
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="Override: swap.KEY for the paging model (swap.era=modern), else the device.",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Random seed.")] = 1,
    swap_trace: Annotated[
        Path | None,
        typer.Option(
            "--swap-trace",
            metavar="FILE",
            help="Also write the swap block trace to FILE (.gz compresses), for trace stats/run.",
        ),
    ] = None,
    swap_trace_format: Annotated[
        str | None,
        typer.Option(
            "--swap-trace-format",
            metavar="FORMAT",
            help="The --swap-trace file's format (a trace format ssdlab reads; default fio, "
            "which keeps discards).",
        ),
    ] = None,
    json_out: Annotated[
        Path | None,
        typer.Option("--json", metavar="OUT", help="Write the result JSON to OUT ('-': stdout)."),
    ] = None,
    state: State = None,
) -> None:
    """Page a memory-access trace through MEMORY and a swap area on the device."""
    if swap_trace_format is not None and swap_trace is None:
        # It was ignored without a word (issue 45, defect 7).
        raise UserError(
            f"--swap-trace-format {swap_trace_format}: given without --swap-trace FILE, "
            "expected both (the format is the swap trace file's)"
        )
    r = swap(
        config,
        memory=memory,
        swap_size=swap_size,
        workload=workload,
        overrides=[*(set_ or []), *([f"precondition.state={toml_string(state)}"] if state else [])],
        seed=seed,
        swap_trace=swap_trace,
        swap_trace_format=swap_trace_format or "fio",
    )
    if json_out is not None:
        text = r.to_json() + "\n"
        if str(json_out) == "-":
            sys.stdout.write(text)
            return
        write_output_text(json_out, text)
    d = r.data
    f, lat, bd = d["faults"], d["swap_in_latency"], d["swap_in_breakdown"]
    out, wear = d["swap_out"], d["wear"]
    # A slowdown against a baseline of no time (no first touches and free accesses, as in the
    # counted rounds after aging) is not defined; the result holds 0 for it.
    slowdown = f"{d['slowdown']:.2f}" if d["baseline_time_s"] > 0 else "–"
    rows = [
        ("device", d["device"]),
        ("era / congestion wake", f"{d['era']} / {d['congestion_wake']}"),
    ]
    if wear.get("aging_page_writes"):
        rows.append(
            (
                "counted from (s) / aging page writes",
                f"{wear['counted_from_s']:.4f} / {wear['aging_page_writes']:,}",
            )
        )
    rows += [
        ("accesses", f"{f['accesses']:,}"),
        (
            "faults minor / major / swap cache",
            f"{f['minor']:,} / {f['major']:,} / {f['swap_cache_hits']:,}",
        ),
        ("swap-in mean / p99 (us)", f"{lat['mean_us']:.1f} / {lat['p99_us']:.1f}"),
        ("swap-in device share", f"{bd['device_us']:.1f} of {bd['total_us']:.1f} us"),
        ("swap-out pages / time (s)", f"{out['pages']:,} / {out['time_s']:.4f}"),
        ("direct-reclaim stall (s)", f"{d['reclaim']['direct_stall_s']:.4f}"),
        ("simulated time (s) / slowdown", f"{d['simulated_time_s']:.4f} / {slowdown}"),
        (
            "reads / writes / trims",
            f"{d['reads']['requests']:,} / {d['writes']['requests']:,} / {d['trims']:,}",
        ),
        (
            "device time per read / write (us)",
            f"{d['reads']['service']['mean_us']:.1f} / {d['writes']['service']['mean_us']:.1f}",
        ),
        (
            "writes per page max / mean",
            f"{wear['max_writes_per_page']} / {wear['mean_writes_per_page']:.2f}",
        ),
    ]
    Console(width=120).print(key_value_table(dict(rows)))


def register(app: typer.Typer) -> None:
    app.command("swap")(swap_command)
