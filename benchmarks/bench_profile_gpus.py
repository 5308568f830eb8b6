"""Every GPU of a host: does ncu serialize across GPUs, and how much faster is `--gpus all`?

    python benchmarks/bench_profile_gpus.py --out /tmp/ncuh-bench/profile_gpus.json \
        [--variant register_tiled] [--size 2048] [--all-size 4096] [--set pages] \
        [--chain-repeats 2] [--skip-lock]

Needs two GPUs or more of one model.

1. The lock: ncu serializes profiling between processes through `$TMPDIR/nsight-compute-lock`.
   The same ncu command (ncuh's first command line for --variant at --size) runs twice at once,
   pinned to GPU 0 and GPU 1: once with one TMPDIR for both (ncu's default), once with one each
   (what `ncuh profile --gpus` does). Serialized, the pair takes about the sum of the two
   alone; in parallel, about the longer one. `--skip-lock` leaves it out.
2. The chain: `ncuh profile --all --size S --gpus 0`, then `--gpus all` into the same `--out`
   (so it shares the targets out between the GPUs by the times of the run before, as a user's
   second run does), `--chain-repeats` times in turn; the ratio of the medians, each pair's
   ratio, and how long each GPU worked in the last every-GPU run. Target: all <= 0.55 of one
   GPU's wall time on two GPUs.
Every variant runs once without ncu first (`warm_up.py`), so no timed run pays the compiles.

Writes the JSON result to --out and a Markdown table beside it (same name, .md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.profile.phases import PHASES  # noqa: E402  (the manifest's phase names)

CHAIN_TARGET_RATIO = 0.55


def _ncuh(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "harness", "profile", *args]


def _gpus() -> list[dict[str, Any]]:
    sys.path.insert(0, str(ROOT))
    from harness.profile.gpus import list_gpus

    return [gpu.manifest() for gpu in list_gpus()]


def _run_pair(argv: list[str], gpus: list[dict[str, Any]], tmpdirs: list[str],
              work: Path, tag: str) -> dict[str, Any]:
    """The same ncu command on two GPUs at once; each one's wall time and the pair's."""
    processes = []
    started = time.perf_counter()
    for index, (gpu, tmpdir) in enumerate(zip(gpus, tmpdirs, strict=True)):
        command = list(argv)
        command[command.index("-o") + 1] = str(work / f"{tag}_{index}.ncu-rep")
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpu["uuid"], "TMPDIR": tmpdir}
        processes.append((subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL, env=env, cwd=ROOT),
                          time.perf_counter()))
    each = []
    for process, begun in processes:
        process.wait()
        each.append(round(time.perf_counter() - begun, 2))
    return {"each_s": each, "pair_s": round(time.perf_counter() - started, 2),
            "status": [process.returncode for process, _ in processes]}


def first_profile(variant: str, size: int, section_set: str, out: Path) -> dict[str, Any]:
    """The manifest of `ncuh profile --variant V --size S --set SET --out OUT`: its ncu command
    line (`["ncu"]["command_lines"][0]`) is ncuh's own, to run again by hand."""
    completed = subprocess.run(_ncuh(["--variant", variant, "--size", str(size), "--set",
                                      section_set, "--out", str(out)]),
                               capture_output=True, text=True, cwd=ROOT, check=False)
    if completed.returncode != 0:
        raise SystemExit(f"ncuh profile failed:\n{completed.stdout}{completed.stderr}")
    run_dir = Path(completed.stdout.strip().splitlines()[-1])
    return json.loads((run_dir / "manifest.json").read_text())


def measure_lock(variant: str, size: int, section_set: str, gpus: list[dict[str, Any]],
                 work: Path) -> dict[str, Any]:
    manifest = first_profile(variant, size, section_set, work / "lock")
    argv = list(manifest["ncu"]["command_lines"][0])
    alone = manifest["entries"][0]["seconds"]
    shared_dir = tempfile.mkdtemp(prefix="ncu-shared-")
    shared = _run_pair(argv, gpus[:2], [shared_dir, shared_dir], work, "shared")
    separate = _run_pair(argv, gpus[:2], [tempfile.mkdtemp(prefix="ncu-a-"),
                                          tempfile.mkdtemp(prefix="ncu-b-")], work, "separate")
    return {
        "command": argv, "alone_s": alone, "shared_tmpdir": shared, "separate_tmpdirs": separate,
        # near 2: the two took turns; near 1: they ran at once
        "shared_pair_over_alone": round(shared["pair_s"] / alone, 2),
        "separate_pair_over_alone": round(separate["pair_s"] / alone, 2),
    }


