"""fio job files (``ssdlab run PRESET --fio job.fio``): fio's INI format read into ssdlab jobs,
and results written back the way fio reports them (text per job and per group, and fio's JSON).

A file is ``[global]`` plus job sections; each job section inherits ``[global]``'s options (and a
later ``[global]`` applies to the jobs after it). A job with ``stonewall`` (or
``wait_for_previous``) starts a new group: groups run one after another, as in fio.

What maps onto the job model (``workload/job.rs``) is translated; an option the model has no
field for is named in a warning and left out; an option that would change what the run means
(verification, replaying an I/O log, ...) is refused with the reason. See docs/fio.md.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import _core
from .api import Job
from .files import read_input_text

# fio's rw names → the job model's (`Rw` in workload/job.rs).
_RW = {
    "read": "read",
    "write": "write",
    "randread": "randread",
    "randwrite": "randwrite",
    "rw": "rw",
    "readwrite": "rw",
    "randrw": "randrw",
    "trim": "trim",
    "randtrim": "randtrim",
}

# Options that change nothing the simulator models: where the data lives on the host, how fio
# names or reports things, or fio's own bookkeeping.
_NO_EFFECT = {
    "name",
    "description",
    "filename",
    "directory",
    "filename_format",
    "thread",
    "group_reporting",
    "new_group",
    "invalidate",
    "randrepeat",
    "allrandrepeat",
    "randseed",
    "refill_buffers",
    "scramble_buffers",
    "buffer_pattern",
    "buffer_compress_percentage",
    "zero_buffers",
    "kb_base",
    "unit_base",
    "per_job_logs",
    "clat_percentiles",
    "lat_percentiles",
    "percentile_list",
    "disable_lat",
    "disable_clat",
    "disable_slat",
    "write_bw_log",
    "write_lat_log",
    "write_iops_log",
    "log_avg_msec",
    "cpus_allowed",
    "cpumask",
    "numa_cpu_nodes",
    "create_serialize",
    "fallocate",
    "end_fsync",
    "overwrite",
    "iodepth_batch_complete",
    "iodepth_batch_complete_min",
}

# fio's engines the host model has (docs/host.md): their names are the job field's values, the
# core's `IoEngine::NAMES` (workload/job.rs), which checks each job again. Kept here only to tell
# an engine the model lacks (a warning) from one it has.
_ENGINES = ("sync", "psync", "libaio", "io_uring", "posixaio")

# Options whose presence would make the run mean something else than fio's: refused.
_REFUSED = {
    "verify": "data verification needs the data, which the simulator does not keep",
    "do_verify": "data verification needs the data, which the simulator does not keep",
    "verify_pattern": "data verification needs the data, which the simulator does not keep",
    "verify_interval": "data verification needs the data, which the simulator does not keep",
    "verify_backlog": "data verification needs the data, which the simulator does not keep",
    "verify_only": "data verification needs the data, which the simulator does not keep",
    "verify_state_save": "data verification needs the data, which the simulator does not keep",
    "experimental_verify": "data verification needs the data, which the simulator does not keep",
    "read_iolog": "replaying an I/O log is a trace replay: use --trace FILE",
    "replay_redirect": "replaying an I/O log is a trace replay: use --trace FILE",
    "exec_prerun": "running host commands is outside the simulation",
    "exec_postrun": "running host commands is outside the simulation",
    "fsync": "fsync after N writes issues flushes between the job's I/O; not modelled",
    "fdatasync": "fdatasync after N writes issues flushes between the job's I/O; not modelled",
    "loops": "repeating a job restarts it on a changed device; run it again instead",
}

_BOOLEAN_OFF = {"0", "false", "off", "no", "none"}

# fio's size suffixes with kb_base = 1024 (its default): k, m, g, t, p, with or without "b"/"ib".
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtpe]?)(i?b?)\s*$", re.IGNORECASE)
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5, "e": 6}

# fio's time suffixes; a bare number is seconds for runtime and ramp_time.
_TIME = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|usec|ms|msec|s|sec|m|min|h|d)?\s*$", re.IGNORECASE)
_TIME_UNITS = {
    "us": "us",
    "usec": "us",
    "ms": "ms",
    "msec": "ms",
    "s": "s",
    "sec": "s",
}
_TIME_SECONDS = {"m": 60, "min": 60, "h": 3600, "d": 86400}

# A time_based job runs until its runtime: as many requests as it can issue in that time. The
# job model's io_count is that bound (the runtime stops it first).
_TIME_BASED_IO_COUNT = 1 << 62


class FioError(Exception):
    """A job file ssdlab cannot run: one line naming the file and line."""


@dataclass
class FioJob:
    """One job section as ssdlab runs it."""

    name: str
    group: int
    line: int
    fields: dict[str, Any]
    options: dict[str, str]

    def job(self) -> Job:
        return Job(**self.fields)


@dataclass
class FioFile:
    path: str
    jobs: list[FioJob]
    warnings: list[str] = field(default_factory=list)

    def groups(self) -> list[list[FioJob]]:
        out: list[list[FioJob]] = []
        for job in self.jobs:
            if not out or out[-1][0].group != job.group:
                out.append([])
            out[-1].append(job)
        return out


def parse_size(text: str, where: str, option: str) -> int:
    """A fio size (``4k``, ``1m``, ``1GiB``, ``512``) in bytes; k = 1024 as fio's default."""
    m = _SIZE.match(text)
    if not m:
        raise FioError(f"{where}: {option}={text!r}: expected a size such as 4k, 128k, 1m or 10g")
    number, prefix, _ = m.groups()
    value = float(number) * (1024 ** _POWERS[prefix.lower()])
    if not value.is_integer() or value >= 2**64:
        raise FioError(f"{where}: {option}={text!r}: expected a whole number of bytes below 2^64")
    return int(value)


