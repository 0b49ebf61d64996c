"""Data out of a run (issue 45, point 13): per-request columns with the request's size and a
labelled op, data frames (polars; pandas optional), the presets as JSON, and `ssdlab nvme`'s
JSON with nvme-cli's keys."""

from __future__ import annotations

import builtins
import json
from typing import Any

import numpy as np
import pytest

import ssdlab
from conftest import run_cli

MIX = {"rw": "randrw", "rwmixread": 50, "bs": {"4KiB": 50, "64KiB": 50}, "iodepth": 8,
       "io_count": 600}  # fmt: skip


@pytest.fixture(scope="module")
def mixed() -> ssdlab.Result:
    return ssdlab.run(ssdlab.Config.load("small-tlc"), MIX, seed=3, record_requests=True)


def test_requests_carry_each_request_size_and_op_name(mixed: ssdlab.Result) -> None:
    columns = mixed.requests()
    assert len(columns["size_bytes"]) == 600
    assert set(columns["size_bytes"].tolist()) == {4096, 65536}
    assert columns["size_bytes"].dtype == np.uint64
    names = columns["op_name"]
    assert set(names.tolist()) == {"read", "write"}
    assert (names == np.array(ssdlab.api.OP_NAMES)[columns["op"]]).all()
    # The result's own byte counts are the sums of the sizes.
    ops = mixed.to_dict()["ops"]
    for op in ("read", "write"):
        assert columns["size_bytes"][names == op].sum() == ops[op]["bytes"], op


def test_to_polars_has_a_categorical_op(mixed: ssdlab.Result) -> None:
    import polars as pl

    frame = mixed.to_polars()
    assert frame.columns == ["op", "offset_bytes", "size_bytes", "issue_us", "latency_us"]
    assert frame.height == 600
    assert isinstance(frame.schema["op"], pl.Enum)
    assert list(frame.schema["op"].categories) == list(ssdlab.api.OP_NAMES)
    reads = frame.filter(pl.col("op") == "read")["latency_us"].to_numpy()
    assert np.array_equal(np.sort(reads), np.sort(mixed.latencies("read")))


def test_to_pandas_has_a_categorical_op(mixed: ssdlab.Result) -> None:
    pd = pytest.importorskip("pandas")
    frame = mixed.to_pandas()
    assert isinstance(frame["op"].dtype, pd.CategoricalDtype)
    assert list(frame["op"].cat.categories) == list(ssdlab.api.OP_NAMES)
    assert frame["size_bytes"].sum() == mixed.requests()["size_bytes"].sum()


def test_to_pandas_without_pandas_says_how_to_get_it(
    mixed: ssdlab.Result, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_import = builtins.__import__

    def no_pandas(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("No module named 'pandas'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    with pytest.raises(ImportError, match=r"pip install 'ssdlab\[pandas\]'"):
        mixed.to_pandas()


def test_data_frames_need_the_records() -> None:
    result = ssdlab.run(ssdlab.Config.load("small-tlc"), {"rw": "read", "io_count": 10})
    with pytest.raises(ValueError, match="record_requests=True"):
        result.to_polars()


def test_presets_json_lists_every_preset() -> None:
    proc = run_cli("presets", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == ssdlab.presets()


# The keys of `nvme id-ctrl -o json` in nvme-cli 2.3 (Debian's nvme-cli package,
# 2.4+really2.3), in its order: json_nvme_id_ctrl in its nvme-print.c. `subnqn` is printed
# only when not empty.
NVME_CLI_ID_CTRL_KEYS = """
vid ssvid sn mn fr rab ieee cmic mdts cntlid ver rtd3r rtd3e oaes ctratt rrls cntrltype fguid
crdt1 crdt2 crdt3 nvmsr vwci mec oacs acl aerl frmw lpa elpe npss avscc apsta wctemp cctemp mtfa
hmpre hmmin tnvmcap unvmcap rpmbs edstt dsto fwug kas hctma mntmt mxtmt sanicap hmminds hmmaxd
nsetidmax endgidmax anatt anacap anagrpmax nanagrpid pels domainid megcap sqes cqes maxcmd nn oncs
fuses fna vwc awun awupf icsvscc nwpc acwu ocfs sgls mnan maxdna maxcna subnqn ioccsz iorcsz
icdoff fcatt msdbd ofcs psds
""".split()
NVME_CLI_PSD_KEYS = """
max_power flags entry_lat exit_lat read_tput read_lat write_tput write_lat idle_power idle_scale
active_power active_power_work active_scale
""".split()


def test_nvme_id_ctrl_json_has_nvme_clis_keys_in_its_order() -> None:
    proc = run_cli("nvme", "id-ctrl", "seed004-64ch-mlc", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    fields = json.loads(proc.stdout)
    assert "subnqn" in fields  # ours is set
    assert list(fields) == NVME_CLI_ID_CTRL_KEYS
    assert list(fields["psds"][0]) == NVME_CLI_PSD_KEYS
    assert fields["fguid"] == "00000000-0000-0000-0000-000000000000"
    normal = run_cli("nvme", "id-ctrl", "seed004-64ch-mlc")
    assert normal.returncode == 0, normal.stderr
    assert any(line.startswith("icsvscc") for line in normal.stdout.splitlines())
