"""Find a project file, read it, and check everything in it before any GPU work.

Where the project comes from, first match wins: `--project PATH` (a file or its folder),
`$NCUH_PROJECT`, an `ncuh.toml` (or a `pyproject.toml` with `[tool.ncuh]`) in the current
directory or any parent, and finally the bundled default project.

Every problem of a file is found before it is refused, one line each naming the file, the key
and what was expected; one `ProjectError` (exit 2) carries them all (`ncuh check` prints each):
TOML syntax, empty or binary files, unknown keys and wrong types (the pydantic schema), user
modules that are missing or fail to import, callables that do not exist, expressions that are
not arithmetic on the dims, a `previous` that names no variant, cycles, duplicate names,
defaults the variant's `constraints` refuse, a FIFO or a device, more than `MAX_VARIANTS`
variants, and files outside the project folder (unless $NCUH_ALLOW_OUTSIDE_PATHS=1).
"""

from __future__ import annotations

import importlib
import math
import re
import stat
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from harness.errors import BadSizeError, ProjectError, one_line
from harness.project.expr import compile_expression, evaluate
from harness.project.locate import OUTSIDE_ENV, PYPROJECT, find_project, inside_project
from harness.project.model import (
    Limit,
    Project,
    Reference,
    Variant,
    as_written,
    constraint_problems,
)
from harness.project.schema import ProjectFile, VariantTable, describe_errors
from harness.project.size import Size, parse_size
from harness.util import file_kind, load_toml

T = TypeVar("T")

# ---------------------------------------------------------------------------------- reading


