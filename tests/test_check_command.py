"""`ncuh check`: signatures, kernels, parameters and an NVRTC compile, all without a GPU.

The compile tests run NVRTC from its PyPI wheel (the `test` extra installs it) on this CPU;
without it they skip and `check` says in one line that it did not compile.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cli_examples import run_once
from click.testing import CliRunner

from harness.cli import main
from harness.gpu.backend import compile_options, program_text, variant_macros
from harness.gpu.nvrtc import compile_problems, find_nvrtc, hint
from harness.gpu.source_check import kernels
from harness.project import load_project
from harness.project.check import signature_problem

ROOT = Path(__file__).resolve().parents[1]
SOFTMAX = ROOT / "tests" / "projects" / "softmax"
NVRTC = find_nvrtc()
needs_nvrtc = pytest.mark.skipif(NVRTC is None, reason="NVRTC (nvidia-cuda-nvrtc) not installed")


def run_check(project: Path, *extra: str):
    return CliRunner().invoke(main, ["check", "--project", str(project), *extra])


NOT_STOOD_IN = "which `ncuh check` has no stand-in for (a GPU library)"
# What each bundled and test project's dry run runs, and what it says it could not run.
DRY_RUNS = {
    "kernels/sgemm": (
        "inputs at 6 size(s), expected, 11 of 11 variant(s)",
        ["[reference] 'cuBLAS': cublas_sgemm(inputs, 128x128x128) not run: it uses "
         f"cupy.cuda.device.get_cublas_handle, {NOT_STOOD_IN}"]),
    "kernels/gemm_bf16": (
        "inputs at 4 size(s), expected, 3 of 7 variant(s)",
        ["[reference] 'cuBLAS': cublas_gemm(inputs, 256x256x256) not run: it uses "
         f"cupy.cuda.device.get_cublas_handle, {NOT_STOOD_IN}",
         "variant 'wgmma_tma' at size 256x256x256: launch_wgmma_tma(256x256x256, params, "
         f"inputs) not run: it uses cupy.cuda.driver.get_build_version, {NOT_STOOD_IN}",
         "variant 'ws' at size 256x256x256: launch_ws(256x256x256, params, "
         f"inputs) not run: it uses cupy.cuda.driver.get_build_version, {NOT_STOOD_IN}",
         "variants 'cluster', 'autotuned' at size 256x256x256: launch_cluster(256x256x256, "
         f"params, inputs) not run: it uses cupy.cuda.driver.get_build_version, "
         f"{NOT_STOOD_IN}"]),
    "kernels/reduction": (
        "inputs at 10 size(s), expected, limit 'device copy', 10 of 10 variant(s)",
        [f"[reference] 'CUB': cub_sum(inputs, 1024) not run: it uses "
         f"cupy.cuda.cub.cub_reduction, {NOT_STOOD_IN}"]),
    "kernels/softmax_triton": (
        "inputs at 6 size(s), expected, limit 'device copy', 0 of 4 variant(s)",
        [f"[reference] 'PyTorch': torch_softmax(inputs, 1024x65536) not run: it uses "
         f"torch.Tensor, {NOT_STOOD_IN}",
         *(f"variant {name!r} at size {size}: launch_{name}(inputs, {size}, params) not run: "
           f"it uses torch.Tensor, {NOT_STOOD_IN}"
           for name, size in [("naive", "1024x65536"), ("online", "1024x65536"),
                              ("fused", "4096x16384"), ("multi_row", "4096x16384")])]),
    "tests/projects/softmax": (
        "inputs at 2 size(s), expected, the reference, limit 'device copy', 4 of 4 variant(s)",
        []),
    "tests/projects/scale": (
        "inputs at 2 size(s), expected, the reference, limit 'device copy', 2 of 2 variant(s)",
        []),
    "tests/projects/transpose": (
        "inputs at 3 size(s), expected, the reference, limit 'device copy', 4 of 4 variant(s)",
        []),
}


@pytest.mark.parametrize("project", sorted(DRY_RUNS))
def test_bundled_and_test_projects_pass(project: str) -> None:
    # as a user runs it; the documentation's `ncuh check --project kernels/sgemm` is this
    # command, run once for both (tests/cli_examples.py)
    result = run_once(("check", "--project", project))
    assert result.returncode == 0, result.stdout + result.stderr
    loaded = load_project(ROOT / project)
    compiled = sum(1 for v in loaded.variants if v.source and not v.arch)
    own = sum(1 for v in loaded.variants if v.arch == "sm_90a")  # gemm_bf16's WGMMA kernels
    lines = result.stdout.splitlines()
    assert lines[0] == f"project: {loaded.name} ({loaded.path})"
    ran, notes = DRY_RUNS[project]
    assert lines[-2] == f"ran on the CPU, NumPy in place of the GPU: {ran}"
    assert result.stderr.splitlines() == [f"note: {note}" for note in notes]
    if NVRTC is not None:
        assert lines[1].startswith(f"compiler: NVRTC {NVRTC.version[0]}.{NVRTC.version[1]} (")
        assert lines[1].endswith("--gpu-architecture=sm_90")
        assert lines[-1] == (f"ok: {len(loaded.variants)} variant(s) checked, {compiled} "
                             "compiled for sm_90" + (f", {own} compiled for sm_90a" if own
                                                     else ""))


def test_init_project_passes(tmp_path: Path) -> None:
    assert CliRunner().invoke(main, ["init", str(tmp_path / "mine")]).exit_code == 0
    result = run_check(tmp_path / "mine")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1].startswith("ok: 2 variant(s) checked")


def test_init_names_the_nvrtc_extra_only_when_nvrtc_is_missing(tmp_path: Path,
                                                                 monkeypatch) -> None:
    root = Path(__file__).resolve().parent.parent
    note = ("note: `ncuh check` compiles the variants with NVRTC, which needs ncuh's nvrtc "
            f"extra: pip install -e '{root}[nvrtc]'")
    monkeypatch.setattr("harness.gpu.find_nvrtc", lambda: None)
    without = CliRunner().invoke(main, ["init", str(tmp_path / "a")])
    assert without.exit_code == 0 and without.stderr.splitlines()[-1] == note
    monkeypatch.setattr("harness.gpu.find_nvrtc", lambda: object())
    with_it = CliRunner().invoke(main, ["init", str(tmp_path / "b")])
    assert with_it.exit_code == 0 and "nvrtc extra" not in with_it.stderr
    assert with_it.stderr.splitlines()[-1].startswith("next: cd ")


def test_without_compile_says_nothing_was_compiled() -> None:
    result = run_check(SOFTMAX, "--no-compile")
    assert result.exit_code == 0
    ran = DRY_RUNS["tests/projects/softmax"][0]
    assert result.stdout.splitlines() == [
        f"project: softmax ({SOFTMAX / 'ncuh.toml'})",
        f"ran on the CPU, NumPy in place of the GPU: {ran}", "ok: 4 variant(s) checked"]
    assert run_check(SOFTMAX, "--no-compile", "--no-run").stdout.splitlines() == [
        f"project: softmax ({SOFTMAX / 'ncuh.toml'})", "ok: 4 variant(s) checked"]


def _broken_softmax(tmp_path: Path) -> Path:
    """The softmax project with the mistakes a new user makes, all at once."""
    folder = tmp_path / "softmax"
    shutil.copytree(SOFTMAX, folder, ignore=shutil.ignore_patterns("__pycache__"))
    toml = folder / "ncuh.toml"
    toml.write_text(toml.read_text().replace('kernel = "softmax_online"',
                                             'kernel = "softmax_onlin"'))
    module = folder / "softmax_project.py"
    module.write_text(module.read_text()
                      .replace("def launch_block_per_row(size: Size, params: dict[str, int], "
                               "inputs: dict[str, Any])",
                               "def launch_block_per_row(size: Size, params: dict[str, int])")
                      .replace("def launch_rawkernel(inputs: dict[str, Any], size: Size, ",
                               "def launch_rawkernel(size: Size, inputs: dict[str, Any], "))
    source = folder / "softmax.cu"
    text = source.read_text()
    assert text.count("if (row >= rows) return;") == 2
    text = text.replace("if (row >= rows) return;", "if (row >= rows || BLOCK < 0) return;", 1)
    source.write_text(text.replace("float largest = -INFINITY;",
                                   "float largest = -INFINITY + undefined_thing;", 1))
    return toml


def test_every_problem_at_once_one_line_each(tmp_path: Path) -> None:
    toml = _broken_softmax(tmp_path)
    result = run_check(toml)
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("ncuh: error: ")]
    expected = [
        f"{toml}: [[variant]] #1 ('naive'): key 'launch': launch_block_per_row(size, params) "
        "cannot be called as launch(size, params, inputs) (too many positional arguments); "
        "write def launch_block_per_row(size, params, inputs)",
        f"{toml}: [[variant]] #4 ('rawkernel'): key 'call': launch_rawkernel(size, inputs, "
        "params) takes its arguments in another order than ncuh passes them: "
        "call(inputs, size, params)",
        "variant 'warp': kernel 'softmax_warp' uses BLOCK (now 256, another variant's "
        "default), which its params do not define: add it to the variant's params, or "
        "#define a default in the source",
        "variant 'online': key 'kernel': 'softmax_onlin' is not an extern \"C\" __global__ in "
        "softmax.cu (its extern \"C\" kernels: softmax_naive, softmax_warp, softmax_online)",
    ]
    if NVRTC is not None:
        expected.append("variants 'naive', 'warp': softmax.cu(12): identifier "
                        "\"undefined_thing\" is undefined")
    assert errors == [f"ncuh: error: {line}" for line in expected]
    assert result.stderr.splitlines()[-1] == f"ncuh: {len(expected)} problem(s) in {toml}"
    assert "Traceback" not in result.output


def test_a_project_file_that_fails_to_load_names_each_problem_on_a_line(tmp_path: Path) -> None:
    toml = tmp_path / "ncuh.toml"
    toml.write_text("[project]\nname = 'x'\n")
    result = run_check(tmp_path)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [f"ncuh: error: {toml}: missing key 'problem'",
                                          f"ncuh: error: {toml}: missing key 'variant'",
                                          "ncuh: 2 problem(s) in the project file"]
    # every other command says the first, and that there are more, on one line
    listed = CliRunner().invoke(main, ["list", "--project", str(tmp_path)])
    assert listed.exit_code == 2
    first = f"ncuh: error: {toml}: missing key 'problem'"
    assert listed.stderr == f"{first} (and 1 more problem: `ncuh check` names every one)\n"


# --- signatures ----------------------------------------------------------------------------


def test_signature_fits_its_role_with_defaults_and_varargs() -> None:
    def launch(size, params, inputs, extra=None): ...
    def call(*args): ...

    assert signature_problem("w", "launch", launch) is None
    assert signature_problem("w", "call", call) is None
    assert signature_problem("w", "reference", print) is None  # no signature: not judged


def test_signature_with_one_argument_too_many_or_swapped(golden) -> None:
    def inputs(size, seed, device): ...
    def expected(size, inputs): ...

    golden("signature_argument_too_many", signature_problem("w", "inputs", inputs))
    golden("signature_arguments_swapped", signature_problem("w", "expected", expected))


# --- kernels in a source -------------------------------------------------------------------


def test_kernels_found_with_launch_bounds_blocks_and_declarations() -> None:
    text = """
    // extern "C" __global__ void commented(int n) {}
    extern "C" __global__ void __launch_bounds__(BLOCK * 2) bounded(int n) { if (n) {} }
    extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(384, 1)
        clustered(int n) { }
    extern "C" { __global__ void inside(float *x) { x[0] = 1; } }
    __global__ void mangled(float *x) { }
    extern "C" __global__ void declared(int n);
    template <int B> __global__ void templated(float *x) { }
    """
    found = kernels(text)
    assert sorted(found) == ["bounded", "clustered", "inside", "mangled", "templated"]
    assert [name for name, k in found.items() if k.extern_c] == ["bounded", "clustered",
                                                                  "inside"]
    assert found["bounded"].text.endswith("if (n) {} }")
    assert "BLOCK" in found["bounded"].text


# --- NVRTC ---------------------------------------------------------------------------------


def _compile(tmp_path: Path, body: str, params: str = "") -> list[str]:
    (tmp_path / "k.cu").write_text(body)
    (tmp_path / "k_project.py").write_text(
        "def inputs(size, seed): ...\ndef expected(inputs, size): ...\n"
        "def launch(size, params, inputs): ...\n")
    (tmp_path / "ncuh.toml").write_text(
        '[project]\nname = "k"\nmodule = "k_project"\n[problem]\ndims = ["n"]\n'
        'inputs = "inputs"\noutputs = ["out"]\nexpected = "expected"\n'
        f'[[variant]]\nname = "v"\nsource = "k.cu"\nkernel = "k"\nlaunch = "launch"\n{params}')
    project = load_project(tmp_path)
    return compile_problems(project, project.variants[0], NVRTC, "sm_90")


@needs_nvrtc
@pytest.mark.parametrize("body", [
    'extern "C" __global__ void k(float *x) { x[0] = -INFINITY; x[1] = NAN; }',
    '#include <math.h>\nextern "C" __global__ void k(float *x) { x[0] = HUGE_VALF * M_PI; }',
    '#include <cmath>\n#include <cfloat>\n#include <climits>\n#include <cstdint>\n'
    '#include <cstdio>\nextern "C" __global__ void k(float *x) {\n'
    '  uint32_t a = UINT32_MAX; int64_t b = INT_MAX; x[0] = FLT_MAX + a + b; printf("%f", x[0]);'
    '\n}',
    '#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n'
    'extern "C" __global__ void k(__half *x) { x[0] = __float2half(1.0f) + x[1]; }',
    '#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n'
    'extern "C" __global__ void k(float *x) { cg::thread_block b = cg::this_thread_block();'
    ' b.sync(); x[0] = cg::tiled_partition<32>(b).thread_rank(); }',
    '#include <cstdint>\n#include <cuda/std/cstdint>\n#include <cuda/std/limits>\n'
    '#include <cuda/std/cmath>\n'
    'extern "C" __global__ void k(float *x) {'
    ' x[0] = cuda::std::numeric_limits<float>::infinity() + cuda::std::isinf(x[1]); }',
])
def test_common_headers_and_constants_compile(tmp_path: Path, body: str) -> None:
    assert _compile(tmp_path, body) == []


@needs_nvrtc
def test_each_variant_knows_its_own_name(tmp_path: Path) -> None:
    body = ('#ifndef NCUH_KERNEL_k\n#error not k\n#endif\n#ifndef NCUH_VARIANT_v\n#error not v\n'
            '#endif\nextern "C" __global__ void k(float *x) { x[0] = 1; }')
    assert _compile(tmp_path, body) == []


@needs_nvrtc
def test_host_code_and_host_headers_say_what_to_write_instead(tmp_path: Path,
                                                              golden) -> None:
    problems = _compile(tmp_path, '#include <vector>\nextern "C" __global__ void k() {}')
    assert len(problems) == 1 and problems[0].startswith('k.cu(1): cannot open source file')
    golden("host_header", problems[0])
    problems = _compile(tmp_path, 'int twice(int a) { return 2 * a; }\n'
                        'extern "C" __global__ void k(int *x) { x[0] = twice(x[1]); }')
    assert len(problems) == 1 and problems[0].startswith("k.cu(1): A function without")
    golden("host_function", problems[0].partition("; ")[2])


@needs_nvrtc
def test_without_shared_defaults_the_other_kernels_macro_is_named(monkeypatch,
                                                                  golden) -> None:
    project = load_project(SOFTMAX)
    warp = project.variant("warp")
    assert variant_macros(project, warp, project.profile_size, dict(warp.params)) == {
        "BLOCK": 256, "WARPS": 4}
    assert compile_problems(project, warp, NVRTC, "sm_90") == []
    # What it was before: only the variant's own parameters.
    monkeypatch.setattr("harness.gpu.nvrtc.variant_macros",
                        lambda project, variant, size, params: dict(params))
    problems = compile_problems(project, warp, NVRTC, "sm_90")
    assert problems[0].startswith('softmax.cu(7): identifier "BLOCK" is undefined')
    golden("macro_of_another_variant", problems[0])


def test_hints_name_the_fix_only_where_there_is_one() -> None:
    project = load_project(SOFTMAX)
    assert hint('identifier "lowercase" is undefined', project) == ""
    assert hint('identifier "TILE" is undefined', project).startswith(
        "define TILE in this variant's params")
    assert hint("expected a ;", project) == ""


def test_compile_options_carry_the_stub_headers_and_the_variant_names() -> None:
    project = load_project(SOFTMAX)
    warp = project.variant("warp")
    options = compile_options({"WARPS": 4, "BLOCK": 256}, warp)
    assert options[3:] == ("-DBLOCK=256", "-DWARPS=4", "-DNCUH_VARIANT_warp=1",
                           "-DNCUH_KERNEL_softmax_warp=1")
    assert (Path(options[2][2:]) / "math.h").is_file()
    text = program_text(project.folder, "softmax.cu")
    assert text.startswith("#ifndef INFINITY\n")
    assert '#line 1 "softmax.cu"\n' in text


def test_a_variant_compiles_for_the_target_it_names() -> None:
    """`arch = "sm_90a"` goes to NVRTC as --gpu-architecture=sm_90a, in `check` in place of
    --arch and on a GPU before the -arch=sm_90 CuPy adds; other variants name none."""
    from harness.gpu.backend import arch_options

    project = load_project(ROOT / "kernels" / "gemm_bf16")
    wgmma = project.variant("wgmma_tma")
    assert wgmma.arch == "sm_90a" and wgmma.to_dict()["arch"] == "sm_90a"
    assert arch_options(wgmma) == ("--gpu-architecture=sm_90a",)
    assert arch_options(project.variant("multistage")) == ()
    assert project.variant("multistage").to_dict()["arch"] is None


@needs_nvrtc
def test_wgmma_needs_sm_90a_and_survives_the_arch_cupy_appends() -> None:
    """The options a GPU run compiles with, CuPy's own -arch=sm_90 last: wgmma compiles; the
    same without the variant's target fails on exactly that instruction."""
    from harness.gpu.backend import arch_options

    project = load_project(ROOT / "kernels" / "gemm_bf16")
    wgmma = project.variant("wgmma_tma")
    size = project.profile_size
    text = program_text(project.folder, wgmma.source)
    options = compile_options(variant_macros(project, wgmma, size, dict(wgmma.params)), wgmma)
    headers = tuple(f"-I{folder}" for folder in NVRTC.include_dirs)
    ok, log = NVRTC.compile(text, wgmma.source, (*options, *arch_options(wgmma), *headers,
                                                 "-arch=sm_90"))
    assert ok, log
    ok, log = NVRTC.compile(text, wgmma.source, (*options, *headers, "-arch=sm_90"))
    assert not ok and "not supported on .target 'sm_90'" in log
    assert compile_problems(project, wgmma, NVRTC, "sm_90") == []


