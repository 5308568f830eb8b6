"""Project files: loading the bundled SGEMM project and a second small one, the size parser,
work-model expressions, discovery, `ncuh init`, and every bad project file as one line."""

from __future__ import annotations

import ast
import inspect
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.errors import BadSizeError
from harness.project import Launch, Size, find_project, load_project
from harness.project.expr import compile_expression, evaluate
from harness.project.locate import default_project_path
from harness.project.size import parse_size, parse_sizes, parse_value

ROOT = Path(__file__).resolve().parent.parent
SCALE = Path(__file__).parent / "projects" / "scale"


# --- the two projects ---------------------------------------------------------------------------


def test_the_bundled_sgemm_project_loads_through_the_common_path() -> None:
    project = load_project(default_project_path())
    assert project.name == "sgemm" and project.dims == ("M", "N", "K")
    assert project.path == ROOT / "kernels" / "sgemm" / "ncuh.toml"
    assert project.names[0] == "naive" and project.names[-1] == "autotuned"
    assert len(project.names) == 11
    assert project.reference.name == "cuBLAS" and project.reference.key == "cublas"
    assert project.outputs == ("C",) and project.poison == ()  # C is read (beta != 0)
    size = project.parse_size("1024x2048x512")
    assert project.flops(size) == 2 * 1024 * 2048 * 512
    assert project.bytes(size) == 4 * (1024 * 512 + 512 * 2048 + 2 * 1024 * 2048)
    assert project.tolerance_at(size) == 1e-4
    assert project.profile_size == (4096, 4096, 4096)
    assert [str(s) for s in project.default_sizes][-1] == "4096x4096x4096"
    autotuned = project.variant("autotuned")
    assert autotuned.source == "multistage.cu" and autotuned.tunable
    assert autotuned.capture_filter == "regex:^sgemm_multistage$"


def test_a_second_project_with_a_python_launcher_and_an_nvrtc_source() -> None:
    project = load_project(SCALE)
    assert project.name == "scale-test" and project.dims == ("n",)
    nvrtc, raw = project.variants
    assert nvrtc.source == "scale.cu" and nvrtc.call is None and nvrtc.launch is not None
    assert nvrtc.strategy.startswith("One thread per element")  # read from notes/nvrtc.md
    assert nvrtc.title == "NVRTC Source" and nvrtc.previous is None
    assert raw.call is not None and raw.source is None and raw.previous == "nvrtc"
    assert raw.capture_filter == "regex:^scale_raw$"
    assert raw.strategy.startswith("Last time, NVRTC compiled")
    assert project.profile_size == (65536,) and project.default_sizes == ((1000,), (65536,))
    assert project.compare == "max_abs" and project.tolerance_at(project.profile_size) == 1e-5
    assert project.reference.name == "CuPy multiply" and project.reference.key == "cupy_multiply"
    (copy,) = project.limits
    assert copy.name == "device copy" and copy.bytes(project.parse_size("1000")) == 8000
    assert project.flops(project.parse_size("2^10")) == 1024
    # launch geometry and parameter checks run without a GPU
    size = project.parse_size("1000")
    launch = nvrtc.launch(size, {"BLOCK": 128}, {"s": 3.0, "x": None, "out": None})
    assert isinstance(launch, Launch) and launch.grid == (8,) and launch.block == (128,)
    assert project.problems(nvrtc, {"BLOCK": 100}, size) == [
        "BLOCK=100 must be a multiple of 32 between 32 and 1024"]
    assert project.problems(nvrtc, {"BLOCK": 96}, size) == []
    assert project.problems(nvrtc, {"UNROLL": 2}, size) == [
        "unknown parameter 'UNROLL' for nvrtc (takes BLOCK)"]


def test_launch_accepts_a_plain_dict_with_the_same_keys() -> None:
    launch = Launch.coerce({"grid": [4], "block": [32], "args": [1, 2], "shared_mem": 64})
    assert launch == Launch(grid=(4,), block=(32,), args=(1, 2), shared_mem=64)


# --- sizes ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "value"), [
    ("4096", 4096), ("2^26", 2**26), ("2**20", 2**20), ("1<<20", 2**20), ("1e6", 10**6),
    ("1.5e3", 1500), (" 7 ", 7),
])
def test_one_dimension_may_be_written_several_ways(text: str, value: int) -> None:
    assert parse_value(text) == value


