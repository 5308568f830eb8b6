"""`ncu_report` comes from the installed package, else from Nsight Compute, else one error."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from harness.errors import NcuReportUnavailableError
from harness.report import ncu_import
from harness.util import ncu_locate


@pytest.fixture
def no_installed_ncu_report(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """`import ncu_report` fails unless it is found in one of the returned directories."""
    real_import_module = ncu_import.importlib.import_module
    allowed: list[str] = []
    # Load the real module first so that monkeypatch puts it back after the test (a fake one
    # left in sys.modules would poison every later test).
    ncu_import.import_ncu_report()
    monkeypatch.delitem(sys.modules, "ncu_report")

    def fake_import_module(name: str):
        if name == "ncu_report" and not (sys.path and sys.path[0] in allowed):
            raise ImportError("No module named 'ncu_report'")
        return real_import_module(name)

    monkeypatch.setattr(ncu_import.importlib, "import_module", fake_import_module)
    return allowed


def _fake_install(root: Path, marker: str) -> Path:
    python_dir = root / "extras" / "python"
    python_dir.mkdir(parents=True)
    (python_dir / "ncu_report.py").write_text(f"SOURCE = {marker!r}\n")
    ncu = root / "ncu"
    ncu.write_text("#!/bin/sh\n")
    ncu.chmod(0o755)
    return python_dir


def test_installed_package_is_preferred() -> None:
    module = ncu_import.import_ncu_report()
    assert module.__name__ == "ncu_report"
    assert hasattr(module, "load_report")


def test_falls_back_to_the_copy_shipped_with_nsight_compute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_installed_ncu_report
) -> None:
    python_dir = _fake_install(tmp_path / "nsight-compute" / "2025.3.1", "shipped")
    no_installed_ncu_report.append(str(python_dir))
    monkeypatch.setattr(ncu_locate.shutil, "which", lambda name: None)
    monkeypatch.setenv("NCU_HOME", str(python_dir.parent.parent))
    monkeypatch.setattr(sys, "path", list(sys.path))
    module = ncu_import.import_ncu_report()
    assert module.SOURCE == "shipped"
    assert sys.path[0] == str(python_dir)


def test_missing_everywhere_names_both_ways_to_get_it(
    monkeypatch: pytest.MonkeyPatch, no_installed_ncu_report
) -> None:
    monkeypatch.setattr(ncu_locate.shutil, "which", lambda name: None)
    monkeypatch.delenv("NCU_HOME", raising=False)
    monkeypatch.setattr(ncu_locate, "DEFAULT_INSTALL_GLOB_ROOT", Path("/nonexistent/ncu"))
    monkeypatch.setattr(sys, "path", list(sys.path))
    with pytest.raises(NcuReportUnavailableError) as caught:
        ncu_import.import_ncu_report()
    message = str(caught.value)
    assert "pip install ncu-report" in message
    assert "NCU_HOME" in message and "Nsight Compute" in message
    assert "\n" not in message


def test_install_dirs_order_path_then_ncu_home_then_opt_newest_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opt = tmp_path / "opt"
    for version in ("2024.3.2", "2025.10.0", "2025.3.1"):
        _fake_install(opt / version, version)
    on_path = tmp_path / "path-install"
    _fake_install(on_path, "path")
    home = tmp_path / "home-install"
    _fake_install(home, "home")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(on_path / "ncu", bin_dir / "ncu")  # ncu on PATH is usually a symlink
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("NCU_HOME", str(home))
    monkeypatch.setattr(ncu_locate, "DEFAULT_INSTALL_GLOB_ROOT", opt)
    assert ncu_locate.ncu_install_dirs() == [
        on_path, home, opt / "2025.10.0", opt / "2025.3.1", opt / "2024.3.2"]
    assert ncu_locate.ncu_executable() == bin_dir / "ncu"


def test_ncu_executable_without_path_uses_ncu_home_then_opt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opt = tmp_path / "opt"
    _fake_install(opt / "2025.3.1", "opt")
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.delenv("NCU_HOME", raising=False)
    monkeypatch.setattr(ncu_locate, "DEFAULT_INSTALL_GLOB_ROOT", opt)
    assert ncu_locate.ncu_executable() == opt / "2025.3.1" / "ncu"
    monkeypatch.setattr(ncu_locate, "DEFAULT_INSTALL_GLOB_ROOT", tmp_path / "none")
    assert ncu_locate.ncu_executable() is None
