"""The run directory contract: its file names and schemas, the pydantic reader of
manifest.json and bench.json (with a program's ranking), and the validation helper behind
their one-line errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness import lazy_face

if TYPE_CHECKING:
    from harness.rundir.kernel_names import shape_text, short_name
    from harness.rundir.manifest import (
        BenchFile,
        BenchRecord,
        Manifest,
        ManifestEntry,
        Run,
        RunEntry,
        load_bench,
        load_run,
        run_inputs,
        source_reports,
    )
    from harness.rundir.names import (
        BENCH,
        BENCH_SCHEMA,
        MANIFEST,
        METRICS,
        RUN_SCHEMA,
        RUN_SCHEMAS,
        is_run_directory,
    )
    from harness.rundir.ranking import (
        PROGRAM_TIME,
        ProcessRecord,
        RankedKernelRecord,
        RankedRef,
        RankingRecord,
        kernel_key,
        profiled_as_ranked,
        program_key,
    )
    from harness.rundir.schema import describe, validate

# public name -> (module, attribute), imported on first use so that importing the package does
# no work; not cached here, so a test that replaces the attribute in its module is seen.
_HOMES: dict[str, tuple[str, str]] = {
    "ProjectRecord": ("harness.rundir.manifest", "ProjectRecord"),
    "run_inputs": ("harness.rundir.manifest", "run_inputs"),
    "source_reports": ("harness.rundir.manifest", "source_reports"),
    "BENCH": ("harness.rundir.names", "BENCH"),
    "BENCH_SCHEMA": ("harness.rundir.names", "BENCH_SCHEMA"),
    "BenchFile": ("harness.rundir.manifest", "BenchFile"),
    "BenchRecord": ("harness.rundir.manifest", "BenchRecord"),
    "MANIFEST": ("harness.rundir.names", "MANIFEST"),
    "METRICS": ("harness.rundir.names", "METRICS"),
    "Manifest": ("harness.rundir.manifest", "Manifest"),
    "ManifestEntry": ("harness.rundir.manifest", "ManifestEntry"),
    "RUN_SCHEMA": ("harness.rundir.names", "RUN_SCHEMA"),
    "RUN_SCHEMAS": ("harness.rundir.names", "RUN_SCHEMAS"),
    "PROGRAM_TIME": ("harness.rundir.ranking", "PROGRAM_TIME"),
    "ProcessRecord": ("harness.rundir.ranking", "ProcessRecord"),
    "RankedKernelRecord": ("harness.rundir.ranking", "RankedKernelRecord"),
    "RankedRef": ("harness.rundir.ranking", "RankedRef"),
    "RankingRecord": ("harness.rundir.ranking", "RankingRecord"),
    "kernel_key": ("harness.rundir.ranking", "kernel_key"),
    "program_key": ("harness.rundir.ranking", "program_key"),
    "profiled_as_ranked": ("harness.rundir.ranking", "profiled_as_ranked"),
    "shape_text": ("harness.rundir.kernel_names", "shape_text"),
    "short_name": ("harness.rundir.kernel_names", "short_name"),
    "Run": ("harness.rundir.manifest", "Run"),
    "RunEntry": ("harness.rundir.manifest", "RunEntry"),
    "describe": ("harness.rundir.schema", "describe"),
    "is_run_directory": ("harness.rundir.names", "is_run_directory"),
    "load_bench": ("harness.rundir.manifest", "load_bench"),
    "load_run": ("harness.rundir.manifest", "load_run"),
    "validate": ("harness.rundir.schema", "validate"),
}

__all__ = [
    "BENCH",
    "BENCH_SCHEMA",
    "MANIFEST",
    "METRICS",
    "PROGRAM_TIME",
    "RUN_SCHEMA",
    "RUN_SCHEMAS",
    "BenchFile",
    "BenchRecord",
    "Manifest",
    "ManifestEntry",
    "ProcessRecord",
    "ProjectRecord",
    "RankedKernelRecord",
    "RankedRef",
    "RankingRecord",
    "Run",
    "RunEntry",
    "describe",
    "is_run_directory",
    "kernel_key",
    "load_bench",
    "load_run",
    "profiled_as_ranked",
    "program_key",
    "run_inputs",
    "shape_text",
    "short_name",
    "source_reports",
    "validate",
]

__getattr__, __dir__ = lazy_face(__name__, _HOMES)
