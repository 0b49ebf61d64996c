"""Seed 000 reproductions: the comparisons on constructed tables, and small real runs."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import ssdlab
from ssdlab.reproduce import get, run_experiment, seed000

PROTOTYPE = seed000.PROTOTYPE


def _table(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame([{"status": "ok", "config_name": PROTOTYPE, **row} for row in rows])


def test_fig6_overhead_is_one_minus_protocol_over_interface() -> None:
    rows = [
        {
            "job.bs": chunk,
            seed000.READ_BW: 100.0 * (i + 1),
            seed000.INTERFACE_BW: 200.0 * (i + 1) - (90.0 if chunk == "512KiB" else 0.0),
        }  # fmt: skip
        for i, chunk in enumerate(seed000.CHUNKS)
    ]
    out = {row.metric: row for row in seed000.compare_fig6(_table(rows))}
    small = out["protocol overhead, 4 KB chunk"]
    assert small.paper == 66.8 and small.ssdlab == pytest.approx(50.0)
    large = out["protocol overhead, 512 KB chunk"]
    assert large.ssdlab == pytest.approx(100 * (1 - 800 / 1510))
    assert out["interface bandwidth, 512 KB read chunk"].ssdlab == pytest.approx(1510.0)
    assert out["protocol overhead falls at every larger chunk"].note == "no"  # 50 % all along
    # Without runs the document's numbers are still there.
    empty = {row.metric: row for row in seed000.compare_fig6(None)}
    assert empty["protocol overhead, 4 KB chunk"].ssdlab is None
    assert empty["interface bandwidth, 512 KB read chunk"].paper == 366.7


def test_fig7_compares_overhead_latency_not_latency() -> None:
    """Fig. 7's metric is latency less the data movement: the prototype's chunk over its
    interface bandwidth, the UFS device's over the data rate its 256-to-512 KiB latencies show."""
    rows = []
    for chunk in seed000.CHUNKS:
        size = seed000.CHUNK_BYTES[chunk]
        large = chunk in ("256KiB", "512KiB")
        # Prototype: 20 µs of overhead at 400 MB/s. UFS: 1,000 MB/s, 30 µs of overhead up to
        # 128 KiB and 10 µs above. The prototype's latency is higher at every chunk.
        rows.append({"job.bs": chunk, seed000.LATENCY: 20.0 + size / 400.0,
                     seed000.INTERFACE_BW: 400.0})  # fmt: skip
        rows.append({"job.bs": chunk, seed000.LATENCY: (10.0 if large else 30.0) + size / 1000.0,
                     "config_name": seed000.UFS})  # fmt: skip
    out = seed000.compare_fig7(_table(rows))
    first, last = out[0], out[-1]
    assert first.metric == "512 KB chunk: protocol overhead latency, prototype"
    assert first.ssdlab == pytest.approx(20.0)
    # 524,288 B at 366.7 MB/s, and 3.8 % of the protocol time on top.
    assert first.paper == pytest.approx(524288 / 366.7 * 0.038 / 0.962)
    assert first.label == "calibrated"
    assert last.paper == 8 and last.ssdlab == 6  # below UFS's 30 µs, not its 10 µs
    assert all(row.ssdlab is None for row in seed000.compare_fig7(None))


def test_fig8_peak_gain_and_contention() -> None:
    rows = [
        {"job.bs": chunk, "config.interface.dram.buffer_size": buffer,
         seed000.TOTAL_BW: 400.0 if buffer != "128KiB" else (300.0 if chunk == "64KiB" else 150.0)}
        for buffer in seed000.BUFFERS for chunk in seed000.FIG8_CHUNKS
    ]  # fmt: skip
    out = {row.metric: row for row in seed000.compare_fig8(_table(rows))}
    peak = out["QD4 read throughput, 256 KB chunk, 512 KB buffer (the document's peak)"]
    assert peak.paper == 436 and peak.ssdlab == 400
    assert out["256KiB chunk: best gain from a buffer over 512 KB"].ssdlab == pytest.approx(0)
    contention = out["128 KB buffer: 256 KB chunks over 64 KB chunks"]
    assert contention.ssdlab == pytest.approx(0.5) and "matches" in contention.note
    # Every chunk peaks at 256 KiB (the smallest buffer giving its highest figure): the peak
    # does not move with the chunk.
    peak = out["smaller chunks reach their peak at a smaller buffer"]
    assert peak.ssdlab == pytest.approx(1.0) and peak.agrees is False
    assert "64KiB at 256KiB" in peak.note and "512KiB at 256KiB" in peak.note


