"""A seeded corruption sweep over every command: real reports, manifests, bench JSON, thresholds.

Each case corrupts one input in a known way, runs one `ncuh` command in-process (click's
CliRunner) and sorts the outcome:

- refused:     exit 2 and exactly one `ncuh: error:` line on stderr (what bad input must get)
- same:        accepted, and the output is byte for byte the output of the pristine input
               (the corruption hit bytes no command reads: the answer is still right)
- silent:      accepted with an output that differs from the pristine one, or accepted although
               the input was known to be invalid (a silent success on corrupted input). A
               report has no checksum: a few flipped bytes inside a metric's value or name
               decode to another valid value or name, which ncu itself shows as well; those
               land here under "flip bytes", the only kind where ncuh cannot see corruption
- valid:       a mutation that left a valid document (JSON/TOML that parses and keeps the
               schema's types): not corruption, whatever ncuh answers
- traceback:   an exception escaped, or an exit status other than 0/1/2
- bad error:   exit 2 but not one line

Used by tests/test_fuzz.py (a CI-sized sweep) and benchmarks/fuzz_counts.py (the table).
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import random
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from harness.cli import main

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FIXTURES = Path(__file__).parent / "fixtures"
REPORTS = (FIXTURES / "h200_naive_256.ncu-rep", FIXTURES / "h200_register_tiled_256.ncu-rep")
MANIFEST = FIXTURES / "h200_profile_256.manifest.json"
BENCH = FIXTURES / "h200_bench_small.json"
OUTCOMES = ("refused", "same", "valid", "silent", "traceback", "bad error")


@dataclass
class Tally:
    """Counts per (target, command) and the first few cases of each bad kind."""

    counts: dict[tuple[str, str], Counter[str]] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def add(self, target: str, command: str, outcome: str, detail: str) -> None:
        self.counts.setdefault((target, command), Counter())[outcome] += 1
        if outcome in ("silent", "traceback", "bad error") and len(self.examples) < 20:
            self.examples.append(f"{target} / {command} / {outcome}: {detail}")

    def total(self, outcome: str | None = None) -> int:
        return sum(sum(c.values()) if outcome is None else c[outcome]
                   for c in self.counts.values())


@dataclass(frozen=True)
class Ran:
    code: int
    stdout: str
    stderr: str
    error: BaseException | None
    files: dict[str, bytes]


def run(argv: list[str], out_dir: Path | None = None) -> Ran:
    result = CliRunner().invoke(main, argv, catch_exceptions=True)
    error = result.exception if not isinstance(result.exception, SystemExit) else None
    files = {}
    if out_dir is not None and out_dir.is_dir():
        files = {p.relative_to(out_dir).as_posix(): p.read_bytes()
                 for p in sorted(out_dir.rglob("*.md")) if p.is_file()}
    # the output folder's name is the only difference between two identical writeups
    stdout = result.stdout.replace(str(out_dir), "OUT") if out_dir else result.stdout
    return Ran(result.exit_code, stdout, result.stderr, error, files)


def classify(ran: Ran, pristine: Ran | None, corrupt: bool) -> tuple[str, str]:
    if ran.error is not None or ran.code not in (0, 1, 2):
        return "traceback", f"{type(ran.error).__name__}: {ran.error}"[:200]
    if ran.code == 2:
        lines = ran.stderr.strip().splitlines()
        if len(lines) == 1 and lines[0].startswith("ncuh: error: "):
            return "refused", lines[0][:200]
        return "bad error", ran.stderr[:200]
    if not corrupt:
        return "valid", ""
    if pristine is not None and (ran.code, ran.stdout, ran.files) == \
            (pristine.code, pristine.stdout, pristine.files):
        return "same", ""
    return "silent", f"exit {ran.code}: {ran.stdout[:120]!r}"


# --- report corruptions ----------------------------------------------------------------------


def report_mutants(data: bytes, rng: random.Random, count: int) -> Iterator[tuple[str, bytes]]:
    """Seeded corruptions, in turn: 4 KiB flipped at 15-95% (the bug of issue 14), a few bytes
    XORed anywhere, a truncation, 4 KiB zeroed."""
    kinds = ("flip 4 KiB", "flip bytes", "truncate", "zero 4 KiB")
    for index in range(count):
        kind = kinds[index % len(kinds)]
        mutant = bytearray(data)
        if kind == "truncate":
            mutant = mutant[: rng.randrange(len(data))]
        else:
            length = 4096 if kind != "flip bytes" else rng.choice((1, 2, 8, 64))
            start = (int(len(data) * rng.uniform(0.15, 0.95)) if kind == "flip 4 KiB"
                     else rng.randrange(len(data)))
            for i in range(start, min(start + length, len(data))):
                mutant[i] = 0 if kind == "zero 4 KiB" else mutant[i] ^ rng.randrange(1, 256)
        if bytes(mutant) != data:
            yield kind, bytes(mutant)


@dataclass(frozen=True)
class Case:
    """One corrupted input and the commands to run on it, in a folder of its own."""

    target: str  # the table row, e.g. "report (flip bytes)"
    folder: Path  # removed when the case is done
    commands: tuple[tuple[str, tuple[str, ...], Path | None], ...]  # name, argv, output folder
    corrupt: bool  # known to be invalid: accepting it is a silent success
    # the same commands on the intact input, by name: argv and output folder
    pristine: dict[str, tuple[tuple[str, ...], Path]] | None = None
    label: str = ""


_PRISTINE: dict[tuple[str, ...], Ran] = {}


def _pristine(argv: tuple[str, ...], out: Path) -> Ran:
    """The intact input's answer, computed once per worker process: compared in the same
    process as the corrupted run, so nothing but the input differs."""
    if argv not in _PRISTINE:
        mine = out.with_name(f"{out.name}-{os.getpid()}")  # workers run side by side
        _PRISTINE[argv] = run([mine.as_posix() if a == out.as_posix() else a for a in argv],
                              mine)
        shutil.rmtree(mine, ignore_errors=True)
    return _PRISTINE[argv]


def execute(case: Case) -> list[tuple[str, str, str, str]]:
    """Run a case's commands; (target, command, outcome, detail) for each."""
    rows = []
    for name, argv, out in case.commands:
        ran = run(list(argv), out)
        pristine = _pristine(*case.pristine[name]) if case.pristine else None
        outcome, detail = classify(ran, pristine, case.corrupt)
        rows.append((case.target, name, outcome, f"{case.label}{detail}"))
    shutil.rmtree(case.folder, ignore_errors=True)
    return rows


