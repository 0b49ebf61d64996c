"""Running sweeps: results table, per-run files, resuming, failures, determinism."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import ssdlab
from conftest import without_wall
from crashing_worker import DEADLY_SEED, crash_on_deadly_seed
from ssdlab.experiments import runner
from ssdlab.experiments.executors import LocalExecutor
from ssdlab.experiments.results import RESULT_COLUMNS, load_results, read_manifest
from ssdlab.experiments.runner import run_sweep
from ssdlab.experiments.sweep import Sweep, SweepError

SMALL: dict[str, Any] = {
    "name": "small",
    "config": "small-tlc",
    "record_requests": True,
    "job": {"rw": "randrw", "rwmixread": 70, "bs": "4KiB", "iodepth": 8, "io_count": 2000},
    "axes": {"ftl.over_provisioning": [0.1, 0.2], "job.iodepth": [4, 8]},
    "repeat": 2,
}


@pytest.fixture(scope="module")
def small_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("small") / "out"
    outcome = run_sweep(SMALL, out, workers=2)
    assert (outcome.total, outcome.ran, outcome.ok, outcome.failed) == (8, 8, 8, 0)
    return out


def test_table_has_one_row_per_run_with_stable_columns(small_sweep: Path) -> None:
    table = load_results(small_sweep)
    assert table.height == 8
    assert table["status"].to_list() == ["ok"] * 8
    assert table["point"].to_list() == list(range(8))
    columns = table.columns
    assert columns[:8] == ["point", "id", "repetition", "seed", "status", "error",
                           "config.ftl.over_provisioning", "job.iodepth"]  # fmt: skip
    # Every figure of the result schema is a column, even those no run has (no trims here).
    for column in RESULT_COLUMNS:
        assert column in columns, column
    assert table["ops.trim.count"].null_count() == 8
    assert table.schema["ops.read.iops"] == pl.Float64
    assert table.schema["job.iodepth"] == pl.Int64
    assert "utilisation.channel.per_unit" not in columns  # lists stay in the per-run JSON


def test_result_columns_are_what_runs_write(small_sweep: Path) -> None:
    # The core lists the columns; a run's own result.json must have exactly those figures (and
    # the operations it did), in the same order.
    from ssdlab.experiments.results import flatten_result

    run_dir = next((small_sweep / "runs").iterdir())
    result = json.loads((run_dir / "result.json").read_text())
    figures = [k for k in flatten_result(result) if k.split(".")[0] in
               ("sim", "ops", "total", "device", "utilisation", "wall")]  # fmt: skip
    ops_done = {k.split(".")[1] for k in figures if k.startswith("ops.")}
    assert ops_done == {"read", "write"}
    # device.nand_ops is written only for configs that name its keys, device.merges only with a
    # block-mapped FTL (neither here).
    assert "nand_ops" not in result["device"]
    assert "merges" not in result["device"]
    expected = [
        c
        for c in RESULT_COLUMNS
        if (not c.startswith("ops.") or c.split(".")[1] in ops_done)
        and not c.startswith(("device.nand_ops.", "device.merges."))
    ]
    assert figures == expected


def test_csv_holds_the_same_table(small_sweep: Path) -> None:
    parquet = pl.read_parquet(small_sweep / "results.parquet")
    csv = pl.read_csv(small_sweep / "results.csv", infer_schema_length=None)
    assert csv.columns == parquet.columns
    assert csv["ops.read.iops"].to_list() == pytest.approx(parquet["ops.read.iops"].to_list())
    assert csv["id"].to_list() == parquet["id"].to_list()


def test_pandas_on_request(small_sweep: Path) -> None:
    frame = load_results(small_sweep, backend="pandas")
    assert list(frame.columns) == load_results(small_sweep).columns
    assert len(frame) == 8
    with pytest.raises(ValueError, match="backend"):
        load_results(small_sweep, backend="excel")


def test_per_run_files_and_determinism(small_sweep: Path) -> None:
    table = load_results(small_sweep)
    row = table.row(5, named=True)
    run_dir = small_sweep / "runs" / row["id"]
    point = json.loads((run_dir / "point.json").read_text())
    assert point["status"] == "ok" and point["seed"] == row["seed"]
    # The per-run JSON is what ssdlab.run gives for the same config, job and seed.
    config = ssdlab.Config.load("small-tlc", {"ftl.over_provisioning": 0.2})
    job = ssdlab.Job(**{**SMALL["job"], "iodepth": row["job.iodepth"]})
    direct = ssdlab.run(config, job, seed=row["seed"], record_requests=True)
    assert without_wall((run_dir / "result.json").read_text()) == without_wall(direct.to_json())
    records = np.load(run_dir / "requests.npy")
    # (op, offset_bytes, issue_ps, latency_ps, size_bytes, queue) per request.
    assert records.dtype == np.dtype("<u8") and records.shape == (2000, 6)
    direct_rows = np.frombuffer(direct._records, dtype="<u8").reshape(-1, 6)
    assert np.array_equal(records, direct_rows)


def test_resume_runs_only_what_is_missing(small_sweep: Path, tmp_path: Path) -> None:
    again = run_sweep(SMALL, small_sweep, workers=2)
    assert (again.ran, again.already_done) == (0, 8)
    # An interrupted point: result written, point.json (the "done" mark) not yet.
    table = load_results(small_sweep)
    victim = table["id"][3]
    (small_sweep / "runs" / victim / "point.json").unlink()
    resumed = run_sweep(SMALL, small_sweep, workers=2)
    assert (resumed.ran, resumed.already_done) == (1, 7)
    assert load_results(small_sweep).height == 8
    # A grown sweep reuses every run it still contains.
    grown = {**SMALL, "axes": {**SMALL["axes"], "job.iodepth": [4, 8, 16]}}
    outcome = run_sweep(grown, small_sweep, workers=2)
    assert (outcome.total, outcome.ran, outcome.already_done) == (12, 4, 8)
    manifest = json.loads((small_sweep / "manifest.json").read_text())
    assert [i["ran"] for i in manifest["invocations"]] == [8, 0, 1, 4]
    run_sweep(SMALL, small_sweep, workers=2)  # back to the module's shape for other tests


def test_a_run_made_by_another_build_runs_again(tmp_path: Path) -> None:
    """A point whose point.json names another build of the simulator (or none: written before
    builds were recorded) is not reused: its figures are that build's."""
    spec = {**SMALL, "repeat": 1, "record_requests": False, "axes": {"job.iodepth": [4, 8]}}
    out = tmp_path / "out"
    first = run_sweep(spec, out, workers=1)
    assert first.ran == 2
    ids = list(load_results(out)["id"])
    point_file = out / "runs" / ids[0] / "point.json"
    point = json.loads(point_file.read_text())
    assert point["build"] == runner.model_build() and len(point["build"]) == 16
    point["build"] = "0" * 16
    point_file.write_text(json.dumps(point))
    old = out / "runs" / ids[1] / "point.json"
    older = json.loads(old.read_text())
    del older["build"]
    old.write_text(json.dumps(older))
    again = run_sweep(spec, out, workers=1)
    assert (again.ran, again.already_done) == (2, 0)
    assert run_sweep(spec, out, workers=1).ran == 0


