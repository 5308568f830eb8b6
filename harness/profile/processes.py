"""Child processes that never outlive ncuh: each runs in its own process group.

`run_command` runs one command and waits; `start_command` starts one and returns a `Job`, so
several run at once (the post-processing children of `ncuh profile`). On Ctrl-C, SIGTERM or a
crash, the whole group is killed (ncu and the runner it started), and a group's leftovers are
killed even after a clean exit. `terminate_as_interrupt` turns SIGTERM/SIGHUP into an exception
so that this cleanup (and the removal of a half-built run directory) runs at all.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import os
import queue
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from harness.util import terminate_as_interrupt as terminate_as_interrupt

# Runs one argv with an environment (None: ours) and returns (exit status, stdout+stderr);
# a Runner may take a third argument, a callback for the output as it comes, and the keywords
# `on_start`, called once the command has started, and `on_output_at`, given each piece of
# output with the time it came (`run_command`).
Runner = Callable[..., tuple[int, str]]


class Job(Protocol):
    """A started command: `wait` gives (exit status, stdout+stderr); `kill` stops it."""

    def wait(self) -> tuple[int, str]: ...

    def kill(self) -> None: ...


# Starts one argv with an environment and returns at once; several run at the same time.
Spawner = Callable[[Sequence[str], "dict[str, str] | None"], Job]
def package_environment() -> dict[str, str]:
    """Our environment, with this ncuh's package root first on PYTHONPATH.

    A child (`python -m harness.runner` under ncu, a worker) must import the same `harness` as
    this process, also from a checkout that is not installed or when PYTHONPATH was relative.
    """
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    parts = [root, *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != root)]
    env["PYTHONPATH"] = os.pathsep.join(parts)
    return env


def result_line(output: str, prefix: str) -> Any:
    """The JSON after `prefix` on the last line of a child's output that starts with it."""
    for line in reversed(output.splitlines()):
        if line.startswith(prefix):
            with contextlib.suppress(json.JSONDecodeError):
                return json.loads(line[len(prefix):])
    return None


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


# Children started by `run_command` or `start_command` and not yet finished, so that
# `kill_running` can stop them from another thread (ncu runs on several GPUs at once, each
# waited for on a thread) or after an interrupt that came before their caller held them.
_RUNNING: set[subprocess.Popen[bytes]] = set()
_RUNNING_LOCK = threading.Lock()


class StreamingCommand:
    """A command started in its own process group whose output is read as it comes, on a
    thread, until someone `wait`s for it: how the next variant's ncu starts early (its output
    kept until its turn) and how `run_command` runs one command."""

    def __init__(self, argv: Sequence[str], env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, process_group=0, env=env,
        )
        try:
            _hold(self.process)
            # Each piece with the time it came (monotonic): an early start's output waits
            # here until its turn, and `harness.profile.phases` times ncu's lines as they came.
            self._chunks: queue.SimpleQueue[tuple[float, str] | None] = queue.SimpleQueue()
            self._reader = threading.Thread(target=self._read, daemon=True,
                                             name=f"ncuh-output-{self.process.pid}")
            self._reader.start()
        except BaseException:  # Ctrl-C while the command starts: nobody else could stop it
            kill_group(self.process)
            _forget(self.process)
            raise

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        try:
            while chunk := stream.read1(65536):
                if text := decoder.decode(chunk):
                    self._chunks.put((time.monotonic(), text))
            if tail := decoder.decode(b"", final=True):
                self._chunks.put((time.monotonic(), tail))
        except (OSError, ValueError):  # the pipe broke under a kill: the output ends here
            pass
        finally:
            stream.close()
            self._chunks.put(None)

    def wait(self, on_output: Callable[[str], None] | None = None,
             on_output_at: Callable[[str, float], None] | None = None) -> tuple[int, str]:
        """Hand the output (what came before this call first) to `on_output` piece by piece,
        and to `on_output_at` with the time each piece came (`time.monotonic()`), then wait
        for the exit; (exit status, stdout+stderr). Any exception here kills the whole group
        before propagating."""
        pieces: list[str] = []
        try:
            while (piece := self._chunks.get()) is not None:
                at, text = piece
                pieces.append(text)
                if on_output is not None:
                    on_output(text)
                if on_output_at is not None:
                    on_output_at(text, at)
            self.process.wait()
        except BaseException:
            self.kill()
            raise
        finally:
            _forget(self.process)
        # The runner may have left a child behind (it should not); never let one survive.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        return self.process.returncode, "".join(pieces)

    def kill(self) -> None:
        """Stop the command and everything it started."""
        kill_group(self.process)
        _forget(self.process)


def run_command(
    argv: Sequence[str], env: dict[str, str] | None = None,
    on_output: Callable[[str], None] | None = None, *,
    on_start: Callable[[], None] | None = None,
    on_output_at: Callable[[str, float], None] | None = None,
) -> tuple[int, str]:
    """Run `argv` in its own process group; return (exit status, stdout+stderr).

    `on_start` is called once the command has started (what may run beside ncu starts then,
    not before it). The output is read as it comes and handed to `on_output` piece by piece
    (ncu's pass progress, for the progress line), and to `on_output_at` with the time each
    piece came: what came while `on_start` ran is handed over only after it, yet timed as it
    came (`harness.profile.phases`). Any exception here (KeyboardInterrupt,
    SystemExit from SIGTERM, one from `on_start`) kills the whole group before propagating, so
    no ncu or runner process outlives ncuh; `kill_running` does the same from another thread.
    """
    command = StreamingCommand(argv, env)
    if on_start is not None:
        try:
            on_start()
        except BaseException:
            command.kill()
            raise
    return command.wait(on_output, on_output_at)


def kill_running() -> None:
    """Kill the process group of every child `run_command` or `start_command` started that is
    still running (any thread's)."""
    with _RUNNING_LOCK:
        running = list(_RUNNING)
    for process in running:
        kill_group(process)


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
        _forget(self.process)
        self.output.seek(0)
        text = self.output.read().decode("utf-8", errors="replace")
        self.output.close()
        return returncode, text

    def kill(self) -> None:
        kill_group(self.process)
        _forget(self.process)
        self.output.close()


def _hold(process: subprocess.Popen[bytes]) -> None:
    with _RUNNING_LOCK:
        _RUNNING.add(process)


def _forget(process: subprocess.Popen[bytes]) -> None:
    with _RUNNING_LOCK:
        _RUNNING.discard(process)


def start_command(argv: Sequence[str], env: dict[str, str] | None = None) -> Job:
    """Start `argv` in its own process group (as `run_command` does) and return at once. The
    child counts as running (`kill_running`) from the moment it exists: an interrupt before
    its caller holds the job must not leave it behind."""
    output = tempfile.TemporaryFile()  # noqa: SIM115 - the job closes it once waited for
    process = None
    try:
        process = subprocess.Popen(
            list(argv), stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            process_group=0, env=env,
        )
        _hold(process)
        return _ProcessJob(process, output)
    except BaseException:
        if process is not None:
            kill_group(process)
            _forget(process)
        output.close()
        raise


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
        # A runner call cannot be stopped from outside (it owns its processes): wait for it,
        # so that it writes nothing into a directory that is being removed.
        self._thread.join()


def in_threads(runner: Runner) -> Spawner:
    """A `Spawner` that runs each job through `runner` on a thread of its own."""
    return lambda argv, env: _ThreadJob(runner, argv, env)
