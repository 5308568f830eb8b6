"""The NVRTC backend without a GPU: what it hands CuPy (the source with its headers inlined
under #line, the -D options) and how it launches what a project's `launch` returns. A stand-in
for CuPy's RawModule records every call."""

from __future__ import annotations

import dataclasses
import types
from pathlib import Path
from typing import ClassVar

import pytest

from harness.errors import NcuhError
from harness.gpu import backend
from harness.project import Launch, load_project

SCALE = Path(__file__).parent / "projects" / "scale"


class CompileError(Exception):
    pass


class FakeFunction:
    def __init__(self, name: str, log: list) -> None:
        self.name, self.log = name, log
        self.num_regs, self.local_size_bytes = 18, 0

    def __setattr__(self, key, value):
        if key == "max_dynamic_shared_size_bytes":
            self.log.append(("opt-in", self.name, value))
        object.__setattr__(self, key, value)

    def __call__(self, grid, block, args, shared_mem=0):
        self.log.append(("launch", self.name, grid, block, args, shared_mem))


class FakeModule:
    created: ClassVar[list] = []

    def __init__(self, code: str, options: tuple, backend: str) -> None:
        self.code, self.options, self.backend = code, options, backend
        self.log: list = []
        FakeModule.created.append(self)

    def compile(self) -> None:
        if "#error" in self.code:
            raise CompileError("k.cu(3): error: this kernel does not compile\n1 error detected")

    def get_function(self, name: str) -> FakeFunction:
        if f" {name}(" not in self.code and f"\n{name}(" not in self.code:
            raise KeyError(name)
        self.log.append(("get_function", name))
        return FakeFunction(name, self.log)


@pytest.fixture
def fake_cupy(monkeypatch: pytest.MonkeyPatch):
    cupy = types.SimpleNamespace(
        RawModule=FakeModule,
        cuda=types.SimpleNamespace(compiler=types.SimpleNamespace(CompileException=CompileError)))
    monkeypatch.setattr(backend, "require_gpu", lambda: cupy)
    monkeypatch.setattr(backend, "_MODULES", {})
    FakeModule.created = []
    return cupy


def test_nvrtc_gets_the_inlined_source_and_every_macro(fake_cupy) -> None:
    project = load_project(SCALE)
    size = project.parse_size("1000")
    runnable = backend.prepare(project, "nvrtc", size, {"BLOCK": 64})
    (module,) = FakeModule.created
    assert module.backend == "nvrtc"
    assert module.options == ("--std=c++17", "-lineinfo", f"-I{backend.STUB_INCLUDE}",
                              "-DBLOCK=64", "-DUNROLL=1", "-DNCUH_VARIANT_nvrtc=1",
                              "-DNCUH_KERNEL_scale_kernel=1")
    assert module.code.startswith(backend.PRELUDE)  # INFINITY and NAN, as nvcc's math.h
    lines = module.code.removeprefix(backend.PRELUDE).splitlines()
    assert lines[0] == '#line 1 "scale.cu"' and lines[1] == '#line 1 "scale_common.cuh"'
    assert "#pragma once" not in module.code
    assert '#line 3 "scale.cu"' in lines  # back in the kernel file, at its own line numbers
    assert runnable.defines == {"BLOCK": 64, "UNROLL": 1}
    assert runnable.params == {"BLOCK": 64} and runnable.registers == 18
    runnable({"s": 2.0, "x": "X", "out": "OUT"})
    runnable({"s": 2.0, "x": "X", "out": "OUT"})
    launches = [entry for entry in module.log if entry[0] == "launch"]
    assert len(launches) == 2 and launches[0][1:4] == ("scale_kernel", (16,), (64,))
    assert launches[0][4][2:] == ("X", "OUT") and launches[0][5] == 0
    # the function was looked up once, not per launch
    assert [entry for entry in module.log if entry[0] == "get_function"] == [
        ("get_function", "scale_kernel")]
    # the same configuration compiles once per process
    backend.prepare(project, "nvrtc", size, {"BLOCK": 64})
    assert len(FakeModule.created) == 1


def test_several_launches_other_kernels_and_the_shared_memory_opt_in(fake_cupy) -> None:
    project = load_project(SCALE)
    size = project.parse_size("1000")
    runnable = backend.prepare(project, "nvrtc", size)
    plan = [Launch(grid=(2,), block=(32,), args=(1,), shared_mem=64 * 1024),
            {"grid": (1,), "block": (32,), "args": (2,), "kernel": "scale_kernel",
             "shared_mem": 64 * 1024}]
    variant = dataclasses.replace(project.variant("nvrtc"), launch=lambda s, p, i: plan)
    runnable._launch = backend._nvrtc_launcher(variant, size, runnable.params, runnable)
    runnable({})
    runnable({})
    (module,) = FakeModule.created
    opt_ins = [entry for entry in module.log if entry[0] == "opt-in"]
    assert opt_ins == [("opt-in", "scale_kernel", 64 * 1024)]  # once, not per launch
    assert [entry[4] for entry in module.log if entry[0] == "launch"] == [(1,), (2,)] * 2


def test_compile_errors_and_bad_requests_are_one_line(fake_cupy, tmp_path: Path) -> None:
    import shutil

    shutil.copytree(SCALE, tmp_path / "p")
    source = tmp_path / "p" / "scale.cu"
    source.write_text(source.read_text().replace("extern", "#error no\nextern"))
    project = load_project(tmp_path / "p")
    size = project.parse_size("1000")
    with pytest.raises(NcuhError, match=r"^nvrtc failed to compile with -DBLOCK=128 -DUNROLL=1: "
                                        r"k.cu\(3\): error: this kernel does not compile$"):
        backend.prepare(project, "nvrtc", size)
    FakeModule.created.clear()
    with pytest.raises(NcuhError, match="invalid parameters for nvrtc: BLOCK=100"):
        backend.prepare(project, "nvrtc", size, {"BLOCK": 100})
    assert FakeModule.created == []  # refused before compiling


def test_a_python_launcher_gets_inputs_size_and_params(fake_cupy) -> None:
    project = load_project(SCALE)
    size = project.parse_size("64")
    seen = []
    variant = dataclasses.replace(project.variant("rawkernel"),
                                  call=lambda inputs, s, p: seen.append((inputs, s, p)))
    runnable = backend.prepare(project, variant, size)
    runnable({"x": 1})
    assert seen == [({"x": 1}, size, {"BLOCK": 256})]
    assert runnable.registers is None and FakeModule.created == []
