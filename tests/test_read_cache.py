"""Reports read once: every command writes the same bytes with the report cache off, with it
empty (reports read and kept) and with it full, on real reports."""

from __future__ import annotations

import contextlib
import os
import pickle
import sqlite3
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from packed_fixtures import NAIVE_SMEM_REPORT

from harness.report import read_cache
from harness.util import kept_files

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "reports" / "runs" / "sgemm-h200-256"  # two real H200 reports and a manifest
BASELINE = ROOT / "reports" / "diff" / "baseline_naive_1024.ncu-rep"
CURRENT = ROOT / "reports" / "diff" / "current_naive_1024.ncu-rep"
COMMIT = "c" * 40


def _ncuh(args: list[str], env: dict[str, str]) -> bytes:
    completed = subprocess.run([sys.executable, "-m", "harness", *args], env=env,
                               capture_output=True, check=False, cwd=ROOT)
    assert completed.returncode in (0, 1), completed.stderr.decode()
    return completed.stdout


def _outputs(mode: str, scratch: Path, cache: Path) -> dict[str, bytes]:
    """What each command writes, run as a user runs it (a process each)."""
    env = {**os.environ, "NCUH_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    env[kept_files.CACHE_SWITCH_ENV] = "off" if mode == "off" else "on"
    out = scratch / mode
    outputs = {
        "report": _ncuh(["report", str(RUN / "naive_256.ncu-rep"), "--print-details", "all"],
                        env),
        "export": _ncuh(["export", str(RUN / "register_tiled_256.ncu-rep")], env),
        "diff": _ncuh(["diff", str(BASELINE), str(CURRENT), "--format", "json"], env),
    }
    _ncuh(["writeup", str(RUN), "--out", str(out / "pages")], env)
    for page in sorted((out / "pages").rglob("*")):
        if page.is_file():
            outputs[f"writeup/{page.relative_to(out / 'pages')}"] = page.read_bytes()
    store = out / "history.sqlite"
    _ncuh(["history", "add", str(RUN), "--commit", COMMIT, "--store", str(store)], env)
    with contextlib.closing(sqlite3.connect(store)) as conn:  # what history keeps of each kernel
        outputs["history"] = repr(conn.execute(
            "SELECT name, size, ordinal, function, device, payload FROM ncuh_kernels "
            "ORDER BY id").fetchall()).encode()
    return outputs


def test_commands_write_the_same_bytes_uncached_cold_and_warm(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    uncached = _outputs("off", tmp_path, cache)
    # off keeps nothing: no report read, no plot drawn
    assert not (cache / read_cache.CACHE_FOLDER).exists() and not (cache / "_plots").exists()
    cold = _outputs("cold", tmp_path, cache)
    kept = sorted(p.name for p in (cache / read_cache.CACHE_FOLDER).iterdir())
    # the diff pair and the run's first report (its second collected other metrics, so read
    # after the first in one process it is used but not kept); of the export, a note that it
    # was asked for (its table is kept when it is asked for again)
    assert sum(name.endswith(read_cache.SUFFIX) for name in kept) == 3
    assert [name.endswith(read_cache.ASKED_SUFFIX) for name in kept].count(True) == 1
    assert not any(name.endswith(read_cache.TEXT_SUFFIX) for name in kept)
    assert len(list((cache / "_plots").iterdir())) == 6  # the index's six plots
    warm = _outputs("warm", tmp_path, cache)
    kept = sorted(p.name for p in (cache / read_cache.CACHE_FOLDER).iterdir())
    assert [name.endswith(read_cache.TEXT_SUFFIX) for name in kept].count(True) == 1
    assert not any(name.endswith(read_cache.ASKED_SUFFIX) for name in kept)
    assert len(uncached) > 8
    for name, data in uncached.items():
        assert cold[name] == data, f"{name} differs with an empty cache"
        assert warm[name] == data, f"{name} differs with a full cache"
    assert set(cold) == set(warm) == set(uncached)


def test_an_edited_report_never_meets_its_old_entry(tmp_path: Path) -> None:
    report = tmp_path / "r.ncu-rep"
    report.write_bytes((RUN / "naive_256.ncu-rep").read_bytes())
    key = read_cache.report_key(report)
    report.write_bytes((RUN / "register_tiled_256.ncu-rep").read_bytes())
    assert key is not None and read_cache.report_key(report) not in (None, key)


@pytest.fixture
def cache_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The report cache's folder, under a cache of this test's own."""
    monkeypatch.setenv("NCUH_CACHE_DIR", str(tmp_path / "cache"))
    folder = read_cache.folder()
    folder.mkdir(mode=0o700, parents=True)
    return folder


def test_a_kept_entry_builds_nothing_but_the_report_model(cache_folder: Path) -> None:
    class Sneaky:
        def __reduce__(self) -> tuple[object, tuple[()]]:
            return (os.getcwd, ())  # a call an unguarded load would make

    (cache_folder / f"k{read_cache.SUFFIX}").write_bytes(
        zlib.compress(pickle.dumps([Sneaky()])))
    assert read_cache.fetch("k") is None


@pytest.mark.parametrize("value", ["off", "0", "no", "false", " OFF "])
def test_the_switch_turns_the_cache_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(kept_files.CACHE_SWITCH_ENV, value)
    assert not kept_files.cache_wanted()
    monkeypatch.setenv(kept_files.CACHE_SWITCH_ENV, "on")
    assert kept_files.cache_wanted()


def test_a_cut_entry_is_read_again_and_replaced(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    env = {**os.environ, "NCUH_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT),
           kept_files.CACHE_SWITCH_ENV: "on"}
    report = RUN / "naive_256.ncu-rep"
    first = _ncuh(["diff", str(report), str(report), "--format", "json"], env)
    (entry,) = (tmp_path / read_cache.CACHE_FOLDER).glob(f"*{read_cache.SUFFIX}")
    entry.write_bytes(entry.read_bytes()[:100])
    assert _ncuh(["diff", str(report), str(report), "--format", "json"], env) == first
    monkeypatch.setenv("NCUH_CACHE_DIR", str(tmp_path))
    assert read_cache.fetch(entry.name.removesuffix(read_cache.SUFFIX))


def test_a_cache_that_cannot_be_written_is_no_error(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")  # the cache folder cannot be made under a file
    env = {**os.environ, "NCUH_CACHE_DIR": str(blocked), "PYTHONPATH": str(ROOT)}
    report = RUN / "naive_256.ncu-rep"
    off = _ncuh(["export", str(report)], {**env, kept_files.CACHE_SWITCH_ENV: "off"})
    assert _ncuh(["export", str(report)], {**env, kept_files.CACHE_SWITCH_ENV: "on"}) == off


def test_a_report_read_after_another_reading_is_not_kept(tmp_path: Path) -> None:
    """After an export of the report (ncu_report then answers a derived unit in sectors, not
    bytes), its profiles (their details page) are not what a reading alone gives: they are
    used, never kept."""
    report = NAIVE_SMEM_REPORT
    script = (
        "import sys\n"
        "from harness.report import load_kernel_reports\n"
        "from harness.report.reportfile import export_columns\n"
        "if sys.argv[2] == 'export-first':\n"
        "    export_columns(sys.argv[1])\n"
        "profiles = load_kernel_reports(sys.argv[1])\n"
        "rows = [row for section in profiles[0].details.sections for row in section.rows\n"
        "        if row.metric == 'derived__memory_l2_theoretical_sectors_global_excessive']\n"
        "print(rows[0].raw_unit)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NCUH_CACHE_DIR": str(tmp_path),
           kept_files.CACHE_SWITCH_ENV: "on"}

    def unit(order: str) -> str:
        return subprocess.run([sys.executable, "-c", script, str(report), order], env=env,
                              capture_output=True, check=True, text=True).stdout.strip()

    folder = tmp_path / read_cache.CACHE_FOLDER
    assert unit("export-first") == "sector"
    assert not list(folder.glob(f"*{read_cache.SUFFIX}"))
    assert unit("alone") == "byte"  # read alone: kept
    assert len(list(folder.glob(f"*{read_cache.SUFFIX}"))) == 1
    assert unit("alone") == "byte"  # read back


def _kept_entry(folder: Path) -> tuple[str, bytes]:
    """A real entry (the report model of one small report), kept into the cache's `folder`."""
    from harness.report import load_kernel_reports

    key = "k" * 40
    assert read_cache.keep(key, load_kernel_reports(RUN / "naive_256.ncu-rep"))
    return key, (folder / f"{key}{read_cache.SUFFIX}").read_bytes()


def test_only_a_list_of_kernel_reports_is_served(cache_folder: Path) -> None:
    key, _ = _kept_entry(cache_folder)
    assert [p.name for p in read_cache.fetch(key)] == ["sgemm_naive"]
    for foreign in ([1, 2, "x"], {"a": 1}, [("tuple",)], []):
        (cache_folder / f"{key}{read_cache.SUFFIX}").write_bytes(
            zlib.compress(pickle.dumps(foreign)))
        assert read_cache.fetch(key) in (None, []), foreign


def test_an_entry_that_is_no_regular_file_or_inflates_past_the_bound_is_none(
        cache_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key, data = _kept_entry(cache_folder)
    entry = cache_folder / f"{key}{read_cache.SUFFIX}"
    entry.unlink()
    entry.symlink_to("/dev/zero")  # read whole, it would never end
    assert read_cache.fetch(key) is None
    entry.unlink()
    os.mkfifo(entry)  # opened for reading, it would wait for a writer
    assert read_cache.fetch(key) is None
    entry.unlink()
    entry.write_bytes(data)
    monkeypatch.setattr(kept_files, "MAX_PLAIN_BYTES", len(zlib.decompress(data)) - 1)
    assert read_cache.fetch(key) is None  # one byte past the bound
    monkeypatch.setattr(kept_files, "MAX_PLAIN_BYTES", len(zlib.decompress(data)))
    assert read_cache.fetch(key) is not None  # at the bound


def test_a_cache_folder_others_may_write_is_not_used(cache_folder: Path) -> None:
    key, _ = _kept_entry(cache_folder)
    assert kept_files.private_folder(cache_folder) and read_cache.fetch(key) is not None
    cache_folder.chmod(0o777)  # a shared folder: anyone could have planted the entry
    assert not kept_files.private_folder(cache_folder)
    assert read_cache.fetch(key) is None
    assert not read_cache.keep("n" * 40, [])
    cache_folder.chmod(0o700)


def test_a_cache_folder_that_cannot_be_named_leaves_diff_to_read_the_reports(
        tmp_path: Path) -> None:
    env = {**os.environ, "NCUH_CACHE_DIR": str(tmp_path / ("x" * 300)),
           "PYTHONPATH": str(ROOT), kept_files.CACHE_SWITCH_ENV: "on"}
    args = ["diff", str(BASELINE), str(CURRENT), "--format", "json"]
    assert _ncuh(args, env) == _ncuh(args, {**env, kept_files.CACHE_SWITCH_ENV: "off"})


def test_what_a_killed_writer_left_an_hour_ago_is_pruned(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NCUH_CACHE_DIR", str(tmp_path))
    folder = read_cache.folder()
    folder.mkdir(mode=0o700)
    old, new = folder / ".incomplete-old", folder / ".incomplete-new"
    old.write_bytes(b"x")
    new.write_bytes(b"x")
    os.utime(old, (0, 0))
    assert read_cache.keep_text("t" * 40, [zlib.compress(b"a table")])
    assert not old.exists() and new.exists()


def test_the_reader_key_follows_the_installed_ncu_report_version(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kept reading is keyed by ncu_report's installed version: the name of its metadata
    folder beside the package (read without importing importlib.metadata)."""
    import types

    package = tmp_path / "ncu_report"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "_ncu_report.so").write_bytes(b"library")
    os.utime(package / "_ncu_report.so", (0, 0))
    module = types.SimpleNamespace(__file__=str(package / "__init__.py"))
    monkeypatch.setattr(read_cache, "import_ncu_report", lambda: module)

    def fingerprint(version: str) -> bytes:
        for old in tmp_path.glob("ncu_report-*.dist-info"):
            old.rmdir()
        (tmp_path / f"ncu_report-{version}.dist-info").mkdir()
        read_cache._reader_fingerprint.cache_clear()
        return read_cache._reader_fingerprint()

    try:
        one, again, other = (fingerprint("2026.3.1"), fingerprint("2026.3.1"),
                             fingerprint("2026.4.0"))
    finally:
        read_cache._reader_fingerprint.cache_clear()
    assert one == again != other
