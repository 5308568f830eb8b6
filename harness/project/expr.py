"""Work-model expressions such as `2*M*N*K` or `4*(M*K + K*N + 2*M*N)`, evaluated safely.

Only integer literals, the project's dimension names and + - * / // ** and parentheses are
allowed; the expression is parsed with `ast` and checked node by node when the project is
loaded, so a typo is refused before any GPU work and nothing is ever `eval`-ed.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping, Sequence

_BINARY: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
}


# A work model is a short formula; the parser and `evaluate` recurse once per level of the
# tree (`n+n+...+n` is as deep as it is long), so longer or deeper text is refused first.
MAX_EXPRESSION_CHARS = 1000
MAX_EXPRESSION_DEPTH = 100


def _depth(tree: ast.AST) -> int:
    """How many values deep `tree` nests (`-n` is 2, `n+n+n` is 3), counted without recursion."""
    deepest, stack = 0, [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        depth += isinstance(node, ast.expr)
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in ast.iter_child_nodes(node))
    return deepest


def compile_expression(text: str, names: Sequence[str]) -> ast.expr:
    """The checked tree of `text`; ValueError saying what is not allowed."""
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ValueError(f"an expression of {len(text)} characters (at most "
                         f"{MAX_EXPRESSION_CHARS})")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, RecursionError, MemoryError) as error:
        reason = error.msg if isinstance(error, SyntaxError) else "nested too deeply"
        raise ValueError(f"{text[:60]!r} is not an expression ({reason})") from None
    if _depth(tree) > MAX_EXPRESSION_DEPTH:
        raise ValueError(f"{text[:60]!r} nests deeper than {MAX_EXPRESSION_DEPTH} levels")
    for node in ast.walk(tree):
        if isinstance(node, (ast.Expression, ast.operator, ast.unaryop, ast.expr_context)):
            continue
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            continue
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
            continue
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id not in names:
                raise ValueError(
                    f"{text!r} names {node.id!r}, which is not a dimension "
                    f"({', '.join(names)})"
                )
            continue
        raise ValueError(
            f"{text!r}: only numbers, dimension names, + - * / // ** and parentheses are allowed"
        )
    return tree.body


# A power whose result would need more bits than this is refused before it is computed:
# Python's integers never overflow, so `n**n**n` would otherwise run for ever.
MAX_POWER_BITS = 4096


def _power(base: float, exponent: float) -> float:
    whole = isinstance(base, int) and isinstance(exponent, int)
    if whole and abs(base) > 1 and exponent > 0 \
            and exponent * math.log2(abs(base)) > MAX_POWER_BITS:
        raise OverflowError(f"{base}**{exponent} is too large (over 2^{MAX_POWER_BITS})")
    return operator.pow(base, exponent)


def evaluate(tree: ast.expr, values: Mapping[str, int]) -> float:
    """The value of a checked tree for one size (ZeroDivisionError, OverflowError on bad math)."""
    if isinstance(tree, ast.Constant):
        return tree.value
    if isinstance(tree, ast.Name):
        return values[tree.id]
    if isinstance(tree, ast.UnaryOp):
        operand = evaluate(tree.operand, values)
        return -operand if isinstance(tree.op, ast.USub) else operand
    if isinstance(tree, ast.BinOp):
        left, right = evaluate(tree.left, values), evaluate(tree.right, values)
        if isinstance(tree.op, ast.Pow):
            return _power(left, right)
        return _BINARY[type(tree.op)](left, right)
    raise ValueError(f"unexpected node {type(tree).__name__}")  # compile_expression refused it
