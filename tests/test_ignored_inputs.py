"""Inputs that were ignored without a word (issue 45, defect 7): each is now refused in one line
that names it, or (where a default was silently replaced) said."""

from __future__ import annotations

from pathlib import Path

import pytest

import ssdlab
from conftest import assert_user_error, run_cli
from ssdlab.nvme import NvmeAccessError, NvmeDevice


@pytest.fixture
def pages(tmp_path: Path) -> Path:
    path = tmp_path / "pages.txt"
    path.write_text("0x1000 W\n0x2000\n0x3000 R\n", encoding="utf-8")
    return path


def test_a_swap_trace_format_without_a_swap_trace_is_refused(pages: Path) -> None:
    proc = run_cli(
        "swap", "small-tlc", "--memory", "1MiB", "--swap-size", "16MiB",
        "--workload", pages, "--swap-trace-format", "spc",
    )  # fmt: skip
    assert_user_error(proc, "--swap-trace-format spc", "--swap-trace")


def test_a_third_field_on_a_page_reference_line_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "three.txt"
    path.write_text("0x1000 W\n0x2000 R 17\n", encoding="utf-8")
    proc = run_cli(
        "swap", "small-tlc", "--memory", "1MiB", "--swap-size", "16MiB", "--workload", path
    )
    assert_user_error(proc, "line 2", '"17"')


def test_an_empty_endurance_list_is_refused(pages: Path) -> None:
    proc = run_cli(
        "swap", "small-tlc", "--memory", "1MiB", "--swap-size", "16MiB",
        "--workload", pages, "--set", "swap.endurance=[]",
    )  # fmt: skip
    assert_user_error(proc, "endurance", "empty")


def test_a_format_with_a_model_trace_is_refused() -> None:
    model = "model:financial1,count=100"
    assert_user_error(run_cli("run", "small-tlc", "--trace", model, "--format", "spc"), "format")
    assert_user_error(run_cli("trace", "stats", model, "--format", "spc"), "--format", "model")


def test_nvme_device_queue_depth_out_of_range_and_an_empty_deallocate_are_refused() -> None:
    for depth in (1, 65537):
        with pytest.raises(NvmeAccessError, match=f"queue_depth: got {depth}"):
            NvmeDevice("small-tlc", queue_depth=depth)
    dev = NvmeDevice("small-tlc", queue_depth=8)
    with pytest.raises(NvmeAccessError, match="deallocate nlb: got 0"):
        dev.deallocate(0, 0)
    assert dev.deallocate(0, 1)["status"] == 0


def test_a_progress_that_cannot_be_called_is_a_type_error_naming_it() -> None:
    cfg = ssdlab.Config.load("small-tlc")
    job = {"rw": "randread", "bs": "4KiB", "io_count": 10}
    with pytest.raises(TypeError, match="progress: got 5"):
        ssdlab.run(cfg, job, progress=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="progress: got 5"):
        ssdlab.trace_stats("model:financial1,count=10", progress=5)  # type: ignore[arg-type]