def report_cases(per_report: int, seed: int, work: Path,
                 writeup_every: int = 4) -> Iterator[Case]:
    """report, export, diff (both ways) and writeup on corrupted copies of the real reports."""
    rng, pick = random.Random(seed), random.Random(seed + 100)
    for number, source in enumerate(REPORTS):
        good_dir = work / "good"
        good_dir.mkdir(exist_ok=True)
        good = good_dir / source.name
        shutil.copyfile(source, good)
        commands: dict[str, Callable[[Path, Path], list[str]]] = {
            "report": lambda p, o: ["report", str(p)],
            "export": lambda p, o: ["export", str(p)],
            "diff bad good": lambda p, o, g=good: ["diff", str(p), str(g)],
            "diff good bad": lambda p, o, g=good: ["diff", str(g), str(p)],
            "writeup": lambda p, o: ["writeup", str(p), "--out", str(o), "--format", "md"],
        }
        pristine = {name: (tuple(make(good, work / f"pristine-{name}")),
                           work / f"pristine-{name}") for name, make in commands.items()}
        for index, (kind, mutant) in enumerate(report_mutants(source.read_bytes(), rng,
                                                              per_report)):
            case = work / f"report{number}-{index}"
            case.mkdir()
            path = case / source.name  # the same file name: outputs compare byte for byte
            path.write_bytes(mutant)
            # writeup draws plots: a share of the cases keeps the sweep short
            names = [n for n in commands if n != "writeup" or pick.randrange(writeup_every) == 0]
            yield Case(f"report ({kind})", case,
                       tuple((n, tuple(commands[n](path, case / "out")), case / "out")
                             for n in names),
                       corrupt=True, pristine=pristine, label=f"{source.name}: ")


# --- JSON and TOML corruptions ----------------------------------------------------------------


