"""How many replay passes each ncu section costs, alone and within `pages` (GPU machine).

    python benchmarks/bench_section_passes.py --out /tmp/ncuh-bench/section_passes.md \
        [--variant register_tiled] [--size 1024] [--floor] \
        [--instrumented-variant naive --instrumented-size 4096]

For every section of `pages` and of `full`, one ncu run of the variant with only that section
(ncuh's own ncu command line, `--section` swapped), then `pages` with and without its section
overlay, and `full`: ncu's pass count as it printed it and the wall time. Why `pages` cannot go
below the union of its sections' passes, and what the two memory widget sections cost, in one
table.

`--floor`: what each section adds to `pages` (pages less that section), and what slimming its
bodies too would save (an overlay that also trades that section's widgets for their metrics,
as `harness.profile.section_overlay` does for the two memory sections): where `pages`' passes
come from, and whether any are left to take without taking a finding with them.

`--instrumented-variant/--instrumented-size`: the seconds of each group of source-level
(SASS-patched and PC-sampled) metrics on a slow kernel, alone: what the instrumented passes
cost, which `pages` and `full` both pay.
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
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.profile.entry import runner_environment  # noqa: E402
from harness.profile.ncu_command import PAGES_METRICS, PAGES_SECTIONS, NcuSettings  # noqa: E402
from harness.profile.planning import ProfileRequest, plan  # noqa: E402
from harness.profile.progress import passes_in  # noqa: E402
from harness.profile.run import find_ncu, with_section_overlay  # noqa: E402
from harness.profile.section_overlay import (  # noqa: E402
    SLIMMED_SECTIONS,
    OverlayError,
    build_overlay,
    stock_sections,
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


# Source-level metric groups (per PC), each alone: what SASS patching and PC sampling cost.
_EVICT = ("evict_type", "hitprop_evict_first", "hitprop_evict_last", "hitprop_evict_normal",
          "hitprop_evict_normal_demote", "missprop_evict_first", "missprop_evict_normal")
INSTRUMENTED_GROUPS: dict[str, tuple[str, ...]] = {
    "inst_executed (per PC)": ("inst_executed",),
    "inst_executed, thread_inst_executed(_true) (per PC)": (
        "inst_executed", "thread_inst_executed", "thread_inst_executed_true"),
    "memory_* (per PC: access, sectors, wavefronts)": (
        "memory_l2_theoretical_sectors_global", "memory_l2_theoretical_sectors_global_ideal",
        "memory_l1_wavefronts_shared", "memory_l1_wavefronts_shared_ideal",
        "memory_access_type", "memory_access_size_type", "memory_type",
        "memory_l1_tag_requests_global", "memory_l2_theoretical_sectors_local"),
    "L2 explicit evict policies (per PC)": tuple(
        f"smsp__sass_inst_executed_memdesc_explicit_{name}" for name in _EVICT),
    "PC sampling (stall reasons)": ("group:smsp__pcsamp_warp_stall_reasons",
                                    "group:smsp__pcsamp_warp_stall_reasons_not_issued"),
    "branch targets (per PC)": ("smsp__branch_targets_threads_divergent",),
    "per-opcode counts, with modifiers, inst_executed": (
        "sass__inst_executed_per_opcode", "sass__inst_executed_per_opcode_with_modifier_all",
        "inst_executed"),
    "SASS sums (global/shared ops, bytes per sector, local, spills)": (
        "smsp__sass_inst_executed_op_global_ld.sum", "smsp__sass_inst_executed_op_shared_ld.sum",
        "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio",
        "sass__inst_executed_local_loads", "sass__inst_executed_register_spilling"),
}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--variant", default="register_tiled")
    parser.add_argument("--size", default="1024")
    parser.add_argument("--floor", action="store_true",
                        help="pages less each section, and with each section's bodies slimmed")
    parser.add_argument("--skip-alone", action="store_true",
                        help="leave out the sections alone (the first table)")
    parser.add_argument("--instrumented-variant", default=None)
    parser.add_argument("--instrumented-size", default="4096")
    args = parser.parse_args()
    os.chdir(ROOT)
    rows: list[tuple[str, float, int | None]] = []
    with tempfile.TemporaryDirectory(prefix="ncuh-passes-") as tmp:
        work = Path(tmp)

        def measure(name: str, settings: NcuSettings, variant: str = args.variant,
                    size: str = args.size) -> None:
            seconds, passes = run(variant, size, settings, work)
            rows.append((name, seconds, passes))
            print(f"{name:55} {seconds:6.2f} s  {passes} passes", flush=True)

        one_metric = NcuSettings(set=None, metrics=("gpu__time_duration.sum",))
        measure("(warm-up, not counted)", one_metric)
        rows.clear()
        measure("gpu__time_duration.sum only", one_metric)
        if not args.skip_alone:
            for section in (*PAGES_SECTIONS, *FULL_ONLY):
                measure(f"--section {section}", NcuSettings(set=None, sections=(section,)))
            for metric in PAGES_METRICS:
                measure(f"--metrics {metric}", NcuSettings(set=None, metrics=(metric,)))
        stock = NcuSettings(set="pages")
        overlay = with_section_overlay(stock, find_ncu())
        measure("pages, ncu's stock sections", stock)
        measure("pages, with the section overlay", overlay)
        measure("full", NcuSettings(set="full"))
        assert dataclasses.replace(overlay, section_folder=None, slimmed_sections=(),
                                   thinned_metrics=()) == stock
        if args.floor and overlay.section_folder is not None:
            floor(measure, overlay, work)
        if args.instrumented_variant:
            for name, metrics in INSTRUMENTED_GROUPS.items():
                measure(f"{args.instrumented_variant} {args.instrumented_size}: {name}",
                        NcuSettings(set=None, metrics=metrics), args.instrumented_variant,
                        args.instrumented_size)
            measure(f"{args.instrumented_variant} {args.instrumented_size}: one metric",
                    one_metric, args.instrumented_variant, args.instrumented_size)
    lines = [f"# Replay passes per ncu section ({args.variant}, {args.size})", "",
             "`benchmarks/bench_section_passes.py`: ncuh's ncu command line with one section at a "
             "time; ncu's own pass count.", "",
             "| collected | wall (s) | passes |", "|---|--:|--:|"]
    lines += [f"| {name} | {seconds:.2f} | {passes} |" for name, seconds, passes in rows]
    args.out.write_text("\n".join(lines) + "\n")
    return 0


def floor(measure: Any, overlay: NcuSettings, work: Path) -> None:
    """`pages` less each of its sections (on the overlay), and `pages` on an overlay that also
    slims that section's bodies."""
    pages = NcuSettings(set=None, sections=PAGES_SECTIONS, metrics=PAGES_METRICS,
                        section_folder=overlay.section_folder)
    stock = stock_sections(find_ncu())
    for section in PAGES_SECTIONS:
        rest = tuple(name for name in PAGES_SECTIONS if name != section)
        measure(f"pages less {section}", dataclasses.replace(pages, sections=rest))
        if section in SLIMMED_SECTIONS or stock is None:
            continue
        folder = work / f"overlay-{section}"
        try:
            build_overlay(stock, folder, slimmed=(*SLIMMED_SECTIONS, section))
        except OverlayError as error:  # a section without bodies to slim, say
            print(f"{section}: {error}", flush=True)
            continue
        measure(f"pages, {section}'s bodies slimmed too",
                dataclasses.replace(pages, section_folder=str(folder / "sections")))


if __name__ == "__main__":
    sys.exit(main())