def parse_time(text: str, where: str, option: str) -> str:
    """A fio time (bare number: seconds) as the job model's duration text."""
    m = _TIME.match(text)
    if not m:
        raise FioError(f"{where}: {option}={text!r}: expected a time such as 30, 10s, 500ms or 2m")
    number, unit = m.groups()
    unit = (unit or "s").lower()
    if unit in _TIME_SECONDS:
        return f"{float(number) * _TIME_SECONDS[unit]:g}s"
    return f"{number}{_TIME_UNITS[unit]}"


def _size_name(size: int) -> str:
    return str(_core.format_bytes(size))


def parse_bssplit(text: str, where: str) -> dict[str, float]:
    """``bssplit=4k/10:64k/50:32k/40``: block sizes and their percentages. Sizes without a
    percentage share what is left equally, as fio does."""
    mix: dict[str, float] = {}
    open_sizes: list[str] = []
    given = 0.0
    for part in text.split(":"):
        if not part.strip():
            raise FioError(f"{where}: bssplit={text!r}: empty entry")
        size_text, _, pct_text = part.partition("/")
        size = _size_name(parse_size(size_text, where, "bssplit"))
        if pct_text.strip() == "":
            open_sizes.append(size)
            continue
        try:
            pct = float(pct_text)
        except ValueError:
            raise FioError(
                f"{where}: bssplit={text!r}: expected SIZE/PERCENT:SIZE/PERCENT..., "
                f"got percentage {pct_text!r}"
            ) from None
        if pct < 0:
            raise FioError(f"{where}: bssplit={text!r}: percentage {pct_text} below 0")
        mix[size] = mix.get(size, 0.0) + pct
        given += pct
    if given > 100.0 + 1e-9:
        raise FioError(f"{where}: bssplit={text!r}: percentages add up to {given:g}, above 100")
    if open_sizes:
        share = (100.0 - given) / len(open_sizes)
        for size in open_sizes:
            mix[size] = mix.get(size, 0.0) + share
    # The job model weighs sizes with whole numbers: percentages to a hundredth of a percent.
    return {size: int(round(pct * 100)) for size, pct in mix.items() if pct > 0}


