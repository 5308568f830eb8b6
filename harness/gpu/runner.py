"""The program ncu runs: prepare, verify, warm up, then launch one variant once.

    python -m harness.gpu.runner --project DIR --variant NAME --size S [--params JSON]
                                 [--warmup N] [--label LABEL] [--capture nvtx|kernel]

With `--capture nvtx` (the default) the one launch is inside the NVTX range `ncuh-<label>` that
ncu captures alone; with `--capture kernel` the kernel is launched exactly `warmup` times before
the target and verified afterwards. A tunable variant without `--params` runs with its tuning
winner. Failures are one line on stderr starting with `ncuh-runner: `: exit 2 for a bad request,
3 when there is no GPU, 1 for a compile error or a wrong result.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from harness.errors import NcuhError, NoGpuError, first_error_line
from harness.gpu.backend import prepare
from harness.gpu.env import (
    cuda_fields,
    current_compute_capability,
    current_gpu_name,
    require_gpu,
)
from harness.gpu.gates import wait_to_launch, wait_to_start_cuda
from harness.gpu.protocol import RESULT_PREFIX, RUNNER_NO_GPU_EXIT, RUNNER_PREFIX, runner_range
from harness.gpu.tuning import resolve_params
from harness.gpu.verify import verify
from harness.project import Project, Size, open_project
from harness.util import load_json

SEED = 20261121
NO_NVTX_HELP = (
    "NVTX capture was asked for, but this CuPy has no NVTX support (cupy.cuda.nvtx is "
    "unavailable): pass --capture kernel to ncuh profile"
)


@dataclass(frozen=True)
class RunnerResult:
    variant: str
    size: list[int]
    kernel_name: str | None
    params: dict[str, int]
    capture: str
    warmup: int
    rel_error: float | None
    # CuPy's view of the device and CUDA (harness.gpu.env.cuda_fields): CUDA is up here anyway,
    # so ncuh need not start it again after ncu just to write these into the manifest.
    environment: dict[str, Any]
    defines: dict[str, int] | None = None
    tuning: str | None = None


class RunnerFailure(Exception):
    """A variant that compiled wrong or computed a wrong result: exit status 1."""


def nvtx_available() -> bool:
    """Whether CuPy can push NVTX ranges (it is built with NVTX on every supported platform)."""
    try:
        from cupy.cuda import nvtx
    except ImportError:
        return False
    return bool(getattr(nvtx, "available", True))


def _verify(project: Project, runnable: Any, size: Size) -> float:
    result = verify(project, runnable, size, seed=SEED)
    if not result.ok:
        raise RunnerFailure(f"{runnable.name} {size}: {result.message}")
    return float(result.rel_error)


def run(project: Project, variant_name: str, size: Size, *, params: dict[str, Any] | None,
        warmup: int, label: str, capture: str) -> RunnerResult:
    """Prepare, verify, warm up and launch once; raise on any failure."""
    cupy = require_gpu()
    if capture == "nvtx" and not nvtx_available():
        # ncuh does not import CuPy before ncu to ask; this one line tells the user instead.
        raise RunnerFailure(NO_NVTX_HELP)
    variant = project.variant(variant_name)
    tuning = "given"
    if not params:
        resolved = resolve_params(project, variant, size, current_gpu_name(),
                                  compute_capability=current_compute_capability())
        params, tuning = resolved.params, resolved.origin
    project.check_params(variant, params, size)  # one-line NcuhError before compiling
    runnable = prepare(project, variant, size, params)
    # Compiled and loaded; started early, wait for the GPU to be ours (harness.gpu.gates).
    wait_to_launch()

    rel_error: float | None = None
    if capture == "nvtx":
        rel_error = _verify(project, runnable, size)
        # ncu saves every device allocation before the first replay pass and restores it
        # before each next one; the blocks CuPy keeps cached from the check would be saved
        # too (the bundled matrix product at 4096 on an H100: 995 MB saved instead of 290 MB).
        cupy.get_default_memory_pool().free_all_blocks()

    # Fresh random inputs (never zeros: zeros make some units idle and the profile
    # unrepresentative), the same for the warm-up and the captured launch.
    inputs = project.inputs(size, SEED + 1)
    for _ in range(warmup):
        runnable(inputs)
    cupy.cuda.runtime.deviceSynchronize()

    if capture == "nvtx":
        from cupy.cuda import nvtx

        nvtx.RangePush(runner_range(label))
        try:
            runnable(inputs)
            cupy.cuda.runtime.deviceSynchronize()
        finally:
            nvtx.RangePop()
    else:
        runnable(inputs)
        cupy.cuda.runtime.deviceSynchronize()
        rel_error = _verify(project, runnable, size)

    return RunnerResult(
        variant=variant.name, size=size.as_list(), kernel_name=variant.kernel,
        params=dict(runnable.params), capture=capture, warmup=warmup, rel_error=rel_error,
        environment=cuda_fields(cupy), defines=dict(runnable.defines) or None, tuning=tuning,
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness.gpu.runner", description=__doc__)
    parser.add_argument("--project", default=None, help="project file or folder")
    parser.add_argument("--variant", required=True)
    parser.add_argument("--size", required=True)
    parser.add_argument("--params", default="{}", help="JSON object of parameters")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--label", default=None, help="entry label (names the NVTX range)")
    parser.add_argument("--capture", choices=("nvtx", "kernel"), default="nvtx")
    return parser


def _fail(message: str, status: int) -> int:
    print(f"{RUNNER_PREFIX}{' '.join(message.split())}", file=sys.stderr, flush=True)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        params = load_json(args.params, "--params", NcuhError)
    except NcuhError as error:
        return _fail(str(error), 2)
    if not isinstance(params, dict):
        return _fail("--params must be a JSON object", 2)
    if args.warmup < 0:
        return _fail("--warmup must be >= 0", 2)
    try:
        # Started early by `ncuh profile`: no CUDA before the profile ahead of us is under way.
        wait_to_start_cuda()
        project = open_project(args.project)
        size = project.parse_size(args.size)
        label = args.label or f"{args.variant}_{size.label}"
        result = run(project, args.variant, size, params=params, warmup=args.warmup,
                     label=label, capture=args.capture)
    except NoGpuError as error:
        return _fail(str(error), RUNNER_NO_GPU_EXIT)
    except NcuhError as error:
        return _fail(str(error), error.exit_code)
    except RunnerFailure as error:
        return _fail(str(error), 1)
    except Exception as error:  # a compile error or a CUDA error: this variant is broken
        return _fail(f"{args.variant}: {type(error).__name__}: {first_error_line(error)}", 1)
    print(RESULT_PREFIX + json.dumps(asdict(result)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
