"""`ncuh history add|show|check` end to end, on both stores, and every bad input's one line."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from history_support import (  # noqa: F401  (the pg_server and store_url fixtures)
    NAIVE_PAGES,
    SMEM_TILED,
    ncuh,
    new_database,
    one_error_line,
    pg_server_fixture,
    recorded,
    samples,
    sha,
    with_samples,
    write_run,
)

from harness.history import open_store
from harness.history.vcs import resolve_commit


@pytest.fixture(scope="module", params=["sqlite", "postgresql"], name="history")
def history_fixture(request: pytest.FixtureRequest,
                    tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """Four real runs recorded at commits 1-4 (the last one 6% slower, rewritten), once per
    store kind for the module (the tests only read it, or add what is there already)."""
    root = tmp_path_factory.mktemp("history")
    if request.param == "sqlite":
        store_url = str(root / "history.sqlite")
    else:
        server = request.getfixturevalue("pg_server")
        if server is None:
            pytest.skip("PostgreSQL could not start here (initdb/pg_ctl missing or failing)")
        store_url = new_database(server)
    # runs 1-3 through the library (the real run, read once per test process), run 4 through
    # the command, as CI adds one
    store = open_store(store_url, create=True)
    for n in range(1, 4):
        store.add(with_samples(recorded("base"), samples(0.30, 0.01, seed=n)), sha(n), "main")
    store.close()
    run = write_run(root, "run3", SMEM_TILED, samples(0.318, 0.01, seed=4))
    result = ncuh("history", "add", run, "--commit", sha(4), "--branch", "main",
                  "--store", store_url)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"added run3 at {sha(4)[:10]} (1 kernel) to ")
    return store_url, run


def test_add_twice_at_one_commit_says_unchanged_and_exits_0(
        history: tuple[str, Path]) -> None:
    store, run = history
    result = ncuh("history", "add", run, "--commit", sha(4), "--store", store)
    assert result.exit_code == 0
    assert result.stdout.startswith(f"unchanged: run3 at {sha(4)[:10]} is already in ")
    assert open_store(store).count() == 4


def test_check_fails_on_the_newest_run_in_every_format(history: tuple[str, Path],
                                                       tmp_path: Path, golden) -> None:
    store, _ = history
    md = ncuh("history", "check", "--store", store)
    assert md.exit_code == 1, md.output
    first = md.stdout.splitlines()[0]
    assert f"history {sha(1)[:10]}..{sha(3)[:10]} vs current {sha(4)[:10]}" in first
    golden("check_regression_headline", first)
    data = json.loads(ncuh("history", "check", "--store", store, "--format", "json").stdout)
    assert data["schema"] == "ncuh.diff/1" and data["exit_code"] == 1
    (kernel,) = data["kernels"]
    assert kernel["verdict"] == "SLOWER" and kernel["current_function"] == "sgemm_smem_tiled"
    out = tmp_path / "junit.xml"
    junit = ncuh("history", "check", "--store", store, "--format", "junit", "--out", out)
    assert junit.exit_code == 1
    assert ET.parse(out).getroot().find(".//failure") is not None
    assert junit.stdout.startswith("❌ ncuh diff: REGRESSION in 1 of 1 kernel")
    other_branch = ncuh("history", "check", "--store", store, "--branch", "feature")
    assert "holds no run to check" in one_error_line(other_branch)


def test_show_writes_markdown_and_self_contained_html(history: tuple[str, Path],
                                                      tmp_path: Path) -> None:
    store, _ = history
    out = tmp_path / "pages"
    result = ncuh("history", "show", "--store", store, "--out", out)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().endswith("1 series, 4 runs, 0 steps")
    slug = "gemm-1024x1024x1024-0-NVIDIA_H100_80GB_HBM3"
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["img", "index.html", "index.md", f"{slug}.html", f"{slug}.md"])
    index = (out / "index.md").read_text(encoding="utf-8")
    assert f"| [gemm \\[1024x1024x1024\\]]({slug}.md) | NVIDIA H100 80GB HBM3 | 4 |" in index
    html = (out / f"{slug}.html").read_text(encoding="utf-8")
    assert 'src="data:image/png;base64,' in html and "http" not in html.replace(
        "http://www.w3.org", "")
    assert (out / "img" / f"{slug}.png").read_bytes().startswith(b"\x89PNG")
    chosen = ncuh("history", "show", "--store", store, "--out", tmp_path / "one", "--kernel",
                  "gemm", "--metric", "dram__bytes_read.sum", "--branch", "main")
    assert chosen.exit_code == 0 and chosen.stdout.strip().endswith("1 series, 4 runs, 0 steps")
    none = ncuh("history", "show", "--store", store, "--out", out, "--kernel", "other")
    assert "holds no run of a kernel matching '^other$'" in one_error_line(none)


def test_kernel_names_are_data_in_the_html(tmp_path: Path) -> None:
    run = write_run(tmp_path, "odd", NAIVE_PAGES, samples(0.3, 0.01, 1), variant="a<b>&c")
    store = tmp_path / "h.sqlite"
    assert ncuh("history", "add", run, "--commit", sha(1), "--store", store).exit_code == 0
    assert ncuh("history", "show", "--store", store, "--out", tmp_path / "p").exit_code == 0
    html = (tmp_path / "p" / "index.html").read_text(encoding="utf-8")
    assert "a&lt;b&gt;&amp;c" in html and "a<b>" not in html


def test_the_default_store_is_under_the_project_and_ci_variables_name_the_commit(
        tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "ncuh.toml").write_text("# a project\n", encoding="utf-8")
    run = write_run(tmp_path, "run", NAIVE_PAGES, samples(0.3, 0.01, 1))
    result = ncuh("--project", project, "history", "add", run,
                  env={"GITHUB_SHA": "abc123def4567", "GITHUB_REF_NAME": "main"})
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().endswith(f"to {project / '.ncuh' / 'history.sqlite'}")
    (stored,) = open_store(project / ".ncuh" / "history.sqlite").runs()
    assert (stored.commit, stored.branch) == ("abc123def4567", "main")
    other = tmp_path / "other.sqlite"
    by_env = ncuh("history", "add", run, "--commit", "c1", env={"NCUH_HISTORY": str(other)})
    assert by_env.exit_code == 0 and other.is_file()


def test_commit_and_branch_come_from_git_where_nothing_else_says(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (["init", "-q", "-b", "feature"], ["-c", "user.name=t", "-c", "user.email=t@t",
                                                   "commit", "-q", "--allow-empty", "-m", "x"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.strip()
    assert resolve_commit(None, None, None, repo, env={}) == (head, "feature")
    assert resolve_commit(None, None, "recorded", repo, env={}) == (head, "feature")
    assert resolve_commit(None, None, "recorded", tmp_path, env={}) == ("recorded", None)
    assert resolve_commit("given", "b", "recorded", repo, env={"GITHUB_SHA": "gh"}) == \
        ("given", "b")
    assert resolve_commit(None, None, None, repo, env={"CI_COMMIT_SHA": "gl",
                                                       "CI_COMMIT_REF_NAME": "mr"}) == ("gl", "mr")
    assert resolve_commit(None, None, None, tmp_path, env={}) == (None, None)


def test_a_run_without_a_commit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           golden) -> None:
    monkeypatch.chdir(tmp_path)  # not a git checkout
    run = write_run(tmp_path, "run", NAIVE_PAGES, None)
    line = one_error_line(ncuh("history", "add", run, "--store", tmp_path / "h.sqlite"))
    assert line.endswith(": pass --commit")
    golden("no_commit", line.replace(str(run), "RUN"))
    assert not (tmp_path / "h.sqlite").exists() or open_store(tmp_path / "h.sqlite").count() == 0


def test_bad_inputs_are_one_line_and_exit_2(tmp_path: Path, golden) -> None:
    store = tmp_path / "h.sqlite"
    missing = one_error_line(ncuh("history", "show", "--store", store, "--out", tmp_path / "o"))
    assert str(store) in missing
    golden("no_store", missing.replace(str(store), "STORE"))
    assert one_error_line(ncuh("history", "check", "--store", store)) == missing
    assert not (tmp_path / "o").exists()
    nothing = one_error_line(ncuh("history", "add", tmp_path / "nope", "--commit", "c",
                                  "--store", store))
    assert nothing.endswith("nope: no such file or directory")
    (tmp_path / "empty").mkdir()
    assert one_error_line(ncuh("history", "add", tmp_path / "empty", "--commit", "c",
                               "--store", store)).endswith(
        "empty: not a run directory (no manifest.json)")
    store.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    corrupt = one_error_line(ncuh("history", "check", "--store", store))
    assert corrupt.startswith(f"ncuh: error: history store {store}: ")
    assert one_error_line(ncuh("history", "check", "--store", "mysql://x/y")).endswith(
        "mysql is not supported (an SQLite file or postgresql://)")


def test_a_run_of_another_project_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    store = tmp_path / "h.sqlite"
    ours = write_run(tmp_path, "ours", NAIVE_PAGES, None)
    theirs = write_run(tmp_path, "theirs", NAIVE_PAGES, None, project="reduction")
    assert ncuh("history", "add", ours, "--commit", "c1", "--store", store).exit_code == 0
    line = one_error_line(ncuh("history", "add", theirs, "--commit", "c2", "--store", store))
    assert "a run of project 'reduction', but history store" in line
    assert [r.commit for r in open_store(store).runs()] == ["c1"]


def test_check_with_one_run_has_nothing_to_judge(tmp_path: Path) -> None:
    store = tmp_path / "h.sqlite"
    run = write_run(tmp_path, "run", NAIVE_PAGES, None)
    assert ncuh("history", "add", run, "--commit", "c1", "--store", store).exit_code == 0
    result = ncuh("history", "check", "--store", store)
    assert result.exit_code == 0
    assert result.stdout.startswith("ncuh history check: nothing to judge yet")


def test_check_never_writes_over_its_store(history: tuple[str, Path]) -> None:
    store, _ = history
    if store.startswith("postgresql"):
        pytest.skip("a database server's store is no file to write over")
    before = Path(store).read_bytes()
    line = one_error_line(ncuh("history", "check", "--store", store, "-o", store))
    assert "inputs are never written" in line
    assert Path(store).read_bytes() == before


def test_show_takes_ncus_kernel_syntax(history: tuple[str, Path], tmp_path: Path) -> None:
    store, _ = history
    exact = ncuh("history", "show", "--store", store, "-o", tmp_path / "exact", "-k", "gem")
    assert exact.exit_code == 2  # a plain name is that exact name: no kernel is called "gem"
    found = ncuh("history", "show", "--store", store, "-o", tmp_path / "re", "-k", "regex:^ge")
    assert found.exit_code == 0, found.output
    assert "1 series" in found.stdout
