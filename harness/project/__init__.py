"""Projects: a user's chain of kernel variants, declared in `ncuh.toml`, loaded and checked.

    from harness.project import Launch, Size, open_project
    project = open_project()            # --project / $NCUH_PROJECT / cwd upwards / bundled
    variant = project.variant("naive")

The public names a project's own Python module may use are `Launch` and `Size`.

The names are loaded on first use: the loader brings pydantic and the project schema (about a
third of a second), which `ncuh profile` pays only after ncu has started when it has a plan for
the project file already (`harness.profile.plan_cache`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness import lazy_face

if TYPE_CHECKING:
    from harness.project.check import signature_problem, signature_problems
    from harness.project.loader import load_project, open_project
    from harness.project.locate import (
        OUTSIDE_ENV,
        PROJECT_ENV,
        PROJECT_FILE,
        bundled_dir,
        default_project_path,
        find_project,
        inside_project,
    )
    from harness.project.model import Launch, Limit, Project, Reference, Variant, variants_named
    from harness.project.size import Size, parse_size, parse_sizes, parse_value, size_text

# public name -> the module that defines it
_HOMES: dict[str, str] = {
    "OUTSIDE_ENV": "harness.project.locate",
    "PROJECT_ENV": "harness.project.locate",
    "PROJECT_FILE": "harness.project.locate",
    "bundled_dir": "harness.project.locate",
    "default_project_path": "harness.project.locate",
    "find_project": "harness.project.locate",
    "inside_project": "harness.project.locate",
    "load_project": "harness.project.loader",
    "signature_problem": "harness.project.check",
    "signature_problems": "harness.project.check",
    "open_project": "harness.project.loader",
    "Launch": "harness.project.model",
    "Limit": "harness.project.model",
    "Project": "harness.project.model",
    "Reference": "harness.project.model",
    "Variant": "harness.project.model",
    "variants_named": "harness.project.model",
    "Size": "harness.project.size",
    "parse_size": "harness.project.size",
    "parse_sizes": "harness.project.size",
    "parse_value": "harness.project.size",
    "size_text": "harness.project.size",
}

__all__ = [
    "OUTSIDE_ENV",
    "PROJECT_ENV",
    "PROJECT_FILE",
    "Launch",
    "Limit",
    "Project",
    "Reference",
    "Size",
    "Variant",
    "bundled_dir",
    "default_project_path",
    "find_project",
    "inside_project",
    "load_project",
    "open_project",
    "parse_size",
    "parse_sizes",
    "parse_value",
    "signature_problem",
    "signature_problems",
    "size_text",
    "variants_named",
]

__getattr__, __dir__ = lazy_face(__name__, _HOMES)
