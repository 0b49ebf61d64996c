"""The register-level NVMe controller on a zoned drive: the ZNS Identify structures, Zone
Management Send and Receive and Zone Append from Python, and ``ssdlab nvme zns ...`` as
nvme-cli's zns plugin prints them (docs/nvme-controller.md, docs/zns.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import assert_user_error, run_cli
from ssdlab.nvme import ZONE_ACTIONS, ZONE_STATES, NvmeAccessError, NvmeDevice

ZONE_KEYS = ["slba", "wp", "cap", "state", "type", "attrs", "attrs_info"]
ROOT = Path(__file__).resolve().parent.parent


def test_zone_commands_from_python() -> None:
    dev = NvmeDevice("zns-tlc", overrides=["zns.max_open_zones=2"])
    assert dev.zoned
    ns = dev.zns_id_ns()
    assert ns["mor"] == 1 and ns["mar"] == 0xFFFFFFFF and ns["lbafe"][0]["zsze"] == 2048
    assert dev.zns_id_ctrl() == {"zasl": 0}
    report = dev.report_zones()
    assert report["nr_zones"] == 128 and len(report["zone_list"]) == 128
    assert list(report["zone_list"][0]) == ZONE_KEYS
    # An append lands at the write pointer and says where.
    first = dev.zone_append(2048, b"\x11" * 8192)
    second = dev.zone_append(2048, b"\x22" * 4096)
    assert (first["lba"], second["lba"]) == (2048, 2050)
    assert dev.read(2048, 3) == b"\x11" * 8192 + b"\x22" * 4096
    zone = dev.report_zones(2048, max_zones=1)["zone_list"][0]
    assert (zone["state"], zone["wp"]) == ("IMP_OPENED", 2051)
    # The drive's refusals are completions with the ZNS status, not exceptions.
    done = dev.zone_mgmt_send("close", 2049)
    assert done["status_name"] == "Invalid Field in Command"
    assert dev.zone_mgmt_send("finish", 2048)["status_name"] == "Successful Completion"
    assert dev.zone_append(2048, b"\x33" * 4096)["status_name"] == "Zone Is Full"
    assert dev.report_zones(state="full")["nr_zones"] == 1
    assert dev.zone_mgmt_send("reset", select_all=True)["status_name"] == "Successful Completion"
    assert dev.read(2048, 1) == bytes(4096)
    assert dev.report_zones(state="empty", partial=True, max_zones=5)["nr_zones"] == 5


def test_zone_arguments_are_checked_by_name() -> None:
    dev = NvmeDevice("zns-tlc")
    with pytest.raises(NvmeAccessError, match="zone action: got 'erase'"):
        dev.zone_mgmt_send("erase", 0)
    with pytest.raises(NvmeAccessError, match="report-zones state: got 'open'"):
        dev.report_zones(state="open")
    with pytest.raises(NvmeAccessError, match="max_zones"):
        dev.report_zones(max_zones=0)
    plain = NvmeDevice("small-tlc")
    assert not plain.zoned
    with pytest.raises(NvmeAccessError, match="small-tlc has no zones"):
        plain.report_zones()
    assert ZONE_ACTIONS[3] == "reset" and ZONE_STATES[0] == "empty"


def test_cli_report_zones_after_a_zbd_job() -> None:
    job = ROOT / "examples/jobs/zns-seqwrite.toml"
    proc = run_cli("nvme", "zns", "report-zones", "zns-tlc", "--job", job, "-d", "3", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["nr_zones"] == 128 and len(data["zone_list"]) == 3
    assert all(z["state"] == "FULL" for z in data["zone_list"])
    text = run_cli("nvme", "zns", "report-zones", "zns-tlc", "--state", "empty", "-d", "1")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == "nr_zones: 128"
    assert lines[1].startswith("SLBA: 0x0") and "State: EMPTY" in lines[1]


def test_cli_zns_id_ns_and_id_ctrl() -> None:
    proc = run_cli("nvme", "zns", "id-ns", "zns-tlc", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert list(data)[:6] == ["zoc", "ozcs", "mar", "mor", "rrl", "frl"]
    assert data["lbafe"][0] == {"zsze": 2048, "zdes": 0}
    text = run_cli("nvme", "zns", "id-ns", "zns-tlc").stdout
    assert "lbafe  0: zsze:0x800 zdes:0 (in use)" in text
    ctrl = run_cli("nvme", "zns", "id-ctrl", "zns-tlc", "-o", "json")
    assert json.loads(ctrl.stdout) == {"zasl": 0}


def test_cli_zns_bad_input_exits_2() -> None:
    assert_user_error(run_cli("nvme", "zns", "report-zones", "small-tlc"), "has no zones")
    assert_user_error(
        run_cli("nvme", "zns", "report-zones", "zns-tlc", "--start-lba", "262144"), "--start-lba"
    )
    assert_user_error(run_cli("nvme", "zns", "report-zones", "zns-tlc", "--state", "open"), "open")
    assert_user_error(run_cli("nvme", "zns", "id-ns", "zns-tlc", "--set", "zns.zone_size=3"), "zns")
