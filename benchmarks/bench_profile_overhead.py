"""How much time `ncuh profile` adds to ncu, and how long the whole chain takes (GPU machine).

    python benchmarks/bench_profile_overhead.py --out /tmp/ncuh-bench/profile_overhead.json \
        [--variant register_tiled] [--size 2048] [--repeats 5] [--all-size 4096] [--skip-all] \
        [--chain-repeats 5] \
        [--compare-full] [--pair-dir DIR --pair-size 1024] [--metrics-csv-too] [--first-run-too]

1. Overhead: wall time of `ncuh profile --variant X --size S` against the same ncu command
   line typed by hand (the first command line of the run's manifest, run directly on the
   runner). After one uncounted warm-up, runs alternate (hand, ncuh, ...) so drift hits both;
   medians compared.
   Target: ratio <= 1.03. ncuh's timed runs find the plan the warm-up kept
   (`harness.profile.plan_cache`), as every repeat of a request does; `--first-run-too` also
   times it with `NCUH_PLAN_CACHE=off`, what a request's first run costs (the project checked
   before ncu starts), and `--metrics-csv-too` with `--metrics-csv` (the table ncuh writes
   only when asked: its last part can only follow the last ncu).
   Where ncuh's extra time goes, from each run's manifest `timings`: ncu (inside ncuh),
   post-processing (environment and metrics.csv children), and the rest of the wall time
   (Python start, planning, manifest, rename). Then each post-processing child alone on the
   last run's report: the metrics export with 1, 2, 4 and 8 processes, and the environment
   probe with and without CUDA (CuPy import and CUDA start, what it did before).
2. Chain: wall time of `ncuh profile --all --size 4096` against the sum of ncu's own times
   (the entries' `seconds` in its manifest): post-processing overlaps ncu, so the target is
   ratio <= 1.01. `--chain-repeats N` runs it N times in a row; the median ratio counts, and
   each run's excess is split into before the manifest's clock, during it and after the last
   ncu. Each entry's ncu pass count comes from the manifest.
   `--warm-up` first runs every variant once without ncu, so that neither chain pays the
   first compiles of a fresh machine.
3. `--compare-full`: the chain again with `--set full`; the `pages` chain's wall time over
   full's (target <= 0.6), both pass counts, and each entry's findings both ways (rule, kind,
   ncu rule, read from the reports after the timed runs): the entries where they differ.
4. `--pair-dir`: each of `--pair-variants` (default `--variant`) at `--pair-size` recorded
   with `--set pages` and `--set full` into DIR as `<gpu>_pages_<label>.ncu-rep` /
   `<gpu>_full_<label>.ncu-rep`, with ncu's raw and details pages beside each: the committed
   fixture pairs tests/test_pages_set.py compares.

Writes the JSON result to --out and a Markdown table beside it (same name, .md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.profile.phases import PHASES  # noqa: E402  (the manifest's phase names)

OVERHEAD_TARGET = 1.03
CHAIN_TARGET_RATIO = 1.01  # --all wall time over the sum of ncu's own times
PAGES_TARGET_RATIO = 0.6  # the pages chain's wall time over the full chain's


def _timed(argv: list[str], timeout: float, env: dict[str, str] | None = None
           ) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    completed = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                               check=False, env=env)
    return time.perf_counter() - started, completed


def _ncuh(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "harness", "profile", *args]


def _run_dir(completed: subprocess.CompletedProcess[str]) -> Path:
    path = Path(completed.stdout.strip().splitlines()[-1])
    return path if path.is_absolute() else ROOT / path


def measure_overhead(variant: str, size: int, section_set: str, repeats: int,
                     work: Path, skip_post_steps: bool = False,
                     metrics_csv_too: bool = False, first_run_too: bool = False
                     ) -> dict[str, Any]:
    ncuh_argv = _ncuh(["--variant", variant, "--size", str(size), "--set", section_set,
                       "--out", str(work / "overhead")])
    # An uncounted first run fills CuPy's kernel cache and gives the command line to type.
    _, completed = _timed(ncuh_argv, timeout=600)
    if completed.returncode != 0:
        raise SystemExit(f"ncuh profile failed:\n{completed.stdout}{completed.stderr}")
    manifest = json.loads((_run_dir(completed) / "manifest.json").read_text())
    hand_argv = list(manifest["ncu"]["command_lines"][0])
    ncuh_s: list[float] = []
    hand_s: list[float] = []
    table_s: list[float] = []  # `--metrics-csv`: metrics.csv written too
    first_s: list[float] = []  # no kept plan: the project checked before ncu starts
    phases: list[dict[str, float]] = []
    for index in range(repeats):
        argv = list(hand_argv)
        argv[argv.index("-o") + 1] = str(work / f"hand_{index}.ncu-rep")
        seconds, completed = _timed(argv, timeout=600)
        if completed.returncode != 0:
            raise SystemExit(f"ncu by hand failed:\n{completed.stdout}{completed.stderr}")
        hand_s.append(seconds)
        seconds, completed = _timed(ncuh_argv, timeout=600)
        if completed.returncode != 0:
            raise SystemExit(f"ncuh profile failed:\n{completed.stdout}{completed.stderr}")
        ncuh_s.append(seconds)
        run_dir = _run_dir(completed)
        timings = json.loads((run_dir / "manifest.json").read_text())["timings"]
        phases.append({
            "wall_s": round(seconds, 3), "ncu_s": timings["ncu_s"], "post_s": timings["post_s"],
            "post_environment_s": timings.get("post_environment_s"),
            "post_metrics_s": timings.get("post_metrics_s"),
            "rest_s": round(seconds - timings["ncu_s"] - timings["post_s"], 3)})
        if metrics_csv_too:
            seconds, completed = _timed([*ncuh_argv, "--metrics-csv"], timeout=600)
            if completed.returncode != 0:
                raise SystemExit(f"ncuh profile failed:\n{completed.stdout}{completed.stderr}")
            table_s.append(seconds)
        if first_run_too:
            seconds, completed = _timed(ncuh_argv, timeout=600,
                                        env={**os.environ, "NCUH_PLAN_CACHE": "off"})
            if completed.returncode != 0:
                raise SystemExit(f"ncuh profile failed:\n{completed.stdout}{completed.stderr}")
            first_s.append(seconds)
    ratio = statistics.median(ncuh_s) / statistics.median(hand_s)
    extra: dict[str, Any] = {}
    if table_s:
        table_ratio = statistics.median(table_s) / statistics.median(hand_s)
        extra = {"metrics_csv_s": [round(s, 3) for s in table_s],
                 "metrics_csv_ratio": round(table_ratio, 3),
                 "metrics_csv_met": table_ratio <= OVERHEAD_TARGET}
    if first_s:
        first_ratio = statistics.median(first_s) / statistics.median(hand_s)
        extra.update({"first_run_s": [round(s, 3) for s in first_s],
                     "first_run_ratio": round(first_ratio, 3),
                     "first_run_met": first_ratio <= OVERHEAD_TARGET})
    return {
        "variant": variant, "size": size, "set": section_set, "repeats": repeats,
        "ncuh_s": [round(s, 3) for s in ncuh_s], "hand_s": [round(s, 3) for s in hand_s],
        "ncuh_median_s": round(statistics.median(ncuh_s), 3),
        "hand_median_s": round(statistics.median(hand_s), 3),
        "ratio": round(ratio, 3), "target": OVERHEAD_TARGET, "met": ratio <= OVERHEAD_TARGET,
        **extra,
        "hand_command": hand_argv,
        "phases_median_s": {key: round(statistics.median(p[key] for p in phases), 3)
                            for key in ("wall_s", "ncu_s", "post_s", "rest_s")},
        "phases_s": phases,
        # Each ncuh run over the ncu inside it: what ncuh adds, free of ncu's own spread from
        # run to run (which the medians above carry: ncu alone varies by 10% or more).
        "around_own_ncu_ratio": round(statistics.median(p["wall_s"] / p["ncu_s"]
                                                        for p in phases), 3),
        "hand_spread_s": [round(min(hand_s), 3), round(max(hand_s), 3)],
        "post_steps_s": ({} if skip_post_steps else
                         measure_post_steps(run_dir, manifest["ncu"]["executable"], work)),
    }


def measure_post_steps(run_dir: Path, ncu: str, work: Path) -> dict[str, float]:
    """Each post-processing child alone on one run's report, best of two."""
    worker = [sys.executable, "-m", "harness.profile.worker"]
    export = [sys.executable, "-m", "harness.report.metrics_export"]
    reports = [f"{path.stem}={path}" for path in sorted(run_dir.glob("*.ncu-rep"))]
    commands = {
        f"metrics_jobs_{jobs}": [*export, str(work / f"m{jobs}.csv"), *reports,
                                 "--jobs", str(jobs)]
        for jobs in (1, 2, 4, 8)
    }
    commands["environment_no_cuda"] = [*worker, "environment", ncu, "--no-cuda"]
    commands["environment_with_cuda"] = [*worker, "environment", ncu]
    commands["python_start"] = [sys.executable, "-c", "pass"]
    steps: dict[str, float] = {}
    for name, argv in commands.items():
        times = []
        for _ in range(2):
            seconds, completed = _timed(argv, timeout=120)
            if completed.returncode != 0:
                raise SystemExit(f"{name} failed:\n{completed.stdout}{completed.stderr}")
            times.append(seconds)
        steps[name] = round(min(times), 3)
    return steps


