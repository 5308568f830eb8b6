"""The runner's two waits when `ncuh profile` starts it before its turn (a head start).

With several variants on one GPU, `ncuh profile` starts the next variant's ncu while the
current one is still being profiled (`harness.profile.head_start`), so that ncu's start,
Python's and the runner's imports happen beside the replay passes instead of after them. A
runner that starts early must not disturb the profile being taken, so it waits twice, each
time for a file `ncuh profile` creates:

* `wait_to_start_cuda`, before CUDA starts (`NCUH_START_CUDA_AFTER`): the file appears once the
  current kernel's replay passes have begun, when that ncu already holds its profiling lock;
  an early CUDA start cannot then get ahead of the very profile it would be waiting for;
* `wait_to_launch`, after the kernel is compiled and loaded but before the first allocation
  or launch (`NCUH_LAUNCH_AFTER`): the file appears once the program ahead has disconnected
  from its ncu (or that ncu has exited), so none of this runner's allocations or launches
  reach the GPU while another kernel is measured.

Between the two the runner creates its CUDA context and loads its module while the kernel
ahead is replayed: work of the driver (a context's memory, the module's code), no launch.

Without the variables (a runner run by hand, the first variant of a run) both return at once.
A runner whose `ncuh profile` is gone (`NCUH_GATES_OWNER`) stops waiting and fails.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from harness.errors import NcuhError
from harness.gpu.protocol import GATES_OWNER_ENV, LAUNCH_AFTER_ENV, START_CUDA_AFTER_ENV

# How often a waiting runner looks for its file: a few milliseconds of latency at most.
POLL_S = 0.005
# How often it checks that the `ncuh profile` that started it is still there.
OWNER_CHECK_S = 0.5


def wait_to_start_cuda() -> float:
    """Wait, if asked to, until CUDA may start here; the seconds waited."""
    return _wait(START_CUDA_AFTER_ENV)


def wait_to_launch() -> float:
    """Wait, if asked to, until this runner may use the GPU; the seconds waited."""
    return _wait(LAUNCH_AFTER_ENV)


def _owner_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # there, but not ours to signal
        return True
    return True


def _wait(variable: str) -> float:
    path_text = os.environ.get(variable)
    if not path_text:
        return 0.0
    path = Path(path_text)
    owner_text = os.environ.get(GATES_OWNER_ENV, "")
    owner = int(owner_text) if owner_text.isdigit() else None
    started = last_check = time.monotonic()
    while not path.exists():
        now = time.monotonic()
        if owner is not None and now - last_check >= OWNER_CHECK_S:
            last_check = now
            if not _owner_alive(owner):
                raise NcuhError("the ncuh profile run that started this runner early is gone")
        time.sleep(POLL_S)
    return time.monotonic() - started