def _read_sections(text: str, path: str) -> list[tuple[str, int, list[tuple[int, str, str]]]]:
    """The file's sections in order: (name, line, [(line, key, value)])."""
    sections: list[tuple[str, int, list[tuple[int, str, str]]]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if raw.startswith("\ufeff") and number == 1:
            line = line.lstrip("\ufeff")
        if not line or line[0] in "#;":
            continue
        where = f"{path}:{number}"
        if line.startswith("["):
            if not line.endswith("]") or len(line) < 3:
                raise FioError(f"{where}: {line!r}: expected a section header such as [job1]")
            sections.append((line[1:-1].strip(), number, []))
            continue
        if not sections:
            raise FioError(f"{where}: {line!r}: an option before any [section]")
        if line.startswith("include "):
            raise FioError(f"{where}: include: not supported; put the options in this file")
        key, sep, value = line.partition("=")
        key = key.strip().lower()
        if not key or not re.fullmatch(r"[a-z0-9_]+", key):
            raise FioError(f"{where}: {line!r}: expected OPTION or OPTION=VALUE")
        # fio allows a comment after the value only when it starts with whitespace.
        value = re.split(r"\s[#;]", value, maxsplit=1)[0].strip() if sep else ""
        sections[-1][2].append((number, key, value))
    return sections


def load(path: str | os.PathLike[str], text: str | None = None) -> FioFile:
    """Read a fio job file into ssdlab jobs, with warnings for what is not modelled."""
    name = os.fspath(path)
    if text is None:
        text = read_input_text(name, "fio job file", FioError)
    sections = _read_sections(text, name)
    fio = FioFile(path=name, jobs=[])
    global_opts: list[tuple[int, str, str]] = []
    group = 0
    for section, line, options in sections:
        if section.lower() == "global":
            global_opts = [*global_opts, *options]
            continue
        merged: dict[str, tuple[int, str]] = {}
        for number, key, value in [*global_opts, *options]:
            merged[key] = (number, value)
        stonewall = any(key in ("stonewall", "wait_for_previous") for _, key, _ in options)
        if stonewall and fio.jobs:
            group += 1
        fields, warnings = _translate(section, merged, name)
        fio.warnings.extend(warnings)
        fio.jobs.append(
            FioJob(
                name=section,
                group=group,
                line=line,
                fields=fields,
                options={k: v for k, (_, v) in merged.items()},
            )
        )
    if not fio.jobs:
        raise FioError(f"{name}: no job sections (only [global]); add a section such as [job1]")
    for job in fio.jobs:
        try:
            job.job()
        except _core.SsdlabError as error:
            raise FioError(f"{name}:{job.line}: [{job.name}]: {error}") from None
    return fio


def _translate(
    section: str, options: Mapping[str, tuple[int, str]], path: str
) -> tuple[dict[str, Any], list[str]]:
    """One job's options (with [global]'s) as job-model fields, and the warnings."""
    fields: dict[str, Any] = {"name": section}
    warnings: list[str] = []

    def where(key: str) -> str:
        return f"{path}:{options[key][0]}"

    def value(key: str) -> str:
        return options[key][1]

    def warn(key: str, why: str) -> None:
        warnings.append(f"{where(key)}: [{section}] {key}={value(key)}: {why}")

    def integer(key: str, low: int = 0) -> int:
        text = value(key)
        try:
            n = int(text)
        except ValueError:
            raise FioError(
                f"{where(key)}: {key}={text!r}: expected a whole number of at least {low}"
            ) from None
        if n < low:
            raise FioError(f"{where(key)}: {key}={text!r}: expected at least {low}")
        return n

    for key in options:
        # loops=1 is fio's default: one pass, nothing repeated.
        harmless = _BOOLEAN_OFF | ({"1"} if key == "loops" else set())
        if key in _REFUSED and value(key).lower() not in harmless:
            raise FioError(f"{where(key)}: [{section}] {key}: refused: {_REFUSED[key]}")

    if "rw" in options or "readwrite" in options:
        key = "rw" if "rw" in options else "readwrite"
        rw, _, modifier = value(key).partition(":")
        if rw.strip().lower() not in _RW:
            raise FioError(
                f"{where(key)}: {key}={value(key)!r}: expected one of {', '.join(_RW)}"
                " (trimwrite and randtrimwrite are not modelled)"
            )
        fields["rw"] = _RW[rw.strip().lower()]
        if modifier.strip():
            warn(
                key,
                "the ':N' modifier (offset skips or new random offsets every N I/Os) is not "
                "modelled: every I/O takes the next offset of its pattern",
            )
    else:
        fields["rw"] = "read"  # fio's default

    if "bssplit" in options:
        text = value("bssplit")
        if "," in text:
            warn("bssplit", "separate read and write splits are not modelled: the first is used")
            text = text.split(",")[0]
        fields["bs"] = parse_bssplit(text, where("bssplit"))
    elif "bs" in options or "blocksize" in options:
        key = "bs" if "bs" in options else "blocksize"
        text = value(key)
        if "," in text:
            warn(key, "separate read and write sizes are not modelled: the first is used")
            text = text.split(",")[0]
        fields["bs"] = _size_name(parse_size(text, where(key), key))
    if "bsrange" in options:
        warn("bsrange", "a range of sizes is not modelled: use bssplit")

    if "rwmixread" in options:
        fields["rwmixread"] = integer("rwmixread")
    elif "rwmixwrite" in options:
        fields["rwmixread"] = 100 - integer("rwmixwrite")
    if "iodepth" in options:
        fields["iodepth"] = integer("iodepth", 1)
    for key in ("iodepth_batch", "iodepth_batch_submit"):
        if key in options:
            fields["iodepth_batch"] = integer(key, 1)
    if "iodepth_low" in options:
        fields["iodepth_low"] = integer("iodepth_low", 1)
    if "numjobs" in options:
        fields["numjobs"] = integer("numjobs", 1)
    if "size" in options:
        fields["size"] = _size_name(parse_size(value("size"), where("size"), "size"))
    if "offset" in options:
        fields["offset"] = _size_name(parse_size(value("offset"), where("offset"), "offset"))
    if "runtime" in options:
        fields["runtime"] = parse_time(value("runtime"), where("runtime"), "runtime")
    if "ramp_time" in options:
        fields["ramp"] = parse_time(value("ramp_time"), where("ramp_time"), "ramp_time")
    if "time_based" in options and value("time_based").lower() not in _BOOLEAN_OFF:
        if "runtime" not in options:
            raise FioError(f"{where('time_based')}: [{section}] time_based needs runtime=")
        fields["io_count"] = _TIME_BASED_IO_COUNT
    if "number_ios" in options:
        # fio's number_ios is per job (each of numjobs); the job model's io_count is the total.
        fields["io_count"] = integer("number_ios", 1) * int(fields.get("numjobs", 1))
    if "rate_iops" in options:
        text = value("rate_iops")
        if "," in text:
            warn("rate_iops", "separate read and write rates are not modelled: the first is used")
            text = text.split(",")[0]
        try:
            fields["rate_iops"] = float(text)
        except ValueError:
            raise FioError(
                f"{where('rate_iops')}: rate_iops={text!r}: expected requests per second"
            ) from None
    if "random_distribution" in options:
        fields["distribution"] = _distribution(section, value("random_distribution"))
        if fields["distribution"] == "uniform" and value("random_distribution") != "random":
            warn(
                "random_distribution",
                "not modelled (the job model has uniform and zipf): uniform is used",
            )
    if "blockalign" in options or "ba" in options:
        key = "blockalign" if "blockalign" in options else "ba"
        align = parse_size(value(key).split(",")[0], where(key), key)
        bs = fields.get("bs", "4KiB")
        if not isinstance(bs, str) or align != _core.parse_bytes(bs):
            warn(key, "offsets are aligned to the block size; another alignment is not modelled")
    if "direct" in options and value("direct").lower() in _BOOLEAN_OFF:
        warn("direct", "buffered I/O (a page cache) is not modelled: every I/O reaches the drive")
    if "ioengine" in options:
        engine = value("ioengine").strip().lower()
        if engine in _ENGINES:
            fields["ioengine"] = engine
        else:
            warn(
                "ioengine",
                f"not modelled (the host model has {', '.join(_ENGINES)}): libaio's "
                "behaviour is used, up to iodepth requests at the device",
            )
    if "zonemode" in options:
        mode = value("zonemode").strip().lower()
        if mode == "zbd":
            fields["zonemode"] = "zbd"
        elif mode != "none":
            raise FioError(
                f"{where('zonemode')}: [{section}] zonemode={value('zonemode')!r}: expected zbd "
                "(a zoned drive, a config with [zns]) or none; strided and block zones are not "
                "modelled"
            )
    for key in ("max_open_zones", "job_max_open_zones"):
        if key in options:
            fields["max_open_zones"] = integer(key, 1)
    for key in ("zonesize", "zonecapacity", "zonerange", "zoneskip"):
        if key in options and fields.get("zonemode") == "zbd":
            warn(key, "with zonemode=zbd the drive's zones are used (its [zns] section)")
    for key in ("zone_reset_threshold", "zone_reset_frequency"):
        if key in options:
            warn(
                key,
                "not modelled: a zone is reset when a write finds it without room (docs/zns.md)",
            )
    handled = {
        "zonemode",
        "max_open_zones",
        "job_max_open_zones",
        "zonesize",
        "zonecapacity",
        "zonerange",
        "zoneskip",
        "zone_reset_threshold",
        "zone_reset_frequency",
        "rw",
        "readwrite",
        "bs",
        "blocksize",
        "bssplit",
        "bsrange",
        "rwmixread",
        "rwmixwrite",
        "iodepth",
        "numjobs",
        "size",
        "offset",
        "runtime",
        "ramp_time",
        "time_based",
        "number_ios",
        "rate_iops",
        "random_distribution",
        "blockalign",
        "ba",
        "direct",
        "ioengine",
        "iodepth_batch",
        "iodepth_batch_submit",
        "iodepth_low",
        "norandommap",  # the generator draws each random offset afresh: fio's norandommap
        "stonewall",
        "wait_for_previous",
        *_NO_EFFECT,
        *_REFUSED,
    }
    for key in options:
        if key not in handled:
            warn(key, "not modelled by ssdlab; ignored")
    return fields, warnings


def _distribution(section: str, text: str) -> str:
    """fio's random_distribution as the job model's: ``zipf:θ`` maps; ``random`` is uniform;
    pareto, normal (gauss) and zoned have no counterpart (the caller warns)."""
    kind, _, arg = text.partition(":")
    kind = kind.strip().lower()
    if kind == "zipf" and arg.strip():
        return f"zipf:{arg.strip()}"
    return "uniform"


# ----------------------------------------------------------------------------------------------
# Reports

# fio's default completion-latency percentiles that the result has.
_PERCENTILES = (
    ("50.000000", "p50"),
    ("90.000000", "p90"),
    ("99.000000", "p99"),
    ("99.900000", "p99_9"),
    ("99.990000", "p99_99"),
)


def _direction(ops: Mapping[str, Any], op: str, runtime_s: float) -> dict[str, Any]:
    """One direction of a job in fio's JSON shape (zeros when the job did none)."""
    o = ops.get(op)
    if not o:
        return {
            "io_bytes": 0,
            "io_kbytes": 0,
            "bw_bytes": 0,
            "bw": 0,
            "iops": 0.0,
            "runtime": int(round(runtime_s * 1000)),
            "total_ios": 0,
            "lat_ns": {"min": 0, "max": 0, "mean": 0.0, "percentile": {}},
            "clat_ns": {"min": 0, "max": 0, "mean": 0.0, "percentile": {}},
        }
    lat = o["latency_us"]
    bw_bytes = int(round(o["bytes"] / runtime_s)) if runtime_s > 0 else 0
    lat_ns = {
        "min": int(round(lat["min"] * 1000)),
        "max": int(round(lat["max"] * 1000)),
        "mean": lat["mean"] * 1000,
        "percentile": {
            key: int(round(lat[name] * 1000)) for key, name in _PERCENTILES if name in lat
        },
    }
    return {
        "io_bytes": int(o["bytes"]),
        "io_kbytes": int(o["bytes"]) // 1024,
        "bw_bytes": bw_bytes,
        "bw": bw_bytes // 1024,
        "iops": float(o["iops"]),
        "runtime": int(round(runtime_s * 1000)),
        "total_ios": int(o["count"]),
        # ssdlab measures each request from its arrival to its completion: fio's lat; the
        # submission share (slat) is inside it, so clat carries the same figures.
        "lat_ns": lat_ns,
        "clat_ns": lat_ns,
    }


def job_json(job: FioJob, result: Mapping[str, Any]) -> dict[str, Any]:
    runtime_s = float(result["sim"]["measured_time_s"])
    ops = result.get("ops", {})
    return {
        "jobname": job.name,
        "groupid": job.group,
        "error": 0,
        "job options": dict(job.options),
        "read": _direction(ops, "read", runtime_s),
        "write": _direction(ops, "write", runtime_s),
        "trim": _direction(ops, "trim", runtime_s),
        "job_runtime": int(round(runtime_s * 1000)),
        "ssdlab": {"config_name": result["config_name"], "config_hash": result["config_hash"]},
    }


def to_json(fio: FioFile, results: Iterable[Mapping[str, Any]], version: str) -> dict[str, Any]:
    """The run of a job file in fio's ``--output-format=json`` shape."""
    jobs = [job_json(job, result) for job, result in zip(fio.jobs, results, strict=True)]
    return {
        "fio version": f"ssdlab-{version}",
        "global options": {},
        "jobs": jobs,
        "disk_util": [],
    }


def _human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f}{unit}" if unit == "B" else f"{n:.1f}{unit}"
        n /= 1024
    return f"{n:.1f}TiB"