# Metrics compared between a chain with head starts and one without: a runner started early
# must not change what is measured (times within run-to-run noise, counts equal).
WATCHED_METRICS = (
    "gpu__time_duration.sum", "dram__bytes_read.sum", "smsp__inst_executed.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
)


def watched_metrics(run_dir: Path) -> dict[str, dict[str, float]]:
    """{label: {metric: value}} of WATCHED_METRICS from the run's metrics.csv (summed over
    the kernels of an entry), written after the timed run by `ncuh export RUN` (`ncuh profile`
    writes it only with --metrics-csv, and the timed runs go without)."""
    import csv

    found: dict[str, dict[str, float]] = {}
    path = run_dir / "metrics.csv"
    if not path.is_file():
        subprocess.run([sys.executable, "-m", "harness", "export", str(run_dir), "-o",
                        str(path)], capture_output=True, text=True, cwd=ROOT, check=True,
                       timeout=1800)
    with path.open(encoding="utf-8", newline="") as stream:
        for row in csv.DictReader(stream):
            if row["metric"] in WATCHED_METRICS and not row["instance"]:
                try:
                    value = float(row["value"])
                except ValueError:
                    continue
                per_label = found.setdefault(row["label"], {})
                per_label[row["metric"]] = per_label.get(row["metric"], 0.0) + value
    return found


