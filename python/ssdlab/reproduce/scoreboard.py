"""The fidelity scoreboard (issue 14 point 8): every reproduction's compared rows in one table.

A row is on the scoreboard when the document states something it is held against (a number, a
number derived from stated ones, or a direction: :attr:`Row.compared`). Only rows labelled
``prediction`` count in the tally; ``calibrated``, ``input`` and ``derived`` rows are shown with
their label and left out of it, so a fitted or repeated number cannot pass for a prediction.

The Markdown form is what ``docs/experiments.md`` carries between :data:`BEGIN` and :data:`END`;
``scripts/fidelity.py`` (or ``ssdlab reproduce --all --summary --markdown``) writes it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from . import ROW_LABELS, Reproduction, Row

# A prediction is "within" when |ssdlab / document − 1| is at most this (issue 14's bar).
WITHIN = 0.15
PERCENT = f"{WITHIN * 100:.0f} %"

HEADERS = (
    "document",
    "figure",
    "metric",
    "document value",
    "ssdlab",
    "difference",
    "over seeds and assumptions",
    "label",
)
BEGIN = "<!-- fidelity-scoreboard:begin (scripts/fidelity.py writes this table) -->"
END = "<!-- fidelity-scoreboard:end -->"


@dataclass(frozen=True)
class Entry:
    """One scoreboard line: a compared row and where it comes from."""

    document: str
    figure: str
    row: Row


@dataclass
class Tally:
    """What the scoreboard counts. ``predictions`` are prediction rows with a relative
    difference (a document value other than 0 and an ssdlab value); ``within`` of them are
    within :data:`WITHIN`. Prediction rows against a document value of 0 have only an absolute
    difference and are counted apart (``zero_document``), as are those the document states as a
    direction (``directions``, of which ``directions_agree`` go the same way); prediction rows
    with no ssdlab value, or a document statement without a number or direction ("nearly
    saturated"), are ``unscored``. A prediction marked fragile (its verdict turns with the seed
    or an assumed parameter: ``reproduce.sensitivity``) is counted apart (``fragile``, of which
    ``fragile_held`` are within or match as shipped). ``labels`` counts every compared row by
    label."""

    predictions: int = 0
    within: int = 0
    zero_document: int = 0
    directions: int = 0
    directions_agree: int = 0
    unscored: int = 0
    fragile: int = 0
    fragile_held: int = 0
    labels: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ROW_LABELS, 0))

    def line(self) -> str:
        def n(count: int, what: str) -> str:
            return f"{count} {what}{'' if count == 1 else 's'}"

        others = ", ".join(
            f"{self.labels[label]} {label}" for label in ROW_LABELS if label != "prediction"
        )
        text = f"predictions within {PERCENT}: {self.within} of {self.predictions}"
        text += f" (not counted: {others}"
        if self.zero_document:
            text += f"; {n(self.zero_document, 'prediction')} against a document value of 0,"
            text += " by absolute difference only"
        if self.directions:
            text += f"; directions: {self.directions_agree} of {self.directions} match"
        if self.fragile:
            text += f"; {n(self.fragile, 'fragile prediction')} counted apart"
            text += f" ({self.fragile_held} within {PERCENT} or matching as shipped)"
        if self.unscored:
            text += f"; {n(self.unscored, 'prediction')} with no number to score"
        return text + ")"


def tally(rows: Iterable[Row]) -> Tally:
    """Count the compared rows: only predictions are scored."""
    out = Tally()
    for row in rows:
        if not row.compared:
            continue
        out.labels[row.label] += 1
        if row.label != "prediction":
            continue
        if row.fragile and (row.difference is not None or row.agrees is not None):
            # Its verdict turns inside the seeds' spread or an assumption's range.
            out.fragile += 1
            if row.difference is not None:
                out.fragile_held += round(abs(row.difference), 9) <= WITHIN
            else:
                out.fragile_held += bool(row.agrees)
            continue
        if row.difference is not None:
            out.predictions += 1
            # Rounded: 85 / 100 − 1 is −0.15000000000000002 in binary floating point.
            out.within += round(abs(row.difference), 9) <= WITHIN
        elif row.paper == 0 and row.abs_difference is not None:
            out.zero_document += 1
        elif row.agrees is not None:
            out.directions += 1
            out.directions_agree += row.agrees
        else:
            out.unscored += 1
    return out


def entries(reproductions: Iterable[Reproduction]) -> list[Entry]:
    """The compared rows of each reproduction, in order."""
    return [
        Entry(r.experiment.document, r.experiment.target, row)
        for r in reproductions
        for row in r.rows
        if row.compared
    ]


def significant(value: float | None, digits: int = 4) -> str:
    from ..experiments.report import significant as fmt

    return fmt(value, digits)


def format_difference(row: Row) -> str:
    """The relative difference as a percentage; where the document's value is 0, the absolute
    difference in the row's unit (percentage points for a row in %)."""
    if row.difference is not None:
        return f"{row.difference * 100:+.1f} %"
    if row.abs_difference is not None:
        unit = "pp" if row.unit == "%" else row.unit
        sign = "+" if row.abs_difference >= 0 else "-"  # as the relative difference writes it
        return f"{sign}{significant(abs(row.abs_difference))} {unit} (absolute)".replace("  ", " ")
    return "–"


