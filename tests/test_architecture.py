"""The shape of harness/: one package per stage with a face, imports one way, short functions.

A face (a package's `__init__`, docs/architecture.md) imports its public names plainly from
their modules, under their own names, each written once (an `__all__`, where a face keeps one
for the Python API's users, lists the same names); only the names of modules
that import a heavy library (`HEAVY_LIBRARIES`), at import time and directly or through the
modules they import, or that run as programs (`python -m`, which would run a module its face
imported a second time), are listed in its one `lazy_names` call instead and come on first use.

Read with `ast` only: nothing under harness/ is imported here.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT / "harness"

# The stages in import order: a module may import its own package, anything in an earlier
# layer, and nothing later (sibling packages of one layer do not import each other).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("__init__", "errors"),
    ("util",),
    ("rundir",),  # the run-directory contract, shared by the writers and the readers
    ("project",),
    ("gpu",),
    ("profile", "dryrun"),
    ("report",),
    ("findings",),
    ("pages", "diff"),
    ("history",),  # a series' steps are explained by diff
    ("api", "commands"),
    ("cli",),
    ("entry",),
    ("__main__",),
)
TOP_LEVEL = {"__init__.py", "__main__.py", "entry.py", "cli.py", "errors.py"}
# libraries that take tens of milliseconds or more to import: a face imports a module that
# brings one only when one of its names is first used
HEAVY_LIBRARIES = {"cupy", "jinja2", "matplotlib", "ncu_report", "numpy", "pandas", "pydantic",
                   "sqlalchemy"}
MAX_FUNCTION_LINES = 80


@dataclass(frozen=True)
class Import:
    importer: str  # dotted module name
    module: str  # what it imports from (dotted)
    names: tuple[str, ...]  # the names taken from it; () for `import x`
    line: int


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources() -> dict[str, Path]:
    # a project's starter files are the user's code, copied by `ncuh init`, not ncuh's modules
    return {_module_name(path): path for path in sorted(HARNESS.rglob("*.py"))
            if "starter" not in path.parts}


def _imports(name: str, path: Path) -> list[Import]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.split(".")[0] == "harness":
            found.append(Import(name, node.module, tuple(a.name for a in node.names),
                                node.lineno))
        elif isinstance(node, ast.Import):
            found += [Import(name, alias.name, (), node.lineno) for alias in node.names
                      if alias.name.split(".")[0] == "harness"]
    return found


def _stage(module: str) -> str:
    """The package (or top-level module) a dotted harness name belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


SOURCES = _sources()


@functools.cache
def _harness_imports() -> list[Import]:
    """Every import of a harness module in harness/ (parsed when a test asks, not in every
    process that collects the suite)."""
    found = [each for name, path in SOURCES.items() for each in _imports(name, path)]
    # `import harness; harness.load(...)`: the package's own face hands out the Python API
    # lazily (inside `__getattr__`), the one import that runs from the top to a later stage.
    return [each for each in found
            if not (each.importer == "harness"
                    and (each.module == "harness.api" or each.names == ("api",)))]


PACKAGES = sorted(path.parent.name for path in HARNESS.glob("*/__init__.py"))


def _edges(imports: list[Import]) -> dict[str, set[str]]:
    """Module -> the harness modules it imports. `from package import submodule` is an edge to
    the submodule; to the package's `__init__` only when some name is not a submodule."""
    edges: dict[str, set[str]] = {name: set() for name in SOURCES}
    for found in imports:
        submodules = {f"{found.module}.{n}" for n in found.names} & SOURCES.keys()
        whole = len(submodules) < len(found.names) or not found.names
        edges[found.importer] |= submodules | ({found.module} & SOURCES.keys() if whole else set())
    return edges


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), and self-imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1 or node in edges.get(node, ()):
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return groups


def _layer(stage: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if stage in layer)


def _face_breaches(imports: list[Import]) -> list[str]:
    breaches = []
    for found in imports:
        mine, theirs = _stage(found.importer), _stage(found.module)
        if mine == theirs or theirs not in PACKAGES:
            continue
        where = f"{found.importer}:{found.line}"
        if found.module != f"harness.{theirs}" or not found.names:
            breaches.append(f"{where} reaches into {found.module}")
        else:
            breaches += [f"{where} takes {name} from harness.{theirs}, not on its face"
                         for name in found.names if name not in _face(theirs)]
    # `from harness import <package>` hands out the package itself: its face, nothing more
    return breaches


