"""The program ncu runs: compile, verify, warm up, then launch one variant's kernel once.

    python -m harness.runner --variant NAME --size M,N,K [--params JSON] [--warmup N]
                             [--label LABEL] [--capture nvtx|kernel]

With `--capture nvtx` (the default) the runner verifies the variant against a float64
reference, warms the kernel up, then pushes the NVTX range `ncuh-<label>` around one launch:
ncu's `--nvtx-include "ncuh-<label>/"` captures that launch and nothing else (not the warm-up,
not the reference GEMM); a CuPy without NVTX fails at once (exit 1) saying to pass
`--capture kernel`. With `--capture kernel`, for builds of CuPy without NVTX, ncu counts
launches of the kernel instead, so the runner launches it exactly `warmup` times before the
target and verifies only afterwards (verification's own launches would shift the count).

Failures are one line on stderr starting with `ncuh-runner: `, which `harness.profile.ncu_errors`
reads back through ncu's output: exit 2 for a bad request (unknown variant, unsupported size),
3 when there is no GPU, 1 for a compile error or a wrong result.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from harness.errors import NcuhError
from harness.profile.ncu_command import runner_range
from harness.profile.ncu_errors import RUNNER_NO_GPU_EXIT, RUNNER_PREFIX

# The runner prints one line with this prefix on success: what it ran, for the manifest.
RESULT_PREFIX = "ncuh-runner-result: "
SEED = 20261121
NO_NVTX_HELP = (
    "NVTX capture was asked for, but this CuPy has no NVTX support (cupy.cuda.nvtx is "
    "unavailable): pass --capture kernel to ncuh profile"
)


@dataclass(frozen=True)
class RunnerResult:
    variant: str
    size: tuple[int, int, int]
    kernel_name: str
    params: dict[str, int]
    capture: str
    warmup: int
    rel_error: float | None
    # CuPy's view of the device and CUDA (harness.gpu_env.cuda_fields): CUDA is up here anyway,
    # so ncuh need not start it again after ncu just to write these into the manifest.
    environment: dict[str, Any]


class RunnerFailure(Exception):
    """A variant that compiled wrong or computed a wrong result: exit status 1."""


def parse_size(text: str) -> tuple[int, int, int]:
    parts = [part.strip() for part in text.replace("x", ",").split(",") if part.strip()]
    if len(parts) == 1:
        parts *= 3
    if len(parts) != 3 or not all(part.isdigit() and int(part) > 0 for part in parts):
        raise argparse.ArgumentTypeError(f"size must be N or M,N,K with positive integers: {text}")
    return int(parts[0]), int(parts[1]), int(parts[2])


def nvtx_available() -> bool:
    """Whether CuPy can push NVTX ranges (it is built with NVTX on every supported platform)."""
    try:
        from cupy.cuda import nvtx
    except ImportError:
        return False
    return bool(getattr(nvtx, "available", True))


def _require_gpu() -> Any:
    try:
        import cupy
    except ImportError as error:
        raise _NoGpu(f"CuPy is not installed ({error})") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # CUDA driver missing or unusable
        raise _NoGpu(f"no usable CUDA GPU ({type(error).__name__}: {error})") from None
    if count < 1:
        raise _NoGpu("no CUDA GPU is visible (check nvidia-smi and CUDA_VISIBLE_DEVICES)")
    return cupy


class _NoGpu(Exception):
    pass


def _verify(variant: Any, size: tuple[int, int, int], params: dict[str, Any]) -> float:
    from harness.verify import verify

    result = verify(variant, size, params=params or None)
    if not result.ok:
        raise RunnerFailure(
            f"{variant.name} {'x'.join(map(str, size))}: wrong result "
            f"(relative error {result.rel_error:.3g})"
        )
    return float(result.rel_error)


def run(
    variant_name: str,
    size: tuple[int, int, int],
    *,
    params: dict[str, Any],
    warmup: int,
    label: str,
    capture: str,
) -> RunnerResult:
    """Compile, verify, warm up and launch once; raise on any failure."""
    cupy = _require_gpu()
    if capture == "nvtx" and not nvtx_available():
        # ncuh no longer imports CuPy before ncu to ask; this one line tells the user instead.
        raise RunnerFailure(NO_NVTX_HELP)
    from harness.gpu_env import cuda_fields
    from harness.sgemm import build
    from harness.variants import check_params, get_variant

    variant = get_variant(variant_name)
    check_params(variant, params or None, size)  # one-line NcuhError before compiling
    kernel = build(variant, size, params or None)

    rel_error: float | None = None
    if capture == "nvtx":
        rel_error = _verify(variant, size, params)

    m, n, k = size
    rng = cupy.random.default_rng(SEED)
    # Random, never zero: zeros make some units idle and the profile unrepresentative.
    a = rng.random((m, k), dtype=cupy.float32) - 0.5
    b = rng.random((k, n), dtype=cupy.float32) - 0.5
    c = rng.random((m, n), dtype=cupy.float32) - 0.5
    alpha, beta = 1.0, 0.0

    for _ in range(warmup):
        kernel(a, b, c, alpha, beta)
    cupy.cuda.runtime.deviceSynchronize()

    if capture == "nvtx":
        from cupy.cuda import nvtx

        nvtx.RangePush(runner_range(label))
        try:
            kernel(a, b, c, alpha, beta)
            cupy.cuda.runtime.deviceSynchronize()
        finally:
            nvtx.RangePop()
    else:
        kernel(a, b, c, alpha, beta)
        cupy.cuda.runtime.deviceSynchronize()
        rel_error = _verify(variant, size, params)

    return RunnerResult(
        variant=variant.name,
        size=size,
        kernel_name=str(kernel.kernel_name or variant.kernel_name),
        params=dict(kernel.params),
        capture=capture,
        warmup=warmup,
        rel_error=rel_error,
        environment=cuda_fields(cupy),
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness.runner", description=__doc__)
    parser.add_argument("--variant", required=True)
    parser.add_argument("--size", required=True, type=parse_size)
    parser.add_argument("--params", default="{}", help="JSON object of tunable parameters")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--label", default=None, help="entry label (names the NVTX range)")
    parser.add_argument("--capture", choices=("nvtx", "kernel"), default="nvtx")
    return parser


def _first_error_line(error: BaseException) -> str:
    """The line that says what went wrong: NVRTC logs put it after a header of file names."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    for line in lines:
        if "error" in line.lower():
            return line
    return lines[0] if lines else ""


def _fail(message: str, status: int) -> int:
    print(f"{RUNNER_PREFIX}{' '.join(message.split())}", file=sys.stderr, flush=True)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        params = json.loads(args.params)
    except json.JSONDecodeError as error:
        return _fail(f"--params is not JSON: {error}", 2)
    if not isinstance(params, dict):
        return _fail("--params must be a JSON object", 2)
    if args.warmup < 0:
        return _fail("--warmup must be >= 0", 2)
    label = args.label or f"{args.variant}_{'x'.join(map(str, args.size))}"
    try:
        result = run(
            args.variant, args.size, params=params, warmup=args.warmup, label=label,
            capture=args.capture,
        )
    except _NoGpu as error:
        return _fail(str(error), RUNNER_NO_GPU_EXIT)
    except NcuhError as error:
        return _fail(str(error), error.exit_code)
    except RunnerFailure as error:
        return _fail(str(error), 1)
    except Exception as error:  # a compile error or a CUDA error: this variant is broken
        return _fail(f"{args.variant}: {type(error).__name__}: {_first_error_line(error)}", 1)
    print(RESULT_PREFIX + json.dumps(asdict(result)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
