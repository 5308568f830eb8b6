"""manifest.json, bench.json and thresholds files: one typed reader each (pydantic), a wrong
shape one line naming the file and the field, every committed file still readable."""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import FIXTURES
from packed_fixtures import H200_NAIVE, H200_RUN

from harness.cli import main
from harness.diff.thresholds import ThresholdsError, load_thresholds
from harness.errors import NcuhError, ReportError
from harness.profile.run import check_program
from harness.rundir.manifest import BenchFile, Manifest, load_bench, load_run

REPO = Path(__file__).resolve().parents[1]
REPORT = H200_NAIVE
BENCH = FIXTURES / "h200_bench_small.json"


def run_dir(root: Path, change: Any = None, name: str = "run") -> Path:
    """A run directory of the real H200 fixture report; `change(manifest)` edits it."""
    run = root / name
    run.mkdir()
    os.link(REPORT, run / "naive_256.ncu-rep")  # a hard link: inside the run, no copy
    manifest = json.loads((H200_RUN / "manifest.json").read_text())
    manifest["entries"] = manifest["entries"][:1]
    if change:
        change(manifest)
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


def one_line(result, *phrases: str) -> str:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    for phrase in phrases:
        assert phrase in lines[0], lines[0]
    return lines[0]


# --- the committed files load ------------------------------------------------------------------


RUNS = sorted(p.parent for p in (REPO / "reports").rglob("manifest.json"))
LOOSE_MANIFESTS = [H200_RUN / "manifest.json",
                   *sorted((REPO / "reports").rglob("*.manifest.json"))]


@pytest.mark.parametrize("path", RUNS, ids=lambda p: p.name)
def test_committed_run_directories_load(path: Path) -> None:
    run = load_run(path)
    assert run.record is not None and run.environment.get("gpu")
    # entries, or a program's ranking alone (its first pass, no kernel profiled again)
    assert run.entries or (run.record.ranking and run.record.ranking.processes[0].kernels)


@pytest.mark.parametrize("path", LOOSE_MANIFESTS, ids=lambda p: p.name)
def test_committed_manifests_validate(path: Path) -> None:
    assert Manifest.from_json(path.read_text(), str(path)).entries


@pytest.mark.parametrize("path", [BENCH, *sorted((REPO / "reports").rglob("*bench*.json"))],
                         ids=lambda p: p.name)
def test_committed_bench_files_load(path: Path) -> None:
    bench = load_bench(path)
    assert bench.results and all(r.size for r in bench.results)


def test_fixture_manifest_loads_and_keeps_unknown_fields(tmp_path: Path) -> None:
    run = load_run(run_dir(tmp_path, lambda m: m.update(project={"name": "mine",
                                                                  "future": 1})))
    assert run.record.model_extra == {"variants": ["naive", "register_tiled"],
                                      "sizes": [[256, 256, 256]],
                                      "params": {}, "warmup": 3, "program": None}
    assert run.record.project is not None and run.record.project.name == "mine"
    assert run.record.project.chain is None  # an older run: it records no chain
    assert run.record.project.model_extra == {"future": 1}
    entry = run.entries[0]
    assert (entry.label, entry.variant, entry.size, entry.ok) == \
        ("naive_256", "naive", (256, 256, 256), True)


def test_bench_round_trip_is_lossless() -> None:
    data = json.loads(BENCH.read_text())
    assert BenchFile.from_json(BENCH.read_text(), "x").to_json() == data


# --- wrong shapes ------------------------------------------------------------------------------


MANIFEST_CASES = [
    (lambda m: m["entries"][0].update(size="big"), "entries[0].size"),
    (lambda m: m["entries"][0].update(size=[256, 0, 256]), "entries[0].size[1]"),
    (lambda m: m["entries"][0].pop("label"), "entries[0].label: Field required"),
    (lambda m: m["entries"][0].update(status=7), "entries[0].status"),
    (lambda m: m.update(entries={"a": 1}), "entries"),
    (lambda m: m.pop("entries"), "entries: Field required"),
    (lambda m: m.update(environment=[1, 2]), "environment"),
    (lambda m: m["entries"][0].update(report="../outside.ncu-rep"), "entries[0].report"),
    (lambda m: m["entries"][0].update(report="/etc/passwd"), "entries[0].report"),
    (lambda m: m.update(schema="ncuh.run/9"), "unknown schema 'ncuh.run/9'"),
]


