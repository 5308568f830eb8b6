"""The run directory contract: its file names and schemas, the pydantic reader of
manifest.json and bench.json (with a program's ranking, `ranking`), the validation helper
behind their one-line errors, and what the `pages` set's reports hold (`slim_sections`).
"""

from harness import lazy_names
from harness.rundir.kernel_names import shape_text, short_name
from harness.rundir.names import (
    BENCH,
    BENCH_SCHEMA,
    MANIFEST,
    METRICS,
    RUN_SCHEMA,
    is_run_directory,
)
from harness.rundir.slim_sections import (
    OPTIONAL_RULE_INPUTS_LEFT_OUT,
    RULE_METRICS,
    RULES_LEFT_OUT,
    SLIMMED_SECTIONS,
    THINNED_METRICS,
    WIDGET_METRICS_READ,
    added_metrics,
    is_slim,
)

# names of modules that import pydantic: imported on first use
__getattr__ = lazy_names(__name__, {
    "harness.rundir.manifest": (
        "BenchFile", "BenchRecord", "ProjectRecord", "Run", "RunEntry", "load_bench", "load_run",
        "run_inputs",
    ),
    "harness.rundir.ranking": (
        "ProcessRecord", "RankedKernelRecord", "RankingRecord", "kernel_key", "profiled_as_ranked",
        "program_key",
    ),
    "harness.rundir.schema": ("validate",),
})