@pytest.mark.parametrize("text", ["0", "-4", "1.5", "1e-3", "2^", "x", "1.5e0", "2^100", "nan"])
def test_values_that_are_not_whole_positive_numbers_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_value(text)


def test_the_size_parser_is_the_same_for_every_number_of_dims() -> None:
    assert parse_size("4096", ("M", "N", "K")) == (4096, 4096, 4096)
    assert parse_size("1024x2048x512", ("M", "N", "K")) == (1024, 2048, 512)
    assert parse_size("1024,2048,512", ("M", "N", "K")) == (1024, 2048, 512)
    assert parse_size("2^26", ("n",)) == (2**26,)
    assert parse_sizes("2^10, 1<<12,2^10", ("n",)) == [(1024,), (4096,)]
    with pytest.raises(BadSizeError, match="2 values for 3 dimensions"):
        parse_size("64x64", ("M", "N", "K"))
    with pytest.raises(BadSizeError, match="2 values for 1 dimensions"):
        parse_size("64x64", ("n",))


def test_size_reads_like_a_mapping_and_a_shape() -> None:
    size = Size(("M", "N", "K"), (4, 8, 2))
    assert (size.M, size["N"], size[2]) == (4, 8, 2)
    m, n, k = size
    assert (m, n, k) == (4, 8, 2) and tuple(size) == (4, 8, 2)
    assert dict(size) == {"M": 4, "N": 8, "K": 2} and "K" in size and len(size) == 3
    assert str(size) == "4x8x2" and size.label == "4x8x2"
    assert Size(("n",), (1024,)).label == "1024" and Size(("M", "N"), (8, 8)).label == "8"
    assert hash(size) == hash(Size(("M", "N", "K"), (4, 8, 2)))
    with pytest.raises(AttributeError):
        size.M = 5  # type: ignore[misc]
    with pytest.raises(AttributeError):
        _ = size.Q


def test_a_size_equal_to_a_tuple_hashes_like_it() -> None:
    size = Size(("M", "N", "K"), (4, 8, 2))
    assert size == (4, 8, 2) and hash(size) == hash((4, 8, 2))
    assert {size: "a"}[(4, 8, 2)] == "a" and (4, 8, 2) in {size}
    assert size != Size(("A", "B", "C"), (4, 8, 2))  # other dims: equal values, not equal


@pytest.mark.parametrize("name", ["items", "keys", "values", "label", "dims", "as_dict"])
def test_a_dimension_named_like_a_size_method_is_refused(tmp_path: Path, name: str,
                                                         golden) -> None:
    text = SCALE_TEXT.replace('dims = ["n"]', f'dims = ["{name}"]').replace(
        'flops = "n"', f'flops = "{name}"').replace('"8*n"', f'"8*{name}"')
    path = _project_with(tmp_path, text)
    line = _one_error_line(tmp_path, path)
    assert f"[problem]: key 'dims': {name!r} " in line
    golden(f"dims_named_{name}", line.replace(str(path), "PROJECT"))


def test_expressions_cannot_be_made_to_run_for_ever() -> None:
    tree = compile_expression("n**n**n", ("n",))
    with pytest.raises(OverflowError, match="too large"):
        evaluate(tree, {"n": 1000})
    assert evaluate(compile_expression("2**n", ("n",)), {"n": 4096}) == 2**4096  # the edge
    with pytest.raises(OverflowError):
        evaluate(compile_expression("2**n", ("n",)), {"n": 4097})


# --- work-model expressions -------------------------------------------------------------------


def test_expressions_are_arithmetic_on_the_dims_only() -> None:
    tree = compile_expression("4*(M*K + K*N + 2*M*N) // 2 - -1 + 2**3 / 4", ("M", "N", "K"))
    assert evaluate(tree, {"M": 2, "N": 3, "K": 5}) == 4 * (10 + 15 + 12) // 2 + 1 + 2.0
    for bad in ("__import__('os')", "M.real", "[M]", "M if N else K", "open(M)", "Q*2",
                "lambda: 1", "M; N", "'a'*M"):
        with pytest.raises(ValueError):
            compile_expression(bad, ("M", "N", "K"))


# --- discovery --------------------------------------------------------------------------------


