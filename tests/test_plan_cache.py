"""Kept plans (`harness.profile.plan_cache`): a repeated `ncuh profile` starts ncu before the
project is checked, and the check beside it still stops a run the project no longer allows."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
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
    monkeypatch.setattr("harness.util.ncu_executable", lambda: NCU)
    monkeypatch.setattr(lib, "cupy_installed", lambda: True)
    return folder / "ncuh.toml"


class Recorder:
    """The fake ncu, and `plan` watched: in what order the two happened."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, fake_ncu: bool = True) -> None:
        self.events: list[str] = []
        self.on_main_thread: list[bool] = []
        self.fail_check: BaseException | None = None
        self.ncu = FakeNcu()
        real_plan = lib.plan

        def plan(request: Any, **kwargs: Any) -> Any:
            self.events.append("checked")
            self.on_main_thread.append(threading.current_thread() is threading.main_thread())
            if self.fail_check is not None:
                raise self.fail_check
            return real_plan(request, **kwargs)

        monkeypatch.setattr(lib, "plan", plan)
        if not fake_ncu:  # real child processes (the stand-ins): noted as they are started
            real_run = lib.run_command

            def noted(argv: Any, *args: Any, **kwargs: Any) -> Any:
                if "-o" in list(argv):
                    self.events.append("ncu")
                return real_run(argv, *args, **kwargs)

            monkeypatch.setattr(lib, "run_command", noted)
            return

        def ncu(argv: Any, env: Any = None, on_output: Any = None, *, on_start: Any = None,
                on_output_at: Any = None):
            if "-o" in list(argv):
                self.events.append("ncu")
            return self.ncu(argv, env, on_output, on_start=on_start, on_output_at=on_output_at)

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
    # one line and nothing else: the progress of a run is shown once its plan held
    assert result.stderr.splitlines() == [
        f"ncuh: error: {project}: [project] module: 'stub_project' failed"]
    assert seen.events == ["ncu", "checked"]  # that ncu stopped at the check, no other began
    assert not (tmp_path / "b").exists()  # not even the --out folder the run made
    assert _kept(tmp_path / "cache") == []  # and the plan is no longer trusted