def test_fig8_peak_buffer_grows_with_the_chunk() -> None:
    # A chunk's throughput rises until the buffer holds four of its commands, then stays.
    def rate(buffer: str, chunk: str) -> float:
        return min(4.0, seed000._size(buffer) / seed000._size(chunk))

    rows = [
        {"job.bs": chunk, "config.interface.dram.buffer_size": buffer,
         seed000.TOTAL_BW: rate(buffer, chunk)}
        for buffer in seed000.BUFFERS for chunk in seed000.FIG8_CHUNKS
    ]  # fmt: skip
    out = {row.metric: row for row in seed000.compare_fig8(_table(rows))}
    peak = out["smaller chunks reach their peak at a smaller buffer"]
    assert peak.agrees is True and peak.ssdlab == pytest.approx(8.0)
    assert "64KiB at 256KiB" in peak.note and "512KiB at 2MiB" in peak.note


def test_fig8_peak_buffer_that_shrinks_with_the_chunk_does_not_match() -> None:
    # 64 KiB chunks best at 2 MiB, the rest flat: the smallest chunk needs the largest buffer.
    rows = [
        {"job.bs": chunk, "config.interface.dram.buffer_size": buffer,
         seed000.TOTAL_BW: 500.0 if (chunk, buffer) == ("64KiB", "2MiB") else 400.0}
        for buffer in seed000.BUFFERS for chunk in seed000.FIG8_CHUNKS
    ]  # fmt: skip
    out = {row.metric: row for row in seed000.compare_fig8(_table(rows))}
    peak = out["smaller chunks reach their peak at a smaller buffer"]
    assert peak.agrees is False and peak.ssdlab == pytest.approx(128 / 2048)
    empty = {row.metric: row for row in seed000.compare_fig8(None)}
    assert empty[peak.metric].agrees is None and empty[peak.metric].ssdlab is None


def test_fig9_maxima_and_fig10_directions() -> None:
    rows = [
        {"job.rw": rw, "job.numjobs": qd, "job.bs": chunk, seed000.TOTAL_BW: 1.0 * qd}
        for rw in ("read", "write") for qd in (1, 4) for chunk in seed000.CHUNKS
    ]  # fmt: skip
    out = {row.metric: row for row in seed000.compare_fig9(_table(rows))}
    assert out["maximum read throughput (512 KB chunk, QD4)"].ssdlab == 4.0
    assert out["QD4 write at a 64 KB chunk, share of the 512 KB figure"].ssdlab == 100.0
    # Flat lines do not grow.
    flat = out["read QD1: throughput grows at every larger chunk"]
    assert flat.ssdlab == 0 and flat.agrees is False

    rows = []
    for rw, bs in seed000.FIG10_LABELS:
        rows.append({"job.rw": rw, "job.bs": bs, seed000.TOTAL_BW: 100.0})
        rows.append({"job.rw": rw, "job.bs": bs, seed000.TOTAL_BW: 50.0,
                     "config_name": seed000.UFS})  # fmt: skip
        rows.append({"job.rw": rw, "job.bs": bs, seed000.TOTAL_BW: 200.0,
                     "config.interface.dram.cached_write": True})  # fmt: skip
    out = {row.metric: row for row in seed000.compare_fig10(_table(rows))}
    read = out["512 KB sequential read: prototype over UFS 2.0"]
    assert read.ssdlab == 2.0 and "ssdlab matches" in read.note
    write = out["4 KB random write: prototype over UFS 2.0"]
    assert "does not match" in write.note
    assert out["4 KB random write: prototype with cached write"].ssdlab == 200.0


