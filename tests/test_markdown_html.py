"""The Strategy text's Markdown on HTML pages: a few tags, never the text's own markup."""

from __future__ import annotations

from harness.pages.markdown_html import markdown_to_html
from harness.project import load_project
from harness.project.locate import default_project_path


def all_variants():
    project = load_project(default_project_path())
    return [*project.variants, project.reference]


def test_lists_paragraphs_and_inline_marks():
    html = markdown_to_html(
        "Intro with *each thread computing a `4x4` tile* of $C$.\n\n"
        "1. Load **tiles**.\n2. Compute.\n\n- one\n- two"
    )
    assert html == (
        "<p>Intro with <em>each thread computing a <code>4x4</code> tile</em> of "
        "<var>C</var>.</p>\n<ol><li>Load <strong>tiles</strong>.</li><li>Compute.</li></ol>\n"
        "<ul><li>one</li><li>two</li></ul>"
    )


def test_markup_in_the_text_stays_text():
    html = markdown_to_html("<script>alert(1)</script> `<b>` 2*3*4")
    assert "<script>" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<code>&lt;b&gt;</code>" in html
    assert "2*3*4" in html  # a lone multiplication is not emphasis


def test_every_bundled_strategy_converts():
    for variant in all_variants():
        html = markdown_to_html(variant.strategy)
        assert html.startswith(("<p>", "<ol>", "<ul>"))
        assert "**" not in html and "`" not in html
