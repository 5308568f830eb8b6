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
CuPy loads only when a GPU is asked for.
"""

from harness import lazy_names
from harness.gpu.backend import program_text
from harness.gpu.env import (
    CommandRunner,
    collect_environment,
    gpu_unavailable_reason,
    no_cupy_reason,
    parse_ncu_version,
    require_gpu,
    run_command,
)
from harness.gpu.nvrtc import DEFAULT_ARCH, compile_variants, find_nvrtc, nvrtc_install_hint
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
from harness.gpu.source_check import (
    Kernel,
    Parameter,
    kernel_problems,
    kernels,
    parameter_problems,
    source_words,
)
from harness.gpu.verify import verify_variant

# names of modules that import pydantic: imported on first use
__getattr__ = lazy_names(__name__, {
    "harness.gpu.bench": ("run_bench",),
    "harness.gpu.bench_table": ("format_table",),
    "harness.gpu.sweep": ("autotune", "enumerate_configs", "filter_configs", "sample_configs"),
})
