"""The profile stage: ncu command lines, child processes, run directories, shards and merges.

`planning`, `plan_cache`, `ncu_command`, `section_overlay` and `ncu_errors` build and judge ncu
runs; `two_pass`, `launches`, `nvtx_spans` and `ranking` time every launch of a program, rank
its kernels and choose the launches `--top` profiles; `run`, `entry`, `processes`, `schedule`,
`head_start`, `gpus` and `past_runs` run them on one GPU or several; `phases`, `post`,
`worker`, `manifest` and `progress` time, post-process and record them; `slurm` and `merge`
spread them over a cluster and join the shards.
"""

from harness import lazy_names
from harness.profile.ncu_command import (
    CLOCK_CONTROLS,
    DEFAULT_SET,
    GRAPH_PROFILING,
    SETS,
    KernelFilter,
    NcuSettings,
)
from harness.profile.planning import ProfileRequest, plan, run_id_for
from harness.profile.progress import ProgressDisplay
from harness.profile.ranking import ranking_table
from harness.profile.run import run_profile, with_section_overlay

# names of modules that import pydantic or run as programs (python -m): imported on first use
__getattr__ = lazy_names(__name__, {
    "harness.profile.merge": ("merge_runs",),
    "harness.profile.slurm": ("submit",),
    "harness.profile.worker": ("WORKER_RESULT_PREFIX", "wait_for_go"),
})
