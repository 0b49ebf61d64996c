"""The parts of an error as data: the exception's class comes from the core's error area and
its ``origin``, ``field``, ``value`` and ``expected`` from the core's error type, so that a
caller (the CLI, fio's line finder, an importer) never reads them out of the message."""

from __future__ import annotations

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