def chain_findings(run_dir: Path) -> dict[str, list[list[str]]]:
    """{label: each finding's [rule, kind, ncu rule], sorted} of the run's reports, as the
    pages state them (tests/test_pages_set.py compares the same on the recorded pairs)."""
    from harness.findings.registry import run_rules
    from harness.report.builder import load_kernel_reports
    from harness.rundir.manifest import load_run

    found: dict[str, list[list[str]]] = {}
    for entry in load_run(run_dir).entries:
        if entry.report is not None:
            found[entry.label] = sorted(
                [f.rule, f.kind, str(f.metrics.get("ncu_rule", ""))]
                for profile in load_kernel_reports(entry.report) for f in run_rules(profile))
    return found


def measure_chain(size: int, section_set: str, work: Path, *,
                  head_start: bool = True, findings: bool = False) -> dict[str, Any]:
    env = {**os.environ, "NCUH_HEAD_START": "on" if head_start else "off"}
    name = f"chain-{section_set}" + ("" if head_start else "-no-head-start")
    seconds, completed = _timed(
        _ncuh(["--all", "--size", str(size), "--set", section_set,
               "--out", str(work / name)]), timeout=1800, env=env)
    entries: list[dict[str, Any]] = []
    timings: dict[str, Any] = {}
    metrics: dict[str, dict[str, float]] = {}
    found: dict[str, list[list[str]]] = {}
    if completed.returncode in (0, 1):
        run_dir = _run_dir(completed)
        manifest = json.loads((run_dir / "manifest.json").read_text())
        timings = manifest.get("timings") or {}
        entries = [{"label": e["label"], "status": e["status"], "seconds": e["seconds"],
                    "passes": e.get("passes"), "head_start_s": e.get("head_start_s"),
                    "phases": e.get("phases"), "error": e["error"]}
                   for e in manifest["entries"]]
        metrics = watched_metrics(run_dir)
        found = chain_findings(run_dir) if findings else {}
    ncu_s = sum(e["seconds"] for e in entries)
    ratio = seconds / ncu_s if ncu_s else None
    # Where the wall time beyond the entries' ncu seconds went, from the manifest's clock
    # (`timings.total_s`: from once the command's code runs to just before the manifest is
    # written): outside that clock ("before": Python's start and the imports, and at the end
    # the manifest's writing, the rename and Python's exit), inside it up to the last ncu's end
    # beyond the entries' seconds ("during": the plan, the first ncu's start, any gap between
    # entries), and from there to the clock's end ("after": the last post-processing).
    excess: dict[str, float] = {}
    if timings.get("total_s") is not None and timings.get("ncu_wall_s") is not None:
        excess = {"before_s": round(seconds - timings["total_s"], 3),
                  "during_s": round(timings["ncu_wall_s"] - ncu_s, 3),
                  "after_s": round(timings["total_s"] - timings["ncu_wall_s"], 3)}
    return {
        "size": size, "set": section_set, "head_start": head_start,
        "wall_s": round(seconds, 3),
        "ncu_s": round(ncu_s, 3), "ratio": round(ratio, 4) if ratio else None,
        "excess_s": excess,
        "post_after_last_ncu_s": timings.get("post_s"),
        "passes": sum(e["passes"] or 0 for e in entries),
        "exit_status": completed.returncode, "entries": entries, "metrics": metrics,
        "findings": found,
        "stderr_tail": completed.stderr[-2000:] if completed.returncode not in (0, 1) else "",
        "target": CHAIN_TARGET_RATIO,
        "met": completed.returncode == 0 and ratio is not None and ratio <= CHAIN_TARGET_RATIO,
    }


