"""The runner's two waits when `ncuh profile` starts it before its turn (a head start).

* `wait_to_start_cuda` (`NCUH_START_CUDA_AFTER`): until the current kernel's replay passes have
  begun, so an early CUDA start cannot get ahead of the profile it waits for;
* `wait_to_launch` (`NCUH_LAUNCH_AFTER`): after compile and module load, until the program ahead
  has disconnected from its ncu, so no allocation or launch reaches the GPU while another kernel
  is measured.

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
