"""The register-level NVMe controller from Python and the ``ssdlab nvme`` commands, driven as
nvme-cli would be."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import assert_user_error, run_cli
from ssdlab.nvme import NvmeAccessError, NvmeDevice

ID_CTRL_KEYS = [
    "vid",
    "ssvid",
    "sn",
    "mn",
    "fr",
    "rab",
    "ieee",
    "cmic",
    "mdts",
    "cntlid",
    "ver",
    "oacs",
    "acl",
    "aerl",
    "frmw",
    "lpa",
    "elpe",
    "npss",
    "sqes",
    "cqes",
    "nn",
    "oncs",
    "vwc",
]
SMART_KEYS = [
    "critical_warning",
    "temperature",
    "avail_spare",
    "spare_thresh",
    "percent_used",
    "data_units_read",
    "data_units_written",
    "host_read_commands",
    "host_write_commands",
    "controller_busy_time",
    "power_cycles",
    "power_on_hours",
    "unsafe_shutdowns",
    "media_errors",
    "num_err_log_entries",
]
LIST_KEYS = [
    "DevicePath",
    "ModelNumber",
    "SerialNumber",
    "Firmware",
    "UsedBytes",
    "PhysicalSize",
    "SectorSize",
]


@pytest.fixture()
def job_file(tmp_path: Path) -> Path:
    path = tmp_path / "job.toml"
    path.write_text('rw = "write"\nbs = "64KiB"\niodepth = 8\nsize = "2MiB"\n', encoding="utf-8")
    return path


def test_device_registers_identify_and_io(preset_name: str) -> None:
    dev = NvmeDevice(preset_name)
    # CSTS.RDY after the driver's bring-up; VS 1.4.0; CAP.MQES.
    assert dev.mmio_read(0x1C) & 1 == 1
    assert dev.mmio_read(0x08) == 0x0001_0400
    assert dev.mmio_read(0x00, 8) & 0xFFFF == 0xFFFF
    assert dev.config_read(0x00, 2) == 0x8086
    assert dev.config_read(0x09, 4) & 0xFFFFFF == 0x010802
    ctrl = dev.id_ctrl()
    assert ctrl["mn"] == f"ssdlab {preset_name}"
    assert ctrl["sn"] == dev.serial and len(ctrl["sn"]) == 20
    assert ctrl["ver"] == 0x10400 and ctrl["sqes"] == 0x66 and ctrl["cqes"] == 0x44
    assert ctrl["nn"] == 1 and ctrl["oncs"] & 0x4
    raw = dev.identify(1)
    assert raw[0:2] == (0x8086).to_bytes(2, "little")
    assert raw[24:64].decode().rstrip() == ctrl["mn"]
    ns = dev.id_ns()
    assert ns["nsze"] == dev.nsze and ns["nuse"] == 0
    assert [f["ds"] for f in ns["lbafs"]] == [12, 9]
    data = bytes(range(256)) * 64  # 16 KiB
    done = dev.write(7, data)
    assert done["status"] == 0 and done["latency_ps"] > 0
    assert dev.read(7, 4) == data
    dev.deallocate(8, 1)
    assert dev.read(8, 1) == bytes(4096)
    assert dev.id_ns()["nuse"] == 3
    smart = dev.smart_log()
    assert smart["host_write_commands"] == 1 and smart["host_read_commands"] == 2
    assert dev.clock_ps > 0


def test_cli_id_ctrl_json_keys(preset_name: str) -> None:
    proc = run_cli("nvme", "id-ctrl", preset_name, "--output-format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert list(data)[:10] == ID_CTRL_KEYS[:10], "nvme-cli order"
    for key in ID_CTRL_KEYS:
        assert key in data, key
    assert data["vid"] == 0x8086 and data["mdts"] == 6 and data["mn"] == "ssdlab small-tlc"
    assert isinstance(data["psds"], list) and "max_power" in data["psds"][0]


def test_cli_id_ctrl_normal(preset_name: str) -> None:
    proc = run_cli("nvme", "id-ctrl", preset_name)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "NVME Identify Controller:"
    fields = {k.strip(): v.strip() for k, _, v in (line.partition(" : ") for line in lines[1:])}
    assert fields["vid"] == "0x8086"
    assert fields["mn"] == "ssdlab small-tlc"
    assert fields["ver"] == "0x10400"
    assert fields["sqes"] == "0x66"


def test_cli_id_ns_after_job(preset_name: str, job_file: Path) -> None:
    proc = run_cli("nvme", "id-ns", preset_name, "--job", job_file, "-o", "json")
    assert proc.returncode == 0, proc.stderr
    ns = json.loads(proc.stdout)
    for key in ("nsze", "ncap", "nuse", "nsfeat", "nlbaf", "flbas", "lbafs"):
        assert key in ns, key
    assert ns["nuse"] == 512  # 2 MiB of 4 KiB blocks
    assert ns["lbafs"][0] == {"ms": 0, "ds": 12, "rp": 0}
    normal = run_cli("nvme", "id-ns", preset_name, "--lba-size", "512")
    assert normal.returncode == 0, normal.stderr
    assert "lbaf  1 : ms:0   lbads:9  rp:0x2 (in use)" in normal.stdout


def test_cli_smart_log_counts_the_job(preset_name: str, job_file: Path) -> None:
    proc = run_cli("nvme", "smart-log", preset_name, "--job", job_file, "-o", "json")
    assert proc.returncode == 0, proc.stderr
    smart = json.loads(proc.stdout)
    for key in SMART_KEYS:
        assert key in smart, key
    assert smart["host_write_commands"] == 32
    assert smart["data_units_written"] == 5  # 4096 units of 512 B, in thousands rounded up
    assert smart["temperature"] == 313
    assert smart["avail_spare"] == 100
    normal = run_cli("nvme", "smart-log", preset_name)
    assert normal.returncode == 0, normal.stderr
    assert "temperature" in normal.stdout and "40 °C" in normal.stdout


def test_cli_list(preset_name: str, job_file: Path) -> None:
    proc = run_cli("nvme", "list", preset_name, "--job", job_file, "-o", "json")
    assert proc.returncode == 0, proc.stderr
    devices = json.loads(proc.stdout)["Devices"]
    assert len(devices) == 1
    for key in LIST_KEYS:
        assert key in devices[0], key
    d = devices[0]
    assert d["DevicePath"] == "/dev/nvme0n1"
    assert d["UsedBytes"] == 2 * 1024 * 1024
    assert d["SectorSize"] == 4096
    assert d["PhysicalSize"] == d["MaximumLBA"] * 4096
    normal = run_cli("nvme", "list", preset_name)
    assert normal.returncode == 0
    assert normal.stdout.splitlines()[0].startswith("Node")
    assert "/dev/nvme0n1" in normal.stdout


def test_cli_trace(preset_name: str) -> None:
    trace = Path(__file__).parents[1] / "crates/ssdlab/tests/fixtures/traces/msr.csv"
    proc = run_cli("nvme", "smart-log", preset_name, "--trace", trace, "-o", "json")
    assert proc.returncode == 0, proc.stderr
    smart = json.loads(proc.stdout)
    assert smart["host_write_commands"] + smart["host_read_commands"] > 0


def test_cli_bad_input_exits_2(tmp_path: Path, preset_name: str) -> None:
    assert_user_error(run_cli("nvme", "id-ctrl", "no-such-preset"), "no-such-preset")
    assert_user_error(
        run_cli("nvme", "smart-log", preset_name, "--job", tmp_path / "missing.toml"),
        "missing.toml",
    )
    assert_user_error(
        run_cli("nvme", "list", preset_name, "--trace", tmp_path / "missing.csv"), "missing.csv"
    )
    assert_user_error(run_cli("nvme", "id-ns", preset_name, "--lba-size", "1024"), "lba-size")
    assert_user_error(run_cli("nvme", "id-ns", preset_name, "-o", "xml"), "xml")
    bad = tmp_path / "bad.toml"
    bad.write_text('rw = "sideways"\n', encoding="utf-8")
    assert_user_error(run_cli("nvme", "id-ctrl", preset_name, "--job", bad), "rw")
    assert_user_error(run_cli("nvme", "list", preset_name, "--set", "bogus"), "bogus")
    assert_user_error(run_cli("nvme", "id-ctrl", "seed000-ufs20-galaxy-s6"), "interface.kind")


def test_cli_set_overrides_the_config(preset_name: str) -> None:
    base = json.loads(run_cli("nvme", "list", preset_name, "-o", "json").stdout)
    proc = run_cli("nvme", "list", preset_name, "--set", "nand.channels=8", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    wider = json.loads(proc.stdout)
    assert wider["Devices"][0]["PhysicalSize"] > base["Devices"][0]["PhysicalSize"]


def test_bad_register_and_memory_accesses_are_clear_errors(preset_name: str) -> None:
    dev = NvmeDevice(preset_name)
    for call, needle in [
        (lambda: dev.mmio_read(0, 3), "mmio_read size: got 3"),
        (lambda: dev.mmio_write(0x14, 1 << 40, 4), "mmio_write value"),
        (lambda: dev.mmio_read(-1), "mmio_read offset: got -1"),
        (lambda: dev.config_read(4096), "config_read offset: got 4096"),
        (lambda: dev.mem_read(0, 1 << 40), "mem_read length"),
        (lambda: dev.mem_write(2**64 - 2, b"abcd"), "pass 2^64"),
    ]:
        with pytest.raises(NvmeAccessError, match=re.escape(needle)):
            call()
    # The device is still usable afterwards.
    assert dev.mmio_read(0x08) == 0x10400


def test_every_integer_argument_out_of_range_or_of_another_type_is_named(
    preset_name: str,
) -> None:
    """Huge, negative and non-integer values for every integer argument: an NvmeAccessError
    naming the argument, the value and the range (the core's conversion raised a bare
    OverflowError, or a TypeError naming nothing). numpy integers are integers."""
    import numpy as np

    dev = NvmeDevice(preset_name)
    trace = Path(__file__).parents[1] / "crates/ssdlab/tests/fixtures/traces/msr.csv"
    calls = {
        "slba": [lambda v: dev.read(v, 1), lambda v: dev.write(v, bytes(4096))],
        "nlb": [lambda v: dev.read(0, v)],
        "deallocate slba": [lambda v: dev.deallocate(v, 1)],
        "deallocate nlb": [lambda v: dev.deallocate(0, v)],
        "cns": [lambda v: dev.identify(v)],
        "nsid": [lambda v: dev.identify(1, v), lambda v: dev.id_ns(v)],
        "lid": [lambda v: dev.get_log(v, 512)],
        "length": [lambda v: dev.get_log(2, v)],
        "iodepth": [lambda v: dev.run_trace(trace, iodepth=v)],
        "limit": [lambda v: dev.run_trace(trace, limit=v)],
        "mmio_read offset": [lambda v: dev.mmio_read(v)],
        "mmio_read size": [lambda v: dev.mmio_read(0, v)],
        "config_write value": [lambda v: dev.config_write(0x04, v)],
        "mem_read length": [lambda v: dev.mem_read(0, v)],
        "queue_depth": [lambda v: NvmeDevice(preset_name, queue_depth=v)],
        "lba_size": [lambda v: NvmeDevice(preset_name, lba_size=v)],
    }
    for name, fns in calls.items():
        for fn in fns:
            # (limit=None is "no limit".)
            for value in (2**64, -1, "1", 1.5, *([None] if name != "limit" else [])):
                with pytest.raises(NvmeAccessError, match=rf"^{re.escape(name)}: got .*expected"):
                    fn(value)
    assert dev.read(np.uint64(0), np.int32(1)) == bytes(4096)
    assert dev.identify(np.int64(1))[:2] == dev.identify(1)[:2]
    assert NvmeDevice(preset_name, queue_depth=np.int16(64)).lba_size == 4096


def test_run_trace_refuses_iodepth_zero(preset_name: str) -> None:
    from ssdlab import JobError

    trace = Path(__file__).parents[1] / "crates/ssdlab/tests/fixtures/traces/msr.csv"
    dev = NvmeDevice(preset_name)
    with pytest.raises(JobError, match=re.escape("`iodepth`: got 0, expected at least 1")):
        dev.run_trace(trace, iodepth=0)
    # Nothing ran: the device is untouched and takes the trace at a valid depth.
    assert dev.run_trace(trace, iodepth=1)["requests"] > 0


def test_io_to_a_controller_disabled_through_its_registers_names_the_state(
    preset_name: str,
) -> None:
    # Clearing CC.EN is the caller's doing: the error says so (JobError naming CSTS.RDY and
    # CC.EN), where it was a SimulationError ("a bug in ssdlab") before.
    from ssdlab import JobError

    dev = NvmeDevice(preset_name)
    dev.write(0, b"\0" * dev.lba_size)
    dev.mmio_write(0x14, 0, 4)
    for call in (lambda: dev.read(0, 1), lambda: dev.id_ctrl()):
        with pytest.raises(JobError, match=re.escape("CSTS.RDY = 0, CC.EN = 0")):
            call()


def test_cli_job_that_is_a_device_or_directory_is_named_as_such(tmp_path: Path) -> None:
    # Before: "--job: file not found" for both.
    proc = run_cli("nvme", "smart-log", "small-tlc", "--job", "/dev/zero", timeout=60)
    assert_user_error(proc, "/dev/zero", "more than 1048576 bytes")
    proc = run_cli("nvme", "smart-log", "small-tlc", "--job", tmp_path)
    assert_user_error(proc, "is a directory")


def test_the_device_is_preconditioned_as_a_job_s_is(preset_name: str) -> None:
    # 80 MiB raw (the combination matrix's small drive): the steady state takes milliseconds.
    small = [
        "nand.channels=2",
        "nand.dies_per_package=1",
        "nand.blocks_per_plane=80",
        "nand.pages_per_block=16",
        "precondition.random_overwrite=0.0",
    ]
    fresh = NvmeDevice(preset_name, overrides=[*small, 'precondition.fill="none"'])
    assert fresh.steady_state is None
    steady = NvmeDevice(preset_name, overrides=[*small, 'precondition.fill="steady-state"'])
    s = steady.steady_state
    assert s is not None and s["write_amplification"] > 1.0, s
    assert set(s) == {"write_amplification", "converged", "overwrite"}
    assert steady.precondition_seconds > 0.0
