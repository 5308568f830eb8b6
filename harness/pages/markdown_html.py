"""A small, safe Markdown-to-HTML step for the variants' Strategy text on HTML pages.

The strategy texts (a project's ncuh.toml or its .md notes) use paragraphs, numbered and
bulleted lists, `code`, **bold**, *italic* and $math$. The text is HTML-escaped first and only
then given those few tags, so nothing in it can become markup of its own.
"""

from __future__ import annotations

import re

from markupsafe import Markup, escape

from harness.errors import printable

_LIST_ITEM = re.compile(r"^\s*(?:(\d+)[.)]|[-*])\s+(.*)$")
_INLINE = (
    (re.compile(r"`([^`]+)`"), r"<code>\1</code>"),
    (re.compile(r"\*\*(.+?)\*\*"), r"<strong>\1</strong>"),
    (re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])"), r"<em>\1</em>"),
    (re.compile(r"\$([^$]+)\$"), r"<var>\1</var>"),
)


def _inline(text: str) -> str:
    html = str(escape(text))
    # code spans become placeholders first, so * and $ inside code stay literal while
    # emphasis may still span across a code span
    codes: list[str] = []

    def stash(match: re.Match[str]) -> str:
        codes.append(f"<code>{match.group(1)}</code>")
        return f"\x00{len(codes) - 1}\x00"

    html = _INLINE[0][0].sub(stash, html)
    for pattern, replacement in _INLINE[1:]:
        html = pattern.sub(replacement, html)
    return re.sub("\x00(\\d+)\x00", lambda m: codes[int(m.group(1))], html)


def markdown_to_html(text: str) -> Markup:
    """Paragraphs and lists of `text` as HTML; everything else stays escaped text."""
    blocks: list[str] = []
    for block in re.split(r"\n\s*\n", printable(text, keep_lines=True).strip()):
        lines = [line for line in block.splitlines() if line.strip()]
        items = [_LIST_ITEM.match(line) for line in lines]
        if lines and all(items):
            tag = "ol" if items[0] and items[0].group(1) else "ul"
            body = "".join(f"<li>{_inline(m.group(2))}</li>" for m in items if m)
            blocks.append(f"<{tag}>{body}</{tag}>")
        else:
            blocks.append(f"<p>{_inline(' '.join(line.strip() for line in lines))}</p>")
    return Markup("\n".join(blocks))
