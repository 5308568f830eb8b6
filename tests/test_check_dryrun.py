"""`ncuh check` runs the project's Python on the CPU: the mistakes a newcomer makes in a real
transpose project (tests/projects/transpose), each planted in a copy of it and each named in
one line, with NumPy standing in for CuPy and every kernel launch recorded, not run."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.dryrun import dry_run
from harness.gpu.nvrtc import find_nvrtc
from harness.project import load_project

ROOT = Path(__file__).resolve().parents[1]
TRANSPOSE = ROOT / "tests" / "projects" / "transpose"
SOFTMAX = ROOT / "tests" / "projects" / "softmax"
NVRTC = find_nvrtc()
RAN = ("ran on the CPU, NumPy in place of the GPU: inputs at 3 size(s), expected, the "
       "reference, limit 'device copy', 4 of 4 variant(s)")


def _copy(tmp_path: Path, project: Path = TRANSPOSE) -> Path:
    folder = tmp_path / project.name
    shutil.copytree(project, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def _plant(folder: Path, file: str, old: str, new: str) -> None:
    path = folder / file
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} is not once in {file}"
    path.write_text(text.replace(old, new))


def _check(folder: Path, *extra: str):
    return CliRunner().invoke(main, ["check", "--project", str(folder), "--no-compile", *extra])


def _errors(result) -> list[str]:  # type: ignore[no-untyped-def]
    return [line.removeprefix("ncuh: error: ") for line in result.stderr.splitlines()
            if line.startswith("ncuh: error: ")]


def _warnings(result) -> list[str]:  # type: ignore[no-untyped-def]
    return [line.removeprefix("ncuh: warning: ") for line in result.stderr.splitlines()
            if line.startswith("ncuh: warning: ")]


def _said(golden, name: str, lines: list[str], folder: Path) -> None:  # type: ignore[no-untyped-def]
    """`lines` (what check said) against tests/golden/check_dryrun/<name>.txt, the copy's
    folder written PROJECT."""
    golden(name, "".join(f"{line}\n" for line in lines).replace(str(folder), "PROJECT"))


def test_the_transpose_project_passes_with_its_python_run() -> None:
    result = CliRunner().invoke(main, ["check", "--project", str(TRANSPOSE)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"project: transpose ({TRANSPOSE / 'ncuh.toml'})"
    assert lines[-2] == RAN
    compiled = ", 4 compiled for sm_90" if NVRTC is not None else ""
    assert lines[-1] == f"ok: 4 variant(s) checked{compiled}"
    assert result.stderr == ""


# --- the newcomer's mistakes, each one line -------------------------------------------------


def test_a_size_attribute_typo_is_named_with_the_dims(tmp_path: Path, golden) -> None:
    folder = _copy(tmp_path)
    _plant(folder, "transpose_project.py", "grid=(_blocks(size.cols, bx)",
           "grid=(_blocks(size.col, bx)")
    result = _check(folder)
    assert result.exit_code == 2
    errors = _errors(result)
    assert len(errors) == 1 and "AttributeError: a size has no dimension 'col'" in errors[0]
    _said(golden, "size_typo", errors, folder)
    assert result.stderr.splitlines()[-1] == f"ncuh: 1 problem(s) in {folder / 'ncuh.toml'}"


def test_a_wrong_unpacking_of_the_size_is_named_once_for_the_variants_that_share_it(
        tmp_path: Path, golden) -> None:
    folder = _copy(tmp_path)
    _plant(folder, "transpose_project.py", '    tile = params["TILE"]\n',
           '    tile = params["TILE"]\n    rows, cols, depth = size\n')
    errors = _errors(_check(folder))
    assert len(errors) == 1 and errors[0].startswith("variants 'tiled', 'padded', 'swizzled' ")
    _said(golden, "size_unpacked_wrong", errors, folder)


def test_a_grid_past_cudas_limit_is_named_at_the_first_size_it_reaches(tmp_path: Path,
                                                                       golden) -> None:
    folder = _copy(tmp_path)
    _plant(folder, "ncuh.toml", '"8192x4096"', '"65535x600", "65536x600"')
    _plant(folder, "transpose_project.py",
           "grid=(_blocks(size.cols, bx), _blocks(size.rows, by))",
           "grid=(_blocks(size.cols, bx), size.rows)")
    errors = _errors(_check(folder))
    assert len(errors) == 1 and "at size 65536x600: " in errors[0]  # not at 65535x600
    _said(golden, "grid_past_the_limit", errors, folder)


def test_a_block_past_1024_threads_and_shared_memory_past_the_target_are_named(
        tmp_path: Path, golden) -> None:
    folder = _copy(tmp_path)
    _plant(folder, "transpose_project.py",
           'block=(tile, params["BLOCK_ROWS"]), args=_args(size, inputs))',
           'block=(tile, 4 * tile), args=_args(size, inputs), shared_mem=232449)')
    errors = _errors(_check(folder))
    assert len(errors) == 6  # two for each of the three kernels launch_tiled launches
    _said(golden, "block_and_shared_memory_past_the_limits", errors, folder)


def test_an_output_no_launch_writes_is_named(tmp_path: Path, golden) -> None:
    folder = _copy(tmp_path)
    _plant(folder, "transpose_project.py",
           'return (inputs["x"], inputs["out"], numpy.int32(size.rows)',
           'return (inputs["x"], inputs["x"], numpy.int32(size.rows)')
    errors = _errors(_check(folder))
    assert len(errors) == 2 and all("never writes output 'out'" in line for line in errors)
    _said(golden, "output_never_written", errors, folder)


def test_an_output_passed_only_where_the_kernel_reads_is_named(tmp_path: Path,
                                                               golden) -> None:
    folder = _copy(tmp_path)
    _plant(folder, "transpose_project.py",
           'return (inputs["x"], inputs["out"], numpy.int32(size.rows)',
           'return (inputs["out"], inputs["x"], numpy.int32(size.rows)')
    errors = _errors(_check(folder))
    assert len(errors) == 2 and "a pointer to const" in errors[0]
    _said(golden, "output_passed_as_const", errors, folder)


def test_a_python_int_for_an_int_parameter_is_named_with_the_fix(tmp_path: Path,
                                                                 golden) -> None:
    folder = _copy(tmp_path)
    _plant(folder, "transpose_project.py", "numpy.int32(size.rows)", "size.rows")
    errors = _errors(_check(folder))
    assert len(errors) == 4 and all("pass numpy.int32(...)" in line for line in errors)
    _said(golden, "python_int_for_int", errors, folder)


def test_arguments_of_the_wrong_count_or_kind_are_named(tmp_path: Path, golden) -> None:
    folder = _copy(tmp_path)
    _plant(folder, "transpose_project.py",
           '    return Launch(grid=(_blocks(size.cols, tile), _blocks(size.rows, tile)),\n'
           '                  block=(tile, params["BLOCK_ROWS"]), args=_args(size, inputs))',
           '    return Launch(grid=(_blocks(size.cols, tile), _blocks(size.rows, tile)),\n'
           '                  block=(tile, params["BLOCK_ROWS"]),\n'
           '                  args=(inputs["x"].get(), numpy.float64(1), inputs["out"],\n'
           '                        numpy.int32(size.cols)))')
    _plant(folder, "transpose_project.py",
           "grid=(_blocks(size.cols, bx), _blocks(size.rows, by)), block=(bx, by),\n"
           "                  args=_args(size, inputs))",
           "grid=(_blocks(size.cols, bx), _blocks(size.rows, by)), block=(bx, by),\n"
           "                  args=_args(size, inputs)[:3])")
    errors = _errors(_check(folder))
    assert len(errors) == 1 + 3 * 3  # the count for naive; three arguments of three kernels
    _said(golden, "arguments_of_the_wrong_count_or_kind", errors, folder)


def test_two_bad_bytes_keys_are_both_named(tmp_path: Path, golden) -> None:
    folder = _copy(tmp_path)
    _plant(folder, "ncuh.toml", 'bytes = "8*rows*cols"              # read x once',
           'bytes = "8*rows*colz"              # read x once')
    _plant(folder, "ncuh.toml", 'call = "device_copy"\nbytes = "8*rows*cols"',
           'call = "device_copy"\nbytes = "8*n"')
    result = _check(folder)
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 3 and lines[-1] == "ncuh: 2 problem(s) in the project file"
    _said(golden, "two_bad_bytes_keys", lines, folder)


def test_an_unused_parameter_is_a_warning_naming_its_near_miss(tmp_path: Path, golden) -> None:
    folder = _copy(tmp_path)
    _plant(folder, "ncuh.toml",
           'kernel = "transpose_padded"\nlaunch = "launch_tiled"\nconstraints = "check_tiled"\n'
           'params = { TILE = 32, BLOCK_ROWS = 8 }',
           'kernel = "transpose_padded"\nlaunch = "launch_tiled"\nconstraints = "check_tiled"\n'
           'params = { TILE = 32, BLOCK_ROWS = 8, BLOCK_ROW = 8 }')
    result = _check(folder)
    assert result.exit_code == 0, result.output
    warnings = _warnings(result)
    assert len(warnings) == 1 and warnings[0].endswith("; did you mean BLOCK_ROWS?")
    _said(golden, "unused_parameter", warnings, folder)
    assert result.stdout.splitlines()[-1] == "ok: 4 variant(s) checked, 1 warning(s)"


def test_a_parameter_is_not_judged_where_its_launcher_did_not_run(tmp_path: Path,
                                                                  golden) -> None:
    folder = _copy(tmp_path)
    _plant(folder, "ncuh.toml", 'params = { BLOCK_X = 32, BLOCK_Y = 8 }',
           'params = { BLOCK_X = 32, BLOCK_Y = 8, UNUSED = 1 }')
    _plant(folder, "transpose_project.py", '    bx, by = params["BLOCK_X"], params["BLOCK_Y"]\n',
           '    bx, by = params["BLOCK_X"], params["BLOCK_Y"]\n    import torch\n'
           '    torch.cuda.synchronize()\n')
    result = _check(folder)
    assert result.exit_code == 0 and _warnings(result) == []
    notes = [line for line in result.stderr.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1 and "torch.cuda.synchronize" in notes[0]
    _said(golden, "gpu_library_not_run", notes, folder)


def test_a_truth_shaped_unlike_the_output_is_named(tmp_path: Path, golden) -> None:
    folder = _copy(tmp_path)
    _plant(folder, "transpose_project.py", 'cupy.ascontiguousarray(inputs["x"].T)',
           'cupy.ascontiguousarray(inputs["x"])')
    errors = _errors(_check(folder))
    assert len(errors) == 1 and "(1000, 600)" in errors[0] and "(600, 1000)" in errors[0]
    _said(golden, "truth_shaped_unlike_the_output", errors, folder)


def test_a_reference_that_returns_its_result_instead_of_writing_it_is_named(
        tmp_path: Path, golden) -> None:
    folder = _copy(tmp_path)
    _plant(folder, "transpose_project.py", '    cupy.copyto(inputs["out"], inputs["x"].T)',
           '    return cupy.ascontiguousarray(inputs["x"].T)')
    errors = _errors(_check(folder))
    assert len(errors) == 1 and errors[0].startswith("[reference] 'CuPy': ")
    _said(golden, "reference_returns_instead_of_writing", errors, folder)


def test_a_size_of_one_number_past_a_gpus_memory_is_a_warning(tmp_path: Path,
                                                              golden) -> None:
    folder = _copy(tmp_path)
    _plant(folder, "ncuh.toml", '"8192x4096"]', '"8192x4096", "2^20"]')
    result = _check(folder)
    assert result.exit_code == 0, result.output
    warnings = _warnings(result)
    assert len(warnings) == 1 and "more than 144 GiB" in warnings[0]
    _said(golden, "size_past_a_gpus_memory", warnings, folder)
    assert _check(folder, "--arch", "sm_100").stderr.count("more than 192 GiB") == 1


def test_inputs_past_the_hosts_limit_are_a_note_and_the_larger_sizes_are_not_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, golden) -> None:
    monkeypatch.setattr("harness.dryrun.run.HOST_LIMIT", 64 * 2**20)  # the child is forked
    folder = _copy(tmp_path)
    result = _check(folder)
    assert result.exit_code == 0, result.output
    notes = [line for line in result.stderr.splitlines() if line.startswith("note: ")]
    assert len(notes) == 2 and "0.0625 GiB" in notes[0] and "8192x4096" in notes[1]
    _said(golden, "inputs_past_the_hosts_limit", notes, folder)
    assert "inputs at 1 size(s)" in result.stdout


# --- the stand-ins and the child process ----------------------------------------------------


def test_the_dry_run_leaves_this_process_its_own_modules() -> None:
    project = load_project(SOFTMAX)
    module = sys.modules["softmax_project"]
    found = dry_run(project, "sm_90")
    assert found.problems == () and found.ran[-1] == "variant rawkernel"
    assert "cupy" not in sys.modules or not hasattr(sys.modules["cupy"], "RECORDER")
    assert sys.modules["softmax_project"] is module
    assert module._raw_kernel.cache_info().currsize == 0  # the child's kernel died with it


def test_python_that_never_ends_is_stopped_and_named(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    _plant(folder, "transpose_project.py", "    rng = cupy.random.default_rng(seed)\n",
           # endless, asleep: the timeout stops it all the same, and burns no CPU meanwhile
           "    rng = cupy.random.default_rng(seed)\n    import time\n    while True:\n"
           "        time.sleep(1)\n")
    found = dry_run(load_project(folder), "sm_90", timeout_s=2)
    assert len(found.problems) == 1 and "did not finish within 2 s" in found.problems[0]


def test_python_that_crashes_is_named_with_its_signal(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    _plant(folder, "transpose_project.py", "    rng = cupy.random.default_rng(seed)\n",
           "    rng = cupy.random.default_rng(seed)\n    import os\n    os.abort()\n")
    found = dry_run(load_project(folder), "sm_90")
    assert found.problems == ("the project's Python ended its dry run (SIGABRT)",)