def test_without_nvrtc_a_note_says_nothing_was_compiled(monkeypatch, golden) -> None:
    monkeypatch.setattr("harness.commands.check.find_nvrtc", lambda: None)
    result = run_check(SOFTMAX)
    assert result.exit_code == 0
    root = Path(__file__).resolve().parent.parent
    assert f"(pip install -e '{root}[nvrtc]')" in result.stderr
    golden("no_nvrtc_note", result.stderr.replace(str(root), "CHECKOUT"))
    assert result.stdout.splitlines()[-1] == "ok: 4 variant(s) checked"


def test_the_nvrtc_hint_names_the_extra_by_checkout_path_or_by_package(tmp_path: Path) -> None:
    from harness.gpu.nvrtc import nvrtc_install_hint

    root = Path(__file__).resolve().parent.parent
    assert nvrtc_install_hint() == f"pip install -e '{root}[nvrtc]'"
    installed = tmp_path / "site-packages" / "harness" / "gpu" / "nvrtc.py"
    assert nvrtc_install_hint(str(installed)) == "pip install 'ncuh[nvrtc]'"


def test_a_tolerance_that_takes_the_wrong_arguments_is_named(tmp_path: Path,
                                                             golden) -> None:
    folder = tmp_path / "scale"
    shutil.copytree(ROOT / "tests" / "projects" / "scale", folder,
                    ignore=shutil.ignore_patterns("__pycache__"))
    module = folder / "scale_project.py"
    module.write_text(module.read_text().replace("def tolerance_for(size: Size) -> float:",
                                                 "def tolerance_for(size, dtype) -> float:"))
    result = run_check(folder, "--no-compile")
    assert result.exit_code == 2
    golden("tolerance_wrong_arguments", result.stderr.splitlines()[0].replace(
        str(folder / "ncuh.toml"), "PROJECT"))
