"""Seed 004 Fig. 5's IDE-ideal and IDE-SATA3 bars: the comparison on a constructed table and the
mechanism on a small drive."""

from __future__ import annotations

import polars as pl
import pytest

import ssdlab
from ssdlab.reproduce import get, seed004

# One 1 MiB request is four 256 KiB commands on small-tlc: 256 × 4 needs more than 1023 entries.
NVME_IDEAL = ['interface.link="ideal"', 'interface.mdts="1MiB"']


def _fig5_table() -> pl.DataFrame:
    # NVMe rows come from a sweep that does not set interface.kind; IDE and SATA rows do.
    nvme = pl.DataFrame(
        [
            {"config.interface.link": link, "job.rw": rw, "status": "ok",
             "total.bandwidth_mib_s": 1000.0 if rw == "read" else 400.0}
            for link in seed004.LINKS for rw in seed004.ACCESS
        ]
    )  # fmt: skip
    legacy = pl.DataFrame(
        [
            {"config.interface.kind": kind, "config.interface.link": link, "job.rw": rw,
             "status": "ok", "total.bandwidth_mib_s": 200.0 if rw == "read" else 50.0}
            for kind, link in seed004.LEGACY for rw in seed004.ACCESS
        ]
    )  # fmt: skip
    return pl.concat([nvme, legacy], how="diagonal_relaxed")


def test_ide_ratios_come_from_the_ide_runs() -> None:
    rows = {row.metric: row for row in seed004.compare_fig5(_fig5_table())}
    read = rows["NVMe-ideal over IDE-ideal, sequential read"]
    assert read.paper == 5.5 and read.ssdlab == pytest.approx(5.0)
    write = rows["NVMe-ideal over IDE-ideal, sequential write"]
    assert write.paper == 8.0 and write.ssdlab == pytest.approx(8.0)
    loss = rows["bandwidth lost to IDE, sequential read"]
    assert loss.paper == 82 and loss.ssdlab == pytest.approx(80.0)
    # NVMe-ideal is not mixed up with IDE-ideal (both have link "ideal").
    assert rows["NVMe-ideal sequential read bandwidth"].ssdlab == 1000.0
    assert rows["IDE-ideal sequential read bandwidth"].ssdlab == 200.0
    assert rows["IDE-SATA3 random write bandwidth"].ssdlab == 50.0
    assert not any("not modelled" in row.note for row in rows.values())


def test_fig5_runs_the_ide_and_sata_sweeps() -> None:
    experiment = get("seed004-fig5")
    names = [path.name for path in experiment.extra_sweep_paths()]
    assert names == ["seed004_fig5_ide.toml", "seed004_fig5_sata.toml"]
    for sweep in experiment.extra_sweep_paths():
        text = sweep.read_text()
        assert '"interface.queue_depth" = 1' in text and "iodepth = 256" in text


def test_ide_ideal_is_slower_than_nvme_ideal_at_iodepth_256() -> None:
    """No queue: one command at a time, whatever fio's iodepth, on the small drive."""
    job = {"rw": "read", "bs": "1MiB", "iodepth": 256, "io_count": 64}
    nvme = ssdlab.run(ssdlab.Config.load("small-tlc", NVME_IDEAL), job)
    ide = ssdlab.run(
        ssdlab.Config.load(
            "small-tlc",
            [
                'interface.kind="ide"',
                'interface.link="ideal"',
                "interface.queue_depth=1",
                "interface.io_queues=1",
                'interface.interrupt="pin"',
                'interface.mdts="128KiB"',
            ],
        ),
        job,
    )
    assert ide["interface"]["device_queue_depth"] == 1
    assert ide["total"]["bandwidth_mib_s"] < 0.7 * nvme["total"]["bandwidth_mib_s"]
    # Deterministic: the same run gives the same figures.
    again = ssdlab.run(ssdlab.Config.load("small-tlc", NVME_IDEAL), job)
    assert again["total"] == nvme["total"]