def test_failing_point_is_recorded_and_the_sweep_goes_on(tmp_path: Path) -> None:
    # 16 requests in flight do not fit a queue of 8 entries: the core refuses that run.
    spec = {**SMALL, "repeat": 1, "record_requests": False,
            "axes": {"interface.queue_depth": [1024, 8], "job.iodepth": [4, 16]}}  # fmt: skip
    outcome = run_sweep(spec, tmp_path / "out", workers=2)
    assert (outcome.ran, outcome.ok, outcome.failed) == (4, 3, 1)
    table = load_results(tmp_path / "out")
    failed = table.filter(pl.col("status") == "failed")
    assert failed.height == 1
    assert failed["config.interface.queue_depth"][0] == 8 and failed["job.iodepth"][0] == 16
    assert "queue_depth" in failed["error"][0] and "iodepth" in failed["error"][0]
    assert failed["ops.read.iops"][0] is None
    # Failed points are kept on resume, and run again on request.
    assert run_sweep(spec, tmp_path / "out", workers=2).ran == 0
    retried = run_sweep(spec, tmp_path / "out", workers=2, retry_failed=True)
    assert (retried.ran, retried.failed) == (1, 1)


def test_a_worker_that_dies_fails_only_its_own_point(tmp_path: Path) -> None:
    spec = {key: value for key, value in SMALL.items() if key != "repeat"}
    spec.update(record_requests=False, seeds=[1, DEADLY_SEED, 3], axes={"job.iodepth": [4, 8]})
    executor = LocalExecutor(workers=2, worker=crash_on_deadly_seed)
    outcome = run_sweep(spec, tmp_path / "out", executor=executor)
    assert (outcome.ran, outcome.ok, outcome.failed) == (6, 4, 2)
    table = load_results(tmp_path / "out")
    failed = table.filter(pl.col("status") == "failed")
    assert failed["seed"].to_list() == [DEADLY_SEED, DEADLY_SEED]
    assert all("worker process" in error and "died" in error for error in failed["error"])


