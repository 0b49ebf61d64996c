#!/usr/bin/env python3
"""Regenerate the fidelity scoreboard in docs/experiments.md (issue 14 point 8).

Runs every reproduction (as ``ssdlab reproduce --all``; runs already in OUT are reused) and
writes the scoreboard table between the scoreboard markers of docs/experiments.md.

    python scripts/fidelity.py [--out out/reproduce] [--doc docs/experiments.md] [--check]
    python scripts/fidelity.py --refit NAME
    python scripts/fidelity.py --calibrations

``--check`` runs nothing: it only says whether the doc's table is in the format the scoreboard
writes (exit 1 if not).

``--refit NAME`` refits one calibration (issue 40: a refit is a recorded step): it bisects the
fitted parameter over its range on the calibration's points alone, printing each value and the
figure it gives, then rewrites the value, the note that says what it gives and the docs'
mentions together (``ssdlab.reproduce.calibration``). ``--calibrations`` lists them with the
figure each gives now against its target and tolerance (what the CI guard checks).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

from ssdlab.reproduce import (
    blocks,
    calibration,
    experiments,
    run_experiment,
    scoreboard,
    sensitivity,
)

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("out/reproduce"))
    parser.add_argument("--doc", type=Path, default=ROOT / "docs" / "experiments.md")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--check", action="store_true", help="check the doc's format only")
    parser.add_argument("--refit", metavar="NAME", help="refit one calibration (see above)")
    parser.add_argument(
        "--calibrations", action="store_true", help="list the calibrations and their figures"
    )
    parser.add_argument(
        "--blocks",
        nargs="*",
        metavar="NAME",
        help="regenerate the docs' generated blocks (all, or those named) and their artefacts",
    )
    parser.add_argument(
        "--experiments",
        nargs="+",
        metavar="NAME",
        help="with --blocks prediction-sensitivity: measure only these reproductions, keeping"
        " the others' entries from docs/generated/sensitivity.json",
    )
    args = parser.parse_args()
    if args.experiments is not None and args.blocks is None:
        print("error: --experiments: only with --blocks prediction-sensitivity", file=sys.stderr)
        return 2
    if args.blocks is not None:
        try:
            chosen = [blocks.find(n) for n in args.blocks] if args.blocks else blocks.blocks()
        except LookupError as error:
            print(f"error: --blocks: {error}", file=sys.stderr)
            return 2
        if args.experiments is not None:
            known = {e.name for e in experiments()}
            unknown = [n for n in args.experiments if n not in known]
            if unknown:
                print(
                    f"error: --experiments: no reproduction named {unknown[0]!r}; expected one"
                    f" of {', '.join(sorted(known))}",
                    file=sys.stderr,
                )
                return 2
            if not any(b.artefact == sensitivity.ARTEFACT for b in chosen):
                print(
                    "error: --experiments: only with --blocks prediction-sensitivity",
                    file=sys.stderr,
                )
                return 2
            only = set(args.experiments)
            chosen = [
                dataclasses.replace(
                    b,
                    produce=lambda: sensitivity.measure(
                        ROOT / "out",
                        report=lambda line: print(f"  {line}", flush=True),
                        only=only,
                        previous=blocks.load(sensitivity.ARTEFACT),
                    ),
                )
                if b.artefact == sensitivity.ARTEFACT
                else b
                for b in chosen
            ]
        own = [b for b in chosen if b.artefact != blocks.REPRODUCTIONS]
        rows = [b for b in chosen if b.artefact == blocks.REPRODUCTIONS]
        for path in blocks.regenerate(own):
            print(f"wrote {path}")
        if any(b.artefact == sensitivity.ARTEFACT for b in own):
            # New fragile marks: into reproductions.json, the scoreboard and its blocks.
            rows = [b for b in blocks.blocks() if b.artefact == blocks.REPRODUCTIONS]
            data = blocks.load(blocks.REPRODUCTIONS)
            sensitivity.mark(data, blocks.load(sensitivity.ARTEFACT))
            blocks.save(blocks.REPRODUCTIONS, data)
            text = args.doc.read_text(encoding="utf-8")
            args.doc.write_text(
                scoreboard.splice(text, blocks.scoreboard_from(data)), encoding="utf-8"
            )
            print(f"wrote {blocks.REPRODUCTIONS} and the scoreboard in {args.doc}")
            for problem in sensitivity.stale(data, blocks.load(sensitivity.ARTEFACT)):
                print(f"stale: {problem}", file=sys.stderr)
        for path in blocks.regenerate(rows, run=False):
            print(f"wrote {path}")
        if rows:
            print(f"(rendered from {blocks.REPRODUCTIONS}: python scripts/fidelity.py reruns it)")
        return 0
    if args.refit is not None:
        try:
            chosen = calibration.find(args.refit)
        except LookupError as error:
            print(f"error: --refit: {error}", file=sys.stderr)
            return 2
        try:
            calibration.refit(chosen, report=lambda line: print(line, flush=True))
        except (RuntimeError, ValueError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        return 0
    if args.calibrations:
        bad = 0
        for guard, figure in calibration.measure_all(
            calibration.calibrations(), workers=args.workers
        ):
            ok = guard.within(figure)
            bad += not ok
            shown = "–" if figure is None else f"{figure:,.4g} ({figure / guard.target - 1:+.1%})"
            print(
                f"{'ok  ' if ok else 'OUT '} {guard.name}: {guard.parameter} → {shown},"
                f" target {guard.target:,.4g} ± {guard.tolerance:.0%}"
            )
        return 1 if bad else 0
    text = args.doc.read_text(encoding="utf-8")
    if args.check:
        problems = scoreboard.check_section(text)
        for problem in problems:
            print(f"{args.doc}: {problem}", file=sys.stderr)
        return 1 if problems else 0
    start = time.monotonic()
    reproductions = []
    for experiment in experiments():
        reproduction = run_experiment(
            experiment.name, args.out / experiment.name, workers=args.workers
        )
        for point, error in reproduction.failed:
            print(f"failed: {experiment.name}: point {point}: {error}", file=sys.stderr)
        reproductions.append(reproduction)
    data = blocks.reproductions_data(reproductions)
    measured = blocks.ROOT / sensitivity.ARTEFACT
    if measured.is_file():
        sensitivity.mark(data, blocks.load(sensitivity.ARTEFACT))
        for problem in sensitivity.stale(data, blocks.load(sensitivity.ARTEFACT)):
            print(
                f"stale sensitivity ({problem}): run --blocks prediction-sensitivity",
                file=sys.stderr,
            )
    blocks.save(blocks.REPRODUCTIONS, data)
    args.doc.write_text(scoreboard.splice(text, blocks.scoreboard_from(data)), encoding="utf-8")
    print(f"{args.doc}: scoreboard written ({time.monotonic() - start:.0f} s)")
    rendered = [b for b in blocks.blocks() if b.artefact == blocks.REPRODUCTIONS]
    for path in blocks.regenerate(rendered, run=False):
        print(f"wrote {path}")
    return 1 if any(r.failed for r in reproductions) else 0


if __name__ == "__main__":
    sys.exit(main())
