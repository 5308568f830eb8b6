"""Projects: a user's chain of kernel variants, declared in `ncuh.toml`, loaded and checked.

    from harness.project import Launch, Size, open_project
    project = open_project()            # --project / $NCUH_PROJECT / cwd upwards / bundled
    variant = project.variant("naive")

The public names a project's own Python module may use are `Launch` and `Size`.

`load_project` and `open_project` come on first use: the loader brings pydantic and the project
schema, which `ncuh profile` pays only after ncu has started when it has a plan for the project
file already (`harness.profile.plan_cache`).
"""

from harness import lazy_names
from harness.project.check import signature_problem, signature_problems
from harness.project.locate import OUTSIDE_ENV, bundled_dir, find_project, inside_project
from harness.project.model import Launch, Limit, Project, Reference, Variant, variants_named
from harness.project.size import Size, size_text

# names of modules that import pydantic: imported on first use
__getattr__ = lazy_names(__name__, {
    "harness.project.loader": ("load_project", "open_project"),
})