class _PoolBreakingOnSubmit(LocalExecutor):
    """A pool whose worker has just died, caught between the worker's death and the pool's
    broken flag: its next submit fails spawning the replacement with the error CI met ("handle
    is closed"), as the first pool of a run does here once."""

    def __init__(self) -> None:
        super().__init__(workers=2)
        self.refused = 0

    def _pool(self) -> Any:
        pool = super()._pool()
        if self.refused == 0:
            real_submit = pool.submit

            def submit(*args: Any, **kwargs: Any) -> Any:
                if self.refused == 0:
                    self.refused += 1
                    raise OSError("handle is closed")
                return real_submit(*args, **kwargs)

            pool.submit = submit  # type: ignore[method-assign]
        return pool


def test_a_pool_refusing_a_submit_while_it_breaks_is_started_again(tmp_path: Path) -> None:
    executor = _PoolBreakingOnSubmit()
    outcome = run_sweep(SMALL, tmp_path / "out", executor=executor)
    assert executor.refused == 1
    assert (outcome.ran, outcome.ok, outcome.failed) == (8, 8, 0)


def test_one_sweep_at_a_time_per_directory(tmp_path: Path) -> None:
    import fcntl

    out = tmp_path / "out"
    out.mkdir()
    with open(out / ".lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(SweepError, match="another sweep"):
            run_sweep(SMALL, out, workers=1)


def test_same_results_with_one_or_two_workers(small_sweep: Path, tmp_path: Path) -> None:
    serial = run_sweep(SMALL, tmp_path / "serial", workers=1)
    assert serial.ran == 8
    a, b = load_results(small_sweep), load_results(tmp_path / "serial")
    varying = [c for c in a.columns if c.startswith("wall.") or c in ("worker", "worker_seconds")]
    assert a.drop(varying).equals(b.drop(varying))


def test_sweep_api_accepts_a_sweep_object(tmp_path: Path) -> None:
    sweep = Sweep.from_dict({**SMALL, "repeat": 1, "axes": {"job.iodepth": [2]}})
    outcome = ssdlab.run_sweep(sweep, tmp_path / "o", workers=1)
    assert outcome.ok == 1 and outcome.table().height == 1
    assert outcome.runs_per_minute > 0


needs_traces = pytest.mark.skipif(
    not hasattr(ssdlab._core, "check_trace_job"), reason="this build has no trace replay"
)


@needs_traces
def test_trace_replay_sweep(tmp_path: Path) -> None:
    spec = {
        "config": "small-tlc",
        "record_requests": True,
        "trace": {"trace": "model:financial1", "mode": "afap", "io_count": 1500},
        "axes": {"trace.iodepth": [4, 16], "ftl.gc.policy": ["greedy", "cost-benefit"]},
    }
    outcome = run_sweep(spec, tmp_path / "out", workers=2)
    assert (outcome.ran, outcome.ok) == (4, 4)
    table = load_results(tmp_path / "out")
    assert table["trace.iodepth"].to_list() == [4, 4, 16, 16]
    assert set(table["trace.trace"]) == {"model:financial1"}
    assert "job.rw" not in table.columns
    assert table["total.count"].to_list() == [1500] * 4
    assert table["replay.replayed"].to_list() == [1500] * 4
    # The same as a direct replay.
    row = table.row(2, named=True)
    direct = ssdlab.run(
        ssdlab.Config.load("small-tlc", {"ftl.gc.policy": "greedy"}),
        trace="model:financial1", mode="afap", io_count=1500, iodepth=16, seed=row["seed"],
    )  # fmt: skip
    stored = (tmp_path / "out" / "runs" / row["id"] / "result.json").read_text()
    assert without_wall(stored) == without_wall(direct.to_json())


@needs_traces
@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        ({"trace": {"trace": "no/such.csv"}}, ["no/such.csv", "no such file"]),
        ({"trace": {"mode": "afap"}}, ["[trace] table with trace"]),
        ({"trace": {"trace": "model:web1", "mode": "warp"}}, ["[trace]", "warp"]),
        ({"trace": {"trace": "model:web1"}, "axes": {"job.iodepth": [1]}},
         ["job.iodepth", "runs a trace"]),
        ({"trace": {"trace": "model:web1"}, "job": {"rw": "read"}},
         ["exactly one of", "job, trace"]),
        ({"trace": {"trace": "model:web1"}, "axes": {"trace.iodepth": [0]}},
         ["trace.iodepth", "0"]),
    ],
)  # fmt: skip
def test_trace_sweep_mistakes(extra: dict[str, Any], needles: list[str]) -> None:
    with pytest.raises(SweepError) as caught:
        Sweep.from_dict({"config": "small-tlc", **extra}, source="t.toml").points()
    for needle in needles:
        assert needle in str(caught.value), (needle, str(caught.value))