@pytest.mark.parametrize("change,phrase", MANIFEST_CASES)
def test_bad_manifest_is_one_line_naming_file_and_field(tmp_path, change, phrase) -> None:
    run = run_dir(tmp_path, change)
    for args in (["diff", run, run], ["writeup", run, "--out", tmp_path / "w"]):
        line = one_line(CliRunner().invoke(main, [str(a) for a in args]), phrase)
        assert str(run / "manifest.json") in line
    assert not (tmp_path / "w").exists()


def test_report_symlink_leading_out_of_the_run_is_refused(tmp_path) -> None:
    run = run_dir(tmp_path)
    (run / "naive_256.ncu-rep").unlink()
    (run / "naive_256.ncu-rep").symlink_to(REPORT)  # a real report, but outside the run
    with pytest.raises(ReportError, match=r"entries\[0\].report: .* leads outside the run"):
        load_run(run)


def _bench(change: Any) -> str:
    data = json.loads(BENCH.read_text())
    change(data)
    return json.dumps(data, allow_nan=True)


BENCH_CASES = [
    (lambda b: b["results"][1].update(samples_ms=[1.0, "x"]), "results[1].samples_ms[1]"),
    (lambda b: b["results"][1].update(samples_ms=[1.0, math.nan]), "results[1].samples_ms[1]"),
    (lambda b: b["results"][1].update(samples_ms=[-1.0]), "results[1].samples_ms[0]"),
    (lambda b: b["results"][2].update(size=[]), "results[2].size"),
    (lambda b: b["results"][2].update(size=[512, "512"]), "results[2].size[1]"),
    (lambda b: b["results"][0].pop("variant"), "results[0].variant: Field required"),
    (lambda b: b["results"][0].update(median_ms=math.inf), "results[0].median_ms"),
    (lambda b: b["results"][0].update(median_ms="0.5"), "results[0].median_ms"),
    (lambda b: b.update(results={"x": 1}), "results"),
]


@pytest.mark.parametrize("change,phrase", BENCH_CASES)
def test_bad_bench_json_is_one_line_naming_file_and_field(tmp_path, change, phrase) -> None:
    path = tmp_path / "bench.json"
    path.write_text(_bench(change))
    with pytest.raises(ReportError, match=r"^" + str(path).replace(".", r"\.") + ": ") as info:
        load_bench(path)
    assert phrase in str(info.value) and "\n" not in str(info.value)
    run = run_dir(tmp_path)
    (run / "bench.json").write_text(path.read_text())
    one_line(CliRunner().invoke(main, ["diff", str(run), str(run)]), phrase)
    one_line(CliRunner().invoke(main, ["writeup", str(run), "--out", str(tmp_path / "w")]),
             phrase)


def test_manifest_model_round_trips() -> None:
    text = (H200_RUN / "manifest.json").read_text()
    assert Manifest.from_json(text, "x").to_json() == json.loads(text)


# --- thresholds ---------------------------------------------------------------------------------


