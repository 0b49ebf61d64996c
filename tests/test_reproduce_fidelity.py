"""Honest rows and the fidelity scoreboard (issue 14 points 7 and 8): labels, the tally of
predictions, absolute differences on a document value of 0, and `reproduce --all --summary`."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import polars as pl
import pytest

import ssdlab.reproduce as reproduce
from ssdlab import cli
from ssdlab.reproduce import (
    ROW_LABELS,
    Experiment,
    Row,
    experiments,
    scoreboard,
    seed000,
    seed001,
    seed004,
)

ROOT = Path(__file__).resolve().parent.parent


def _all_rows_without_runs() -> list[Row]:
    return [row for experiment in experiments() for row in experiment.compare(None)]


# -- labels ------------------------------------------------------------------------------------


def test_every_row_has_an_allowed_label_and_every_calibrated_row_says_what_was_fitted() -> None:
    rows = _all_rows_without_runs()
    assert rows
    for row in rows:
        assert row.label in ROW_LABELS, row
        if row.label == "calibrated":
            assert "calibrated:" in row.note, row
        if row.label == "derived":
            assert "derived:" in row.note, row
        if row.label == "input":
            assert "input:" in row.note, row
    labels = {row.label for row in rows}
    assert {"prediction", "calibrated", "input", "derived"} <= labels


def test_a_label_outside_the_set_is_refused() -> None:
    with pytest.raises(ValueError, match="row label 'guess'"):
        Row("x", "m", "MB/s", 1.0, 1.0, label="guess")


@pytest.mark.parametrize(
    ("experiment", "metric", "label"),
    [
        ("seed000-fig6", "interface bandwidth, 512 KB read chunk", "calibrated"),
        ("seed000-fig9", "maximum write throughput (512 KB chunk, QD4)", "calibrated"),
        ("seed000-fig9", "maximum read throughput (512 KB chunk, QD4)", "prediction"),
        ("seed001-fig3-4", "dual / single2x leakage power", "calibrated"),
        ("seed004-fig5", "bandwidth lost to IDE, sequential read", "derived"),
        ("seed004-fig5", "bandwidth lost to IDE, sequential write", "derived"),
        ("seed004-fig5", "NVMe Gen.1 x1 sequential read against Table 2 real bandwidth", "input"),
        ("seed004-fig5", "NVMe-ideal sequential read bandwidth", "calibrated"),
        ("seed004-fig5", "NVMe-ideal sequential write bandwidth", "prediction"),
        ("seed000-fig10", "512 KB sequential write: prototype over UFS 2.0", "input"),
        ("seed000-fig10", "512 KB sequential read: prototype over UFS 2.0", "prediction"),
        # Issue 40's rule: a prediction only if no input, fit or choice made for it decides it.
        ("seed004-fig5", "NVMe-ideal over IDE-ideal, sequential read", "derived"),
        ("seed004-fig5", "NVMe-ideal over IDE-ideal, sequential write", "derived"),
        ("seed003-swapin", "SCM read (one 4 KiB page, SCM-400 device model)", "input"),
        ("seed003-swapin", "swap-in fault, total", "derived"),
        ("seed003-swapout", "swap-out time 100 K / 20 K IOPS (c)", "prediction"),
        ("seed003-swapout", "swap-out time nc / c, 5 K IOPS", "prediction"),
        ("seed003-lifetime", "write amount", "derived"),
    ],
)
def test_the_audited_rows_carry_their_label(experiment: str, metric: str, label: str) -> None:
    rows = {row.metric: row for row in reproduce.get(experiment).compare(None)}
    assert rows[metric].label == label


def test_labels_reach_the_json() -> None:
    row = Row("x", "m", "%", 49.0, 49.0, "stated", "calibrated: p fitted to it", "calibrated")
    data = json.loads(json.dumps(row.to_dict()))
    assert data["label"] == "calibrated"
    assert list(data)[:7] == [
        "experiment", "metric", "unit", "paper", "ssdlab", "difference", "abs_difference",
    ]  # fmt: skip


# -- a document value of 0 ---------------------------------------------------------------------


def test_a_document_value_of_zero_has_an_absolute_difference() -> None:
    row = Row("seed000-fig8", "gain", "%", 0.0, 72.9, "stated")
    assert row.difference is None
    assert row.abs_difference == pytest.approx(72.9)
    assert scoreboard.format_difference(row) == "+72.9 pp (absolute)"
    row = Row("x", "m", "MB/s", 0.0, -3.5, "stated")
    assert scoreboard.format_difference(row) == "-3.5 MB/s (absolute)"
    # Elsewhere the relative difference stays the one shown, the absolute one is in the JSON.
    row = Row("x", "m", "MB/s", 200.0, 230.0, "stated")
    assert row.difference == pytest.approx(0.15) and row.abs_difference == pytest.approx(30.0)
    assert scoreboard.format_difference(row) == "+15.0 %"


def test_seed000_fig8_shows_a_gain_where_the_document_says_none() -> None:
    rows = [
        {"status": "ok", "config_name": seed000.PROTOTYPE, "job.bs": chunk,
         "config.interface.dram.buffer_size": buffer,
         seed000.TOTAL_BW: 100.0 if buffer in ("128KiB", "256KiB", "512KiB") else 172.9}
        for buffer in seed000.BUFFERS for chunk in seed000.FIG8_CHUNKS
    ]  # fmt: skip
    out = {row.metric: row for row in seed000.compare_fig8(pl.DataFrame(rows))}
    gain = out["512KiB chunk: best gain from a buffer over 512 KB"]
    assert gain.paper == 0 and gain.difference is None
    assert gain.abs_difference == pytest.approx(72.9)


# -- seed 001: a zero baseline still reports the counts ----------------------------------------


def test_seed001_erase_rows_report_the_counts_when_single_has_none() -> None:
    rows = []
    for setup, (capacity, ports) in seed001.SETUPS.items():
        for trace, erases in (
            ("model:fin1", {"single": 0, "single2x": 0, "dual": 3}),
            ("model:fin2", {"single": 10, "single2x": 9, "dual": 11}),
        ):
            rows.append({
                "status": "ok", "trace.trace": trace, "config.cache.capacity": capacity,
                "config.cache.ports": ports, "ops.write.count": 100,
                "ops.write.latency_us.mean": 50.0, "device.erases": erases[setup],
                "device.host_pages_written": 1000 + erases[setup],
            })  # fmt: skip
    out = {row.metric: row for row in seed001.make_compare("t")(pl.DataFrame(rows))}
    mean = out["dual / single erases, mean over workloads with writes"]
    assert mean.ssdlab == pytest.approx(1.1)  # fin2 only: fin1 has no ratio
    assert "fin1 (stand-in) 0 → 3 erases (no ratio: none in single)" in mean.note
    assert "fin2 (stand-in) 10 → 11 erases, host pages programmed 1,010 → 1,011" in mean.note


def _seed001_table(
    latency: dict[str, dict[str, float]], waits: dict[str, dict[str, int]] | None = None
) -> pl.DataFrame:
    rows = []
    for setup, (capacity, ports) in seed001.SETUPS.items():
        for trace, by_setup in latency.items():
            rows.append({
                "status": "ok", "trace.trace": trace, "config.cache.capacity": capacity,
                "config.cache.ports": ports, "ops.write.count": 100,
                "ops.write.latency_us.mean": by_setup[setup], "device.erases": 10,
            })  # fmt: skip
            if waits is not None:
                rows[-1]["cache.write_waits"] = waits[trace][setup]
    return pl.DataFrame(rows)


def test_seed001_states_per_workload_whether_dual_beats_single2x() -> None:
    # §III: dual outperforms single2x except on gen2 and web1. fin1 agrees, fin2 does not (dual
    # slower), web1 agrees (dual not faster); the shared samples map to fin1 and web1 by name.
    table = _seed001_table({
        "model:fin1,count=10": {"single": 100.0, "single2x": 80.0, "dual": 40.0},
        "model:fin2,count=10": {"single": 100.0, "single2x": 30.0, "dual": 60.0},
        "model:web1,count=10": {"single": 100.0, "single2x": 50.0, "dual": 55.0},
        "@traces/ssdsim_financial1_sample.ascii": {"single": 9.0, "single2x": 8.0, "dual": 4.0},
        "@traces/disksim_websearch_small.trace": {"single": 9.0, "single2x": 5.0, "dual": 4.0},
    })  # fmt: skip
    rows = [r for r in seed001.make_compare("t")(table) if "dual / single2x" in r.metric]
    by = {r.metric.split(":")[0]: r for r in rows if ":" in r.metric}
    assert by["fin1 (stand-in)"].agrees is True
    assert by["fin1 (stand-in)"].ssdlab == pytest.approx(0.5)
    assert by["fin2 (stand-in)"].agrees is False
    assert by["web1 (stand-in)"].agrees is True
    assert by["ssdsim_financial1_sample.ascii"].agrees is True
    assert by["disksim_websearch_small.trace"].agrees is False
    for row in by.values():
        assert row.label == "prediction" and row.paper is None
        assert "§III" in row.basis


def test_seed001_an_equal_latency_holds_no_direction() -> None:
    """Issue 40: web1's "dual not below single2x" held on the WebSearch sample only because no
    write waited in either buffer (1.000): vacuous, so not counted."""
    table = _seed001_table({
        "@traces/disksim_websearch_small.trace": {"single": 9.0, "single2x": 5.0, "dual": 5.0},
    })  # fmt: skip
    (row,) = [
        r
        for r in seed001.make_compare("t")(table)
        if r.metric == "disksim_websearch_small.trace: dual / single2x mean write latency"
    ]
    assert row.ssdlab == 1.0 and row.agrees is None and "vacuous" in row.note
    assert scoreboard.tally([row]).directions == 0


def test_seed001_a_workload_where_no_write_waited_is_vacuous_and_left_out_of_the_mean() -> None:
    """Issue 40: with no write waiting for a line in single2x or dual, the two latencies
    differ by the DRAM's ports alone (here 1.001): the direction is not counted, and the mean
    over workloads takes only the workloads where a write waited."""
    fin1 = "@traces/ssdsim_financial1_sample.ascii"
    table = _seed001_table(
        {
            fin1: {"single": 9.0, "single2x": 3.1, "dual": 3.1031},
            "model:fin2,count=10": {"single": 100.0, "single2x": 50.0, "dual": 40.0},
        },
        waits={
            fin1: {"single": 5, "single2x": 0, "dual": 0},
            "model:fin2,count=10": {"single": 9, "single2x": 4, "dual": 0},
        },
    )
    rows = {r.metric: r for r in seed001.make_compare("t")(table)}
    direction = rows["ssdsim_financial1_sample.ascii: dual / single2x mean write latency"]
    assert direction.ssdlab == pytest.approx(1.001) and direction.agrees is None
    assert "vacuous" in direction.note
    assert rows["fin2 (stand-in): dual / single2x mean write latency"].agrees is True
    mean = rows["dual / single2x mean write latency, mean over workloads with writes"]
    assert mean.ssdlab == pytest.approx(0.8)
    assert "ssdsim_financial1_sample.ascii" in mean.note
    assert scoreboard.tally([direction]).directions == 0


def test_seed001_one_workload_with_erases_counts_its_ratio_once() -> None:
    rows = []
    for setup, (capacity, ports) in seed001.SETUPS.items():
        for trace, erases in (
            ("model:fin1", {"single": 10, "single2x": 9, "dual": 20}),
            ("model:web1", {"single": 0, "single2x": 0, "dual": 0}),
        ):
            rows.append({
                "status": "ok", "trace.trace": trace, "config.cache.capacity": capacity,
                "config.cache.ports": ports, "ops.write.count": 100,
                "ops.write.latency_us.mean": 50.0, "device.erases": erases[setup],
            })  # fmt: skip
    out = {row.metric: row for row in seed001.make_compare("t")(pl.DataFrame(rows))}
    mean = out["dual / single erases, mean over workloads with writes"]
    largest = out["dual / single erases, largest over workloads"]
    assert mean.ssdlab == largest.ssdlab == 2.0
    assert mean.label == "prediction" and largest.label == "derived"
    assert "derived:" in largest.note


def test_seed001_runs_from_the_steady_state() -> None:
    # Erase counts away from preconditioning (issue 14): both experiments start the device at
    # the steady state of random overwrites, not at the GC threshold a fill leaves.
    for name in ("seed001_fig34.toml", "seed001_samples.toml"):
        sweep = tomllib.loads((ROOT / "python" / "ssdlab" / "reproduce" / name).read_text())
        assert sweep["set"]["precondition.fill"] == "steady-state", name


# -- the tally ---------------------------------------------------------------------------------


def test_the_tally_counts_only_predictions() -> None:
    rows = [
        Row("a", "hit", "MB/s", 100.0, 110.0, "stated"),  # prediction, +10 %: within
        Row("a", "edge", "MB/s", 100.0, 85.0, "stated"),  # prediction, −15 %: within
        Row("a", "miss", "MB/s", 100.0, 160.0, "stated"),  # prediction, +60 %: not within
        Row("a", "no value", "MB/s", 100.0, None, "stated"),  # prediction, not run
        Row("a", "zero", "%", 0.0, 5.0, "stated"),  # prediction against 0
        Row("a", "way", "×", None, 0.5, "stated as below 1", agrees=True),  # a direction
        Row("a", "fit", "MB/s", 95.8, 95.4, "stated", "calibrated: x", "calibrated"),
        Row("a", "same", "MB/s", 250.0, 228.0, "stated", "input: y", "input"),
        Row("a", "share", "%", 82.0, 93.0, "stated", "derived: z", "derived"),
        Row("a", "bar", "MB/s", None, 12.0, "not stated (bars only)"),  # not compared
    ]
    count = scoreboard.tally(rows)
    assert (count.predictions, count.within) == (3, 2)
    assert (count.zero_document, count.directions, count.directions_agree) == (1, 1, 1)
    assert count.unscored == 1
    assert count.labels == {"prediction": 6, "calibrated": 1, "input": 1, "derived": 1}
    line = count.line()
    assert line == (
        "predictions within 15 %: 2 of 3 (not counted: 1 calibrated, 1 input, 1 derived;"
        " 1 prediction against a document value of 0, by absolute difference only;"
        " directions: 1 of 1 match; 1 prediction with no number to score)"
    )


# -- the scoreboard ----------------------------------------------------------------------------


def _fake_compare(table: object) -> list[Row]:
    assert table is None  # no sweep
    return [
        Row("fake", "read | bandwidth", "MB/s", 100.0, 105.0, "stated"),
        Row("fake", "gain over 512 KB", "%", 0.0, 12.5, "stated"),
        Row("fake", "faster", "×", None, 0.8, "stated as above 1 (§6.5)", agrees=False),
        Row("fake", "leakage", "×", 0.51, 0.51, "derived", "calibrated: solved", "calibrated"),
        Row("fake", "a bar", "MB/s", None, 7.0, "not stated (bars only)"),
    ]


FAKE = (
    Experiment(name="fake-a", document="seed 009_abc.txt", title="t", target="Fig. 1",
               summary="s", compare=_fake_compare),
    Experiment(name="fake-b", document="seed 008_def.txt", title="t", target="Fig. 2",
               summary="s", compare=_fake_compare),
)  # fmt: skip


@pytest.fixture
def fake_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reproduce, "_registry", lambda: {e.name: e for e in FAKE})


def test_markdown_is_in_the_format_the_doc_check_accepts(fake_registry: None,
                                                         tmp_path: Path) -> None:  # fmt: skip
    runs = [reproduce.run_experiment(e.name, tmp_path / e.name) for e in FAKE]
    board = scoreboard.entries(runs)
    assert len(board) == 8  # the bar without a document value is left out
    text = scoreboard.markdown(board)
    lines = text.splitlines()
    assert lines[0] == "| " + " | ".join(scoreboard.HEADERS) + " |"
    assert lines[2] == (
        "| seed 009 | Fig. 1 | read \\| bandwidth | 100 MB/s | 105 MB/s | +5.0 % | – | prediction |"
    )
    assert "| 0 % | 12.5 % | +12.5 pp (absolute) | – | prediction |" in lines[3]
    assert lines[4].endswith("| above 1 | 0.8 × | does not match | – | prediction |")
    assert lines[-1].startswith("predictions within 15 %: 2 of 2 (not counted: 2 calibrated,")
    doc = f"intro\n{scoreboard.BEGIN}\nold\n{scoreboard.END}\nafter\n"
    spliced = scoreboard.splice(doc, text)
    assert spliced.startswith("intro\n") and spliced.endswith(f"{scoreboard.END}\nafter\n")
    assert scoreboard.check_section(spliced) == []
    broken = spliced.replace("| prediction |", "| guess |", 1)
    assert any("unknown label 'guess'" in p for p in scoreboard.check_section(broken))
    assert scoreboard.check_section("no markers") != []


def test_the_doc_carries_the_scoreboard_in_the_format_the_command_writes() -> None:
    text = (ROOT / "docs" / "experiments.md").read_text(encoding="utf-8")
    assert scoreboard.check_section(text) == []


def test_reproduce_all_summary(fake_registry: None, tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    rows = tmp_path / "rows.json"
    code = cli.main(["reproduce", "--all", "--summary", "--out", str(tmp_path / "out"),
                     "--json", str(rows), "--quiet"])  # fmt: skip
    assert code == 0
    assert capsys.readouterr().out == ""
    assert len(json.loads(rows.read_text())) == 10  # both experiments' rows
    assert (tmp_path / "out" / "fake-a" / "comparison.json").is_file()
    assert (tmp_path / "out" / "fake-b" / "comparison.json").is_file()

    code = cli.main(["reproduce", "--all", "--summary", "--out", str(tmp_path / "out")])
    shown = capsys.readouterr().out
    assert code == 0
    needles = ("fidelity scoreboard", "document value", "label", "seed 009", "seed 008",
               "calibrated", "predictions within 15 %: 2 of 2")  # fmt: skip
    for needle in needles:
        assert needle in shown, needle

    code = cli.main(["reproduce", "--all", "--summary", "--markdown", "--out",
                     str(tmp_path / "out")])  # fmt: skip
    markdown = capsys.readouterr().out
    assert code == 0
    doc = f"{scoreboard.BEGIN}\n{scoreboard.END}\n"
    assert scoreboard.check_section(scoreboard.splice(doc, markdown)) == []


def test_one_reproduction_prints_labels_and_its_tally(
    fake_registry: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["reproduce", "fake-a", "--out", str(tmp_path)]) == 0
    shown = capsys.readouterr().out
    assert "calibrated" in shown and "+12.5 pp" in shown
    assert "predictions within 15 %: 1 of 1 (not counted: 1 calibrated" in shown


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["reproduce", "fake-a", "--all"], "NAME or --all"),
        (["reproduce", "--all", "--list"], "--all or --list"),
        (["reproduce", "--all", "--markdown"], "--markdown: expected together with --summary"),
        (["reproduce"], "missing NAME"),
    ],
)
def test_reproduce_all_mistakes(fake_registry: None, args: list[str], needle: str,
                                capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_seed004_ide_loss_is_derived_from_the_ratio_rows() -> None:
    rows = {row.metric: row for row in seed004.compare_fig5(None)}
    for rw in ("read", "write"):
        loss = rows[f"bandwidth lost to IDE, sequential {rw}"]
        assert loss.label == "derived"
        assert f"NVMe-ideal over IDE-ideal, sequential {rw}" in loss.note
