"""`ncuh merge`: shards (run directories) joined into one run that writeup and diff read.

The shards are made by `ncuh profile` itself with the stand-in ncu (tests/standins), so they are
real run directories with real reports, metrics.csv and manifests.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from standin_support import use_standins

from harness.cli import main
from harness.rundir.manifest import load_run


def profile(out: Path, *args: str) -> Path:
    result = CliRunner().invoke(main, ["profile", *args, "--metrics-csv", "--out", str(out)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return Path(result.stdout.strip().splitlines()[-1])


def merge(*args: str) -> object:
    return CliRunner().invoke(main, ["merge", *args])


@pytest.fixture(scope="module")
def made_shards(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two shards made once by `ncuh profile` with the stand-in ncu."""
    folder = tmp_path_factory.mktemp("made")
    with pytest.MonkeyPatch.context() as monkeypatch:
        use_standins(monkeypatch, folder)
        monkeypatch.setenv("NCUH_FAKE_NCU_SECONDS", "0.1")
        return [profile(folder / "shards", "--variant", "naive", "--size", "256"),
                profile(folder / "shards", "--variant", "register_tiled", "--size", "256",
                        "--size", "512")]


@pytest.fixture
def shards(tmp_path: Path, made_shards: list[Path]) -> list[Path]:
    """A fresh copy of the shards for each test (some edit them)."""
    copies = []
    for shard in made_shards:
        copy = tmp_path / "shards" / shard.name
        shutil.copytree(shard, copy)
        copies.append(copy)
    return copies


