"""ncuh from Python: `load` a report, a run or bench results; `bench` and `profile` a project.

    import harness
    result = harness.load("runs/20261127-0100-all")
    result.to_dataframe()      # every metric, tidy, with units (what `ncuh export` writes)
    result.findings()          # what the pages say, one row per finding
    result.kernels             # the typed profiles
    result.page("pages/")      # the iteration pages

pandas, ncu_report and CuPy load when first used. The pytest plugin (`ncuh_bench`) is
`harness.api.pytest_plugin`.
"""

from harness.api.result import Result, load
from harness.api.runs import bench, profile

__all__ = [
    "Result", "bench", "load", "profile",
]
