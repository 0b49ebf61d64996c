"""Calibrated rows are guarded (issue 40 point 1).

Every calibrated row with a document figure has its target and tolerance as data
(``ssdlab.reproduce.calibration``); the guard runs the few reproduction points each needs, at
the document's setup, and fails when a figure has left its tolerance, naming the row, the
fitted parameter, the target and the figure now.
"""

from __future__ import annotations

import time

import pytest

from ssdlab.reproduce import calibration, experiments, run_experiment


def _calibrated_rows() -> list[tuple[str, str, float | None]]:
    """Every calibrated row of the reproductions that need no runs, and the rows a table with
    no runs still lists (their metric does not depend on the runs)."""
    out = []
    for experiment in experiments():
        for row in experiment.compare(None):
            if row.label == "calibrated":
                out.append((row.experiment, row.metric, row.paper))
    return out


def test_every_calibrated_row_with_a_document_figure_has_a_guard() -> None:
    missing = [
        f"{experiment} / {metric!r}"
        for experiment, metric, paper in _calibrated_rows()
        if paper is not None and calibration.for_row(experiment, metric) is None
    ]
    assert not missing, "calibrated rows without a target and tolerance: " + "; ".join(missing)


def test_every_guard_names_a_row_its_target_and_a_reason_for_a_wide_tolerance() -> None:
    rows = {(e, m): p for e, m, p in _calibrated_rows()}
    for guard in calibration.calibrations():
        assert (guard.experiment, guard.metric) in rows, guard.name
        assert rows[guard.experiment, guard.metric] == pytest.approx(guard.target), guard.name
        if guard.tolerance != calibration.DEFAULT_TOLERANCE:
            assert guard.why_tolerance, f"{guard.name}: a tolerance other than 2 % needs a reason"
    names = [guard.name for guard in calibration.calibrations()]
    assert len(names) == len(set(names))


def test_calibrated_figures_stay_within_their_tolerance() -> None:
    """The guard itself: every calibrated figure, measured now."""
    start = time.monotonic()
    failures = [
        guard.failure(figure)
        for guard, figure in calibration.measure_all(calibration.calibrations(), workers=2)
        if not guard.within(figure)
    ]
    print(f"calibration guards: {time.monotonic() - start:.1f} s")
    assert not failures, "\n".join(failures)


def test_a_moved_parameter_fails_the_guard_with_the_refit_command() -> None:
    """A deliberate change (the seed 000 prototype's DMA set-up, fitted to the 3.8 % overhead,
    doubled) takes the figure out of its tolerance, and the message says what to do."""
    guard = calibration.find("seed000-overhead-512k")
    ((_, figure),) = calibration.measure_all([guard], ["interface.dram.dma_setup='16us'"])
    assert not guard.within(figure)
    message = guard.failure(figure)
    assert "seed000-fig6 / 'protocol overhead, 512 KB chunk'" in message
    assert "interface.dram.dma_setup" in message and "3.8" in message
    assert "refit (scripts/fidelity.py --refit seed000-overhead-512k) or re-model" in message


def test_a_calibrated_row_carries_its_tolerance_in_the_json(tmp_path) -> None:
    reproduction = run_experiment("seed002-table7", tmp_path / "t7")
    rows = {row.metric: row.to_dict() for row in reproduction.rows}
    read = rows["NAND read of a 2048 B page"]
    assert read["tolerance"] == 0.02 and read["fitted"] == "nand.timing.read"
    assert rows["NAND block erase"]["tolerance"] is None


# -- the refit --------------------------------------------------------------------------------


def _fake(tmp_path, figure_of) -> calibration.Calibration:  # type: ignore[no-untyped-def]
    """A calibration whose figure is a known function of its value (an oracle for the search)
    and whose value and mentions live in files under ``tmp_path``."""
    (tmp_path / "preset.toml").write_text(
        "# fitted: 2,370 MiB/s;\n# 152 gives 2,370.8)\nkib_instructions = 152\nother = 152\n"
    )
    (tmp_path / "doc.md").write_text("`kib_instructions = 152` (2,370 MiB/s; 152 gives 2,370.8)\n")

    def measure(overrides):  # type: ignore[no-untyped-def]
        (override,) = overrides
        return figure_of(float(override.split("=")[1]))

    gives = r"(?P<value>\d+) gives (?P<figure>[\d,.]+)\)"
    return calibration.Calibration(
        name="fake",
        experiment="seed004-fig5",
        metric="NVMe-ideal sequential read bandwidth",
        parameter="host.kib_instructions",
        where="preset.toml",
        target=2370.0,
        measure=measure,
        search=(0, 1000),
        integer=True,
        value_pattern=r"(?m)^kib_instructions = (?P<value>\d+)",
        mentions=(
            calibration.Mention("preset.toml", gives),
            calibration.Mention("doc.md", gives),
            calibration.Mention("doc.md", r"`kib_instructions = (?P<value>\d+)`"),
        ),
    )


def test_a_refit_bisects_to_the_nearest_value_and_rewrites_value_note_and_docs(tmp_path) -> None:
    # 1 MiB at a fixed time plus K instructions per KiB at 1 GHz, as the host model charges it.
    def bandwidth(k: float) -> float:
        return 1.0 / (264e-6 + k * 1024 / 1e9)

    lines: list[str] = []
    fake = _fake(tmp_path, bandwidth)
    result = calibration.refit(fake, report=lines.append, root=tmp_path)
    # The oracle: the integer whose figure is nearest the target, by brute force.
    best = min(range(1001), key=lambda k: abs(bandwidth(k) - 2370.0))
    assert result.new == best and result.old == 152
    assert len(result.steps) <= 13 and any("kib_instructions = 0:" in line for line in lines)
    preset = (tmp_path / "preset.toml").read_text()
    assert f"kib_instructions = {best}\n" in preset and "other = 152" in preset
    assert f"{best} gives {bandwidth(best):,.1f})" in preset
    doc = (tmp_path / "doc.md").read_text()
    assert (
        doc == f"`kib_instructions = {best}` (2,370 MiB/s; {best} gives {bandwidth(best):,.1f})\n"
    )


def test_a_refit_refuses_a_target_its_range_cannot_reach(tmp_path) -> None:
    fake = _fake(tmp_path, lambda k: 5000.0 - k)  # never as low as 2,370 over 0..1000
    with pytest.raises(RuntimeError, match="not between .* re-model"):
        calibration.refit(fake, report=lambda _: None, root=tmp_path)
    assert "kib_instructions = 152" in (tmp_path / "preset.toml").read_text()


def test_a_calibration_without_a_search_range_is_not_bisected() -> None:
    with pytest.raises(ValueError, match="cannot be bisected.*configs/seed000-lpddr3-dramif"):
        calibration.refit(calibration.find("seed000-overhead-512k"), report=lambda _: None)
