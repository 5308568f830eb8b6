"""Markdown read back as CommonMark (markdown-it-py) by the escaping tests: the page's token
structure, the raw HTML in it, and names that try to break out of their place."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

HOSTILE = [
    "<script>alert(1)</script>",
    "```\n<img src=x onerror=alert(1)>\n```",
    "~~~\nfence",
    "`code` ``two`` *em* _u_ **b** ~~s~~ [l](javascript:alert(1)) ![i](x.png) <http://x.y>",
    "# heading\n- item\n1. one\n> quote\n---\n| a | b |\n|---|---|",
    "<!-- c --> &lt;b&gt; &#60;i&#62; \\ trailing #",
    "- starts a list",
    "1. starts a list",
    "> starts a quote",
    "\r```\r<b>cr</b>",
    "    indented code\n\n\n<div>block</div>",
    "|cell|breaks|",
]
md = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")


def structure(markdown: str) -> list[tuple[str, ...]]:
    """Block tokens and the kinds of their inline children (adjacent text runs merged)."""
    shape = []
    for token in md.parse(markdown):
        children: list[str] = []
        for child in token.children or []:
            kind = "text" if child.type in ("text", "text_special") else child.type
            if not (children and children[-1] == kind == "text"):
                children.append(kind)
        shape.append((token.type, token.tag, token.markup if token.type == "fence" else "",
                      *children))
    return shape


def raw_html_from_data(markdown: str) -> list[str]:
    found = []
    for token in md.parse(markdown):
        pieces = [token, *(token.children or [])]
        for piece in pieces:
            # ncuh's own tags (<details>, <summary>, <b>) are fine; a tag from the data is not
            if piece.type in ("html_block", "html_inline") and re.search(
                    r"<(script|img|div|i>|!--|b>cr)", piece.content):
                found.append(piece.content)
    return found


def assert_same_structure(plain_md: str, hostile_md: str) -> None:
    assert raw_html_from_data(hostile_md) == []
    assert structure(hostile_md) == structure(plain_md)
    rendered = md.render(hostile_md)
    assert "<script>" not in rendered and "<img" not in rendered and "<div>" not in rendered
