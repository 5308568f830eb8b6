"""Which of a program's launches an NVTX push/pop range spans, on every thread of its process.

ncu's `--nvtx-include RANGE/` keeps the launches made while the launching thread is inside
RANGE: a push/pop range belongs to one thread. A training step marked on the main thread does
not hold its backward pass, which PyTorch's autograd launches from a thread of its own. So for
`--top`, a push/pop expression of the plain form `RANGE/` or `DOMAIN@RANGE/` is read by ncuh:
the first pass records every launch's NVTX stack (`ncu --nvtx`), and the ranked launches are,
per process, those from its first launch inside the range to its last, on any thread. Any other
expression (start/end ranges, which span threads already, nested paths, regular expressions)
is ncu's own filter, in both passes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

DEFAULT_DOMAIN = "<default domain>"  # as ncu's raw page names NVTX's default domain
_PLAIN = re.compile(r"^(?:(?P<domain>[^@/*\[\]]+)@)?(?P<name>[^@/*\[\]]+)/$")
_QUOTED = re.compile(r'"([^"]*)"')
# a range in ncu's raw page: domain:range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg
_TRAILING_FIELDS = 6

Range = tuple[str, str]  # (domain, name)


@dataclass(frozen=True)
class Span:
    """A push/pop range by domain and name, matched on any thread."""

    domain: str
    name: str

    def holds(self, stack: Iterable[Range]) -> bool:
        return (self.domain, self.name) in stack


def plain_span(expression: str) -> Span | None:
    """`RANGE/` or `DOMAIN@RANGE/` as a `Span`; None for every other NVTX expression."""
    if expression.startswith("regex:"):
        return None
    match = _PLAIN.match(expression)
    if match is None:
        return None
    return Span(match.group("domain") or DEFAULT_DOMAIN, match.group("name"))


def spans_of(expressions: Sequence[str]) -> tuple[Span, ...] | None:
    """The spans ncuh reads for these expressions; None where one is not plain (then ncu's
    own filter takes them all), () for none."""
    spans = tuple(plain_span(expression) for expression in expressions)
    if any(span is None for span in spans):
        return None
    return spans  # type: ignore[return-value]


def push_pop_stack(cell: str) -> tuple[Range, ...]:
    """The push/pop ranges of a launch, outermost first, from ncu's raw page cell
    (`4122  "<default domain>:step:none:none:none:none:none:none" `)."""
    stack = []
    for quoted in _QUOTED.findall(cell):
        fields = quoted.split(":")
        if len(fields) > _TRAILING_FIELDS + 1:
            stack.append((fields[0], ":".join(fields[1:-_TRAILING_FIELDS])))
        elif len(fields) >= 2:
            stack.append((fields[0], fields[1]))
    return tuple(stack)
