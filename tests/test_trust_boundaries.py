"""The Python API, the caches and the command line at their trust boundaries.

- The API holds the CLI's rules: it never writes into the run it reads, and a project the
  caller names that cannot load is a named error, not pages without its strategies.
- A cache entry is served only where it is this user's alone: a planted export table, plot,
  plan, tuning winner or section overlay that another user owns, or that others may write,
  is read as none (both sides of each boundary are pinned: the same file, owned privately, is
  served). A kept plot caption is text where the pages show it.
- A click usage error is one `ncuh: error:` line like every other error.
"""

from __future__ import annotations

import os
import shutil
import stat
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner
from markdown_support import md, raw_html_from_data, structure
from packed_fixtures import NAIVE_SMEM_REPORT

from harness.api import load
from harness.cli import main
from harness.errors import OutputError, ProjectError

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "reports" / "runs" / "sgemm-h200-256"
SCALE = ROOT / "tests" / "projects" / "scale"
NOBODY = 65534  # another user's id, for the files planted as someone else
as_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                             reason="only root can plant a file owned by another user")


def ncuh(*args: object, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def _listing(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_size for p in folder.rglob("*")}


# --- the Python API --------------------------------------------------------------------------


def test_pages_are_never_written_into_the_run_they_read(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    before = _listing(run)
    result = load(run)
    for out in (run, run / "pages", run / "." / "pages" / ".."):
        with pytest.raises(OutputError, match="an input of this command \\(inputs are never "
                                              "written\\)"):
            result.page(out=out)
        line = ncuh("writeup", run, "--out", out).stderr.strip()
        assert line.startswith(f"ncuh: error: cannot write into {out}: it is ") and \
            "\n" not in line
    assert _listing(run) == before
    beside = result.page(out=tmp_path / "pages")  # beside the run: written
    assert beside == tmp_path / "pages" / "index.md" and beside.is_file()


def test_a_named_project_that_cannot_load_is_a_named_error(tmp_path: Path) -> None:
    project = tmp_path / "broken"
    shutil.copytree(SCALE, project, ignore=shutil.ignore_patterns("__pycache__"))
    module = project / "scale_project.py"
    module.write_text(module.read_text() + "\nSCALE = 1 / 0\n")
    result = load(NAIVE_SMEM_REPORT, project=project)
    for ask in (lambda: result.findings(), lambda: result.page(), lambda: result.kernels):
        with pytest.raises(ProjectError, match=r"module 'scale_project' failed to import: "
                                               r"ZeroDivisionError: division by zero"):
            ask()
    assert len(load(NAIVE_SMEM_REPORT).findings()) > 0  # without it, the report reads


def test_plot_text_from_data_is_never_mathtext(tmp_path: Path, cache: Path) -> None:
    """A variant named with `$...$` is drawn as those characters: matplotlib's mathtext
    parser would refuse `\\x` (and a drawing must never depend on what a name holds)."""
    import json

    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    manifest = (run / "manifest.json").read_text(encoding="utf-8")
    (run / "manifest.json").write_text(
        manifest.replace('"naive"', json.dumps("naive $\\x$")), encoding="utf-8")
    result = ncuh("writeup", run, "--out", tmp_path / "pages", "--format", "md")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "pages" / "00_naive_x__256x256x256.md").is_file()
    assert len(list((tmp_path / "pages" / "plots").glob("*.png"))) >= 2


# --- caches ----------------------------------------------------------------------------------


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("NCUH_CACHE_DIR", str(folder))
    monkeypatch.delenv("NCUH_REPORT_CACHE", raising=False)
    return folder


def _plant(path: Path, data: bytes, mode: int, owner: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_bytes(data)
    path.chmod(mode)
    if owner is not None:
        os.chown(path, owner, -1)


def _planted_export(cache: Path, mode: int, owner: int | None = None) -> str:
    """`ncuh export` of the report after an export table of two made-up rows was planted
    where the report's own table is kept."""
    import hashlib

    from harness.report import read_cache

    key = hashlib.sha256(f"{read_cache.report_key(NAIVE_SMEM_REPORT)}|export|csv|None"
                         .encode()).hexdigest()[:40]
    _plant(read_cache.folder() / f"{key}{read_cache.TEXT_SUFFIX}",
           zlib.compress(b"1\nplanted,row\n"), mode, owner)
    result = ncuh("export", NAIVE_SMEM_REPORT)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_an_export_table_served_only_where_it_is_the_users_alone(cache: Path) -> None:
    assert _planted_export(cache, 0o600) == "planted,row\n"  # the planting reaches the reader
    for mode in (0o620, 0o602, 0o666):  # writable by the group or others: never served
        shown = _planted_export(cache, mode)
        assert "planted" not in shown and shown.startswith("kernel_id,"), oct(mode)


@as_root
def test_an_export_table_another_user_owns_is_never_served(cache: Path) -> None:
    shown = _planted_export(cache, 0o600, owner=NOBODY)
    assert "planted" not in shown and shown.startswith("kernel_id,")


def test_a_kept_plot_caption_is_text_where_the_pages_show_it(cache: Path,
                                                             tmp_path: Path) -> None:
    first = tmp_path / "first"
    assert ncuh("writeup", RUN, "--out", first, "--format", "md").exit_code == 0
    pristine = (first / "index.md").read_text(encoding="utf-8")
    entries = sorted((cache / "_plots").glob("*.png.z"))
    assert entries
    for entry in entries:
        name, _, rest = zlib.decompress(entry.read_bytes()).partition(b"\0")
        _, _, png = rest.partition(b"\0")
        caption = "Caption | with a pipe\n# a heading <script>alert(1)</script> $\\x$ ``` "
        entry.write_bytes(zlib.compress(name + b"\0" + caption.encode() + b"\0" + png))
    second = tmp_path / "second"
    assert ncuh("writeup", RUN, "--out", second, "--format", "md").exit_code == 0
    shown = (second / "index.md").read_text(encoding="utf-8")
    assert "Caption \\| with a pipe \\# a heading \\<script>" in shown  # the kept caption
    assert structure(shown) == structure(pristine)
    assert raw_html_from_data(shown) == [] and "<script>" not in md.render(shown)


@as_root
def test_a_plot_another_user_owns_is_drawn_again(cache: Path, tmp_path: Path) -> None:
    assert ncuh("writeup", RUN, "--out", tmp_path / "a", "--format", "md").exit_code == 0
    for entry in (cache / "_plots").glob("*.png.z"):
        name, _, rest = zlib.decompress(entry.read_bytes()).partition(b"\0")
        entry.write_bytes(zlib.compress(name + b"\0planted caption\0" + rest.partition(b"\0")[2]))
        os.chown(entry, NOBODY, -1)
    assert ncuh("writeup", RUN, "--out", tmp_path / "b", "--format", "md").exit_code == 0
    assert "planted" not in (tmp_path / "b" / "index.md").read_text(encoding="utf-8")


def test_kept_files_are_read_only_where_the_user_alone_may_write_them(tmp_path: Path) -> None:
    from harness.util import read_kept

    entry = tmp_path / "entry.z"
    _plant(entry, zlib.compress(b"kept"), 0o600)
    assert read_kept(entry) == b"kept"
    for mode in (0o620, 0o602):
        entry.chmod(mode)
        assert read_kept(entry) is None, oct(mode)
    entry.chmod(0o644)  # readable by others is fine: only writing is refused
    assert read_kept(entry) == b"kept"
    if os.geteuid() == 0:
        os.chown(entry, NOBODY, -1)
        assert read_kept(entry) is None


def test_a_kept_plan_or_tuning_winner_is_served_only_when_the_users_alone(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from harness.gpu.tuning import TUNING_SCHEMA, TuneCache
    from harness.profile import plan_cache

    monkeypatch.setattr(plan_cache.KeptTarget, "target", lambda self, *args: self.label)
    plan = cache / plan_cache.CACHE_FOLDER / "k.json"
    target = {"label": "naive_1024", "variant": "naive", "size": [1024], "params": {},
              "kernel": "naive"}
    _plant(plan, json.dumps({"version": plan_cache.PLAN_CACHE_VERSION,
                             "targets": [target]}).encode(), 0o600)
    assert plan_cache.load("k", None, "single", Path("p")) == ("naive_1024",)  # type: ignore[arg-type]
    winners = cache / "proj" / "tuning.json"
    entry = {"gpu": "G", "variant": "v", "size": "1024", "params": {"BLOCK": 64}}
    _plant(winners, json.dumps({"schema": TUNING_SCHEMA, "entries": [entry]}).encode(), 0o644)
    assert TuneCache(winners, kept=True).entries == [entry]
    for path in (plan, winners):
        path.chmod(0o666)
    assert plan_cache.load("k", None, "single", Path("p")) is None  # type: ignore[arg-type]
    assert TuneCache(winners, kept=True).entries == []
    assert TuneCache(winners).entries == [entry]  # a project's own shipped file: its own rule
    if os.geteuid() == 0:
        for path in (plan, winners):
            path.chmod(0o600)
            os.chown(path, NOBODY, -1)
        assert plan_cache.load("k", None, "single", Path("p")) is None  # type: ignore[arg-type]
        assert TuneCache(winners, kept=True).entries == []


def test_a_section_overlay_is_used_only_when_the_users_alone(tmp_path: Path) -> None:
    """ncu runs an overlay's rule files: a file others may write, a link or another user's
    file in it makes the whole overlay unused."""
    from harness.profile import section_overlay as so

    stock = tmp_path / "stock"
    stock.mkdir()
    (stock / "SpeedOfLight.section").write_text('Identifier: "SpeedOfLight"\n')
    (stock / "Rule.py").write_text("# a rule ncu runs\n")
    built = tmp_path / "overlay"
    so.build_overlay(stock, built, slimmed=(), thinned={}, rules_left_out=())
    assert so.read_marker(built) is not None
    for path in (built, built / so.SECTIONS, *(built / so.SECTIONS).iterdir()):
        assert not stat.S_IMODE(path.stat().st_mode) & 0o022  # whatever the umask
    rule = built / so.SECTIONS / "Rule.py"
    rule.chmod(0o666)
    assert so.read_marker(built) is None
    rule.chmod(0o644)
    (built / so.SECTIONS / "Other.py").symlink_to(tmp_path / "elsewhere.py")
    assert so.read_marker(built) is None
    (built / so.SECTIONS / "Other.py").unlink()
    assert so.read_marker(built) is not None
    if os.geteuid() == 0:
        os.chown(rule, NOBODY, -1)
        assert so.read_marker(built) is None


# --- usage errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "says"), [
    (["--bogus"], "ncuh: No such option '--bogus'."),
    (["nosuch"], "ncuh: No such command 'nosuch'."),
    (["diff"], "ncuh diff: Missing argument 'BASELINE'."),
    (["history", "show", "--stpe", "3"], "ncuh history show: No such option '--stpe'. (Did you "
                                         "mean one of: '--step', '--store'?)"),
    (["history", "check", "--format", "xml"], "ncuh history check: Invalid value for "
                                              "'--format': 'xml' is not one of 'md', 'json', "
                                              "'junit'."),
    (["export", "--format", "xml", "x.ncu-rep"], "ncuh export: Invalid value for '--format'"),
    (["bench", "--repeats", "0"], "ncuh bench: Invalid value for '--repeats'"),
])
def test_a_usage_error_is_one_line(args: list[str], says: str) -> None:
    result = CliRunner().invoke(main, args, prog_name="ncuh")
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"ncuh: error: {says}"), result.stderr
    assert lines[0].endswith(f"(see '{says.split(':')[0]} --help')")
    assert result.stdout == ""


def test_a_group_without_its_command_still_shows_its_help() -> None:
    result = CliRunner().invoke(main, ["history"], prog_name="ncuh")
    assert "Usage: ncuh history [OPTIONS] COMMAND [ARGS]..." in result.output
    assert "ncuh: error" not in result.output