def _human_rate(bytes_per_s: float) -> str:
    return f"{_human_bytes(bytes_per_s)}/s ({bytes_per_s / 1e6:.1f}MB/s)"


def to_text(fio: FioFile, results: Sequence[Mapping[str, Any]]) -> str:
    """A report in the manner of fio's normal output: each job, then each group's totals."""
    lines: list[str] = []
    for job, result in zip(fio.jobs, results, strict=True):
        j = job_json(job, result)
        lines.append(
            f"{job.name}: (groupid={job.group}, jobs={job.fields.get('numjobs', 1)}): "
            f"rw={job.fields['rw']}, iodepth={job.fields.get('iodepth', 1)}"
        )
        for op in ("read", "write", "trim"):
            d = j[op]
            if d["total_ios"] == 0:
                continue
            lines.append(
                f"  {op}: IOPS={d['iops']:.0f}, BW={_human_rate(d['bw_bytes'])}"
                f"({_human_bytes(d['io_bytes'])}/{d['runtime']}msec)"
            )
            lat = d["lat_ns"]
            lines.append(
                f"    lat (usec): min={lat['min'] / 1000:.2f}, max={lat['max'] / 1000:.2f}, "
                f"avg={lat['mean'] / 1000:.2f}"
            )
            pct = ", ".join(f"{float(k):g}th={v / 1000:.2f}" for k, v in lat["percentile"].items())
            lines.append(f"    lat percentiles (usec): {pct}")
    lines.append("")
    for group in fio.groups():
        gid = group[0].group
        lines.append(f"Run status group {gid} (all jobs):")
        index = {id(job): i for i, job in enumerate(fio.jobs)}
        # The jobs of a group ran one after another: the group's rate is its bytes over the
        # sum of their measured times.
        seconds = sum(float(results[index[id(job)]]["sim"]["measured_time_s"]) for job in group)
        for op, label in (("read", "READ"), ("write", "WRITE"), ("trim", "TRIM")):
            members = [job_json(job, results[index[id(job)]])[op] for job in group]
            io = sum(m["io_bytes"] for m in members)
            if io == 0:
                continue
            runs = [m["runtime"] for m in members if m["io_bytes"]]
            rates = [m["bw_bytes"] for m in members if m["io_bytes"]]
            total = io / seconds if seconds > 0 else 0.0
            lines.append(
                f"   {label}: bw={_human_rate(total)}, {_human_rate(min(rates))}-"
                f"{_human_rate(max(rates))}, io={_human_bytes(io)},"
                f" run={min(runs)}-{max(runs)}msec"
            )
    return "\n".join(lines) + "\n"
