"""The `ssdlab` command, run as a user runs it: in a subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

import ssdlab
from conftest import assert_user_error, run_cli, wait_for_stderr, without_wall
from ssdlab.cli import app as cli

SMALL_RUN = ["--rw", "randrw", "--rwmixread", "70", "--bs", "4KiB", "--iodepth", "8",
             "--io-count", "2000"]  # fmt: skip


def test_demo() -> None:
    proc = run_cli("demo")
    assert proc.returncode == 0, proc.stderr
    assert "demo" in proc.stdout
    assert "read" in proc.stdout and "write" in proc.stdout
    assert "write amplification" in proc.stdout
    assert proc.stderr == ""  # no progress bar when stderr is not a terminal


def test_presets(preset_name: str) -> None:
    proc = run_cli("presets")
    assert proc.returncode == 0, proc.stderr
    for preset in ssdlab.presets():
        assert preset["name"] in proc.stdout


def test_version() -> None:
    proc = run_cli("--version")
    assert proc.returncode == 0
    assert ssdlab.__version__ in proc.stdout


def test_no_arguments_prints_help() -> None:
    proc = run_cli()
    assert proc.returncode == 0
    assert "run" in proc.stdout and "demo" in proc.stdout


def test_help_loads_neither_numpy_nor_the_sweep_machinery() -> None:
    # What `ssdlab --help` imports is what every command pays at start-up: numpy, polars and
    # the sweep executors load only where used. Checked by module, not by a timing.
    code = (
        "import sys\n"
        "from ssdlab.cli.app import main\n"
        "sys.argv = ['ssdlab', '--help']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('numpy', 'polars', 'matplotlib', 'ssdlab.experiments')\n"
        "heavy = [m for m in heavy if m in sys.modules]\n"
        "print('loaded:', heavy)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "loaded: []" in proc.stdout, proc.stdout[-300:]
    # The lazy names still resolve.
    assert ssdlab.Sweep.__name__ == "Sweep" and callable(ssdlab.run_sweep)


def test_config_show(preset_name: str) -> None:
    proc = run_cli("config", "show", preset_name, "--set", "ftl.over_provisioning=0.2")
    assert proc.returncode == 0, proc.stderr
    shown = tomllib.loads(proc.stdout)
    assert shown["meta"]["name"] == preset_name
    assert shown["ftl"]["over_provisioning"] == 0.2


def test_config_schema_describes_every_section(tmp_path: Path) -> None:
    proc = run_cli("config", "schema")
    assert proc.returncode == 0, proc.stderr
    schema = json.loads(proc.stdout)
    for section in ("nand", "ftl", "interface", "host", "cache", "precondition"):
        assert section in schema["properties"], section
    assert schema["$defs"]["InterfaceKind"]["enum"][0] == "nvme"
    out = tmp_path / "sub" / "schema.json"
    assert run_cli("config", "schema", "--out", str(out)).returncode == 0
    assert json.loads(out.read_text()) == schema


def test_config_show_file_round_trips(tmp_path: Path, preset_name: str) -> None:
    shown = run_cli("config", "show", preset_name).stdout
    path = tmp_path / "copy.toml"
    path.write_text(shown)
    again = run_cli("config", "show", path)
    assert again.returncode == 0, again.stderr
    assert again.stdout == shown


def test_config_preset(preset_name: str) -> None:
    proc = run_cli("config", "preset", preset_name)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip("\n") == ssdlab.preset_toml(preset_name).rstrip("\n")


def test_run_with_flags(preset_name: str) -> None:
    proc = run_cli("run", preset_name, *SMALL_RUN)
    assert proc.returncode == 0, proc.stderr
    assert "read" in proc.stdout and "write amplification" in proc.stdout


def test_run_shows_the_steady_state_preconditioning_reached(preset_name: str) -> None:
    proc = run_cli(
        "run", preset_name, *SMALL_RUN, "--set", 'precondition.fill="steady-state"', "--seed", "2"
    )
    assert proc.returncode == 0, proc.stderr
    assert "steady-state WAF" in proc.stdout and "× capacity" in proc.stdout
    plain = run_cli("run", preset_name, *SMALL_RUN)
    assert "steady-state WAF" not in plain.stdout


def test_run_json_is_deterministic(tmp_path: Path, preset_name: str) -> None:
    outputs = []
    for name in ("a.json", "b.json"):
        out = tmp_path / "out" / name
        proc = run_cli("run", preset_name, *SMALL_RUN, "--seed", "5", "--json", out, "--quiet")
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == ""
        outputs.append(out.read_text())
    first, second = outputs
    assert without_wall(first) == without_wall(second)
    # Byte for byte too, up to the wall-clock figures.
    assert first[: first.index('"wall"')] == second[: second.index('"wall"')]
    data = json.loads(first)
    assert data["seed"] == 5 and data["total"]["count"] == 2000


def test_run_json_equals_api(tmp_path: Path, preset_name: str) -> None:
    out = tmp_path / "cli.json"
    proc = run_cli("run", preset_name, *SMALL_RUN, "--set", "ftl.gc.policy=cost-benefit",
                   "--seed", "9", "--json", out, "-q")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    config = ssdlab.Config.load(preset_name).set("ftl.gc.policy", "cost-benefit")
    job = ssdlab.Job(rw="randrw", rwmixread=70, bs="4KiB", iodepth=8, io_count=2000)
    api = ssdlab.run(config, job, seed=9)
    assert without_wall(out.read_text()) == without_wall(api.to_json())


def test_run_with_job_file_and_override(tmp_path: Path, preset_name: str) -> None:
    job = tmp_path / "job.toml"
    job.write_text('name = "from-file"\nrw = "randwrite"\nbs = "4KiB"\niodepth = 4\n'
                   "io_count = 1000\n")  # fmt: skip
    out = tmp_path / "r.json"
    proc = run_cli("run", preset_name, "--job", job, "--iodepth", "16", "--json", out)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["job"]["name"] == "from-file"
    assert data["job"]["rw"] == "randwrite"
    assert data["job"]["iodepth"] == 16  # the flag wins over the file
    assert data["ops"]["write"]["count"] == 1000


def test_run_with_block_size_mix(tmp_path: Path, preset_name: str) -> None:
    out = tmp_path / "mix.json"
    proc = run_cli("run", preset_name, "--rw", "randwrite", "--bs", "4KiB:70,16KiB:30",
                   "--io-count", "1000", "--json", out, "-q")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["ops"]["write"]["count"] == 1000


def test_json_to_stdout(preset_name: str) -> None:
    proc = run_cli("run", preset_name, *SMALL_RUN, "--json", "-")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["schema"] == "ssdlab.result/1"


def test_bench_prints_whatever_the_core_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The real benchmark preconditions a 1 TiB device (tens of seconds): stand in for it, and
    # check only what the command does with the figures.
    figures = '{\n  "requests_per_s": 1234567.5,\n  "runs": {"gc": 3},\n  "note": "[b]x[/b]"\n}'
    calls = []

    def fake_bench(io_count: int, seed: int, progress: object = None) -> str:
        calls.append((io_count, seed))
        return figures

    monkeypatch.setattr(cli._core, "bench", fake_bench)
    out = tmp_path / "bench.json"
    assert cli.main(["bench", "--io-count", "500", "--seed", "3", "--json", str(out)]) == 0
    assert calls == [(500, 3)]
    assert out.read_text() == figures
    shown = capsys.readouterr().out
    for needle in ("requests_per_s", "1,234,568", "runs.gc", "[b]x[/b]"):
        assert needle in shown


# -- bad input: one line, exit 2, no traceback ------------------------------------------------


@pytest.fixture(scope="module")
def broken_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("bad")
    preset = ssdlab.preset_toml("small-tlc")
    files = {
        "malformed": ("malformed.toml", "[meta]\nname = 'x'\n[nand\nchannels = 4\n"),
        "unknown_key": ("unknown.toml", "warp_drive = true\n" + preset),
        "bad_job": ("bad-job.toml", 'rw = "randwrite"\niodepth = "deep"\n'),
    }
    paths = {}
    for key, (name, text) in files.items():
        paths[key] = base / name
        paths[key].write_text(text)
    return paths


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["run", "no-such-dir/missing.toml", *SMALL_RUN], ["missing.toml"]),
        (["run", "no-such-preset", *SMALL_RUN], ["no-such-preset"]),
        (["run", "small-tlc", "--set", "ftl.warp_drive=1", *SMALL_RUN], ["warp_drive"]),
        (["run", "small-tlc", "--set", "ftl.over_provisioning=0.01", *SMALL_RUN],
         ["over_provisioning"]),
        (["run", "small-tlc", "--set", "nand.channels=0", *SMALL_RUN], ["nand.channels"]),
        (["run", "small-tlc", "--set", "over_provisioning", *SMALL_RUN], ["--set"]),
        (["run", "small-tlc", "--set", "=3", *SMALL_RUN], ["--set"]),
        (["run", "small-tlc", "--rw", "randread", "--size", "100PiB", "--io-count", "10"],
         ["size"]),
        (["run", "small-tlc", "--rw", "sideways", "--io-count", "10"], ["rw"]),
        (["run", "small-tlc", "--rw", "read", "--iodepth", "deep"], ["iodepth"]),
        (["run", "small-tlc", "--rw", "read", "--ioengine", "foo"],
         ["ioengine", "foo", "posixaio"]),
        (["run", "small-tlc", "--rw", "read", "--iodepth", "4", "--iodepth-low", "99"],
         ["iodepth_low", "99", "1 to iodepth (4)"]),
        (["run", "small-tlc", "--rw", "read", "--iodepth", "4", "--iodepth-batch", "8"],
         ["iodepth_batch", "8", "1 to iodepth (4)"]),
        (["run", "small-tlc", "--rw", "read", "--bs", "4KiB:lots"], ["--bs"]),
        (["run", "small-tlc", "--rw", "read", "--seed", "-1"], ["seed"]),
        (["run", "small-tlc", "--job", "no-such-job.toml"], ["no-such-job.toml"]),
        (["run", "small-tlc", "--rw", "read", "--no-such-flag"], ["--no-such-flag"]),
        (["run"], ["CONFIG"]),
        (["config", "show", "no-such-preset"], ["no-such-preset"]),
        (["config", "show", "small-tlc", "--set", "nonsense"], ["--set"]),
        (["config", "preset", "no-such-preset"], ["no-such-preset"]),
        (["frobnicate"], ["frobnicate"]),
    ],
)  # fmt: skip
def test_user_errors(args: list[str], needles: list[str], tmp_path: Path) -> None:
    assert_user_error(run_cli(*args, cwd=tmp_path), *needles)


def test_run_help_names_the_engine_flags() -> None:
    proc = run_cli("run", "--help")
    assert proc.returncode == 0, proc.stderr
    for flag in ("--ioengine", "--iodepth-batch", "--iodepth-low", "posixaio"):
        assert flag in proc.stdout


def _read_of(tmp_path: Path, *flags: str) -> dict:
    out = tmp_path / f"{'_'.join(flags) or 'default'}.json"
    proc = run_cli("run", "small-tlc", "--rw", "randread", "--io-count", "300",
                   "--iodepth", "16", *flags, "--json", out, "-q")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


def test_run_engine_flags_reach_the_job_and_change_the_depth(tmp_path: Path) -> None:
    libaio = _read_of(tmp_path)
    psync = _read_of(tmp_path, "--ioengine", "psync")
    posixaio = _read_of(tmp_path, "--ioengine", "posixaio")
    low = _read_of(tmp_path, "--iodepth-low", "4", "--iodepth-batch", "4")
    assert psync["job"]["ioengine"] == "psync"
    assert (low["job"]["iodepth_low"], low["job"]["iodepth_batch"]) == (4, 4)
    # One request at a time (psync; posixaio's one descriptor) against 16 in flight.
    assert psync["ops"]["read"]["iops"] < libaio["ops"]["read"]["iops"] / 3
    assert posixaio["ops"]["read"]["iops"] < libaio["ops"]["read"]["iops"] / 3
    # posixaio's 16 wait behind the running one and count from their submission.
    mean_us = [r["ops"]["read"]["latency_us"]["mean"] for r in (posixaio, psync)]
    assert mean_us[0] > 5 * mean_us[1]
    # Draining to 4 before refilling keeps fewer in flight than a full queue.
    assert low["ops"]["read"]["iops"] < libaio["ops"]["read"]["iops"]


@pytest.mark.parametrize(
    ("key", "needles"),
    [("malformed", ["malformed.toml", "line 3"]), ("unknown_key", ["unknown.toml", "warp_drive"])],
)
def test_bad_config_files(broken_files: dict[str, Path], key: str, needles: list[str]) -> None:
    assert_user_error(run_cli("run", broken_files[key], *SMALL_RUN), *needles)
    assert_user_error(run_cli("config", "show", broken_files[key]), *needles)


def test_bad_job_file(broken_files: dict[str, Path]) -> None:
    assert_user_error(run_cli("run", "small-tlc", "--job", broken_files["bad_job"]), "iodepth")


def test_unwritable_json_output(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    proc = run_cli("run", "small-tlc", *SMALL_RUN, "--json", blocker / "out.json", "-q")
    assert_user_error(proc, "file")


# -- Ctrl-C -----------------------------------------------------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_interrupt_exits_130() -> None:
    def restore_sigint() -> None:
        # A shell running us in the background may have ignored SIGINT; a user's shell has not.
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    proc = subprocess.Popen(
        [sys.executable, "-m", "ssdlab", "run", "small-tlc", "--rw", "randwrite", "--iodepth",
         "32", "--io-count", "50000000", "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        preexec_fn=restore_sigint, env=dict(os.environ),
    )  # fmt: skip
    try:
        time.sleep(2.0)  # past start-up, into the run
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    # What completed before the stop is kept (issue 45, point 10): said on stderr (-q: no table).
    lines = stderr.strip().splitlines()
    assert lines[-1] == "interrupted", stderr
    assert lines[0].startswith("partial result: interrupted by SIGINT (Ctrl-C),"), stderr
    assert "Traceback" not in stderr


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("what", [["--rw", "randwrite", "--io-count", "50000000"],
                                  ["--trace", "model:financial1,count=50000000"]],
                         ids=["job", "trace"])  # fmt: skip
def test_an_interrupted_run_prints_and_writes_what_it_measured(
    tmp_path: Path, signum: int, what: list[str]
) -> None:
    """Ctrl-C or SIGTERM in the middle of a run lost everything it had measured (issue 45,
    point 10); now the result of the requests completed so far is printed and written, marked
    partial with the reason, as fio and `ssdlab serve` do, and the exit is still 130."""
    out = tmp_path / "deep" / "partial.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ssdlab", "run", "small-tlc", "--iodepth", "32", *what,
         "--json", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), env=dict(os.environ),
    )  # fmt: skip
    try:
        # Past start-up and preconditioning, into the run: its first progress line.
        before = wait_for_stderr(proc, "simulating: ")
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=60)
        stderr = "".join(before) + stderr
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    reason = "terminated by SIGTERM" if signum == signal.SIGTERM else "interrupted by SIGINT"
    assert f"partial result: {reason}" in stderr and stderr.strip().endswith("interrupted")
    data = json.loads(out.read_text())
    assert data["partial"]["reason"].startswith(reason)
    assert data["sim"]["stop_reason"] == "interrupted"
    assert 0 < data["sim"]["requests"] < 50_000_000
    assert data["total"]["count"] > 0
    assert "stop: interrupted" in stdout, stdout


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize(
    "args",
    [
        ["trace", "generate", "financial1,count=1000000000", "-o", "{tmp}/t.disksim.gz"],
        ["trace", "generate", "financial1,count=1000000000", "-o", "{tmp}/t.disksim"],
        ["nvme", "smart-log", "small-tlc", "--job", "{tmp}/long.toml"],
        # Issue 45, defect 3: the paging model looked for no signal (8.5 to 9 s after Ctrl-C).
        [
            "swap",
            "seed003-scm-400",
            "--memory",
            "1GiB",
            "--swap-size",
            "1GiB",
            "--workload",
            "pc-mix",
            "--set",
            "swap.pc_mix.rounds=160",
        ],
    ],
    ids=["generate-gz", "generate", "nvme-smart-log-job", "swap"],
)
def test_long_commands_stop_on_interrupt(args: list[str], tmp_path: Path) -> None:
    """Each of these ran on for 30 s to minutes after Ctrl-C (issue 15, defect 6): the core's
    loop never looked for a signal. Now each stops within a fraction of a second."""
    (tmp_path / "long.toml").write_text('rw = "randread"\nbs = "4KiB"\nruntime = "3600s"\n')
    proc = subprocess.Popen(
        [sys.executable, "-m", "ssdlab", *(a.format(tmp=tmp_path) for a in args)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), env=dict(os.environ),
    )  # fmt: skip
    try:
        time.sleep(2.5)  # past start-up, into the long loop
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        _, stderr = proc.communicate(timeout=30)
        stopped_s = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert stderr.strip() == "interrupted"
    # A fraction of a second on an idle machine (0.1 to 0.6 s measured); 2 s leaves room for
    # a loaded one.
    assert stopped_s < 2.0, stopped_s


def test_a_run_past_the_end_of_the_simulated_clock_is_a_user_error() -> None:
    """10^7 s per link crossing passes 2^64 ps at the first read: it exited 0 with requests
    'completing' in 0 ps (issue 15, defect 3)."""
    assert_user_error(
        run_cli("run", "small-tlc", "--set", "interface.link_latency=10000000s",
                "--rw", "randread", "--io-count", "10"),
        "simulated clock reached its end", "2^64 ps", "link latency",
    )  # fmt: skip


def test_sizes_past_two_to_the_64_and_wrapping_regions_are_refused_by_name() -> None:
    """16384PiB is 2^64 bytes: refused, not saturated; an offset plus a size that would wrap
    64 bits is past the device, not a small region (issue 15, defect 2)."""
    line = assert_user_error(
        run_cli("run", "small-tlc", "--rw", "randread", "--size", "16384PiB", "--io-count", "10"),
        "size",
        "16384PiB",
        "the largest size",
    )
    assert "line 1 column" not in line  # no position in JSON the user never wrote
    assert_user_error(
        run_cli(
            "run",
            "small-tlc",
            "--rw",
            "randread",
            "--offset",
            "512",
            "--size",
            "16383PiB",
            "--io-count",
            "10",
        ),  # fmt: skip
        "size",
        "larger than the device",
    )


def test_a_run_without_a_workload_says_what_to_give() -> None:
    assert_user_error(run_cli("run", "small-tlc", "--io-count", "10"), "--rw", "--job", "--trace")


@pytest.mark.parametrize(
    ("override", "needles"),
    [
        # A panic (a line count cut to u32, then an assertion) and a 4.6 GiB allocation before.
        ("cache.capacity=1PiB", ["cache.capacity", "1PiB", "at most 896MiB"]),
        ("cache.capacity=1TiB", ["cache.capacity", "1TiB", "at most 896MiB"]),
        # An abort allocating per-core state before.
        ("host.cores=4294967295", ["host.cores", "4294967295", "1 to 4096"]),
    ],
)
def test_counts_that_would_exhaust_memory_are_refused_at_validation(
    override: str, needles: list[str]
) -> None:
    assert_user_error(
        run_cli("run", "small-tlc", "--rw", "randwrite", "--io-count", "10", "--set", override),
        *needles,
    )


@pytest.mark.parametrize(
    ("rate", "extra", "needles"),
    [
        # The clock saturated at 2^64 ps and every request "completed" in 0 ps, exit 0.
        ("1e-9", ["--io-count", "3"], ["rate_iops", "1e-6"]),
        ("1e-6", ["--io-count", "300"], ["rate_iops", "213 days"]),
        # Arrivals at one time stamp (a gap of 0 ps) queued until memory ran out.
        ("1e13", ["--runtime", "1ms"], ["rate_iops", "1e12"]),
        ("1e11", ["--runtime", "1ms"], ["rate_iops", "lower rate_iops or raise iodepth"]),
    ],
)
def test_open_loop_rates_the_clock_or_memory_cannot_hold_are_errors(
    rate: str, extra: list[str], needles: list[str]
) -> None:
    assert_user_error(
        run_cli("run", "small-tlc", "--rw", "randread", "--rate-iops", rate, *extra), *needles
    )


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_non_finite_numbers_are_named_not_reported_as_a_json_position(value: str) -> None:
    """NaN reached the core as JSON and came back as "expected value" (issue 15, defect 10)."""
    assert_user_error(
        run_cli("run", "small-tlc", "--rw", "randread", "--rate-iops", value),
        "field `rate_iops`",
        f"got {value}",
        "expected a finite number",
    )
    trace = Path(__file__).parents[1] / "crates/ssdlab/tests/fixtures/traces/msr.csv"
    assert_user_error(
        run_cli("run", "small-tlc", "--trace", trace, "--time-scale", value),
        "field `time_scale`",
        "expected a finite number",
    )


def test_a_closed_standard_output_is_one_line_error_not_a_traceback() -> None:
    """`ssdlab presets >&-` raised AttributeError deep in the table code (issue 15, defect 13)."""
    proc = subprocess.run(
        ["sh", "-c", f"'{sys.executable}' -m ssdlab presets >&-"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (
        "error: standard output is closed; redirect it (to a file or /dev/null) instead"
    )


def test_interface_flag_moves_a_preset_to_another_kind() -> None:
    proc = run_cli("run", "small-tlc", "--interface", "sata", *SMALL_RUN, "--json", "-", "-q")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["interface"]["kind"] == "sata"
    assert result["interface"]["device_queue_depth"] == 32
    assert "SATA" in result["interface"]["link"]
    shown = tomllib.loads(run_cli("config", "show", "small-tlc", "--interface", "ide").stdout)
    assert shown["interface"]["link"] == "udma6"
    assert shown["interface"]["queue_depth"] == 1
    assert shown["interface"]["interrupt"] == "pin"
    # A field given with --set wins over the kind's default.
    shown = tomllib.loads(
        run_cli(
            "config", "show", "small-tlc", "--interface", "ufs", "--set", "interface.queue_depth=8"
        ).stdout
    )
    assert shown["interface"]["queue_depth"] == 8
    assert shown["interface"]["link"] == "hs-g3x2"


def test_interface_flag_with_a_bad_kind_is_one_line() -> None:
    assert_user_error(
        run_cli("run", "small-tlc", "--interface", "scsi", *SMALL_RUN),
        "interface.kind",
        '"scsi"',
        '"nvme"',
    )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("command", ["run", "trace stats"])
def test_a_full_disk_names_the_output_path(command: str, tmp_path: Path) -> None:
    """Writing a result to a full disk said only "[Errno 28] No space left on device" (issue 15,
    defect 10): the error names the path it could not write."""
    if command == "run":
        args: list[str | Path] = ["run", "small-tlc", "--rw", "read", "--io-count", "10"]
    else:
        trace = tmp_path / "two.csv"
        trace.write_text("0,1,4096,w,0.0\n0,2,4096,r,0.1\n")
        args = ["trace", "stats", trace, "--format", "spc"]
    proc = run_cli(*args, "--json", "/dev/full")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == "error: /dev/full: No space left on device", proc.stderr


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        # Each read /dev/zero until killed (--fio) or called it "not found" (--job, sweep).
        (("run", "small-tlc", "--fio", "/dev/zero"), ("/dev/zero", "more than 1048576 bytes")),
        (("run", "small-tlc", "--job", "/dev/zero"), ("/dev/zero", "more than 1048576 bytes")),
        (("sweep", "/dev/zero", "--out", "{tmp}/o"), ("/dev/zero", "more than 1048576 bytes")),
        (("run", "small-tlc", "--fio", "{tmp}"), ("is a directory", "fio job file")),
        (("run", "small-tlc", "--job", "{tmp}"), ("is a directory", "job file")),
        (("sweep", "{tmp}", "--out", "{tmp}/o"), ("is a directory", "sweep file")),
        (("run", "small-tlc", "--fio", "/dev/urandom"), ("/dev/urandom", "more than 1048576")),
    ],
)
def test_job_and_sweep_files_that_are_devices_or_directories_are_refused_by_name(
    tmp_path: Path, args: tuple[str, ...], needles: tuple[str, ...]
) -> None:
    proc = run_cli(*(a.replace("{tmp}", str(tmp_path)) for a in args), timeout=60)
    assert_user_error(proc, *needles)


def test_job_and_sweep_files_may_come_through_a_pipe(tmp_path: Path) -> None:
    # A job file on standard input, as `--job /dev/stdin < job.toml`.
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "ssdlab", "run", "small-tlc", "--job", "/dev/stdin", "-q"],
        input='rw = "randread"\nbs = "4KiB"\nio_count = 50\n',
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("trace", "generate", "radius", "--out", "{file}/x.csv"),
        ("run", "small-tlc", "--rw", "read", "--io-count", "10", "--json", "{file}/r.json"),
    ],
)
def test_an_output_path_through_a_file_says_which_part_is_not_a_directory(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    # Before: "error: .../plain: File exists".
    plain = tmp_path / "plain"
    plain.write_text("x")
    proc = run_cli(*(a.replace("{file}", str(plain)) for a in args))
    assert_user_error(proc, f"{plain}: is not a directory")
    assert plain.read_text() == "x"


@pytest.mark.parametrize(
    "command",
    [
        ["serve", "small-tlc"],
        ["nvme", "id-ctrl", "small-tlc"],
        ["trace", "generate", "model:seq-write", "-o", "unused.csv", "--count", "1"],
        ["trace", "stats", "model:seq-write"],
    ],
)
def test_a_seed_past_u64_is_refused_by_every_command(command: list[str], tmp_path: Path) -> None:
    # `serve --seed 2^64` reached the core and died with an OverflowError traceback; run and
    # swap already bounded --seed.
    proc = run_cli(*command, "--seed", str(2**64), cwd=tmp_path, timeout=60)
    assert_user_error(proc, "--seed", str(2**64 - 1))
    assert not (tmp_path / "unused.csv").exists()
