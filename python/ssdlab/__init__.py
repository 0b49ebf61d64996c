"""ssdlab: a fast, deterministic simulator of solid-state storage architectures.

A run in four lines::

    config = ssdlab.Config.load("small-tlc").set("ftl.over_provisioning", 0.2)
    job = ssdlab.Job(rw="randwrite", bs="4KiB", iodepth=16, io_count=20_000)
    result = ssdlab.run(config, job, seed=1, record_requests=True)
    result.to_dict()["device"]["write_amplification"], result.latencies("write")
"""

import importlib
from typing import TYPE_CHECKING, Any

# SimulationError: the simulator reached a state it cannot continue from (a bug, not bad input).
from ._core import (
    ConfigError,
    Interrupted,
    JobError,
    PagingError,
    ServeError,
    SimulationError,
    SsdlabError,
    TraceError,
)
from ._core import version as _core_version
from .api import (
    Config,
    Job,
    Result,
    Trace,
    bench,
    config_schema,
    generate_trace,
    partial_result,
    precondition,
    preset_toml,
    presets,
    run,
    trace_formats,
    trace_models,
    trace_stats,
)
from .flows import fairness, load_flows
from .fusion import FusionDevice, Hfsl
from .swap import SwapResult, swap

if TYPE_CHECKING:
    from .experiments.results import load_results
    from .experiments.runner import run_sweep
    from .experiments.sweep import Sweep, SweepError
    from .request_list import run_requests

# The sweep machinery (polars, numpy, process pools) is loaded on first use, so that commands
# which never sweep start fast (`ssdlab --help`).
_LAZY = {
    "load_results": ".experiments.results",
    "run_requests": ".request_list",
    "run_sweep": ".experiments.runner",
    "Sweep": ".experiments.sweep",
    "SweepError": ".experiments.sweep",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__version__: str = _core_version()

__all__ = [
    "fairness",
    "load_flows",
    "Config",
    "ConfigError",
    "FusionDevice",
    "Hfsl",
    "Interrupted",
    "Job",
    "JobError",
    "PagingError",
    "Result",
    "ServeError",
    "SimulationError",
    "SsdlabError",
    "Sweep",
    "SweepError",
    "Trace",
    "TraceError",
    "__version__",
    "bench",
    "generate_trace",
    "load_results",
    "config_schema",
    "partial_result",
    "precondition",
    "preset_toml",
    "presets",
    "run",
    "run_requests",
    "run_sweep",
    "swap",
    "SwapResult",
    "trace_formats",
    "trace_models",
    "trace_stats",
]
