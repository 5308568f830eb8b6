"""What the history commands show of stored names is text, wherever it is shown.

Kernel and GPU names, commits, branches and tags come from run manifests and the command line:
data. The trend pages are written twice, once with plain names and once with hostile ones
(terminal escapes, bidi overrides, newlines that start headings, raw HTML, table pipes,
matplotlib mathtext), and CommonMark (markdown-it-py) must find the same structure in both;
no control or bidi character reaches a page or the terminal raw, and `check`'s JSON and JUnit
always parse, whatever the GPU name is.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest
from history_support import (  # noqa: F401  (the pg_server and store_url fixtures)
    H100_ENV,
    NAIVE_PAGES,
    ncuh,
    pg_server_fixture,
    recorded,
    samples,
    store_url_fixture,
    with_samples,
    write_run,
)
from markdown_support import md, raw_html_from_data, structure

from harness.history import open_store
from harness.history.record import RunRecord

# raw, these came from data: ESC, BEL, CR, DEL, C1 controls, bidi overrides and isolates
RAW = re.compile("[\x00-\x08\x0b\x0c\x0d\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
NAME = "k\x1b[31m\u202e<script>alert(1)</script>\n# injected $\\x$ | cell ```"
GPU = "GPU\x1b]0;title\x07\u2066\n## H2 <b>bold</b> |x| $\\alpha$"
COMMIT = "c\x1b[2J\u202e<i>\n# h $\\y$|"  # 17 characters: a step's range holds two


def _record(name: str, gpu: str, median_ms: float, seed: int) -> RunRecord:
    record = with_samples(recorded("base"), samples(median_ms, 0.01, seed))
    kernels = tuple(replace(k, name=name) for k in record.kernels)
    return replace(record, gpu=gpu, kernels=kernels)


def _pages(store_url: str, out: Path, name: str, gpu: str, commit: str) -> dict[str, str]:
    """Four runs with a 10% step after the second, written up; the pages by their role."""
    store = open_store(store_url, create=True)
    for n, median in enumerate((0.30, 0.30, 0.33, 0.33)):
        store.add(_record(name, gpu, median, seed=n), f"{commit}{n}", branch=f"{commit}b",
                  tag=f"{commit}t")
    store.close()
    result = ncuh("history", "show", "--store", store_url, "--out", out)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().endswith("1 series, 4 runs, 1 step")
    assert not RAW.search(result.output)
    series = next(p.stem for p in out.glob("*.md") if p.name != "index.md")
    return {role: (out / f"{stem}.{kind}").read_text(encoding="utf-8")
            for role, stem, kind in (("index.md", "index", "md"), ("series.md", series, "md"),
                                     ("index.html", "index", "html"),
                                     ("series.html", series, "html"))}


def test_hostile_names_and_commits_keep_the_pages_structure(store_url: str,
                                                            tmp_path: Path) -> None:
    plain = _pages(str(tmp_path / "plain.sqlite"), tmp_path / "plain", "kernel", "GPU", "c")
    hostile = _pages(store_url, tmp_path / "hostile", NAME, GPU, COMMIT)
    for role in ("index.md", "series.md"):
        assert raw_html_from_data(hostile[role]) == []
        assert structure(hostile[role]) == structure(plain[role])  # no heading, cell or list
        assert "<script>" not in md.render(hostile[role])
    for role, text in hostile.items():
        assert not RAW.search(text), role
        # in Markdown every `<` of the data is escaped; in HTML it is an entity
        tag = r"(?<!\\)<(script|b>|i>)" if role.endswith(".md") else r"<(script|b>|i>)"
        assert not re.search(tag, text), role
    # each shown as what it is: the escapes, and HTML's entities
    assert r"k\\x1b\[31m\\u202e\<script>alert(1)\</script> \# injected $\\x$ \| cell" \
        in hostile["index.md"]
    assert r"**c\\x1b\[2J\\u202e\<i> ..c\\x1b\[2J\\u202e\<i>**" in hostile["series.md"]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in hostile["index.html"]
    assert r"GPU\x1b]0;title\x07\u2066" in hostile["series.html"]
    assert (tmp_path / "hostile" / "img").is_dir()  # the plots drew the names as plain text


def test_the_terminal_lines_of_add_show_no_raw_control_character(tmp_path: Path) -> None:
    run = write_run(tmp_path, "run", NAIVE_PAGES, None,
                    environment={**H100_ENV, "gpu": GPU})
    store = tmp_path / "h.sqlite"
    result = ncuh("history", "add", run, "--commit", COMMIT, "--branch", COMMIT,
                  "--tag", COMMIT, "--store", store)
    assert result.exit_code == 0, result.output
    assert not RAW.search(result.output)
    assert result.stdout.startswith("added run at c\\x1b[2J\\u202e<i>\\n (1 kernel) to ")
    nothing = ncuh("history", "check", "--store", store)
    assert nothing.exit_code == 0 and not RAW.search(nothing.output)
    assert nothing.stdout.startswith(
        "ncuh history check: nothing to judge yet: no earlier run on GPU\\x1b]0;title\\x07")


@pytest.mark.parametrize("gpu", [123, "GPU\nwith a newline", "\x1b[31m\u202eGPU", "1.5e3"])
def test_checks_json_and_junit_always_parse(gpu: object, tmp_path: Path) -> None:
    store = tmp_path / "h.sqlite"
    other = write_run(tmp_path, "other", NAIVE_PAGES, samples(0.3, 0.01, 1),
                      environment={**H100_ENV, "gpu": "another GPU"})
    assert ncuh("history", "add", other, "--commit", "c0", "--store", store).exit_code == 0
    for n in (1, 2):
        run = write_run(tmp_path, f"run{n}", NAIVE_PAGES, samples(0.3, 0.01, n + 1),
                        environment={**H100_ENV, "gpu": gpu})
        added = ncuh("history", "add", run, "--commit", f"c{n}", "--store", store)
        assert added.exit_code == 0, added.output
        # n == 1: nothing to judge yet (no earlier run on that GPU); n == 2: judged
        data = json.loads(ncuh("history", "check", "--store", store, "--format", "json").stdout)
        assert data["schema"] == "ncuh.diff/1" and data["exit_code"] == 0
        assert data["current"]["environment"]["gpu"] == str(gpu)
        assert (data["summary"]["kernels"], data["summary"]["added"]) == \
            ((0, 1) if n == 1 else (1, 0))
        junit = ncuh("history", "check", "--store", store, "--format", "junit")
        assert junit.exit_code == 0 and not RAW.search(junit.output)
        root = ET.fromstring(junit.stdout.encode())
        assert root.tag == "testsuites" and int(root.get("tests", "0")) == 1
    markdown = ncuh("history", "check", "--store", store)
    assert markdown.exit_code == 0 and not RAW.search(markdown.output)
