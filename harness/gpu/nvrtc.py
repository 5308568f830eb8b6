"""Compile a variant with NVRTC on the host alone: no GPU, no CuPy (what `ncuh check` runs).

NVRTC is found with `cuda.pathfinder` (the `nvidia-cuda-nvrtc` wheel, or a CUDA toolkit) and
called through ctypes; the CUDA headers (`nvidia-cuda-runtime`) and CCCL (`nvidia-cuda-cccl`)
are put on the include path where found. The text and options are those `prepare` compiles
on a GPU (`harness.gpu.backend`), plus the target architecture.
"""

from __future__ import annotations

import ctypes
import functools
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ProjectError
from harness.gpu.backend import compile_options, program_text, variant_macros
from harness.project import Project, Size, Variant
from harness.util import usable_cores

DEFAULT_ARCH = "sm_90"
_ERROR = re.compile(r"^(?P<where>.*?\(\d+\)): (?:catastrophic )?error(?: #\S+)?: (?P<what>.*)$")


@dataclass(frozen=True)
class Nvrtc:
    """A loaded NVRTC library and the header folders found beside it."""

    library: ctypes.CDLL
    path: Path
    version: tuple[int, int]
    include_dirs: tuple[Path, ...]

    @property
    def description(self) -> str:
        return f"NVRTC {self.version[0]}.{self.version[1]} ({self.path})"

    def compile(self, text: str, name: str, options: tuple[str, ...]) -> tuple[bool, str]:
        """(compiled, the log) for `text` named `name` (the name errors are blamed on)."""
        lib = self.library
        program = ctypes.c_void_p()
        status = lib.nvrtcCreateProgram(ctypes.byref(program), text.encode(), name.encode(),
                                        0, None, None)
        if status:
            return False, f"nvrtcCreateProgram failed ({self._error(status)})"
        try:
            encoded = [option.encode() for option in options]
            array = (ctypes.c_char_p * len(encoded))(*encoded)
            status = lib.nvrtcCompileProgram(program, len(encoded), array)
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(program, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(program, log)
        finally:
            lib.nvrtcDestroyProgram(ctypes.byref(program))
        return status == 0, log.value.decode("utf-8", "replace")

    def _error(self, status: int) -> str:
        self.library.nvrtcGetErrorString.restype = ctypes.c_char_p
        return self.library.nvrtcGetErrorString(status).decode()


@functools.cache
def find_nvrtc() -> Nvrtc | None:
    """NVRTC where `cuda.pathfinder` finds it; None without it (or without pathfinder)."""
    try:
        from cuda import pathfinder
    except ImportError:
        return None
    try:
        loaded = pathfinder.load_nvidia_dynamic_lib("nvrtc")
        library = ctypes.CDLL(loaded.abs_path)
    except Exception:  # pathfinder's own errors and OSError: NVRTC is absent or broken
        return None
    major, minor = ctypes.c_int(), ctypes.c_int()
    if library.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)):
        return None
    folders = []
    for headers in ("cudart", "cccl"):
        try:
            found = pathfinder.find_nvidia_header_directory(headers)
        except Exception:
            found = None
        if found:
            folders.append(Path(found))
    return Nvrtc(library, Path(loaded.abs_path), (major.value, minor.value), tuple(folders))


def nvrtc_install_hint(package_file: str | None = None) -> str:
    """The command that installs ncuh's `nvrtc` extra: by the checkout's path from a checkout
    (as `cupy_install_hint` decides), else by the installed package's name."""
    from harness.gpu.env import checkout_root

    root = checkout_root(package_file)
    return f"pip install -e '{root}[nvrtc]'" if root is not None else "pip install 'ncuh[nvrtc]'"


def hint(message: str, project: Project) -> str:
    """What to write instead, for the NVRTC errors a kernel written for `nvcc -c` meets."""
    undefined = re.search(r'identifier "(\w+)" is undefined', message)
    if undefined:
        name = undefined.group(1)
        owners = [v.name for v in project.variants if name in v.params]
        if owners:
            return (f"{name} is a parameter of {', '.join(owners)}: add it to this variant's "
                    f"params, or give it a default in the source (#ifndef {name} / "
                    f"#define {name} ... / #endif)")
        if name.isupper():
            return (f"define {name} in this variant's params, or in the source "
                    f"(#ifndef {name} / #define {name} ... / #endif)")
        return ""
    missing = re.search(r'(?:cannot|could not) open source file "([^"]+)"', message)
    if missing:
        return (f"<{missing.group(1)}> is not a header NVRTC has: device code needs no host "
                "header; CUDA's own (cuda_fp16.h, cooperative_groups.h, cuda/std/...) work, "
                "and a local header is included with quotes from the project folder")
    if "host functions are not allowed" in message:
        return ("NVRTC compiles device code only: keep kernels and __device__ functions in "
                "the .cu, and launch from the project's Python module (its `launch`)")
    return ""


