"""The run side, one module per step, importing one way (each only from those above it):

    protocol   what the runner and `ncuh profile` agree on (NVTX range, failure line, exit 3)
    env        the one GPU check (`require_gpu`), the machine's description, clocks
    timing     CUDA-event timing: warm-up, L2 flush, samples, median and spread
    backend    make a variant runnable: NVRTC compile, or a Python launcher (no tuning here)
    nvrtc      compile a variant with NVRTC on the host alone (`ncuh check`: no GPU, no CuPy)
    source_check  a source's kernels and the parameters each uses, before compiling
    verify     one checked launch against the project's truth (NaN poison, tolerance)
    tuning     which parameters a variant runs with: shipped winners, user cache, nearest
    bench      verify then time variants, the reference and the limits; bench_table prints it
    sweep      `bench --tune`: search a tunable space, cache the winner
    runner     `python -m harness.gpu.runner`: the program ncu profiles
Importing this package does no work; CuPy loads only when a GPU is asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness import lazy_face

if TYPE_CHECKING:
    from harness.gpu.backend import program_text
    from harness.gpu.bench import BenchRun, run_bench
    from harness.gpu.bench_table import format_table
    from harness.gpu.env import (
        CommandRunner,
        collect_environment,
        parse_ncu_version,
        require_gpu,
        run_command,
    )
    from harness.gpu.protocol import (
        GATES_OWNER_ENV,
        LAUNCH_AFTER_ENV,
        RANGE_PREFIX,
        RESULT_PREFIX,
        RUNNER_NO_GPU_EXIT,
        RUNNER_PREFIX,
        START_CUDA_AFTER_ENV,
        runner_range,
    )
    from harness.gpu.source_check import Kernel, Parameter, kernels, source_words
    from harness.gpu.sweep import autotune, enumerate_configs, filter_configs, sample_configs
    from harness.gpu.verify import verify_variant

# public name -> (module, attribute), imported on first use so that importing the package does
# no work; not cached here, so a test that replaces the attribute in its module is seen.
_HOMES: dict[str, tuple[str, str]] = {
    "nvrtc_install_hint": ("harness.gpu.nvrtc", "nvrtc_install_hint"),
    "cupy_install_hint": ("harness.gpu.env", "cupy_install_hint"),
    "no_cupy_reason": ("harness.gpu.env", "no_cupy_reason"),
    "parameter_problems": ("harness.gpu.source_check", "parameter_problems"),
    "kernel_problems": ("harness.gpu.source_check", "kernel_problems"),
    "kernels": ("harness.gpu.source_check", "kernels"),
    "source_words": ("harness.gpu.source_check", "source_words"),
    "Parameter": ("harness.gpu.source_check", "Parameter"),
    "Kernel": ("harness.gpu.source_check", "Kernel"),
    "program_text": ("harness.gpu.backend", "program_text"),
    "find_nvrtc": ("harness.gpu.nvrtc", "find_nvrtc"),
    "compile_problems": ("harness.gpu.nvrtc", "compile_problems"),
    "compile_variants": ("harness.gpu.nvrtc", "compile_variants"),
    "DEFAULT_ARCH": ("harness.gpu.nvrtc", "DEFAULT_ARCH"),
    "gpu_unavailable_reason": ("harness.gpu.env", "gpu_unavailable_reason"),
    "BenchRun": ("harness.gpu.bench", "BenchRun"),
    "CommandRunner": ("harness.gpu.env", "CommandRunner"),
    "GATES_OWNER_ENV": ("harness.gpu.protocol", "GATES_OWNER_ENV"),
    "LAUNCH_AFTER_ENV": ("harness.gpu.protocol", "LAUNCH_AFTER_ENV"),
    "RANGE_PREFIX": ("harness.gpu.protocol", "RANGE_PREFIX"),
    "RESULT_PREFIX": ("harness.gpu.protocol", "RESULT_PREFIX"),
    "RUNNER_NO_GPU_EXIT": ("harness.gpu.protocol", "RUNNER_NO_GPU_EXIT"),
    "RUNNER_PREFIX": ("harness.gpu.protocol", "RUNNER_PREFIX"),
    "START_CUDA_AFTER_ENV": ("harness.gpu.protocol", "START_CUDA_AFTER_ENV"),
    "autotune": ("harness.gpu.sweep", "autotune"),
    "collect_environment": ("harness.gpu.env", "collect_environment"),
    "enumerate_configs": ("harness.gpu.sweep", "enumerate_configs"),
    "filter_configs": ("harness.gpu.sweep", "filter_configs"),
    "format_table": ("harness.gpu.bench_table", "format_table"),
    "parse_ncu_version": ("harness.gpu.env", "parse_ncu_version"),
    "require_gpu": ("harness.gpu.env", "require_gpu"),
    "run_bench": ("harness.gpu.bench", "run_bench"),
    "run_command": ("harness.gpu.env", "run_command"),
    "runner_range": ("harness.gpu.protocol", "runner_range"),
    "sample_configs": ("harness.gpu.sweep", "sample_configs"),
    "verify_variant": ("harness.gpu.verify", "verify_variant"),
}

__all__ = [
    "DEFAULT_ARCH",
    "GATES_OWNER_ENV",
    "LAUNCH_AFTER_ENV",
    "RANGE_PREFIX",
    "RESULT_PREFIX",
    "RUNNER_NO_GPU_EXIT",
    "RUNNER_PREFIX",
    "START_CUDA_AFTER_ENV",
    "BenchRun",
    "CommandRunner",
    "Kernel",
    "Parameter",
    "autotune",
    "collect_environment",
    "compile_problems",
    "compile_variants",
    "cupy_install_hint",
    "enumerate_configs",
    "filter_configs",
    "find_nvrtc",
    "format_table",
    "gpu_unavailable_reason",
    "kernel_problems",
    "kernels",
    "no_cupy_reason",
    "nvrtc_install_hint",
    "parameter_problems",
    "parse_ncu_version",
    "program_text",
    "require_gpu",
    "run_bench",
    "run_command",
    "runner_range",
    "sample_configs",
    "source_words",
    "verify_variant",
]

__getattr__, __dir__ = lazy_face(__name__, _HOMES)