def thresholds(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "t.toml"
    path.write_text(text)
    return path


BAD_THRESHOLDS = [
    ("[metrics.time]\nthreshold_pct = nan\n", "metrics.time.threshold_pct"),
    ("[metrics.time]\nthreshold_pct = inf\n", "metrics.time.threshold_pct"),
    ("[metrics.time]\nthreshold_pct = -0.001\n", "metrics.time.threshold_pct"),
    ("[metrics.time]\nthreshold_pct = \"5\"\n", "metrics.time.threshold_pct"),
    ("[metrics.time]\nthreshold_pct = true\n", "metrics.time.threshold_pct"),
    ("[metrics.instructions]\nmin_abs = -1\n", "metrics.instructions.min_abs"),
    ("[metrics.instructions]\nscale = 0\n", "metrics.instructions.scale"),
    ("[metrics.instructions]\nthreshhold_pct = 1\n", "metrics.instructions.threshhold_pct"),
    ("[metrics.mine]\nthreshold_pct = 1\n", "metrics.mine.metric: Field required"),
    ("[metrics.mine]\nmetric = []\n", "metrics.mine.metric"),
    ("[timing]\nbootstrap_resamples = 0\n", "timing.bootstrap_resamples"),
    ("[timing]\nbootstrap_resamples = -5\n", "timing.bootstrap_resamples"),
    ("[timing]\nbootstrap_resamples = 2.5\n", "timing.bootstrap_resamples"),
    ("[timing]\nconfidence = 1.0\n", "timing.confidence"),
    ("[timing]\nalpha = 0\n", "timing.alpha"),
    ("[timing]\nnoise_floor_pct = nan\n", "timing.noise_floor_pct"),
    ("[timing]\nseed = -1\n", "timing.seed"),
    ("[nonsense]\nx = 1\n", "nonsense"),
    ("metrics = 3\n", "metrics"),
]


@pytest.mark.parametrize("text,field", BAD_THRESHOLDS)
def test_bad_thresholds_are_one_line_naming_file_and_field(tmp_path, text, field) -> None:
    path = thresholds(tmp_path, text)
    with pytest.raises(ThresholdsError) as info:
        load_thresholds(path)
    assert str(info.value).startswith(f"{path}: {field}") and "\n" not in str(info.value)


def test_threshold_edges_are_accepted(tmp_path) -> None:
    """The boundaries themselves are legal: 0% thresholds, one resample, tiny confidence."""
    loaded = load_thresholds(thresholds(tmp_path, (
        "[timing]\nbootstrap_resamples = 1\nconfidence = 0.001\nalpha = 0.999\n"
        "noise_floor_pct = 0\nseed = 0\n"
        "[metrics.time]\nthreshold_pct = 0\n[metrics.instructions]\nmin_abs = 0\n"
        "threshold_pct = 7\n")))
    assert loaded.timing.bootstrap_resamples == 1 and loaded.timing.noise_floor_pct == 0.0
    rules = {r.key: r for r in loaded.rules}
    assert rules["time"].threshold_pct == 0.0 and rules["instructions"].threshold_pct == 7.0
    assert rules["instructions"].min_abs == 0.0


def test_defaults_load_unchanged() -> None:
    loaded = load_thresholds()
    assert loaded.timing.bootstrap_resamples == 2000 and loaded.timing.seed == 20240601
    assert {r.key for r in loaded.rules} >= {"time", "instructions"}


# --- profile -- PROGRAM: checked before ncu -------------------------------------------------------


@pytest.mark.parametrize("make,phrase", [
    (lambda d: d / "missing_program", "program not found"),
    (lambda d: "surely-not-a-command-ncuh-xyz", "not on PATH"),
    (lambda d: d, "is a directory"),
    (lambda d: _file(d / "script.sh", 0o644), "not an executable file"),
])
def test_profile_program_is_checked_before_ncu(tmp_path, monkeypatch, make, phrase) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # no ncu either: the program is checked first
    program = str(make(tmp_path))
    result = CliRunner().invoke(main, ["profile", "--out", str(tmp_path / "runs"), "--",
                                       program])
    one_line(result, phrase, program)
    with pytest.raises(NcuhError, match=phrase):
        check_program([program])
    assert not (tmp_path / "runs").exists()


def _file(path: Path, mode: int) -> Path:
    path.write_text("#!/bin/sh\n")
    path.chmod(mode)
    return path


def test_an_executable_program_passes_the_check(tmp_path) -> None:
    script = _file(tmp_path / "run.sh", 0o755)
    check_program([str(script)])
    check_program(["sh", "-c", "true"])
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