TINY: dict[str, Any] = {
    "name": "tiny",
    "config": "small-tlc",
    "job": {"bs": "4KiB", "iodepth": 4, "io_count": 200},
    "axes": {"job.rw": ["randwrite", "randread"]},
}


def test_damaged_sweep_files_rerun_rebuild_or_are_named(tmp_path: Path) -> None:
    """Issue 15, defect 8: a point whose result.json is missing or truncated was kept as ok with
    empty figures and never rerun; a damaged results.parquet or manifest.json was a traceback."""
    out = tmp_path / "out"
    assert run_sweep(TINY, out, workers=1).ok == 2
    first, second = sorted(p.name for p in (out / "runs").iterdir())
    whole = (out / "runs" / first / "result.json").read_text()
    (out / "runs" / first / "result.json").write_text(whole[:50])
    (out / "runs" / second / "result.json").unlink()
    again = run_sweep(TINY, out, workers=1)
    assert (again.ran, again.ok, again.already_done) == (2, 2, 0)
    assert without_wall((out / "runs" / first / "result.json").read_text()) == without_wall(whole)
    assert load_results(out)["device.write_amplification"].null_count() == 0

    # The table is derived from the runs: a damaged one is rebuilt.
    expected = load_results(out)
    (out / "results.parquet").write_bytes(b"not a parquet file")
    assert load_results(out).equals(expected)
    assert (out / "results.parquet").read_bytes()[:4] == b"PAR1"

    # A damaged manifest is named by the readers; the next sweep into the directory rewrites it.
    (out / "manifest.json").write_text('{"name": ')
    with pytest.raises(ssdlab.SsdlabError, match=r"manifest.json: not valid JSON \(.*line 1"):
        read_manifest(out)
    assert run_sweep(TINY, out, workers=1).already_done == 2
    assert read_manifest(out)["name"] == "tiny"


def test_another_sweep_into_the_same_directory_is_refused(tmp_path: Path) -> None:
    """Issue 15, defect 8: a second sweep silently replaced the first one's manifest."""
    out = tmp_path / "out"
    run_sweep(TINY, out, workers=1)
    other = {**TINY, "name": "other", "axes": {"job.rw": ["read"]}}
    with pytest.raises(SweepError, match=r"holds sweep 'tiny' \(manifest.json\), not 'other'"):
        run_sweep(other, out, workers=1)
    assert read_manifest(out)["name"] == "tiny"
    assert len(list((out / "runs").iterdir())) == 2


def test_stats_interval_samples_each_run_and_the_report_draws_them(tmp_path: Path) -> None:
    from ssdlab.experiments.report import MAX_SAMPLE_FIGURES, write_report

    spec = {
        "name": "sampled",
        "config": "small-tlc",
        "stats_interval": "2ms",
        "job": {"rw": "randwrite", "bs": "4KiB", "iodepth": 8, "io_count": 1500},
        "axes": {"job.iodepth": [1, 2, 4, 8, 16, 32, 64]},
    }
    out = tmp_path / "out"
    outcome = run_sweep(spec, out, workers=1)
    assert (outcome.ok, outcome.failed) == (7, 0)
    table = load_results(out)
    for pid in table["id"]:
        samples = json.loads((out / "runs" / pid / "result.json").read_text())["samples"]
        assert len(samples["time_s"]) >= 2
    # The sampled runs are other runs than the unsampled ones (their ids differ).
    plain = Sweep.from_dict({k: v for k, v in spec.items() if k != "stats_interval"}).points()
    assert {p.id for p in plain}.isdisjoint(set(table["id"]))
    html = write_report(out).read_text()
    assert html.count("<figcaption>Periodic statistics of point") == MAX_SAMPLE_FIGURES
    assert "1 more run(s)" in html
    assert "job.iodepth = 1" in html or "iodepth = 1" in html
