"""From a real program to its kernels' pages: `ncuh profile --top N` on a transformer's step.

    python benchmarks/bench_program_top.py --out /tmp/ncuh-bench [--top 5] [--budget 360]
        [--full-seconds 60] [--parts eager,compiled,full,full-compiled,graph,torchrun]
        [--compiled-launches N]

Runs `examples/transformer_step.py` (one NVTX "step" after two warm-up steps) and measures:

1. The program alone, eager and compiled (wall seconds; the compiled one after a first run
   that fills the compile caches, whose seconds are recorded too).
2. `ncuh profile --top N --nvtx-include step/` and `ncuh writeup` of its run, eager and
   compiled: the time from the command to the pages, the first pass's seconds over the
   program alone (its overhead), and the share of the step's GPU time the top N cover.
3. `ncu --set full` of the whole program, stopped after --full-seconds: the launches it
   profiled in that time, and from its rate the time it would take for all of them (the first
   pass counted them), beside the command-to-pages time of 2; eager, and compiled (after a
   run that fills the compile caches, as the program alone has them).
4. The step replayed from a CUDA graph (`--cuda-graph`) and a two-process torchrun (where the
   host has two GPUs), of a smaller model, top 2: that each runs and what it ranks.
With two GPUs the second passes of 2 spread over both (`--gpus all`).

--parts picks some of the parts (all by default), so that the bench can be run in two commands
where one command's time is bounded. The full part projects the eager program's launches,
counted by the eager part's first pass, and needs it; full-compiled projects the compiled
program's, counted by the compiled part or given by --compiled-launches (the compiled first
pass's `launches_seen` of an earlier run). Parts that would start after --budget
seconds are skipped (and said so). Writes under --out only: program_top.json (every figure),
program_top.md (the table), log.txt (every command's output), one run_<kind>.tar.xz per run
directory and pages.tar.xz (every run's pages).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PROGRAM = ROOT / "examples" / "transformer_step.py"
STEP = ["--steps", "1", "--warmup", "2"]
SMALL = ["--depth", "2", "--batch", "8", "--context", "128"]  # the graph and torchrun runs
PARTS = ("eager", "compiled", "full", "full-compiled", "graph", "torchrun")
WRITEUP_S = 30  # at least, for a run's pages: only the last part can run past the budget


@dataclass
class Bench:
    out: Path  # what is kept: the figures, the log, the packed runs and pages
    work: Path  # the run directories and pages before they are packed
    budget_s: float
    started: float = field(default_factory=time.monotonic)
    figures: dict[str, Any] = field(default_factory=dict)

    def left(self) -> float:
        return self.budget_s - (time.monotonic() - self.started)

    def run(self, argv: list[str], timeout: float | None = None) -> Done:
        """Run `argv` from the repository root; its output goes to log.txt."""
        begun = time.monotonic()
        try:
            done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True,
                                  timeout=timeout, check=False)
            status, stdout, stderr = done.returncode, done.stdout, done.stderr
        except subprocess.TimeoutExpired as stopped:
            status, stdout, stderr = None, _text(stopped.stdout), _text(stopped.stderr)
        seconds = time.monotonic() - begun
        with (self.out / "log.txt").open("a") as log:
            log.write(f"$ {shlex.join(argv)}\n{stdout}{stderr}\n[status {status}, "
                      f"{seconds:.1f} s]\n\n")
        return Done(status, stdout, stdout + stderr, seconds)


@dataclass(frozen=True)
class Done:
    status: int | None  # None: stopped at its timeout
    stdout: str
    output: str  # stdout and stderr
    seconds: float


def _text(data: bytes | str | None) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


def _program(*extra: str) -> list[str]:
    return [sys.executable, str(PROGRAM), *STEP, *extra]


def _ncuh(*args: str) -> list[str]:
    return [sys.executable, "-m", "harness", *args]


def _manifest(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "manifest.json").read_text())


def _top(bench: Bench, kind: str, top: int, program: list[str], *options: str
         ) -> dict[str, Any]:
    """`ncuh profile --top` and `ncuh writeup` of one program: times and what they found."""
    profiled = bench.run(_ncuh(
        "profile", "--top", str(top), "--nvtx-include", "step/", *options,
        "--out", str(bench.work / "runs"), "--", *program), timeout=max(bench.left(), 1))
    status, profile_s = profiled.status, profiled.seconds
    if status not in (0, 1) or not profiled.stdout.strip():
        return {"status": status, "seconds": round(profile_s, 1),
                "error": profiled.output[-400:]}
    run_dir = Path(profiled.stdout.strip().splitlines()[-1])
    written = bench.run(_ncuh("writeup", str(run_dir), "--out", str(bench.work / "pages" / kind)),
                        timeout=max(bench.left(), WRITEUP_S))
    status_w, writeup_s = written.status, written.seconds
    manifest = _manifest(run_dir)
    ranking = manifest["ranking"]
    processes = []
    for process in ranking["processes"]:
        kernels = process["kernels"]
        shown = kernels[:top]
        processes.append({
            "key": process["key"], "launches": process["launches"], "kernels": len(kernels),
            "gpu_time_ms": round(process["total_ns"] / 1e6, 3),
            "top_share_pct": round(shown[-1]["cumulative_pct"], 1) if shown else None,
            "top": [{"name": k["name"][:120], "grid": k["grid"], "block": k["block"],
                     "share_pct": round(k["share_pct"], 1)} for k in shown]})
    return {
        "status": status, "top": top, "run": run_dir.name, "profile_s": round(profile_s, 1),
        "writeup_s": round(writeup_s, 1), "writeup_status": status_w,
        "command_to_pages_s": round(profile_s + writeup_s, 1),
        "first_pass_s": ranking["seconds"], "launches_seen": ranking["launches_seen"],
        "launches_ranked": sum(process["launches"] for process in ranking["processes"]),
        "entries_ok": sum(1 for entry in manifest["entries"] if entry["status"] == "ok"),
        "entries": len(manifest["entries"]), "processes": processes,
        "passes": [entry.get("passes") for entry in manifest["entries"]],
        "_dir": str(run_dir)}


def _alone(bench: Bench, *extra: str) -> float | None:
    done = bench.run(_program(*extra), timeout=300)
    return round(done.seconds, 2) if done.status == 0 else None


def _full(bench: Bench, launches: int, seconds: float, *extra: str) -> dict[str, Any]:
    """ncu --set full of the whole program's every launch, stopped after `seconds`."""
    from harness.util import ncu_executable

    argv = [str(ncu_executable() or "ncu"), "--config-file", "off", "--set", "full",
            "-o", str(bench.work / "full"), "-f", *_program(*extra)]
    ran = bench.run(argv, timeout=min(seconds, max(bench.left(), 1)))
    status, spent = ran.status, ran.seconds
    profiled = ran.output.count("==PROF== Profiling")
    done = status is not None
    rate = spent / profiled if profiled else None
    return {"status": status, "seconds": round(spent, 1), "launches_profiled": profiled,
            "launches_in_program": launches, "finished": done,
            "projected_s": round(spent if done else rate * launches, 1) if rate else None}


