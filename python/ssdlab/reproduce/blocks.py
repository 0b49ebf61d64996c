"""Quoted figures come from generated blocks (issue 40 point 1).

A figure the docs quote from a run sits between ``<!-- generated:NAME begin ... -->`` and
``<!-- generated:NAME end -->``. Each block is produced from data: the output of the command
its marker names, kept as a checked-in JSON artefact (``docs/generated/NAME.json``), and a
``render`` function that writes the text from it. ``python scripts/fidelity.py --blocks`` runs
every block's command, rewrites its artefact and its text; ``tests/test_generated_blocks.py``
renders every block from its artefact and fails when the doc's text differs (a stale
sentence), and for the cheap blocks runs the command again and fails when the artefact is
stale (the model moved). docs/experiments.md ("Generated figures") lists which is which.

The reproductions' rows (the scoreboard and the per-figure tables) come from
``docs/generated/reproductions.json``, written by ``python scripts/fidelity.py`` when it runs
every reproduction.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import Row, row_list

ROOT = Path(__file__).resolve().parents[3]
GENERATED = "docs/generated"
REPRODUCTIONS = f"{GENERATED}/reproductions.json"


@dataclass(frozen=True)
class Block:
    name: str
    doc: str  # the file that holds it, relative to the checkout
    command: str  # what produces its data (shown in the marker)
    produce: Callable[[], Any]  # runs the command; JSON-able data
    render: Callable[[Any], str]  # the block's text from that data
    artefact: str = ""  # default docs/generated/NAME.json
    indent: str = ""  # a block inside a list item: its markers and lines indented

    @property
    def artefact_path(self) -> str:
        return self.artefact or f"{GENERATED}/{self.name}.json"

    def begin(self) -> str:
        how = (
            "python scripts/fidelity.py"
            if self.artefact == REPRODUCTIONS
            else f"python scripts/fidelity.py --blocks {self.name}"
        )
        return f"<!-- generated:{self.name} begin ({how}; from: {self.command}) -->"

    def end(self) -> str:
        return f"<!-- generated:{self.name} end -->"


def _pattern(block: Block) -> re.Pattern[str]:
    return re.compile(
        r"^[ \t]*"
        + re.escape(f"<!-- generated:{block.name} begin")
        + r"[^\n]*-->\n(.*?)^[ \t]*"
        + re.escape(block.end()),
        re.S | re.M,
    )


def _indented(block: Block, body: str) -> str:
    body = body if body.endswith("\n") else body + "\n"
    return "".join(block.indent + line if line.strip() else line for line in body.splitlines(True))


def section(text: str, block: Block) -> str | None:
    """The text between the block's markers in ``text`` (None if its markers are missing)."""
    match = _pattern(block).search(text)
    return None if match is None else match.group(1)


def splice(text: str, block: Block, body: str) -> str:
    """``text`` with the block's section replaced by ``body`` (and its begin marker rewritten
    to name the command); an error if the markers are missing."""
    pattern = _pattern(block)
    if pattern.search(text) is None:
        raise ValueError(
            f"{block.doc}: no {block.name!r} block ({block.begin()} ... {block.end()})"
        )
    new = f"{block.indent}{block.begin()}\n{_indented(block, body)}{block.indent}{block.end()}"
    return pattern.sub(lambda _: new, text, count=1)


def load(path: str, root: Path = ROOT) -> Any:
    return json.loads((root / path).read_text(encoding="utf-8"))


def save(path: str, data: Any, root: Path = ROOT) -> None:
    file = root / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def regenerate(chosen: Iterable[Block], root: Path = ROOT, run: bool = True) -> list[str]:
    """Run each block's command (unless ``run`` is False: render from the artefact as it is),
    write its artefact and its text; the files written."""
    written = []
    for block in chosen:
        if run:
            save(block.artefact_path, block.produce(), root)
            written.append(block.artefact_path)
        body = block.render(load(block.artefact_path, root))
        doc = root / block.doc
        doc.write_text(splice(doc.read_text(encoding="utf-8"), block, body), encoding="utf-8")
        written.append(block.doc)
    return written


def stale(chosen: Iterable[Block], root: Path = ROOT) -> list[str]:
    """The blocks whose text is not what their artefact renders (no runs)."""
    problems = []
    for block in chosen:
        text = (root / block.doc).read_text(encoding="utf-8")
        found = section(text, block)
        if found is None:
            problems.append(f"{block.doc}: the {block.name!r} block's markers are missing")
            continue
        want = _indented(block, block.render(load(block.artefact_path, root)))
        if found != want:
            problems.append(
                f"{block.doc}: the {block.name!r} block is stale: it does not say what"
                f" {block.artefact_path} gives; run python scripts/fidelity.py --blocks"
                f" {block.name}"
            )
    return problems


# -- formatting -------------------------------------------------------------------------------


def _n(value: float, digits: int = 0) -> str:
    return f"{value:,.{digits}f}"


def _pct(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value * 100:+.1f} %".replace("-", "−")


# -- the reproductions' rows ------------------------------------------------------------------


def rows_of(data: Mapping[str, Any], experiment: str) -> dict[str, Row]:
    """An experiment's rows from reproductions.json, by metric."""
    return {row.metric: row for row in row_list(data, experiment)}


