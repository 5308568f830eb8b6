"""A dry run in a child process of its own: the stand-ins never reach this process.

The child (forked) blocks the GPU libraries, puts the CuPy stand-in in `sys.modules`, imports
the project's modules afresh (so a module-level `import cupy` or a cached kernel gets the
stand-ins, and this process's modules keep the real ones), runs the trial and sends back what
it found. What the project prints is not shown. A child that runs past `TIMEOUT_S` is killed,
and one that crashes is named: either is one problem line.
"""

from __future__ import annotations

import faulthandler
import multiprocessing
import os
import signal
import sys
import traceback
import warnings
from multiprocessing.connection import Connection
from pathlib import Path

from harness.dryrun import cupy_standin
from harness.dryrun.blocked import GPU_LIBRARIES, NotStoodIn, blocked
from harness.dryrun.cupy_standin import Recorder
from harness.dryrun.targets import target
from harness.dryrun.trial import HOST_LIMIT, DryRun, Trial
from harness.errors import ProjectError
from harness.project import Project, load_project

# How long the project's Python may run in a dry run, all sizes and variants together.
TIMEOUT_S = 120.0


def _forget_modules(folder: Path) -> None:
    """Drop the project's own modules, so that they are imported again."""
    root = folder.resolve()
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and Path(file).resolve().is_relative_to(root):
            del sys.modules[name]


def run_here(path: Path, arch: str) -> DryRun:
    """The dry run of the project file at `path`, in this process (the child's work)."""
    recorder = Recorder(target(arch), HOST_LIMIT)
    cupy_standin.install(recorder)
    with blocked((*GPU_LIBRARIES, "cupy"), cupy_standin.modules()):
        _forget_modules(path.parent)
        try:
            project = load_project(path)
        except ProjectError as error:
            return DryRun(notes=(f"the project's Python not run: importing it with the "
                                 f"stand-ins in place failed: {error}",))
        except NotStoodIn as stop:
            return DryRun(notes=(f"the project's Python not run: importing it calls "
                                 f"{stop.what}, which `ncuh check` has no stand-in for",))
        return Trial(project, recorder).run()


def _child(path: Path, arch: str, connection: Connection) -> None:
    faulthandler.disable()  # a crash is named by the parent, not dumped on the terminal
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115  (the child's to its end)
    warnings.simplefilter("ignore")
    try:
        answer: DryRun | str = run_here(path, arch)
    except BaseException:  # ncuh's own failure: the parent shows it as the bug it is
        answer = traceback.format_exc()
    connection.send(answer)


def dry_run(project: Project, arch: str, timeout_s: float = TIMEOUT_S) -> DryRun:
    """Run `project`'s Python on the CPU with the GPU stood in for `arch` (`harness.dryrun`)."""
    context = multiprocessing.get_context("fork")
    receiving, sending = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(project.path, arch, sending), daemon=True)
    child.start()
    sending.close()
    answer: DryRun | str | None = None
    try:
        if receiving.poll(timeout_s):
            try:
                answer = receiving.recv()
            except EOFError:
                answer = None
        else:
            return DryRun(problems=(f"the project's Python did not finish within "
                                    f"{timeout_s:g} s of its dry run (an endless loop, or far "
                                    "too much work on the CPU)",))
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        receiving.close()
    if isinstance(answer, str):
        raise RuntimeError(f"the dry run failed:\n{answer}")
    if answer is None:
        code = child.exitcode or 0
        how = signal.Signals(-code).name if code < 0 else f"exit status {code}"
        return DryRun(problems=(f"the project's Python ended its dry run ({how})",))
    return answer
