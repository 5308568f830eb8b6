"""Count what corrupted input does to every ncuh command (issue 14's closing numbers).

    python benchmarks/fuzz_counts.py [--reports 150] [--json 150] [--toml 100] [--seed 14]

Runs the seeded corruption sweep of tests/fuzz_sweep.py (the one CI runs, larger): the two real
H200 reports of tests/fixtures with 4 KiB flipped at 15-95%, a few bytes XORed, truncated or
4 KiB zeroed, through `report`, `export`, `diff` (both ways) and `writeup`; manifest.json and
bench.json of a run directory with characters flipped, truncated or a field given a wrong type,
through `diff` and `writeup`; threshold files the same way through `diff --config`. Prints one
row per input and command, then the totals: cases tried, tracebacks (target 0), silent
successes on corrupted input (target 0), and the wall time. Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fuzz_sweep import sweep, table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=150, help="corruptions per report")
    parser.add_argument("--json", type=int, default=150, help="mutants per JSON file")
    parser.add_argument("--toml", type=int, default=100, help="mutants of a thresholds file")
    parser.add_argument("--seed", type=int, default=14)
    args = parser.parse_args()
    started = time.monotonic()
    tally = sweep(args.reports, args.json, args.toml, seed=args.seed)
    wall = time.monotonic() - started
    print(table(tally))
    print()
    print(f"cases tried: {tally.total()}")
    print(f"tracebacks: {tally.total('traceback')} (target 0)")
    print(f"silent successes on corrupted input: {tally.total('silent')} (target 0)")
    print(f"refusals not on one line: {tally.total('bad error')} (target 0)")
    print(f"wall time: {wall:.1f} s (seed {args.seed})")
    for example in tally.examples:
        print(f"  {example}")
    bad = tally.total("traceback") + tally.total("silent") + tally.total("bad error")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
