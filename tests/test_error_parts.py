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
