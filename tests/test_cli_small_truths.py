"""What a newcomer meets in the first hour and should find true (issue 45, point 14): help text
that keeps its words, figures in units that read, no figure where there is none, and an example
for every file format the README names."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

import ssdlab
from conftest import run_cli
from ssdlab.cli import app as cli

ROOT = Path(__file__).resolve().parent.parent
JOB_EXAMPLE = ROOT / "examples" / "jobs" / "randrw.toml"


def _all_commands(command: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    for name, sub in getattr(command, "commands", {}).items():
        found += _all_commands(sub, (*path, name))
    return found


def test_help_off_a_terminal_keeps_every_word_and_bracket() -> None:
    # Piped help went through rich at 80 columns: long words were cut with "…" and "[hfsl]"
    # was read as markup and dropped.
    proc = run_cli("run", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "[hfsl]" in proc.stdout and "[global]" in proc.stdout
    assert "\\[" not in proc.stdout
    command = cli.typer.main.get_command(cli.app)
    for path in _all_commands(command):
        proc = run_cli(*path, "--help")
        assert proc.returncode == 0, (path, proc.stderr)
        assert "…" not in proc.stdout, (path, proc.stdout)


def test_help_on_a_terminal_keeps_its_brackets() -> None:
    # On a terminal rich draws the help: the brackets are escaped for it, not eaten.
    command = cli.typer.main.get_command(cli.app)
    cli._prepare_help(command, terminal=True)
    run = command.commands["run"]  # type: ignore[attr-defined]
    helps = {p.name: p.help for p in run.params}
    from rich.text import Text

    assert "[hfsl]" in Text.from_markup(helps["power_cut_event"]).plain
    assert "[global]" in Text.from_markup(helps["fio_file"]).plain


def test_config_show_leaves_out_what_the_interface_kind_never_reads(tmp_path: Path) -> None:
    proc = run_cli("config", "show", "small-tlc", "--interface", "sata")
    assert proc.returncode == 0, proc.stderr
    shown = tomllib.loads(proc.stdout)
    interface = shown["interface"]
    assert interface["kind"] == "sata"
    for pcie in ("max_payload", "tlp_overhead", "arbitration_burst"):
        assert pcie not in interface, pcie
    assert set(k for k, v in interface.items() if isinstance(v, dict)) == {"ata"}
    # What is left out has defaults: the text still loads as the same device.
    path = tmp_path / "sata.toml"
    path.write_text(proc.stdout)
    again = ssdlab.Config.load(path).to_dict()
    resolved = ssdlab.Config.load("small-tlc", ['interface.kind="sata"']).to_dict()
    assert again["interface"]["kind"] == "sata"
    assert again["interface"]["ata"] == resolved["interface"]["ata"]
    nvme = tomllib.loads(run_cli("config", "show", "small-tlc").stdout)["interface"]
    assert "max_payload" in nvme and "tlp_overhead" in nvme
    assert not any(isinstance(v, dict) for v in nvme.values())


def test_a_write_amplification_without_writes_is_not_a_figure() -> None:
    proc = run_cli("run", "small-tlc", "--rw", "randread", "--io-count", "200")
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if "write amplification" in line)
    assert "–" in row and "0.000" not in row, row
    written = run_cli("run", "small-tlc", "--rw", "randwrite", "--io-count", "200").stdout
    row = next(line for line in written.splitlines() if "write amplification" in line)
    assert re.search(r"\d\.\d{3}", row), row


@pytest.mark.parametrize(
    ("years", "shown"),
    [
        (12.25, "12.2 years"),
        (4.4 / 365.25, "4.4 days"),
        (5.0 / (365.25 * 24), "5.0 hours"),
        (42 / (365.25 * 86400), "42.0 s"),
        (None, "-"),
    ],
)
def test_a_wear_out_time_reads_in_a_unit_that_fits(years: float | None, shown: str) -> None:
    from ssdlab.cli.table import fmt_years

    assert fmt_years(years) == shown


def test_a_pcm_wear_out_in_days_does_not_read_as_zero_years() -> None:
    proc = run_cli("run", "pcm-micron-p8p", "--rw", "randwrite", "--io-count", "2000")
    assert proc.returncode == 0, proc.stderr
    assert "0.0 years" not in proc.stdout
    assert re.search(r"first wear-out in [\d.,]+ (days|hours|s)\b", proc.stdout), proc.stdout


def test_nvme_smart_log_after_a_job_runs_on_the_preconditioned_drive() -> None:
    # `ssdlab run small-tlc` fills the drive first ([precondition]); the register-level
    # controller now does the same (Device::precondition_with; tests/test_nvme.py and
    # nvme_regs' tests check the filled drive), so there is no "not applied" note to give.
    proc = run_cli("nvme", "smart-log", "small-tlc", "--job", JOB_EXAMPLE)
    assert proc.returncode == 0, proc.stderr
    assert "not applied" not in proc.stderr and proc.stderr == "", proc.stderr
    assert "data_units_written" in proc.stdout
    fresh = run_cli("nvme", "smart-log", "seed004-64ch-mlc")
    assert fresh.returncode == 0 and fresh.stderr == "", fresh.stderr


def _example_fields(text: str) -> dict[str, object]:
    """The example's fields, its commented-out ones (``# key = value``) included."""
    lines = []
    for line in text.splitlines():
        match = re.match(r"^#\s*([a-z_]+\s*=.*)$", line)
        lines.append(match.group(1) if match else line)
    return tomllib.loads("\n".join(lines))


