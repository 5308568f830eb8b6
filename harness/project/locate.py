"""Which project file a command works on: found before anything is read or checked.

First match wins: `--project PATH` (a file or its folder), `$NCUH_PROJECT`, an `ncuh.toml` (or a
`pyproject.toml` with `[tool.ncuh]`) in the current directory or any parent, and finally the
bundled default project. Kept apart from `harness.project.loader` (and its pydantic schema) so
that `ncuh profile` can find the file, and start ncu on a plan it made for that file before,
without paying for the schema first (`harness.profile.plan_cache`).
"""

from __future__ import annotations

import os
import re
import tomllib
from importlib import resources
from pathlib import Path

from harness.errors import ProjectError, os_error_text
from harness.util import file_kind

PROJECT_FILE = "ncuh.toml"
PYPROJECT = "pyproject.toml"
PROJECT_ENV = "NCUH_PROJECT"
OUTSIDE_ENV = "NCUH_ALLOW_OUTSIDE_PATHS"  # "1": source/strategy/#include may leave the folder
DEFAULT_PROJECT = "sgemm"  # the bundled project used when no other is found


def bundled_dir() -> Path:
    """The bundled projects: `kernels/` in a checkout, the `harness.kernels` package installed."""
    checkout = Path(__file__).resolve().parents[2] / "kernels"
    if (checkout / DEFAULT_PROJECT / PROJECT_FILE).is_file():
        return checkout
    return Path(str(resources.files("harness.kernels")))


def default_project_path() -> Path:
    return bundled_dir() / DEFAULT_PROJECT / PROJECT_FILE


_TOOL_TABLE = re.compile(r"^\s*\[\[?\s*tool\.ncuh\b", re.MULTILINE)


def _has_tool_table(path: Path) -> bool:
    """Whether a pyproject.toml holds the project; one that means to but does not parse is
    taken too, so that its syntax error is reported instead of a silent fallback."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    try:
        return "ncuh" in tomllib.loads(text).get("tool", {})
    except (tomllib.TOMLDecodeError, RecursionError):
        return _TOOL_TABLE.search(text) is not None


def _file_in(folder: Path) -> Path | None:
    if (folder / PROJECT_FILE).is_file():
        return folder / PROJECT_FILE
    if (folder / PYPROJECT).is_file() and _has_tool_table(folder / PYPROJECT):
        return folder / PYPROJECT
    return None


def _kind(path: Path) -> str:
    try:
        return file_kind(path.stat().st_mode)
    except OSError as error:
        return f"cannot be read ({os_error_text(error)})"


def allows_outside_paths() -> bool:
    """Whether the user lets a project file name files outside its folder."""
    return os.environ.get(OUTSIDE_ENV, "") not in ("", "0")


def inside_project(folder: Path, relative: str) -> Path | None:
    """`folder / relative`, or None when it leads outside `folder` (by `..`, an absolute path
    or a symbolic link) and the user has not set $NCUH_ALLOW_OUTSIDE_PATHS=1: a project's
    `source`, `strategy` and `#include` files are its own, and pages publish them."""
    path = folder / relative
    if allows_outside_paths():
        return path
    try:
        inside = path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):  # a link loop, a name too long
        return None
    return path if inside else None


def find_project(explicit: Path | str | None = None, cwd: Path | None = None) -> Path:
    """The project file to use (see the module docstring for the order)."""
    named = explicit if explicit is not None else os.environ.get(PROJECT_ENV) or None
    if named is not None:
        path = Path(named).expanduser()
        origin = "--project" if explicit is not None else f"${PROJECT_ENV}"
        if path.is_dir():
            found = _file_in(path)
            if found is None:
                raise ProjectError(
                    f"{path}: no {PROJECT_FILE} (or {PYPROJECT} with [tool.ncuh]) in this "
                    f"folder ({origin})"
                )
            return found.resolve()
        if not path.exists():
            raise ProjectError(f"{path}: no such project file or folder ({origin})")
        if not path.is_file():  # a FIFO or a device would never finish reading
            raise ProjectError(f"{path}: {_kind(path)}, not a project file ({origin})")
        return path.resolve()
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        found = _file_in(folder)
        if found is not None:
            return found
    return default_project_path()
