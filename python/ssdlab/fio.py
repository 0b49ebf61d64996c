"""fio job files (``ssdlab run PRESET --fio job.fio``): fio's INI format read into ssdlab jobs,
and results written back the way fio reports them (text per job and per group, and fio's JSON).

A file is ``[global]`` plus job sections; each job section inherits ``[global]``'s options (and a
later ``[global]`` applies to the jobs after it). A job with ``stonewall`` (or
``wait_for_previous``, or ``new_group``) starts a new group: the jobs of a group run together on
the device, the groups one after another, as in fio (one run of flows, ``driver::jobs``).

What maps onto the job model (``workload/job.rs``) is translated; an option the model has no
field for is named in a warning and left out; an option that would change what the run means
(verification, replaying an I/O log, ...) is refused with the reason. See docs/fio.md.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from . import _core
from .api import RECORD_FIELDS, Job
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
    "log_max_value",
    "log_offset",
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

# fio's data placement options (the io_uring_cmd engine's): the newer names and the FDP-only
# ones they replaced.
_PLACEMENT_OPTIONS = (
    "dataplacement",
    "fdp",
    "plids",
    "fdp_pli",
    "plid_select",
    "fdp_pli_select",
    "dp_scheme",
)
# fio keeps at most this many placement identifiers per job (FIO_MAX_DP_IDS, dataplacement.h).
_MAX_PLACEMENT_IDS = 16
_PLACEMENT_SELECT = {"roundrobin": "round-robin", "random": "random"}


def _placement_ids(text: str, where: str, key: str) -> list[int]:
    """fio's ``plids``/``fdp_pli``: a comma-separated list of identifiers and ranges (``0,2-4``)."""
    ids: list[int] = []
    for part in text.split(","):
        part = part.strip()
        low, _, high = part.partition("-")
        try:
            first, last = int(low), int(high) if high else int(low)
        except ValueError:
            raise FioError(
                f"{where}: {key}={text!r}: expected placement identifiers and ranges such as 0,2-4"
            ) from None
        if first < 0 or last < first:
            raise FioError(f"{where}: {key}={text!r}: range {part!r} runs backwards")
        ids.extend(range(first, last + 1))
        if len(ids) > _MAX_PLACEMENT_IDS:
            raise FioError(
                f"{where}: {key}={text!r}: expected at most {_MAX_PLACEMENT_IDS} placement "
                "identifiers (fio's limit)"
            )
    return ids


def _placement(
    options: Mapping[str, Option],
    fields: dict[str, Any],
    where: Any,
    value: Any,
    warn: Any,
) -> None:
    """fio's data placement options as the job's ``placement_ids`` and ``placement_select``: on
    a drive with ``[fdp]`` a write's stream is its placement identifier (docs/fdp.md), and with
    ``dataplacement=streams`` the same identifiers are stream ids (``ftl.streams``)."""
    mode = None
    if "dataplacement" in options:
        mode = value("dataplacement").strip().lower()
        if mode not in ("none", "fdp", "streams"):
            raise FioError(
                f"{where('dataplacement')}: dataplacement={value('dataplacement')!r}: expected "
                "none, fdp or streams"
            )
    elif "fdp" in options and value("fdp").strip().lower() not in _BOOLEAN_OFF:
        mode = "fdp"
    if mode in (None, "none"):
        for key in ("plids", "fdp_pli", "plid_select", "fdp_pli_select", "dp_scheme"):
            if key in options:
                warn(key, "without dataplacement=fdp|streams (or fdp=1) fio ignores it")
        return
    for key in ("plids", "fdp_pli"):
        if key in options:
            fields["placement_ids"] = _placement_ids(value(key), where(key), key)
    if "placement_ids" not in fields:
        key = "dataplacement" if "dataplacement" in options else "fdp"
        warn(
            key,
            "without plids fio spreads writes over every placement identifier the drive "
            "reports; give plids (fdp_pli) to choose them: the writes go with identifier 0",
        )
    for key in ("plid_select", "fdp_pli_select"):
        if key in options:
            select = value(key).strip().lower()
            if select not in _PLACEMENT_SELECT:
                raise FioError(
                    f"{where(key)}: {key}={value(key)!r}: expected roundrobin or random (the "
                    "scheme file of plid_select=scheme is not modelled)"
                )
            fields["placement_select"] = _PLACEMENT_SELECT[select]
    if "dp_scheme" in options:
        warn("dp_scheme", "not modelled: plid_select=scheme is refused")


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