def test_the_job_example_runs_and_every_field_is_documented(tmp_path: Path) -> None:
    proc = run_cli("run", "small-tlc", "--job", JOB_EXAMPLE, "--io-count", "500", "-q")
    assert proc.returncode == 0, proc.stderr
    fields = _example_fields(JOB_EXAMPLE.read_text())
    everything = tmp_path / "all.toml"
    # JSON spells strings, numbers and booleans as TOML does.
    everything.write_text("\n".join(f"{k} = {json.dumps(v)}" for k, v in fields.items()))
    ssdlab.Job.load(everything)  # every field the example names is one the reader takes
    doc = (ROOT / "docs" / "jobs.md").read_text()
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", doc, flags=re.MULTILINE))
    assert documented == set(fields), documented ^ set(fields)
    assert set(ssdlab.Job(rw="read").to_dict()) <= documented
    assert "docs/jobs.md" in (ROOT / "README.md").read_text()


def test_serve_log_makes_its_directory_as_json_does(tmp_path: Path) -> None:
    from nbd_rig import CMD_READ, connect, go, recv, reply, request, start_server

    log = tmp_path / "not" / "made" / "yet" / "session.log"
    server = start_server(tmp_path, "--clock", "logical", "--log", str(log))
    try:
        # One read, answered: the server is in its loop before it is stopped.
        s = connect(server.socket_path)
        go(s)
        request(s, CMD_READ, 1, 0, 512)
        assert reply(s) == (0, 1)
        assert recv(s, 512) == bytes(512)
        s.close()
    finally:
        code, _, err = server.stop()
    assert code == 0, err
    assert log.read_text().startswith("# ssdlab session log v1\n")


def test_bench_by_default_runs_gc_and_prints_its_figures(tmp_path: Path) -> None:
    # The README's benchmark measures a drive in long use: its default run must collect. At the
    # old default (100,000) the preconditioned planes never left their open block: 0 GC runs.
    # (The real benchmark: a 1 TiB drive preconditioned to the steady state, 2 GB of map.)
    out = tmp_path / "bench.json"
    proc = run_cli("bench", "--json", out, timeout=900)
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(out.read_text())
    assert figures["io_count"] == 1_000_000
    assert figures["gc_runs"] > 0 and figures["write_amplification"] > 1
    assert figures["requests_per_s"] > 0
    shown = {line.split()[0]: line.split()[-1] for line in proc.stdout.splitlines() if line}
    assert int(shown["gc_runs"].replace(",", "")) == figures["gc_runs"]
    assert shown["requests_per_s"].replace(",", "").isdigit()
    assert "write_amplification" in shown and "cached_mapping.requests_per_s" in shown
    # Off a terminal its progress is a line every few seconds (issue 45, point 11), of the
    # preconditioning or of the run; nothing else goes to stderr. (The preconditioning of the
    # 1 TiB drive, in closed form, now takes well under the 5 s before a first line.)
    for line in proc.stderr.splitlines():
        assert line.startswith(("preconditioning the drive:", "benchmark run")), proc.stderr
