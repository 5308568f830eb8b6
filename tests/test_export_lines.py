"""`ncuh export`'s CSV made a metric at a time and in pieces by forked workers: the bytes
csv.writer wrote."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packed_fixtures import REDUCTION_RUN

from harness.report import read_cache
from harness.report.export_format import spreadsheet_text
from harness.report.export_lines import csv_cell
from harness.util import kept_files

ROOT = Path(__file__).resolve().parent.parent
FOUR_KERNELS = REDUCTION_RUN / "sequential_67108864.ncu-rep"
ONE_KERNEL = ROOT / "reports" / "runs" / "sgemm-h200-256" / "register_tiled_256.ncu-rep"

cells = st.one_of(
    st.none(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet=st.sampled_from(list('ab ,"\r\n\t=+-@#;\'é0.1e')), max_size=12),
    st.text(max_size=8),
)


@given(st.lists(cells, min_size=2, max_size=6))
def test_a_row_of_cells_is_what_csv_writer_writes(row: list[object]) -> None:
    expected = io.StringIO()
    csv.writer(expected, lineterminator="\n").writerow([spreadsheet_text(c) for c in row])
    assert ",".join(csv_cell(c) for c in row) + "\n" == expected.getvalue()


def test_cells_that_need_quotes_or_a_guard() -> None:
    assert csv_cell('void k<1, 2>(float*)') == '"void k<1, 2>(float*)"'
    assert csv_cell('say "hi"') == '"say ""hi"""'
    assert csv_cell("=HYPERLINK(1)") == "'=HYPERLINK(1)"
    assert csv_cell("-1.5") == "-1.5"  # a number stays a number
    assert (csv_cell(None), csv_cell(3), csv_cell(0.1), csv_cell("#4")) == ("", "3", "0.1", "#4")


_COMPARE = """
import hashlib, sys
from pathlib import Path
from harness.report.export_format import export_text
from harness.report.export_lines import export_csv
from harness.report.reportfile import export_columns
from harness.util import kept_files
report, mode, jobs = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
regex = None if sys.argv[4] == "-" else sys.argv[4]
if mode == "writer":  # the table written by csv.writer (`write_export`)
    data = export_text(export_columns(report, kernel_regex=regex), "csv").encode()
else:
    made = export_csv(report, regex, jobs, pack=mode == "packed")
    data = b"".join(made.pieces)
    if made.packed is not None:  # the kept entry: its row count, then the same bytes
        plain = kept_files.inflated(b"".join(made.packed), kept_files.MAX_PLAIN_BYTES)
        rows, _, kept = plain.partition(b"\\n")
        assert kept == data and int(rows) == made.rows
print(data.count(b"\\n"), hashlib.sha256(data).hexdigest())
"""


