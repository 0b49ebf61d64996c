"""Zoned drives (docs/zns.md) where a user meets them: the preset and its section, jobs with
zonemode=zbd from Python, fio job files with zonemode=zbd, and `ssdlab serve`'s refusal."""

from __future__ import annotations

from pathlib import Path

import ssdlab
from conftest import assert_user_error, run_cli
from ssdlab import fio

ROOT = Path(__file__).resolve().parent.parent


def test_config_show_prints_the_zns_section() -> None:
    proc = run_cli("config", "show", "zns-tlc")
    assert proc.returncode == 0, proc.stderr
    assert "[zns]" in proc.stdout and 'zone_size = "8MiB"' in proc.stdout


def test_a_bad_zone_size_is_one_line_naming_the_field() -> None:
    proc = run_cli("config", "show", "zns-tlc", "--set", 'zns.zone_size="12MiB"')
    assert_user_error(proc, "zns.zone_size", "12582912")


def test_a_zbd_job_from_python_reports_its_zones() -> None:
    cfg = ssdlab.Config.load("zns-tlc")
    job = ssdlab.Job(rw="write", bs="128KiB", iodepth=8, zonemode="zbd", io_count=10240)
    zones = ssdlab.run(cfg, job, seed=1).to_dict()["device"]["zones"]
    assert zones["errors"] == {}
    assert zones["resets"] == 32  # a quarter of the 128 zones written twice
    assert zones["zones"] == 128


def test_the_fio_reader_maps_the_zoned_options() -> None:
    f = fio.load(
        "z.fio",
        text="[w]\nrw=randwrite\nzonemode=zbd\nmax_open_zones=4\nzone_reset_threshold=0.7\n",
    )
    job = f.jobs[0]
    fields = job.job().to_dict()
    assert (fields["zonemode"], fields["max_open_zones"]) == ("zbd", 4)
    assert any("zone_reset_threshold" in w for w in f.warnings)


def test_a_zbd_fio_file_that_writes_then_reads_runs_unchanged() -> None:
    proc = run_cli("run", "zns-tlc", "--fio", ROOT / "examples" / "jobs" / "zns-write-read.fio")
    assert proc.returncode == 0, proc.stderr
    assert "write: IOPS=" in proc.stdout and "read: IOPS=" in proc.stdout


def test_strided_zones_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.fio"
    path.write_text("[s]\nrw=write\nzonemode=strided\nzonesize=1m\n")
    assert_user_error(run_cli("run", "small-tlc", "--fio", path), "zonemode", "strided")


def test_serve_refuses_a_zoned_drive() -> None:
    proc = run_cli("serve", "zns-tlc", "--listen", "unix:/tmp/ssdlab-zns-test.sock")
    assert_user_error(proc, "zoned drive", "NBD has no zones")