def _program(project: Project, variant: Variant, nvrtc: Nvrtc, arch: str,
             size: Size) -> tuple[str, tuple[str, ...]]:
    """(what NVRTC compiles, its options) for `variant` at `size`, for its own target where it
    names one (`arch = "sm_90a"`) and `arch` otherwise; the options leave out the variant's
    own names where the source never asks for them (so that variants that differ only in name
    compile once)."""
    defined = variant_macros(project, variant, size, dict(variant.params))
    text = program_text(project.folder, variant.source or "")
    options = compile_options(defined, variant if "NCUH_" in text else None)
    return text, (*options, f"--gpu-architecture={variant.arch or arch}",
                  *(f"-I{folder}" for folder in nvrtc.include_dirs))


def _log_problems(log: str, project: Project) -> list[str]:
    problems: list[str] = []
    for line in log.splitlines():
        match = _ERROR.match(line.strip())
        if match:
            advice = hint(match["what"], project)
            problem = f"{match['where']}: {match['what']}"
            problem += f"; {advice}" if advice else ""
            if problem not in problems:
                problems.append(problem)
    last = (log.strip().splitlines() or ["no log"])[-1]
    return problems or [f"NVRTC failed: {last}"]


def compile_problems(project: Project, variant: Variant, nvrtc: Nvrtc, arch: str,
                     size: Size | None = None) -> list[str]:
    """Each distinct NVRTC error of `variant` at `size` (default: the profile size), one line
    each with what to write instead (the variant is not named: one error of a shared source
    is one line for all its variants); [] when it compiles."""
    return compile_variants(project, [variant], nvrtc, arch, size).problems[variant.name]


# Distinct compiles one check makes at most: each takes NVRTC a few tenths of a second, so a
# chain of this many takes about a minute on two cores.
MAX_COMPILES = 128


@dataclass(frozen=True)
class Compiled:
    """What `compile_variants` found: each variant's problems ([] when it compiled), and the
    variants it left uncompiled past `MAX_COMPILES`."""

    problems: dict[str, list[str]]
    skipped: tuple[str, ...]
    limit: int = MAX_COMPILES  # the most distinct programs compiled


def compile_variants(project: Project, variants: Sequence[Variant], nvrtc: Nvrtc, arch: str,
                     size: Size | None = None) -> Compiled:
    """Compile every NVRTC variant of `variants` at `size` (default: the profile size): each
    distinct program once, at most `MAX_COMPILES` of them, on every usable core."""
    size = size or project.profile_size
    limit = MAX_COMPILES
    problems: dict[str, list[str]] = {}
    programs: dict[tuple[str, tuple[str, ...]], list[str]] = {}  # program -> its variants
    skipped = []
    for variant in variants:
        if not variant.source:
            problems[variant.name] = []
            continue
        try:
            key = _program(project, variant, nvrtc, arch, size)
        except ProjectError as error:  # a source that cannot be read
            problems[variant.name] = [str(error)]
            continue
        except Exception as error:  # the user's `defines` is broken
            problems[variant.name] = [f"defines({size}, params) raised "
                                      f"{type(error).__name__}: {error}"]
            continue
        if key not in programs and len(programs) >= limit:
            skipped.append(variant.name)
            continue
        programs.setdefault(key, []).append(variant.name)

    def compiled(key: tuple[str, tuple[str, ...]]) -> list[str]:
        text, options = key
        source = project.variant(programs[key][0]).source or ""  # what errors are blamed on
        ok, log = nvrtc.compile(text, source, options)
        return [] if ok else _log_problems(log, project)

    # NVRTC is thread-safe across programs, and ctypes lets go of the GIL while it compiles.
    with ThreadPoolExecutor(max_workers=min(len(programs), usable_cores()) or 1) as pool:
        for key, found in zip(programs, pool.map(compiled, programs), strict=True):
            problems.update(dict.fromkeys(programs[key], found))
    return Compiled(problems, tuple(skipped), limit)