def _digest(report: Path, mode: str, jobs: int, regex: str | None) -> str:
    """Each reading in a process of its own, as `ncuh export` reads a report (ncu_report keeps
    what a process asked before)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", _COMPARE, str(report), mode, str(jobs), regex or "-"],
        env=env, capture_output=True, check=True, text=True).stdout


def test_the_export_in_pieces_is_the_bytes_csv_writer_wrote() -> None:
    writer = _digest(FOUR_KERNELS, "writer", 1, None)
    assert int(writer.split()[0]) > 10_000
    # one process; a piece per kernel in two and three, packed as the cache keeps it in two
    assert _digest(FOUR_KERNELS, "plain", 1, None) == writer
    assert _digest(FOUR_KERNELS, "packed", 2, None) == writer
    assert _digest(FOUR_KERNELS, "plain", 3, None) == writer
    # a kernel filter decodes every kernel here, then splits by rows
    filtered = _digest(FOUR_KERNELS, "writer", 1, "reduce")
    assert _digest(FOUR_KERNELS, "plain", 3, "reduce") == filtered
    # fewer kernels than processes: split by rows too
    assert _digest(ONE_KERNEL, "plain", 2, None) == _digest(ONE_KERNEL, "writer", 1, None)


def test_a_kept_text_of_streams_packed_apart_reads_as_one(tmp_path: Path) -> None:
    parts = [b"2\nkernel_id,kernel\n", b"0,a\n", b"1,b\n"]
    entry = tmp_path / "entry.txt.z"
    entry.write_bytes(b"".join(zlib.compress(part) for part in parts))
    assert kept_files.read_kept(entry) == b"".join(parts)
    # a last stream cut short is no entry at all
    entry.write_bytes(b"".join(zlib.compress(part) for part in parts)[:-3])
    assert kept_files.read_kept(entry) is None


def test_an_export_is_kept_when_asked_again_and_read_back_the_same(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NCUH_CACHE_DIR": str(tmp_path),
           kept_files.CACHE_SWITCH_ENV: "on"}
    run = [sys.executable, "-m", "harness", "export", str(FOUR_KERNELS)]
    folder = tmp_path / read_cache.CACHE_FOLDER

    def entries(suffix: str) -> list[Path]:
        return list(folder.glob(f"*{suffix}"))

    first = subprocess.run(run, env=env, capture_output=True, check=True).stdout
    assert not entries(read_cache.TEXT_SUFFIX) and len(entries(read_cache.ASKED_SUFFIX)) == 1
    second = subprocess.run(run, env=env, capture_output=True, check=True).stdout
    assert len(entries(read_cache.TEXT_SUFFIX)) == 1 and not entries(read_cache.ASKED_SUFFIX)
    third = subprocess.run(run, env=env, capture_output=True, check=True).stdout  # read back
    uncached = subprocess.run(run, env={**env, kept_files.CACHE_SWITCH_ENV: "off"},
                              capture_output=True, check=True).stdout
    assert first == second == third == uncached
    assert first.startswith(b"kernel_id,kernel,metric,")


def test_streams_past_the_bound_are_no_entry(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kept_files, "MAX_PLAIN_BYTES", 8)
    entry = tmp_path / "entry.txt.z"
    entry.write_bytes(zlib.compress(b"12345678"))  # exactly the bound: whole
    assert kept_files.read_kept(entry) == b"12345678"
    # the bound reached by the first stream: a second one is not inflated without a bound
    entry.write_bytes(zlib.compress(b"12345678") + zlib.compress(b"x" * 1000))
    assert kept_files.read_kept(entry) is None


def test_the_copy_shipped_with_nsight_compute_keeps_the_public_accessors() -> None:
    import types

    from harness.report.reportfile import _accessor

    def raw(metric: object) -> str:
        return "raw"

    class IMetric:
        def as_double(self) -> str:
            return "public"

    def module(file: str) -> object:
        return types.SimpleNamespace(__file__=file, IMetric=IMetric,
                                     _ncu_report=types.SimpleNamespace(IMetric_as_double=raw))

    pypi = module("/venv/lib/python3.12/site-packages/ncu_report/__init__.py")
    shipped = module("/opt/nvidia/nsight-compute/2025.3.1/extras/python/ncu_report.py")
    assert _accessor(pypi, "as_double") is raw
    assert _accessor(shipped, "as_double") is IMetric.as_double
    # a copy without the raw function keeps the public one too
    bare = types.SimpleNamespace(__file__=pypi.__file__, IMetric=IMetric)
    assert _accessor(bare, "as_double") is IMetric.as_double


def _result_payloads(data: bytes) -> list[tuple[int, int]]:
    """(offset, size) of each kernel's result payload (the block walk of check_report_file)."""
    import struct

    from harness.report import reportfile

    offset, found = 8 + struct.unpack("<I", data[4:8])[0], []
    while offset < len(data):
        header_size = struct.unpack("<I", data[offset:offset + 4])[0]
        fields = reportfile._varint_fields(data[offset + 4:offset + 4 + header_size])
        if fields.get(2):
            found.append((offset + 4 + header_size, fields.get(5, 0)))
        offset += 4 + header_size + fields.get(5, 0)
    return found


def test_a_report_with_corrupt_kernels_names_the_first_one_whoever_read_it(
        tmp_path: Path) -> None:
    data = bytearray(FOUR_KERNELS.read_bytes())
    for start, size in [_result_payloads(bytes(data))[k] for k in (1, 3)]:
        for at in range(start + size // 3, start + size // 3 + 64):
            data[at] ^= 0xFF
    report = tmp_path / "two_corrupt.ncu-rep"
    report.write_bytes(data)
    env = {**os.environ, "PYTHONPATH": str(ROOT), kept_files.CACHE_SWITCH_ENV: "off"}
    for _ in range(3):  # each process may take either kernel first
        done = subprocess.run([sys.executable, "-m", "harness", "export", str(report), "-o",
                               str(tmp_path / "out.csv")], env=env, capture_output=True,
                              text=True)
        assert done.returncode == 2
        assert done.stderr.startswith(f"ncuh: error: {report} is corrupt: kernel 1 ")
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert not (tmp_path / "out.csv").exists()
