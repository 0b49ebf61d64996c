"""Power loss on the page-mapped FTL from Python and the CLI (docs/power-loss.md): the run
option, the result's block, the table, and bad input named on one line (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ssdlab
from conftest import assert_user_error, run_cli

SMALL = [
    "nand.channels=2",
    "nand.dies_per_package=1",
    "nand.blocks_per_plane=80",
    "nand.pages_per_block=16",
]


def _small(*extra: str) -> ssdlab.Config:
    return ssdlab.Config("small-tlc", [*SMALL, *extra])


JOB = ssdlab.Job(rw="randwrite", bs=4096, iodepth=8, io_count=3000)


def test_a_cut_from_python_reports_what_was_lost_and_repeats() -> None:
    cfg = _small('cache.capacity="256KiB"', 'cache.mode="write-back"')
    r = ssdlab.run(cfg, JOB, seed=3, power_cut_event=5000)
    cut = r.power_loss
    assert cut is not None and cut["event"] == 5000
    assert r["sim"]["stop_reason"] == "power_cut"
    assert cut["recovery_us"] > 0 and cut["pages_scanned"] > 0
    assert cut["acknowledged_writes_lost"] > 0 and cut["units_unreadable"] == 0
    again = ssdlab.run(cfg, JOB, seed=3, power_cut_event=5000)
    assert again.power_loss == cut
    assert "power cut" in r.summary() and "recovery" in r.summary()
    protected = ssdlab.run(
        cfg.set("ftl.power_loss_protection", True), JOB, seed=3, power_cut_at="2ms"
    )
    assert protected.power_loss["acknowledged_writes_lost"] == 0
    assert ssdlab.run(cfg, JOB, seed=3).power_loss is None


@pytest.mark.parametrize(
    ("kwargs", "needles"),
    [
        ({"power_cut_event": -1}, ("power_cut_event", "-1")),
        ({"power_cut_event": 10**9}, ("power_cut_event", "1000000000")),
        ({"power_cut_at": "-1ms"}, ("power_cut_at", "-1ms")),
        ({"power_cut_at": "100s"}, ("power_cut_at",)),
        ({"power_cut_event": 5, "power_cut_at": "1ms"}, ("got both",)),
    ],
)
def test_bad_cuts_are_refused_naming_the_option(
    kwargs: dict[str, object], needles: tuple[str, ...]
) -> None:
    with pytest.raises(ssdlab.SsdlabError) as e:
        ssdlab.run(_small(), JOB, **kwargs)  # type: ignore[arg-type]
    for needle in needles:
        assert needle in str(e.value)


def test_the_cli_cuts_a_page_mapped_drive(tmp_path: Path) -> None:
    out = tmp_path / "cut.json"
    args = ["run", "small-tlc", "--rw", "randwrite", "--io-count", "2000", "--iodepth", "8"]
    proc = run_cli(*args, "--power-cut-event", "4000", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    cut = json.loads(out.read_text())["power_loss"]
    assert cut["event"] == 4000 and cut["acknowledged_writes_lost"] == 0
    text = run_cli(*args, "--power-cut-at", "1ms")
    assert text.returncode == 0, text.stderr
    assert "Power loss" in text.stdout and "recovery" in text.stdout
    late = run_cli(*args, "--power-cut-event", "100000000")
    assert_user_error(late, "power_cut_event", "100000000")
    negative = run_cli(*args, "--power-cut-at", "-5us")
    assert_user_error(negative, "power_cut_at", "-5us")
    block_mapped = ["--set", 'ftl.kind="block"', "--set", 'ftl.map_unit="16KiB"']
    block = run_cli(*args, *block_mapped, "--power-cut-event", "100")
    assert_user_error(block, "power_cut_event", "page-mapped")
    fusion = run_cli("run", "seed002-fusion", "--io-count", "10", "--power-cut-at", "1ms")
    assert_user_error(fusion, "--power-cut-at", "hfsl")
