"""What the runner and `ncuh profile` agree on: the NVTX range name, the runner's failure
prefix, its no-GPU exit status and its result line. Defined here, on the run side, and read by
the profile side (`harness.profile.ncu_command`, `harness.profile.ncu_errors`)."""

from __future__ import annotations

# Prefix of the NVTX range the runner pushes around the one launch ncu must capture.
RANGE_PREFIX = "ncuh-"
# The runner reports its own failures as one line with this prefix.
RUNNER_PREFIX = "ncuh-runner: "
# A runner exit status that means "this machine has no GPU", not "this variant is broken".
RUNNER_NO_GPU_EXIT = 3
# The runner prints one line with this prefix on success: what it ran, for the manifest.
RESULT_PREFIX = "ncuh-runner-result: "
# A runner started ahead of its turn (`harness.profile.head_start`) waits for these files:
# the first before it starts CUDA, the second before it touches the GPU (`harness.gpu.gates`).
START_CUDA_AFTER_ENV = "NCUH_START_CUDA_AFTER"
LAUNCH_AFTER_ENV = "NCUH_LAUNCH_AFTER"
# The process id of the `ncuh profile` that will open them: a runner gives up when it is gone.
GATES_OWNER_ENV = "NCUH_GATES_OWNER"


def runner_range(label: str) -> str:
    """Name of the NVTX push/pop range around the profiled launch of entry `label`."""
    return f"{RANGE_PREFIX}{label}"