def _read_table(path: Path) -> dict[str, Any]:
    try:
        mode = path.stat().st_mode
        if stat.S_ISDIR(mode):
            raise ProjectError(f"{path}: a folder, not a project file")
        if not stat.S_ISREG(mode):  # a FIFO or a device would never finish reading
            raise ProjectError(f"{path}: {file_kind(mode)}, not a project file")
        raw = path.read_bytes()
    except OSError as error:
        raise ProjectError(f"{path}: cannot be read ({error.strerror or error})") from None
    if not raw.strip():
        raise ProjectError(f"{path}: empty file; expected a TOML project file with [project], "
                           "[problem] and [[variant]] tables")
    if b"\x00" in raw:
        raise ProjectError(f"{path}: a binary file, not a TOML project file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ProjectError(f"{path}: not UTF-8 text, not a TOML project file") from None
    data = load_toml(text, str(path), ProjectError)
    if path.name == PYPROJECT:
        table = data.get("tool", {}).get("ncuh")
        if not isinstance(table, dict):
            raise ProjectError(f"{path}: no [tool.ncuh] table")
        return table
    return data


class _Unresolved(Exception):
    """A callable of a module that failed to import: that failure is named once already."""


class _Problems:
    """The problems of one project file, gathered so that every one is named at once."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, error: ProjectError) -> None:
        self.lines += [line for line in error.problems if line not in self.lines]

    def attempt(self, function: Callable[..., T], *args: Any) -> T | None:
        """`function(*args)`, or None with its problem noted."""
        try:
            return function(*args)
        except _Unresolved:
            return None
        except ProjectError as error:
            self.add(error)
            return None


def _callable_finder(path: Path, folder: Path, default_module: str | None) -> Callable:
    modules: dict[str, Any] = {}
    failed: set[str] = set()

    def module(name: str, where: str) -> Any:
        if name in failed:
            raise _Unresolved(name)
        if name not in modules:
            # The project's own module is blamed on [project] module, not on whichever
            # callable happened to be resolved first.
            if name == default_module:
                where = "[project] module"
            try:
                modules[name] = _import(name, folder, f"{path}: {where}")
            except ProjectError:
                failed.add(name)
                raise
        return modules[name]

    def find(spec: str, where: str) -> Callable[..., Any]:
        if ":" in spec:
            module_name, attribute = spec.split(":", 1)
        elif default_module:
            module_name, attribute = default_module, spec
        else:
            raise ProjectError(
                f"{path}: {where}: {spec!r} names no module; write 'module:{spec}' or set "
                "[project] module"
            )
        found = getattr(module(module_name, where), attribute, None)
        if not callable(found):
            raise ProjectError(
                f"{path}: {where}: module {module_name!r} has no callable {attribute!r}"
            )
        return found

    return find


def _import(name: str, folder: Path, where: str) -> Any:
    """Import the user's module from the project folder (first on sys.path)."""
    text = str(folder)
    if text in sys.path:
        sys.path.remove(text)
    sys.path.insert(0, text)
    loaded = sys.modules.get(name)
    if loaded is not None:
        origin = getattr(loaded, "__file__", None)
        if origin and Path(origin).resolve().parent == folder:
            return loaded
        # Another project's module of the same name: this project's file must win.
        for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
            del sys.modules[key]
    importlib.invalidate_caches()
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name == name.split(".")[0] or error.name == name:
            raise ProjectError(
                f"{where}: module {name!r} not found in {folder} ({error})"
            ) from None
        failure = error
    except KeyboardInterrupt:
        raise
    except BaseException as error:
        failure = error
    raise ProjectError(f"{where}: module {name!r} failed to import: {one_line(failure, folder)}")


# ---------------------------------------------------------------------------------- checking


def _work_model(path: Path, folder: Path, where: str, spec: str | None, dims: Sequence[str],
                find: Callable, sizes: Sequence[Size]) -> Callable[[Size], float] | None:
    """FLOPs or bytes per size, from an expression or a callable, tried at `sizes` now.

    `where` is "key 'problem.flops'" or "[[limit]] #1 ('copy'): key 'bytes'". Trying it at
    every default size and the profile size here means `n/0` or a callable that raises is a
    bad project file, found before any GPU work rather than after the timing.
    """
    if spec is None:
        return None
    if re.fullmatch(r"([A-Za-z_][\w.]*:)?[A-Za-z_]\w*", spec.strip()) and spec.strip() not in dims:
        function = find(spec.strip(), where)

        def model(size: Size) -> float:
            return float(function(size))
    else:
        try:
            tree = compile_expression(spec, dims)
        except ValueError as error:
            raise ProjectError(f"{path}: {where}: {error}") from None

        def model(size: Size) -> float:
            return float(evaluate(tree, size.as_dict()))
    for size in sizes:
        try:
            value = model(size)
        except Exception as error:
            raise ProjectError(f"{path}: {where}: at size {size}: "
                               f"{one_line(error, folder)}") from None
        if not (math.isfinite(value) and value >= 0):
            raise ProjectError(f"{path}: {where}: at size {size}: expected a finite number "
                               f">= 0, got {value!r}")
    return model


def _size(path: Path, key: str, text: str, dims: Sequence[str]) -> Size:
    try:
        return parse_size(text, dims)
    except BadSizeError as error:
        raise ProjectError(f"{path}: key {key!r}: {error}") from None


_OUTSIDE = (f"leads outside the project folder (set {OUTSIDE_ENV}=1 to allow files "
            "outside it)")


def _strategy(path: Path, folder: Path, where: str, text: str) -> str:
    stripped = text.strip()
    if re.fullmatch(r"[\w./-]+\.md", stripped):
        file = inside_project(folder, stripped)
        if file is None:
            raise ProjectError(f"{path}: {where}: key 'strategy': {stripped!r} {_OUTSIDE}")
        if not file.is_file():
            raise ProjectError(f"{path}: {where}: key 'strategy': file {stripped!r} not found "
                               f"in {folder} (a relative .md path, or inline Markdown)")
        try:
            return file.read_text(encoding="utf-8").strip()
        except UnicodeDecodeError:
            raise ProjectError(f"{path}: {where}: key 'strategy': file {stripped!r} is not "
                               "UTF-8 text (expected a Markdown file)") from None
        except OSError as error:
            raise ProjectError(f"{path}: {where}: key 'strategy': file {stripped!r} cannot be "
                               f"read ({error.strerror or error})") from None
    return stripped


def _previous_links(path: Path, tables: Sequence[VariantTable]) -> list[str | None]:
    names = [table.name for table in tables]
    seen: set[str] = set()
    for index, name in enumerate(names):
        if name in seen:
            raise ProjectError(f"{path}: [[variant]] #{index + 1}: key 'name': duplicate name "
                               f"{name!r} (each variant needs its own name)")
        seen.add(name)
    links: list[str | None] = []
    for index, table in enumerate(tables):
        if table.previous is None:
            links.append(names[index - 1] if index > 0 else None)
        elif table.previous == "":
            links.append(None)
        elif table.previous not in seen:
            raise ProjectError(
                f"{path}: [[variant]] #{index + 1} ({table.name!r}): key 'previous': "
                f"{table.previous!r} is not a variant (expected one of: {', '.join(names)}, "
                "or \"\" for none)"
            )
        elif table.previous == table.name:
            raise ProjectError(f"{path}: [[variant]] #{index + 1} ({table.name!r}): key "
                               "'previous': a variant cannot be its own previous")
        else:
            links.append(table.previous)
    by_name = dict(zip(names, links, strict=True))
    ends: set[str] = set()  # variants known to lead to a chain's start: each is walked once
    for start in names:
        walked: dict[str, None] = {}  # ordered, with a set's lookup
        current: str | None = start
        while current is not None and current not in ends:
            if current in walked:
                trail = list(walked)
                cycle = " -> ".join([*trail[trail.index(current):], current])
                index = names.index(start)
                raise ProjectError(f"{path}: [[variant]] #{index + 1} ({start!r}): key "
                                   f"'previous': a cycle ({cycle}); the chain must end")
            walked[current] = None
            current = by_name[current]
        ends.update(walked)
    return links


def _variants(path: Path, folder: Path, tables: Sequence[VariantTable], find: Callable,
              profile_size: Size | None, problems: _Problems) -> tuple[Variant, ...]:
    links = problems.attempt(_previous_links, path, tables) or [None] * len(tables)
    variants = []
    for index, table in enumerate(tables):
        where = f"[[variant]] #{index + 1} ({table.name!r})"
        if table.source is not None and inside_project(folder, table.source) is None:
            problems.add(ProjectError(f"{path}: {where}: key 'source': {table.source!r} "
                                      f"{_OUTSIDE}"))
        elif table.source is not None and not (folder / table.source).is_file():
            problems.add(ProjectError(f"{path}: {where}: key 'source': file {table.source!r} "
                                      f"not found in {folder}"))

        def get(key: str, table: VariantTable = table, where: str = where) -> Any:
            spec = getattr(table, key)
            return None if spec is None else problems.attempt(find, spec, f"{where}: key {key!r}")

        variant = Variant(
            name=table.name,
            iteration=index,
            title=table.title or table.name.replace("_", " ").capitalize(),
            previous=links[index],
            strategy=problems.attempt(_strategy, path, folder, where, table.strategy) or "",
            params=dict(table.params),
            tunable={key: list(values) for key, values in table.tunable.items()},
            source=table.source,
            kernel=table.kernel,
            launch=get("launch"),
            defines=get("defines"),
            call=get("call"),
            capture=table.capture,
            arch=table.arch,
            constraints=get("constraints"),
        )
        problems.attempt(_defaults_fit, path, folder, where, variant, profile_size)
        variants.append(variant)
    return tuple(variants)


def _defaults_fit(path: Path, folder: Path, where: str, variant: Variant,
                  profile_size: Size | None) -> None:
    """The variant's own `constraints` accept its default parameters, alone and at the
    profile size."""
    found = constraint_problems(path, folder, variant, None, variant.params)
    if not found and profile_size is not None:
        found = constraint_problems(path, folder, variant, profile_size, variant.params)
    if found:
        raise ProjectError(f"{path}: {where}: key 'params': invalid defaults: "
                           f"{'; '.join(found)}")


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9_]+", "_", name.lower()).strip("_") or "reference"


