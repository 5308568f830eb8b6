"""Data in ncuh's Markdown is text: a CommonMark parser (markdown-it-py) finds the same page
structure whatever the names are, and no raw HTML that came from data.

Each page is rendered twice from a real report's model: once with every string from data
(kernel, variant, device, rule and finding text, SASS, statuses, sources, environment)
replaced by a plain word, once by a hostile one that tries to close code fences and spans,
open raw HTML, links, lists, headings, quotes and tables. The token structure must be equal.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from markdown_support import HOSTILE, assert_same_structure, md, raw_html_from_data
from packed_fixtures import NAIVE_SMEM_REPORT

from harness.diff.compare import diff_runs
from harness.diff.inputs import Environment, KernelData, KernelKey, Side
from harness.diff.markdown import render_markdown
from harness.pages.render import render_index, render_page
from harness.pages.writeup import collect
from harness.report.model import KernelReport
from harness.report.report_view import render_markdown as render_report_markdown
from harness.report.report_view import report_views
from harness.report.roofline import Roofline
from harness.util import markdown_text

# fields that the templates use as logic or file names, not as text
SKIP = {"slug", "previous_slug", "time_source", "kind", "rule", "size", "section",
        "index_size", "strategy", "type", "speedup_type", "work_source",
        "measure", "op", "key", "unit"}

class Rewriter:
    """Replaces each distinct data string by `make(n)`, the same string by the same one (so
    comparisons such as heading == kernel name hold either way)."""

    def __init__(self, make: Any) -> None:
        self.make, self.seen = make, {}

    def text(self, value: str) -> str:
        if value not in self.seen:
            self.seen[value] = self.make(len(self.seen))
        return self.seen[value]

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, KernelReport | Roofline):
            return value  # numbers only in the templates
        if isinstance(value, list | tuple):
            return type(value)(self(v) for v in value)
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items()}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            changes = {f.name: self(getattr(value, f.name)) for f in dataclasses.fields(value)
                       if f.name not in SKIP and f.init}
            return dataclasses.replace(value, **changes)
        return value


def plain(n: int) -> str:
    return f"plain{n}"


def hostile(n: int) -> str:
    return f"{HOSTILE[n % len(HOSTILE)]} {n}"


@pytest.fixture(scope="module")
def writeup():
    return collect([NAIVE_SMEM_REPORT])


def test_writeup_pages_keep_their_structure_with_hostile_names(writeup) -> None:
    benign, evil = Rewriter(plain)(writeup), Rewriter(hostile)(writeup)
    for page_plain, page_evil in zip(benign.pages, evil.pages, strict=True):
        assert_same_structure(render_page(page_plain, benign, "md"),
                              render_page(page_evil, evil, "md"))
    assert_same_structure(render_index(benign, [], "md"), render_index(evil, [], "md"))


def test_hostile_strategy_keeps_markdown_but_no_raw_html_or_fence(writeup) -> None:
    page = dataclasses.replace(writeup.pages[0], strategy="Tile the loads.\n\n"
                               "1. `a<b>` stays code\n2. <script>x</script> <img src=y>\n"
                               "```\nunclosed fence swallowing the page")
    rendered = render_page(page, writeup, "md")
    assert raw_html_from_data(rendered) == []
    baseline = render_page(dataclasses.replace(page, strategy="Tile the loads."), writeup, "md")
    # the strategy adds its list and paragraphs, but not a fence that eats the rest
    fences = [t for t in md.parse(rendered) if t.type == "fence"]
    assert len(fences) == len([t for t in md.parse(baseline) if t.type == "fence"])
    assert "<code>a&lt;b&gt;</code>" in md.render(rendered)


@pytest.mark.parametrize("strategy", [
    "\\`<script>alert(1)</script>\\`",  # an escaped backtick opens no code span
    "`a\n\n<script>x</script>\n\n`",  # nor does a pair across a blank line
    "``<b>x</b>`",  # nor a run of two closed by one
    "- `a\n- <script>x</script>`",  # nor a pair across two list items
])
def test_a_strategy_cannot_pass_raw_html_off_as_a_code_span(writeup, strategy: str) -> None:
    page = dataclasses.replace(writeup.pages[0], strategy=strategy)
    rendered = render_page(page, writeup, "md")
    html = [piece.content for token in md.parse(rendered)
            for piece in (token, *(token.children or ()))
            if piece.type in ("html_block", "html_inline")]
    assert not [tag for tag in html if "script" in tag or "<b>x" in tag], html
    assert "<script>" not in md.render(rendered)


def _side(name: str, path: str, kernels: list[KernelData]) -> Side:
    return Side(path=__import__("pathlib").Path(path), kind="report",
                environment=Environment(gpu=name), kernels=tuple(kernels))


def _diff_markdown(make: Any) -> str:
    kernels_base, kernels_cur = [], []
    for i in range(3):
        key = KernelKey(make(i), (64, 64, 64))
        metrics = {"gpu__time_duration.sum": 1e6, "smsp__inst_executed.sum": 1e6}
        slower = {"gpu__time_duration.sum": 2e6, "smsp__inst_executed.sum": 4e6}
        kernels_base.append(KernelData(key, make(i), make(10 + i), metrics=metrics))
        kernels_cur.append(KernelData(key, make(i), make(20 + i),
                                      metrics=slower if i else metrics))
    kernels_cur.append(KernelData(KernelKey(make(30)), make(30), make(31),
                                  metrics={"gpu__time_duration.sum": 1.0}))
    result = diff_runs(_side(make(40), "base", kernels_base), _side(make(40), "cur", kernels_cur))
    return render_markdown(result)


def test_diff_markdown_keeps_its_structure_with_hostile_names() -> None:
    assert_same_structure(_diff_markdown(plain), _diff_markdown(hostile))


def test_report_markdown_keeps_its_structure_with_hostile_names() -> None:
    views = report_views(NAIVE_SMEM_REPORT)
    assert_same_structure(render_report_markdown(Rewriter(plain)(views)),
                          render_report_markdown(Rewriter(hostile)(views)))


@pytest.mark.parametrize("value", HOSTILE)
def test_text_renders_back_to_the_same_characters(value: str) -> None:
    """Escaped, the value reads as itself (line breaks as spaces) in one paragraph."""
    tokens = md.parse(f"x {markdown_text.md_text(value)}")
    assert [t.type for t in tokens] == ["paragraph_open", "inline", "paragraph_close"]
    shown = "".join(c.content for c in tokens[1].children or [])
    assert shown == "x " + markdown_text.md_one_line(value).strip()


@pytest.mark.parametrize("value", HOSTILE)
def test_code_span_and_fence_cannot_be_closed_by_data(value: str) -> None:
    span = md.parse(f"a `{markdown_text.code_span(value)}` b")
    assert [c.type for c in span[1].children or []] == ["text", "code_inline", "text"]
    fence = md.parse(f"```\n{markdown_text.md_fenced(value)}\n```\nafter")
    assert [t.type for t in fence] == ["fence", "paragraph_open", "inline", "paragraph_close"]


def test_junit_with_control_and_bidi_characters_in_names_stays_well_formed() -> None:
    import xml.etree.ElementTree as ET

    from harness.diff.junit import render_junit

    def make(n: int) -> str:
        return f"k\x00\x01\x1b[31m\u202e<x>&{n}"

    base = _side("gpu", "base", [KernelData(KernelKey(make(1)), make(1), "r", metrics={
        "gpu__time_duration.sum": 1e6})])
    cur = _side("gpu", "cur", [KernelData(KernelKey(make(1)), make(1), "r", metrics={
        "gpu__time_duration.sum": 3e6})])
    root = ET.fromstring(render_junit(diff_runs(base, cur)))
    (case,) = root.iter("testcase")
    assert case.get("name") == "k\\x00\\x01\\x1b[31m\\u202e<x>&1"  # each shown as itself