def test_merge_joins_shards_into_one_ordinary_run(tmp_path: Path, shards: list[Path]) -> None:
    out = tmp_path / "merged"
    result = merge(*map(str, shards), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(out)
    run = load_run(out)
    assert [e.label for e in run.entries] == ["naive_256", "register_tiled_256",
                                              "register_tiled_512"]
    assert all(e.ok and e.report.is_file() for e in run.entries)
    manifest = run.manifest
    assert [e["shard"] for e in manifest["entries"]] == [shards[0].name] + [shards[1].name] * 2
    assert manifest["variants"] == ["naive", "register_tiled"]
    assert manifest["sizes"] == [[256, 256, 256], [512, 512, 512]]
    assert len(manifest["ncu"]["command_lines"]) == 3
    assert [m["shard"] for m in manifest["merged_from"]] == [s.name for s in shards]
    parts = [pd.read_csv(s / "metrics.csv", keep_default_na=False) for s in shards]
    joined = pd.read_csv(out / "metrics.csv", keep_default_na=False)
    assert joined.equals(pd.concat(parts, ignore_index=True))
    assert manifest["metrics"] == {"status": "ok", "error": None, "rows": len(joined)}
    assert sorted(p.name for p in (out / "logs").iterdir()) == [
        "naive_256.log", "register_tiled_256.log", "register_tiled_512.log"]
    assert not list(tmp_path.glob(".merged.*"))  # no temporary left beside it


def test_diff_and_writeup_take_the_merged_run(tmp_path: Path, shards: list[Path]) -> None:
    out = tmp_path / "merged"
    assert merge(*map(str, shards), "--out", str(out)).exit_code == 0
    result = CliRunner().invoke(main, ["diff", str(out), str(out), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["kernels"]
    result = CliRunner().invoke(main, ["writeup", str(out), "--out", str(tmp_path / "pages"),
                                       "--format", "md"])
    assert result.exit_code == 0, result.output
    assert list((tmp_path / "pages").glob("*.md"))


def _edit_manifest(run: Path, change: dict) -> None:
    manifest = json.loads((run / "manifest.json").read_text())
    for dotted, value in change.items():
        section, key = dotted.split(".")
        manifest[section][key] = value
    (run / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize(("change", "said"), [
    ({"environment.gpu": "NVIDIA H200"}, "GPU model: NVIDIA H100 80GB HBM3"),
    ({"environment.ncu_version": "2026.1.0.0"}, "ncu version: 2025.3.1.0"),
    ({"ncu.set": "full"}, "ncu section set: pages"),
    # one shard's node had no section overlay for `pages`: its memory sections are ncu's stock
    ({"ncu.slimmed_sections": ["MemoryWorkloadAnalysis_Tables"]}, "slimmed sections: []"),
    # one shard's overlay thinned SourceCounters, the other's did not (an older ncuh)
    ({"ncu.thinned_metrics": ["memory_type"]}, "SourceCounters metrics left out: []"),
    # one shard's overlay left out ncu's two access-pattern rules, the other's ran them
    ({"ncu.rules_left_out": ["UncoalescedGlobalAccess"]}, "ncu rules left out: []"),
])
def test_mismatched_shards_are_refused_unless_allowed(
    tmp_path: Path, shards: list[Path], change: dict, said: str,
) -> None:
    _edit_manifest(shards[1], change)
    out = tmp_path / "merged"
    result = merge(*map(str, shards), "--out", str(out))
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("ncuh: error: the shards do not compare (") and said in line
    assert shards[0].name in line and "--allow-mismatch" in line
    assert not out.exists() and not list(tmp_path.glob(".merged.*"))
    result = merge(*map(str, shards), "--out", str(out), "--allow-mismatch")
    assert result.exit_code == 0, result.output
    assert load_run(out).manifest["mismatches"]


def test_a_shard_from_before_the_overlay_counts_as_stock_sections(
    tmp_path: Path, shards: list[Path]
) -> None:
    manifest = json.loads((shards[1] / "manifest.json").read_text())
    assert manifest["ncu"]["slimmed_sections"] == []  # the stand-in ncu has no sections
    assert manifest["ncu"]["thinned_metrics"] == manifest["ncu"]["rules_left_out"] == []
    del manifest["ncu"]["slimmed_sections"], manifest["ncu"]["thinned_metrics"]
    del manifest["ncu"]["rules_left_out"]
    (shards[1] / "manifest.json").write_text(json.dumps(manifest))
    result = merge(*map(str, shards), "--out", str(tmp_path / "merged"))
    assert result.exit_code == 0, result.output


def test_bad_merges_are_one_line_and_write_nothing(tmp_path: Path, shards: list[Path]) -> None:
    out = tmp_path / "merged"
    cases = [
        ([str(shards[0]), str(shards[0])], "a shard is given twice"),
        ([str(shards[0]), str(tmp_path)], "not a run directory"),
        ([str(shards[0]), str(tmp_path / "nope")], "no such run directory"),
    ]
    for args, said in cases:
        result = merge(*args, "--out", str(out))
        assert result.exit_code == 2, result.output
        (line,) = result.stderr.strip().splitlines()
        assert said in line
    out.mkdir()
    result = merge(str(shards[0]), "--out", str(out))
    assert result.exit_code == 2 and "already exists" in result.stderr
    again = tmp_path / "again"
    assert merge(str(shards[0]), "--out", str(again)).exit_code == 0
    result = merge(str(shards[0]), str(again), "--out", str(tmp_path / "twice"))
    assert result.exit_code == 2 and "naive_256 is in two shards" in result.stderr


def _as_profiled_without_metrics_csv(shard: Path) -> None:
    (shard / "metrics.csv").unlink()
    manifest = json.loads((shard / "manifest.json").read_text())
    manifest["metrics"] = {"status": "skipped", "error": None, "rows": None}
    (shard / "manifest.json").write_text(json.dumps(manifest))


def test_shards_profiled_without_metrics_csv_merge_without_one(
    tmp_path: Path, shards: list[Path]
) -> None:
    for shard in shards:
        _as_profiled_without_metrics_csv(shard)
    out = tmp_path / "merged"
    result = merge(*map(str, shards), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert load_run(out).manifest["metrics"] == {"status": "skipped", "error": None,
                                                  "rows": None}
    assert not (out / "metrics.csv").exists()


def test_one_shard_without_metrics_csv_beside_one_with_it_fails_the_table(
    tmp_path: Path, shards: list[Path]
) -> None:
    _as_profiled_without_metrics_csv(shards[1])
    out = tmp_path / "merged"
    result = merge(*map(str, shards), "--out", str(out))
    assert result.exit_code == 0, result.output  # the reports merge; the table is marked failed
    metrics = load_run(out).manifest["metrics"]
    assert metrics["status"] == "failed"
    assert metrics["error"] == f"shard {shards[1].name}: profiled without --metrics-csv"
    assert not (out / "metrics.csv").exists()  # half a table is no table


def _entries(run: Path) -> tuple[dict, list[dict]]:
    manifest = json.loads((run / "manifest.json").read_text())
    return manifest, manifest["entries"]


def _fingerprint(folder: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under `folder` (links not followed): its inode and bytes."""
    return {str(p.relative_to(folder)): (p.lstat().st_ino, p.read_bytes())
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_two_shards_naming_one_report_file_lose_nothing(
    tmp_path: Path, shards: list[Path]
) -> None:
    # Both shards call their first report r.ncu-rep: the second used to be copied through
    # the first's hard link into the first shard's own file.
    for shard in shards:
        manifest, entries = _entries(shard)
        (shard / entries[0]["report"]).rename(shard / "r.ncu-rep")
        entries[0]["report"] = "r.ncu-rep"
        (shard / "manifest.json").write_text(json.dumps(manifest))
    with (shards[1] / "r.ncu-rep").open("ab") as stream:  # (the stand-in's reports are alike)
        stream.write(b"shard 2")
    # s2's other report is a hard link of s1's (one inode in both inputs)
    (shards[1] / "register_tiled_512.ncu-rep").unlink()
    (shards[1] / "register_tiled_512.ncu-rep").hardlink_to(shards[0] / "r.ncu-rep")
    before = [_fingerprint(shard) for shard in shards]
    assert before[0]["r.ncu-rep"][1] != before[1]["r.ncu-rep"][1]
    out = tmp_path / "merged"
    result = merge(*map(str, shards), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert [_fingerprint(shard) for shard in shards] == before
    run = load_run(out)
    reports = [e.report for e in run.entries]
    assert [p.relative_to(out).as_posix() for p in reports] == [
        "r.ncu-rep", "shard2/r.ncu-rep", "register_tiled_512.ncu-rep"]
    assert reports[0].read_bytes() == before[0]["r.ncu-rep"][1]
    assert reports[1].read_bytes() == before[1]["r.ncu-rep"][1]


def test_a_symlinked_report_is_read_not_written(tmp_path: Path, shards: list[Path]) -> None:
    _, entries = _entries(shards[1])
    (shards[1] / "data").mkdir()
    (shards[1] / entries[0]["report"]).rename(shards[1] / "data" / "real.ncu-rep")
    (shards[1] / entries[0]["report"]).symlink_to(Path("data") / "real.ncu-rep")
    before = [_fingerprint(shard) for shard in shards]
    out = tmp_path / "merged"
    assert merge(*map(str, shards), "--out", str(out)).exit_code == 0
    assert [_fingerprint(shard) for shard in shards] == before
    assert load_run(out).entries[1].report.read_bytes() == \
        (shards[1] / "data" / "real.ncu-rep").read_bytes()


def test_a_report_in_a_subfolder_merges_as_writeup_reads_it(
    tmp_path: Path, shards: list[Path]
) -> None:
    manifest, entries = _entries(shards[0])
    (shards[0] / "reports").mkdir()
    (shards[0] / entries[0]["report"]).rename(shards[0] / "reports" / "n.ncu-rep")
    entries[0]["report"] = "reports/n.ncu-rep"
    (shards[0] / "manifest.json").write_text(json.dumps(manifest))
    out = tmp_path / "merged"
    result = merge(*map(str, shards), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert load_run(out).entries[0].report == out / "reports" / "n.ncu-rep"
    assert (out / "reports" / "n.ncu-rep").read_bytes() == \
        (shards[0] / "reports" / "n.ncu-rep").read_bytes()


def test_a_missing_report_is_blamed_on_its_shard(tmp_path: Path, shards: list[Path],
                                                 golden) -> None:
    (shards[1] / "register_tiled_512.ncu-rep").unlink()
    out = tmp_path / "merged"
    result = merge(*map(str, shards), "--out", str(out))
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"ncuh: error: {shards[1] / 'manifest.json'}: entries[1].report: ")
    golden("missing_report_of_a_shard", line.replace(str(shards[1]), "SHARD"))
    assert not out.exists() and not list(tmp_path.glob(".merged.*"))


def test_a_label_never_leads_out_of_its_shard(tmp_path: Path, shards: list[Path]) -> None:
    secret = tmp_path / "secret.log"
    secret.write_text("not the shard's\n")
    manifest, entries = _entries(shards[1])
    entries[0]["label"] = f"../../../{secret.with_suffix('').name}"
    (shards[1] / "manifest.json").write_text(json.dumps(manifest))
    (shards[1] / "logs").mkdir(exist_ok=True)
    out = tmp_path / "merged"
    result = merge(*map(str, shards), "--out", str(out))
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert "entry label '../../../secret' is not a file name" in line
    assert not out.exists()


def _rewrite(path: Path, change) -> None:
    path.write_bytes(change(path.read_bytes()))


@pytest.mark.parametrize(("change", "said"), [
    (lambda b: b.replace(b"label,", b"tag,", 1), "its header differs from"),
    (lambda b: b[:-5], "cut short (its last row does not end)"),
    (lambda b: b + b"naive_256,0,k\n", "has 3 fields, the header"),
    (lambda b: b"", "empty (no header)"),
])
def test_a_bad_metrics_table_is_refused_in_one_line(
    tmp_path: Path, shards: list[Path], change, said: str
) -> None:
    _rewrite(shards[1] / "metrics.csv", change)
    before = [_fingerprint(shard) for shard in shards]
    out = tmp_path / "merged"
    result = merge(*map(str, shards), "--out", str(out))
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"ncuh: error: {shards[1] / 'metrics.csv'}: ") and said in line
    assert not out.exists() and [_fingerprint(shard) for shard in shards] == before


def test_a_bench_file_linked_from_outside_its_shard_is_refused(
    tmp_path: Path, shards: list[Path]
) -> None:
    outside = tmp_path / "elsewhere.json"
    outside.write_text("{}")
    (shards[0] / "bench.json").symlink_to(outside)
    out = tmp_path / "merged"
    result = merge(*map(str, shards), "--out", str(out))
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line == f"ncuh: error: {shards[0] / 'bench.json'} leads outside its shard"
    assert not out.exists() and not list(tmp_path.glob(".merged*"))