def load_project(path: Path | str) -> Project:
    """Read and check the project file at `path` (an ncuh.toml or a pyproject.toml, or the
    folder that holds one)."""
    path = Path(path)
    path = (find_project(path) if path.is_dir() else path).resolve()
    try:
        return _load(path)
    except ProjectError as error:
        raise ProjectError.of([as_written(path, line) for line in error.problems]) from None


# A chain is read by people, page by page; far beyond this a project file is a mistake (or
# made to stall every command that loads it).
MAX_VARIANTS = 1000


def _spec(path: Path) -> tuple[ProjectFile, dict[str, Any]]:
    """The project file read and validated against the schema (one line per mistake)."""
    data = _read_table(path)
    tables = data.get("variant")
    if isinstance(tables, list) and len(tables) > MAX_VARIANTS:
        raise ProjectError(f"{path}: {len(tables)} [[variant]] tables (at most {MAX_VARIANTS})")
    try:
        return ProjectFile.model_validate(data), data
    except ValidationError as error:
        raise ProjectError.of([f"{path}: {line}" for line in describe_errors(error, data)]) \
            from None


def _tolerance(path: Path, value: float | str, find: Any) -> Callable[[Size], float]:
    """The problem's tolerance at a size: a number, or the user's function checked finite."""
    if not isinstance(value, str):
        fixed = float(value)
        return lambda size: fixed
    function = find(value, "key 'problem.tolerance'")

    def tolerance(size: Size) -> float:
        result = float(function(size))
        if not (math.isfinite(result) and result >= 0):  # inf would pass every result
            raise ProjectError(f"{path}: key 'problem.tolerance': {value} gave {result!r} at "
                               f"size {size}; expected a finite number >= 0 (0: exact)")
        return result

    return tolerance


