"""The `ncuh` executable (`harness.entry`): start-up without garbage collection, then the
collector on again once the command is loaded, its young generation collected less often."""

from __future__ import annotations

import gc
import subprocess
import sys

from click.testing import CliRunner

from harness import __version__
from harness.cli import main


def test_the_collector_is_back_on_once_the_command_is_loaded() -> None:
    threshold = gc.get_threshold()
    gc.set_threshold(700)  # Python's default, whatever this test process set
    gc.disable()  # as harness.entry leaves it for start-up
    try:
        result = CliRunner().invoke(main, ["list", "--format", "json"])
        assert result.exit_code == 0, result.output
        assert gc.isenabled()
        assert gc.get_threshold()[0] == 50_000
    finally:
        gc.unfreeze()  # what the command froze goes back to this test process's collector
        gc.set_threshold(*threshold)
        gc.enable()


def test_the_cli_leaves_the_collector_alone_in_a_library_or_test_process() -> None:
    frozen = gc.get_freeze_count()
    result = CliRunner().invoke(main, ["list", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_python_m_harness_runs_the_executable() -> None:
    completed = subprocess.run([sys.executable, "-m", "harness", "--version"],
                               capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == f"ncuh, version {__version__}"