def _text_mutants(text: str, rng: random.Random, count: int) -> Iterator[tuple[str, str]]:
    for index in range(count):
        if index % 2:
            yield "truncate", text[: rng.randrange(len(text))]
        else:
            chars = list(text)
            for _ in range(rng.choice((1, 2, 4))):
                position = rng.randrange(len(chars))
                chars[position] = chr(rng.choice((*range(32, 127), 10, 0, 0xE9)))
            yield "flip chars", "".join(chars)


def _parses(text: str, loads: Callable[[str], Any]) -> bool:
    try:
        loads(text)
    except (ValueError, TypeError):
        return False
    return True


def _json_loads(text: str) -> Any:
    return json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))


WRONG_VALUES = ("text", -1, 0, -0.5, math.nan, math.inf, None, True, [], {}, [1, "2"], 1.5)


def _set(data: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        data = data[key]
    data[path[-1]] = value


MANIFEST_FIELDS = {  # field -> the values of WRONG_VALUES that are right for it
    ("schema",): (), ("entries",): ([],), ("entries", 0): (),
    ("entries", 0, "label"): ("text",), ("entries", 0, "size"): (None,),
    ("entries", 0, "size", 0): (), ("entries", 0, "status"): ("text",),
    ("entries", 0, "report"): (None, "text"), ("environment",): ({},),
    ("timings",): (None, {}),
}
BENCH_FIELDS = {
    ("schema",): (), ("results",): ([],), ("results", 0): (),
    ("results", 0, "variant"): ("text",), ("results", 0, "size"): (),
    ("results", 0, "size", 1): (), ("results", 0, "samples_ms"): ([],),
    ("results", 0, "samples_ms", 0): (1.5,), ("results", 0, "median_ms"): (None, 1.5, 0),
    ("results", 0, "status"): ("text",), ("results", 0, "gflops"): (None, 1.5, -1, 0, -0.5),
}


def _is_one_of(value: Any, choices: tuple[Any, ...]) -> bool:
    return any(type(value) is type(ok) and value == ok for ok in choices)


def _type_mutants(base: dict[str, Any], fields: dict[tuple[Any, ...], tuple[Any, ...]],
                  rng: random.Random, count: int) -> Iterator[tuple[str, str, bool]]:
    paths = list(fields)
    for _ in range(count):
        path = rng.choice(paths)
        value = rng.choice(WRONG_VALUES)
        data = json.loads(json.dumps(base))
        _set(data, path, value)
        right = _is_one_of(value, fields[path])
        yield "wrong type", json.dumps(data), not right


def run_file_cases(count: int, seed: int, work: Path) -> Iterator[Case]:
    """manifest.json and bench.json of a run directory, through diff and writeup."""
    rng = random.Random(seed)
    manifest = json.loads(MANIFEST.read_text())
    manifest["entries"] = manifest["entries"][:1]
    bench = json.loads(BENCH.read_text())
    bench["results"] = [r for r in bench["results"] if r["variant"] == "naive"][:2]
    for r in bench["results"]:
        r["size"] = [256, 256, 256]
    manifest_text, bench_text = json.dumps(manifest, indent=1), json.dumps(bench, indent=1)
    for which, text, fields in (("manifest.json", manifest_text, MANIFEST_FIELDS),
                                ("bench.json", bench_text, BENCH_FIELDS)):
        mutants = [(kind, t, not _parses(t, _json_loads))
                   for kind, t in _text_mutants(text, rng, count // 2)]
        mutants += list(_type_mutants(json.loads(text), fields, rng, count - count // 2))
        for index, (kind, mutant, corrupt) in enumerate(mutants):
            folder = Path(tempfile.mkdtemp(dir=work))
            run_dir = folder / "run"
            run_dir.mkdir()
            shutil.copyfile(REPORTS[0], run_dir / "naive_256.ncu-rep")
            for name, content in (("manifest.json", manifest_text), ("bench.json", bench_text)):
                (run_dir / name).write_text(mutant if name == which else content,
                                            encoding="utf-8", errors="surrogateescape")
            commands: list[tuple[str, tuple[str, ...], Path | None]] = [
                ("diff", ("diff", str(run_dir), str(run_dir)), None)]
            if index % 3 == 0:
                out = folder / "out"
                commands.append(("writeup", ("writeup", str(run_dir), "--out", str(out),
                                             "--format", "md"), out))
            yield Case(f"{which} ({kind})", folder, tuple(commands), corrupt)


THRESHOLD_KEYS = {  # key -> the values of WRONG_VALUES (and "up") that are right for it
    ("timing", "noise_floor_pct"): (0, 1.5), ("timing", "bootstrap_resamples"): (),
    ("timing", "confidence"): (), ("timing", "alpha"): (), ("timing", "seed"): (0,),
    ("metrics", "time", "threshold_pct"): (0, 1.5),
    ("metrics", "instructions", "min_abs"): (0, 1.5),
    ("metrics", "instructions", "scale"): (1.5,), ("metrics", "time", "direction"): (),
    ("metrics", "time", "kind"): (),
}
THRESHOLDS_TEXT = """[timing]
noise_floor_pct = 4.0
bootstrap_resamples = 100
seed = 7

[metrics.time]
threshold_pct = 2.5

[metrics.instructions]
min_abs = 500
"""


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    if value is None:
        return '""'  # TOML has no null: an empty string is just as wrong
    return json.dumps(value)


def threshold_cases(count: int, seed: int, work: Path) -> Iterator[Case]:
    """Threshold files through `diff --config`."""
    rng = random.Random(seed)
    mutants = [(kind, t, not _parses(t, tomllib.loads))
               for kind, t in _text_mutants(THRESHOLDS_TEXT, rng, count // 2)]
    for _ in range(count - count // 2):
        path = rng.choice(list(THRESHOLD_KEYS))
        value = rng.choice((*WRONG_VALUES, "up"))
        table_name = ".".join(path[:-1])
        text = f"[{table_name}]\n{path[-1]} = {_toml_value(value)}\n"
        mutants.append(("wrong type", text, not _is_one_of(value, THRESHOLD_KEYS[path])))
    report = work / REPORTS[0].name
    shutil.copyfile(REPORTS[0], report)
    for kind, text, corrupt in mutants:
        folder = Path(tempfile.mkdtemp(dir=work))
        config = folder / "thresholds.toml"
        config.write_text(text, encoding="utf-8", errors="surrogateescape")
        yield Case(f"thresholds ({kind})", folder,
                   (("diff --config", ("diff", str(report), str(report), "--config",
                                       str(config)), None),),
                   corrupt, label=f"{text!r}: ")


def sweep(per_report: int, json_cases: int, toml_cases: int, seed: int = 14,
          workers: int = 2) -> Tally:
    """The whole sweep: `per_report` corruptions per report, `json_cases` per JSON file,
    `toml_cases` thresholds files. Cases run in `workers` processes, each replaced after a few
    cases: ncu_report keeps a loaded report's memory (about 10 MB) once an action was read."""
    tally = Tally()
    with tempfile.TemporaryDirectory(prefix="ncuh-fuzz-") as folder:
        work = Path(folder)
        cases = [*report_cases(per_report, seed, work),
                 *run_file_cases(json_cases, seed + 1, work),
                 *threshold_cases(toml_cases, seed + 2, work)]
        # forkserver, not fork: a process that has read a report holds ncu_report's threads,
        # and a child forked from it can deadlock; the server imports ncuh once, reads nothing
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["harness.cli", "harness.report.reportfile",
                                        "harness.pages.writeup", "harness.pages.render",
                                        "fuzz_sweep"])
        with context.Pool(processes=workers, maxtasksperchild=10) as pool:
            for rows in pool.imap(execute, cases, chunksize=1):
                for row in rows:
                    tally.add(*row)
    return tally


def table(tally: Tally) -> str:
    """The counts as a Markdown table, one row per input kind and command, then the totals."""
    lines = ["| input (corruption) | command | cases | " + " | ".join(OUTCOMES) + " |",
             "|---|---|---:|" + "---:|" * len(OUTCOMES)]
    for (target, command), counts in sorted(tally.counts.items()):
        cells = " | ".join(str(counts[o]) for o in OUTCOMES)
        lines.append(f"| {target} | {command} | {sum(counts.values())} | {cells} |")
    cells = " | ".join(f"**{tally.total(o)}**" for o in OUTCOMES)
    lines.append(f"| **all** | | **{tally.total()}** | {cells} |")
    return "\n".join(lines)