def cells(entry: Entry) -> list[str]:
    """The scoreboard's cells for one entry, in :data:`HEADERS` order."""
    row = entry.row
    unit = f" {row.unit}" if row.unit else ""
    paper = "–" if row.paper is None else significant(row.paper) + unit
    if row.paper is None and row.basis.startswith("stated as"):
        paper = row.basis.removeprefix("stated as ").split(" (")[0]
    ssdlab = "–" if row.ssdlab is None else significant(row.ssdlab) + unit
    difference = format_difference(row)
    if difference == "–" and row.agrees is not None:
        difference = "matches" if row.agrees else "does not match"
    return [
        _document(entry.document),
        entry.figure,
        row.metric,
        paper,
        ssdlab,
        difference,
        format_range(row),
        f"{row.label}, fragile" if row.fragile else row.label,
    ]


def format_range(row: Row) -> str:
    """A prediction's difference (or, against a document value of 0 or as a direction, its
    figure) at the lowest and highest figure it took over the seeds and the assumptions'
    ranges (``reproduce.sensitivity``); "–" where that was not measured."""
    if row.figure_range is None:
        return "–"
    low, high = row.figure_range
    if row.paper not in (None, 0):
        return f"{(low / row.paper - 1) * 100:+.1f} to {(high / row.paper - 1) * 100:+.1f} %"
    return f"{significant(low)} to {significant(high)}"


def _document(name: str) -> str:
    """A seed file's name cut to "seed 000"; any other name as it is."""
    if name.startswith("seed ") and "_" in name:
        return name.split("_")[0]
    return name


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def markdown(board: Sequence[Entry]) -> str:
    """The scoreboard as a Markdown table and its tally line."""
    lines = [
        "| " + " | ".join(HEADERS) + " |",
        "|" + "|".join("---" for _ in HEADERS) + "|",
    ]
    lines += ["| " + " | ".join(_escape(c) for c in cells(e)) + " |" for e in board]
    lines += ["", tally(e.row for e in board).line() + "."]
    return "\n".join(lines) + "\n"


def splice(document: str, table: str) -> str:
    """``document`` with the text between :data:`BEGIN` and :data:`END` replaced by
    ``table``; an error if the markers are missing."""
    start, end = document.find(BEGIN), document.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the document has no {BEGIN!r} ... {END!r} section")
    return document[: start + len(BEGIN)] + "\n" + table + document[end:]


TABLE_LINE = re.compile(r"^\| .* \|$")


def check_section(document: str) -> list[str]:
    """The problems with the scoreboard section of ``document`` as :func:`markdown` writes it:
    its header, its separator, seven cells a line, a known label in the last, and the tally
    line. Empty when the format is right (the numbers are not checked: they need the runs)."""
    start, end = document.find(BEGIN), document.find(END)
    if start < 0 or end < start:
        return [f"no {BEGIN!r} ... {END!r} section"]
    lines = document[start + len(BEGIN) : end].strip("\n").split("\n")
    problems = []
    header = "| " + " | ".join(HEADERS) + " |"
    separator = "|" + "|".join("---" for _ in HEADERS) + "|"
    if lines[:2] != [header, separator]:
        problems.append(f"the table must start with {header!r} and {separator!r}")
    body = []
    for line in lines[2:]:
        if not line:
            break
        body.append(line)
    if not body:
        problems.append("the table has no rows")
    for line in body:
        found = re.split(r"(?<!\\)\|", line)[1:-1]
        if not TABLE_LINE.match(line) or len(found) != len(HEADERS):
            problems.append(f"not a {len(HEADERS)}-cell row: {line!r}")
        elif found[-1].strip().removesuffix(", fragile") not in ROW_LABELS:
            problems.append(f"unknown label {found[-1].strip()!r} in {line!r}")
    rest = [line for line in lines[2 + len(body) :] if line]
    if len(rest) != 1 or not rest[0].startswith(f"predictions within {PERCENT}: "):
        problems.append("the table must be followed by one tally line 'predictions within ...'")
    return problems