def _sizes(path: Path, problem: Any, dims: tuple[str, ...],
           problems: _Problems) -> tuple[tuple[Size, ...], Size | None]:
    """The default sizes (those that parse) and the profile size (None where it cannot be
    known)."""
    parsed = (problems.attempt(_size, path, "problem.default_sizes", text, dims)
              for text in problem.default_sizes)
    default_sizes = tuple(dict.fromkeys(size for size in parsed if size is not None))
    if problem.profile_size:
        return default_sizes, problems.attempt(_size, path, "problem.profile_size",
                                               problem.profile_size, dims)
    return default_sizes, default_sizes[-1] if default_sizes else None


def _load(path: Path) -> Project:
    folder = path.parent
    spec, _ = _spec(path)
    problems = _Problems()
    problem = spec.problem
    dims = tuple(problem.dims)
    if len(set(dims)) != len(dims):
        problems.add(ProjectError(f"{path}: key 'problem.dims': duplicate dimension names "
                                  f"{list(dims)}"))
    default_sizes, profile_size = _sizes(path, problem, dims, problems)
    # where flops and bytes are tried
    tried = tuple(dict.fromkeys((*default_sizes, *([profile_size] if profile_size else []))))
    extra = [name for name in problem.poison or [] if name not in problem.outputs]
    if extra:
        problems.add(ProjectError(f"{path}: key 'problem.poison': {extra[0]!r} is not in "
                                  f"problem.outputs ({', '.join(problem.outputs)})"))
    find = _callable_finder(path, folder, spec.project.module)
    tolerance = problems.attempt(_tolerance, path, problem.tolerance, find)
    reference = None
    if spec.reference is not None:
        call = problems.attempt(find, spec.reference.call, "[reference]: key 'call'")
        reference = Reference(name=spec.reference.name, key=_key(spec.reference.name),
                              call=call, strategy=spec.reference.strategy.strip())  # type: ignore[arg-type]
    limits = tuple(
        Limit(name=table.name, key=_key(table.name),
              call=problems.attempt(find, table.call, f"[[limit]] #{i + 1}: key 'call'"),  # type: ignore[arg-type]
              bytes=problems.attempt(  # type: ignore[arg-type]
                  _work_model, path, folder, f"[[limit]] #{i + 1} ({table.name!r}): key 'bytes'",
                  table.bytes, dims, find, tried))
        for i, table in enumerate(spec.limit)
    )
    variants = _variants(path, folder, spec.variant, find, profile_size, problems)
    taken = {v.name for v in variants}
    for other in ([reference] if reference else []) + list(limits):
        if other.key in taken:
            problems.add(ProjectError(f"{path}: {other.name!r} ({other.key}) has the name of a "
                                      "variant or another reference; give it its own name"))
        taken.add(other.key)
    inputs = problems.attempt(find, problem.inputs, "key 'problem.inputs'")
    expected = problems.attempt(find, problem.expected, "key 'problem.expected'")
    flops = problems.attempt(_work_model, path, folder, "key 'problem.flops'", problem.flops,
                             dims, find, tried)
    work_bytes = problems.attempt(_work_model, path, folder, "key 'problem.bytes'",
                                  problem.bytes, dims, find, tried)
    if problems.lines:
        raise ProjectError.of(problems.lines)
    return Project(
        name=spec.project.name,
        description=spec.project.description,
        path=path,
        folder=folder,
        dims=dims,
        default_sizes=default_sizes,
        profile_size=profile_size,  # type: ignore[arg-type]
        inputs=inputs,  # type: ignore[arg-type]
        outputs=tuple(problem.outputs),
        poison=tuple(problem.outputs if problem.poison is None else problem.poison),
        expected=expected,
        tolerance=tolerance,  # type: ignore[arg-type]
        compare=problem.compare,
        rtol=float(problem.rtol),
        atol=float(problem.atol),
        flops=flops,
        bytes=work_bytes,
        summary_min_size=problem.summary_min_size,
        reference=reference,
        limits=limits,
        variants=variants,
    )


_CACHE: dict[tuple[Path, int], Project] = {}


def open_project(explicit: Path | str | None = None) -> Project:
    """The project a command works on (found as `find_project` says), loaded once per process."""
    path = find_project(explicit)
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        stamp = 0
    key = (path, stamp)
    if key not in _CACHE:
        _CACHE[key] = load_project(path)
    return _CACHE[key]
