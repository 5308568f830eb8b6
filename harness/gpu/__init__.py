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
