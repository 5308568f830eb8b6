"""A report corrupted inside intact block framing is refused, never read as 'no kernels'.

The bug (issue 14): 4 KiB flipped at 15-95% of a small real report left every block header
valid, ncu_report returned one action with no name and no metrics, and `ncuh diff corrupted
good` printed "no regression in 0 kernels" and exited 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from packed_fixtures import H200_NAIVE, H200_REGISTER_TILED

from harness.cli import main
from harness.diff.compare import diff_runs
from harness.errors import NcuhError, ReportError
from harness.report.reportfile import check_report_file, open_report
from harness.util.input_file import column_holds_bad_text, holds_bad_text

GOOD = H200_NAIVE
OTHER = H200_REGISTER_TILED


def flipped(tmp_path: Path, pct: int, length: int = 4096) -> Path:
    data = bytearray(GOOD.read_bytes())
    start = len(data) * pct // 100
    for i in range(start, min(start + length, len(data))):
        data[i] ^= 0xFF
    path = tmp_path / f"flipped_{pct}.ncu-rep"
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("pct", [15, 35, 55, 75, 95])
def test_flipped_payload_keeps_framing_but_is_refused(tmp_path: Path, pct: int) -> None:
    bad = flipped(tmp_path, pct)
    check_report_file(bad)  # the framing is intact: only the kernel check can catch it
    with pytest.raises(ReportError, match=r"is corrupt: kernel 0 has no readable name"):
        open_report(bad)


@pytest.mark.parametrize("args", [
    ["diff", "{bad}", "{good}"], ["diff", "{good}", "{bad}"], ["report", "{bad}"],
    ["export", "{bad}"], ["writeup", "{bad}", "--out", "{tmp}/pages"],
])
def test_every_command_refuses_a_flipped_report(tmp_path: Path, args: list[str]) -> None:
    bad = flipped(tmp_path, 55)
    argv = [a.format(bad=bad, good=GOOD, tmp=tmp_path) for a in args]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0] and "corrupt" in lines[0]
    assert not (tmp_path / "pages").exists()


def test_diff_matching_no_kernel_is_exit_2_unless_allowed() -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["diff", str(GOOD), str(OTHER)])
    assert result.exit_code == 2
    line = result.stderr.strip()
    assert "no kernel of" in line and "sgemm_naive" in line and "sgemm_register_tiled" in line
    assert "--allow-no-match" in line and len(line.splitlines()) == 1
    allowed = runner.invoke(main, ["diff", str(GOOD), str(OTHER), "--allow-no-match"])
    assert allowed.exit_code == 0, allowed.output
    assert "Removed" in allowed.stdout and "Added" in allowed.stdout


def test_diff_runs_refuses_no_match_and_pairs_rescue_it() -> None:
    with pytest.raises(NcuhError, match="nothing to compare"):
        diff_runs(GOOD, OTHER)
    result = diff_runs(GOOD, OTHER, pairs=["sgemm_naive=sgemm_register_tiled"])
    assert len(result.kernels) == 1


def test_every_kernel_broken_in_the_current_run_is_a_regression_not_no_match(
        tmp_path: Path) -> None:
    from diff_rundirs import make_run

    base = make_run(tmp_path, "base", {"naive": None})
    cur = make_run(tmp_path, "cur", {}, failed={"naive": "compile error"})
    result = diff_runs(base, cur)
    assert result.kernels == () and len(result.broken) == 1 and result.exit_code == 1


def _one_byte_in(tmp_path: Path, needle: bytes, occurrence: int = 0) -> Path:
    """The fixture with byte 3 of the `occurrence`-th `needle` made 0xFF (not UTF-8)."""
    data = bytearray(GOOD.read_bytes())
    start = -1
    for _ in range(occurrence + 1):
        start = data.index(needle, start + 1)
    data[start + 3] = 0xFF
    path = tmp_path / "one_byte.ncu-rep"
    path.write_bytes(bytes(data))
    return path


def test_a_metric_name_with_a_flipped_byte_is_refused(tmp_path: Path) -> None:
    bad = _one_byte_in(tmp_path, b"smsp__inst_executed.sum")  # the name table
    with pytest.raises(ReportError, match=r"unreadable metric name 'sms\\udcff__inst_exec"):
        open_report(bad)


@pytest.mark.parametrize("command", ["report", "export", "diff"])
def test_text_that_is_not_utf8_is_refused_not_a_traceback(tmp_path: Path, command) -> None:
    bad = _one_byte_in(tmp_path, b"NVIDIA H200")  # the device name, a string metric
    args = [command, str(bad)] + ([str(GOOD)] if command == "diff" else [])
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit | None)
    assert result.stderr.count("\n") == 1 and "holds text that is not UTF-8" in result.stderr


def test_a_column_is_bad_exactly_when_one_of_its_strings_cannot_be_utf8() -> None:
    clean = ["sgemm_naive", 1.5, None, 7, "", "LDG.E.128", "sgemm_naive"]
    assert not column_holds_bad_text(clean)
    assert not column_holds_bad_text([])
    # ncu_report hands out a corrupt byte as a lone surrogate, also deep in a long column
    assert column_holds_bad_text([*clean * 1000, "sms\udcff__inst", 2.0])
    assert column_holds_bad_text(["\udcff"])
    # the same verdict as the general check, on each of those
    for column in (clean, [*clean, "x\udcffy"]):
        assert column_holds_bad_text(column) == holds_bad_text(column)
