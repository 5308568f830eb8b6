"""The profile stage: ncu command lines, child processes, run directories, shards and merges.

`planning`, `plan_cache`, `ncu_command`, `section_overlay`, `slim_sections` and `ncu_errors`
build and judge ncu runs; `two_pass`, `launches`, `nvtx_spans` and `ranking` time every launch
of a program, rank its kernels and choose the launches `--top` profiles; `run`, `entry`,
`processes`, `schedule`, `head_start`, `gpus` and `past_runs` run them on one GPU or several;
`phases`, `post`, `worker`, `manifest` and `progress` time, post-process and record them;
`slurm` and `merge` spread them over a cluster and join the shards. Nothing is imported here:
the runner under ncu imports `ncu_command` and `ncu_errors` and must not load the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness import lazy_face

if TYPE_CHECKING:
    from harness.profile.merge import merge_runs
    from harness.profile.ncu_command import (
        CLOCK_CONTROLS,
        DEFAULT_SET,
        GRAPH_PROFILING,
        SETS,
        KernelFilter,
        NcuSettings,
    )
    from harness.profile.planning import Plan, ProfileRequest, Target, plan, run_id_for
    from harness.profile.progress import ProgressDisplay
    from harness.profile.ranking import ranking_table
    from harness.profile.run import run_profile, with_section_overlay
    from harness.profile.slim_sections import (
        OPTIONAL_RULE_INPUTS_LEFT_OUT,
        RULE_METRICS,
        RULES_LEFT_OUT,
        SLIMMED_SECTIONS,
        THINNED_METRICS,
        WIDGET_METRICS_READ,
        added_metrics,
        is_slim,
    )
    from harness.profile.slurm import submit
    from harness.profile.worker import RESULT_PREFIX as WORKER_RESULT_PREFIX
    from harness.profile.worker import wait_for_go

# public name -> (module, attribute), imported on first use so that importing the package does
# no work; not cached here, so a test that replaces the attribute in its module is seen.
_HOMES: dict[str, tuple[str, str]] = {
    "CLOCK_CONTROLS": ("harness.profile.ncu_command", "CLOCK_CONTROLS"),
    "DEFAULT_SET": ("harness.profile.ncu_command", "DEFAULT_SET"),
    "GRAPH_PROFILING": ("harness.profile.ncu_command", "GRAPH_PROFILING"),
    "KernelFilter": ("harness.profile.ncu_command", "KernelFilter"),
    "NcuSettings": ("harness.profile.ncu_command", "NcuSettings"),
    "OPTIONAL_RULE_INPUTS_LEFT_OUT": (
        "harness.profile.slim_sections", "OPTIONAL_RULE_INPUTS_LEFT_OUT"),
    "Plan": ("harness.profile.planning", "Plan"),
    "ProfileRequest": ("harness.profile.planning", "ProfileRequest"),
    "ProgressDisplay": ("harness.profile.progress", "ProgressDisplay"),
    "RULES_LEFT_OUT": ("harness.profile.slim_sections", "RULES_LEFT_OUT"),
    "RULE_METRICS": ("harness.profile.slim_sections", "RULE_METRICS"),
    "SETS": ("harness.profile.ncu_command", "SETS"),
    "SLIMMED_SECTIONS": ("harness.profile.slim_sections", "SLIMMED_SECTIONS"),
    "THINNED_METRICS": ("harness.profile.slim_sections", "THINNED_METRICS"),
    "Target": ("harness.profile.planning", "Target"),
    "WIDGET_METRICS_READ": ("harness.profile.slim_sections", "WIDGET_METRICS_READ"),
    "WORKER_RESULT_PREFIX": ("harness.profile.worker", "RESULT_PREFIX"),
    "added_metrics": ("harness.profile.slim_sections", "added_metrics"),
    "is_slim": ("harness.profile.slim_sections", "is_slim"),
    "merge_runs": ("harness.profile.merge", "merge_runs"),
    "plan": ("harness.profile.planning", "plan"),
    "ranking_table": ("harness.profile.ranking", "ranking_table"),
    "run_id_for": ("harness.profile.planning", "run_id_for"),
    "run_profile": ("harness.profile.run", "run_profile"),
    "submit": ("harness.profile.slurm", "submit"),
    "wait_for_go": ("harness.profile.worker", "wait_for_go"),
    "with_section_overlay": ("harness.profile.run", "with_section_overlay"),
}

__all__ = [
    "CLOCK_CONTROLS",
    "DEFAULT_SET",
    "GRAPH_PROFILING",
    "OPTIONAL_RULE_INPUTS_LEFT_OUT",
    "RULES_LEFT_OUT",
    "RULE_METRICS",
    "SETS",
    "SLIMMED_SECTIONS",
    "THINNED_METRICS",
    "WIDGET_METRICS_READ",
    "WORKER_RESULT_PREFIX",
    "KernelFilter",
    "NcuSettings",
    "Plan",
    "ProfileRequest",
    "ProgressDisplay",
    "Target",
    "added_metrics",
    "is_slim",
    "merge_runs",
    "plan",
    "ranking_table",
    "run_id_for",
    "run_profile",
    "submit",
    "wait_for_go",
    "with_section_overlay",
]

__getattr__, __dir__ = lazy_face(__name__, _HOMES)
