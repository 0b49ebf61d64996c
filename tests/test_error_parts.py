"""The parts of an error as data: the exception's class comes from the core's error area and
its ``origin``, ``field``, ``value`` and ``expected`` from the core's error type, so that a
caller (the CLI, fio's line finder, an importer) never reads them out of the message."""

from __future__ import annotations

from pathlib import Path

import pytest

import ssdlab
from ssdlab import _core

PARTS = ("origin", "field", "value", "expected", "flow")


def test_every_ssdlab_error_has_the_parts_none_by_default() -> None:
    # The Python side's own errors too: a caller reads `error.field` of any SsdlabError.
    for cls in (
        _core.SsdlabError,
        _core.ConfigError,
        _core.JobError,
        _core.TraceError,
        _core.SimulationError,
        _core.Interrupted,
    ):
        error = cls("words")
        for part in PARTS:
            assert getattr(error, part) is None, (cls, part)


def test_an_error_in_words_has_no_parts() -> None:
    with pytest.raises(ssdlab.ConfigError) as caught:
        ssdlab.Config.load("no-such-preset-or-file")
    assert (caught.value.field, caught.value.value, caught.value.expected) == (None, None, None)


def test_a_config_error_has_its_field_value_and_expectation(small_config: ssdlab.Config) -> None:
    with pytest.raises(ssdlab.ConfigError) as caught:
        small_config.set("nand.channels", 0)
    error = caught.value
    assert (error.field, error.value, error.expected) == ("nand.channels", "0", "at least 1")
    assert str(error) == f"{error.origin}, field `nand.channels`: got 0, expected at least 1"


def test_a_job_error_has_its_field_value_and_expectation() -> None:
    with pytest.raises(ssdlab.JobError) as caught:
        ssdlab.Job(rw="read", iodepth=0)
    error = caught.value
    assert (error.origin, error.field) == ("job", "iodepth")
    assert error.value == "0"
    assert str(error) == f"job, field `iodepth`: got 0, expected {error.expected}"


def test_a_field_rule_in_words_has_the_field_alone() -> None:
    # The reader's own words for an unknown field: the field is data, no value or expectation.
    with pytest.raises(ssdlab.JobError) as caught:
        ssdlab.Job(rw="read", bs="4 parsecs")
    assert caught.value.field == "bs"


def test_a_flows_error_keeps_the_fields_parts_and_says_which_flow() -> None:
    reader = {"name": "reader", "rw": "randread", "io_count": 10}
    bad = {"name": "writer", "rw": "randwrite", "io_count": 10, "stream": 3}
    with pytest.raises(ssdlab.JobError) as caught:
        ssdlab.run("small-tlc", [reader, bad])
    assert (caught.value.flow, caught.value.field) == (1, "stream")
    assert str(caught.value).startswith("flow `writer`, field `stream`")


def test_the_apis_own_field_errors_carry_the_parts_too() -> None:
    with pytest.raises(ssdlab.JobError) as caught:
        ssdlab.Job(rw="read", io_count=2**70)
    assert (caught.value.field, caught.value.value) == ("io_count", str(2**70))
    assert caught.value.expected == "an integer below 2^64"


def test_an_unreadable_file_is_the_errors_origin(tmp_path: Path) -> None:
    folder = str(tmp_path.resolve())
    with pytest.raises(ssdlab.JobError) as job:
        ssdlab.Job.load(folder)
    with pytest.raises(ssdlab.ConfigError) as config:
        ssdlab.Config.load(tmp_path)
    for caught, what in ((job, "job file"), (config, "TOML config")):
        assert caught.value.origin == folder
        assert str(caught.value) == f"{folder}: is a directory, expected a {what}"
        assert caught.value.field is None


@pytest.mark.parametrize(
    ("format", "text", "field", "value"),
    [
        ("msr", "1,h,0,Read,0,512,1\n2,h,0,Erase,0,512,1\n", "Type", '"Erase"'),
        ("spc", "0,1,4096,r,0.0\n0,2,4096,q,0.1\n", "Opcode", '"q"'),
        ("disksim", "0 0 8 8 1\n10 0 x 8 1\n", "start_sector", '"x"'),
        ("blkparse", "8,0 3 1 0.1 6 D W 8 + 8 [f]\n8,0 3 2 0.2 6 D W 8 + y [f]\n", "blocks", '"y"'),
        ("tencent", "1,0,8,1,7\n2,0,8,5,7\n", "IOType", '"5"'),
        ("alibaba", "1,R,0,4096,10\n1,Q,0,4096,11\n", "opcode", '"Q"'),
        ("fio", "fio version 2 iolog\nf add\nf read 0 x\n", "length", '"x"'),
        (
            "nvme",
            "a-1 [000] ..... 1.5: nvme_setup_cmd: nvme0: disk=nvme0n1, qid=1, cmdid=1, "
            "nsid=1, flags=0x0, meta=0x0, "
            "cmd=(nvme_cmd_write slba=q, len=0, ctrl=0x0, dsmgmt=0, reftag=0)\n",
            "slba",
            '"q"',
        ),
    ],
)  # fmt: skip
def test_a_bad_trace_line_has_its_file_line_field_and_value(
    tmp_path: Path, format: str, text: str, field: str, value: str
) -> None:
    path = tmp_path / "bad.trace"
    path.write_text(text)
    with pytest.raises(ssdlab.TraceError) as caught:
        ssdlab.trace_stats(path, format=format)
    error = caught.value
    lines = len(text.splitlines())
    assert error.origin == f"{path}, line {lines}"
    assert (error.field, error.value) == (field, value)
    assert error.expected
    # The message is the parts in the core's one shape, then the format and the line itself.
    assert str(error).startswith(
        f"{error.origin}, field `{field}`: got {value}, expected {error.expected} ({format} trace: "
    )
    assert str(error).endswith(f'the line: "{text.splitlines()[-1]}"')


def test_a_trace_line_of_the_wrong_shape_has_no_field(tmp_path: Path) -> None:
    # Too few fields: the line, not a column, is wrong; its count is the value.
    path = tmp_path / "short.csv"
    path.write_text("1,h,0,Read,0,512,1\n2,h,0,Read\n")
    with pytest.raises(ssdlab.TraceError) as caught:
        ssdlab.trace_stats(path, format="msr")
    error = caught.value
    assert error.field is None
    assert (error.value, error.expected.split(" ")[:2]) == ("4 fields", ["7", "fields"])