def _backward(imports: list[Import]) -> list[str]:
    wrong = []
    for found in imports:
        mine, theirs = _stage(found.importer), _stage(found.module)
        if found.module == "harness":  # a package or module of harness, or a name of its own
            theirs = next((n for n in found.names if (HARNESS / n / "__init__.py").exists()
                           or (HARNESS / f"{n}.py").exists()), "__init__")
        if mine != theirs and _layer(theirs) >= _layer(mine):
            wrong.append(f"{found.importer}:{found.line} ({mine}) imports {found.module} "
                         f"{found.names} ({theirs})")
    return wrong


def test_the_graph_finds_a_circle_and_a_wrong_way_import_it_is_shown() -> None:
    """The checks themselves, on a made-up graph: a circle, a backward edge, a reach inside."""
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(edges) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []
    backward = [Import("harness.report.x", "harness.pages", ("write",), 3)]
    assert _backward(backward) == ["harness.report.x:3 (report) imports harness.pages "
                                   "('write',) (pages)"]
    assert _backward([Import("harness.pages.x", "harness.report", ("KernelReport",), 3)]) == []
    inside = [Import("harness.pages.x", "harness.report.model", ("KernelReport",), 5),
              Import("harness.pages.x", "harness.report", ("not_a_face_name",), 6),
              Import("harness.pages.x", "harness.report", ("KernelReport",), 7)]
    assert _face_breaches(inside) == [
        "harness.pages.x:5 reaches into harness.report.model",
        "harness.pages.x:6 takes not_a_face_name from harness.report, not on its face"]


def test_no_import_circle_in_harness() -> None:
    assert _circles(_edges(_harness_imports())) == []


def test_packages_are_entered_only_through_their_face() -> None:
    assert _face_breaches(_harness_imports()) == []


def test_imports_run_one_way_along_the_stages() -> None:
    assert _backward(_harness_imports()) == []


@pytest.mark.parametrize("package", PACKAGES, ids=lambda name: f"harness.{name}")
def test_every_package_states_its_face(package: str) -> None:
    assert _face(package), f"harness/{package}/__init__.py hands out no name"
    assert any(package in layer for layer in LAYERS), f"{package} is in no layer"


def test_no_face_name_is_hidden_by_a_submodule_of_the_same_name() -> None:
    """Importing `harness.p.x` sets the attribute `x` of `harness.p` to the module, which would
    then stand in for a face name `x`."""
    clashes = [f"{package}.{name}" for package in PACKAGES for name in _face(package)
               if (HARNESS / package / f"{name}.py").exists()]
    assert clashes == []