def repeated_chains(chains: list[dict[str, Any]]) -> dict[str, Any]:
    """The same chain run again and again: each run's wall time, ncu seconds, ratio and where
    its excess went, and the median ratio of the runs that succeeded against the target."""
    ratios = [chain["ratio"] for chain in chains
              if chain["ratio"] is not None and chain["exit_status"] == 0]
    median = round(statistics.median(ratios), 4) if ratios else None
    return {
        "runs": [{key: chain[key] for key in ("wall_s", "ncu_s", "ratio", "excess_s",
                                               "exit_status")} for chain in chains],
        "ratios": ratios, "median_ratio": median, "target": CHAIN_TARGET_RATIO,
        "runs_met": sum(ratio <= CHAIN_TARGET_RATIO for ratio in ratios),
        "met": median is not None and median <= CHAIN_TARGET_RATIO,
    }


def compare_head_start(on: dict[str, Any], off: dict[str, Any]) -> dict[str, Any]:
    """The chain with head starts against the same chain without: wall time against the sum of
    the entries' ncu times of the chain without (each ncu alone, as by hand), and the largest
    relative difference of each watched metric over the entries."""
    by_hand = off["ncu_s"]
    ratio = on["wall_s"] / by_hand if by_hand else None
    differences: dict[str, float] = {}
    for label, values in on["metrics"].items():
        for metric, value in values.items():
            other = off["metrics"].get(label, {}).get(metric)
            if other is None:
                continue
            scale = max(abs(value), abs(other))
            difference = abs(value - other) / scale if scale else 0.0
            differences[metric] = round(max(differences.get(metric, 0.0), difference), 4)
    return {
        "wall_on_s": on["wall_s"], "wall_off_s": off["wall_s"],
        "ncu_alone_s": by_hand, "ratio_to_ncu_alone": round(ratio, 4) if ratio else None,
        "target": CHAIN_TARGET_RATIO,
        "met": ratio is not None and ratio <= CHAIN_TARGET_RATIO,
        "saved_s": round(off["wall_s"] - on["wall_s"], 1),
        "largest_metric_difference": differences,
    }