def _skip(bench: Bench, part: str, need: float) -> bool:
    if bench.left() >= need:
        return False
    bench.figures.setdefault("skipped", []).append(
        f"{part}: {bench.left():.0f} s of the budget left, about {need:.0f} s needed")
    return True


def _measure(bench: Bench, top: int, full_seconds: float, two_gpus: bool,
             parts: tuple[str, ...] = PARTS, compiled_launches: int | None = None) -> None:
    """The parts in order of what they measure first: item 4's figures, then the CUDA graph
    and torchrun runs on a smaller model (a part that would not fit the budget is skipped)."""
    figures = bench.figures
    gpus = ("--gpus", "all") if two_gpus else ()  # the top N over the host's GPUs
    figures["second_pass_gpus"] = 2 if two_gpus else 1
    figures["parts"] = list(parts)
    figures["alone_s"] = {}
    if "eager" in parts:
        figures["alone_s"]["eager"] = _alone(bench)
        figures["eager"] = _top(bench, "eager", top, _program(), *gpus)
    if "compiled" in parts and not _skip(bench, "compiled", 120):
        compiled_cold = _alone(bench, "--compile")  # fills the compile caches
        figures["alone_s"]["compiled"] = _alone(bench, "--compile")
        figures["alone_s"]["compiled_first_run"] = compiled_cold
        figures["compiled"] = _top(bench, "compiled", top, _program("--compile"), *gpus)
    launches = (figures.get("eager") or {}).get("launches_seen")
    if "full" in parts and not launches:
        figures.setdefault("skipped", []).append(
            "ncu --set full: needs the eager part's count of the program's launches")
    elif "full" in parts and not _skip(bench, "ncu --set full", full_seconds + 10):
        figures["full"] = _full(bench, launches, full_seconds)
    compiled_launches = (figures.get("compiled") or {}).get("launches_seen") or compiled_launches
    if "full-compiled" in parts and not compiled_launches:
        figures.setdefault("skipped", []).append(
            "ncu --set full, compiled: needs the compiled part's count of the program's "
            "launches (or --compiled-launches)")
    elif "full-compiled" in parts and not _skip(bench, "ncu --set full, compiled",
                                                full_seconds + 130):
        if "compiled_first_run" not in figures["alone_s"]:  # fills the compile caches
            figures["alone_s"]["compiled_first_run"] = _alone(bench, "--compile")
        if figures["alone_s"]["compiled_first_run"] is None:  # cold caches would skew it
            figures.setdefault("skipped", []).append(
                "ncu --set full, compiled: the run that fills the compile caches failed")
        else:
            figures["full_compiled"] = _full(bench, compiled_launches, full_seconds,
                                             "--compile")
    if "graph" in parts and not _skip(bench, "cuda graph", 40):
        figures["graph"] = _top(bench, "graph", 2, _program("--cuda-graph", *SMALL))
    if "torchrun" in parts and not two_gpus:
        figures.setdefault("skipped", []).append("torchrun: needs two GPUs, fewer are visible")
    elif "torchrun" in parts and not _skip(bench, "torchrun", 60):
        figures["torchrun"] = _top(bench, "torchrun", 2, [
            sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
            str(PROGRAM), *STEP, *SMALL])
    for kind in ("eager", "compiled"):
        part = figures.get(kind) or {}
        alone = figures["alone_s"].get(kind)
        if part.get("first_pass_s") and alone:
            part["first_pass_over_alone"] = round(part["first_pass_s"] / alone, 2)