def test_fig9_growth_and_bank_conflicts() -> None:
    # Every line rises with the chunk except QD4 writes, which dip once at 256 KiB. The controller
    # is pre-empted on one 4 KiB piece in 20, except on QD4 reads of 16 KiB (one in 5).
    rows = []
    for rw in ("read", "write"):
        for qd in (1, 4):
            for i, chunk in enumerate(seed000.CHUNKS):
                data = 4096 * 100
                dip = rw == "write" and qd == 4 and chunk == "256KiB"
                worst = rw == "read" and qd == 4 and chunk == "16KiB"
                rows.append({"job.rw": rw, "job.numjobs": qd, "job.bs": chunk,
                             seed000.TOTAL_BW: 10.0 * i - (15.0 if dip else 0.0),
                             "iface.dram.data_bytes": data,
                             "iface.dram.bank_conflicts": 20 if worst else 5})  # fmt: skip
    out = {row.metric: row for row in seed000.compare_fig9(_table(rows))}
    assert out["read QD4: throughput grows at every larger chunk"].agrees is True
    assert out["read QD4: throughput grows at every larger chunk"].ssdlab == 7
    dipped = out["write QD4: throughput grows at every larger chunk"]
    assert dipped.agrees is False and dipped.ssdlab == 6  # all but 128 to 256 KiB
    assert "128KiB 50.0 to 256KiB 45.0 MB/s" in dipped.note
    conflicts = out["SRAM bank conflicts per controller access, highest over the runs"]
    assert conflicts.ssdlab == pytest.approx(0.2) and conflicts.agrees is False
    assert "read QD4, 16KiB chunk" in conflicts.note and "4 KiB" in conflicts.note
    # A run with another interleave counts its own pieces: 8 KiB pieces, half as many accesses.
    table = _table(rows).with_columns(pl.lit("8KiB").alias("config.interface.dram.bank_interleave"))
    out = {row.metric: row for row in seed000.compare_fig9(table)}
    conflicts = out["SRAM bank conflicts per controller access, highest over the runs"]
    assert conflicts.ssdlab == pytest.approx(0.4) and "8 KiB" in conflicts.note
    empty = {row.metric: row for row in seed000.compare_fig9(None)}
    assert empty[conflicts.metric].ssdlab is None and empty[conflicts.metric].agrees is None


def test_table1_sets_power_beside_the_document_with_its_parts() -> None:
    rows = [
        {"job.rw": "read", seed000.POWER: 280.0, "power.nand_array_mw": 100.0},
        {"job.rw": "write", seed000.POWER: 400.0, "power.nand_array_mw": 300.0},
    ]
    out = {row.metric: row for row in seed000.compare_table1(_table(rows))}
    read = out["average power, sequential read (512 KB, QD4)"]
    assert read.paper == 560 and read.ssdlab == 280 and read.difference == pytest.approx(-0.5)
    assert read.label == "prediction" and "NAND arrays 100 mW" in read.note
    write = out["average power, sequential write (512 KB, QD4)"]
    assert write.paper == 450 and write.ssdlab == 400
    ratio = out["sequential read over sequential write"]
    assert ratio.label == "derived" and ratio.ssdlab == pytest.approx(0.7)
    assert ratio.paper == pytest.approx(560 / 450)
    assert all(row.ssdlab is None for row in seed000.compare_table1(None))


def test_the_prototype_draws_more_power_writing_than_reading() -> None:
    """Table 1's runs, short: writes keep every die programming, so the NAND's arrays draw
    more than in reads, which leave them idle two thirds of the time."""

    def power(rw: str) -> dict:
        config = ssdlab.Config.load(PROTOTYPE, ['interface.dram.chunk_size="512KiB"'])
        job = {"rw": rw, "bs": "512KiB", "numjobs": 4, "iodepth": 1, "io_count": 128}
        return ssdlab.run(config, job).to_dict()["power"]

    read, write = power("read"), power("write")
    assert write["nand_array_mw"] > 2 * read["nand_array_mw"] > 0
    assert read["data_path_mw"] > write["data_path_mw"] > 0
    for p in (read, write):
        parts = ("nand_array_mw", "nand_standby_mw", "nand_io_mw", "controller_mw", "data_path_mw")
        assert p["average_mw"] == pytest.approx(sum(p[k] for k in parts))


