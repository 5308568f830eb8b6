"""Count what corrupted and hostile input does to every ncuh command.

    python benchmarks/fuzz_counts.py [--reports 150] [--json 150] [--toml 100] [--seed 14]

Runs the seeded corruption sweep of tests/fuzz_sweep.py (the one CI runs, larger): the two real
H200 reports of tests/fixtures with 4 KiB flipped at 15-95%, a few bytes XORed, truncated or
4 KiB zeroed, through `report`, `export`, `diff` (both ways) and `writeup`; manifest.json and
bench.json of a run directory with characters flipped, truncated or a field given a wrong type,
through `diff` and `writeup`; threshold files the same way through `diff --config`; and every
hostile cause of issue 29 once (nesting and sizes past each limit, FIFOs and devices as project
files, paths out of the project, names with terminal escapes, formula labels). Prints one row per
input and command, then the totals: cases tried, tracebacks, silent successes where the
structure could tell, unclean output, inputs changed (data lost), all with target 0; the values
that changed where nothing could tell (a report has no checksum); and the wall time. Exits 1
when a target is missed.
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
    print(f"silent successes where a checksum or the structure can tell: "
          f"{tally.total('silent')} (target 0)")
    print(f"refusals not on one line: {tally.total('bad error')} (target 0)")
    print(f"raw control characters in output, failed output checks: {tally.total('unclean')} "
          "(target 0)")
    print(f"data lost (an input changed): {tally.total('data lost')} (target 0)")
    print(f"accepted with other values, nothing could tell: {tally.total('changed value')} "
          f"commands, {tally.changed_values} values")
    print(f"wall time: {wall:.1f} s (seed {args.seed})")
    for example in tally.examples:
        print(f"  {example}")
    bad = sum(tally.total(outcome) for outcome in ("traceback", "silent", "bad error", "unclean",
                                                   "data lost"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
