"""How many replay passes each ncu section costs, alone (GPU machine).

    python benchmarks/bench_section_passes.py --out reports/profile/h100_section_passes.md \
        [--variant register_tiled] [--size 1024]

For every section of `pages` and of `full`, one ncu run of the variant with only that section
(ncuh's own ncu command line, `--section` swapped), then `pages` with and without its section
overlay, and `full`: ncu's pass count as it printed it and the wall time. Why `pages` cannot go
below the union of its sections' passes, and what the two memory widget sections cost, in one
table.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.profile.ncu_command import PAGES_METRICS, PAGES_SECTIONS, NcuSettings  # noqa: E402
from harness.profile.progress import passes_in  # noqa: E402
from harness.profile.run import (  # noqa: E402
    ProfileRequest,
    find_ncu,
    plan,
    runner_environment,
    with_section_overlay,
)

FULL_ONLY = ("PmSampling", "PmSampling_WarpStates", "SpeedOfLight_HierarchicalDoubleRooflineChart",
             "SpeedOfLight_HierarchicalHalfRooflineChart",
             "SpeedOfLight_HierarchicalTensorRooflineChart", "Nvlink", "NumaAffinity")


def run(variant: str, size: str, settings: NcuSettings, work: Path) -> tuple[float, int | None]:
    ncu = find_ncu()
    request = ProfileRequest(variants=(variant,), sizes=(size,), settings=settings)
    (argv,) = plan(request).command_lines(ncu, work)
    started = time.perf_counter()
    completed = subprocess.run(argv, env=runner_environment(), capture_output=True, text=True,
                               check=False, timeout=600)
    seconds = time.perf_counter() - started
    if completed.returncode != 0:
        return seconds, None
    return seconds, passes_in(completed.stdout + completed.stderr)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--variant", default="register_tiled")
    parser.add_argument("--size", default="1024")
    args = parser.parse_args()
    os.chdir(ROOT)
    rows: list[tuple[str, float, int | None]] = []
    with tempfile.TemporaryDirectory(prefix="ncuh-passes-") as tmp:
        work = Path(tmp)

        def measure(name: str, settings: NcuSettings) -> None:
            seconds, passes = run(args.variant, args.size, settings, work)
            rows.append((name, seconds, passes))
            print(f"{name:55} {seconds:6.2f} s  {passes} passes", flush=True)

        one_metric = NcuSettings(set=None, metrics=("gpu__time_duration.sum",))
        measure("(warm-up, not counted)", one_metric)
        rows.clear()
        measure("gpu__time_duration.sum only", one_metric)
        for section in (*PAGES_SECTIONS, *FULL_ONLY):
            measure(f"--section {section}", NcuSettings(set=None, sections=(section,)))
        for metric in PAGES_METRICS:
            measure(f"--metrics {metric}", NcuSettings(set=None, metrics=(metric,)))
        stock = NcuSettings(set="pages")
        overlay = with_section_overlay(stock, find_ncu())
        measure("pages, ncu's stock sections", stock)
        measure("pages, with the section overlay", overlay)
        measure("full", NcuSettings(set="full"))
        assert dataclasses.replace(overlay, section_folder=None, slimmed_sections=()) == stock
    lines = [f"# Replay passes per ncu section ({args.variant}, {args.size})", "",
             "`benchmarks/bench_section_passes.py`: ncuh's ncu command line with one section at a "
             "time; ncu's own pass count.", "",
             "| collected | wall (s) | passes |", "|---|--:|--:|"]
    lines += [f"| {name} | {seconds:.2f} | {passes} |" for name, seconds, passes in rows]
    args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