def compare_sets(pages: dict[str, Any], full: dict[str, Any]) -> dict[str, Any]:
    ratio = pages["wall_s"] / full["wall_s"] if full["wall_s"] else None
    compared = sorted(set(pages["findings"]) & set(full["findings"]))
    return {
        "pages_wall_s": pages["wall_s"], "full_wall_s": full["wall_s"],
        "ratio": round(ratio, 3) if ratio else None, "target": PAGES_TARGET_RATIO,
        "met": ratio is not None and ratio <= PAGES_TARGET_RATIO,
        "passes": {e["label"]: [e["passes"], f["passes"]]
                   for e, f in zip(pages["entries"], full["entries"], strict=False)},
        "pages_passes": pages["passes"], "full_passes": full["passes"],
        # each entry's findings only one of the two runs gave (pages first, then full), of
        # the entries both runs profiled (one whose report is missing on a side is not compared)
        "findings_differ": {label: only for label in compared
                            if (only := _only_in_each(pages["findings"][label],
                                                      full["findings"][label]))[0] or only[1]},
        "findings_compared": compared,
    }


def _only_in_each(first: list[list[str]], second: list[list[str]]) -> list[list[list[str]]]:
    """The findings only `first` has and those only `second` has, counted as multisets (an
    entry of several kernels may give one finding more than once)."""
    a = Counter(tuple(f) for f in first)
    b = Counter(tuple(f) for f in second)
    return [[list(f) for f in (a - b).elements()], [list(f) for f in (b - a).elements()]]


def record_pair(variant: str, size: int, pair_dir: Path, gpu: str, work: Path) -> list[str]:
    """One variant recorded with both sets into pair_dir, ncu's raw page beside each."""
    pair_dir.mkdir(parents=True, exist_ok=True)
    model = re.search(r"\b([A-Z]\d{2,4}[A-Z]?)\b", gpu)  # "NVIDIA H100 80GB HBM3" -> h100
    prefix = model.group(1).lower() if model else "gpu"
    written = []
    for section_set in ("pages", "full"):
        _, completed = _timed(_ncuh(["--variant", variant, "--size", str(size), "--set",
                                     section_set, "--out", str(work / f"pair-{section_set}")]),
                              timeout=600)
        if completed.returncode != 0:
            raise SystemExit(f"pair ({section_set}) failed:\n{completed.stdout}{completed.stderr}")
        run_dir = _run_dir(completed)
        manifest = json.loads((run_dir / "manifest.json").read_text())
        (report,) = sorted(run_dir.glob("*.ncu-rep"))
        target = pair_dir / f"{prefix}_{section_set}_{report.name}"
        target.write_bytes(report.read_bytes())
        ncu = manifest["ncu"]["executable"]
        raw = subprocess.run([ncu, "--import", str(target), "--page", "raw", "--csv"],
                             capture_output=True, text=True, check=False)
        target.with_suffix(".raw.csv").write_text(raw.stdout)
        # ncu's own details page, for tests/test_details_page.py
        details = subprocess.run([ncu, "--import", str(target), "--page", "details",
                                  "--print-details", "all"], capture_output=True, check=False)
        details_path = target.with_name(target.name.replace(".ncu-rep", ".details.txt"))
        details_path.write_bytes(details.stdout)  # tests/pack_fixtures.py packs it
        written += [target.name, target.with_suffix(".raw.csv").name, details_path.name]
    return written


def environment() -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from harness.gpu.env import collect_environment
    from harness.util.ncu_locate import ncu_executable

    env = collect_environment()
    ncu = ncu_executable()
    if ncu is not None:
        text = subprocess.run([str(ncu), "--version"], capture_output=True, text=True,
                              check=False).stdout
        from harness.profile.ncu_command import parse_version

        env["ncu_version"] = parse_version(text)
        env["ncu_path"] = str(ncu)
    return env


