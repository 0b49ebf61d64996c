"""Flows: several jobs at once on one device (docs/jobs.md, "Flows"), from Python, a TOML file
of [[flow]] tables and fio's groups (docs/fio.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ssdlab
from conftest import assert_user_error, run_cli
from ssdlab import fio

ROOT = Path(__file__).resolve().parent.parent
FLOWS_EXAMPLE = ROOT / "examples" / "jobs" / "reader-writer.toml"

READER = {"name": "reader", "rw": "randread", "bs": "4KiB", "iodepth": 4, "runtime": "20ms"}
WRITER = {"name": "writer", "rw": "randwrite", "bs": "64KiB", "iodepth": 16, "runtime": "20ms"}


def _without_wall(result: ssdlab.Result) -> dict[str, object]:
    data = result.to_dict()
    data.pop("wall")
    return data


def test_flows_run_together_with_each_flows_own_figures() -> None:
    result = ssdlab.run("small-tlc", [READER, WRITER], record_requests=True)
    reader, writer = result.flows
    assert reader["flow"]["name"] == "reader" and writer["flow"]["name"] == "writer"
    assert reader["flow"]["start_s"] == writer["flow"]["start_s"] == 0.0
    assert set(reader["ops"]) == {"read"} and set(writer["ops"]) == {"write"}
    # The device's figures are the sum of the flows'.
    assert result["total"]["count"] == reader["total"]["count"] + writer["total"]["count"]
    # Each flow's records are its own requests.
    assert len(reader.latencies("read")) == reader["ops"]["read"]["count"]
    assert len(writer.latencies("read")) == 0
    assert len(writer.latencies("write")) == writer["ops"]["write"]["count"]
    # The result lists the flows' jobs.
    assert [j["name"] for j in result["job"]] == ["reader", "writer"]
    assert reader["job"]["name"] == "reader"


def test_flows_are_deterministic() -> None:
    a = ssdlab.run("small-tlc", [READER, WRITER], seed=3)
    b = ssdlab.run("small-tlc", [READER, WRITER], seed=3)
    assert _without_wall(a) == _without_wall(b)
    c = ssdlab.run("small-tlc", [READER, WRITER], seed=4)
    assert _without_wall(a) != _without_wall(c)


def test_fairness_reports_each_flows_slowdown() -> None:
    report = ssdlab.fairness("small-tlc", [READER, WRITER])
    reader, writer = report["flows"]
    # The reader waits behind the writer's programs; the writer hardly notices the reader.
    assert reader["slowdown"] > 2.0, reader
    assert reader["slowdown"] > writer["slowdown"], report
    assert report["fairness"] == pytest.approx(
        min(reader["slowdown"], writer["slowdown"]) / max(reader["slowdown"], writer["slowdown"])
    )
    assert 0 < report["fairness"] < 1
    with pytest.raises(ValueError, match="two or more"):
        ssdlab.fairness("small-tlc", [READER])


def test_a_flows_file_loads_and_runs_from_the_cli(tmp_path: Path) -> None:
    flows = ssdlab.load_flows(FLOWS_EXAMPLE)
    assert [j.to_dict()["name"] for j in flows] == ["reader", "writer"]
    out = tmp_path / "r.json"
    proc = run_cli("run", "small-tlc", "--job", FLOWS_EXAMPLE, "--json", out)
    assert proc.returncode == 0, proc.stderr
    assert "flow reader" in proc.stdout and "flow writer" in proc.stdout
    data = json.loads(out.read_text())
    assert [f["name"] for f in data["flows"]] == ["reader", "writer"]
    bad = tmp_path / "bad.toml"
    bad.write_text('[[flow]]\nname = "a"\nrw = "randread"\n[[flow]]\nname = "b"\nrw = "sideways"\n')
    with pytest.raises(ssdlab.JobError, match=r"bad.toml: flow 2 \(b\)"):
        ssdlab.load_flows(bad)
    assert_user_error(run_cli("run", "small-tlc", "--job", bad), "flow 2 (b)")


def _fio_json(path: Path, *extra: str) -> dict[str, dict]:
    proc = run_cli("run", "small-tlc", "--fio", path, "--output-format", "json", "-q", *extra)
    assert proc.returncode == 0, proc.stderr
    return {job["jobname"]: job for job in json.loads(proc.stdout)["jobs"]}


def test_a_fio_group_of_a_reader_and_a_writer_runs_concurrently(tmp_path: Path) -> None:
    """Issue 41's check: the jobs of one fio group run at once, so the reader's latency rises
    against the reader alone (seed 1: about 94 µs alone, several hundred beside the writer)."""
    head = "[global]\nbs=4k\ntime_based\nruntime=20ms\n"
    reader = "[reader]\nrw=randread\niodepth=4\n"
    writer = "[writer]\nrw=randwrite\nbs=64k\niodepth=16\n"
    alone = tmp_path / "alone.fio"
    alone.write_text(head + reader)
    both = tmp_path / "both.fio"
    both.write_text(head + reader + writer)
    lat_alone = _fio_json(alone)["reader"]["read"]["lat_ns"]["mean"]
    jobs = _fio_json(both)
    lat_shared = jobs["reader"]["read"]["lat_ns"]["mean"]
    assert lat_shared > 2 * lat_alone, (lat_alone, lat_shared)
    assert jobs["writer"]["write"]["total_ios"] > 0 and jobs["writer"]["read"]["total_ios"] == 0
    assert jobs["reader"]["write"]["total_ios"] == 0
    assert jobs["reader"]["groupid"] == jobs["writer"]["groupid"] == 0
    # Both ran for the runtime, side by side, to their last completion (the writer's 16 writes
    # of 64 KiB in flight at the end drain for a few ms: 26 ms, seed 1).
    assert 20 <= jobs["reader"]["job_runtime"] <= 23
    assert 20 <= jobs["writer"]["job_runtime"] <= 30
    # The group's text summary: a direction's bandwidth over the time of the jobs that moved
    # bytes that way (the reader alone reads: its bandwidth is the group's).
    proc = run_cli("run", "small-tlc", "--fio", both)
    assert proc.returncode == 0, proc.stderr
    reader_bw = proc.stdout.split("read: IOPS=")[1].split("BW=")[1].split(" ")[0]
    group_read = proc.stdout.split("Run status group 0")[1].split("READ: bw=")[1].split(" ")[0]
    assert reader_bw == group_read, proc.stdout
    # With stonewall, the reader runs after the writer, in a group of its own, on the drive as
    # the writer left it (its reads still wait behind the programs of the writes it buffered).
    serial = tmp_path / "serial.fio"
    serial.write_text(head + writer + reader + "stonewall\n")
    jobs = _fio_json(serial)
    assert jobs["reader"]["groupid"] == 1
    assert 20 <= jobs["reader"]["job_runtime"] <= 23
    assert jobs["reader"]["read"]["total_ios"] > 0


def test_fio_groups_startdelay_and_new_group(tmp_path: Path) -> None:
    path = tmp_path / "g.fio"
    path.write_text(
        "[global]\nrw=randread\nbs=4k\nruntime=2ms\ntime_based\n"
        "[a]\n[b]\nstartdelay=1ms\nnew_group\n[c]\nstonewall\n"
    )
    f = fio.load(path)
    assert [(j.name, j.group, j.phase) for j in f.jobs] == [("a", 0, 0), ("b", 1, 0), ("c", 2, 1)]
    assert f.jobs[1].job().to_dict()["startdelay"] == "1ms"
    assert f.jobs[2].job().to_dict()["group"] == 1
    assert not any("startdelay" in w for w in f.warnings)
    result = ssdlab.run("small-tlc", [j.job() for j in f.jobs])
    a, b, c = (flow["flow"] for flow in result.flows)
    assert a["start_s"] == 0.0
    assert b["start_s"] == pytest.approx(1e-3)
    # c waits for a and b (stonewall), whichever ends last.
    assert c["start_s"] == pytest.approx(max(a["end_s"], b["end_s"]))


def test_periodic_statistics_come_as_numpy_arrays(tmp_path: Path) -> None:
    job = {"rw": "randwrite", "bs": "4KiB", "iodepth": 8, "runtime": "10ms"}
    result = ssdlab.run("small-tlc", job, stats_interval="1ms")
    samples = result.samples()
    assert set(samples) == {
        "time_s",
        "free_blocks",
        "gc_runs",
        "gc_units_moved",
        "write_amplification",
        "requests_in_flight",
        "requests_completed",
        "channel_utilisation_mean",
        "die_utilisation_mean",
        "die_utilisation_max",
    }
    for name in ("channel_utilisation_mean", "die_utilisation_mean", "die_utilisation_max"):
        assert samples[name].dtype.kind == "f"
        assert ((samples[name] >= 0) & (samples[name] <= 1)).all(), name
    assert samples["die_utilisation_mean"][1:5].min() > 0
    assert samples["time_s"][:3].tolist() == pytest.approx([0.0, 1e-3, 2e-3])
    assert samples["requests_completed"].dtype.kind == "u"
    assert int(samples["requests_completed"][-1]) == result["sim"]["requests"]
    with pytest.raises(ValueError, match="stats_interval"):
        ssdlab.run("small-tlc", job).samples()
    with pytest.raises(ssdlab.JobError, match="stats_interval"):
        ssdlab.run("small-tlc", job, stats_interval="soon")
    # Flows and the command line take it too.
    flows = ssdlab.run("small-tlc", [READER, WRITER], stats_interval="5ms")
    assert len(flows.samples()["time_s"]) > 4
    out = tmp_path / "r.json"
    proc = run_cli(
        "run",
        "small-tlc",
        "--rw",
        "randread",
        "--runtime",
        "3ms",
        "--stats-interval",
        "1ms",
        "--json",
        out,
        "-q",
    )
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(out.read_text())["samples"]["time_s"]) >= 4
    # The command line's errors name its option, not the API's argument.
    for bad in ("soon", "0ms"):
        args = ("run", "small-tlc", "--rw", "randread", "--io-count", "10", "-q")
        assert_user_error(run_cli(*args, "--stats-interval", bad), f'--stats-interval: got "{bad}"')


def test_a_flows_job_error_says_which_flow_by_its_index() -> None:
    bad = {**WRITER, "name": "reader", "stream": 3}
    with pytest.raises(ssdlab.JobError) as info:
        ssdlab.run("small-tlc", [READER, bad])
    assert info.value.flow == 1
    assert str(info.value).startswith("flow `reader`, field `stream`")
    # One job is no flow of several: its error has no index.
    with pytest.raises(ssdlab.JobError) as one:
        ssdlab.run("small-tlc", bad)
    assert getattr(one.value, "flow", None) is None


def test_periodic_statistics_of_a_zoned_drive_are_plotted(tmp_path: Path) -> None:
    job = {
        "rw": "randwrite",
        "bs": "16KiB",
        "iodepth": 4,
        "zonemode": "zbd",
        "max_open_zones": 3,
        "io_count": 2000,
    }
    result = ssdlab.run("zns-tlc", job, stats_interval="5ms")
    samples = result.samples()
    assert 0 < samples["open_zones"].max() <= 3
    assert (samples["open_zones"] <= samples["active_zones"]).all()
    assert "cache_lines_used" not in samples
    png = result.plot_samples(tmp_path / "samples.png")
    assert png.stat().st_size > 1000
    # SVG carries no date: the same run draws the same file.
    again = ssdlab.run("zns-tlc", job, stats_interval="5ms")
    a = result.plot_samples(tmp_path / "a.svg").read_bytes()
    assert a == again.plot_samples(tmp_path / "b.svg").read_bytes()
    with pytest.raises(ValueError, match="stats_interval"):
        ssdlab.run("zns-tlc", job).plot_samples(tmp_path / "none.png")


def test_fairness_orders_each_flows_slowdown_by_its_priority() -> None:
    """Weighted round robin on a controller of 16 slots (docs/nvme.md, "Arbitration"): three
    readers always backlogged are slowed in the order of their classes; under round robin the
    same flows are slowed alike."""
    config = ssdlab.Config.load(
        "small-tlc",
        {
            "interface.io_queues": 8,
            "interface.controller_slots": 16,
            "interface.arbitration": "weighted-round-robin",
        },
    )
    flows = [
        {"name": c, "rw": "randread", "bs": "4KiB", "iodepth": 32, "runtime": "10ms", "priority": c}
        for c in ("high", "medium", "low")
    ]
    report = ssdlab.fairness(config, flows)
    high, medium, low = (f["slowdown"] for f in report["flows"])
    assert 1 < high < medium < low, report
    assert report["fairness"] < 0.5, report
    same = ssdlab.fairness(config.set("interface.arbitration", "round-robin"), flows)
    assert same["fairness"] > 0.9, same
    # The same seed gives the same figures.
    assert ssdlab.fairness(config, flows) == report


def test_two_classes_on_one_queue_are_one_clear_error() -> None:
    config = ssdlab.Config.load(
        "small-tlc",
        {
            "interface.io_queues": 1,
            "interface.controller_slots": 16,
            "interface.arbitration": "weighted-round-robin",
        },
    )
    flows = [{**READER, "priority": "high"}, {**WRITER, "priority": "low"}]
    with pytest.raises(ssdlab.JobError, match="field `priority`.*interface.io_queues"):
        ssdlab.run(config, flows)
    with pytest.raises(ssdlab.JobError, match="priority"):
        ssdlab.Job(rw="read", priority="highest")
