#!/usr/bin/env python3
"""Regenerate the fidelity scoreboard in docs/experiments.md (issue 14 point 8).

Runs every reproduction (as ``ssdlab reproduce --all``; runs already in OUT are reused) and
writes the scoreboard table between the scoreboard markers of docs/experiments.md.

    python scripts/fidelity.py [--out out/reproduce] [--doc docs/experiments.md] [--check]

``--check`` runs nothing: it only says whether the doc's table is in the format the scoreboard
writes (exit 1 if not).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ssdlab.reproduce import experiments, run_experiment, scoreboard

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("out/reproduce"))
    parser.add_argument("--doc", type=Path, default=ROOT / "docs" / "experiments.md")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--check", action="store_true", help="check the doc's format only")
    args = parser.parse_args()
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
    table = scoreboard.markdown(scoreboard.entries(reproductions))
    args.doc.write_text(scoreboard.splice(text, table), encoding="utf-8")
    print(f"{args.doc}: scoreboard written ({time.monotonic() - start:.0f} s)")
    return 1 if any(r.failed for r in reproductions) else 0


if __name__ == "__main__":
    sys.exit(main())