# fio's size grammar, as fio 3.33 reads it (`__get_mult_bytes` in parse.c, and checked against
# fio 3.33 itself): a whole number (decimal or 0x hex) and a suffix, case-insensitive. With
# kb_base=1024 (fio's default, its "compatibility mode") k, kb, m, mb, ... are powers of 1024 and
# the IEC kib, mib, ... are powers of 1000; with kb_base=1000 the other way round. So in a fio
# file `4KiB` is 4,000 bytes and `4k` 4,096 unless the file says kb_base=1000. A trailing `%` is
# a share of the drive (fio: of the file or device).
_SIZE = re.compile(r"^\s*(0x[0-9a-f]+|\d+)\s*([a-z]*|%)\s*$", re.IGNORECASE)
_POWERS = {"k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
_KB_BASES = (1000, 1024)
DEFAULT_KB_BASE = 1024  # fio's default (HOWTO, kb_base)

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

#: Deepest chain of `include` lines (a file including itself would never end).
MAX_INCLUDE_DEPTH = 16

# `$pagesize` as fio substitutes it: the host's page size. The simulated host is a Linux x86-64
# machine (docs/host.md), whose base page is 4 KiB.
HOST_PAGE_BYTES = 4096


class FioError(Exception):
    """A job file ssdlab cannot run: one line naming the file and line."""


@dataclass
class FioJob:
    """One job section as ssdlab runs it."""

    name: str
    # fio's reporting group (its JSON's groupid): stonewall and new_group start a new one.
    group: int
    # The jobs of one phase run together, the phases one after another (stonewall).
    phase: int
    line: int
    fields: dict[str, Any]
    options: dict[str, str]
    # Where each of its options was set ("file:line"), for the messages about fitting and
    # the core's refusals.
    where: dict[str, str] = field(default_factory=dict)
    # The options of its own section (fio's JSON "job options"; `options` has [global]'s too).
    own: dict[str, str] = field(default_factory=dict)

    def job(self) -> Job:
        return Job(**self.model_fields())

    def model_fields(self) -> dict[str, Any]:
        """The job model's fields. fio runs ``ramp_time`` first and then ``runtime``, measured
        after the ramp; the job model's ``runtime`` counts from the start, ramp included, so the
        model's runtime is fio's runtime plus the ramp (``fields`` keeps fio's two times, which
        the ``--runtime``/``--ramp`` flags replace)."""
        fields = dict(self.fields)
        if self.phase:
            fields["group"] = self.phase
        time_based = self.options.get("time_based", "0").strip().lower() not in _BOOLEAN_OFF
        if "runtime" in fields and "io_count" in fields and "size" in fields and not time_based:
            # fio ends a job that is not time_based at its size, runtime or not: each clone's
            # count at most one pass of size (the job model caps it so only without a runtime,
            # where it cannot tell fio's time_based apart).
            sizes = _block_sizes(fields)
            weights = list(fields["bs"].values()) if isinstance(fields.get("bs"), dict) else [1]
            mean = sum(b * w for b, w in zip(sizes, weights, strict=True)) / sum(weights)
            size = int(_core.parse_bytes(str(fields["size"])))
            fields["io_count"] = min(int(fields["io_count"]), max(math.floor(size / mean), 1))
        if "runtime" in fields and fields.get("ramp") is not None:
            total_ps = duration_ps(str(fields["runtime"])) + duration_ps(str(fields["ramp"]))
            fields["runtime"] = duration_text(total_ps)
        return fields

    def extent(self, capacity: int) -> int:
        """The byte just past the job's region on a drive of ``capacity`` bytes."""
        offset = int(_core.parse_bytes(str(self.fields.get("offset", "0"))))
        size = self.fields.get("size")
        if size is None:
            # The rest of the drive; an offset at or past its end still needs one request.
            return max(capacity, offset + max(_block_sizes(self.fields)))
        return offset + int(_core.parse_bytes(str(size)))


@dataclass
class FioFile:
    path: str
    jobs: list[FioJob]
    warnings: list[str] = field(default_factory=list)
    # fio's JSON "global options": the [global] options before the first job, and the command
    # line's.
    global_options: dict[str, str] = field(default_factory=dict)

    def groups(self) -> list[list[FioJob]]:
        out: list[list[FioJob]] = []
        for job in self.jobs:
            if not out or out[-1][0].group != job.group:
                out.append([])
            out[-1].append(job)
        return out


@dataclass(frozen=True)
class Option:
    """One ``option=value`` line: where it is, the section it is in, and what it says (after
    ``${VAR}`` and ``$ncpus``-style expansion)."""

    where: str
    section: str
    key: str
    value: str


def parse_size(
    text: str,
    where: str,
    option: str,
    kb_base: int = DEFAULT_KB_BASE,
    capacity: int | None = None,
) -> int:
    """A fio size (``4k``, ``1m``, ``1GiB``, ``512``, ``0x1000``) in bytes as fio reads it with
    ``kb_base`` (module comment); ``N%`` is N % of ``capacity`` (the drive)."""
    m = _SIZE.match(text)
    if not m:
        hint = ""
        if re.match(r"^\s*\d+\.\d+", text):
            # fio itself reads "1.5m" as 1 byte (strtoll stops at the dot): refused instead.
            hint = " (fio takes whole numbers only: write 1536k, not 1.5m)"
        raise FioError(
            f"{where}: {option}={text!r}: expected a size such as 4k, 128k, 1m, 10g or 50%{hint}"
        )
    number_text, suffix = m.groups()
    number = int(number_text, 16 if number_text.lower().startswith("0x") else 10)
    suffix = suffix.lower()
    if suffix == "%":
        if capacity is None:
            raise FioError(f"{where}: {option}={text!r}: a share of the drive needs a drive")
        if number > 100:
            raise FioError(f"{where}: {option}={text!r}: expected a percentage up to 100")
        return capacity * number // 100
    if suffix in ("", "b"):
        value = number
    else:
        unit = suffix[0]
        iec = len(suffix) >= 3 and suffix[1:3] == "ib"
        if unit not in _POWERS or suffix not in (unit, unit + "b", unit + "ib", unit + "ibytes"):
            raise FioError(
                f"{where}: {option}={text!r}: unknown size suffix {suffix!r}; expected k, m, g,"
                " t, p (with or without b or ib) or %"
            )
        base = (1024 if kb_base == 1000 else 1000) if iec else kb_base
        value = number * base ** _POWERS[unit]
    # A bare number too: past 2^64 the core's conversion raised a bare OverflowError.
    if value >= 2**64:
        raise FioError(f"{where}: {option}={text!r}: expected a size below 2^64 bytes")
    return value


def parse_time(text: str, where: str, option: str, bare: str = "s") -> str:
    """A fio time as the job model's duration text; a bare number is in ``bare`` (seconds for
    runtime, ramp_time and startdelay, microseconds for thinktime, as fio reads them)."""
    m = _TIME.match(text)
    if not m:
        raise FioError(f"{where}: {option}={text!r}: expected a time such as 30, 10s, 500ms or 2m")
    number, unit = m.groups()
    unit = (unit or bare).lower()
    if unit in _TIME_SECONDS:
        return f"{float(number) * _TIME_SECONDS[unit]:g}s"
    return f"{number}{_TIME_UNITS[unit]}"


# Picoseconds per unit of the job model's duration texts (`parse_time`'s and the flags').
_PS_PER_UNIT = {"ps": 1, "ns": 10**3, "us": 10**6, "µs": 10**6, "ms": 10**9, "s": 10**12}


def duration_ps(text: str) -> int:
    """A job-model duration (``20ms``, ``1.5s``) in picoseconds, exactly (the core rounds the
    same decimal to the same picosecond)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([a-zµ]+)\s*", text)
    if not m or m.group(2) not in _PS_PER_UNIT:
        # Not a duration the job model reads: the core names it when the job is checked.
        return int(round(float(_core.parse_duration_s(text)) * 1e12))
    return int(Decimal(m.group(1)) * _PS_PER_UNIT[m.group(2)])


def duration_text(ps: int) -> str:
    """``ps`` picoseconds in the largest unit that writes it whole (``22ms``)."""
    for unit in ("s", "ms", "us", "ns"):
        if ps % _PS_PER_UNIT[unit] == 0:
            return f"{ps // _PS_PER_UNIT[unit]}{unit}"
    return f"{ps}ps"


def _size_name(size: int) -> str:
    return str(_core.format_bytes(size))


def parse_bssplit(text: str, where: str, kb_base: int = DEFAULT_KB_BASE) -> dict[str, float]:
    """``bssplit=4k/10:64k/50:32k/40``: block sizes and their percentages. Sizes without a
    percentage share what is left equally, as fio does."""
    mix: dict[str, float] = {}
    open_sizes: list[str] = []
    given = 0.0
    for part in text.split(":"):
        if not part.strip():
            raise FioError(f"{where}: bssplit={text!r}: empty entry")
        size_text, _, pct_text = part.partition("/")
        size = _size_name(parse_size(size_text, where, "bssplit", kb_base))
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


def _host_values(ncpus: int) -> dict[str, str]:
    """fio's reserved words in a job file: ``$ncpus`` (the simulated host's cores, the machine
    the jobs run on here), ``$pagesize`` (the simulated host's page) and ``$mb_memory`` (this
    machine's memory in MiB, as fio reads it: the simulator models no page cache for it to
    defeat)."""
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        pages = 0
    return {"ncpus": str(ncpus), "pagesize": str(HOST_PAGE_BYTES), "mb_memory": str(pages >> 20)}


_ENV = re.compile(r"\$\{([^}]*)\}")
_RESERVED = re.compile(r"\$(ncpus|pagesize|mb_memory)\b")


def _expand(value: str, where: str, env: Mapping[str, str], host: Mapping[str, str]) -> str:
    """``${VAR}`` from the environment and fio's ``$ncpus``, ``$pagesize``, ``$mb_memory``."""

    def env_value(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in env:
            # fio leaves the text as it is and then fails to parse the option; say why instead.
            raise FioError(
                f"{where}: ${{{name}}}: not set in the environment (fio takes ${{VAR}} from it);"
                f" run with {name}=VALUE ssdlab ..."
            )
        return env[name]

    value = _ENV.sub(env_value, value)
    return _RESERVED.sub(lambda m: host[m.group(1)], value)


def _read_sections(
    text: str,
    path: str,
    env: Mapping[str, str] | None = None,
    host: Mapping[str, str] | None = None,
    depth: int = 0,
    sections: list[tuple[str, str, list[Option]]] | None = None,
) -> list[tuple[str, str, list[Option]]]:
    """The file's sections in order: (name, "file:line", options). ``include FILE`` reads FILE
    (relative to this file's folder) where the line is, as fio does."""
    env = os.environ if env is None else env
    host = _host_values(1) if host is None else host
    sections = [] if sections is None else sections
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
            sections.append((line[1:-1].strip(), where, []))
            continue
        include = re.match(r"include(?:\s|=|$)", line, re.IGNORECASE)
        if include:
            target = line[len("include") :].strip()
            if target.startswith("="):
                # fio's include is a line of its own, not an option: `include=x` is no include.
                raise FioError(f"{where}: {line!r}: expected `include FILE` (a space, no `=`)")
            if not target:
                raise FioError(f"{where}: include: expected a file name")
            if depth >= MAX_INCLUDE_DEPTH:
                raise FioError(
                    f"{where}: include {target}: more than {MAX_INCLUDE_DEPTH} nested includes"
                    " (does a file include itself?)"
                )
            included = (
                target if os.path.isabs(target) else os.path.join(os.path.dirname(path), target)
            )
            try:
                inner = read_input_text(included, "fio job file", FioError)
            except FioError as error:
                raise FioError(f"{where}: include {target}: {error}") from None
            _read_sections(inner, included, env, host, depth + 1, sections)
            continue
        if not sections:
            raise FioError(f"{where}: {line!r}: an option before any [section]")
        key, sep, value = line.partition("=")
        key = key.strip().lower()
        if not key or not re.fullmatch(r"[a-z0-9_]+", key):
            raise FioError(f"{where}: {line!r}: expected OPTION or OPTION=VALUE")
        # fio allows a comment after the value only when it starts with whitespace.
        value = re.split(r"\s[#;]", value, maxsplit=1)[0].strip() if sep else ""
        value = _expand(value, where, env, host)
        sections[-1][2].append(Option(where, sections[-1][0], key, value))
    return sections


#: Where the options given on the command line (``--size``, ``--set job.OPTION=VALUE``) are
#: said to be in messages.
COMMAND_LINE = "command line"


def load(
    path: str | os.PathLike[str],
    text: str | None = None,
    *,
    capacity: int | None = None,
    ncpus: int = 1,
    env: Mapping[str, str] | None = None,
    overrides: Sequence[tuple[str, str]] = (),
) -> FioFile:
    """Read a fio job file into ssdlab jobs, with warnings for what is not modelled (each once
    per file).

    ``capacity`` is the drive's (for ``size=50%``); ``ncpus`` the simulated host's cores
    (``$ncpus``); ``env`` the environment for ``${VAR}`` (default: this process's);
    ``overrides`` are ``(option, value)`` pairs given on the command line, applied to every job
    after its own options (so they win; fio's own command line gives defaults the file's options
    override, see docs/fio.md)."""
    name = os.fspath(path)
    if text is None:
        text = read_input_text(name, "fio job file", FioError)
    sections = _read_sections(text, name, env, _host_values(ncpus))
    fio = FioFile(path=name, jobs=[])
    global_opts: list[Option] = []
    group = 0
    phase = 0
    command_line = [Option(COMMAND_LINE, COMMAND_LINE, k.lower(), v) for k, v in overrides]
    warnings: dict[tuple[str, str], list[Option]] = {}
    for section, line, options in sections:
        if section.lower() == "global":
            global_opts = [*global_opts, *options]
            continue
        merged: dict[str, Option] = {}
        for option in [*global_opts, *options, *command_line]:
            merged[option.key] = option
        # stonewall (in the job's section or in [global], which gives it to every job) makes
        # the job wait for those before it: a new group of jobs that run together, and a new
        # reporting group. new_group starts a reporting group only; its job still runs with
        # those before it, as in fio.
        stonewall = any(k in merged for k in ("stonewall", "wait_for_previous"))
        if stonewall and fio.jobs:
            phase += 1
            group += 1
        elif "new_group" in merged and fio.jobs:
            group += 1
        if not fio.jobs:
            fio.global_options = {o.key: o.value for o in [*global_opts, *command_line]}
        fields = _translate(section, merged, warnings, capacity)
        fio.jobs.append(
            FioJob(
                name=section,
                group=group,
                phase=phase,
                line=line,
                fields=fields,
                options={k: o.value for k, o in merged.items()},
                where={k: o.where for k, o in merged.items()},
                own={o.key: o.value for o in options},
            )
        )
    if not fio.jobs:
        raise FioError(f"{name}: no job sections (only [global]); add a section such as [job1]")
    fio.warnings = [_warning_text(key, why, where) for (key, why), where in warnings.items()]
    for job in fio.jobs:
        try:
            job.job()
        except _core.SsdlabError as error:
            raise job_error(job, error) from None
    return fio


# The fio options each job-model field is translated from (`_translate`), to point the core's
# refusal of a field at the line that set it.
_OPTIONS_OF_FIELD = {
    "rw": ("rw", "readwrite"),
    "bs": ("bssplit", "bs", "blocksize"),
    "rwmixread": ("rwmixread", "rwmixwrite"),
    "io_count": ("number_ios", "time_based"),
    "ramp": ("ramp_time",),
    "rate_iops": ("rate_iops", "rate"),
    "distribution": ("random_distribution",),
    "rate_process": ("rate_process",),
    "max_open_zones": ("max_open_zones", "job_max_open_zones"),
    "placement_ids": ("plids", "fdp_pli"),
    "placement_select": ("plid_select", "fdp_pli_select"),
    "iodepth_batch": ("iodepth_batch", "iodepth_batch_submit"),
    "latency_target": ("latency_target",),
    "latency_window": ("latency_window",),
    "latency_percentile": ("latency_percentile",),
}


def job_error(job: FioJob, error: Exception) -> FioError:
    """The core's refusal of a job (when it is built, or when it meets the drive) as a
    FioError at the "file:line" of the option behind the field it names (its ``field``:
    ``ramp`` → the ramp_time line; ``bs.4KiB`` → the bs line), else at the job's section."""
    where = job.line
    # The field's leading name: `bs.4KiB` is bs's; `max_open_zones` or `zone_append` the first's.
    named = re.match(r"[a-z_]+", getattr(error, "field", None) or "")
    if named:
        field_name = named.group(0)
        for option in _OPTIONS_OF_FIELD.get(field_name, (field_name,)):
            if option in job.where:
                where = job.where[option]
                break
    return FioError(f"{where}: [{job.name}]: {error}")


#: Lines (and values) one warning lists before it says how many there are.
SHOWN_LINES = 6


def _warning_text(key: str, why: str, places: Sequence[Option]) -> str:
    """One warning for an option however many jobs take it and however many lines set it:
    ``file:3,9,15: [global] thinktime=10: not modelled``."""
    seen: list[Option] = []
    for option in places:
        if option.where not in {o.where for o in seen}:
            seen.append(option)
    by_file: dict[str, list[str]] = {}
    for option in seen:
        file, _, line = option.where.rpartition(":")
        if option.where == COMMAND_LINE:
            file, line = COMMAND_LINE, ""
        by_file.setdefault(file, []).append(line)

    def lines(numbers: list[str]) -> str:
        if len(numbers) <= SHOWN_LINES:
            return ",".join(numbers)
        return ",".join(numbers[:SHOWN_LINES]) + f",... ({len(numbers)} lines)"

    where = "; ".join(f"{f}:{lines(n)}" if n[0] else f for f, n in by_file.items())
    values = list(dict.fromkeys(o.value for o in seen))  # in the file's order
    sections = list(dict.fromkeys(o.section for o in seen))
    section = f"[{sections[0]}] " if len(sections) == 1 else ""
    if len(values) > 1:
        shown_values = values if len(values) <= SHOWN_LINES else [*values[:SHOWN_LINES], "..."]
        shown = f"{key} ({', '.join(shown_values)})"
    else:
        shown = f"{key}={values[0]}" if values[0] else key
    return f"{where}: {section}{shown}: {why}"


def _translate(
    section: str,
    options: Mapping[str, Option],
    warnings: dict[tuple[str, str], list[Option]],
    capacity: int | None = None,
) -> dict[str, Any]:
    """One job's options (with [global]'s) as job-model fields; what it does not model goes to
    ``warnings``, keyed by option and reason, so that each is said once per file."""
    fields: dict[str, Any] = {"name": section}

    def where(key: str) -> str:
        return options[key].where

    def value(key: str) -> str:
        return options[key].value

    def warn(key: str, why: str) -> None:
        warnings.setdefault((key, why), []).append(options[key])

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

    kb_base = DEFAULT_KB_BASE
    if "kb_base" in options:
        kb_base = integer("kb_base")
        if kb_base not in _KB_BASES:
            raise FioError(
                f"{where('kb_base')}: kb_base={value('kb_base')!r}: expected 1000 or 1024"
            )

    def size(key: str, text: str | None = None) -> int:
        return parse_size(value(key) if text is None else text, where(key), key, kb_base, capacity)

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
        fields["bs"] = parse_bssplit(text, where("bssplit"), kb_base)
    elif "bs" in options or "blocksize" in options:
        key = "bs" if "bs" in options else "blocksize"
        text = value(key)
        if "," in text:
            warn(key, "separate read and write sizes are not modelled: the first is used")
            text = text.split(",")[0]
        fields["bs"] = _size_name(size(key, text))
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
    # fio's numjobs makes clones: each issues its own number_ios over its own size
    # (docs/fio.md, "What is read").
    fields["instances"] = "clones"
    if "size" in options:
        fields["size"] = _size_name(size("size"))
    if "offset" in options:
        offset = size("offset")
        if value("offset").strip().endswith("%"):
            # fio aligns an offset given as a share of the device to the block size.
            align = min(_block_sizes(fields))
            offset = offset // align * align
        fields["offset"] = _size_name(offset)
    if "runtime" in options:
        fields["runtime"] = parse_time(value("runtime"), where("runtime"), "runtime")
    if "ramp_time" in options:
        fields["ramp"] = parse_time(value("ramp_time"), where("ramp_time"), "ramp_time")
    if "time_based" in options and value("time_based").lower() not in _BOOLEAN_OFF:
        if "runtime" not in options:
            raise FioError(f"{where('time_based')}: [{section}] time_based needs runtime=")
        fields["io_count"] = _TIME_BASED_IO_COUNT
    if "number_ios" in options:
        # Each clone's count, as the job's `instances = "clones"` reads io_count.
        fields["io_count"] = integer("number_ios", 1)

    def first(key: str, what: str) -> str:
        """The first of fio's read,write[,trim] values, with a warning when there are more."""
        text = value(key)
        if "," in text:
            warn(key, f"separate read and write {what} are not modelled: the first is used")
        return text.split(",")[0].strip()

    if "rate_iops" in options:
        text = first("rate_iops", "rates")
        try:
            fields["rate_iops"] = float(text)
        except ValueError:
            raise FioError(
                f"{where('rate_iops')}: rate_iops={text!r}: expected requests per second"
            ) from None
    elif "rate" in options:
        # fio's rate is bytes per second per clone; the job model paces requests: the same
        # bandwidth at the job's mean block size (exact for one block size).
        rate = size("rate", first("rate", "rates"))
        sizes = _block_sizes(fields)
        weights = fields["bs"].values() if isinstance(fields.get("bs"), dict) else [1]
        mean = sum(b * w for b, w in zip(sizes, weights, strict=True)) / sum(weights)
        if rate > 0:
            fields["rate_iops"] = rate / mean
        if len(sizes) > 1:
            warn("rate", "paced as requests of the mean block size (fio paces bytes)")
    if "rate_process" in options:
        process = value("rate_process").strip().lower()
        if process not in ("linear", "poisson"):
            raise FioError(
                f"{where('rate_process')}: rate_process={value('rate_process')!r}: expected"
                " linear or poisson"
            )
        if process == "poisson" and "rate_iops" in fields:
            fields["rate_process"] = "poisson"
    if "random_distribution" in options:
        text = first("random_distribution", "distributions")
        fields["distribution"] = _distribution(text, where("random_distribution"), size)
        kind, _, arg = text.partition(":")
        if kind.strip().lower() in _DEFAULT_SKEW and ":" in arg:
            warn(
                "random_distribution",
                "the center (the second value) is not modelled: the hot blocks are scattered"
                " over the region, as fio's hash scatters them with the default center",
            )
        if fields["distribution"] == "uniform" and text.strip().lower() != "random":
            warn(
                "random_distribution",
                "not modelled (fio's are random, zipf, pareto, normal, zoned and zoned_abs):"
                " uniform is used",
            )
    if "percentage_random" in options:
        share = first("percentage_random", "shares")
        fields["percentage_random"] = int(share) if share.isdigit() else -1
        if not 0 <= fields["percentage_random"] <= 100:
            raise FioError(
                f"{where('percentage_random')}: percentage_random={value('percentage_random')!r}:"
                " expected 0 to 100"
            )
        if fields["percentage_random"] == 100:
            del fields["percentage_random"]
    if "thinktime" in options:
        think = parse_time(value("thinktime"), where("thinktime"), "thinktime", bare="us")
        if not re.fullmatch(r"0+(\.0*)?[a-z]+", think):
            fields["thinktime"] = think
            if "thinktime_blocks" in options:
                fields["thinktime_blocks"] = integer("thinktime_blocks", 1)
            if "rate_iops" in fields:
                warn(
                    "thinktime",
                    "with rate or rate_iops the arrivals are paced by the rate: no pause is added",
                )
    if "startdelay" in options:
        delay = parse_time(value("startdelay"), where("startdelay"), "startdelay")
        if not re.fullmatch(r"0+(\.0*)?[a-z]+", delay):
            fields["startdelay"] = delay
    if "latency_target" in options:
        _latency_target(fields, options)
    if "blockalign" in options or "ba" in options:
        key = "blockalign" if "blockalign" in options else "ba"
        align = size(key, value(key).split(",")[0])
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
    _placement(options, fields, where, value, warn)
    priority = _priority(options)
    if priority is not None:
        fields["priority"] = priority
    for key in ("cmdprio_percentage", "cmdprio_class", "cmdprio", "cmdprio_bssplit"):
        if key in options:
            warn(
                key,
                "per-request priorities are not modelled: an NVMe queue has one class (its"
                " QPRIO), taken from the job's prioclass and prio",
            )
    for key in ("zone_reset_threshold", "zone_reset_frequency"):
        if key in options:
            warn(
                key,
                "not modelled: a zone is reset when a write finds it without room (docs/zns.md)",
            )
    handled = {
        *_PLACEMENT_OPTIONS,
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
        "rate",
        "rate_process",
        "percentage_random",
        "thinktime",
        "thinktime_blocks",
        "startdelay",
        "latency_target",
        "latency_window",
        "latency_percentile",
        "latency_run",
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
        "prio",
        "prioclass",
        "cmdprio_percentage",
        "cmdprio_class",
        "cmdprio",
        "cmdprio_bssplit",
        *_NO_EFFECT,
        *_REFUSED,
    }
    for key in options:
        if key not in handled:
            warn(key, "not modelled by ssdlab; ignored")
    return fields


# fio's prioclass values (Linux's I/O priority classes, include/uapi/linux/ioprio.h): 0 none,
# 1 real time, 2 best effort, 3 idle; prio is the level 0 (highest) to 7 within a class.
_PRIOCLASS_RANGE = (0, 3)
_PRIO_RANGE = (0, 7)
# The kernel's level for a best-effort task that set none (IOPRIO_NORM).
_BEST_EFFORT_DEFAULT_LEVEL = 4


def _priority(options: Mapping[str, Option]) -> str | None:
    """fio's ``prioclass`` and ``prio`` as the flow's NVMe class (docs/fio.md): real time is
    urgent, idle is low; best effort (or no class, which the kernel reads as best effort) is
    medium at the kernel's default level 4, high above it (0-3), low below it (5-7). None when
    the job sets neither."""

    def number(key: str, low: int, high: int) -> int | None:
        if key not in options:
            return None
        option = options[key]
        try:
            n = int(option.value.strip())
        except ValueError:
            n = None
        if n is None or not low <= n <= high:
            raise FioError(
                f"{option.where}: {key}={option.value!r}: expected a whole number from {low}"
                f" to {high}, as fio takes it"
            )
        return n

    klass = number("prioclass", *_PRIOCLASS_RANGE)
    level = number("prio", *_PRIO_RANGE)
    if klass is None and level is None:
        return None
    if klass == 1:
        return "urgent"
    if klass == 3:
        return "low"
    if level is None or level == _BEST_EFFORT_DEFAULT_LEVEL:
        return "medium"
    return "high" if level < _BEST_EFFORT_DEFAULT_LEVEL else "low"


def priority_warning(fio: FioFile, config: Any) -> str | None:
    """One warning for the file when its jobs name priorities (``prio``, ``prioclass``) on a
    drive whose NVMe arbitration is round robin, where the classes change nothing."""
    interface = (config.to_dict().get("interface") or {}) if config is not None else {}
    if interface.get("arbitration", "round-robin") != "round-robin":
        return None
    places = [
        job.where[key]
        for job in fio.jobs
        if "priority" in job.fields
        for key in ("prioclass", "prio")
        if key in job.where
    ]
    if not places:
        return None
    by_file: dict[str, list[str]] = {}
    for place in dict.fromkeys(places):
        file, _, line = place.rpartition(":")
        by_file.setdefault(file, []).append(line)
    where = "; ".join(f"{file}:{','.join(lines)}" for file, lines in by_file.items())
    return (
        f"{where}: prio/prioclass change nothing here: the drive's"
        " interface.arbitration is round-robin, which serves every NVMe queue alike; set"
        " interface.arbitration=weighted-round-robin (with interface.controller_slots) for"
        " the classes to count"
    )


def _latency_target(fields: dict[str, Any], options: Mapping[str, Option]) -> None:
    """fio's latency-target search (`latency_target`, `latency_window`, `latency_percentile`,
    `latency_run`) as the job model's fields; bare times are µs, as fio reads them. Without a
    target (or with 0) fio ignores the other three, and so does this."""

    def at(key: str) -> str:
        return options[key].where

    def zero(duration: str) -> bool:
        return re.fullmatch(r"0+(\.0*)?[a-z]+", duration) is not None

    target = parse_time(
        options["latency_target"].value, at("latency_target"), "latency_target", "us"
    )
    if zero(target):
        return
    fields["latency_target"] = target
    if "latency_window" in options:
        window = parse_time(
            options["latency_window"].value, at("latency_window"), "latency_window", "us"
        )
        if not zero(window):
            fields["latency_window"] = window
    if "latency_percentile" in options:
        # fio reads a list of floats and uses the first.
        text = options["latency_percentile"].value.split(":")[0].strip()
        try:
            fields["latency_percentile"] = float(text)
        except ValueError:
            raise FioError(
                f"{at('latency_percentile')}: latency_percentile={text!r}: expected a percentage"
                " such as 99.9"
            ) from None
    if "latency_run" in options:
        fields["latency_run"] = options["latency_run"].value.strip().lower() not in _BOOLEAN_OFF


def _block_sizes(fields: Mapping[str, Any]) -> list[int]:
    """The job's block sizes in bytes (4 KiB, the job model's default, when none is given)."""
    bs = fields.get("bs", "4KiB")
    sizes = bs if isinstance(bs, dict) else {bs: 1}
    return [int(_core.parse_bytes(str(s))) for s in sizes]


# fio's values when a skewed distribution is named alone (fio.h: FIO_DEF_ZIPF, FIO_DEF_PARETO;
# options.c: a normal distribution's deviation 0).
_DEFAULT_SKEW = {"zipf": "1.1", "pareto": "0.2", "normal": "0"}


def _distribution(text: str, where: str, size: Any) -> str:
    """fio's random_distribution as the job model's: ``zipf:θ``, ``pareto:h``, ``normal:dev``,
    ``zoned:…`` and ``zoned_abs:…`` map (zoned_abs's sizes read as fio reads them, then given
    in bytes; a skewed one named alone takes fio's default value; its center, the second
    value, is dropped: the caller warns); ``random`` is uniform; anything else is uniform too
    (the caller warns)."""
    kind, _, arg = text.partition(":")
    kind = kind.strip().lower()
    arg = arg.strip()
    if kind in _DEFAULT_SKEW:
        value = arg.split(":")[0].strip() or _DEFAULT_SKEW[kind]
        return f"{kind}:{value}"
    if kind == "zoned" and arg:
        return f"zoned:{arg}"
    if kind == "zoned_abs" and arg:
        zones = []
        for part in arg.split(":"):
            share, sep, length = part.partition("/")
            if not sep:
                raise FioError(
                    f"{where}: random_distribution={text!r}: zone {part!r}: expected"
                    " ACCESS/SIZE, e.g. zoned_abs:60/20g:40/100g"
                )
            zones.append(f"{share.strip()}/{size('random_distribution', length)}")
        return "zoned_abs:" + ":".join(zones)
    return "uniform"


# ----------------------------------------------------------------------------------------------
# Fitting a file to the drive

#: The config field ``--fit`` suggests to grow a NAND drive: its capacity is proportional to it
#: (and its ``validate.rs`` check bounds it, so the suggestion is resolved before it is made).
GROW_FIELD = "nand.blocks_per_plane"


def fit_to_drive(fio: FioFile, capacity: int, scale: bool, config: Any = None) -> list[str]:
    """Check every job of ``fio`` lies within ``capacity`` bytes. With ``scale``, sizes and
    offsets of the whole file are multiplied by one factor (capacity over the file's furthest
    byte, so the jobs keep their layout) and aligned down to each job's block size; the notes
    say so. Otherwise a job past the end is a :class:`FioError` naming the line of its size (or
    offset) and the ways out, taken from ``config`` (a :class:`ssdlab.Config`) when given."""
    ends = [(job.extent(capacity), job) for job in fio.jobs]
    furthest, worst = max(ends, key=lambda e: e[0])
    if furthest <= capacity:
        return []
    if not scale:
        raise FioError(_too_large(worst, furthest, capacity, config))
    notes = []
    for job in fio.jobs:
        if "size" not in job.fields and "offset" not in job.fields:
            continue
        align = max(_block_sizes(job.fields))
        low = min(_block_sizes(job.fields))
        offset = int(_core.parse_bytes(str(job.fields.get("offset", "0"))))
        new_offset = offset * capacity // furthest // low * low
        before = _human_bytes(job.extent(capacity) - offset)
        if "size" in job.fields:
            size = int(_core.parse_bytes(str(job.fields["size"])))
            new_size = max(size * capacity // furthest // align * align, align)
            new_size = min(new_size, (capacity - new_offset) // align * align)
            job.fields["size"] = _size_name(new_size)
            after = _human_bytes(new_size)
        else:
            after = _human_bytes(capacity - new_offset)
        if "offset" in job.fields:
            job.fields["offset"] = _size_name(new_offset)
        notes.append(
            f"{fio.path}: [{job.name}] --fit scale: {before} from offset {_human_bytes(offset)}"
            f" became {after} from offset {_human_bytes(new_offset)}"
        )
    factor = capacity / furthest
    notes.insert(
        0,
        f"{fio.path}: --fit scale: the file reaches {_human_bytes(furthest)}, the drive holds"
        f" {_human_bytes(capacity)}: sizes and offsets × {factor:.4g}, aligned to block sizes",
    )
    return notes


def _too_large(job: FioJob, end: int, capacity: int, config: Any) -> str:
    key = "size" if "size" in job.where else "offset"
    where = job.where.get(key, job.line)
    value = job.options.get(key, "")
    shown = f"{key}={value}" if value else "its region"
    ways = []
    if config is not None:
        fits = _smallest_preset_fitting(end)
        if fits is not None:
            ways.append(f"a preset that holds it (smallest: {fits[0]}, {_human_bytes(fits[1])})")
        grow = _grow_setting(config, end)
        if grow is not None:
            ways.append(f"this drive grown with --set {grow[0]} ({_human_bytes(grow[1])})")
    ways.append("--fit scale to shrink the file's sizes and offsets to the drive")
    ways.append("--size SIZE (or --set job.size=50%) for every job")
    name = f"{config.name}'s" if config is not None else "the drive's"
    return (
        f"{where}: [{job.name}] {shown}: the job reaches {_human_bytes(end)}"
        f" ({end:,} bytes), beyond {name} {_human_bytes(capacity)} ({capacity:,} bytes) of"
        f" logical capacity; run it with {'; or '.join(ways)}"
    )


def _capacity(config: Any) -> int:
    return int(_core.job_capacity(config.to_json()))


def _smallest_preset_fitting(end: int) -> tuple[str, int] | None:
    from .api import Config, presets

    best: tuple[str, int] | None = None
    for preset in presets():
        try:
            capacity = _capacity(Config.load(preset["name"]))
        except _core.SsdlabError:
            continue
        if capacity >= end and (best is None or capacity < best[1]):
            best = (preset["name"], capacity)
    return best


def _grow_setting(config: Any, end: int) -> tuple[str, int] | None:
    """``nand.blocks_per_plane=N`` that makes ``config`` hold ``end`` bytes, resolved by the core
    to be sure; None when the drive has no NAND to grow or no such value passes its checks."""
    nand = config.to_dict().get("nand") or {}
    blocks = nand.get("blocks_per_plane")
    if not isinstance(blocks, int) or config.to_dict().get("hfsl") is not None:
        return None
    capacity = _capacity(config)
    if capacity <= 0:
        return None
    # Capacity is proportional to the blocks, less a floor on over-provisioning: step up from
    # the proportional guess until the core agrees.
    guess = -(-blocks * end // capacity)
    for n in range(guess, guess + 8):
        try:
            grown = config.set(GROW_FIELD, n)
            got = _capacity(grown)
        except (_core.SsdlabError, ValueError):
            return None
        if got >= end:
            return f"{GROW_FIELD}={n}", got
    return None


# ----------------------------------------------------------------------------------------------
# Reports

# fio 3.33's JSON (`--output-format=json`), its keys, types and nesting as fio writes them
# (stat.c's show_thread_status_json, checked against fio 3.33's own output by
# tests/test_fio_json.py). The figures come from the run's per-request records: each request's
# op, issue time and latency.

# fio's default percentile_list (HOWTO: percentile_list).
DEFAULT_PERCENTILES = (
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0,
    90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99,
)  # fmt: skip

# fio's latency buckets: `latency_ns`/`latency_us` count latencies below each bound (and at
# or above the one before) in that unit, `latency_ms` the same with a last ">=2000".
_LAT_BOUNDS = (2, 4, 10, 20, 50, 100, 250, 500, 750, 1000)
_LAT_MS_BOUNDS = (*_LAT_BOUNDS, 2000)
# fio's I/O depth buckets (`iodepth_level`: depth at submission, 1, 2-3, 4-7, ...; the
# submit/complete ones: requests per call, 1-4, 5-8, ...).
_DEPTH_LEVELS = ((1, "1"), (2, "2"), (4, "4"), (8, "8"), (16, "16"), (32, "32"), (64, ">=64"))
_BATCH_LEVELS = ((0, "0"), (1, "4"), (5, "8"), (9, "16"), (17, "32"), (33, "64"), (65, ">=64"))

# fio's default bandwidth and IOPS averaging window (HOWTO: bwavgtime, iopsavgtime: 500 ms).
DEFAULT_AVG_MS = 500

# The ops of the per-request records (`Op` in request.rs: 0 read, 1 write, 2 trim).
_OPS = ("read", "write", "trim")


def _stats(values: Any) -> dict[str, Any]:
    """fio's min, max, mean, stddev (over N - 1, as fio's running variance) and N."""
    import numpy as np

    n = int(len(values))
    if n == 0:
        return {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}
    return {
        "min": int(values.min()),
        "max": int(values.max()),
        "mean": float(values.mean()),
        "stddev": float(np.std(values, ddof=1)) if n > 1 else 0.0,
        "N": n,
    }


# fio's latency histogram (stat.h: FIO_IO_U_PLAT_BITS 6, FIO_IO_U_PLAT_GROUP_NR 29): values
# below 128 ns each have a bucket; above, each power of two is split into 64 buckets, so a
# bucket is within 1/64 of its values. A bucket's value is its middle. fio reads its
# percentiles and json+'s bins off it; so does this report (tests/test_fio_json.py checks the
# mapping and the percentiles against fio's own json+).
_PLAT_BITS = 6
_PLAT_VAL = 1 << _PLAT_BITS
_PLAT_NR = 29 * _PLAT_VAL


def plat_index(ns: Any) -> Any:
    """fio's histogram bucket of each latency in ``ns`` (an integer numpy array)."""
    import numpy as np

    ns = np.asarray(ns, dtype=np.uint64)
    msb = np.zeros(ns.shape, dtype=np.int64)
    nonzero = ns > 0
    msb[nonzero] = np.floor(np.log2(ns[nonzero].astype(np.float64))).astype(np.int64)
    # log2 of a float can round up just below a power of two: correct it exactly.
    too_high = nonzero & ((np.uint64(1) << msb.astype(np.uint64)) > ns)
    msb[too_high] -= 1
    error_bits = np.maximum(msb - _PLAT_BITS, 0)
    base = (error_bits + 1) << _PLAT_BITS
    offset = (ns >> error_bits.astype(np.uint64)).astype(np.int64) & (_PLAT_VAL - 1)
    index = np.where(msb <= _PLAT_BITS, ns.astype(np.int64), base + offset)
    return np.minimum(index, _PLAT_NR - 1)


def plat_value(index: int) -> int:
    """The latency (ns) fio gives histogram bucket ``index``: its middle."""
    if index < (_PLAT_VAL << 1):
        return index
    error_bits = (index >> _PLAT_BITS) - 1
    base = 1 << (error_bits + _PLAT_BITS)
    return int(base + ((index % _PLAT_VAL) + 0.5) * (1 << error_bits))


def _histogram(lat_ns: Any) -> list[tuple[int, int]]:
    """(bucket, requests) of fio's histogram, the buckets with requests, in order."""
    import numpy as np

    counts = np.bincount(plat_index(lat_ns), minlength=0)
    return [(int(i), int(counts[i])) for i in np.flatnonzero(counts)]


def _percentiles(hist: Sequence[tuple[int, int]], points: Sequence[float]) -> dict[str, int]:
    """fio's percentiles off its histogram: for each point, the value of the first bucket at
    which the requests so far reach that share of all, keyed as fio keys them ("99.000000").
    fio compares in long double, so that 99.95 % of 2,000 (99.95 a hair above its decimal as a
    double) is just above 1,999; the share is taken here exactly, as a fraction, to agree."""
    from fractions import Fraction

    n = sum(count for _, count in hist)
    out: dict[str, int] = {}
    for p in points:
        share = Fraction(p) * n / 100
        so_far = 0
        for index, count in hist:
            so_far += count
            if so_far >= share:
                out[f"{p:.6f}"] = plat_value(index)
                break
    return out


def _windows(done_ps: Any, nbytes: Any, start_ps: int, end_ps: int, avg_ms: int) -> Any:
    """Bytes and requests completed in each whole ``avg_ms`` window of the measured time."""
    import numpy as np

    width = avg_ms * 1_000_000_000
    count = (end_ps - start_ps) // width
    if count <= 0:
        return np.zeros(0), np.zeros(0)
    slot = (done_ps - start_ps) // width
    inside = (slot >= 0) & (slot < count)
    b = np.bincount(slot[inside].astype(np.int64), weights=nbytes[inside], minlength=count)
    n = np.bincount(slot[inside].astype(np.int64), minlength=count)
    return b, n


def _samples(per_window: Any, scale: float, prefix: str, agg_bytes: float = 0.0) -> dict[str, Any]:
    """fio's bw_/iops_ figures over the windows' samples; ``agg_bytes`` the group's aggregate
    bandwidth in that direction (bytes/s), of which ``bw_agg`` is the mean's share."""
    import numpy as np

    values = per_window * scale
    n = int(len(values))
    dev = "bw_dev" if prefix == "bw" else "iops_stddev"
    if n == 0:
        out = {f"{prefix}_min": 0, f"{prefix}_max": 0}
        if prefix == "bw":
            out["bw_agg"] = 0.0
        out.update({f"{prefix}_mean": 0.0, dev: 0.0, f"{prefix}_samples": 0})
        return out
    out = {f"{prefix}_min": int(values.min()), f"{prefix}_max": int(values.max())}
    if prefix == "bw":
        out["bw_agg"] = _share_of_aggregate(float(values.mean()), agg_bytes)
    out.update(
        {
            f"{prefix}_mean": float(values.mean()),
            dev: float(np.std(values, ddof=1)) if n > 1 else 0.0,
            f"{prefix}_samples": n,
        }
    )
    return out


def _share_of_aggregate(mean_kib_s: float, agg_bytes: float) -> float:
    """fio's ``bw_agg`` (stat.c, convert_agg_kbytes_percent): a job's mean bandwidth sample as
    a percentage of its group's aggregate bandwidth, at most 100; 100 when the aggregate is
    1 KiB/s or less."""
    if agg_bytes <= 1024:
        return 100.0
    return min(100.0, mean_kib_s * 100.0 / (agg_bytes / 1024.0))


def _direction(
    rows: Any,
    op: int,
    runtime_s: float,
    window: tuple[int, int],
    job: FioJob,
    plus: bool,
    agg_bytes: float = 0.0,
) -> dict[str, Any]:
    """One direction of a job in fio's JSON shape, from the records (zeros when it did none)."""
    import numpy as np

    mine = rows[rows[:, 0] == op] if len(rows) else rows
    lat_ns = np.sort(mine[:, 3] // 1000) if len(mine) else np.zeros(0, dtype=np.uint64)
    io_bytes = int(mine[:, 4].sum()) if len(mine) else 0
    runtime_ms = int(round(runtime_s * 1000)) if len(mine) else 0
    bw_bytes = int(round(io_bytes / runtime_s)) if runtime_s > 0 and len(mine) else 0
    lat = _stats(lat_ns)
    clat = dict(lat)
    if len(mine):
        hist = _histogram(lat_ns)
        clat["percentile"] = _percentiles(hist, _percentile_list(job))
        if plus:
            # json+: the histogram itself, each bucket by its value.
            clat["bins"] = {str(plat_value(i)): count for i, count in hist}
    avg_ms = _avg_ms(job, "bwavgtime")
    done = mine[:, 2] + mine[:, 3] if len(mine) else np.zeros(0, dtype=np.uint64)
    sizes = mine[:, 4].astype(float) if len(mine) else np.zeros(0)
    b, _ = _windows(done, sizes, window[0], window[1], avg_ms)
    _, n = _windows(done, sizes, window[0], window[1], _avg_ms(job, "iopsavgtime"))
    out: dict[str, Any] = {
        "io_bytes": io_bytes,
        "io_kbytes": io_bytes // 1024,
        "bw_bytes": bw_bytes,
        "bw": bw_bytes // 1024,
        "iops": float(len(mine) / runtime_s) if runtime_s > 0 else 0.0,
        "runtime": runtime_ms,
        "total_ios": int(len(mine)),
        "short_ios": 0,
        "drop_ios": 0,
        # ssdlab measures each request from its arrival to its completion, the host's
        # submission inside it: fio's lat. It has no separate submission latency (slat: zeros)
        # and clat carries lat's figures.
        "slat_ns": _stats(np.zeros(0)),
        "clat_ns": clat,
        "lat_ns": lat,
    }
    # fio's bw samples are KiB/s over each window, IOPS samples requests/s.
    out.update(_samples(b, 1000 / avg_ms / 1024, "bw", agg_bytes))
    out.update(_samples(n, 1000 / _avg_ms(job, "iopsavgtime"), "iops"))
    return out


def _percentile_list(job: FioJob) -> list[float]:
    text = job.options.get("percentile_list")
    if not text:
        return list(DEFAULT_PERCENTILES)
    try:
        return [float(p) for p in text.split(":") if p.strip()]
    except ValueError:
        return list(DEFAULT_PERCENTILES)


def _avg_ms(job: FioJob, key: str) -> int:
    text = job.options.get(key, "")
    return int(text) if text.isdigit() and int(text) > 0 else DEFAULT_AVG_MS


def _buckets(values: Any, bounds: Sequence[int], unit_ns: int, low_ns: int) -> dict[str, float]:
    """Percent of ``values`` (ns) in each of fio's latency buckets of one unit; those below
    ``low_ns`` belong to a finer unit's buckets."""
    import numpy as np

    n = len(values)
    out: dict[str, float] = {}
    below = low_ns
    for bound in bounds:
        top = bound * unit_ns
        hits = int(np.count_nonzero((values >= below) & (values < top))) if n else 0
        out[str(bound)] = _bucket_share(hits, n)
        below = top
    return out


def _bucket_share(hits: int, n: int) -> float:
    """A latency bucket's percentage of all requests as fio gives it (stat.c, stat_calc_lat):
    a bucket with any request shows at least 0.01."""
    if n == 0:
        return 0.0
    share = round(100.0 * hits / n, 6)
    return max(share, 0.01) if hits else share


def _depth_levels(rows: Any, clones: int) -> dict[str, float]:
    """fio's iodepth_level: the share of requests issued at each depth of the job's requests
    in flight (itself included), from the records' issue and completion times. The records do
    not say which of ``numjobs`` clones issued a request: with several, a clone's depth is
    taken as the clones' together over their number (rounded up)."""
    import numpy as np

    n = len(rows)
    if n == 0:
        return {name: 0.0 for _, name in _DEPTH_LEVELS}
    issue = np.sort(rows[:, 2])
    done = np.sort(rows[:, 2] + rows[:, 3])
    depth = np.searchsorted(issue, issue, side="right") - np.searchsorted(done, issue, "right")
    depth = -(-depth // max(clones, 1))
    out = {}
    bounds = [level for level, _ in _DEPTH_LEVELS] + [2**63]
    for (low, name), high in zip(_DEPTH_LEVELS, bounds[1:], strict=True):
        hits = int(np.count_nonzero((depth >= low) & (depth < high)))
        out[name] = round(100.0 * hits / n, 6)
    return out


def _batch_levels(batch: int) -> dict[str, float]:
    """fio's iodepth_submit/complete: requests per call, here the engine's batch (not
    measured: every refill hands ``batch`` requests to the kernel)."""
    out = {name: 0.0 for _, name in _BATCH_LEVELS}
    name = [n for low, n in _BATCH_LEVELS if batch >= low][-1]
    out[name] = 100.0
    return out


def job_json(
    job: FioJob,
    result: Mapping[str, Any],
    records: bytes | None = None,
    plus: bool = False,
    agg: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """One job in fio 3.33's JSON shape (``plus``: json+, with the latency histogram's bins);
    ``records`` are the run's per-request records (``Result.record_bytes``, from
    ``run(..., record_requests=True)``); ``agg`` its group's aggregate bandwidth per direction
    (bytes/s, :func:`group_aggregates`), for ``bw_agg``."""
    import numpy as np

    runtime_s = float(result["sim"]["measured_time_s"])
    rows = (
        np.frombuffer(records, dtype="<u8").reshape(-1, RECORD_FIELDS)
        if records
        else np.zeros((0, RECORD_FIELDS), dtype=np.uint64)
    )
    end_ps = int(round(float(result["sim"]["simulated_time_s"]) * 1e12))
    window = (end_ps - int(round(runtime_s * 1e12)), end_ps)
    lat_ns = rows[:, 3] // 1000 if len(rows) else np.zeros(0, dtype=np.uint64)
    iodepth = int(job.fields.get("iodepth", 1))
    out: dict[str, Any] = {
        "jobname": job.name,
        "groupid": job.group,
        "error": 0,
        "eta": 0,
        "elapsed": int(math.ceil(runtime_s)),
        "job options": dict(job.own),
    }
    for code, op in enumerate(_OPS):
        out[op] = _direction(rows, code, runtime_s, window, job, plus, (agg or {}).get(op, 0.0))
    out.update(
        {
            "sync": {"total_ios": 0, "lat_ns": _stats(np.zeros(0))},
            "job_runtime": int(round(runtime_s * 1000)),
            # Host CPU use and the process's faults and context switches are the real
            # machine's in fio; a simulation has none to report.
            "usr_cpu": 0.0,
            "sys_cpu": 0.0,
            "ctx": 0,
            "majf": 0,
            "minf": 0,
            "iodepth_level": _depth_levels(rows, int(job.fields.get("numjobs", 1))),
            "iodepth_submit": _batch_levels(int(job.fields.get("iodepth_batch", 1))),
            "iodepth_complete": _batch_levels(1),
            "latency_ns": _buckets(lat_ns, _LAT_BOUNDS, 1, 0),
            "latency_us": _buckets(lat_ns, _LAT_BOUNDS, 1000, 1000),
            "latency_ms": _ms_buckets(lat_ns),
            **_latency_keys(job, result, iodepth),
            "ssdlab": {"config_name": result["config_name"], "config_hash": result["config_hash"]},
        }
    )
    return out


def _latency_keys(job: FioJob, result: Mapping[str, Any], iodepth: int) -> dict[str, Any]:
    """fio's latency-target keys: the depth the search settled at (the result's
    ``latency_depth``), the target in ns, the window in µs and the percentile, as fio writes
    them; without a target, the job's iodepth and fio's zeros."""
    target = job.fields.get("latency_target")
    if not target:
        return {
            "latency_depth": iodepth,
            "latency_target": 0,
            "latency_percentile": 100.0,
            "latency_window": 0,
        }
    window = job.fields.get("latency_window")
    return {
        "latency_depth": int(result.get("latency_depth") or iodepth),
        "latency_target": duration_ps(str(target)) // 1000,
        "latency_percentile": float(job.fields.get("latency_percentile", 100.0)),
        "latency_window": duration_ps(str(window)) // 10**6 if window else 0,
    }


def _ms_buckets(lat_ns: Any) -> dict[str, float]:
    import numpy as np

    out = _buckets(lat_ns, _LAT_MS_BOUNDS, 1_000_000, 1_000_000)
    n = len(lat_ns)
    hits = int(np.count_nonzero(lat_ns >= 2000 * 1_000_000)) if n else 0
    out[">=2000"] = _bucket_share(hits, n)
    return out


def to_json(
    fio: FioFile,
    results: Iterable[Mapping[str, Any]],
    version: str,
    records: Sequence[bytes | None] | None = None,
    plus: bool = False,
) -> dict[str, Any]:
    """The run of a job file in fio's ``--output-format=json`` shape (``plus``: json+). Its
    time is the epoch: fio's is the wall clock, which would make two runs of the same inputs
    differ."""
    results = list(results)
    recs = list(records) if records is not None else [None] * len(results)
    jobs = [
        job_json(job, result, rec, plus, agg)
        for job, result, rec, agg in zip(
            fio.jobs, results, recs, group_aggregates(fio, results), strict=True
        )
    ]
    return {
        "fio version": f"ssdlab-{version}",
        "timestamp": 0,
        "timestamp_ms": 0,
        "time": "Thu Jan  1 00:00:00 1970",
        "global options": dict(fio.global_options),
        "jobs": jobs,
    }


def group_aggregates(fio: FioFile, results: Sequence[Mapping[str, Any]]) -> list[dict[str, float]]:
    """Each job's group's aggregate bandwidth per direction (bytes/s), as fio's run status
    (stat.c: the group's bytes times 1000 over its longest runtime in ms, whole numbers): the
    jobs of a group run together, so the group's rate is its bytes over the longest of them."""
    index = {id(job): i for i, job in enumerate(fio.jobs)}
    out: list[dict[str, float]] = [{} for _ in fio.jobs]
    for group in fio.groups():
        agg: dict[str, float] = {}
        for op in _OPS:
            io, longest_ms = 0, 0
            for job in group:
                o = results[index[id(job)]].get("ops", {}).get(op)
                if o and int(o["bytes"]):
                    io += int(o["bytes"])
                    ms = int(round(float(results[index[id(job)]]["sim"]["measured_time_s"]) * 1000))
                    longest_ms = max(longest_ms, ms)
            agg[op] = float(io * 1000 // longest_ms) if longest_ms else 0.0
        for job in group:
            out[index[id(job)]] = agg
    return out


# fio's terse output (`--output-format=terse`): one line per job, fields separated by `;`, in
# the order fio 3.33 writes them (stat.c, show_thread_status_terse_all and
# show_ddir_status_terse; HOWTO: "Terse output"), here built from the job's JSON figures so that
# the two say the same. Version 3 is fio's default (`--terse-version`); 4 adds the trim
# direction, 5 also each direction's bw sample count and IOPS figures.
TERSE_VERSIONS = (3, 4, 5)
DEFAULT_TERSE_VERSION = 3
# fio's terse line holds 20 percentiles (FIO_IO_U_LIST_MAX_LEN), `0%=0` for the slots unused.
_TERSE_PERCENTILES = 20


def _terse_lat(stats: Mapping[str, Any]) -> list[str]:
    """min;max;mean;stddev in µs (min and max whole, as fio divides them), zeros without
    requests."""
    if not stats.get("N"):
        return ["0", "0", "0.000000", "0.000000"]
    return [
        str(int(stats["min"]) // 1000),
        str(int(stats["max"]) // 1000),
        f"{stats['mean'] / 1000:f}",
        f"{stats['stddev'] / 1000:f}",
    ]


def _terse_direction(d: Mapping[str, Any], version: int) -> list[str]:
    runtime_ms = int(d["runtime"])
    io_bytes = int(d["io_bytes"])
    # fio's whole-number KiB/s and IOPS over the runtime in ms.
    bw = (1000 * io_bytes // runtime_ms) // 1024 if runtime_ms else 0
    iops = (1000 * int(d["total_ios"])) // runtime_ms if runtime_ms else 0
    out = [str(io_bytes >> 10), str(bw), str(iops), str(runtime_ms)]
    out += _terse_lat(d["slat_ns"]) + _terse_lat(d["clat_ns"])
    points = list(d["clat_ns"].get("percentile", {}).items())[:_TERSE_PERCENTILES]
    out += [f"{float(key):f}%={int(value) // 1000}" for key, value in points]
    out += ["0%=0"] * (_TERSE_PERCENTILES - len(points))
    out += _terse_lat(d["lat_ns"])
    if d["bw_samples"]:
        out += [str(d["bw_min"]), str(d["bw_max"]), f"{d['bw_agg']:f}%"]
        out += [f"{d['bw_mean']:f}", f"{d['bw_dev']:f}"]
    else:
        out += ["0", "0", "0.000000%", "0.000000", "0.000000"]
    if version == 5:
        out.append(str(d["bw_samples"]))
        if d["iops_samples"]:
            out += [str(d["iops_min"]), str(d["iops_max"]), f"{d['iops_mean']:f}"]
            out += [f"{d['iops_stddev']:f}", str(d["iops_samples"])]
        else:
            out += ["0", "0", "0.000000", "0.000000", "0"]
    return out


def terse_line(job: FioJob, j: Mapping[str, Any], fio_version: str, version: int) -> str:
    """One job's terse line (without the newline) from its JSON figures ``j``."""
    if version not in TERSE_VERSIONS:
        raise FioError(
            f"terse version {version}: expected one of {', '.join(map(str, TERSE_VERSIONS))}"
            " (fio's 2 has another layout, which ssdlab does not write)"
        )
    out = [str(version), fio_version, job.name, str(job.group), "0"]
    ops = ("read", "write", "trim") if version >= 4 else ("read", "write")
    for op in ops:
        out += _terse_direction(j[op], version)
    out += [f"{j['usr_cpu']:f}%", f"{j['sys_cpu']:f}%", str(j["ctx"]), str(j["majf"])]
    out.append(str(j["minf"]))
    out += [f"{j['iodepth_level'][name]:3.1f}%" for _, name in _DEPTH_LEVELS]
    # fio's terse line kept its layout when the ns buckets came: they are added into the first
    # µs bucket (stat.c, stat_calc_lat_nu).
    lat_us = [float(v) for v in j["latency_us"].values()]
    lat_us[0] += sum(float(v) for v in j["latency_ns"].values())
    out += [f"{v:3.2f}%" for v in lat_us]
    out += [f"{float(v):3.2f}%" for v in j["latency_ms"].values()]
    # No disk utilisation (no host disk, as fio's null engine) nor error counts
    # (continue_on_error is not read); the job's description last, as fio.
    description = job.options.get("description", "")
    if description:
        out.append(description)
    return ";".join(out)


def to_terse(fio: FioFile, report: Mapping[str, Any], version: int = DEFAULT_TERSE_VERSION) -> str:
    """fio's terse output of a run, from its JSON report (:func:`to_json`)."""
    lines = [
        terse_line(job, j, report["fio version"], version)
        for job, j in zip(fio.jobs, report["jobs"], strict=True)
    ]
    return "".join(line + "\n" for line in lines)


# The text report, from the results' summaries.

# fio's default completion-latency percentiles that the result has.
_PERCENTILES = (
    ("50.000000", "p50"),
    ("90.000000", "p90"),
    ("99.000000", "p99"),
    ("99.900000", "p99_9"),
    ("99.990000", "p99_99"),
)


def _summary_direction(ops: Mapping[str, Any], op: str, runtime_s: float) -> dict[str, Any]:
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


def _summary_json(job: FioJob, result: Mapping[str, Any]) -> dict[str, Any]:
    """A job's figures from the result's summary (no per-request records): the text report's."""
    runtime_s = float(result["sim"]["measured_time_s"])
    ops = result.get("ops", {})
    return {
        "jobname": job.name,
        "groupid": job.group,
        "error": 0,
        "job options": dict(job.options),
        "read": _summary_direction(ops, "read", runtime_s),
        "write": _summary_direction(ops, "write", runtime_s),
        "trim": _summary_direction(ops, "trim", runtime_s),
        "job_runtime": int(round(runtime_s * 1000)),
        "ssdlab": {"config_name": result["config_name"], "config_hash": result["config_hash"]},
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
        j = _summary_json(job, result)
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
        if job.fields.get("latency_target"):
            # fio's line for a latency-target job: target (ns), window (µs), depth found.
            keys = _latency_keys(job, result, int(job.fields.get("iodepth", 1)))
            lines.append(
                f"     latency   : target={keys['latency_target']},"
                f" window={keys['latency_window']},"
                f" percentile={keys['latency_percentile']:.2f}%, depth={keys['latency_depth']}"
            )
    lines.append("")
    for group in fio.groups():
        gid = group[0].group
        lines.append(f"Run status group {gid} (all jobs):")
        index = {id(job): i for i, job in enumerate(fio.jobs)}
        # The jobs of a group ran together: a direction's rate is the group's bytes over the
        # longest measured time of the jobs that moved bytes that way (fio's aggregate
        # bandwidth: io_bytes over the group's longest runtime in that direction).
        for op, label in (("read", "READ"), ("write", "WRITE"), ("trim", "TRIM")):
            members = [_summary_json(job, results[index[id(job)]])[op] for job in group]
            io = sum(m["io_bytes"] for m in members)
            if io == 0:
                continue
            runs = [m["runtime"] for m in members if m["io_bytes"]]
            rates = [m["bw_bytes"] for m in members if m["io_bytes"]]
            seconds = max(
                float(results[index[id(job)]]["sim"]["measured_time_s"])
                for job, m in zip(group, members, strict=True)
                if m["io_bytes"]
            )
            total = io / seconds if seconds > 0 else 0.0
            lines.append(
                f"   {label}: bw={_human_rate(total)}, {_human_rate(min(rates))}-"
                f"{_human_rate(max(rates))}, io={_human_bytes(io)},"
                f" run={min(runs)}-{max(runs)}msec"
            )
    return "\n".join(lines) + "\n"
