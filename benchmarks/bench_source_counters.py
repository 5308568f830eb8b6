"""What Source Counters' per-instruction metrics cost `pages`, and what its thinning saves (GPU).

    python benchmarks/bench_source_counters.py --out /tmp/ncuh-bench/source_counters.md \
        [--variants naive,coalesced] [--size 4096] [--repeats 2] [--chain]

Each variant is profiled with `--set pages` on three section folders, in turn (`--repeats`
rounds, the folders alternating within each):

* `shipped`: the `pages` overlay as ncuh builds it, Source Counters thinned of
  `THINNED_METRICS` (every per-instruction memory metric, the thread counts) and without the two
  rules that read the sectors and wavefronts (`RULES_LEFT_OUT`);
* `unthinned`: the same overlay with Source Counters and its rules as ncu ships them (ncuh
  before it was thinned);
* `memory_rules`: the overlay as `pages` was before the sectors per instruction left it: the
  global sectors, shared wavefronts and their ideals kept, with UncoalescedGlobalAccess and
  UncoalescedSharedAccess, which read them (what the coalescing finding read before it read
  the hardware counters).

For each run: the entry's ncu seconds (from its turn, as the manifest records them) and how
each folder's last run's findings differ from `unthinned`'s first run's (rule, kind, ncu rule):
with `--repeats 2` or more, `unthinned` against itself is the run-to-run noise. `--chain`
profiles `--all` at `--size` instead, head starts and all, as a user's run does.

ncuh has no option to choose a section folder, so each profile runs in a child process
(`--child FOLDER -- ncuh arguments`) in which `harness.profile.run.with_section_overlay`
returns that folder: the rest of `ncuh profile` is as shipped.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.profile import section_overlay as so  # noqa: E402
from harness.profile.run import find_ncu  # noqa: E402

# What `memory_rules` keeps of THINNED_METRICS: the sectors and wavefronts per instruction.
MEMORY_RULE_INPUTS = (
    "memory_l1_wavefronts_shared", "memory_l1_wavefronts_shared_ideal",
    "memory_l2_theoretical_sectors_global", "memory_l2_theoretical_sectors_global_ideal",
    "derived__memory_l1_wavefronts_shared_excessive",
    "derived__memory_l2_theoretical_sectors_global_excessive",
)
FOLDERS = ("shipped", "unthinned", "memory_rules")


def build_folders(work: Path) -> dict[str, Path]:
    stock = so.stock_sections(find_ncu())
    if stock is None:
        raise SystemExit("no stock section folder beside ncu")
    thinned = so.THINNED_METRICS["SourceCounters"]
    kinds = {
        "shipped": ({"SourceCounters": thinned}, so.RULES_LEFT_OUT),
        "unthinned": ({}, ()),
        "memory_rules": ({"SourceCounters": tuple(name for name in thinned
                                                  if name not in MEMORY_RULE_INPUTS)}, ()),
    }
    folders = {}
    for name in FOLDERS:
        dest = work / f"overlay-{name}"
        thin, rules = kinds[name]
        so.build_overlay(stock, dest, thinned=thin, rules_left_out=rules)
        folders[name] = dest / so.SECTIONS
    return folders


def child(folder: str, ncuh_args: list[str]) -> None:
    """`ncuh` with `pages` on `folder` (the slimmed sections as the overlay slims them)."""
    import harness.profile.run as run

    shipped = run.with_section_overlay

    def on_folder(settings: Any, ncu: Any) -> Any:
        settings = shipped(settings, ncu)
        return dataclasses.replace(settings, section_folder=folder)

    run.with_section_overlay = on_folder
    sys.argv = ["ncuh", *ncuh_args]
    from harness.entry import main

    main()


def profile(folder: Path, targets: list[str], size: str, out: Path) -> dict[str, Any]:
    argv = [sys.executable, __file__, "--child", str(folder), "--", "profile", *targets,
            "--size", size, "--out", str(out)]
    started = time.perf_counter()
    completed = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, check=False)
    wall = time.perf_counter() - started
    if completed.returncode != 0:
        raise SystemExit(f"profile failed:\n{completed.stdout}{completed.stderr[-2000:]}")
    run_dir = Path(completed.stdout.strip().splitlines()[-1])
    run_dir = run_dir if run_dir.is_absolute() else ROOT / run_dir
    manifest = json.loads((run_dir / "manifest.json").read_text())
    return {"wall_s": round(wall, 2), "run": str(run_dir),
            "entries": {e["label"]: e["seconds"] for e in manifest["entries"]}}


def findings(run_dir: str) -> dict[str, set[tuple[str, str, str]]]:
    from harness.findings.registry import run_rules
    from harness.report.builder import load_kernel_reports

    return {report.stem: {(f.rule, f.kind, str(f.metrics.get("ncu_rule", "")))
                          for profile in load_kernel_reports(report) for f in run_rules(profile)}
            for report in sorted(Path(run_dir).glob("*.ncu-rep"))}


def main() -> int:
    if "--child" in sys.argv:
        at = sys.argv.index("--child")
        child(sys.argv[at + 1], sys.argv[sys.argv.index("--") + 1:])
        return 0
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--variants", default="naive,coalesced")
    parser.add_argument("--size", default="4096")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--chain", action="store_true", help="profile --all instead")
    args = parser.parse_args()
    targets = (["--all"] if args.chain else
               [item for name in args.variants.split(",") for item in ("--variant", name)])
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in FOLDERS}
    with tempfile.TemporaryDirectory(prefix="ncuh-source-counters-") as tmp:
        work = Path(tmp)
        folders = build_folders(work)
        profile(folders["shipped"], targets, args.size, work / "warm-up")  # compiles, caches
        for round_ in range(args.repeats):
            for name in FOLDERS:
                result = profile(folders[name], targets, args.size, work / f"{name}-{round_}")
                runs[name].append(result)
                print(name, round_, result["wall_s"], result["entries"], flush=True)
        changed = {name: {} for name in FOLDERS}
        reference = findings(runs["unthinned"][0]["run"])
        for name in FOLDERS:
            for label, found in findings(runs[name][-1]["run"]).items():
                gone, new = reference.get(label, set()) - found, found - reference.get(label, set())
                if gone or new:
                    changed[name][label] = {"lost": sorted(gone), "gained": sorted(new)}
        shutil.rmtree(work, ignore_errors=True)
    args.out.with_suffix(".json").write_text(json.dumps(
        {"size": args.size, "targets": targets, "runs": runs, "findings_changed": changed},
        indent=1, default=list) + "\n")
    args.out.write_text(markdown(args, runs, changed))
    print(args.out.read_text())
    return 0


def markdown(args: argparse.Namespace, runs: dict[str, list[dict[str, Any]]],
             changed: dict[str, dict[str, Any]]) -> str:
    labels = list(runs["unthinned"][0]["entries"])
    lines = [f"# Source Counters in `pages`: {', '.join(labels)} (size {args.size})", "",
             "`benchmarks/bench_source_counters.py`: each entry's ncu seconds (median of "
             f"{args.repeats}, the folders alternating), and the run's wall time.", "",
             "| entry | " + " | ".join(FOLDERS) + " |", "|---|" + "--:|" * len(FOLDERS)]
    for label in [*labels, "wall"]:
        cells = []
        for name in FOLDERS:
            values = [run["wall_s"] if label == "wall" else run["entries"][label]
                      for run in runs[name]]
            cells.append(f"{statistics.median(values):.2f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "Findings of each folder's last run against `unthinned`'s first run (rule, kind, "
              "ncu rule):", ""]
    for name in FOLDERS:
        lines.append(f"- `{name}`: " + ("the same" if not changed[name] else "; ".join(
            f"{label} lost {d['lost']} gained {d['gained']}"
            for label, d in changed[name].items())))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
