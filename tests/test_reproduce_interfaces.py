"""The interface report: its table on constructed rows, and one real run of every interface."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from ssdlab.reproduce import interfaces, run_experiment


def test_measure_picks_each_interface_by_kind_and_link() -> None:
    rows = []
    for n, (_, kind, link, _) in enumerate(interfaces.INTERFACES):
        for rw in ("randread", "read", "write"):
            rows.append(
                {
                    # NVMe rows come from a sweep that leaves interface.kind to the preset.
                    "config.interface.kind": None if kind == "nvme" else kind,
                    "config.interface.link": link,
                    "job.rw": rw,
                    "status": "ok",
                    "iface.device_queue_depth": 1 + n,
                    "ops.read.latency_us.mean": 10.0 + n,
                    "ops.read.latency_us.p50": 9.0 + n,
                    "total.bandwidth_mb_s": (100.0 if rw == "read" else 50.0) * (1 + n),
                }
            )
    measured = interfaces.measure(pl.DataFrame(rows))
    assert [m["interface"] for m in measured] == [label for *_, label in interfaces.INTERFACES]
    ide_ideal = next(m for m in measured if m["interface"] == "IDE, ideal link")
    n = [label for *_, label in interfaces.INTERFACES].index("IDE, ideal link")
    assert ide_ideal["device_queue_depth"] == 1 + n
    assert ide_ideal["seq_read_mb_s"] == 100.0 * (1 + n)
    assert ide_ideal["read_latency_us_p50"] == 9.0 + n
    assert len(interfaces.compare(pl.DataFrame(rows))) == 3 * len(interfaces.INTERFACES)
    headers, cells = interfaces.overview(pl.DataFrame(rows))
    assert len(cells) == len(interfaces.INTERFACES)
    assert all(len(line) == len(headers) for line in cells)
    row = cells[n]
    assert row[0] == "IDE, ideal link"
    assert row[headers.index("seq read MB/s")] == f"{100.0 * (1 + n):,.0f}"
    assert interfaces.overview(None)[1][0][2:] == ["–"] * (len(headers) - 2)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    out = tmp_path_factory.mktemp("interfaces")
    reproduction = run_experiment("interfaces", out, workers=2)
    assert not reproduction.failed
    return out, interfaces.measure(_table(out))


def _table(out: Path) -> pl.DataFrame:
    from ssdlab.reproduce import concat_tables

    table = pl.read_parquet(out / "results.parquet")
    for sweep in interfaces.SWEEPS[1:]:
        table = concat_tables(table, pl.read_parquet(out / Path(sweep).stem / "results.parquet"))
    return table


def test_every_interface_runs_and_queues_as_its_protocol_allows(report) -> None:
    out, measured = report
    by = {m["interface"]: m for m in measured}
    for entry in measured:
        for key in ("read_latency_us_mean", "seq_read_mb_s", "seq_write_mb_s"):
            assert entry[key] and entry[key] > 0, (entry["interface"], key)
    assert by["IDE, UDMA6"]["device_queue_depth"] == 1
    assert by["eMMC 5.0 HS200, no CQ"]["device_queue_depth"] == 1
    assert by["SATA 3, NCQ 32"]["device_queue_depth"] == 32
    # Link ceilings: each slower link caps sequential reads below its rate.
    assert by["IDE, UDMA6"]["seq_read_mb_s"] < 133.4
    assert by["SATA 3, NCQ 32"]["seq_read_mb_s"] < 600
    assert by["NVMe, PCIe Gen1 x1"]["seq_read_mb_s"] < 250
    assert by["UFS 2.0, HS-G3 ×2"]["seq_read_mb_s"] < by["UFS 3.x, HS-G4 ×2"]["seq_read_mb_s"]
    # A queue matters: eMMC with command queueing beats eMMC without at the same workload.
    assert (
        by["eMMC 5.1 HS400, CQ 32"]["seq_write_mb_s"]
        > by["eMMC 5.0 HS200, no CQ"]["seq_write_mb_s"]
    )
    assert (out / "interfaces.png").is_file() and (out / "report.html").is_file()
