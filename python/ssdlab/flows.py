"""Flows: several jobs running at once on one device (docs/jobs.md, "Flows").

A flows file is TOML with one ``[[flow]]`` table per flow, each with a job file's fields; the
core runs them (``run(config, [job, ...])``, ``driver::jobs``). :func:`fairness` reports each
flow's slowdown when sharing the device against running alone, and the fairness figure of
MQSim's studies.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

from . import _core
from ._core import JobError
from .api import Config, Job, run
from .files import read_input_text


def is_flows_file(text: str) -> bool:
    """Whether a job file's text holds flows (``[[flow]]`` tables) rather than one job."""
    return any(line.strip().replace(" ", "") == "[[flow]]" for line in text.splitlines())


def load_flows(path: str | os.PathLike[str]) -> list[Job]:
    """The flows of a TOML file of ``[[flow]]`` tables, each checked as a job; an error names
    the file and the flow (its number from 1 and its name)."""
    name = os.fspath(path)
    text = read_input_text(name, "flows file", JobError)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise JobError(f"{name}: {e}") from None
    flows = data.pop("flow", None)
    if data:
        keys = ", ".join(sorted(data))
        raise JobError(f"{name}: {keys}: expected only [[flow]] tables in a flows file")
    if not isinstance(flows, list) or not flows:
        raise JobError(f"{name}: no [[flow]] table, expected one per flow")
    jobs = []
    for number, fields in enumerate(flows, start=1):
        label = f"flow {number}" + (f" ({fields['name']})" if "name" in fields else "")
        try:
            jobs.append(Job(**fields))
        except _core.SsdlabError as e:
            raise JobError(f"{name}: {label}: {e}") from None
    return jobs


def _mean_response_us(ops: Mapping[str, Any]) -> float:
    """The mean latency over every op of a result's ``ops`` (weighted by their counts)."""
    count = sum(int(o["count"]) for o in ops.values())
    if count == 0:
        return 0.0
    return sum(int(o["count"]) * float(o["latency_us"]["mean"]) for o in ops.values()) / count


def fairness(
    config: Config | str | os.PathLike[str],
    flows: Sequence[Job | Mapping[str, Any]],
    seed: int = 1,
) -> dict[str, Any]:
    """Each flow's slowdown when sharing the device, and the run's fairness.

    The flows run together once, and each alone once on a fresh device (its ``startdelay`` and
    ``group`` dropped). A flow's slowdown is its mean response time together over its mean
    response time alone (over all its measured requests); the fairness is the smallest slowdown
    over the largest, 1 when every flow is slowed alike (MQSim's studies' definitions;
    docs/jobs.md). Returns ``{"flows": [{"name", "alone_mean_us", "shared_mean_us",
    "slowdown"}], "fairness"}``."""
    if not isinstance(config, Config):
        config = Config.load(config)
    jobs = [f if isinstance(f, Job) else Job.from_dict(f) for f in flows]
    if len(jobs) < 2:
        raise ValueError(f"fairness: got {len(jobs)} flow(s), expected two or more to share")
    shared = run(config, jobs, seed=seed).flows
    out = []
    for job, together in zip(jobs, shared, strict=True):
        fields = {k: v for k, v in job.to_dict().items() if k not in ("startdelay", "group")}
        alone = run(config, Job(**fields), seed=seed)
        alone_us = _mean_response_us(alone["ops"])
        shared_us = _mean_response_us(together["ops"])
        out.append(
            {
                "name": fields.get("name", "job"),
                "alone_mean_us": alone_us,
                "shared_mean_us": shared_us,
                "slowdown": shared_us / alone_us if alone_us > 0 else float("nan"),
            }
        )
    slowdowns = [f["slowdown"] for f in out]
    return {"flows": out, "fairness": min(slowdowns) / max(slowdowns)}
