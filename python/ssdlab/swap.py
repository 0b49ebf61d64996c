"""The OS paging model: a memory-access trace paged through a simulated swap device.

``swap(device, memory=..., swap_size=..., workload=...)`` runs the core's paging model
(``crates/ssdlab/src/paging``, see docs/paging.md) and returns a :class:`SwapResult`: the result
as a dict, each swap-in fault's latency and the swap block trace as numpy arrays.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from os import PathLike
from typing import TYPE_CHECKING, Any

from . import _core
from .api import _override_strings, check_int, check_seed

if TYPE_CHECKING:
    import numpy as np

# One swap request: op 0 read, 1 write, 2 trim; byte offset and length; times in ps. Built on
# first use (`TRACE_DTYPE`, `swap`) so that importing ssdlab does not load numpy.
_TRACE_FIELDS = [
    ("op", "u1"),
    ("offset", "u8"),
    ("len", "u8"),
    ("submit_ps", "u8"),
    ("done_ps", "u8"),
]


def __getattr__(name: str) -> Any:
    if name == "TRACE_DTYPE":
        import numpy as np

        return np.dtype(_TRACE_FIELDS)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class SwapResult:
    """A paging run: ``data`` (the ``ssdlab.swap/1`` JSON as a dict), ``swap_in_us`` (one
    latency per swap-in fault, µs) and ``trace`` (the swap requests, :data:`TRACE_DTYPE`).
    With ``pc_mix.aging_rounds`` the dict and ``swap_in_us`` cover the counted rounds only,
    while ``trace`` keeps every request (those with ``submit_ps`` from
    ``data["wear"]["counted_from_s"]`` on are the counted ones)."""

    data: dict[str, Any]
    swap_in_us: np.ndarray
    trace: np.ndarray

    def to_json(self) -> str:
        return json.dumps(self.data, indent=2)


def _size_text(name: str, value: Any) -> str:
    """A size as the core reads it: text ("64MiB") as it is, an integer as bytes; anything
    else a TypeError naming the argument (the binding said only "cannot be converted to
    'PyString'")."""
    if isinstance(value, str):
        return value
    try:
        return str(check_int(name, value, 0, error=TypeError))
    except TypeError:
        raise TypeError(
            f"{name}: got {value!r} ({type(value).__name__}), expected a size such as '64MiB'"
            " or a whole number of bytes"
        ) from None


def swap(
    device: str,
    *,
    memory: str | int,
    swap_size: str | int,
    workload: str | PathLike[str],
    overrides: Mapping[str, Any] | Iterable[str] | None = None,
    seed: int = 1,
    swap_trace: str | PathLike[str] | None = None,
    swap_trace_format: str = "fio",
) -> SwapResult:
    """Page ``workload`` (a page-reference trace, valgrind lackey output, or ``"pc-mix"``,
    seed 003's PC application mix) through ``memory`` bytes of memory and ``swap_size`` bytes
    of swap (each a size such as ``"64MiB"`` or a whole number of bytes) on ``device`` (a preset
    or a TOML file; not a raw, fusion or zoned device, which has no blocks to overwrite in
    place). ``overrides`` are ``--set`` items: ``swap.KEY=VALUE`` for the paging model,
    anything else for the device. With ``swap_trace``, the swap block trace is also written
    to that file in ``swap_trace_format`` (a trace format ``ssdlab trace stats`` reads; fio's
    iolog keeps the discards; a ``.gz`` name compresses it)."""
    text, latencies_ps, rows = _core.swap(
        device,
        _size_text("memory", memory),
        _size_text("swap_size", swap_size),
        str(workload),
        list(_override_strings(overrides)),
        check_seed(seed),
        None if swap_trace is None else str(swap_trace),
        swap_trace_format,
    )
    import numpy as np

    return SwapResult(
        data=json.loads(text),
        swap_in_us=np.asarray(latencies_ps, dtype=np.float64) / 1e6,
        trace=np.array(rows, dtype=np.dtype(_TRACE_FIELDS)),
    )