def test_experiments_are_registered() -> None:
    for name in ("seed000-fig6", "seed000-fig7", "seed000-fig8", "seed000-fig9", "seed000-fig10",
                 "seed000-dma", "seed000-table1"):  # fmt: skip
        experiment = get(name)
        assert experiment.sweep_path().is_file()
        assert all(path.is_file() for path in experiment.extra_sweep_paths())


def test_fig6_runs_deterministically_and_overhead_falls(tmp_path: Path) -> None:
    """The real Fig. 6 runs (8 short runs): the same numbers twice, overhead falling with the
    chunk, interface bandwidth below the DMA's 450 MB/s."""
    first = run_experiment("seed000-fig6", tmp_path / "a", workers=2)
    second = run_experiment("seed000-fig6", tmp_path / "b", workers=2)
    assert not first.failed
    assert [r.to_dict() for r in first.rows] == [r.to_dict() for r in second.rows]
    out = {row.metric: row for row in first.rows}
    assert out["protocol overhead falls at every larger chunk"].note == "yes"
    assert (
        0
        < out["protocol overhead, 512 KB chunk"].ssdlab
        < out["protocol overhead, 4 KB chunk"].ssdlab
    )
    assert 0 < out["interface bandwidth, 512 KB read chunk"].ssdlab < 450
    assert (tmp_path / "a" / "fig6-bandwidth.png").is_file()


def test_a_smaller_buffer_lowers_qd4_reads() -> None:
    """Fig. 8's mechanism: four 256 KiB reads in a 128 KiB buffer go one piece at a time."""

    def bandwidth(buffer: str) -> tuple[float, int]:
        config = ssdlab.Config.load(
            PROTOTYPE,
            [f'interface.dram.buffer_size="{buffer}"', 'interface.dram.chunk_size="256KiB"'],
        )
        job = {"rw": "read", "bs": "256KiB", "numjobs": 4, "iodepth": 1, "io_count": 128}
        result = ssdlab.run(config, job).to_dict()
        return result["total"]["bandwidth_mb_s"], result["interface"]["dram"]["buffer_waits"]

    small, waits_small = bandwidth("128KiB")
    large, waits_large = bandwidth("1MiB")
    assert small < 0.7 * large
    assert waits_small > waits_large


def test_dma_rows_are_ratios_of_iops_and_the_read_row_is_calibrated() -> None:
    table = _table(
        [
            {"job.rw": rw, "config.interface.dram.data_move": move, "total.iops": iops}
            for rw, move, iops in (
                ("randread", "dma", 1000.0), ("randread", "cpu", 100.0),
                ("randwrite", "dma", 500.0), ("randwrite", "cpu", 400.0),
            )
        ]
    )  # fmt: skip
    read, write = seed000.compare_dma(table)
    assert (read.paper, read.ssdlab, read.label) == (10.0, 10.0, "calibrated")
    assert "calibrated:" in read.note and "cpu_read_copy_rate" in read.note
    assert (write.ssdlab, write.label) == (1.25, "prediction")
    assert [row.ssdlab for row in seed000.compare_dma(None)] == [None, None]


def test_cpu_copies_out_of_the_uncached_buffer_slow_small_reads_by_an_order_of_magnitude() -> None:
    """§5.4's mechanism on the preset: a 4 KiB read's data leaves the buffer at the calibrated
    load rate, holding a core; writes, bound by NAND programs, hardly change."""

    def iops(rw: str, move: str) -> float:
        config = ssdlab.Config.load(
            PROTOTYPE,
            ['interface.dram.chunk_size="4KiB"', f'interface.dram.data_move="{move}"'],
        )
        job = {"rw": rw, "bs": "4KiB", "numjobs": 4, "iodepth": 1, "io_count": 400}
        return ssdlab.run(config, job).to_dict()["total"]["iops"]

    assert iops("randread", "dma") / iops("randread", "cpu") > 8
    assert iops("randwrite", "dma") / iops("randwrite", "cpu") < 1.5
