"""Projects: a user's chain of kernel variants, declared in `ncuh.toml`, loaded and checked.

    from harness.project import Launch, Size, open_project
    project = open_project()            # --project / $NCUH_PROJECT / cwd upwards / bundled
    variant = project.variant("naive")

The public names a project's own Python module may use are `Launch` and `Size`.
"""

from __future__ import annotations

from harness.project.loader import (
    PROJECT_ENV,
    PROJECT_FILE,
    bundled_dir,
    default_project_path,
    find_project,
    load_project,
    open_project,
)
from harness.project.model import Launch, Limit, Project, Reference, Variant
from harness.project.size import Size, parse_size, parse_sizes, parse_value

__all__ = [
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
    "load_project",
    "open_project",
    "parse_size",
    "parse_sizes",
    "parse_value",
]
