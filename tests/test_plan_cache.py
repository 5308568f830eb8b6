"""Kept plans (`harness.profile.plan_cache`): a repeated `ncuh profile` starts ncu before the
project is checked, and the check beside it still stops a run the project no longer allows."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_profile_cpu import NCU, STUB, FakeNcu

from harness.cli import main
from harness.errors import ProjectError
from harness.profile import plan_cache
from harness.profile import run as lib

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the stand-in chain (so a test may edit it), an ncu and CuPy, a cache."""
    folder = tmp_path / "project"
    shutil.copytree(STUB.parent, folder)
    monkeypatch.setenv("NCUH_PROJECT", str(folder / "ncuh.toml"))
    monkeypatch.setenv("NCUH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(plan_cache.SWITCH_ENV, raising=False)
    monkeypatch.setattr("harness.ncu_locate.ncu_executable", lambda: NCU)
    monkeypatch.setattr(lib, "cupy_installed", lambda: True)
    return folder / "ncuh.toml"


class Recorder:
    """The fake ncu, and `plan` watched: in what order the two happened."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.events: list[str] = []
        self.fail_check: BaseException | None = None
        self.ncu = FakeNcu()
        real_plan = lib.plan

        def plan(request: Any, **kwargs: Any) -> Any:
            self.events.append("checked")
            if self.fail_check is not None:
                raise self.fail_check
            return real_plan(request, **kwargs)

        def ncu(argv: Any, env: Any = None, on_output: Any = None, *, on_start: Any = None):
            if "-o" in list(argv):
                self.events.append("ncu")
            return self.ncu(argv, env, on_output, on_start=on_start)

        monkeypatch.setattr(lib, "plan", plan)
        monkeypatch.setattr(lib, "run_command", ncu)
        monkeypatch.setattr(lib, "start_command", lib.in_threads(ncu))


def _profile(out: Path, *args: str) -> Any:
    return CliRunner().invoke(main, ["profile", "--variant", "naive", "--variant",
                                     "register_tiled", "--size", "256", "--out", str(out),
                                     *args], catch_exceptions=False)


def _kept(cache: Path) -> list[Path]:
    return sorted((cache / plan_cache.CACHE_FOLDER).glob("*.json"))


def _manifest(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "manifest.json").read_text())


def test_a_repeated_request_starts_ncu_before_the_project_is_checked(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = Recorder(monkeypatch)
    first = _profile(tmp_path / "a")
    assert first.exit_code == 0, first.output
    assert seen.events[:2] == ["checked", "ncu"]  # nothing kept yet: checked first
    assert len(_kept(tmp_path / "cache")) == 1
    seen.events.clear()
    second = _profile(tmp_path / "b")
    assert second.exit_code == 0, second.output
    assert seen.events == ["ncu", "checked", "ncu"]  # checked beside the first ncu, once
    one, two = (_manifest(next((tmp_path / name).iterdir())) for name in "ab")
    # the same run either way: entries, command lines (but for the run directory), project
    for key in ("variants", "sizes", "project"):
        assert one[key] == two[key]
    assert [e["params"] for e in one["entries"]] == [e["params"] for e in two["entries"]]
    assert two["entries"][1]["params"] == {"BM": 64, "TM": 8}
    lines = [[arg.split("/runs/")[0] for arg in argv] for argv in two["ncu"]["command_lines"]]
    assert len(lines) == 2 and lines[0][-12:] == one["ncu"]["command_lines"][0][-12:]


def test_a_kept_plan_whose_project_no_longer_checks_stops_ncu_and_says_why(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = Recorder(monkeypatch)
    assert _profile(tmp_path / "a").exit_code == 0
    seen.events.clear()
    # the file is the same, but its module no longer imports (as a user's edit would do)
    seen.fail_check = ProjectError(f"{project}: [project] module: 'stub_project' failed")
    result = _profile(tmp_path / "b")
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("ncuh: error:")]
    assert errors == [f"ncuh: error: {project}: [project] module: 'stub_project' failed"]
    assert seen.events == ["ncu", "checked"]  # that ncu stopped at the check, no other began
    assert not (tmp_path / "b").exists() or not list((tmp_path / "b").iterdir())
    assert _kept(tmp_path / "cache") == []  # and the plan is no longer trusted


def test_a_kept_plan_the_project_no_longer_gives_starts_the_run_again(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = Recorder(monkeypatch)
    assert _profile(tmp_path / "a").exit_code == 0
    (kept,) = _kept(tmp_path / "cache")
    record = json.loads(kept.read_text())
    record["targets"][0]["kernel_filter"]["kernel"] = "regex:^some_other_kernel$"
    kept.write_text(json.dumps(record))
    seen.events.clear()
    result = _profile(tmp_path / "b")
    assert result.exit_code == 0, result.output
    # the first ncu ran on the stale plan until the check; the run began again, checked first
    assert seen.events == ["ncu", "checked", "checked", "ncu", "ncu"]
    (run_dir,) = (tmp_path / "b").iterdir()
    filters = [argv[argv.index("-k") + 1] for argv in _manifest(run_dir)["ncu"]["command_lines"]]
    assert filters == ["regex:^sgemm_naive$", "regex:^sgemm_register_tiled$"]
    (again,) = _kept(tmp_path / "cache")
    assert json.loads(again.read_text())["targets"][0]["kernel_filter"]["kernel"] == (
        "regex:^sgemm_naive$")


@pytest.mark.parametrize("garbage", ["", "{", '{"targets": [{"label": 1}]}', '{"targets": []}'])
def test_a_kept_plan_that_cannot_be_read_is_a_miss(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, garbage: str
) -> None:
    seen = Recorder(monkeypatch)
    assert _profile(tmp_path / "a").exit_code == 0
    (kept,) = _kept(tmp_path / "cache")
    kept.write_text(garbage)
    seen.events.clear()
    assert _profile(tmp_path / "b").exit_code == 0
    assert seen.events == ["checked", "ncu", "ncu"]


def test_no_plan_is_kept_or_read_with_the_switch_off(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = Recorder(monkeypatch)
    monkeypatch.setenv(plan_cache.SWITCH_ENV, "off")
    assert _profile(tmp_path / "a").exit_code == 0
    assert _profile(tmp_path / "b").exit_code == 0
    assert seen.events == ["checked", "ncu", "ncu"] * 2
    assert _kept(tmp_path / "cache") == []


def test_a_plan_that_failed_its_check_is_never_kept(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Recorder(monkeypatch)
    result = _profile(tmp_path / "a", "--size", "100")  # register_tiled needs multiples of 64
    assert result.exit_code == 2
    assert _kept(tmp_path / "cache") == []


def test_the_key_follows_the_project_file_and_what_was_asked(project: Path) -> None:
    request = lib.ProfileRequest(variants=("naive",), sizes=("256",))
    key = plan_cache.plan_key(request, "nvtx", project)
    assert key == plan_cache.plan_key(lib.ProfileRequest(variants=("naive",), sizes=("256",)),
                                      "nvtx", project)
    others = [
        plan_cache.plan_key(lib.ProfileRequest(variants=("naive",), sizes=("512",)), "nvtx",
                            project),
        plan_cache.plan_key(lib.ProfileRequest(variants=("register_tiled",), sizes=("256",)),
                            "nvtx", project),
        plan_cache.plan_key(lib.ProfileRequest(variants=("naive",), sizes=("256",), warmup=1),
                            "nvtx", project),
        plan_cache.plan_key(lib.ProfileRequest(variants=("naive",), sizes=("256",),
                                               params={"BM": 32}), "nvtx", project),
        plan_cache.plan_key(request, "kernel", project),
    ]
    assert key not in others and len(set(others)) == len(others)
    # where ncu writes and what it collects are not part of the plan
    elsewhere = lib.ProfileRequest(variants=("naive",), sizes=("256",), out=Path("/x"))
    assert plan_cache.plan_key(elsewhere, "nvtx", project) == key
    project.write_text(project.read_text() + "\n# a comment changes the bytes\n")
    assert plan_cache.plan_key(request, "nvtx", project) != key
    assert plan_cache.plan_key(request, "nvtx", project.parent / "missing.toml") is None


def test_only_the_newest_plans_are_kept(project: Path, tmp_path: Path) -> None:
    target = lib.Target(label="naive_256", variant="naive", size=(256, 256, 256), params={},
                        program=("python",), kernel_filter=lib.KernelFilter(kernel="k"))
    for number in range(plan_cache.KEEP + 3):
        plan_cache.store(f"{number:032d}", (target,))
    kept = _kept(tmp_path / "cache")
    assert len(kept) == plan_cache.KEEP
    assert plan_cache.load(f"{plan_cache.KEEP + 2:032d}") == (target,)


def test_profiles_command_module_loads_no_schema_before_ncu() -> None:
    """What `ncuh profile` imports before it can start ncu on a kept plan: not pydantic."""
    code = ("import sys, harness.cli, harness.commands.profile, harness.profile.run, "
            "harness.profile.plan_cache, harness.project.locate; "
            "print(sorted(m for m in sys.modules if m.startswith(('pydantic', "
            "'harness.project.loader', 'harness.project.schema'))))")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               cwd=ROOT, check=True)
    assert completed.stdout.strip() == "[]"
