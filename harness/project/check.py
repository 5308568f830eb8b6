"""Each of a project's callables against the role ncuh calls it in, found with `inspect`.

ncuh calls `inputs(size, seed)`, `expected(inputs, size)`, the reference and each limit as
`call(inputs, size)`, a variant's `launch(size, params, inputs)`, its `call(inputs, size,
params)`, `defines(size, params)` and `constraints(size, params)`, and a callable
`tolerance`, `flops` or `bytes` as `(size)` (the loader tries flops and bytes; the tolerance is
tried here). A callable that cannot take those arguments, or whose own names say they are in
another order, is one problem line each.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Any

from harness.project.model import Project

# role -> the arguments ncuh passes, in order
ROLES: dict[str, tuple[str, ...]] = {
    "inputs": ("size", "seed"),
    "expected": ("inputs", "size"),
    "reference": ("inputs", "size"),
    "limit": ("inputs", "size"),
    "launch": ("size", "params", "inputs"),
    "call": ("inputs", "size", "params"),
    "defines": ("size", "params"),
    "constraints": ("size", "params"),
}


def _callables(project: Project) -> Iterator[tuple[str, str, Callable[..., Any]]]:
    """(where, role, function) for every user callable with a fixed role."""
    yield "key 'problem.inputs'", "inputs", project.inputs
    if project.expected is not None:
        yield "key 'problem.expected'", "expected", project.expected
    if project.reference is not None:
        yield "[reference]: key 'call'", "reference", project.reference.call
    for index, limit in enumerate(project.limits):
        yield f"[[limit]] #{index + 1} ({limit.name!r}): key 'call'", "limit", limit.call
    for variant in project.variants:
        where = f"[[variant]] #{variant.iteration + 1} ({variant.name!r})"
        for role in ("launch", "call", "defines", "constraints"):
            function = getattr(variant, role)
            if function is not None:
                yield f"{where}: key {role!r}", role, function


def signature_problem(where: str, role: str, function: Callable[..., Any]) -> str | None:
    """Why `function` cannot play `role`, or None when it can."""
    expected = ROLES[role]
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None  # a builtin or extension without a signature: nothing to check
    name = getattr(function, "__name__", type(function).__name__)
    bare = [str(p.replace(annotation=p.empty)) for p in signature.parameters.values()]
    written = f"{name}({', '.join(bare)})"
    wanted = f"{role}({', '.join(expected)})"
    try:
        signature.bind(*expected)
    except TypeError as error:
        return (f"{where}: {written} cannot be called as {wanted} ({error}); "
                f"write def {name}({', '.join(expected)})")
    positional = [p.name for p in signature.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][:len(expected)]
    if sorted(positional) == sorted(expected) and positional != list(expected):
        return (f"{where}: {written} takes its arguments in another order than ncuh passes "
                f"them: {wanted}")
    return None


def signature_problems(project: Project) -> list[str]:
    """One line per callable that does not fit its role, naming the file and key."""
    problems = []
    for where, role, function in _callables(project):
        problem = signature_problem(where, role, function)
        if problem:
            problems.append(f"{project.path}: {problem}")
    # A callable tolerance is wrapped by the loader (which tries flops and bytes, not it):
    # call it at each size a run would.
    for size in dict.fromkeys((*project.default_sizes, project.profile_size)):
        try:
            value = project.tolerance_at(size)
        except Exception as error:
            problems.append(f"{project.path}: key 'problem.tolerance': tolerance({size}) "
                            f"raised {type(error).__name__}: {error}")
            break
        if not value >= 0:
            problems.append(f"{project.path}: key 'problem.tolerance': tolerance({size}) "
                            f"returned {value!r}; expected a number >= 0 (0: exact)")
            break
    return problems
