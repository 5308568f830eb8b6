"""The wheel: built from the checkout with no warning, it carries every package of `harness/`,
the bundled projects, the starter, the include headers and the templates."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tracked(*folders: str) -> list[str]:
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", *folders],
                            capture_output=True, text=True, check=False).stdout.split()
    if not listed:
        pytest.skip("not a git checkout")
    return listed


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> tuple[set[str], str]:
    """The names in the wheel `pip wheel .` builds from this checkout, and what the build
    printed (pip's -v shows the build backend's own output)."""
    pytest.importorskip("hatchling")
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation",
         "--no-index", "-w", str(out), str(ROOT)],
        capture_output=True, text=True, check=False)
    assert build.returncode == 0, build.stderr
    [path] = out.glob("ncuh-*.whl")
    with zipfile.ZipFile(path) as archive:
        return set(archive.namelist()), build.stdout + build.stderr


def test_the_wheel_builds_without_a_warning(wheel: tuple[set[str], str]) -> None:
    _, printed = wheel
    assert "warn" not in printed.lower(), printed


def test_the_wheel_carries_the_bundled_projects_headers_and_templates(
        wheel: tuple[set[str], str]) -> None:
    names, _ = wheel
    # kernels/ and templates/ are installed inside the package
    wanted = {f"harness/{name}" for name in _tracked("kernels", "templates")}
    wanted |= set(_tracked("harness"))
    assert wanted - names == set()
    for name in ("harness/kernels/sgemm/ncuh.toml", "harness/kernels/reduction/notes/RESULTS.md",
                 "harness/project/starter/notes/naive.md", "harness/gpu/include/stdint.h",
                 "harness/templates/page.html.j2", "harness/diff/default_thresholds.toml"):
        assert name in names
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)


def test_the_wheel_holds_nothing_from_outside_the_package(wheel: tuple[set[str], str]) -> None:
    names, _ = wheel
    outside = {name for name in names if not name.startswith("harness/")
               and not re.match(r"ncuh-[^/]+\.dist-info/", name)}
    assert outside == set()
    assert not any("__pycache__" in name or name.endswith(".pyc") for name in names)
