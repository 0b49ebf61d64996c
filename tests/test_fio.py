"""fio job files: the reader (options into job fields, groups, warnings, refusals) and
`ssdlab run PRESET --fio FILE` with its fio-shaped reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import assert_user_error, run_cli
from ssdlab import fio

DATA = Path(__file__).parent / "data" / "fio"


def parsed(text: str) -> fio.FioFile:
    return fio.load("job.fio", text=text)


def test_sizes_use_fio_suffixes_with_base_1024() -> None:
    assert fio.parse_size("4k", "f:1", "bs") == 4096
    assert fio.parse_size("1m", "f:1", "bs") == 1 << 20
    assert fio.parse_size("10G", "f:1", "size") == 10 << 30
    assert fio.parse_size("64KiB", "f:1", "bs") == 64 << 10
    assert fio.parse_size("512", "f:1", "bs") == 512
    with pytest.raises(fio.FioError, match=r"f:1: bs='4x'"):
        fio.parse_size("4x", "f:1", "bs")


def test_times_default_to_seconds() -> None:
    assert fio.parse_time("30", "f:1", "runtime") == "30s"
    assert fio.parse_time("500ms", "f:1", "runtime") == "500ms"
    assert fio.parse_time("2m", "f:1", "runtime") == "120s"


def test_bssplit_shares_the_rest_among_sizes_without_a_percentage() -> None:
    # Worked by hand: 4k takes 50 %, the 30 % left goes half to 8k, half to 16k.
    assert fio.parse_bssplit("4k/50:64k/20:8k:16k", "f:1") == {
        "4KiB": 5000,
        "64KiB": 2000,
        "8KiB": 1500,
        "16KiB": 1500,
    }
    with pytest.raises(fio.FioError, match="add up to 110"):
        fio.parse_bssplit("4k/60:8k/50", "f:1")


def test_global_options_reach_every_job_and_a_job_overrides_them() -> None:
    f = parsed("[global]\nbs=8k\niodepth=4\n[a]\nrw=randread\n[b]\nrw=write\niodepth=2\n")
    a, b = f.jobs
    assert a.fields == {"name": "a", "rw": "randread", "bs": "8KiB", "iodepth": 4}
    assert b.fields["iodepth"] == 2 and b.fields["bs"] == "8KiB"
    assert [j.group for j in f.jobs] == [0, 0]


def test_mixed_job_maps_onto_the_job_model() -> None:
    f = fio.load(DATA / "mixed-bssplit.fio")
    (job,) = f.jobs
    assert job.fields["rw"] == "randrw"
    assert job.fields["rwmixread"] == 70  # rwmixwrite=30
    assert job.fields["bs"] == {"4KiB": 5000, "16KiB": 3000, "64KiB": 2000}
    assert job.fields["numjobs"] == 2
    assert job.fields["size"] == "128MiB" and job.fields["offset"] == "16MiB"
    assert job.fields["runtime"] == "20ms" and job.fields["ramp"] == "2ms"
    assert job.fields["distribution"] == "zipf:1.1"
    assert job.fields["io_count"] == fio._TIME_BASED_IO_COUNT  # time_based
    job.job()  # the core takes it


def test_stonewall_starts_a_new_group() -> None:
    f = fio.load(DATA / "two-groups.fio")
    assert [(j.name, j.group) for j in f.jobs] == [("seq-write", 0), ("rand-read", 1)]
    assert [len(g) for g in f.groups()] == [1, 1]
    assert f.jobs[1].fields["io_count"] == 3000


def test_number_ios_is_per_clone() -> None:
    f = parsed("[a]\nrw=read\nnumjobs=4\nnumber_ios=100\n")
    assert f.jobs[0].fields["io_count"] == 400


def test_options_not_modelled_are_named_in_warnings() -> None:
    f = parsed(
        "[a]\nrw=randread:8\nioengine=mmap\nrandom_distribution=pareto:0.9\n"
        "gtod_reduce=1\nblockalign=512\nfilename=/dev/nvme0n1\n"
    )
    text = "\n".join(f.warnings)
    assert "job.fio:2: [a] rw=randread:8" in text
    assert "job.fio:3: [a] ioengine=mmap: not modelled" in text
    assert "random_distribution=pareto:0.9: not modelled" in text
    assert f.jobs[0].fields["distribution"] == "uniform"
    assert "job.fio:5: [a] gtod_reduce=1: not modelled by ssdlab" in text
    assert "blockalign=512" in text
    assert "filename" not in text  # where the data lives changes nothing simulated


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[a]\nrw=randwrite\nverify=crc32c\n", "job.fio:3: [a] verify: refused: data verification"),
        ("[a]\nrw=read\ndo_verify=1\n", "job.fio:3: [a] do_verify: refused"),
        ("[a]\nread_iolog=x.log\n", "use --trace FILE"),
        ("[a]\nrw=write\nfsync=1\n", "fsync"),
        ("[a]\nrw=sideways\n", "job.fio:2: rw='sideways': expected one of read"),
        ("[a]\nrw=read\nthis is not an option\n", "job.fio:3: 'this is not an option'"),
        ("bs=4k\n", "job.fio:1: 'bs=4k': an option before any [section]"),
        ("[a\nrw=read\n", "job.fio:1: '[a': expected a section header"),
        ("[global]\nbs=4k\n", "no job sections"),
        ("[a]\nrw=read\niodepth=0\n", "job.fio:3: iodepth='0': expected at least 1"),
        ("[a]\ntime_based\n", "time_based needs runtime="),
    ],
)
def test_bad_or_meaning_changing_files_are_refused_with_file_and_line(
    text: str, needle: str
) -> None:
    with pytest.raises(fio.FioError) as info:
        parsed(text)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


def test_engines_and_batching_reach_the_job() -> None:
    f = parsed("[a]\nrw=randread\niodepth=256\nioengine=posixaio\niodepth_batch=8\niodepth_low=4\n")
    job = f.jobs[0].fields
    assert (job["ioengine"], job["iodepth_batch"], job["iodepth_low"]) == ("posixaio", 8, 4)
    assert f.warnings == []
    f = parsed("[a]\nrw=read\nioengine=io_uring\niodepth_batch_submit=4\niodepth=8\n")
    assert (f.jobs[0].fields["ioengine"], f.jobs[0].fields["iodepth_batch"]) == ("io_uring", 4)


def test_options_switched_off_are_not_refused() -> None:
    f = parsed("[a]\nrw=read\nverify=0\nloops=1\nfsync=0\n")
    assert f.jobs[0].fields["rw"] == "read"


def test_run_random_read_file_reports_as_fio(tmp_path: Path) -> None:
    proc = run_cli("run", "small-tlc", "--fio", DATA / "random-read.fio")
    assert proc.returncode == 0, proc.stderr
    assert "rand-read: (groupid=0, jobs=1): rw=randread, iodepth=16" in proc.stdout
    assert "read: IOPS=" in proc.stdout
    assert "Run status group 0 (all jobs):" in proc.stdout
    assert "READ: bw=" in proc.stdout
    assert "ioengine" not in proc.stderr  # libaio is modelled: no warning


def test_run_json_is_shaped_like_fios() -> None:
    proc = run_cli(
        "run", "small-tlc", "--fio", DATA / "two-groups.fio", "--output-format", "json", "-q"
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["fio version"].startswith("ssdlab-")
    write, read = out["jobs"]
    assert (write["jobname"], write["groupid"]) == ("seq-write", 0)
    assert (read["jobname"], read["groupid"]) == ("rand-read", 1)
    # One pass of 128 KiB writes over 32 MiB, then 3,000 random 4 KiB reads.
    assert write["write"]["io_bytes"] == 32 << 20
    assert write["write"]["total_ios"] == 256
    assert write["read"]["io_bytes"] == 0
    assert read["read"]["total_ios"] == 3000
    assert read["read"]["io_bytes"] == 3000 * 4096
    lat = read["read"]["lat_ns"]
    assert 0 < lat["min"] <= lat["percentile"]["50.000000"] <= lat["percentile"]["99.000000"]
    assert lat["percentile"]["99.000000"] <= lat["max"]
    assert read["read"]["bw"] == read["read"]["bw_bytes"] // 1024
    assert read["read"]["iops"] > 0


def test_run_mixed_file_runs_for_its_runtime() -> None:
    proc = run_cli(
        "run", "small-tlc", "--fio", DATA / "mixed-bssplit.fio", "--output-format", "json", "-q"
    )
    assert proc.returncode == 0, proc.stderr
    (job,) = json.loads(proc.stdout)["jobs"]
    assert job["read"]["total_ios"] > 0 and job["write"]["total_ios"] > 0
    share = job["read"]["total_ios"] / (job["read"]["total_ios"] + job["write"]["total_ios"])
    assert 0.6 < share < 0.8  # rwmixwrite=30
    # time_based: as in fio, the 2 ms ramp comes first and the 20 ms runtime is what is measured.
    assert 19 <= job["job_runtime"] <= 21


def test_cli_refusals_name_file_and_line() -> None:
    assert_user_error(
        run_cli("run", "small-tlc", "--fio", DATA / "malformed.fio"), "malformed.fio:6"
    )
    assert_user_error(
        run_cli("run", "small-tlc", "--fio", DATA / "verify.fio"), "verify.fio:5", "verify"
    )
    assert_user_error(
        run_cli("run", "small-tlc", "--fio", DATA / "none.fio"), "no such fio job file"
    )
    assert_user_error(
        run_cli("run", "small-tlc", "--fio", DATA / "random-read.fio", "--rw", "read"),
        "--rw cannot go with --fio",
    )
    assert_user_error(
        run_cli("run", "small-tlc", "--rw", "read", "--output-format", "json"), "only with --fio"
    )