def _phases(entry: dict[str, Any]) -> str:
    phases = entry.get("phases") or {}
    return " / ".join(f"{phases[name]:.2f}" for name in PHASES if name in phases)


def markdown(result: dict[str, Any]) -> str:
    env = result["environment"]
    lines = [
        "# `ncuh profile` overhead and chain time",
        "",
        f"{env.get('gpu')} (CC {env.get('compute_capability')}), driver {env.get('driver')}, "
        f"CUDA {env.get('cuda')}, ncu {env.get('ncu_version')}; measured {result['created_at']}.",
        "",
    ]
    over = result.get("overhead")
    if over:
        lines += [
            f"## Overhead: `ncuh profile --variant {over['variant']} --size {over['size']} "
            f"--set {over['set']}` vs the same ncu command by hand",
            "",
            "| | runs (s) | median (s) |",
            "|---|---|---|",
            f"| ncuh profile | {', '.join(map(str, over['ncuh_s']))} | {over['ncuh_median_s']} |",
            f"| ncu by hand | {', '.join(map(str, over['hand_s']))} | {over['hand_median_s']} |",
            *([f"| ncuh profile --metrics-csv | "
               f"{', '.join(map(str, over['metrics_csv_s']))} | "
               f"{statistics.median(over['metrics_csv_s']):.3f} |"]
              if over.get("metrics_csv_s") else []),
            *([f"| ncuh profile, no kept plan (a first run) | "
               f"{', '.join(map(str, over['first_run_s']))} | "
               f"{statistics.median(over['first_run_s']):.3f} |"]
              if over.get("first_run_s") else []),
            "",
            f"Ratio {over['ratio']} (target <= {over['target']}): "
            f"{'met' if over['met'] else 'NOT met'}.",
            "",
        ]
        phases = over.get("phases_median_s")
        if phases:
            lines += [
                "Where ncuh's wall time goes (medians over its runs, from the manifests' "
                "`timings`): " + ", ".join(f"{key.removesuffix('_s')} {value} s"
                                          for key, value in phases.items()) + ".",
                "",
                f"Each ncuh run over the ncu inside it (median): "
                f"{over.get('around_own_ncu_ratio')}; ncu by hand spread "
                f"{over.get('hand_spread_s')} s.",
                "",
                "| post-processing step, alone | seconds (best of 2) |",
                "|---|---|",
                *[f"| {name} | {value} |" for name, value in over["post_steps_s"].items()],
                "",
            ]
    for key in ("chain", "chain_no_head_start", "chain_full"):
        chain = result.get(key)
        if not chain:
            continue
        early = "" if chain.get("head_start", True) else ", `NCUH_HEAD_START=off`"
        lines += [
            f"## Chain: `ncuh profile --all --size {chain['size']} --set {chain['set']}`{early}",
            "",
            f"Wall time {chain['wall_s']} s, the entries' ncu times (each from its turn) "
            f"{chain['ncu_s']} s: ratio {chain['ratio']}; {chain['passes']} passes in all; "
            f"exit status {chain['exit_status']}.",
            "",
            "| entry | status | seconds | head start (s) | passes | phases (s) | error |",
            "|---|---|---|---|---|---|---|",
        ]
        lines += [f"| {e['label']} | {e['status']} | {e['seconds']} | "
                  f"{e.get('head_start_s') or ''} | {e['passes']} | {_phases(e)} | "
                  f"{e['error'] or ''} |"
                  for e in chain["entries"]]
        lines += ["", "Phases (the manifest's: to the first replay pass / the passes / the "
                  "report) summed over the entries: " + " / ".join(
                      f"{sum((e.get('phases') or {}).get(name, 0.0) for e in chain['entries']):.1f}"
                      for name in PHASES) + " s.", ""]
    repeats = result.get("chain_repeats")
    if repeats:
        lines += [
            f"## The chain, {len(repeats['runs'])} runs in a row",
            "",
            "| run | wall (s) | entries' ncu (s) | ratio | before / during / after (s) |",
            "|---|--:|--:|--:|---|",
        ]
        lines += [f"| {number} | {run['wall_s']} | {run['ncu_s']} | {run['ratio']} | "
                  + " / ".join(str(value) for value in (run["excess_s"] or {}).values()) + " |"
                  for number, run in enumerate(repeats["runs"], 1)]
        lines += ["", f"Median ratio {repeats['median_ratio']} (target <= {repeats['target']}): "
                  f"{'met' if repeats['met'] else 'NOT met'}; {repeats['runs_met']} of "
                  f"{len(repeats['ratios'])} runs within it. Before: outside the manifest's "
                  "clock (Python's start, the imports; the manifest's writing, the rename, the "
                  "exit); during: the plan, the first ncu's start and any gap between entries; "
                  "after: the last post-processing.", ""]
    head = result.get("head_start")
    if head:
        lines += [
            "## Head starts: the chain against the same chain with each ncu alone",
            "",
            f"Wall time {head['wall_on_s']} s with head starts, {head['wall_off_s']} s without "
            f"({head['saved_s']} s saved). Against the sum of ncu's own times with each ncu "
            f"alone ({head['ncu_alone_s']} s): ratio {head['ratio_to_ncu_alone']} (target <= "
            f"{head['target']}): {'met' if head['met'] else 'NOT met'}.",
            "",
            "Largest relative difference between the two chains, over the entries (a runner "
            "started early must not change what is measured):",
            "",
            *[f"- `{metric}`: {difference:.2%}"
              for metric, difference in head["largest_metric_difference"].items()],
            "",
        ]
    sets = result.get("sets")
    if sets:
        lines += [
            "## Section sets: `pages` against `full`",
            "",
            f"Chain wall time {sets['pages_wall_s']} s against {sets['full_wall_s']} s: ratio "
            f"{sets['ratio']} (target <= {sets['target']}): "
            f"{'met' if sets['met'] else 'NOT met'}; passes {sets['pages_passes']} against "
            f"{sets['full_passes']}.",
            "",
            f"Findings (rule, kind, ncu rule) compared on {len(sets['findings_compared'])} "
            "entries: " + ("the same on every one." if not sets["findings_differ"] else
                           "they differ on " + "; ".join(
                               f"{label} (pages only {only[0]}, full only {only[1]})"
                               for label, only in sets["findings_differ"].items()) + "."),
            "",
        ]
    if result.get("pair"):
        lines += ["Fixture pair recorded: " + ", ".join(result["pair"]), ""]
    return "\n".join(lines)