def test_an_interrupted_check_keeps_the_plan(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = Recorder(monkeypatch)
    assert _profile(tmp_path / "a").exit_code == 0
    seen.fail_check = KeyboardInterrupt()
    result = _profile(tmp_path / "b")
    assert result.exit_code == 130 and result.stderr == "ncuh: interrupted\n"  # Ctrl-C
    assert not (tmp_path / "b").exists()
    assert len(_kept(tmp_path / "cache")) == 1  # nothing said the plan was wrong


def test_a_kept_plan_the_project_no_longer_gives_starts_the_run_again(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = Recorder(monkeypatch)
    assert _profile(tmp_path / "a").exit_code == 0
    (kept,) = _kept(tmp_path / "cache")
    record = json.loads(kept.read_text())
    assert record["targets"][0] == {"label": "naive_256", "variant": "naive",
                                    "size": [256, 256, 256], "params": {},
                                    "kernel": "regex:^sgemm_naive$"}
    record["targets"][0]["kernel"] = "regex:^some_other_kernel$"
    kept.write_text(json.dumps(record))
    seen.events.clear()
    result = _profile(tmp_path / "b")
    assert result.exit_code == 0, result.output
    # the first ncu ran on the stale plan until the check; the run began again on the plan
    # the check made, and said each target once
    assert seen.events == ["ncu", "checked", "ncu", "ncu"]
    assert [line for line in result.stderr.splitlines() if line.endswith(": profiling")] == [
        "[1/2] naive_256: profiling", "[2/2] register_tiled_256: profiling"]
    (run_dir,) = (tmp_path / "b").iterdir()
    filters = [argv[argv.index("-k") + 1] for argv in _manifest(run_dir)["ncu"]["command_lines"]]
    assert filters == ["regex:^sgemm_naive$", "regex:^sgemm_register_tiled$"]
    (again,) = _kept(tmp_path / "cache")
    assert json.loads(again.read_text())["targets"][0]["kernel"] == "regex:^sgemm_naive$"


def test_a_kept_file_never_names_a_command_to_run(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kept plan is data (names, sizes, a kernel filter): a command written into one, by
    whoever can write the cache, makes it no plan at all."""
    seen = Recorder(monkeypatch)
    assert _profile(tmp_path / "a").exit_code == 0
    (kept,) = _kept(tmp_path / "cache")
    record = json.loads(kept.read_text())
    witness = tmp_path / "ran"
    record["targets"][0]["program"] = ["/bin/sh", "-c", f"touch {witness}"]
    kept.write_text(json.dumps(record))
    seen.events.clear()
    assert _profile(tmp_path / "b").exit_code == 0
    assert seen.events == ["checked", "ncu", "ncu"]  # a miss: checked first, as always
    assert not witness.exists()
    assert all(argv[argv.index("-f") + 1:][:3] == [sys.executable, "-m", "harness.gpu.runner"]
               for argv in seen.ncu.profiled)


@pytest.mark.parametrize("garbage", [
    "", "{", '{"targets": [{"label": 1}]}', '{"version": 2, "targets": []}',
    '{"version": 1, "targets": [{"label": "naive_256", "variant": "naive", "size": [256, 256, '
    '256], "params": {}, "kernel": "k"}]}',  # another format version
    '{"version": 2, "targets": [{"label": "naive_256", "variant": "naive", "size": [0], '
    '"params": {}, "kernel": "k"}]}',
])
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


@pytest.mark.parametrize("switch", ["off", "OFF", "0", "no", "false"])
def test_no_plan_is_kept_or_read_with_the_switch_off(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, switch: str
) -> None:
    seen = Recorder(monkeypatch)
    monkeypatch.setenv(plan_cache.SWITCH_ENV, switch)
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
        plan_cache.plan_key(lib.ProfileRequest(variants=("naive",), sizes=("256",),
                                               bench=True), "nvtx", project),
        plan_cache.plan_key(lib.ProfileRequest(variants=("naive",), sizes=("256",), bench=True,
                                               bench_sizes=("1x2",)), "nvtx", project),
    ]
    assert key not in others and len(set(others)) == len(others)
    # where ncu writes and what it collects are not part of the plan
    elsewhere = lib.ProfileRequest(variants=("naive",), sizes=("256",), out=Path("/x"))
    assert plan_cache.plan_key(elsewhere, "nvtx", project) == key
    project.write_text(project.read_text() + "\n# a comment changes the bytes\n")
    assert plan_cache.plan_key(request, "nvtx", project) != key
    assert plan_cache.plan_key(request, "nvtx", project.parent / "missing.toml") is None


def test_only_the_newest_plans_are_kept(project: Path, tmp_path: Path) -> None:
    request = lib.ProfileRequest(variants=("naive",), sizes=("256",))
    (target,) = lib.plan(request, capture="nvtx").targets
    for number in range(plan_cache.KEEP + 3):
        plan_cache.store(f"{number:032d}", (target,))
    kept = _kept(tmp_path / "cache")
    assert len(kept) == plan_cache.KEEP
    # what comes back is the target as planned, its command line built again
    assert plan_cache.load(f"{plan_cache.KEEP + 2:032d}", request, "nvtx",
                           project.resolve()) == (target,)


def test_with_several_gpus_the_check_runs_on_the_main_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project's module may do what only the main thread may (signal handlers): the check
    beside the first ncu runs there, also while the GPUs' slots run on threads."""
    from standin_support import use_standins

    use_standins(monkeypatch, tmp_path)
    monkeypatch.setenv("NCUH_FAKE_NCU_SECONDS", "0.3")
    monkeypatch.delenv(plan_cache.SWITCH_ENV, raising=False)
    seen = Recorder(monkeypatch, fake_ncu=False)
    args = ["profile", "--variant", "naive", "--variant", "coalesced", "--size", "256",
            "--gpus", "all", "--out", str(tmp_path / "runs")]
    for _ in range(2):
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
    # the first run checked before its ncu started; the second found the plan kept and
    # checked once, beside the ncu of both GPUs, on the main thread both times
    assert seen.events[:3] == ["checked", "ncu", "ncu"]
    assert sorted(seen.events[3:]) == ["checked", "ncu", "ncu"] and seen.events[3] == "ncu"
    assert seen.on_main_thread == [True, True]
    kept_run = json.loads((Path(result.stdout.strip().splitlines()[-1]) / "manifest.json")
                          .read_text())
    assert {e["gpu"]["index"] for e in kept_run["entries"]} == {0, 1}
    assert kept_run["project"]["name"]


def test_profiles_command_module_loads_no_schema_before_ncu() -> None:
    """What `ncuh profile` imports before it can start ncu on a kept plan: not pydantic."""
    code = ("import sys, harness.cli, harness.commands.profile, harness.profile.run, "
            "harness.profile.plan_cache, harness.project.locate; "
            "print(sorted(m for m in sys.modules if m.startswith(('pydantic', "
            "'harness.project.loader', 'harness.project.schema'))))")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               cwd=ROOT, check=True)
    assert completed.stdout.strip() == "[]"


def test_a_plan_cache_path_taken_by_a_folder_is_no_error(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unwritable cache is documented as no error: the run goes on, checked first."""
    seen = Recorder(monkeypatch)
    assert _profile(tmp_path / "a").exit_code == 0
    (kept,) = _kept(tmp_path / "cache")
    kept.unlink()
    kept.mkdir()
    seen.events.clear()
    result = _profile(tmp_path / "b")
    assert result.exit_code == 0, result.output
    assert seen.events == ["checked", "ncu", "ncu"]
    assert kept.is_dir() and not list(kept.iterdir())
