"""The user-visible fusion device from Python (docs/fusion.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import ssdlab
from conftest import assert_user_error, run_cli

DOC = Path(__file__).resolve().parent.parent / "docs" / "fusion.md"


def small() -> ssdlab.FusionDevice:
    return ssdlab.FusionDevice("seed002-fusion", overrides={"nand.blocks_per_plane": 4})


def _run_doc_example(heading: str) -> None:
    """Run the first Python block of docs/fusion.md after ``heading``, as it is."""
    text = DOC.read_text()
    section = text[text.index(heading) :]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    exec(compile(code.group(1), str(DOC), "exec"), {})


def test_the_worked_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    _run_doc_example("### A worked example")
    assert "simulated busy time" in capsys.readouterr().out


def test_geometry_is_table_6() -> None:
    info = small().info
    assert (info["nand_channels"], info["nand_chips_per_channel"]) == (8, 2)
    assert (info["pcm_channels"], info["pcm_chips_per_channel"]) == (2, 8)
    assert info["nand_page_bytes"] == 2048 and info["nand_block_bytes"] == 128 * 1024
    assert info["pcm_bytes"] == 256 * 1024 * 1024


def test_commands_return_status_times_and_data() -> None:
    dev = small()
    w = dev.pcm_write(100, b"abc")
    assert w.ok and w.submitted_ps == 0 and w.completed_ps == dev.now_ps
    assert w.latency_ps == w.completed_ps - w.submitted_ps > 0
    r = dev.pcm_read(99, 5, at_ps=dev.now_ps + 10**6)
    assert r.data == b"\0abc\0" and r.submitted_ps == w.completed_ps + 10**6
    assert dev.pcm_line_writes(100) == 1
    assert dev.nand_program(0, b"p" * 2048).ok
    assert dev.nand_program(0, b"q").status == "program_order"
    assert dev.nand_program(2, b"q").status == "program_order"
    assert dev.nand_read(0).data == b"p" * 2048
    assert dev.next_page(0) == 1
    e = dev.nand_erase(0)
    # Table 6/§3.2.1: an erase takes more than 1.4 ms.
    assert e.ok and e.latency_us > 1400
    assert dev.erase_counts()[:2] == [1, 0]


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda d: d.nand_read(8192), "page"),
        # A count that is zero or runs past the end is the count's fault, not the start's.
        (lambda d: d.nand_read(8191, 2), "page"),
        (lambda d: d.nand_read(4095, 2), "pages"),
        (lambda d: d.nand_read(0, 0), "pages"),
        (lambda d: d.nand_program(8192, b"x"), "page"),
        (lambda d: d.nand_program(4095, bytes(2049)), "data"),
        (lambda d: d.nand_program(0, b""), "data"),
        (lambda d: d.nand_erase(128), "block"),
        (lambda d: d.nand_erase(63, 2), "blocks"),
        (lambda d: d.nand_erase(0, 0), "blocks"),
        (lambda d: d.pcm_read(256 * 1024 * 1024, 1), "address"),
        (lambda d: d.pcm_read(256 * 1024 * 1024 - 1, 2), "length"),
        (lambda d: d.pcm_write(2**64 - 1, b"x"), "address"),
        (lambda d: d.pcm_read(0, 0), "length"),
        (lambda d: d.next_page(128), "block"),
    ],
)
def test_bad_addresses_raise_naming_the_argument(call, argument: str) -> None:  # noqa: ANN001
    dev = small()
    with pytest.raises(ssdlab.JobError, match=rf"^{argument}: got \d+( bytes)?, expected [^\n]*$"):
        call(dev)
    assert dev.now_ps == 0


def test_numpy_integers_are_integers_and_other_types_are_named() -> None:
    import numpy as np

    dev = small()
    assert dev.nand_read(np.int64(0), np.uint32(1), at_ps=np.uint64(0)).ok
    assert dev.pcm_write(np.int32(64), b"ab").ok
    for call, needle in [
        (lambda: dev.nand_read("0"), "page: got '0' (str), expected an integer from 0 to 2^64 - 1"),
        (lambda: dev.nand_read(1.0), "page: got 1.0 (float)"),
        (lambda: dev.nand_read(True), "page: got True"),
        (lambda: dev.pcm_read(0, np.float64(2)), "length: got np.float64(2.0) (float64)"),
        (lambda: dev.nand_erase(np.int64(-1)), "block: got np.int64(-1), expected"),
    ]:
        with pytest.raises(ssdlab.JobError, match=re.escape(needle)):
            call()
    hfsl = ssdlab.Hfsl(logical_bytes=np.int64(1 << 20))
    assert hfsl.write(np.uint64(0), np.int64(4096), app=np.int8(1)).latency_ps > 0
    with pytest.raises(
        ssdlab.JobError,
        match=re.escape("app: got 4294967296, expected an integer from 0 to 2^32 - 1"),
    ):
        hfsl.read(0, 4096, app=2**32)


def test_only_a_fusion_config_opens() -> None:
    with pytest.raises(ssdlab.ConfigError, match="expected a fusion device"):
        ssdlab.FusionDevice("small-tlc")
    with pytest.raises(ssdlab.ConfigError, match="ftl.kind"):
        ssdlab.FusionDevice("seed002-fusion", overrides={"ftl.kind": "page"})


def test_a_run_on_the_fusion_preset_goes_through_hfsl() -> None:
    """`ssdlab.run` on ``seed002-fusion`` (which has ``[hfsl]``): the workload's requests are
    the host's, ``hfsl`` says what HFSL did, and the device's NAND counts agree with it."""
    cfg = ssdlab.Config.load("seed002-fusion").set("hfsl.ssw", "2KiB")
    result = ssdlab.run(cfg, trace="model:financial2", mode="afap", io_count=2000)
    data = result.to_dict()
    hfsl = data["hfsl"]
    assert data["total"]["count"] == 2000 == data["sim"]["requests"]
    assert hfsl["counters"]["writes_to_pcm"] > 0 and hfsl["pcm_pages"] > 0
    assert hfsl["counters"]["nand_programs"] == data["device"]["nand_pages_written"]
    assert hfsl["queues"]["commands"] == hfsl["raw_commands"] and hfsl["queues"]["batches"] > 0
    assert "HFSL (host-side FTL)" in result.summary() and "queue sends" in result.summary()


def test_the_cli_shows_hfsl_and_refuses_stray_writes() -> None:
    proc = run_cli(
        "run",
        "seed002-fusion",
        "--rw",
        "randwrite",
        "--bs",
        "2KiB",
        "--size",
        "1MiB",
        "--io-count",
        "200",
        "--set",
        'hfsl.protect=[{app=1, offset="0B", len="512KiB"}]',
        "--set",
        "hfsl.app=2",
    )
    assert proc.returncode == 0, proc.stderr
    assert "HFSL (host-side FTL)" in proc.stdout
    assert "may not write bytes" in proc.stdout and "application 1" in proc.stdout
    bad = run_cli("run", "seed002-fusion", "--rw", "randwrite", "--set", "hfsl.ssw=4KiB")
    assert_user_error(bad, "hfsl.ssw", "4096")


def test_the_hfsl_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    _run_doc_example("**HFSL from Python, one request at a time")
    assert "raw commands)" in capsys.readouterr().out


def test_hfsl_requests_report_time_and_place_and_bad_arguments_name_themselves() -> None:
    hfsl = ssdlab.Hfsl(logical_bytes=1 << 20)
    assert hfsl.logical_bytes == 1 << 20 and hfsl.info["nand_page_bytes"] == 2048
    first = hfsl.write(0, 512)
    assert first.submitted_ps == 0 and first.completed_ps == hfsl.now_ps > 0
    # The data to PCM, then its map entry to the PCM's map area.
    assert first.raw_commands == 2 and hfsl.location(0) == "pcm"
    assert hfsl.read(0, 512).raw_commands == 1
    assert hfsl.read(4096, 512).raw_commands == 0  # never written
    assert hfsl.location(2) is None
    at = hfsl.now_ps + 10**9
    later = hfsl.write(2048, 2048, at_ps=at)
    assert later.submitted_ps == at and hfsl.location(1) == "nand"
    for call, name in (
        (lambda: hfsl.write(-1, 512), "offset"),
        (lambda: hfsl.write(0, 512, app=2**32), "app"),
        (lambda: hfsl.read(1 << 20, 512), "offset"),
        (lambda: hfsl.location(512), "lpn"),
        (lambda: ssdlab.Hfsl(logical_bytes=0), "logical_bytes"),
        (lambda: ssdlab.Hfsl("small-tlc"), "expected a fusion device"),
    ):
        with pytest.raises(ssdlab.SsdlabError, match=name):
            call()
    assert len(hfsl.erase_counts()) == hfsl.info["nand_blocks"]


SMALL_FUSION = {
    "nand.blocks_per_plane": 6,
    "pcm.chip_capacity": "4KiB",
    "hfsl.ssw": "1KiB",
}


def _cut_session(
    overrides: dict[str, object], cuts: int, restart_gap: int = 0
) -> tuple[int, int, int]:
    """Random writes through ``ssdlab.Hfsl`` with the power cut ``cuts`` times at random device
    events; after each restart every logical page is read back and held against the test's
    own oracle. With ``restart_gap``, every other restart is cut too, 1 to ``restart_gap``
    events into it. Returns (sub-pages lost by the oracle, as HFSL reported them, restarts
    cut)."""
    import random

    pages = 300
    hfsl = ssdlab.Hfsl(overrides=overrides, logical_bytes=pages * 2048, track_data=True)
    rng = random.Random(5)
    oracle = [0] * (pages * 4)
    version = lost = reported = done_cuts = restarts_cut = 0
    hfsl.arm_power_cut(hfsl.events + rng.randint(1, 400))
    while done_cuts < cuts:
        sectors = rng.randint(1, 12)
        sector = rng.randrange(pages * 4 - sectors)
        r = hfsl.write(sector * 512, sectors * 512, meta=rng.random() < 0.1)
        version += 1
        covered = range(sector, sector + sectors)
        if r.acknowledged:
            for s in covered:
                oracle[s] = version
        if not r.power_cut:
            continue
        done_cuts += 1
        if restart_gap and rng.random() < 0.5:
            hfsl.arm_power_cut(rng.randint(1, restart_gap))
        restarted = hfsl.restart()
        while restarted["restart_cut"]:
            restarts_cut += 1
            restarted = hfsl.restart()
        reported += restarted["lost_sub_pages"]
        for lpn in range(pages):
            for k, v in enumerate(hfsl.read_back(lpn)):
                i = lpn * 4 + k
                cut_write = not r.acknowledged and i in covered
                if cut_write and v in (oracle[i], version, -1):
                    oracle[i] = v
                elif v != oracle[i]:
                    lost += 1
                    oracle[i] = v
        hfsl.arm_power_cut(hfsl.events + rng.randint(1, 400))
    return lost, reported, restarts_cut


def test_power_cuts_from_python_lose_no_acknowledged_write_with_the_map_in_pcm() -> None:
    assert _cut_session(SMALL_FUSION, 30)[:2] == (0, 0)


def test_a_restart_the_power_fails_during_is_restarted_and_loses_nothing() -> None:
    lost, reported, restarts_cut = _cut_session(SMALL_FUSION, 60, restart_gap=6)
    assert restarts_cut > 10
    assert (lost, reported) == (0, 0)


def test_with_the_map_in_dram_a_cut_loses_writes_and_hfsl_says_how_many() -> None:
    lost, reported, _ = _cut_session({**SMALL_FUSION, "hfsl.map_store": "dram"}, 5)
    assert lost > 0 and lost == reported


def test_bytes_written_read_back_through_evictions_gc_and_power_cuts() -> None:
    """A plain oracle (the logical space as one byte array) against HFSL carrying bytes:
    unaligned writes of random bytes, some flagged metadata, reads held against the oracle,
    the power cut at random events. Only the cut write's own sub-pages may read back old, new,
    or (torn) as zeros; everything acknowledged reads back as written."""
    import random

    pages = 100
    sub = 512
    # Blocks of 8 pages: 16 dies of 4 blocks fill within the run, so GC moves data too.
    overrides = {**SMALL_FUSION, "nand.pages_per_block": 8}
    hfsl = ssdlab.Hfsl(overrides=overrides, logical_bytes=pages * 2048, track_data=True)
    rng = random.Random(11)
    oracle = bytearray(pages * 2048)
    cuts = 0
    hfsl.arm_power_cut(hfsl.events + rng.randint(50, 600))
    for _ in range(1500):
        if rng.random() < 0.3:
            offset = rng.randrange(len(oracle) - 1)
            length = rng.randint(1, min(5000, len(oracle) - offset))
            r = hfsl.read(offset, length)
            if r.power_cut:
                # A read the power cut returns no bytes, and changes nothing on the media.
                assert r.data is None and hfsl.restart()["lost_sub_pages"] == 0
                hfsl.arm_power_cut(hfsl.events + rng.randint(50, 600))
                cuts += 1
                continue
            assert r.data == oracle[offset : offset + length]
            continue
        length = rng.randint(1, 3000)
        offset = rng.randrange(len(oracle) - length)
        data = rng.randbytes(length)
        r = hfsl.write(offset, data=data, meta=rng.random() < 0.1)
        new = bytearray(oracle)
        new[offset : offset + length] = data
        if r.acknowledged:
            oracle = new
        if not r.power_cut:
            continue
        cuts += 1
        assert hfsl.restart()["lost_sub_pages"] == 0
        for s in range(offset // sub, -(-(offset + length) // sub)):
            got = hfsl.read(s * sub, sub)
            old_bytes, new_bytes = oracle[s * sub : (s + 1) * sub], new[s * sub : (s + 1) * sub]
            assert got.data in (old_bytes, new_bytes) or (got.torn_sub_pages and not any(got.data))
            oracle[s * sub : (s + 1) * sub] = got.data
        assert hfsl.read(0, len(oracle)).data == oracle
        hfsl.arm_power_cut(hfsl.events + rng.randint(50, 600))
    report = hfsl.report()
    assert cuts >= 3 and report["counters"]["evictions"] > 0 and report["counters"]["gc_runs"] > 0
    hfsl.cut_power()  # between requests: the armed cut is dropped, nothing acknowledged lost
    assert hfsl.restart()["lost_sub_pages"] == 0
    assert hfsl.read(0, len(oracle)).data == oracle


def test_bytes_need_track_data_and_match_their_length() -> None:
    untracked = ssdlab.Hfsl(overrides=SMALL_FUSION, logical_bytes=1 << 20)
    with pytest.raises(ValueError, match="track_data"):
        untracked.write(0, data=b"x")
    assert untracked.read(0, 512).data is None
    hfsl = ssdlab.Hfsl(overrides=SMALL_FUSION, logical_bytes=1 << 20, track_data=True)
    with pytest.raises(ValueError, match="length: got 3, expected len"):
        hfsl.write(0, 3, data=b"ab")
    with pytest.raises(ValueError, match="length: missing"):
        hfsl.write(0)
    with pytest.raises(ssdlab.JobError):
        hfsl.write((1 << 20) - 1, data=b"ab")
    # A write without bytes reads back as zeros, as a sub-page never written.
    hfsl.write(0, 1024)
    assert hfsl.read(0, 1024).data == bytes(1024)


def test_power_cut_calls_name_what_is_wrong() -> None:
    untracked = ssdlab.Hfsl(overrides=SMALL_FUSION, logical_bytes=1 << 20)
    with pytest.raises(ssdlab.JobError, match="track_data"):
        untracked.arm_power_cut(10)
    hfsl = ssdlab.Hfsl(overrides=SMALL_FUSION, logical_bytes=1 << 20, track_data=True)
    hfsl.write(0, 512)
    with pytest.raises(ssdlab.JobError, match="event: got 1, expected more than"):
        hfsl.arm_power_cut(1)
    with pytest.raises(ssdlab.JobError, match="the power is on"):
        hfsl.restart()
    hfsl.cut_power()
    with pytest.raises(ssdlab.JobError, match="the power is off"):
        hfsl.write(0, 512)
    report = hfsl.restart()
    assert report["lost_sub_pages"] == 0 and report["recovery_us"] > 0
    assert hfsl.read_back(0) == [1, 0, 0, 0]
    with pytest.raises(ssdlab.JobError, match="event"):
        hfsl.arm_power_cut(-1)


def test_a_run_with_a_power_cut_reports_the_restart(tmp_path: Path) -> None:
    import json

    args = ["run", "seed002-fusion", "--rw", "randwrite", "--bs", "512B", "--io-count", "3000"]
    args += ["--set", "nand.blocks_per_plane=8", "--set", 'pcm.chip_capacity="64KiB"']
    out = tmp_path / "cut.json"
    proc = run_cli(*args, "--set", "hfsl.power_cut_event=20000", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    cut = json.loads(out.read_text())["hfsl"]["power_cut"]
    assert cut["event"] == 20000 and cut["lost_pages"] == 0 and cut["recovery_us"] > 0
    text = run_cli(*args, "--power-cut-event", "20000")
    assert "power cut" in text.stdout and "restart" in text.stdout
    # Without [hfsl] the cut is the page-mapped FTL's (tests/test_power_loss.py); only HFSL
    # restarts.
    no_hfsl = run_cli(
        "run", "small-tlc", "--io-count", "10", "--power-cut-event", "5", "--restart-cut-event", "3"
    )
    assert_user_error(no_hfsl, "--restart-cut-event", "[hfsl]")
    late = run_cli(*args, "--set", "hfsl.power_cut_event=100000000")
    assert_user_error(late, "hfsl.power_cut_event", "100000000")
    twice = run_cli(*args, "--power-cut-event", "20000", "--restart-cut-event", "3")
    assert twice.returncode == 0, twice.stderr
    assert "the restart before it was cut too" in " ".join(twice.stdout.split())
    alone = run_cli(*args, "--restart-cut-event", "3")
    assert_user_error(alone, "--restart-cut-event", "--power-cut-event")


def test_the_power_cut_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    _run_doc_example("From Python (`track_data=True`")
    assert "bytes of map" in capsys.readouterr().out


def test_a_replayed_request_pays_the_host_s_system_call() -> None:
    """Fig. 12's conventional path: a trace replay's request costs the host ``host.syscall_cost``
    (the layers above the driver) besides the driver's submit and completion."""
    base = ssdlab.Config.load("small-tlc")
    runs = [
        ssdlab.run(cfg, trace="model:financial1", mode="afap", io_count=1000).to_dict()
        for cfg in (base, base.set("host.syscall_cost", "10us"))
    ]
    busy = [r["utilisation"]["host_cpu_busy_s"] for r in runs]
    assert busy[1] - busy[0] == pytest.approx(1000 * 10e-6)


def test_fig12_sets_the_two_paths_side_by_side() -> None:
    from ssdlab.reproduce import get

    rows = get("seed002-fig12").compare(None)
    assert [r.label for r in rows] == ["prediction", "prediction"]
    host, soft_core = (r.ssdlab for r in rows)
    assert host is not None and soft_core is not None
    # HFSL takes work off both: the soft core loses the FTL, the host the kernel's layers.
    assert 0 < host < 1 and 0 < soft_core < 1 and soft_core > host
    assert all("per request" in r.note for r in rows)


def test_fig14_holds_the_traces_against_table_8() -> None:
    from ssdlab.reproduce import get

    rows = get("seed002-fig14").compare(None)
    sizes = {r.metric: r for r in rows if r.metric.endswith("mean write size")}
    assert {m.split(" (")[0] for m in sizes} >= {"Financial1", "Financial2", "MSNFS", "RADIUS"}
    for row in sizes.values():
        assert row.label in ("calibrated", "input") and row.note.startswith(row.label + ":")
    stand_in = sizes["Financial1 (stand-in): mean write size"]
    assert stand_in.ssdlab == pytest.approx(2.91, rel=0.05)