def _all(package: str) -> set[str] | None:
    """A package's `__all__`, where its face has one, read without importing it."""
    tree = ast.parse((HARNESS / package / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return None


@dataclass(frozen=True)
class Face:
    plain: dict[str, str]  # name -> the module it is imported from
    lazy: dict[str, str]  # name -> the module it comes from on first use
    renamed: list[str]  # `x as y` imports
    stray: list[str]  # statements a face does not hold


def _face_parts(package: str) -> Face:
    tree = ast.parse((HARNESS / package / "__init__.py").read_text(encoding="utf-8"))
    plain: dict[str, str] = {}
    lazy: dict[str, str] = {}
    renamed, stray = [], []
    for node in tree.body[1:] if ast.get_docstring(tree) else tree.body:
        if isinstance(node, ast.ImportFrom) and node.module in ("__future__", "harness"):
            continue
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                f"harness.{package}."):
            renamed += [alias.name for alias in node.names if alias.asname]
            plain |= {alias.name: node.module for alias in node.names}
        elif isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__getattr__":
            homes = ast.literal_eval(node.value.args[1])
            lazy |= {name: module for module, names in homes.items() for name in names}
        elif not (isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__all__"):
            stray.append(ast.unparse(node)[:60])
    return Face(plain, lazy, renamed, stray)


def _top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The imports a module runs when it is imported (not those in functions, nor those for
    type checkers alone)."""
    found: list[ast.Import | ast.ImportFrom] = []
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
            todo += [*node.body, *node.orelse]
        elif isinstance(node, ast.Try):
            todo += [*node.body, *node.orelse, *node.finalbody,
                     *(part for handler in node.handlers for part in handler.body)]
    return found


FACES = {package: _face_parts(package) for package in PACKAGES}


def _face(package: str) -> set[str]:
    """The names a package's face hands out: those it imports and those it loads lazily."""
    return {*FACES[package].plain, *FACES[package].lazy}


def _runs_at_import(module: str) -> tuple[set[str], set[str]]:
    """The heavy libraries and the harness modules importing `module` imports itself (a face's
    name: the module it comes from)."""
    libraries, modules = set(), set()
    for node in _top_level_imports(ast.parse(SOURCES[module].read_text(encoding="utf-8"))):
        pairs = ([(alias.name, "") for alias in node.names] if isinstance(node, ast.Import)
                 else [(node.module or "", alias.name) for alias in node.names])
        for source, name in pairs:
            face = FACES.get(source.removeprefix("harness.")) if name else None
            if source.split(".")[0] in HEAVY_LIBRARIES:
                libraries.add(source.split(".")[0])
            elif face is not None:
                modules.add(face.plain.get(name) or face.lazy.get(name) or f"{source}.{name}")
            elif source.startswith("harness."):
                modules.add(f"{source}.{name}" if f"{source}.{name}" in SOURCES else source)
    return libraries, modules & SOURCES.keys()


@functools.cache
def _heavy(module: str) -> frozenset[str]:
    """The heavy libraries importing `module` brings, itself or through what it imports."""
    libraries, modules = _runs_at_import(module)
    return frozenset(libraries.union(*(_heavy(other) for other in modules - {module})))


def _program(module: str) -> bool:
    """Whether `module` runs as a program (`if __name__ == "__main__":`)."""
    return any(isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)
               for node in ast.parse(SOURCES[module].read_text(encoding="utf-8")).body)


def _lazy_by_rule(module: str) -> bool:
    return bool(_heavy(module)) or _program(module)


@pytest.mark.parametrize("package", PACKAGES, ids=lambda name: f"harness.{name}")
def test_a_face_imports_its_names_plainly_and_lazily_only_what_is_heavy(package: str) -> None:
    face = FACES[package]
    assert face.renamed == [] and face.stray == []
    # only the Python API's face lists its names in `__all__` too (for `help()`)
    assert (_all(package) is None) == (package != "api")
    assert _all(package) in (None, _face(package))
    assert {name: module for name, module in face.plain.items() if _lazy_by_rule(module)} == {}
    assert {name: module for name, module in face.lazy.items() if not _lazy_by_rule(module)} == {}


def _face_users() -> list[tuple[str, Path]]:
    """(stage, file) of each module that may take names from faces: harness's own, and the
    user's code ncuh ships (a project's starter files, the bundled projects, the examples)."""
    user_code = [*HARNESS.rglob("starter/**/*.py"), *(ROOT / "kernels").rglob("*.py"),
                 *(ROOT / "examples").rglob("*.py")]
    return ([(_stage(name), path) for name, path in SOURCES.items()]
            + [("user", path) for path in sorted(user_code)])


def _taken_from_faces() -> set[tuple[str, str]]:
    """(package, name) for each face name a module of another package takes: imported by name,
    or read as an attribute of the package it imported (`from harness import util` ...
    `util.cache_dir`)."""
    taken = set()
    for stage, path in _face_users():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        packages = {}  # the local name -> the package it stands for
        here: set[tuple[str, str]] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "harness":
                packages |= {alias.asname or alias.name: alias.name for alias in node.names
                             if alias.name in FACES}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                    and node.module.startswith("harness.") \
                    and node.module.removeprefix("harness.") in FACES:
                here |= {(node.module.removeprefix("harness."), alias.name)
                         for alias in node.names}
        here |= {(packages[node.value.id], node.attr) for node in ast.walk(tree)
                 if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                 and node.value.id in packages}
        taken |= {(package, used) for package, used in here if package != stage}
    return taken


def test_a_face_hands_out_only_what_another_package_takes() -> None:
    """A name no other package, and no user code ncuh ships, imports belongs to its module
    alone (a test imports it there); `harness.api` is the users' face."""
    taken = _taken_from_faces()
    kept = [f"harness.{package}.{name}" for package in PACKAGES if package != "api"
            for name in sorted(_face(package)) if (package, name) not in taken]
    assert kept == []


def test_only_the_python_apis_face_keeps_an_all() -> None:
    """A module's `__all__` would hand out names another module defines: a second face."""
    keeping = sorted(name for name, path in SOURCES.items()
                     if "__all__" in path.read_text(encoding="utf-8"))
    assert keeping == ["harness.api"]


def test_the_face_rule_tells_heavy_from_light() -> None:
    assert _heavy("harness.history.tables") == {"sqlalchemy"}
    assert _heavy("harness.rundir.manifest") == {"pydantic"}
    assert "pydantic" in _heavy("harness.diff.inputs")  # through harness.rundir's load_run
    assert _heavy("harness.util.atomic") == set() and _heavy("harness.report.model") == set()
    assert _program("harness.profile.worker") and not _program("harness.profile.run")


def test_only_the_entry_points_sit_at_the_top_of_harness() -> None:
    assert {path.name for path in HARNESS.glob("*.py")} == TOP_LEVEL


def test_no_function_in_harness_is_over_80_lines() -> None:
    long = []
    for name, path in SOURCES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{name}.{node.name}: {lines} lines")
    assert long == []
