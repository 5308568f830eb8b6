"""Put data into Markdown as text: nothing from a report, run or project becomes markup.

Kernel names, variant names, rule messages, statuses and names from manifests are data. In
Markdown each must stay on its line (a line break could start a heading, a list or a fence),
must not open or close emphasis, links, code spans or fences, and must not become raw HTML.
CommonMark lets any ASCII punctuation be escaped with a backslash, so `text` escapes every
character that can start markup; `code_span` and `fenced` fit data inside code, where
backslashes are literal, by keeping backtick runs out of it; `html_text` is for the few places
where data sits inside an HTML block (`<details><summary>`), where Markdown escapes do not
apply.
"""

from __future__ import annotations

import html
import re

from markupsafe import Markup

from harness.errors import printable

# Inline markup anywhere on a line: emphasis, code, links/images, raw HTML and entities,
# table cells, strikethrough, autolinks; `#` after a space could close an ATX heading
# (`!` needs a `[`, `>` a `<` or the start of a line). An underscore between
# two letters or digits cannot open or close emphasis in CommonMark, so `snake_case` names
# stay readable in the Markdown source.
_INLINE = re.compile(r"([\\`*\[\]<|~&]|(?<![^\W_])_|_(?![^\W_])|(?<!\S)#)")
# Markers that count at the start of a line or of a list item's text (a value may be placed
# there): quote, list bullets, setext underline, and "1." / "1)" followed by a space.
_LEADING_MARK = re.compile(r"^[-+=>]")
_LEADING_NUMBER = re.compile(r"^(\d{1,9})([.)])(?=\s|$)")
_LINE_BREAKS = re.compile(r"[\r\n\v\f\x85\u2028\u2029]+")
_BACKTICKS = re.compile(r"`+")
_FENCE_LINE = re.compile(r"^( {0,3})(`{3,}|~{3,})", re.MULTILINE)
_BACKTICK_FENCE_LINE = re.compile(r"^( {0,3})(`{3,})", re.MULTILINE)
# A code span as CommonMark reads one, taken only where that is sure: a whole run of backticks
# not escaped by a backslash, closed by the next run of the same length on the same line.
# Anything else (a span over lines, which a list item or a blank line may cut short) is text,
# its `<` escaped like any other: a backslash too many in rare code, never raw HTML.
_CODE_SPAN = re.compile(r"(?<![`\\])(`+)(?!`)(.+?)(?<!`)\1(?!`)")


def md_one_line(value: object) -> str:
    """`value` as one line: line breaks and other vertical space become a single space, other
    control and bidi characters escapes (`\\x1b`, `\\u202e`)."""
    return printable(_LINE_BREAKS.sub(" ", str(value)), keep_lines=True)


def md_text(value: object) -> str:
    """`value` as literal Markdown text: prose, headings, list items, table cells, and the start
    of a line."""
    escaped = _INLINE.sub(r"\\\1", md_one_line(value).strip())
    escaped = _LEADING_NUMBER.sub(r"\1\\\2", escaped)
    return "\\" + escaped if _LEADING_MARK.match(escaped) else escaped


def code_span(value: object) -> str:
    """`value` for inside a single-backtick code span: no backtick can end the span early."""
    return _BACKTICKS.sub("'", md_one_line(value))


def md_fenced(value: object) -> str:
    """Multi-line `value` for inside a ``` fence: no line of it can close the fence."""
    body = printable(str(value).replace("\r\n", "\n").replace("\r", "\n"), keep_lines=True)
    return _BACKTICK_FENCE_LINE.sub(lambda m: m.group(1) + "'" * len(m.group(2)), body)


def template_value(value: object) -> object:
    """What a page template prints of `value` (Jinja2's `finalize`): its control and bidi
    characters written as escapes, so a name with ESC or U+202E shows as what it is on any page
    (already-escaped HTML too: escapes add no markup to it)."""
    if isinstance(value, Markup):
        return Markup(printable(str(value), keep_lines=True))
    if isinstance(value, str):
        return printable(value, keep_lines=True)
    return value


def html_text(value: object) -> str:
    """`value` as text inside raw HTML (a `<details>` summary), on one line."""
    return html.escape(md_one_line(value), quote=True)


def md_prose(value: object) -> str:
    """Authored Markdown (a variant's strategy) kept as Markdown, minus what could take over the
    page: raw HTML is shown as text (every `<` outside a code span escaped) and a fence cannot
    open."""
    source = printable(value, keep_lines=True)
    parts: list[str] = []
    position = 0
    for span in _CODE_SPAN.finditer(source):
        parts.append(_no_html(source[position:span.start()]))
        parts.append(span.group(0))
        position = span.end()
    parts.append(_no_html(source[position:]))
    return _FENCE_LINE.sub(lambda m: m.group(1) + "\\" + m.group(2), "".join(parts))


def _no_html(chunk: str) -> str:
    return chunk.replace("<", "\\<")
