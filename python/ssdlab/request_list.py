"""A host program's request list run on a drive (``_core.run_requests``, ``driver/requests.rs``).

A program whose I/O does not depend on timing (a key–value cache's bucket and segment writes,
its zone resets: ``ssdlab.examples.kvcache``) works out its requests first, each with its own
op, place, length and write stream (the placement id it carries), and the drive runs them in
order, at most ``iodepth`` in flight. The first ``warmup`` requests fill the drive; the result
is measured from the request after them (its ``requests.measured`` has the write counters of
that part).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _core
from ._core import JobError
from .api import Config, ProgressCallback, Result, _progress_callback, check_int, check_seed

#: Op codes by name, as ``run_requests`` takes them (the order of ``_core.op_names()``).
OP_CODES: dict[str, int] = {name: code for code, name in enumerate(_core.op_names())}


def _array(name: str, values: Any, count: int, bound: int) -> np.ndarray:
    """``values`` as an array of ``count`` integers in [0, bound], or a JobError naming it."""
    array = np.asarray(values)
    if array.ndim != 1 or array.shape[0] != count:
        raise JobError(
            f"request list, `{name}`: got shape {array.shape}, expected {count} values (one per op)"
        )
    if count and array.dtype.kind not in "iu":
        raise JobError(f"request list, `{name}`: got {array.dtype} values, expected integers")
    if count and (int(array.min()) < 0 or int(array.max()) > bound):
        raise JobError(
            f"request list, `{name}`: got values from {int(array.min())} to {int(array.max())},"
            f" expected 0 up to {bound}"
        )
    return array


def run_requests(
    config: Config | str | os.PathLike[str],
    ops: Sequence[int] | np.ndarray,
    offsets: Sequence[int] | np.ndarray,
    lens: Sequence[int] | np.ndarray,
    streams: Sequence[int] | np.ndarray | None = None,
    *,
    seed: int = 1,
    iodepth: int = 32,
    warmup: int = 0,
    progress: ProgressCallback | None = None,
    stats_interval: str | None = None,
) -> Result:
    """Run the request list (op codes from :data:`OP_CODES`, byte offsets, byte lengths, write
    streams, default 0) on ``config``, in order, at most ``iodepth`` in flight, measured after
    the first ``warmup`` requests; the same inputs give the same result."""
    if not isinstance(config, Config):
        config = Config.load(config)
    seed = check_seed(seed)
    iodepth = check_int("iodepth", iodepth, 1, 2**32 - 1)
    warmup = check_int("warmup", warmup)
    op_array = np.asarray(ops)
    if op_array.ndim != 1:
        raise JobError(f"request list, `ops`: got shape {op_array.shape}, expected one dimension")
    count = op_array.shape[0]
    op_array = _array("ops", op_array, count, len(OP_CODES) - 1)
    offset_array = _array("offsets", offsets, count, 2**64 - 1)
    len_array = _array("lens", lens, count, 2**64 - 1)
    stream_array = (
        np.zeros(count, dtype=np.uint8)
        if streams is None
        else _array("streams", streams, count, 255)
    )
    json_text, _ = _core.run_requests(
        config.to_json(),
        op_array.astype(np.uint8).tobytes(),
        offset_array.astype("<u8").tobytes(),
        len_array.astype("<u8").tobytes(),
        stream_array.astype(np.uint8).tobytes(),
        seed,
        iodepth,
        warmup,
        _progress_callback(progress),
        stats_interval,
    )
    return Result(json_text, None)