def _pack(bench: Bench) -> None:
    """Each run directory and every page into .tar.xz files under --out (xz's fastest preset:
    a first pass's report is tens of MB, and packing is outside the budget)."""
    for kind in ("eager", "compiled", "graph", "torchrun"):
        folder = (bench.figures.get(kind) or {}).pop("_dir", None)
        if folder:
            with tarfile.open(bench.out / f"run_{kind}.tar.xz", "w:xz", preset=1) as tar:
                tar.add(folder, arcname=Path(folder).name)
    if (bench.work / "pages").is_dir():
        with tarfile.open(bench.out / "pages.tar.xz", "w:xz", preset=1) as tar:
            tar.add(bench.work / "pages", arcname="pages")


def _table(figures: dict[str, Any]) -> list[str]:
    def cell(kind: str, key: str, unit: str = "") -> str:
        value = (figures.get(kind) or {}).get(key)
        return f"{value}{unit}" if value is not None else "-"

    rows = ["| figure | eager | compiled | cuda graph | torchrun |", "|---|---:|---:|---:|---:|"]
    alone = figures.get("alone_s", {})
    shown = ["-" if alone.get(kind) is None else alone[kind] for kind in ("eager", "compiled")]
    rows.append(f"| program alone (s) | {shown[0]} | {shown[1]} | | |")
    for label, key, unit in (("command to pages (s)", "command_to_pages_s", ""),
                             ("first pass (s)", "first_pass_s", ""),
                             ("first pass / program alone", "first_pass_over_alone", "x"),
                             ("launches timed (whole program)", "launches_seen", ""),
                             ("launches ranked (the step)", "launches_ranked", ""),
                             ("entries ok", "entries_ok", "")):
        rows.append(f"| {label} | " + " | ".join(cell(k, key, unit) for k in (
            "eager", "compiled", "graph", "torchrun")) + " |")
    shares = [", ".join(f"{p['top_share_pct']}% (top {figures[k]['top']})" for p in (
        figures.get(k) or {}).get("processes", [])) or "-"
        for k in ("eager", "compiled", "graph", "torchrun")]
    rows.append("| share of GPU time the top N cover | " + " | ".join(shares) + " |")
    fulls = [figures.get(kind) for kind in ("full", "full_compiled")]
    if any(fulls):
        rows.append("| ncu --set full of the whole program (s) | "
                    + " | ".join(_full_cell(full) for full in fulls) + " | | |")
    rows += [f"| skipped | {part} | | | |" for part in figures.get("skipped", [])]
    return rows


