"""`ncuh check` on big or broken projects: every source is read within a bound and as UTF-8,
each distinct program is compiled once and at most `MAX_COMPILES` of them, so a chain of the
most variants a project may have is checked in bounded work, and each refusal is one line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.errors import ProjectError
from harness.gpu import nvrtc as nvrtc_module
from harness.gpu.backend import MAX_SOURCE_BYTES
from harness.project.loader import MAX_VARIANTS

ROOT = Path(__file__).resolve().parents[1]
SCALE = ROOT / "tests" / "projects" / "scale"
NVRTC = nvrtc_module.find_nvrtc()
needs_nvrtc = pytest.mark.skipif(NVRTC is None, reason="NVRTC (nvidia-cuda-nvrtc) not installed")


def _chain(tmp_path: Path, count: int, salted: bool = False) -> Path:
    """The scale project with `count` NVRTC variants of one source (each with a parameter of
    its own where `salted`: then each is a program of its own)."""
    folder = tmp_path / "chain"
    shutil.copytree(SCALE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    toml = folder / "ncuh.toml"
    head = toml.read_text().split("[[variant]]")[0]
    toml.write_text(head + "".join(
        f'[[variant]]\nname = "v{i}"\nsource = "scale.cu"\nkernel = "scale_kernel"\n'
        f'launch = "launch_scale"\ndefines = "unroll_define"\nconstraints = "check_block"\n'
        f'params = {{ BLOCK = 128{f", SALT = {i}" if salted else ""} }}\n\n'
        for i in range(count)))
    return folder


def _counting_compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    compiled: list[str] = []
    original = nvrtc_module.Nvrtc.compile

    def counting(self, text: str, name: str, options: tuple[str, ...]):  # type: ignore[no-untyped-def]
        compiled.append(name)
        return original(self, text, name, options)

    monkeypatch.setattr(nvrtc_module.Nvrtc, "compile", counting)
    return compiled


@needs_nvrtc
def test_the_most_variants_of_one_program_compile_once(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = _counting_compiles(monkeypatch)
    result = CliRunner().invoke(main, ["check", "--project", str(_chain(tmp_path, MAX_VARIANTS))])
    assert result.exit_code == 0, result.output
    assert compiled == ["scale.cu"]
    assert result.stdout.splitlines()[-1] == (f"ok: {MAX_VARIANTS} variant(s) checked, "
                                              f"{MAX_VARIANTS} compiled for sm_90")


@needs_nvrtc
def test_past_the_most_distinct_programs_the_rest_are_named_not_compiled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, golden) -> None:
    monkeypatch.setattr(nvrtc_module, "MAX_COMPILES", 3)
    compiled = _counting_compiles(monkeypatch)
    result = CliRunner().invoke(main, ["check", "--project", str(_chain(tmp_path, 5, True)),
                                       "--no-run"])
    assert result.exit_code == 0, result.output
    assert len(compiled) == 3
    notes = result.stderr.splitlines()
    assert len(notes) == 1 and notes[0].startswith("note: 2 variant(s) not compiled (v3, v4): ")
    golden("not_compiled_past_the_most", result.stderr)
    assert result.stdout.splitlines()[-1] == "ok: 5 variant(s) checked, 3 compiled for sm_90"


def _one_problem(folder: Path, expected: str) -> None:
    result = CliRunner().invoke(main, ["check", "--project", str(folder)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert [line for line in result.stderr.splitlines() if line.startswith("ncuh: error: ")] \
        == [f"ncuh: error: {expected}"]


@pytest.mark.parametrize("kind", ["50 MB", "200,000 device functions", "a header past it"])
def test_a_source_past_the_bound_is_one_line(tmp_path: Path, kind: str) -> None:
    folder = _chain(tmp_path, 1)
    source = folder / "scale.cu"
    if kind == "50 MB":
        with source.open("ab") as stream:
            stream.truncate(50 * 10**6)  # sparse: nothing of it is written
        culprit = source
    elif kind == "200,000 device functions":
        source.write_text(source.read_text() + "".join(
            f"__device__ int f{i}(int a) {{ return a + {i}; }}\n" for i in range(200_000)))
        culprit = source
    else:  # the source is small; its local header takes it past the bound
        culprit = folder / "scale_common.cuh"
        culprit.write_text(culprit.read_text() + "\n" + "// padding\n" * (MAX_SOURCE_BYTES // 11))
    _one_problem(folder, f"{culprit}: more than {MAX_SOURCE_BYTES // 1024} KiB of CUDA source "
                         "with its local headers, more than ncuh compiles (NVRTC would take "
                         "minutes): keep each variant's kernels in a smaller file")


def test_a_source_just_within_the_bound_is_read(tmp_path: Path) -> None:
    from harness.gpu.backend import source_text

    folder = _chain(tmp_path, 1)
    source = folder / "scale.cu"
    header = folder / "scale_common.cuh"
    header.write_text("")
    text = source.read_text()
    source.write_text(text + "/" * (MAX_SOURCE_BYTES - len(text.encode())))
    assert len(source_text(folder, "scale.cu").encode()) > MAX_SOURCE_BYTES  # #line lines
    source.write_text(source.read_text() + "/")
    with pytest.raises(ProjectError, match="more than 256 KiB"):
        source_text(folder, "scale.cu")


def test_a_source_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    folder = _chain(tmp_path, 1)
    source = folder / "scale.cu"
    raw = source.read_bytes()
    source.write_bytes(raw[:40] + b"\xff\xfe" + raw[40:])
    _one_problem(folder, f"{source}: not UTF-8 text (byte 40 is 0xff); CUDA sources are read "
                         "as UTF-8")


def test_the_check_page_states_the_bounds_the_code_holds() -> None:
    from harness.dryrun.run import TIMEOUT_S
    from harness.dryrun.trial import HOST_LIMIT

    page = (ROOT / "docs" / "check.md").read_text()
    bounds = page[page.index("## Bounds"):]
    for said in (f"a source is at most {MAX_SOURCE_BYTES // 1024} KiB",
                 f"at most {nvrtc_module.MAX_COMPILES} of them",
                 f"may take {HOST_LIMIT // 2**30} GiB", f"may run {TIMEOUT_S:g} s"):
        assert said in " ".join(bounds.split()), said
