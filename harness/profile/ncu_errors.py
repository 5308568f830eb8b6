"""Read why an `ncu` run failed from what it printed, and say what to do about it.

Some failures belong to the machine (no counter permission, no GPU, a profiler that cannot
load): every later entry would fail the same way, so they stop the whole command with exit 2.
The rest belong to one entry (the runner's compile error or wrong result, no kernel captured,
an ncu error on that kernel): `--all` records them and carries on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.errors import CounterPermissionError, NcuhError, NoGpuError, ProfilerError

# The runner's failure-line prefix and no-GPU exit status are the run side's (re-exported).
from harness.gpu import RUNNER_NO_GPU_EXIT as RUNNER_NO_GPU_EXIT
from harness.gpu import RUNNER_PREFIX as RUNNER_PREFIX

PERMISSION_HELP = (
    "GPU performance counters are not permitted for this user (ERR_NVGPUCTRPERM): run ncuh as "
    "root, or allow all users with 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' in "
    "/etc/modprobe.d/ncuh.conf and reload the nvidia module (or reboot); "
    "see https://developer.nvidia.com/ERR_NVGPUCTRPERM"
)
NO_GPU_HELP = "no CUDA GPU is visible (check nvidia-smi and CUDA_VISIBLE_DEVICES)"


_NO_GPU_PATTERNS = (
    re.compile(r"no (?:cuda[- ]capable|supported) (?:device|gpu)", re.IGNORECASE),
    re.compile(r"cudaErrorNoDevice|CUDA_ERROR_NO_DEVICE"),
    re.compile(r"CUDA driver version is insufficient|cudaErrorInsufficientDriver"),
)
_PROFILER_PATTERNS = (
    re.compile(r"Failed to initialize the profiler[^\n]*"),
    re.compile(r"Profiling is not supported on (?:this|any) device[^\n]*", re.IGNORECASE),
    re.compile(r"[^\n]*not supported by (?:this version of )?Nsight Compute[^\n]*"),
)
_NO_KERNEL = re.compile(r"No kernels were profiled", re.IGNORECASE)
_NCU_ERROR = re.compile(r"^==ERROR==\s*(.+?)\s*$", re.MULTILINE)
_APP_ERROR = re.compile(r"The application returned an error code \((\d+)\)")


@dataclass(frozen=True)
class NcuFailure:
    """Why one ncu run produced no usable report."""

    kind: str  # counter_permission | no_gpu | profiler | runner | no_kernel | program | ncu
    message: str  # one line, for the manifest and the summary
    fatal: bool  # True: the machine is the problem, stop the whole command

    def error(self) -> NcuhError:
        """The exit-2 error to raise for a fatal failure."""
        if self.kind == "counter_permission":
            return CounterPermissionError(self.message)
        if self.kind == "no_gpu":
            return NoGpuError(self.message)
        return ProfilerError(self.message)


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def runner_error(output: str) -> str | None:
    """The runner's own one-line error, when it printed one (last one wins)."""
    lines = [line for line in output.splitlines() if line.startswith(RUNNER_PREFIX)]
    return lines[-1][len(RUNNER_PREFIX):].strip() if lines else None


def classify(output: str, returncode: int, *, report_written: bool) -> NcuFailure | None:
    """Classify an ncu run from its combined stdout+stderr; None when it succeeded."""
    if "ERR_NVGPUCTRPERM" in output:
        return NcuFailure("counter_permission", PERMISSION_HELP, fatal=True)
    runner = runner_error(output)
    app = _APP_ERROR.search(output)
    if runner is not None and app and int(app.group(1)) == RUNNER_NO_GPU_EXIT:
        return NcuFailure("no_gpu", _one_line(runner), fatal=True)
    for pattern in _NO_GPU_PATTERNS:
        if pattern.search(output):
            return NcuFailure("no_gpu", NO_GPU_HELP, fatal=True)
    for pattern in _PROFILER_PATTERNS:
        match = pattern.search(output)
        if match:
            return NcuFailure(
                "profiler", f"ncu cannot profile here: {_one_line(match.group(0))}", fatal=True
            )
    if runner is not None:
        return NcuFailure("runner", _one_line(runner), fatal=False)
    if returncode == 0 and report_written:
        return None
    if _NO_KERNEL.search(output):
        return NcuFailure(
            "no_kernel", "no kernel was profiled (check the kernel and NVTX filters)", fatal=False
        )
    if app:
        return NcuFailure(
            "program", f"the profiled program exited with status {app.group(1)}", fatal=False
        )
    errors = _NCU_ERROR.findall(output)
    if errors:
        return NcuFailure("ncu", f"ncu: {_one_line(errors[-1])}", fatal=False)
    if returncode != 0:
        return NcuFailure("ncu", f"ncu exited with status {returncode}", fatal=False)
    return NcuFailure("no_kernel", "ncu wrote no report (no kernel was profiled)", fatal=False)
