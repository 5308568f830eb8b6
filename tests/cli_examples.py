"""The documented `ncuh` commands, run as a user runs them (`python -m harness` in a process of
its own), each distinct read-only command once per test run: the README's samples, the
documentation's examples and the check tests name some of the same commands, and the test
processes share what each printed.

Paths under /tmp/ in an example are written in a folder of this test process instead.
"""

from __future__ import annotations

import atexit
import fcntl
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from click.testing import CliRunner
from conftest import run_folder

from harness.cli import main

ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def _outputs() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="ncuh-examples-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def local(word: str) -> str:
    """A word of an example with a /tmp/NAME path made this process's own NAME."""
    return str(_outputs() / Path(word).name) if word.startswith("/tmp/") else word


def run(args: list[str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """`ncuh ARGS` in `cwd`."""
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300, check=False)


def run_here(args: list[str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """`ncuh ARGS` in `cwd`, in this process (the command's own code, its exit status and
    its stderr line, without a new interpreter's start): for the many commands of one
    documented workflow that other tests also run in a process of their own."""
    before = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(main, args)
    finally:
        os.chdir(before)
    # a crash is no exit status a gate may accept: click's runner would report it as 1
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)


def run_once(args: tuple[str, ...], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """`run`, once per test run for the same words in the same folder: only for commands that
    change nothing but their own output, which a second run would write again. The first
    process to ask runs it and keeps its exit status and output in the run's folder; one that
    asks meanwhile waits for it (an example's /tmp/ path is a process's own: not shared)."""
    return _run_cached(args, cwd.resolve())


@functools.cache
def _run_cached(args: tuple[str, ...], cwd: Path) -> subprocess.CompletedProcess[str]:
    key = hashlib.sha256(json.dumps([list(args), str(cwd)]).encode()).hexdigest()[:20]
    kept = run_folder() / "ran-once" / f"{key}.json"
    kept.parent.mkdir(exist_ok=True)
    with kept.with_suffix(".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if kept.is_file():
            code, stdout, stderr = json.loads(kept.read_text())
            return subprocess.CompletedProcess(list(args), code, stdout, stderr)
        done = run(list(args), cwd)
        # whole or not at all: a process killed while writing leaves no half of it to read
        partial = kept.with_suffix(f".{os.getpid()}.part")
        partial.write_text(json.dumps([done.returncode, done.stdout, done.stderr]))
        os.replace(partial, kept)
        return done