def measure_chain(size: int, section_set: str, gpus_arg: str, work: Path,
                  variants: Sequence[str] = (), env: dict[str, str] | None = None
                  ) -> dict[str, Any]:
    """`ncuh profile --all` (or these `variants`) on `--gpus`, into `work/chains`: its wall time,
    exit status and each entry's seconds, phases and GPU."""
    chosen = [word for variant in variants for word in ("--variant", variant)] or ["--all"]
    started = time.perf_counter()
    completed = subprocess.run(_ncuh([*chosen, "--size", str(size), "--set", section_set,
                                      "--gpus", gpus_arg, "--out", str(work / "chains")]),
                               capture_output=True, text=True, cwd=ROOT, check=False,
                               env=env)
    seconds = time.perf_counter() - started
    entries = []
    if completed.returncode in (0, 1):
        manifest = json.loads((Path(completed.stdout.strip().splitlines()[-1])
                               / "manifest.json").read_text())
        entries = [{"label": e["label"], "status": e["status"], "seconds": e["seconds"],
                    "head_start_s": e.get("head_start_s"), "start_s": e.get("start_s"),
                    "phases": e.get("phases"),
                    "gpu": (e.get("gpu") or {}).get("index")} for e in manifest["entries"]]
    return {"gpus": gpus_arg, "wall_s": round(seconds, 1), "exit_status": completed.returncode,
            "entries": entries, "stderr_tail": completed.stderr[-1500:]}


def markdown(result: dict[str, Any]) -> str:
    lines = ["# `ncuh profile --gpus`: ncu's lock and the chain on every GPU", "",
             f"GPUs: {', '.join(g['name'] for g in result['gpus'])}; measured "
             f"{result['created_at']}.", ""]
    lock = result.get("lock")
    if lock:
        lines += [
            "## Two ncu processes at once on two GPUs", "",
            "| TMPDIR | each (s) | pair (s) | pair / one alone |", "|---|---|---|---|",
            f"| one for both (ncu's default) | {lock['shared_tmpdir']['each_s']} | "
            f"{lock['shared_tmpdir']['pair_s']} | {lock['shared_pair_over_alone']} |",
            f"| one per GPU (ncuh --gpus) | {lock['separate_tmpdirs']['each_s']} | "
            f"{lock['separate_tmpdirs']['pair_s']} | {lock['separate_pair_over_alone']} |",
            "", f"One alone: {lock['alone_s']} s.", ""]
    chain = result.get("chain")
    if chain:
        one = {e["label"]: e for e in chain["one"].get("entries", [])}
        lines += [
            "## The chain", "",
            f"One GPU {chain['one']['wall_s']} s, every GPU {chain['all']['wall_s']} s "
            f"(medians of {chain['one'].get('runs_s', [chain['one']['wall_s']])} and "
            f"{chain['all'].get('runs_s', [chain['all']['wall_s']])}): ratio "
            f"{chain['ratio']} (target <= {CHAIN_TARGET_RATIO}): "
            f"{'met' if chain['met'] else 'NOT met'}.", "",
            f"Each pair (one GPU, then every GPU): {chain.get('pair_ratios', [])}.", "",
            "| entry | seconds, one GPU | seconds, every GPU | GPU | head start (s) | "
            "own start (s) | phases, one GPU | phases, every GPU |",
            "|---|---|---|---|---|---|---|---|",
            *[f"| {e['label']} | {one.get(e['label'], {}).get('seconds', '')} | {e['seconds']} "
              f"| {e['gpu']} | {e.get('head_start_s') or ''} | {e.get('start_s') or ''} | "
              f"{_phases(one.get(e['label'], {}))} | {_phases(e)} |"
              for e in chain["all"].get("entries", [])],
            "", "(the last run of each; an entry without a head start paid its own start; "
            "phases: to the first replay pass / the passes / the report, in seconds, from the "
            "manifest's `phases`)", "",
            "Phases summed over the entries, one GPU against every GPU: "
            + "; ".join(f"{name} {_phase_sum(chain['one'], name):.1f} against "
                        f"{_phase_sum(chain['all'], name):.1f} s" for name in PHASES) + ".", "",
            "Each GPU's entries summed, last every-GPU run: "
            + ", ".join(f"GPU {gpu} {seconds:.1f} s"
                        for gpu, seconds in sorted(_loads(chain["all"]).items())) + ".", ""]
    return "\n".join(lines)


