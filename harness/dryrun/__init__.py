"""The dry run of `ncuh check`: the project's Python run on the CPU, with stand-ins for the GPU.

    from harness.dryrun import dry_run
    found = dry_run(project, "sm_90")       # DryRun: problems, warnings, notes, one line each

`inputs`, `expected`, the reference, the limits and each variant's `launch` or `call` run with
NumPy arrays for CuPy's and a recording stand-in for every kernel launch (`cupy_standin`); GPU
libraries it has no stand-in for stop only what reaches them (`blocked`); each launch is held
against the target GPU's limits (`targets`) and its kernel's parameters (`launches`); the
whole run happens in a child process (`run`), one size after another (`trial`).
"""

from harness import lazy_names

# names of modules that import numpy: imported on first use
__getattr__ = lazy_names(__name__, {
    "harness.dryrun.run": ("dry_run",),
})