def _markdown(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table: the header, its rule, then a line a row."""
    rule = "|" + "|".join("---" for _ in header) + "|\n"
    lines = ["| " + " | ".join(cells) + " |\n" for cells in [header, *rows]]
    return lines[0] + rule + "".join(lines[1:])


def _table(
    data: Mapping[str, Any],
    experiment: str,
    lines: Sequence[tuple[str, str, Callable[[Row], str] | None]],
    header: Sequence[str] = ("metric", "unit", "document", "ssdlab", "difference", "label"),
) -> str:
    """A Markdown table of chosen rows: (metric in the data, metric as shown, how to show
    ssdlab's value (default: 4 significant digits))."""
    from .scoreboard import format_difference, significant

    rows = rows_of(data, experiment)
    out = []
    for metric, shown, fmt in lines:
        row = rows[metric]
        ssdlab = "–" if row.ssdlab is None else (fmt(row) if fmt else significant(row.ssdlab))
        paper = "–" if row.paper is None else significant(row.paper)
        diff = format_difference(row)
        if diff == "–" and row.agrees is not None:
            diff = "matches" if row.agrees else "does not match"
        out.append([shown, row.unit, paper, ssdlab, diff.replace("-", "−"), row.label])
    return _markdown(header, out)


def render_seed004(data: Mapping[str, Any]) -> str:
    fig5 = "seed004-fig5"
    lines: list[tuple[str, str, Callable[[Row], str] | None]] = [
        ("NVMe-ideal sequential read bandwidth", "NVMe-ideal sequential read", None),
        ("NVMe-ideal sequential write bandwidth", "NVMe-ideal sequential write", None),
        (
            "NVMe Gen.3 x1 over Gen.1 x1 bandwidth, mean of the four access types",
            "NVMe Gen.3 x1 over Gen.1 x1, mean of the four access types",
            None,
        ),
        (
            "PCIe Gen.3 x1 over Gen.1 x1 (sequential read, link-bound)",
            "PCIe Gen.3 x1 over Gen.1 x1 (sequential read)",
            None,
        ),
    ]
    lines += [
        (
            f"NVMe Gen.{g} x1 sequential read against Table 2 real bandwidth",
            f"NVMe Gen.{g} x1 sequential read vs Table 2",
            None,
        )
        for g in (1, 2, 3)
    ]
    lines += [
        (f"IDE-ideal sequential {rw} bandwidth", f"IDE-ideal sequential {rw}", None)
        for rw in ("read", "write")
    ]
    lines += [
        (f"NVMe-ideal over IDE-ideal, sequential {rw}", f"NVMe-ideal over IDE-ideal, {rw}", None)
        for rw in ("read", "write")
    ]
    text = _table(data, fig5, lines)
    more = [
        (
            "seed004-fig6",
            "512 MiB cache: bandwidth gain over no cache, mean of all bars",
            "512 MiB cache: gain over no cache, mean of all 28 bars (Fig. 6)",
        ),
        (
            "seed004-fig7",
            "1 GiB cache: sequential write over sequential read, mean of the NVMe links",
            "1 GiB cache: sequential write over read, mean of the NVMe links (Fig. 7)",
        ),
    ]
    for experiment, metric, shown in more:
        text += _table(data, experiment, [(metric, shown, None)]).split("\n", 2)[2]
    sata = rows_of(data, fig5)
    read = sata["IDE-SATA3 sequential read bandwidth"].ssdlab
    write = sata["IDE-SATA3 sequential write bandwidth"].ssdlab
    text += (
        f"| IDE-SATA3 sequential read / write | MiB/s | – | {_n(read or 0, 1)} /"
        f" {_n(write or 0, 1)} | – | not stated |\n"
    )
    return text


def render_seed001(data: Mapping[str, Any]) -> str:
    """Seed 001's ratio rows of both reproductions, and below them each one's erase and
    programmed-page counts (the erase rows' note)."""
    text = ""
    notes = []
    for experiment, shown in (
        ("seed001-fig3-4", "stand-ins"),
        ("seed001-fig3-4-samples", "samples"),
    ):
        rows = [r for r in row_list(data, experiment) if "dual / " in r.metric]
        table = _table(data, experiment, [(r.metric, f"{shown}: {r.metric}", None) for r in rows])
        text += table if not text else table.split("\n", 2)[2]
        counts = next((r.note for r in rows if r.metric.startswith("dual / single erases")), "")
        if counts:
            notes.append(f"- {shown}, {counts}")
    return text + ("\n" + "\n".join(notes) + "\n" if notes else "")


def render_seed000_dma(data: Mapping[str, Any]) -> str:
    name = "seed000-dma"
    metrics = [
        f"4 KB random {rw} at QD4: IOPS with the DMA over IOPS with CPU copies"
        for rw in ("read", "write")
    ]
    return _table(data, name, [(m, m, None) for m in metrics])


def render_seed000(data: Mapping[str, Any]) -> str:
    from .scoreboard import Entry, cells

    header = ("figure", "metric", "unit", "document", "ssdlab", "difference", "label")
    out = []
    for experiment, figure in (
        ("seed000-fig6", "6"),
        ("seed000-fig7", "7"),
        ("seed000-fig8", "8"),
        ("seed000-fig9", "9"),
        ("seed000-fig10", "10"),
    ):
        for row in row_list(data, experiment):
            if not row.compared:
                continue
            _, _, metric, paper, ssdlab, diff, _, label = cells(Entry("", "", row))
            unit = f" {row.unit}" if row.unit else ""
            paper = paper.removesuffix(unit)
            ssdlab = ssdlab.removesuffix(unit)
            out.append([figure, metric, row.unit, paper, ssdlab, diff.replace("-", "−"), label])
    return _markdown(header, out)


def render_seed000_detail(data: Mapping[str, Any]) -> str:
    """The bars behind seed 000's Figs. 7 and 8 rows: the protocol overhead latency of each
    chunk size beside the UFS device's, and QD4 read throughput over buffer and chunk sizes."""
    # One row a chunk size ("4KiB chunk: ..."; the 512 KB row named by the document is not one).
    chunks = [
        r
        for r in row_list(data, "seed000-fig7")
        if "KiB chunk: protocol overhead latency, prototype" in r.metric
    ]
    fig7 = _markdown(
        ("chunk", "prototype, µs", "UFS 2.0 device, µs"),
        (
            [
                r.metric.split(" chunk")[0],
                _n(r.ssdlab or 0, 1),
                r.note.removeprefix("UFS ").removesuffix(" µs"),
            ]
            for r in chunks
        ),
    )
    text = "Fig. 7, protocol overhead latency at QD1:\n\n" + fig7
    grid: dict[str, dict[str, float]] = {}
    for r in row_list(data, "seed000-fig8"):
        if r.metric.endswith("chunk: QD4 read throughput") and r.ssdlab is not None:
            buffer, chunk = r.metric.split(": ")[0].split(", ")
            grid.setdefault(buffer.removesuffix(" buffer"), {})[chunk.removesuffix(" chunk")] = (
                r.ssdlab
            )
    sizes = list(next(iter(grid.values())))
    fig8 = _markdown(
        ["buffer"] + [f"{c} chunk" for c in sizes],
        ([buffer] + [_n(by_chunk[c], 1) for c in sizes] for buffer, by_chunk in grid.items()),
    )
    return text + "\nFig. 8, QD4 read throughput in MB/s:\n\n" + fig8


# -- seed 002 (docs/experiments.md's seed 002 sections) ---------------------------------------


def _with_notes(data: Mapping[str, Any], experiment: str, keep: Callable[[Row], bool]) -> str:
    """Every row of `experiment` in a table, then the notes (counts and times) of the rows
    `keep` chooses in a list below it."""
    rows = row_list(data, experiment)
    text = _table(data, experiment, [(r.metric, r.metric, None) for r in rows])
    notes = [f"- {r.metric}: {r.note}" for r in rows if r.note and keep(r)]
    return text + ("\n" + "\n".join(notes) + "\n" if notes else "")


def render_seed002_fig14(data: Mapping[str, Any]) -> str:
    # The notes that say more than the label: how many writes are at most 4 sectors.
    return _with_notes(data, "seed002-fig14", lambda r: "sectors" in r.note)


def render_seed002_fig12(data: Mapping[str, Any]) -> str:
    return _with_notes(data, "seed002-fig12", lambda r: True)


def render_seed002_table7(data: Mapping[str, Any]) -> str:
    """Table 7's rows with what the end-to-end path adds to each (ssdlab less the document)."""
    rows = row_list(data, "seed002-table7")
    text = _table(data, "seed002-table7", [(r.metric, r.metric, None) for r in rows])
    added = [(r.ssdlab or 0) - (r.paper or 0) for r in rows]
    return text + (
        f"\nThe path outside the media adds {_n(min(added), 2)} to {_n(max(added), 2)} µs"
        " to each command.\n"
    )


SEED002_WORKLOADS = (
    ("financial1 (stand-in)", "Financial1"),
    ("financial2 (stand-in)", "Financial2"),
    ("msnfs (stand-in)", "MSNFS"),
    ("radius (stand-in)", "RADIUS"),
    ("ssdsim_financial1_sample.ascii", "sample"),
)
SEED002_SSW = ("512B", "1KiB", "2KiB")


def _seed002_rows(data: Mapping[str, Any]) -> dict[str, Row]:
    rows = rows_of(data, "seed002-fig15-20")
    rows.update(rows_of(data, "seed002-fig15-20-samples"))
    return rows


def render_seed002_fig15_20(data: Mapping[str, Any]) -> str:
    """The text's statements of §3.3 against each workload at SSW = 2 KB, then every NAND
    count's ratio to the run without PCM at each SSW (Figs. 15–18's bars)."""
    rows = _seed002_rows(data)

    def get(prefix: str, metric: str) -> Row | None:
        return rows.get(f"{prefix}: {metric}")

    def yes(row: Row | None, figure: bool = True, suffix: str = "") -> str:
        if row is None or row.agrees is None:
            return ""
        verdict = "yes" if row.agrees else "no"
        return f"{_n(row.ssdlab or 0, 2)}{suffix}: {verdict}" if figure else verdict

    def counts(row: Row | None) -> str:
        """A "rising with SSW" row: yes, or no with the counts that fall."""
        if row is None or row.agrees is None:
            return ""
        if row.agrees:
            return "yes"
        at = dict(part.split(" ", 1) for part in row.note.split("; ", 1)[1].split(", "))
        return f"no ({at['1KiB']} at 1 KB, {at['2KiB']} at 2 KB)"

    def ratio(row: Row | None) -> str:
        if row is None or row.ssdlab is None:
            return ""
        if row.paper is None:
            return _n(row.ssdlab, 2)
        return f"{_n(row.ssdlab, 2)} ({_pct(row.difference)})"

    def erases(prefix: str) -> str:
        against = get(prefix, "NAND erases at SSW 2 KB / without PCM")
        if against is not None:
            return ratio(against)
        return ratio(get(prefix, "NAND erases at SSW 2KiB / without PCM (Fig. 17)"))

    statements: list[tuple[str, Callable[[str], str]]] = [
        (
            "updates fall as SSW grows (Fig. 15)",
            lambda p: yes(get(p, "NAND updates fall as SSW grows"), figure=False),
        ),
        (
            "almost no update at 2 KB, except RADIUS",
            lambda p: (
                yes(get(p, "NAND updates at SSW 2 KB almost none"))
                or yes(get(p, "NAND updates at SSW 2 KB remain"), suffix=" remain")
            ),
        ),
        (
            'NAND writes "to almost 60 %" (Fig. 16)',
            lambda p: ratio(get(p, "NAND writes at SSW 2 KB / without PCM")),
        ),
        (
            'erases: Financial2 "to 20 %", the others −13 % on average (Fig. 17)',
            erases,
        ),
        (
            "NAND reads 10 %–90 % less (Fig. 18)",
            lambda p: yes(get(p, "NAND reads at SSW 2 KB within 10 %-90 % less")),
        ),
        (
            "PCM writes rise with SSW (Fig. 19)",
            lambda p: counts(get(p, "PCM writes at SSW 2 KB, rising with SSW")),
        ),
        (
            "PCM reads rise with SSW (Fig. 20)",
            lambda p: counts(get(p, "PCM reads at SSW 2 KB, rising with SSW")),
        ),
    ]
    text = _markdown(
        ["statement (§3.3)"] + [shown for _, shown in SEED002_WORKLOADS],
        ([statement] + [cell(p) for p, _ in SEED002_WORKLOADS] for statement, cell in statements),
    )
    mean = rows["NAND erases at SSW 2 KB / without PCM, mean of Financial1, MSNFS, RADIUS"]
    text += (
        f"\nThe mean erase ratio of Financial1, MSNFS and RADIUS is {_n(mean.ssdlab or 0, 2)}"
        f" against the derived {_n(mean.paper or 0, 2)} ({_pct(mean.difference)}).\n"
    )
    # Figs. 15-18: each count at each SSW over the run without PCM.
    out = []
    for prefix, shown in SEED002_WORKLOADS:
        for count, fig in (("updates", 15), ("writes", 16), ("erases", 17), ("reads", 18)):
            at = [
                get(prefix, f"NAND {count} at SSW {s} / without PCM (Fig. {fig})")
                for s in SEED002_SSW
            ]
            ratios = [r for r in at if r is not None]
            if len(ratios) < len(at):
                continue
            base = ratios[0].note.removeprefix("without PCM: ")
            out.append(
                [shown, f"NAND {count} (Fig. {fig})"]
                + [_n(r.ssdlab or 0, 2) for r in ratios]
                + [base]
            )
    header = ["workload", "count", "SSW 512 B", "1 KB", "2 KB", "without PCM"]
    return text + "\n" + _markdown(header, out)


# -- the paging model's defaults (docs/paging.md) ---------------------------------------------

PC_MIX_DEVICES = {
    "seed003-scm-400": "SCM-400",
    "seed003-scm-133": "SCM-133",
    "seed003-slc-analytic": "analytic SLC",
    "seed003-mlc-analytic": "analytic MLC",
}
PC_MIX_COMMAND = "ssdlab swap DEVICE --memory 1GiB --swap-size 1GiB --workload pc-mix"


def _swap(device: str) -> dict[str, Any]:
    from ..swap import swap

    data = swap(device, memory="1GiB", swap_size="1GiB", workload="pc-mix").data
    data.pop("wall_seconds", None)  # the machine's, not the model's
    data.pop("accesses_per_wall_second", None)
    return data


def produce_pc_mix() -> dict[str, Any]:
    return {device: _swap(device) for device in PC_MIX_DEVICES}


def produce_pc_mix_scm400() -> dict[str, Any]:
    return {"seed003-scm-400": _swap("seed003-scm-400")}


MQSIM_JOBS = {
    "50/50": {"rw": "randrw", "rwmixread": 50},
    "read-only": {"rw": "randread"},
    "write-only": {"rw": "randwrite"},
}
MQSIM_COMMAND = (
    "ssdlab run mqsim-default --rw randrw --rwmixread 50 (randread, randwrite)"
    " --bs 4KiB --iodepth 32 --io-count 100000"
)


def produce_mqsim_default() -> dict[str, Any]:
    """The three 4 KiB random QD32 jobs on MQSim's default drive, as shipped (fresh)."""
    from ..api import Config, run

    config = Config.load("mqsim-default")
    out: dict[str, Any] = {}
    for name, job in MQSIM_JOBS.items():
        data = run(config, {**job, "bs": "4KiB", "iodepth": 32, "io_count": 100_000}).to_dict()
        cache = {k: v for k, v in data["cache"].items() if k not in ("occupancy", "energy")}
        out[name] = {
            "iops": data["total"]["iops"],
            "latency_us": {op: data["ops"][op]["latency_us"]["mean"] for op in data["ops"]},
            "cache": cache,
            "mapping": data["ftl"]["mapping"],
        }
    return out


def render_mqsim_default(data: Mapping[str, Any]) -> str:
    first = next(iter(data.values()))["cache"]
    lines = [
        f"DRAM {first['dram_bytes'] / 2**20:,.0f} MiB: {first['data_bytes'] / 2**20:,.0f} MiB of"
        f" data lines ({first['lines']:,} of {first['line_bytes'] // 1024} KiB),"
        f" {first['translation_bytes'] / 2**20:,.0f} MiB of translation pages.",
        "",
        "| job | IOPS | mean latency (µs) | buffer read hits / misses | buffer write hits /"
        " misses | on-demand flushes | map lookups: hits / misses | translation reads / writes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, row in data.items():
        c, m = row["cache"], row["mapping"]
        latency = ", ".join(f"{op} {_n(us, 1)}" for op, us in row["latency_us"].items())
        lines.append(
            f"| {name} | {_n(row['iops'])} | {latency} | {c['read_hits']:,} / {c['read_misses']:,}"
            f" | {c['write_hits']:,} / {c['write_misses']:,} | {c['flushes']['on_demand']:,}"
            f" | {m['hits']:,} / {m['misses']:,}"
            f" | {m['translation_reads']:,} / {m['translation_writes']:,} |"
        )
    return "\n".join(lines) + "\n"


ZNS_FIO_COMMAND = "ssdlab run zns-tlc --fio examples/jobs/zns-write-read.fio --output-format json"


def produce_zns_fio() -> dict[str, Any]:
    """fio's zoned example on the zoned preset: each job's direction, bytes and bandwidth."""
    import subprocess
    import sys

    args = ZNS_FIO_COMMAND.split()[1:]
    proc = subprocess.run(
        [sys.executable, "-m", "ssdlab", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    out: dict[str, Any] = {}
    for job in json.loads(proc.stdout)["jobs"]:
        rw = "write" if job["write"]["io_bytes"] else "read"
        out[job["jobname"]] = {
            "rw": rw,
            "io_bytes": job[rw]["io_bytes"],
            "bw_bytes": job[rw]["bw_bytes"],
        }
    return out


def render_zns_fio(data: Mapping[str, Any]) -> str:
    write, read = data["write"], data["read"]
    return (
        f"The write job wrote {write['io_bytes'] / 2**20:,.0f} MiB at"
        f" {write['bw_bytes'] / 2**20:,.1f} MiB/s; the read job, a group of its own after it"
        f" (`stonewall`), read the {read['io_bytes'] / 2**20:,.0f} MiB back from the drive as"
        f" the writes left it at {read['bw_bytes'] / 2**30:,.2f} GiB/s.\n"
    )


def _modes(histogram: Sequence[Sequence[int]]) -> list[tuple[int, int]]:
    """(size, count) from the most frequent down."""
    return sorted(((int(s), int(n)) for s, n in histogram), key=lambda sn: (-sn[1], sn[0]))


def render_pc_mix(data: Mapping[str, Any]) -> str:
    scm = data["seed003-scm-400"]
    faults, wear = scm["faults"], scm["wear"]
    reads, writes = scm["reads"], scm["writes"]
    (r1, rn1), (r2, rn2) = _modes(reads["size_histogram"])[:2]
    (w1, wn1) = _modes(writes["size_histogram"])[0]
    twice = (
        "none twice"
        if wear["max_writes_per_page"] == 1
        else f"at most {wear['max_writes_per_page']} times"
    )
    discards = "no discards" if not scm["trims"] else f"{scm['trims']:,} discards"
    means = ", ".join(
        f"{label} {_n(data[d]['swap_in_latency']['mean_us'])} µs"
        for d, label in PC_MIX_DEVICES.items()
    )
    merges = " and ".join(
        _n(data[d].get("device_merges") or 0)
        for d in ("seed003-slc-analytic", "seed003-mlc-analytic")
    )
    service = (
        ", ".join(_n(data[d]["reads"]["service"]["mean_us"]) for d in list(PC_MIX_DEVICES)[:3])
        + f" and {_n(data['seed003-mlc-analytic']['reads']['service']['mean_us'])}"
    )
    return (
        f"With the defaults (16 rounds, runs of 8 pages; `{PC_MIX_COMMAND}`):"
        f" {faults['accesses'] / 1e6:.1f} M references over {scm['distinct_pages']:,} pages"
        f" ({scm['distinct_pages'] * 4096 / 2**30:.2f} GiB); on SCM-400, {faults['major']:,}"
        f" swap-ins, {wear['pages_written']:,} pages written, {twice}, {discards}; reads mostly"
        f" {r1 // 1024} KiB ({rn1:,} of {reads['requests']:,}; {r2 // 1024} KiB next,"
        f" {rn2:,}), writes mostly {w1 // 1024} KiB ({wn1:,} of {writes['requests']:,}). Mean"
        f" swap-in: {means} ({merges} merges); each read's device time alone"
        f" (`reads.service`) {service} µs.\n"
    )


def render_swapin(data: Mapping[str, Any]) -> str:
    rows = rows_of(data, "seed003-swapin")
    device = rows["SCM read (one 4 KiB page, SCM-400 device model)"]
    total = rows["swap-in fault, total"]
    share = rows["OS overhead without the SCM read and the D-cache flush"]
    steps = ", ".join(
        _n(rows[step].ssdlab or 0, 1)
        for step in (
            "lookup swap cache",
            "swap page read",
            "swap page reuse",
            "page mapping",
            "swap slot free",
            "update MMU cache",
        )
    )
    return (
        "- **seed003-swapin** (the 31 µs breakdown): write faults on an idle SCM-400, one 4 KiB"
        " page each (`page_cluster = 0`; the trace `seed003_swapin.pages` writes 320 pages on"
        " 1 MiB, idles 20 ms, then write-faults 8). The software steps repeat the inputs"
        f" ({steps} µs: `input`). The device read is {_n(device.ssdlab or 0, 2)} µs against"
        f" the seed's 10 ({_pct(device.difference)}, `input`): the 4 KiB transfer at 400 MB/s"
        " (10.24 µs) and the device's interrupt, firmware and link time; the host's submit and"
        ' completion are the kernel\'s, which the seed counts in its 12 µs "swap page read",'
        " so the paging model does not charge the device's `[host]` costs again. Total"
        f" {_n(total.ssdlab or 0, 2)} µs against 31 ({_pct(total.difference)}, `derived`: a sum"
        " of inputs); the OS share by the seed's definition ((total − SCM read − MMU update) /"
        f" total) {_n(share.ssdlab or 0, 1)} % against 53.2 % (`derived`).\n"
    )


def render_swapout(data: Mapping[str, Any]) -> str:
    rows = rows_of(data, "seed003-swapout")
    speeds = (5, 10, 20, 40, 100)

    def times(label: str) -> str:
        values = [
            _n(rows[f"swap-out time, {k} K IOPS, congestion control {label}"].ssdlab or 0, 1)
            for k in speeds
        ]
        return ", ".join(values[:-1]) + f" and {values[-1]} s"

    def gain(label: str) -> float:
        ratio = rows[f"swap-out time 100 K / 20 K IOPS ({label})"].ssdlab or 1.0
        return 1 / ratio - 1

    ratios = [rows[f"swap-out time nc / c, {k} K IOPS"] for k in speeds]
    shorter = [f"{k} K" for k, r in zip(speeds, ratios, strict=True) if r.agrees]
    longer = [f"{k} K" for k, r in zip(speeds, ratios, strict=True) if r.agrees is False]
    smaller = rows["mean swap write size nc / c, all five write speeds"]
    idle = rows["idle time (congestion waits) nc / c, all five write speeds"]
    directions = [
        rows["swap-out time 100 K / 20 K IOPS (c)"],
        rows["swap-out time 100 K / 20 K IOPS (nc)"],
        *ratios,
        idle,
        smaller,
    ]
    held = sum(1 for r in directions if r.agrees)
    plateau = rows["swap-out time 100 K / 20 K IOPS (c)"].agrees
    return (
        "- **seed003-swapout** (swap-out against SCM write speed, c / nc; the mix with its"
        " defaults on the seed's 1 GiB of memory and 1 GiB of swap, SCM-400 with"
        " `pcm.timing.set` giving 5 K to 100 K writes of 4 KiB per second), with nothing fitted"
        " to it: every row is a prediction. With congestion control on (c), swap-out takes"
        f" {times('c')} at 5, 10, 20, 40 and 100 K IOPS: from 20 K to 100 K it gains"
        f" {gain('c') * 100:.1f} %, against {gain('nc') * 100:.1f} % with it off, so the"
        f" seed's plateau {'holds' if plateau else 'does not hold'} by the row's test (a gain"
        f" under 10 %). With congestion control off (nc): {times('nc')}; nc ÷ c is"
        f" {', '.join(_n(r.ssdlab or 0, 3) for r in ratios)}, shorter than c at"
        f" {', '.join(shorter) or 'no speed'}"
        + (f" and longer at {', '.join(longer)}" if longer else "")
        + f". Its congestion waits (idle time) come to {_n(idle.ssdlab or 0, 3)} × c's over the"
        f" five speeds ({'less, as' if idle.agrees else 'not less, against'} the seed)"
        f". nc's side-effect, 'small random writes to swap space': its swap writes average"
        f" {_n(smaller.ssdlab or 0, 3)} × c's over the five speeds"
        f" ({'smaller' if smaller.agrees else 'not smaller'})."
        f" {held} of the seed's {len(directions)} directions hold.\n"
    )


def _held(rows: Sequence[Row]) -> int:
    return sum(1 for r in rows if r.agrees)


def render_devices(data: Mapping[str, Any]) -> str:
    rows = rows_of(data, "seed003-devices")
    mode = {
        s: rows[f"{s}: most frequent request size"]
        for s in ("clean reads", "clean writes", "aged reads", "aged writes")
    }

    def kib(state: str) -> str:
        return f"{_n(mode[state].ssdlab or 0)} KiB"

    def ratios(method: str) -> list[Row]:
        what = "device time" if method == "the seed's method" else "latency"
        pairs = [
            f"aged: mean swap-in {what} SCM-{a} / {b} ({method})"
            for a, b in (("400", "SLC"), ("400", "MLC"), ("133", "SLC"), ("133", "MLC"))
        ]
        pairs += [f"aged: swap-out {what} SCM (10 K IOPS) / {b} ({method})" for b in ("MLC", "SLC")]
        return [rows[p] for p in pairs]

    def shown(method: str) -> str:
        names = ("SCM-400 / SLC", "SCM-400 / MLC", "SCM-133 / SLC", "SCM-133 / MLC")
        found = ratios(method)
        swapin = ", ".join(
            f"{n} {_n(r.ssdlab or 0, 2)}" for n, r in zip(names, found[:4], strict=True)
        )
        swapout = ", ".join(
            f"SCM / {n} {_n(r.ssdlab or 0, 2)}"
            for n, r in zip(("MLC", "SLC"), found[4:], strict=True)
        )
        return f"aged swap-in {swapin}; swap-out {swapout}; {_held(found)} of 6 as the seed says"

    seeds = shown("the seed's method")
    latency = ", ".join(
        f"{d} {_n(rows[f'aged: mean swap-in latency, {d}'].ssdlab or 0)} µs"
        for d in ("SCM-400", "SCM-133", "SLC", "MLC")
    )
    out_s = ", ".join(
        f"{d} {_n(rows[f'aged: swap-out time, {d}'].ssdlab or 0, 1)} s"
        for d in ("SCM-400", "SLC", "MLC")
    )
    return (
        "- **seed003-devices** (request sizes and the four devices, on the lifetime test's"
        " workload: the calibrated mix on the seed's 1 GiB of memory and 1 GiB of swap; clean ="
        " its 3 rounds on a fresh area, aged = the same 3 rounds after 30 aging rounds, the"
        " result covering the 3 alone; a test keeps the two sweep files' mixes equal): reads are"
        f" mostly {kib('clean reads')} clean and {kib('aged reads')} aged, clean writes mostly"
        f" {kib('clean writes')}, aged writes mostly {kib('aged writes')}"
        f" ({mode['clean reads'].note} clean, {mode['aged reads'].note} aged;"
        f" {mode['aged writes'].note} aged), labelled calibrated (`idle_memory` was fitted to"
        " the aged writes, `run_pages` once to the reads; see Calibration); no request exceeds"
        " one 32-page reclaim batch, so the seed's 256 KiB writes do not occur. The directions"
        ' are judged twice. By the seed\'s own method ("Performance Simulation Method": each'
        " request's device time alone, `reads.service`, `writes.service_total_s`; `derived`,"
        " not counted: the devices' timing inputs decide them):"
        f" {seeds}. Closed loop (what the application waits for: a read"
        " also queues behind swap-out writes on the one serial device; `prediction`): aged"
        f" swap-in {latency}; swap-out {out_s}; {shown('closed loop')}.\n"
    )


def render_lifetime(data: Mapping[str, Any]) -> str:
    rows = rows_of(data, "seed003-lifetime")

    def figure(metric: str, digits: int = 0) -> str:
        row = rows[metric]
        return f"{_n(row.ssdlab or 0, digits)} against {_n(row.paper or 0, digits)}"

    def years(part: str, endurance: str, wl: str) -> str:
        row = rows[f"{part} ({endurance} writes) lifetime {wl} wear levelling"]
        value = row.ssdlab or 0
        return f"{value:.3g} y"

    parts = (("SCM", "1,000,000"), ("SLC", "100,000"), ("MLC", "10,000"))
    without = ", ".join(f"{p} {years(p, e, 'without')}" for p, e in parts)
    with_wl = ", ".join(years(p, e, "with") for p, e in parts)
    writes = rows["swap writes (4 KiB pages)"]
    pages = rows["pages written"]
    mean = rows["writes per page, mean"]
    return (
        "- **seed003-lifetime** (full size, on an aged area, calibrated: 141 MiB tabs, 128 MiB"
        " idle and 3 counted rounds after 30 aging rounds, the cold references sweeping, fitted"
        " to the writes, the pages written, the maximum and the aged write size; see"
        f" Calibration): writes {figure('swap writes (4 KiB pages)')}"
        f" ({_pct(writes.difference)}), {figure('write amount', 1)} MB (derived); pages written"
        f" {figure('pages written')} ({_pct(pages.difference)}); max"
        f" {figure('writes per page, max')}, mean {figure('writes per page, mean', 2)}"
        f" ({_pct(mean.difference)}, derived). Lifetimes (derived, with the seed's 2 h): without"
        f" wear levelling {without}, against the seed's 57.1, 5.7 and 0.57 y; with it"
        f" {with_wl} (mean {_n(mean.ssdlab or 0, 2)}), where the document prints 114 y (its"
        " 1,000,000 h), 11.4 y and 1.14 y, which are endurance × 2 h / 2, not / 1.32.\n"
    )


MATRIX_COMMAND = (
    "SSDLAB_MATRIX_OUT=docs/generated/combination-matrix.json"
    " cargo nextest run -p ssdlab --test matrix"
)


def produce_matrix() -> dict[str, Any]:
    """Run the combination-matrix test (crates/ssdlab/tests/matrix.rs) and read what it wrote."""
    return _cargo_test_artefact("SSDLAB_MATRIX_OUT", "--test", "matrix")


def _cargo_test_artefact(env_name: str, *test_args: str) -> dict[str, Any]:
    """Run a Rust test that writes its artefact to the path in ``env_name``, and read it."""
    import os
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "artefact.json"
        env = dict(os.environ, **{env_name: str(out)})
        subprocess.run(
            ["cargo", "nextest", "run", "-p", "ssdlab", *test_args], cwd=ROOT, env=env, check=True
        )
        return json.loads(out.read_text(encoding="utf-8"))


def produce_fdp_separation() -> dict[str, Any]:
    """Run the FDP separation test (crates/ssdlab/src/ftl/fdp_tests.rs) and read its counts."""
    return _cargo_test_artefact("SSDLAB_FDP_OUT", "--lib", "separating_a_fifo_log")


def render_fdp_separation(data: Mapping[str, Any]) -> str:
    def waf(c: Mapping[str, Any]) -> float:
        host = c["host_units_written"]
        return (host + c["gc_units_moved"]) / host

    log, rnd = data["fdp_handles"]
    return (
        "| placement | device write amplification |\n"
        "|---|---|\n"
        f"| one handle (log and random data mixed) | {waf(data['mixed']):.3f} |\n"
        f"| FDP, two handles | {waf(data['fdp']):.3f} (log handle {waf(log):.3f},"
        f" random handle {waf(rnd):.3f}) |\n"
    )


def render_matrix(data: Mapping[str, Any]) -> str:
    axes = data["axes"]
    combos = data["combinations"]
    refusals = data["refusals"]
    ran = sum(1 for c in combos if c["outcome"] == "ran")
    lines = [
        f"{len(axes)} axes: "
        + "; ".join(f"{a['axis']} ({', '.join(a['values'])})" for a in axes)
        + f". Pairs of values: {data['legal_pairs']} taken, {data['illegal_pairs']} refused."
        f" {ran} of {len(combos)} covering combinations ran, checked and repeated exactly;"
        f" {len(refusals)} refused pairs each gave a documented one-line refusal.",
        "",
        "| " + " | ".join(a["axis"] for a in axes) + " | reads checked |",
        "|" + "---|" * (len(axes) + 1),
    ]
    for c in combos:
        values = [kv.split("=", 1)[1] for kv in c["combination"].split(" ")]
        reads = c.get("checked_reads")
        lines.append("| " + " | ".join(values) + f" | {'—' if reads is None else reads} |")
    lines += ["", "| refused pair | documented as | kind |", "|---|---|---|"]
    for r in refusals:
        lines.append(f"| {r['pair']} | {r['documented']} | {r['why']} |")
    return "\n".join(lines) + "\n"


# -- the key-value cache example (docs/kvcache.md) ----------------------------------------------

KVCACHE_UTILISATIONS = (0.5, 0.8, 0.95, 1.0)
KVCACHE_COMMAND = "ssdlab example kvcache " + " ".join(
    f"--utilisation {u}" for u in KVCACHE_UTILISATIONS
)


def produce_kvcache() -> Any:
    from ..examples import kvcache

    return {
        "points": kvcache.run_all(utilisations=KVCACHE_UTILISATIONS, seed=1),
        "flash_bytes": kvcache.capacities()[1],  # the zoned drive's capacity: all its NAND
        # Steady state: the conventional drive at 95 % after a warm-up twice as long.
        "longer_warmup": kvcache.run_point(
            "conventional", 0.95, 1, warmup_drive_writes=2 * kvcache.WARMUP_DRIVE_WRITES
        ),
    }


def render_kvcache(data: Mapping[str, Any]) -> str:
    lines = [
        "| drive | utilisation | device WAF | host WAF | inserts/s | writes MB/s |"
        " SOC share of writes | LOC round trip ÷ flash | per region |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    flash = data["flash_bytes"]
    for p in data["points"]:
        # What the drive takes while the LOC's log goes once round: its segments and the
        # buckets written meanwhile.
        trip = p["layout"]["segments"] * p["layout"]["segment_bytes"] / (1 - p["soc_write_share"])
        if "handle_waf" in p:
            loc, soc = p["handle_waf"]
            region = f"WAF LOC {loc:.3f}, SOC {soc:.3f}"
        elif "soc_gc_resets" in p:
            region = f"{p['soc_gc_resets']:,} SOC zones collected (measured part)"
        else:
            region = "–"
        lines.append(
            f"| {p['drive']} | {p['utilisation'] * 100:.0f} % | {p['device_waf']:.3f} |"
            f" {p['host_waf']:.3f} | {_n(p['inserts_per_s'])} | {_n(p['write_mb_s'], 1)} |"
            f" {p['soc_write_share'] * 100:.1f} % | {trip / flash:.2f} | {region} |"
        )
    longer = data["longer_warmup"]
    conventional = next(
        p for p in data["points"] if p["drive"] == "conventional" and p["utilisation"] == 0.95
    )
    lines += [
        "",
        f"Steady state: after a warm-up twice as long ({longer['warmup_requests']:,} requests"
        f" instead of {conventional['warmup_requests']:,}) the conventional drive at 95 % gives"
        f" a device WAF of {longer['device_waf']:.3f} (above: {conventional['device_waf']:.3f}).",
    ]
    return "\n".join(lines) + "\n"


def produce_sensitivity() -> Any:
    from .sensitivity import measure

    return measure(ROOT / "out", report=lambda line: print(f"  {line}", flush=True))


def render_sensitivity(data: Mapping[str, Any]) -> str:
    """Each prediction's spread over the seeds and its figure at the ends of each assumption's
    range (issue 40 point 3), then the assumptions and their sources."""
    from .scoreboard import significant
    from .sensitivity import same_figure

    def fig(value: float | None) -> str:
        return "–" if value is None else significant(value)

    seeds = data["seeds"]
    lines = [
        f"| experiment | prediction | document | as shipped | seeds {seeds[0]}–{seeds[-1]}"
        " | assumed parameters at the ends of their range | verdicts | fragile |",
        "|---|---|---|---|---|---|---|---|",
    ]
    fragile = total = 0
    for entry in data["experiments"]:
        for row in entry["rows"]:
            total += 1
            fragile += row["fragile"]
            spread = (
                fig(row["seed_min"])
                if same_figure(row["seed_min"], row["seed_max"])
                else f"{fig(row['seed_min'])} to {fig(row['seed_max'])}"
            )
            by_parameter: dict[str, list[str]] = {}
            for point in row["assumed"]:
                by_parameter.setdefault(point["parameter"], []).append(
                    f"{point['value']}: {fig(point['ssdlab'])}"
                )
            assumed = "; ".join(
                f"`{parameter}` {', '.join(values)}" for parameter, values in by_parameter.items()
            )
            cells = [
                entry["experiment"],
                row["metric"],
                fig(row["paper"]),
                fig(row["ssdlab"]),
                spread,
                assumed or "none assumed",
                ", ".join(row["verdicts"]),
                "**fragile**" if row["fragile"] else "no",
            ]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines += ["", f"{total} predictions; {fragile} fragile (counted apart on the scoreboard).", ""]
    lines += ["The assumptions, their ranges and why:", ""]
    for entry in data["experiments"]:
        for assumption in entry["assumptions"]:
            values = ", ".join(str(v) for v in assumption["values"])
            lines.append(
                f"- {entry['experiment']}: `{assumption['parameter']}` at {values}:"
                f" {assumption['why']}"
            )
    return "\n".join(lines) + "\n"


def _no_produce() -> Any:
    raise RuntimeError(
        f"this block renders {REPRODUCTIONS}, which python scripts/fidelity.py writes when it"
        " runs every reproduction"
    )


BLOCKS: tuple[Block, ...] = (
    Block(
        name="prediction-sensitivity",
        doc="docs/experiments.md",
        command="every reproduction with predictions at seeds 1-5 and at each assumption's range",
        produce=produce_sensitivity,
        render=render_sensitivity,
        artefact="docs/generated/sensitivity.json",
    ),
    Block(
        name="combination-matrix",
        doc="docs/combinations.md",
        command=MATRIX_COMMAND,
        produce=produce_matrix,
        render=render_matrix,
    ),
    Block(
        name="seed004-table",
        doc="docs/experiments.md",
        command="ssdlab reproduce seed004-fig5, -fig6, -fig7",
        produce=_no_produce,
        render=render_seed004,
        artefact=REPRODUCTIONS,
    ),
    Block(
        name="seed001-table",
        doc="docs/experiments.md",
        command="ssdlab reproduce seed001-fig3-4, seed001-fig3-4-samples",
        produce=_no_produce,
        render=render_seed001,
        artefact=REPRODUCTIONS,
    ),
    Block(
        name="seed000-dma-table",
        doc="docs/experiments.md",
        command="ssdlab reproduce seed000-dma",
        produce=_no_produce,
        render=render_seed000_dma,
        artefact=REPRODUCTIONS,
    ),
    Block(
        name="seed000-table",
        doc="docs/experiments.md",
        command="ssdlab reproduce seed000-fig6 ... seed000-fig10",
        produce=_no_produce,
        render=render_seed000,
        artefact=REPRODUCTIONS,
    ),
    Block(
        name="seed000-detail",
        doc="docs/experiments.md",
        command="ssdlab reproduce seed000-fig7, seed000-fig8",
        produce=_no_produce,
        render=render_seed000_detail,
        artefact=REPRODUCTIONS,
    ),
    Block(
        name="seed002-fig14-table",
        doc="docs/experiments.md",
        command="ssdlab reproduce seed002-fig14",
        produce=_no_produce,
        render=render_seed002_fig14,
        artefact=REPRODUCTIONS,
    ),
    Block(
        name="seed002-fig12-table",
        doc="docs/experiments.md",
        command="ssdlab reproduce seed002-fig12",
        produce=_no_produce,
        render=render_seed002_fig12,
        artefact=REPRODUCTIONS,
    ),
    Block(
        name="seed002-table7-table",
        doc="docs/experiments.md",
        command="ssdlab reproduce seed002-table7",
        produce=_no_produce,
        render=render_seed002_table7,
        artefact=REPRODUCTIONS,
    ),
    Block(
        name="seed002-fig15-20-table",
        doc="docs/experiments.md",
        command="ssdlab reproduce seed002-fig15-20, seed002-fig15-20-samples",
        produce=_no_produce,
        render=render_seed002_fig15_20,
        artefact=REPRODUCTIONS,
    ),
    Block(
        name="paging-swapin",
        doc="docs/paging.md",
        command="ssdlab reproduce seed003-swapin",
        produce=_no_produce,
        render=render_swapin,
        artefact=REPRODUCTIONS,
    ),
    Block(
        name="paging-swapout",
        doc="docs/paging.md",
        command="ssdlab reproduce seed003-swapout",
        produce=_no_produce,
        render=render_swapout,
        artefact=REPRODUCTIONS,
    ),
    Block(
        name="paging-devices",
        doc="docs/paging.md",
        command="ssdlab reproduce seed003-devices",
        produce=_no_produce,
        render=render_devices,
        artefact=REPRODUCTIONS,
    ),
    Block(
        name="paging-lifetime",
        doc="docs/paging.md",
        command="ssdlab reproduce seed003-lifetime",
        produce=_no_produce,
        render=render_lifetime,
        artefact=REPRODUCTIONS,
    ),
    Block(
        name="paging-pc-mix",
        doc="docs/paging.md",
        command=f"{PC_MIX_COMMAND}, on SCM-400, SCM-133 and the analytic SLC and MLC",
        produce=produce_pc_mix,
        render=render_pc_mix,
        indent="  ",
    ),
    Block(
        name="fdp-separation",
        doc="docs/fdp.md",
        command="SSDLAB_FDP_OUT=docs/generated/fdp-separation.json cargo nextest run -p ssdlab"
        " --lib separating_a_fifo_log",
        produce=produce_fdp_separation,
        render=render_fdp_separation,
    ),
    Block(
        name="zns-fio",
        doc="docs/zns.md",
        command=ZNS_FIO_COMMAND,
        produce=produce_zns_fio,
        render=render_zns_fio,
    ),
    Block(
        name="mqsim-default",
        doc="docs/presets.md",
        command=MQSIM_COMMAND,
        produce=produce_mqsim_default,
        render=render_mqsim_default,
    ),
    Block(
        name="kvcache",
        doc="docs/kvcache.md",
        command=KVCACHE_COMMAND,
        produce=produce_kvcache,
        render=render_kvcache,
    ),
)


def blocks() -> list[Block]:
    return list(BLOCKS)


def find(name: str) -> Block:
    for block in BLOCKS:
        if block.name == name:
            return block
    raise LookupError(
        f"unknown block {name!r}: expected one of {', '.join(b.name for b in BLOCKS)}"
    )


def reproductions_data(reproductions: Iterable[Any]) -> dict[str, Any]:
    """Every reproduction's rows as ``docs/generated/reproductions.json`` keeps them."""
    return {
        "written_by": "python scripts/fidelity.py",
        "experiments": [
            {
                "experiment": r.experiment.name,
                "document": r.experiment.document,
                "target": r.experiment.target,
                "rows": [row.to_dict() for row in r.rows],
            }
            for r in reproductions
        ],
    }


def scoreboard_from(data: Mapping[str, Any]) -> str:
    """The scoreboard's Markdown from reproductions.json (as scripts/fidelity.py writes it)."""
    from .scoreboard import Entry, markdown

    board = []
    for entry in data["experiments"]:
        for row in row_list(data, entry["experiment"]):
            if row.compared:
                board.append(Entry(entry["document"], entry["target"], row))
    return markdown(board)
