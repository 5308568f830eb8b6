"""Bad input: one clear line on stderr, exit status 2, no traceback, no output file left."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from packed_fixtures import NAIVE_SMEM_REPORT

from harness.cli import main
from harness.errors import ReportError
from harness.report.reportfile import _varint_fields, check_report_file, open_report

REPO = Path(__file__).resolve().parents[1]


def _report_without_kernels(destination: Path) -> Path:
    """The fixture with every block that carries results (kernels) left out: a well-formed
    report of a run that profiled nothing."""
    data = NAIVE_SMEM_REPORT.read_bytes()
    header_end = 8 + struct.unpack("<I", data[4:8])[0]
    kept = [data[:header_end]]
    offset = header_end
    while offset < len(data):
        size = struct.unpack("<I", data[offset : offset + 4])[0]
        fields = _varint_fields(data[offset + 4 : offset + 4 + size])
        end = offset + 4 + size + fields.get(5, 0)
        if not fields.get(2, 0):
            kept.append(data[offset:end])
        offset = end
    destination.write_bytes(b"".join(kept))
    return destination


PACKED = (Path(__file__).resolve().parent.parent / "reports" / "runs" / "init-h200"
          / "naive_16777216.ncu-rep.xz")


@pytest.fixture(scope="module")
def bad_inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """name -> (path, a phrase the error line must contain)."""
    root = tmp_path_factory.mktemp("bad")
    directory = root / "a_directory.ncu-rep"
    directory.mkdir()
    empty = root / "empty.ncu-rep"
    empty.write_bytes(b"")
    text = root / "notes.ncu-rep"
    text.write_text("this is not an Nsight Compute report\n")
    truncated = root / "truncated.ncu-rep"
    truncated.write_bytes(NAIVE_SMEM_REPORT.read_bytes()[:3_000_000])  # cut inside kernel 2
    return {
        "missing": (root / "does_not_exist.ncu-rep", "not found"),
        "directory": (directory, "is a directory"),
        "not a report": (text, "not an Nsight Compute report"),
        "truncated": (truncated, "is truncated"),
        "empty": (empty, "is empty"),
        "no kernels": (_report_without_kernels(root / "no_kernels.ncu-rep"), "no profiled kernels"),
        # a sample report as committed, packed: named for the report it holds
        "packed": (PACKED, "is packed with xz, not an Nsight Compute report yet: unpack it "
                   "with `xz -dk` first"),
    }


CASES = ["missing", "directory", "not a report", "truncated", "empty", "no kernels", "packed"]


def test_ncu_report_alone_accepts_bad_files_so_ncuh_checks_them(bad_inputs) -> None:
    """Why `check_report_file` exists: ncu_report opens garbage as an empty report and a
    truncated report as if it were whole."""
    import ncu_report

    text, _ = bad_inputs["not a report"]
    assert ncu_report.load_report(str(text)).num_ranges() == 0
    truncated, _ = bad_inputs["truncated"]
    context = ncu_report.load_report(str(truncated))
    assert context.num_ranges() == 1 and context.range_by_idx(0).num_actions() == 2
    with pytest.raises(ReportError, match="truncated"):
        check_report_file(truncated)
    assert check_report_file(NAIVE_SMEM_REPORT).results == 2


@pytest.mark.parametrize("case", CASES)
def test_open_report_raises_one_line_report_error(case: str, bad_inputs) -> None:
    path, phrase = bad_inputs[case]
    with pytest.raises(ReportError) as caught:
        open_report(path)
    assert phrase in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("command", ["export", "report"])
def test_cli_bad_report_exits_2_with_one_line(case: str, command: str, bad_inputs,
                                              tmp_path: Path) -> None:
    path, phrase = bad_inputs[case]
    output = tmp_path / "out.csv"
    args = [command, str(path)] + (["-o", str(output)] if command == "export" else [])
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ncuh: error: ") and phrase in lines[0]
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert list(tmp_path.iterdir()) == []  # no output file, no temporary file


@pytest.mark.parametrize("command", ["export", "report"])
def test_kernel_filter_matching_nothing(command: str, tmp_path: Path) -> None:
    args = [command, str(NAIVE_SMEM_REPORT), "--kernel", "no_such_kernel"]
    if command == "export":
        args += ["-o", str(tmp_path / "out.csv")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert "no kernel" in lines[0] and "sgemm_naive, sgemm_smem" in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_bad_regex_is_a_clear_error() -> None:
    result = CliRunner().invoke(main, ["report", str(NAIVE_SMEM_REPORT), "--kernel", "regex:("])
    assert result.exit_code == 2
    assert "bad --kernel regex" in result.stderr


def test_real_subprocess_truncated_export(bad_inputs, tmp_path: Path) -> None:
    path, _ = bad_inputs["truncated"]
    output = tmp_path / "metrics.csv"
    completed = subprocess.run(
        [sys.executable, "-m", "harness", "export", str(path), "-o", str(output)],
        capture_output=True, text=True, cwd=REPO, timeout=120, check=False,
    )
    assert completed.returncode == 2
    assert completed.stdout == ""
    assert len(completed.stderr.splitlines()) == 1
    assert "Traceback" not in completed.stderr
    assert "is truncated" in completed.stderr
    assert list(tmp_path.iterdir()) == []


def test_real_subprocess_report_of_a_directory(bad_inputs) -> None:
    path, _ = bad_inputs["directory"]
    completed = subprocess.run(
        [sys.executable, "-m", "harness", "report", str(path)],
        capture_output=True, text=True, cwd=REPO, timeout=120, check=False,
    )
    assert completed.returncode == 2
    assert completed.stderr.count("\n") == 1 and "Traceback" not in completed.stderr