def _full_cell(full: dict[str, Any] | None) -> str:
    if not full:
        return "-"
    state = "finished" if full["finished"] else f"projected: stopped after {full['seconds']} s"
    return (f"{full['projected_s']} ({state}, {full['launches_profiled']}/"
            f"{full['launches_in_program']} launches)")


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} launches: must be 1 or more")
    return value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--budget", type=float, default=360.0,
                        help=f"seconds for every part (the last writeup may add {WRITEUP_S})")
    parser.add_argument("--full-seconds", type=float, default=60.0)
    parser.add_argument("--parts", default=",".join(PARTS),
                        help=f"which parts, comma-separated [default: {','.join(PARTS)}]")
    parser.add_argument("--compiled-launches", type=_positive, default=None,
                        help="the compiled program's launches, for full-compiled without the "
                             "compiled part (its first pass's launches_seen)")
    parser.add_argument("--work", type=Path, default=None,
                        help="for the runs and pages before packing [default: a temporary "
                             "folder, removed at the end]")
    args = parser.parse_args()
    parts = tuple(part for part in args.parts.split(",") if part)
    if not parts or set(parts) - set(PARTS):
        print(f"bench_program_top: --parts takes some of {','.join(PARTS)}, not {args.parts!r}",
              file=sys.stderr)
        return 2
    args.parts = parts
    if not PROGRAM.is_file():
        print(f"bench_program_top: {PROGRAM} is missing", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ncuh-program-top-") as scratch:
        work = args.work or Path(scratch)
        os.environ["NCUH_CACHE_DIR"] = str(work / "cache")
        bench = Bench(args.out, work, args.budget)
        _bench(bench, args)
    return 0


def _bench(bench: Bench, args: argparse.Namespace) -> None:
    from harness.profile.gpus import list_gpus
    from harness.util import ncu_executable

    gpus = [gpu.manifest() for gpu in list_gpus()]
    torch = bench.run([sys.executable, "-c", "import torch, triton; print(torch.__version__, "
                       "torch.version.cuda, triton.__version__)"]).stdout
    ncu = bench.run([str(ncu_executable() or "ncu"), "--version"]).stdout
    bench.figures.update({"date": datetime.now(UTC).isoformat(timespec="seconds"),
                          "gpus": gpus, "torch_cuda_triton": torch.strip(),
                          "ncu": ncu.strip().splitlines()[-1] if ncu.strip() else None,
                          "top": args.top, "program": [str(PROGRAM.name), *STEP],
                          "command": shlex.join(["python", *sys.argv])})
    _measure(bench, args.top, args.full_seconds, len(gpus) >= 2, args.parts,
             args.compiled_launches)
    _pack(bench)
    bench.figures["total_s"] = round(time.monotonic() - bench.started, 1)
    (args.out / "program_top.json").write_text(json.dumps(bench.figures, indent=2) + "\n")
    table = _table(bench.figures)
    (args.out / "program_top.md").write_text("\n".join(table) + "\n")
    print("\n".join(table))


if __name__ == "__main__":
    sys.exit(main())
