"""ncuh's cache folder (`NCUH_CACHE_DIR`, else the XDG cache folder) and the one switch of the
kept reports and plots, under its name and its former one."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.util import cache_dir, kept_files, user_cache


@pytest.fixture
def bare(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No cache variable set, and a home of the test's own."""
    for name in (user_cache.CACHE_ENV, "XDG_CACHE_HOME", user_cache.CACHE_SWITCH_ENV,
                 user_cache.OLD_CACHE_SWITCH_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


def test_the_cache_is_under_home_dot_cache_by_default(bare: Path) -> None:
    assert cache_dir() == bare / "home" / ".cache" / "ncuh"


def test_the_cache_follows_xdg_cache_home(bare: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(bare / "xdg"))
    assert cache_dir() == bare / "xdg" / "ncuh"
    # a relative XDG_CACHE_HOME is invalid (XDG Base Directory specification): ignored
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    assert cache_dir() == bare / "home" / ".cache" / "ncuh"


def test_ncuh_cache_dir_comes_first(bare: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(bare / "xdg"))
    monkeypatch.setenv(user_cache.CACHE_ENV, str(bare / "mine"))
    assert cache_dir() == bare / "mine"


@pytest.mark.parametrize(("new", "old", "on"), [
    (None, None, True),
    ("off", None, False),
    (" OFF ", None, False),
    ("0", None, False),
    ("on", None, True),
    (None, "off", False),  # the former name still works
    (None, "on", True),
    ("on", "off", True),  # the new name wins
    ("off", "on", False),
])
def test_one_switch_for_reports_and_plots(bare: Path, monkeypatch: pytest.MonkeyPatch,
                                          new: str | None, old: str | None, on: bool) -> None:
    if new is not None:
        monkeypatch.setenv("NCUH_REPORT_AND_PLOT_CACHE", new)
    if old is not None:
        monkeypatch.setenv("NCUH_REPORT_CACHE", old)
    assert kept_files.cache_wanted() is on


def test_the_former_name_of_the_switch_gets_a_note(bare: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    result = CliRunner().invoke(main, ["list"])
    assert result.exit_code == 0 and result.stderr == ""
    monkeypatch.setenv("NCUH_REPORT_CACHE", "off")
    result = CliRunner().invoke(main, ["list"])
    assert result.exit_code == 0, result.output
    [note] = result.stderr.splitlines()  # one line, naming both
    assert note.startswith("ncuh: note: NCUH_REPORT_CACHE ")
    assert "NCUH_REPORT_AND_PLOT_CACHE" in note
    monkeypatch.setenv("NCUH_REPORT_AND_PLOT_CACHE", "off")  # both set: the user has moved on
    assert CliRunner().invoke(main, ["list"]).stderr == ""
