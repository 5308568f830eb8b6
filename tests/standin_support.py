"""The stand-in ncu and nvidia-smi (tests/standins) on PATH, for profile tests without a GPU.

Import the `standins` fixture into a test module. The stand-ins are real executables, so the
children ncuh starts (ncu, the post-processing workers, Slurm's tasks) really run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from packed_fixtures import H200_NAIVE

from harness.profile import run as lib

STANDINS = Path(__file__).parent / "standins"
REPORT = H200_NAIVE


@pytest.fixture(name="standins")
def standins_fixture(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The stand-ins first on PATH; returns the log the stand-in ncu appends each run to."""
    return use_standins(monkeypatch, tmp_path)


def use_standins(monkeypatch: pytest.MonkeyPatch, folder: Path) -> Path:
    """Put the stand-ins in place through `monkeypatch`; the ncu log goes into `folder`."""
    log = folder / "ncu-runs.jsonl"
    monkeypatch.setenv("PATH", f"{STANDINS}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("NCUH_FAKE_NCU_REPORT", str(REPORT))
    monkeypatch.setenv("NCUH_FAKE_NCU_LOG", str(log))
    monkeypatch.setenv("NCUH_FAKE_NCU_SECONDS", "0.4")
    # kept plans of this test's own, beside its folder (tests look at what is in that folder)
    monkeypatch.setenv("NCUH_CACHE_DIR", str(folder.parent / f"{folder.name}.user-cache"))
    monkeypatch.delenv("NCU_HOME", raising=False)
    monkeypatch.setattr(lib, "cupy_installed", lambda: True)
    monkeypatch.setattr("harness.util.ncu_executable", lambda: STANDINS / "ncu")
    return log


def living_ncus(log: Path) -> list[int]:
    """The stand-in ncu processes still running (zombies aside) that log to `log` (the
    `standins` fixture's: one test's)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            environ = (proc / "environ").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and str(STANDINS / "ncu").encode() in argv and \
                f"NCUH_FAKE_NCU_LOG={log}".encode() in environ:
            found.append(int(proc.name))
    return found
