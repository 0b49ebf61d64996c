"""Flexible Data Placement (docs/fdp.md) where a user meets it: the section in `config show`,
bad values as one line, a job's placement identifiers in the result, fio's FDP options, the
`ssdlab nvme fdp` log pages with nvme-cli's JSON names, and `ssdlab serve` on an FDP drive."""

from __future__ import annotations

import json
from pathlib import Path

import ssdlab
from conftest import assert_user_error, run_cli
from nbd_rig import CMD_WRITE, start_server
from nbd_rig import connect as _connect
from nbd_rig import go as _go
from nbd_rig import reply as _reply
from nbd_rig import request as _request
from ssdlab import fio

FDP = ("--set", "fdp.handles=2")


def test_config_show_prints_the_fdp_section() -> None:
    proc = run_cli("config", "show", "small-tlc", *FDP)
    assert proc.returncode == 0, proc.stderr
    assert "[fdp]" in proc.stdout and "handles = 2" in proc.stdout
    assert 'ruh_type = "persistently-isolated"' in proc.stdout


def test_bad_fdp_values_are_one_line_naming_the_field() -> None:
    for setting, needles in (
        ("fdp.handles=7", ("fdp.handles", "at most 6")),
        ("fdp.ru_bytes=768KiB", ("fdp.ru_bytes", "786432")),
        ("fdp.reclaim_groups=3", ("fdp.reclaim_groups", "16 planes")),
    ):
        proc = run_cli("config", "show", "small-tlc", *FDP, "--set", setting)
        assert_user_error(proc, *needles)
    proc = run_cli("config", "show", "small-tlc", *FDP, "--set", 'ftl.kind="block"')
    assert_user_error(proc, "ftl.kind", "[fdp]")


def test_a_job_s_placement_ids_are_counted_per_handle() -> None:
    cfg = ssdlab.Config.load("small-tlc", overrides=["fdp.handles=2"])
    job = ssdlab.Job(rw="randwrite", bs="4KiB", size="64MiB", io_count=2000, placement_ids=[0, 1])
    result = ssdlab.run(cfg, job, seed=1)
    fdp = result.fdp
    assert fdp == result["device"]["fdp"]
    assert ssdlab.run("small-tlc", ssdlab.Job(rw="randwrite", io_count=10), seed=1).fdp is None
    per = fdp["per_handle"]
    assert [h["host_bytes_written"] for h in per] == [1000 * 4096, 1000 * 4096]
    assert fdp["host_bytes_written"] == 2000 * 4096
    assert all(h["write_amplification"] >= 1.0 for h in per)


def test_a_placement_id_the_drive_lacks_exits_2_naming_the_field(tmp_path: Path) -> None:
    job = tmp_path / "j.toml"
    job.write_text('rw = "randwrite"\nbs = "4KiB"\nsize = "64MiB"\nio_count = 100\nstream = 5\n')
    proc = run_cli("run", "small-tlc", *FDP, "--job", job)
    assert_user_error(proc, "field `stream`", "placement identifier 5", "fdp.handles = 2")


def test_fio_s_fdp_options_become_placement_ids(tmp_path: Path) -> None:
    f = fio.load("f.fio", text="[w]\nrw=randwrite\nfdp=1\nfdp_pli=0-1\nfdp_pli_select=random\n")
    fields = f.jobs[0].job().to_dict()
    assert (fields["placement_ids"], fields["placement_select"]) == ([0, 1], "random")
    f = fio.load("g.fio", text="[w]\nrw=randwrite\ndataplacement=fdp\nplids=1,3\n")
    assert f.jobs[0].job().to_dict()["placement_ids"] == [1, 3]
    path = tmp_path / "bad.fio"
    path.write_text("[w]\nrw=randwrite\nsize=64m\nnumber_ios=100\ndataplacement=fdp\nplids=0,4\n")
    assert_user_error(
        run_cli("run", "small-tlc", *FDP, "--fio", path), "bad.fio:6", "placement identifier 4"
    )
    path.write_text("[w]\nrw=randwrite\ndataplacement=fdp\nplid_select=scheme\n")
    assert_user_error(run_cli("run", "small-tlc", *FDP, "--fio", path), "plid_select", "scheme")


def test_nvme_fdp_log_pages_print_nvme_cli_s_json_names(tmp_path: Path) -> None:
    job = tmp_path / "j.toml"
    job.write_text('rw = "randwrite"\nbs = "4KiB"\nsize = "64MiB"\nio_count = 100\nstream = 1\n')
    expect = {
        "configs": {"n", "configs"},
        "usage": {"nruh", "ruhus"},
        "stats": {"hbmw", "mbmw", "mbe"},
        "events": {"n", "events"},
    }
    for page, keys in expect.items():
        proc = run_cli("nvme", "fdp", page, "small-tlc", *FDP, "--job", job, "-o", "json")
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        assert set(out) == keys, out
        if page == "configs":
            assert set(out["configs"][0]) >= {"fdpa", "nrg", "nruh", "nnss", "runs", "erutl"}
            assert out["configs"][0]["nruh"] == 2
        if page == "stats":
            assert out["hbmw"] == 100 * 4096 and out["mbmw"] >= out["hbmw"]
    proc = run_cli("nvme", "fdp", "stats", "small-tlc")
    assert_user_error(proc, "fdp", "no Flexible Data Placement")


def test_serve_serves_an_fdp_drive_with_its_default_handle(tmp_path: Path) -> None:
    srv = start_server(tmp_path, "--clock", "logical", *FDP)
    try:
        s = _connect(srv.socket_path)
        _go(s)
        for k in range(8):
            _request(s, CMD_WRITE, k + 1, k * 4096, 4096, payload=bytes([k]) * 4096)
            assert _reply(s) == (0, k + 1)
        s.close()
    finally:
        code, _, err = srv.stop()
    assert code == 0, err
    per = srv.session()["device"]["fdp"]["per_handle"]
    assert [h["host_bytes_written"] for h in per] == [8 * 4096, 0]


def test_samples_hold_each_handle_s_write_amplification(tmp_path: Path) -> None:
    cfg = ssdlab.Config.load("small-tlc", overrides=["fdp.handles=2"])
    job = ssdlab.Job(rw="randwrite", bs="4KiB", size="64MiB", io_count=4000, placement_ids=[0, 1])
    result = ssdlab.run(cfg, job, seed=1, stats_interval="1ms")
    per_handle = result.samples()["fdp_handle_write_amplification"]
    assert per_handle.dtype.kind == "f"
    assert per_handle.shape == (2, len(result.samples()["time_s"]))
    # The last sample is the run's final figure of each handle (the run ends with the device
    # idle, sampled once more at most one interval later).
    final = [h["write_amplification"] for h in result.fdp["per_handle"]]
    assert per_handle[:, -1].tolist() == final
    assert (per_handle[:, -1] >= 1.0).all()
    png = result.plot_samples(tmp_path / "fdp.png")
    assert png.stat().st_size > 0
    assert (
        "fdp_handle_write_amplification"
        not in ssdlab.run(
            "small-tlc", ssdlab.Job(rw="randwrite", io_count=10), stats_interval="1ms"
        ).samples()
    )
