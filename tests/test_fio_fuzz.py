"""The fio job-file reader under random and mutated input (issue 45: a fuzz target for the fio
reader beside the core's, which are Rust and run under libFuzzer by scripts/fuzz.sh; this reader
is Python, so hypothesis drives it). Whatever the text, reading it, fitting it to a drive and
building its jobs either succeeds or raises :class:`ssdlab.fio.FioError`: one line that starts
with where it happened. Any other exception is a bug."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ssdlab
from ssdlab import fio

REPO = Path(__file__).resolve().parent.parent
SEEDS = sorted(
    path for folder in ("examples/fio", "examples/jobs", "tests/data/fio")
    for path in (REPO / folder).glob("*.fio")
)  # fmt: skip
CAPACITY = 939_524_096  # small-tlc's logical bytes

# Values that have broken readers: huge, negative, empty, fractional, odd units and encodings,
# expansions, separators of other options' grammars.
NASTY_VALUES = [
    "", "0", "-1", "1", "18446744073709551616", "99999999999999999999999999", "1e309", "nan",
    "-0", "0x", "0xffffffffffffffff", "1.5m", "4k", "4KiB", "100%", "101%", "0%", "%",
    "4k/50:8k/50", "4k/:8k/", "4k/150", "/", ":", ",", "4k,8k", "1:2:3", "zipf:", "zipf:0",
    "zoned:50/50", "zoned_abs:60/20g:40/100g", "zoned_abs:60", "10s", "1d", "-5s", "1000000000h",
    "${HOME}", "${NO_SUCH_VARIABLE}", "$ncpus", "$mb_memory", "randrw:4", "trimwrite", "zbd",
    "none", "yes", "off", "é", "\x00", "\ufeff", "a=b", "[x]", "# c", "1 ; c", "1 # c",
]  # fmt: skip
OPTIONS = [
    "rw", "readwrite", "bs", "blocksize", "bssplit", "bsrange", "rwmixread", "rwmixwrite",
    "iodepth", "iodepth_batch", "iodepth_low", "numjobs", "size", "offset", "runtime",
    "ramp_time", "time_based", "number_ios", "rate", "rate_iops", "rate_process",
    "random_distribution", "percentage_random", "thinktime", "thinktime_blocks", "startdelay",
    "blockalign", "direct", "ioengine", "zonemode", "max_open_zones", "kb_base", "stonewall",
    "loops", "verify", "fsync", "include", "name", "filename", "nonsense_option",
]  # fmt: skip

LOCATION = re.compile(r"^(\S+:\d+|\S+\.fio|command line): ")


def _read_all(text: str, path: Path) -> None:
    """Read ``text`` as the job file ``path``, fit it to small-tlc's capacity both ways and build
    every job; only FioError may come out, as one line naming where."""
    try:
        parsed = fio.load(path, text, capacity=CAPACITY, ncpus=4, env={"HOME": "/home/x"})
        for scale in (False, True):
            fio.fit_to_drive(parsed, CAPACITY, scale)
        for job in parsed.jobs:
            job.job()
            job.extent(CAPACITY)
        parsed.groups()
    except fio.FioError as error:
        message = str(error)
        assert "\n" not in message, message
        assert LOCATION.match(message), message
    except ssdlab.SsdlabError as error:  # pragma: no cover - a failure, with its message
        raise AssertionError(f"a core error escaped the fio reader: {error!r}") from error


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.text(
        alphabet=st.sampled_from("[]=#;:/%,$ {}\n\tabgikmprstwx0123456789.-_é\ufeff"), max_size=300
    )
)
def test_random_text_reads_or_is_a_clean_error(text: str, tmp_path_factory) -> None:  # noqa: ANN001
    _read_all(text, tmp_path_factory.mktemp("fio") / "job.fio")


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """A shipped or test job file with some lines changed: an option given a nasty value, an
    option added, a line deleted, duplicated or cut, a section header broken."""
    lines = draw(st.sampled_from(SEEDS)).read_text(encoding="utf-8").splitlines()
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(lines)))
        kind = draw(st.integers(0, 5))
        if kind == 0 and at < len(lines) and "=" in lines[at]:
            key = lines[at].partition("=")[0]
            lines[at] = f"{key}={draw(st.sampled_from(NASTY_VALUES))}"
        elif kind == 1:
            option = draw(st.sampled_from(OPTIONS))
            value = draw(st.sampled_from(NASTY_VALUES))
            lines.insert(at, f"{option}={value}" if draw(st.booleans()) else option)
        elif kind == 2 and at < len(lines):
            del lines[at]
        elif kind == 3 and at < len(lines):
            lines.insert(at, lines[at])
        elif kind == 4 and at < len(lines):
            lines[at] = lines[at][: draw(st.integers(0, len(lines[at])))]
        else:
            lines.insert(at, draw(st.sampled_from(["[global]", "[job]", "[", "[]", "include"])))
    return "\n".join(lines) + "\n"


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=mutated())
def test_mutated_job_files_read_or_are_clean_errors(text: str, tmp_path_factory) -> None:  # noqa: ANN001
    _read_all(text, tmp_path_factory.mktemp("fio") / "job.fio")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    target=st.sampled_from(
        ["self.fio", "missing.fio", "dir", "empty.fio", "binary.fio", "/dev/null", "a b.fio"]
    ),
    before_section=st.booleans(),
)
def test_includes_of_anything_read_or_are_clean_errors(
    target: str,
    before_section: bool,
    tmp_path_factory,  # noqa: ANN001
) -> None:
    base = tmp_path_factory.mktemp("fio")
    (base / "dir").mkdir()
    (base / "empty.fio").write_text("")
    (base / "binary.fio").write_bytes(b"\xff\xfe\x00[a]\n")
    job = base / "self.fio"
    text = f"include {target}\n[a]\nrw=read\n" if before_section else f"[a]\ninclude {target}\n"
    job.write_text(text)
    _read_all(text, job)
