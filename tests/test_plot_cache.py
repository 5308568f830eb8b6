"""Plots kept once drawn: the same inputs give the same bytes without drawing again, from a
private folder only, and nothing is kept or read with the cache switched off."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.pages import plot_cache
from harness.pages.plots import gflops_chart, stall_chart
from harness.util import kept_files

ROOT = Path(__file__).resolve().parent.parent
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NCUH_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(kept_files.CACHE_SWITCH_ENV, raising=False)
    return tmp_path / plot_cache.FOLDER


class Drawer:
    """A stand-in drawing that counts how often it is asked."""

    def __init__(self, png: bytes = PNG + b"pixels") -> None:
        self.calls = 0
        self.png = png

    def __call__(self) -> tuple[str, str, bytes]:
        self.calls += 1
        return "gflops", "GFLOP/s per iteration", self.png


def test_a_plot_is_drawn_once_for_the_same_inputs(cache: Path) -> None:
    draw = Drawer()
    first = plot_cache.kept_or_drawn("gflops_chart", "(['a'], [1.0])", draw)
    again = plot_cache.kept_or_drawn("gflops_chart", "(['a'], [1.0])", draw)
    assert first == again == ("gflops", "GFLOP/s per iteration", PNG + b"pixels")
    assert draw.calls == 1
    other = plot_cache.kept_or_drawn("gflops_chart", "(['a'], [1.5])", draw)  # other inputs
    assert other == first and draw.calls == 2
    plot_cache.kept_or_drawn("stall_chart", "(['a'], [1.0])", draw)  # another chart
    assert draw.calls == 3 and len(list(cache.glob(f"*{plot_cache.SUFFIX}"))) == 3


def test_the_switch_off_draws_every_time_and_keeps_nothing(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(kept_files.CACHE_SWITCH_ENV, "off")
    draw = Drawer()
    for _ in range(2):
        plot_cache.kept_or_drawn("gflops_chart", "()", draw)
    assert draw.calls == 2 and not cache.exists()


def test_a_folder_others_may_write_is_neither_read_nor_written(cache: Path) -> None:
    draw = Drawer()
    plot_cache.kept_or_drawn("gflops_chart", "()", draw)
    cache.chmod(0o777)  # anyone could have planted a picture
    plot_cache.kept_or_drawn("gflops_chart", "()", draw)
    assert draw.calls == 2
    cache.chmod(0o700)
    plot_cache.kept_or_drawn("gflops_chart", "()", draw)
    assert draw.calls == 2


def test_a_kept_file_that_is_no_plot_is_drawn_anew(cache: Path) -> None:
    draw = Drawer()
    plot_cache.kept_or_drawn("gflops_chart", "()", draw)
    (kept,) = cache.glob(f"*{plot_cache.SUFFIX}")
    kept.write_bytes(b"not zlib")
    assert plot_cache.kept_or_drawn("gflops_chart", "()", draw)[2] == PNG + b"pixels"
    kept_files.keep_packed(cache, kept.name, b"gflops\0caption\0<svg onload=alert(1)>", 1 << 20)
    assert plot_cache.kept_or_drawn("gflops_chart", "()", draw)[2].startswith(PNG)
    assert draw.calls == 3
    # a name that would leave the pages' plots/ folder, with a real PNG behind it
    kept_files.keep_packed(cache, kept.name, b"../../escape\0caption\0" + PNG + b"x", 1 << 20)
    assert plot_cache.kept_or_drawn("gflops_chart", "()", draw)[0] == "gflops"
    assert draw.calls == 4
    kept_files.keep_packed(cache, kept.name, b"stalls_2\0caption\0" + PNG + b"x", 1 << 20)
    assert plot_cache.kept_or_drawn("gflops_chart", "()", draw)[0] == "stalls_2"  # a plain stem
    assert draw.calls == 4


def test_real_charts_come_back_byte_for_byte(cache: Path) -> None:
    drawn = [gflops_chart(["0. naive", "1. tiled"], [390.2, None], reference=2.0),
             stall_chart(["0. naive"], [{"long_scoreboard": 12.5, "barrier": 1.0}])]
    assert len(list(cache.iterdir())) == 2
    kept = [gflops_chart(["0. naive", "1. tiled"], [390.2, None], reference=2.0),
            stall_chart(["0. naive"], [{"long_scoreboard": 12.5, "barrier": 1.0}])]
    assert kept == drawn and drawn[0].png.startswith(PNG)
    assert gflops_chart(["0. naive"], [390.2], reference=2.0) != drawn[0]


def test_a_users_matplotlibrc_does_not_restyle_the_pages(cache: Path, tmp_path: Path) -> None:
    """Drawn under matplotlib's defaults: a key stands for one picture on every machine."""
    rc = tmp_path / "mplrc"
    rc.mkdir()
    (rc / "matplotlibrc").write_text("axes.facecolor: black\nfont.size: 20\n")
    code = ("import sys; from harness.pages.plots import gflops_chart; "
            "sys.stdout.buffer.write(gflops_chart(['a'], [1.0], reference=None).png)")
    pngs = []
    for config in (rc, tmp_path / "empty"):
        env = {**os.environ, "MPLCONFIGDIR": str(config), kept_files.CACHE_SWITCH_ENV: "off",
               "PYTHONPATH": str(ROOT)}
        pngs.append(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                   check=True).stdout)
    assert pngs[0].startswith(PNG) and pngs[0] == pngs[1]