def table(result: dict[str, Any]) -> str:
    """The short summary printed last."""
    rows = []
    over = result.get("overhead")
    if over:
        rows.append(("single variant / ncu by hand", over["ratio"], f"<= {over['target']}",
                     over["met"]))
        if "metrics_csv_ratio" in over:
            rows.append(("  same, --metrics-csv", over["metrics_csv_ratio"],
                         f"<= {over['target']}", over["metrics_csv_met"]))
        if "first_run_ratio" in over:
            rows.append(("  same, no kept plan (first run)", over["first_run_ratio"],
                         f"<= {over['target']}", over["first_run_met"]))
    chain = result.get("chain")
    if chain:
        rows.append((f"--all wall / entries' ncu ({chain['set']})", chain["ratio"],
                     f"<= {chain['target']}", chain["met"]))
    repeats = result.get("chain_repeats")
    if repeats:
        rows.append((f"  median of {len(repeats['ratios'])} chains", repeats["median_ratio"],
                     f"<= {repeats['target']}", repeats["met"]))
    head = result.get("head_start")
    if head:
        rows.append(("--all wall / ncu alone, summed", head["ratio_to_ncu_alone"],
                     f"<= {head['target']}", head["met"]))
    sets = result.get("sets")
    if sets:
        rows.append(("pages chain / full chain", sets["ratio"], f"<= {sets['target']}",
                     sets["met"]))
        rows.append(("passes pages / full", f"{sets['pages_passes']}/{sets['full_passes']}",
                     "", ""))
        rows.append(("entries with other findings", len(sets["findings_differ"]),
                     f"of {len(sets['findings_compared'])}", not sets["findings_differ"]))
    width = max((len(r[0]) for r in rows), default=10)
    return "\n".join(f"{name:<{width}}  {value!s:>10}  {target:>8}  "
                     f"{'' if met == '' else ('met' if met else 'NOT met')}"
                     for name, value, target, met in rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="result JSON path")
    parser.add_argument("--variant", default="register_tiled")
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--set", dest="section_set", default="pages")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--all-size", type=int, default=4096)
    parser.add_argument("--chain-repeats", type=int, default=1,
                        help="run the --all chain this many times (the median ratio counts)")
    parser.add_argument("--skip-overhead", action="store_true")
    parser.add_argument("--skip-all", action="store_true")
    parser.add_argument("--compare-full", action="store_true",
                        help="also run the chain with --set full and compare")
    parser.add_argument("--pair-dir", type=Path, default=None,
                        help="record a pages/full fixture pair of --variant into this folder")
    parser.add_argument("--warm-up", action="store_true",
                        help="run every variant once without ncu before the chains")
    parser.add_argument("--pair-size", type=int, default=1024)
    parser.add_argument("--pair-variants", default=None,
                        help="comma-separated variants to record pairs of (default: --variant)")
    parser.add_argument("--skip-post-steps", action="store_true")
    parser.add_argument("--head-start-off-too", action="store_true",
                        help="run the chain again with NCUH_HEAD_START=off and compare")
    parser.add_argument("--metrics-csv-too", action="store_true",
                        help="also time `ncuh profile --metrics-csv` in the alternation")
    parser.add_argument("--first-run-too", action="store_true",
                        help="also time `ncuh profile` with NCUH_PLAN_CACHE=off (a first run)")
    args = parser.parse_args()

    result: dict[str, Any] = {
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "environment": environment(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
        args.out.with_suffix(".md").write_text(markdown(result))
        args.out.with_name(args.out.stem + "_table.txt").write_text(table(result) + "\n")

    with tempfile.TemporaryDirectory(prefix="ncuh-bench-") as tmp:
        work = Path(tmp)
        if not args.skip_overhead:
            result["overhead"] = measure_overhead(args.variant, args.size, args.section_set,
                                                  args.repeats, work, args.skip_post_steps,
                                                  args.metrics_csv_too, args.first_run_too)
            save()
            print(f"overhead ratio {result['overhead']['ratio']}", flush=True)
        if not args.skip_all:
            if args.warm_up:
                from warm_up import warm_up

                result["warm_up_s"] = warm_up(args.all_size)
            result["chain"] = measure_chain(args.all_size, args.section_set, work,
                                            findings=args.compare_full)
            save()
            print(f"chain {result['chain']['wall_s']} s", flush=True)
            if args.chain_repeats > 1:
                chains = [result["chain"]]
                for _ in range(args.chain_repeats - 1):
                    chains.append(measure_chain(args.all_size, args.section_set, work))
                    print(f"chain {chains[-1]['wall_s']} s", flush=True)
                    result["chain_repeats"] = repeated_chains(chains)
                    save()
            if args.head_start_off_too:
                result["chain_no_head_start"] = measure_chain(
                    args.all_size, args.section_set, work, head_start=False)
                result["head_start"] = compare_head_start(result["chain"],
                                                          result["chain_no_head_start"])
                save()
                print(f"chain without head starts {result['chain_no_head_start']['wall_s']} s",
                      flush=True)
        if args.compare_full and not args.skip_all:
            result["chain_full"] = measure_chain(args.all_size, "full", work, findings=True)
            result["sets"] = compare_sets(result["chain"], result["chain_full"])
            save()
            print(f"chain (full) {result['chain_full']['wall_s']} s", flush=True)
        if args.pair_dir is not None:
            result["pair"] = []
            for variant in (args.pair_variants or args.variant).split(","):
                result["pair"] += record_pair(variant, args.pair_size, args.pair_dir,
                                              str(result["environment"].get("gpu") or ""), work)
                save()
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