def chain_result(ones: list[dict[str, Any]], everys: list[dict[str, Any]]) -> dict[str, Any]:
    """The medians of the one-GPU and every-GPU chains so far, their ratio and each pair's."""
    one_s = round(statistics.median(run["wall_s"] for run in ones), 2)
    every_s = round(statistics.median(run["wall_s"] for run in everys), 2)
    ratio = every_s / one_s if one_s else None
    return {
        "one": {**ones[-1], "wall_s": one_s, "runs_s": [r["wall_s"] for r in ones]},
        "all": {**everys[-1], "wall_s": every_s, "runs_s": [r["wall_s"] for r in everys]},
        "ratio": round(ratio, 3) if ratio else None,
        "pair_ratios": [round(every["wall_s"] / one["wall_s"], 3)
                        for one, every in zip(ones, everys, strict=True) if one["wall_s"]],
        "met": ratio is not None and ratio <= CHAIN_TARGET_RATIO}


def _phases(entry: dict[str, Any]) -> str:
    phases = entry.get("phases") or {}
    return " / ".join(f"{phases[name]:.2f}" for name in PHASES if name in phases)


def _phase_sum(run: dict[str, Any], name: str) -> float:
    return sum((entry.get("phases") or {}).get(name, 0.0) for entry in run.get("entries", []))


def _loads(run: dict[str, Any]) -> dict[Any, float]:
    loads: dict[Any, float] = {}
    for entry in run.get("entries", []):
        loads[entry["gpu"]] = loads.get(entry["gpu"], 0.0) + entry["seconds"]
    return loads


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--variant", default="register_tiled")
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--all-size", type=int, default=4096)
    parser.add_argument("--set", dest="section_set", default="pages")
    parser.add_argument("--skip-chain", action="store_true")
    parser.add_argument("--skip-lock", action="store_true",
                        help="leave out the two-ncu lock experiment")
    parser.add_argument("--chain-repeats", type=int, default=1,
                        help="one GPU and every GPU in turn, this many times (medians)")
    args = parser.parse_args()
    gpus = _gpus()
    if len(gpus) < 2:
        raise SystemExit(f"needs two GPUs; nvidia-smi lists {len(gpus)}")
    result: dict[str, Any] = {
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"), "gpus": gpus}
    args.out.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
        args.out.with_suffix(".md").write_text(markdown(result))

    with tempfile.TemporaryDirectory(prefix="ncuh-gpus-") as tmp:
        work = Path(tmp)
        from warm_up import warm_up

        result["warm_up_s"] = warm_up(args.size, *([] if args.skip_chain else [args.all_size]))
        if not args.skip_lock:
            result["lock"] = measure_lock(args.variant, args.size, args.section_set, gpus,
                                          work)
            save()
        if not args.skip_chain:
            # One GPU, then every GPU into the same --out: the second hands the targets out
            # longest first, as the first timed them (what a user's second run does).
            ones: list[dict[str, Any]] = []
            everys: list[dict[str, Any]] = []
            for _ in range(args.chain_repeats):
                ones.append(measure_chain(args.all_size, args.section_set, "0", work))
                everys.append(measure_chain(args.all_size, args.section_set, "all", work))
                result["chain"] = chain_result(ones, everys)
                save()  # after each pair: a run cut short by a time limit keeps what it had
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