def test_discovery_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NCUH_PROJECT", raising=False)
    nested = tmp_path / "repo" / "src" / "deep"
    nested.mkdir(parents=True)
    # nothing around: the bundled project
    assert find_project(cwd=nested) == default_project_path()
    # a pyproject.toml without [tool.ncuh] is not a project: the search goes on upwards
    (tmp_path / "repo" / "src" / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    shutil.copytree(SCALE, tmp_path / "repo" / "proj")
    (tmp_path / "repo" / "ncuh.toml").write_text((SCALE / "ncuh.toml").read_text())
    assert find_project(cwd=nested) == tmp_path / "repo" / "ncuh.toml"
    # [tool.ncuh] in a pyproject.toml nearer the cwd wins
    (tmp_path / "repo" / "src" / "pyproject.toml").write_text(
        "[project]\nname = 'x'\n\n[tool.ncuh.project]\nname = 'y'\n")
    assert find_project(cwd=nested) == tmp_path / "repo" / "src" / "pyproject.toml"
    # $NCUH_PROJECT beats the search; --project beats both (a folder or a file)
    monkeypatch.setenv("NCUH_PROJECT", str(tmp_path / "repo" / "proj"))
    assert find_project(cwd=nested) == tmp_path / "repo" / "proj" / "ncuh.toml"
    assert find_project(SCALE / "ncuh.toml", cwd=nested) == SCALE / "ncuh.toml"


def test_a_project_in_pyproject_toml(tmp_path: Path) -> None:
    shutil.copytree(SCALE, tmp_path / "p")
    text = (tmp_path / "p" / "ncuh.toml").read_text()
    text = re.sub(r"^\[(\[?)", r"[\1tool.ncuh.", text, flags=re.MULTILINE)
    (tmp_path / "p" / "ncuh.toml").unlink()
    (tmp_path / "p" / "pyproject.toml").write_text("[project]\nname = 'mine'\n\n" + text)
    project = load_project(find_project(tmp_path / "p"))
    assert project.name == "scale-test" and project.names == ["nvrtc", "rawkernel"]


def test_a_pyproject_with_tool_ncuh_and_a_syntax_error_is_reported_not_skipped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NCUH_PROJECT", raising=False)
    (tmp_path / "pyproject.toml").write_text(
        "[project]\nname = 'mine'\n\n [ tool.ncuh.project ]\nname = 'broken\n")
    monkeypatch.chdir(tmp_path)
    assert find_project() == tmp_path / "pyproject.toml"
    result = CliRunner().invoke(main, ["list"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith(f"ncuh: error: {tmp_path / 'pyproject.toml'}: TOML syntax "
                                    "error: ")
    # a broken pyproject.toml that does not mean ncuh is still not ours
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'broken\n")
    assert find_project() == default_project_path()


def test_errors_in_a_pyproject_name_the_tables_under_tool_ncuh(tmp_path: Path) -> None:
    shutil.copytree(SCALE, tmp_path / "p")
    text = (tmp_path / "p" / "ncuh.toml").read_text()
    text = re.sub(r"^\[(\[?)", r"[\1tool.ncuh.", text, flags=re.MULTILINE)
    (tmp_path / "p" / "ncuh.toml").unlink()
    path = tmp_path / "p" / "pyproject.toml"
    cases = {
        ("name = \"rawkernel\"", "name = \"nvrtc\""):
            "[[tool.ncuh.variant]] #2: key 'name': duplicate name 'nvrtc'",
        ('inputs = "make_inputs"\n', ""): "missing key 'tool.ncuh.problem.inputs'",
        ('compare = "max_abs"', 'compare = "max_abs"\ncolour = 1'):
            "[tool.ncuh.problem] unknown key 'colour'",
        ('flops = "n"', 'flops = "n/0"'): "key 'tool.ncuh.problem.flops': at size 1000",
    }
    for (old, new), expected in cases.items():
        path.write_text(text.replace(old, new, 1))
        assert f"ncuh: error: {path}: {expected}" in _one_error_line(tmp_path, path)


def test_the_group_option_and_the_env_choose_the_project(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NCUH_PROJECT", raising=False)
    result = CliRunner().invoke(main, ["--project", str(SCALE), "list"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[1].split()[1] == "nvrtc"
    monkeypatch.setenv("NCUH_PROJECT", str(SCALE))
    result = CliRunner().invoke(main, ["list"])
    assert "project: scale-test" in result.output
    # the command's own --project wins over the group's
    result = CliRunner().invoke(main, ["--project", str(tmp_path), "list", "--project",
                                       str(default_project_path())])
    assert result.exit_code == 0 and "project: sgemm" in result.output


# --- ncuh init ----------------------------------------------------------------------------------


def test_init_writes_a_project_that_list_reads_from_anywhere(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    monkeypatch.delenv("NCUH_PROJECT", raising=False)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["init", "mine"])
    assert result.exit_code == 0, result.output
    assert sorted(p.relative_to(tmp_path / "mine").as_posix()
                  for p in (tmp_path / "mine").rglob("*") if p.is_file()) == [
        "ncuh.toml", "notes/naive.md", "notes/vectorized.md", "pytest.ini", "saxpy.cu",
        "saxpy_project.py", "test_saxpy.py"]
    (tmp_path / "mine" / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "mine" / "sub")  # found from a folder below
    result = CliRunner().invoke(main, ["list", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert '"project": "saxpy"' in result.output and '"name": "vectorized"' in result.output
    project = load_project(tmp_path / "mine" / "ncuh.toml")
    assert project.reference.name == "CuPy" and [lim.name for lim in project.limits] == [
        "device copy"]
    assert project.variant("vectorized").strategy.startswith("Last time")
    # its test file is a test file pytest can collect
    ast.parse((tmp_path / "mine" / "test_saxpy.py").read_text())


def test_the_init_projects_tests_run_under_its_own_pytest_settings(tmp_path: Path) -> None:
    """A project made inside a repository (the README's steps, in this checkout) runs its tests
    with pytest's defaults, not the pytest settings of the repository around it; without a
    GPU each skips with its reason."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\naddopts = "--an-option-of-the-repository-around"\n')
    assert CliRunner().invoke(main, ["init", str(tmp_path / "mine")]).exit_code == 0
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:randomly", "-rs", "test_saxpy.py"],
                          cwd=tmp_path / "mine", capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT),
                               "CUDA_VISIBLE_DEVICES": ""})  # skipped on a GPU host too
    assert done.returncode == 0, done.stdout + done.stderr
    assert "11 skipped" in done.stdout


def test_init_refuses_a_non_empty_directory(tmp_path: Path, golden) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    result = CliRunner().invoke(main, ["init", str(tmp_path)])
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1
    golden("init_not_empty", result.stderr.replace(str(tmp_path), "FOLDER"))
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]
    (tmp_path / "file").write_text("x")
    result = CliRunner().invoke(main, ["init", str(tmp_path / "file")])
    assert result.exit_code == 2 and "not a directory" in result.stderr


# --- bad project files --------------------------------------------------------------------------

SCALE_TEXT = (SCALE / "ncuh.toml").read_text()


def _edit(old: str, new: str) -> str:
    assert old in SCALE_TEXT, old
    return SCALE_TEXT.replace(old, new, 1)


BAD_FILES = {
    "toml syntax": (_edit('name = "scale-test"', 'name = "scale-test'),
                    "TOML syntax error", "line 5"),
    "empty": ("", "empty file", "[project]"),
    "blank": ("  \n\n", "empty file", "[project]"),
    "unknown key": (_edit('compare = "max_abs"', 'compare = "max_abs"\ncolour = "red"'),
                    "[problem] unknown key 'colour'", "expected one of: dims,"),
    "unknown variant key": (_edit('kernel = "scale_kernel"', 'kernal = "scale_kernel"'),
                            "[[variant]] #1 ('nvrtc') unknown key 'kernal'", "kernel"),
    "bad arch": (_edit('kernel = "scale_kernel"', 'kernel = "scale_kernel"\narch = "sm90a"'),
                 "[[variant]] #1 ('nvrtc'): key 'arch': expected a name matching ^sm_",
                 "got 'sm90a'"),
    "arch with call": (_edit('call = "launch_rawkernel"',
                             'call = "launch_rawkernel"\narch = "sm_90a"'),
                       "arch= go with source=, not with call=", "[[variant]] #2"),
    "missing key": (_edit('inputs = "make_inputs"\n', ""), "missing key 'problem.inputs'",
                    "problem.inputs"),
    "wrong type": (_edit("params = { BLOCK = 128 }", 'params = { BLOCK = "128" }'),
                   "key 'params.BLOCK'", "expected an integer"),
    "bad compare": (_edit('compare = "max_abs"', 'compare = "l2"'), "key 'problem.compare'",
                    "expected one of"),
    "bad tolerance": (_edit('tolerance = "tolerance_for"', 'tolerance = "1e-3x"'),
                      "key 'problem.tolerance': expected a number", "or a callable name"),
    "negative tolerance": (_edit('tolerance = "tolerance_for"', "tolerance = -1"),
                           "key 'problem.tolerance': expected a number >= 0", "got -1"),
    "empty dims": (_edit('dims = ["n"]', "dims = []"), "key 'problem.dims'",
                   "expected at least 1 item"),
    "missing module": (_edit('module = "scale_project"', 'module = "no_such_module"'),
                       "module 'no_such_module' not found", "No module named"),
    "missing callable": (_edit('call = "cupy_scale"', 'call = "cupy_scalar"'),
                         "module 'scale_project' has no callable 'cupy_scalar'",
                         "[reference]: key 'call'"),
    "missing previous": (_edit('call = "launch_rawkernel"',
                               'call = "launch_rawkernel"\nprevious = "nvrtcc"'),
                         "key 'previous': 'nvrtcc' is not a variant", "expected one of: nvrtc"),
    "cycle": (_edit('title = "NVRTC Source"', 'title = "NVRTC Source"\nprevious = "rawkernel"'),
              "key 'previous': a cycle (nvrtc -> rawkernel -> nvrtc)", "[[variant]] #1"),
    "duplicate name": (_edit('name = "rawkernel"', 'name = "nvrtc"'),
                       "[[variant]] #2: key 'name': duplicate name 'nvrtc'", "duplicate"),
    "invalid params": (_edit("params = { BLOCK = 128 }", "params = { BLOCK = 100 }"),
                       "key 'params': invalid defaults: BLOCK=100 must be a multiple of 32",
                       "[[variant]] #1 ('nvrtc')"),
    "bad default size": (_edit('default_sizes = ["1000", "2^16"]',
                               'default_sizes = ["1000", "2^16x2"]'),
                         "key 'problem.default_sizes': bad size '2^16x2'", "2 values for 1"),
    "bad profile size": (_edit('profile_size = "1<<16"', 'profile_size = "1.5e3.2"'),
                         "key 'problem.profile_size': bad size '1.5e3.2'", "whole number"),
    "zero size": (_edit('profile_size = "1<<16"', 'profile_size = "0"'),
                  "key 'problem.profile_size': bad size '0'", "between 1"),
    "bad expression": (_edit('flops = "n"', 'flops = "n*__import__(\'os\')"'),
                       "key 'problem.flops'", "only numbers, dimension names"),
    "unknown dim in expression": (_edit('flops = "n"', 'flops = "2*m"'),
                                  "key 'problem.flops'", "'m'"),
    "flops divides by zero": (_edit('flops = "n"', 'flops = "n/0"'),
                              "key 'problem.flops': at size 1000: ZeroDivisionError", "zero"),
    "flops would never end": (_edit('flops = "n"', 'flops = "n**n**n"'),
                              "key 'problem.flops': at size 1000: OverflowError: 1000**1000 "
                              "is too large", "2^4096"),
    "flops overflows a float": (_edit('flops = "n"', 'flops = "2.0**n"'),
                                "key 'problem.flops': at size 65536: OverflowError", "range"),
    "bytes negative": (_edit('bytes = "8*n"', 'bytes = "0-8*n"'),
                       "key 'problem.bytes': at size 1000: expected a finite number >= 0",
                       "-8000.0"),
    "limit bytes at the profile size": (_edit('bytes = "8*n"\n\n[[variant]]',
                                              'bytes = "8*n + n//(65536-n)"\n\n[[variant]]'),
                                        "[[limit]] #1 ('device copy'): key 'bytes': at size "
                                        "65536: ZeroDivisionError", "by zero"),
    "project named ..": (_edit('name = "scale-test"', 'name = ".."'),
                         "key 'project.name': expected a name matching", "got '..'"),
    "project named .hidden": (_edit('name = "scale-test"', 'name = ".hidden"'),
                              "key 'project.name'", "[A-Za-z0-9_]"),
    "missing source": (_edit('source = "scale.cu"', 'source = "scal.cu"'),
                       "key 'source': file 'scal.cu' not found", "[[variant]] #1"),
    "missing strategy file": (_edit('strategy = "notes/nvrtc.md"', 'strategy = "notes/x.md"'),
                              "key 'strategy': file 'notes/x.md' not found", "inline Markdown"),
    "both launchers": (_edit('call = "launch_rawkernel"',
                             'call = "launch_rawkernel"\nsource = "scale.cu"'),
                       "[[variant]] #2 ('rawkernel'): give either source=", "not both"),
    "call without capture": (_edit('capture = "regex:^scale_raw$"\n', ""),
                             "missing key 'capture'", "[[variant]] #2"),
    "tunable without default": (_edit("tunable = { BLOCK = [64, 128, 256] }",
                                      "tunable = { WIDTH = [1, 2] }"),
                                "[[variant]] #1 ('nvrtc'): tunable 'WIDTH' has no default in "
                                "params (params = { WIDTH = ... } expected)", "#1"),
    "bad parameter name": (_edit("params = { BLOCK = 256 }", 'params = { "B-X" = 2 }'),
                           "[[variant]] #2 ('rawkernel'): key 'params.B-X': expected a name "
                           "matching", "got 'B-X'"),
    "missing module of one callable": (_edit('call = "scale_project:device_copy"',
                                             'call = "other_module:device_copy"'),
                                       "[[limit]] #1: key 'call': module 'other_module' not "
                                       "found", "No module named"),
    "reference named like a variant": (_edit('name = "CuPy multiply"', 'name = "NVRTC"'),
                                       "'NVRTC' (nvrtc) has the name of a variant", "own name"),
    "poison not an output": (_edit('outputs = ["out"]', 'outputs = ["out"]\npoison = ["x"]'),
                             "key 'problem.poison': 'x' is not in problem.outputs", "out"),
}


def _project_with(tmp_path: Path, text: str | bytes) -> Path:
    folder = tmp_path / "p"
    shutil.copytree(SCALE, folder)
    path = folder / "ncuh.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def _one_error_line(tmp_path: Path, path: Path) -> str:
    result = CliRunner().invoke(main, ["list", "--project", str(path)])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    assert lines[0].startswith(f"ncuh: error: {path}: ")
    return lines[0]


@pytest.mark.parametrize("case", BAD_FILES, ids=list(BAD_FILES))
def test_a_bad_project_file_is_one_line_naming_file_and_key(tmp_path: Path, case: str) -> None:
    text, *expected = BAD_FILES[case]
    path = _project_with(tmp_path, text)
    line = _one_error_line(tmp_path, path)
    for part in expected:
        assert part in line, line


def test_a_binary_project_file(tmp_path: Path) -> None:
    path = _project_with(tmp_path, b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256)))
    assert _one_error_line(tmp_path, path).endswith("a binary file, not a TOML project file")
    path.write_bytes(b"[project]\nname = \"\xff\xfe\"\n")
    assert _one_error_line(tmp_path, path).endswith("not UTF-8 text, not a TOML project file")


def test_a_failing_user_module_names_the_module_and_its_error(tmp_path: Path,
                                                              golden) -> None:
    path = _project_with(tmp_path, SCALE_TEXT)
    module = path.parent / "scale_project.py"
    text = module.read_text() + "\nSCALE = 1 / 0\n"
    module.write_text(text)
    line = _one_error_line(tmp_path, path)
    number = len(text.splitlines())
    assert f"ZeroDivisionError: division by zero (scale_project.py line {number})" in line
    golden("module_fails_to_import", line.replace(str(path), "PROJECT"))
    # the project's module is blamed on [project] module, not on the first callable resolved
    assert f"ncuh: error: {path}: [project] module: module 'scale_project'" in line
    module.write_text("import cupyy_typo\n")
    line = _one_error_line(tmp_path, path)
    assert "ModuleNotFoundError: No module named 'cupyy_typo'" in line
    golden("module_not_found", line.replace(str(path), "PROJECT"))


def test_a_missing_project_and_a_folder_without_one(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["list", "--project", str(tmp_path / "none.toml")])
    assert result.exit_code == 2
    assert result.stderr.strip() == (f"ncuh: error: {tmp_path / 'none.toml'}: no such project "
                                     "file or folder (--project)")
    result = CliRunner().invoke(main, ["list", "--project", str(tmp_path)])
    assert result.exit_code == 2 and "no ncuh.toml (or pyproject.toml with [tool.ncuh])" \
        in result.stderr


def test_bad_sizes_on_the_command_line_are_one_line(tmp_path: Path, golden) -> None:
    result = CliRunner().invoke(main, ["bench", "--project", str(SCALE), "--all", "--sizes",
                                       "2^20x2"])
    assert result.exit_code == 2
    golden("bad_sizes_too_many_values", result.stderr)
    result = CliRunner().invoke(main, ["bench", "--project", str(SCALE), "--all", "--sizes",
                                       "2^x"])
    assert result.exit_code == 2
    golden("bad_sizes_not_a_number", result.stderr)


def test_a_bad_size_of_several_dims_says_what_each_may_be(golden) -> None:
    from harness.errors import BadSizeError
    from harness.project.size import parse_size

    with pytest.raises(BadSizeError) as caught:
        parse_size("2^x", ["M", "N", "K"])
    golden("bad_size_of_several_dims", str(caught.value))
    assert tuple(parse_size("2^10x1<<3x1e2", ["M", "N", "K"])) == (1024, 8, 100)


# --- the code base: one way, and no bundled chain named ------------------------------------------

RUN_SIDE = ["protocol", "env", "timing", "backend", "verify", "tuning", "bench", "bench_table",
            "sweep", "runner"]


def test_the_run_side_imports_one_way() -> None:
    """Each harness.gpu module imports only modules listed before it (no circle, no
    function-local import of a later step)."""
    for index, name in enumerate(RUN_SIDE):
        tree = ast.parse((ROOT / "harness" / "gpu" / f"{name}.py").read_text())
        imported = {node.module for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and node.module}
        later = {f"harness.gpu.{other}" for other in RUN_SIDE[index:]}
        assert not imported & later, f"{name} imports {imported & later}"
        assert not any(m.startswith(("harness.profile", "harness.pages", "harness.commands"))
                       for m in imported), name


def test_harness_names_no_bundled_chain_but_the_default_project_line(golden) -> None:
    hits = []
    for path in sorted((ROOT / "harness").rglob("*")):
        if path.suffix not in (".py", ".toml", ".j2") or "starter" in path.parts:
            continue
        for line in path.read_text().splitlines():
            if re.search(r"sgemm|cublas|reduction|autotuned", line, re.IGNORECASE):
                hits.append(f"{path.relative_to(ROOT)}: {line.strip()}")
    assert len(hits) == 1 and hits[0].startswith("harness/project/locate.py: DEFAULT_PROJECT")
    golden("names_of_bundled_chains_in_harness", "\n".join(hits))


def test_profiling_a_program_needs_no_project_even_a_broken_one(tmp_path: Path,
                                                                 monkeypatch) -> None:
    (tmp_path / "ncuh.toml").write_text("[project\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NCUH_PROJECT", raising=False)
    result = CliRunner().invoke(main, ["profile", "--dry-run", "-k", "regex:k", "--", "python",
                                       "my_kernel.py"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().endswith("-f python my_kernel.py")
    # while the variants' commands read the project, and say what is wrong with it
    result = CliRunner().invoke(main, ["profile", "--all", "--dry-run"])
    assert result.exit_code == 2 and "TOML syntax error" in result.stderr


def test_init_into_an_existing_empty_directory_and_a_read_only_parent(tmp_path: Path) -> None:
    import os

    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(main, ["init", str(tmp_path / "empty")])
    assert result.exit_code == 0 and (tmp_path / "empty" / "ncuh.toml").is_file()
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as a user who may write anywhere")
        result = CliRunner().invoke(main, ["init", str(locked / "new")])
        assert result.exit_code == 2 and "cannot write the project" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        assert list(locked.iterdir()) == []
    finally:
        locked.chmod(0o700)


# --- the user's code, called at sizes and with parameters the loader never tried ----------------


def _profile_dry_run(path: Path, *args: str) -> str:
    """The one error line of `ncuh profile --dry-run` on a project (exit 2, no traceback)."""
    result = CliRunner().invoke(main, ["profile", "--project", str(path), "--dry-run", *args])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_constraints_that_raise_at_a_new_size_are_one_line(tmp_path: Path, golden) -> None:
    path = _project_with(tmp_path, _edit('constraints = "check_block"\nparams = { BLOCK = 256 }',
                                         'constraints = "picky"\nparams = { BLOCK = 256 }'))
    module = path.parent / "scale_project.py"
    text = module.read_text() + (
        "\n\ndef picky(size, params):\n"
        "    if size is not None and size.n == 7:\n"
        "        raise RuntimeError('no seven')\n"
        "    return []\n")
    module.write_text(text)
    line = _profile_dry_run(path, "--variant", "rawkernel", "--size", "7")
    number = len(text.splitlines()) - 1
    assert f"(scale_project.py line {number}) at size 7" in line
    golden("constraints_raise", line.replace(str(path), "PROJECT"))
    # the size the loader tried is fine, so the project itself loads
    assert CliRunner().invoke(main, ["list", "--project", str(path)]).exit_code == 0


def test_constraints_returning_one_string_are_one_problem(tmp_path: Path) -> None:
    path = _project_with(tmp_path, SCALE_TEXT)
    module = path.parent / "scale_project.py"
    module.write_text(module.read_text().replace(
        'return [f"BLOCK={block} must be a multiple of 32 between 32 and 1024"]',
        'return f"BLOCK={block} is bad"'))
    line = _profile_dry_run(path, "--variant", "nvrtc", "--params", '{"BLOCK": 100}')
    assert line == "ncuh: error: invalid parameters for nvrtc: BLOCK=100 is bad"
    project = load_project(path)
    assert project.problems("nvrtc", {"BLOCK": 100}, None) == ["BLOCK=100 is bad"]


@pytest.mark.parametrize(("value", "shown"), [
    ('"abc"', "str 'abc'"), ("null", "NoneType None"), ("[1]", "list [1]"),
    ("1e400", "float inf"), ("1.5", "float 1.5"), ("true", "bool True"), ("64.0", "float 64.0"),
])
def test_params_that_are_not_integers_are_one_line(value: str, shown: str, golden) -> None:
    line = _profile_dry_run(SCALE, "--variant", "nvrtc", "--params", f'{{"BLOCK": {value}}}')
    assert line.endswith(f", got {shown}")
    golden("params_not_integers_" + re.sub(r"\W+", "_", value).strip("_"), line)


def test_integer_params_are_taken() -> None:
    project = load_project(SCALE)
    assert project.check_params("nvrtc", {"BLOCK": 64}) == {"BLOCK": 64}


def test_a_strategy_file_that_is_not_utf8_names_the_key(tmp_path: Path) -> None:
    path = _project_with(tmp_path, SCALE_TEXT)
    (path.parent / "notes" / "nvrtc.md").write_bytes(b"# Strategy\n\xff\xfe caf\xe9\n")
    line = _one_error_line(tmp_path, path)
    assert line.endswith("[[variant]] #1 ('nvrtc'): key 'strategy': file 'notes/nvrtc.md' is "
                         "not UTF-8 text (expected a Markdown file)")


def test_a_strategy_path_that_is_a_folder_names_the_key(tmp_path: Path) -> None:
    path = _project_with(tmp_path, SCALE_TEXT)
    (path.parent / "notes" / "nvrtc.md").unlink()
    (path.parent / "notes" / "nvrtc.md").mkdir()
    line = _one_error_line(tmp_path, path)
    assert "key 'strategy': file 'notes/nvrtc.md' not found" in line


def test_writeup_of_a_run_whose_project_is_broken_warns_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from test_writeup_run import _with_project, make_run

    from harness.pages.writeup import collect

    path = _project_with(tmp_path, _edit('compare = "max_abs"', 'compare = "l2"'))
    run = make_run(tmp_path)
    _with_project(run, {"name": "scale-test", "path": str(path)})
    writeup = collect([run], path)  # --project: the only way a project is loaded
    assert all(page.strategy is None for page in writeup.pages)
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"ncuh: warning: {path}: key "
                                                   "'problem.compare'")
    assert lines[0].endswith("(the pages have no Strategy texts)")


def test_every_public_name_of_the_project_package_resolves_to_its_home() -> None:
    import harness.project as package

    plain = [name for name, value in vars(package).items()
             if not name.startswith("_") and not inspect.ismodule(value) and name != "lazy_names"]
    assert {"Launch", "Size", "Project", "find_project"} <= set(plain)
    for name in [*plain, "load_project", "open_project"]:  # and the two that come on first use
        value = getattr(package, name)
        if callable(value):  # a function or class: defined in the package, under this name
            assert value.__module__.startswith("harness.project.") and value.__name__ == name
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = package.nothing
