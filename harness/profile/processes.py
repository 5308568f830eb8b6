"""Child processes that never outlive ncuh: each runs in its own process group.

`run_command` runs one command and waits; `start_command` starts one and returns a `Job`, so
several run at once (the post-processing children of `ncuh profile`). On Ctrl-C, SIGTERM or a
crash, the whole group is killed (ncu and the runner it started), and a group's leftovers are
killed even after a clean exit. `terminate_as_interrupt` turns SIGTERM/SIGHUP into an exception
so that this cleanup (and the removal of a half-built run directory) runs at all.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any, Protocol

# Runs one argv with an environment (None: ours) and returns (exit status, stdout+stderr).
Runner = Callable[[Sequence[str], "dict[str, str] | None"], tuple[int, str]]


class Job(Protocol):
    """A started command: `wait` gives (exit status, stdout+stderr); `kill` stops it."""

    def wait(self) -> tuple[int, str]: ...

    def kill(self) -> None: ...


# Starts one argv with an environment and returns at once; several run at the same time.
Spawner = Callable[[Sequence[str], "dict[str, str] | None"], Job]
# Seconds ncu gets to exit after SIGTERM before the whole process group is killed.
TERMINATE_GRACE_S = 5.0


def kill_group(process: subprocess.Popen[Any]) -> None:
    """Stop ncu and everything it started (the runner): its whole process group."""
    for sig, wait in ((signal.SIGTERM, TERMINATE_GRACE_S), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=wait)
            # ncu has exited; children it left behind in the group get the second signal too.
            if sig == signal.SIGTERM:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
            return
        except subprocess.TimeoutExpired:
            continue


def run_command(argv: Sequence[str], env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run `argv` in its own process group; return (exit status, stdout+stderr).

    Any exception here (KeyboardInterrupt, SystemExit from SIGTERM) kills the whole group
    before propagating, so no ncu or runner process outlives ncuh.
    """
    process = subprocess.Popen(
        list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        start_new_session=True, text=True, errors="replace", env=env,
    )
    try:
        output, _ = process.communicate()
    except BaseException:
        kill_group(process)
        raise
    # The runner may have left a child behind (it should not); never let one survive.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    return process.returncode, output or ""


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Turn SIGTERM/SIGHUP into an exception so cleanup runs (the default kills Python cold)."""

    def handler(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = {}
    try:
        for sig in (signal.SIGTERM, signal.SIGHUP):
            previous[sig] = signal.signal(sig, handler)
    except ValueError:  # not the main thread: leave the handlers alone
        pass
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@dataclass
class _ProcessJob:
    """A child in its own process group, its output going to an unnamed temporary file.

    A file rather than a pipe: two children run at once and nobody reads a pipe until both
    are done, so a chatty crash (a faulthandler dump) must not block on a full pipe.
    """

    process: subprocess.Popen[bytes]
    output: IO[bytes]

    def wait(self) -> tuple[int, str]:
        try:
            returncode = self.process.wait()
        except BaseException:
            self.kill()
            raise
        # Never let a grandchild outlive its job.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.output.seek(0)
        text = self.output.read().decode("utf-8", errors="replace")
        self.output.close()
        return returncode, text

    def kill(self) -> None:
        kill_group(self.process)
        self.output.close()


def start_command(argv: Sequence[str], env: dict[str, str] | None = None) -> Job:
    """Start `argv` in its own process group (as `run_command` does) and return at once."""
    output = tempfile.TemporaryFile()  # noqa: SIM115 - the job closes it once waited for
    try:
        process = subprocess.Popen(
            list(argv), stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, env=env,
        )
    except BaseException:
        output.close()
        raise
    return _ProcessJob(process, output)


class _ThreadJob:
    """A `Runner` call on a thread: how a caller's own runner still runs jobs concurrently."""

    def __init__(self, runner: Runner, argv: Sequence[str], env: dict[str, str] | None) -> None:
        self._result: tuple[int, str] = (-1, "")
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(runner, argv, env), daemon=True)
        self._thread.start()

    def _run(self, runner: Runner, argv: Sequence[str], env: dict[str, str] | None) -> None:
        try:
            self._result = runner(argv, env)
        except BaseException as error:  # handed to the waiting thread
            self._error = error

    def wait(self) -> tuple[int, str]:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._result

    def kill(self) -> None:
        pass  # a runner call cannot be stopped from outside; it owns its processes


def in_threads(runner: Runner) -> Spawner:
    """A `Spawner` that runs each job through `runner` on a thread of its own."""
    return lambda argv, env: _ThreadJob(runner, argv, env)
