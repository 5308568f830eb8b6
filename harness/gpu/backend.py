"""Make a variant runnable: compile an NVRTC source, or wrap a Python launcher. Nothing else.

`prepare(project, variant, size, params)` takes parameters already resolved by the caller
(defaults, `--params`, or a tuning winner: see `harness.gpu.tuning`); it checks them against
the variant's constraints, compiles the source (NVRTC through CuPy's RawModule, -std=c++17
-lineinfo, every parameter and every `defines` macro as -D, local `#include "x.cuh"` inlined
with #line so ncu's source view names the real files) and returns a `Runnable`: call it with
the inputs to launch the variant once. A `call=` variant's `Runnable` calls the user's
launcher; the project's reference and limits are wrapped the same way.

Several kernels may share one .cu file: each variant's compile also defines the parameters of
the other variants of that file at their defaults (its own win) and `NCUH_VARIANT_<name>`,
`NCUH_KERNEL_<kernel>`; a prelude and stub C headers give NVRTC what `nvcc -c` has (INFINITY).
CuPy is imported lazily so that `ncuh list` and the CPU tests never need it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import NcuhError, ProjectError, first_error_line
from harness.gpu.env import require_gpu
from harness.project import OUTSIDE_ENV, Launch, Project, Size, Variant, inside_project

# Compiled functions by (source text, options, kernel): NVRTC runs once per configuration per
# process; CuPy's own disk cache (~/.cupy/kernel_cache) keeps them across processes.
_MODULES: dict[tuple[str, tuple[str, ...]], Any] = {}
_INCLUDE = re.compile(r'^#include "([\w./-]+)"\s*$', re.MULTILINE)
# Dynamic shared memory above this needs the kernel's opt-in attribute.
DEFAULT_DYNAMIC_SMEM = 48 * 1024
# Small stand-ins for the C headers NVRTC does not have (<math.h>, <stdint.h>, <float.h>,
# <climits>, <stdio.h> and their <c...> forms), so a kernel written for `nvcc -c` compiles.
STUB_INCLUDE = Path(__file__).with_name("include")
# What nvcc's implicit <math.h> gives every kernel and NVRTC does not: INFINITY and NAN. Put
# before the `#line 1` of the source, so line numbers and ncu's source view are unchanged.
PRELUDE = """#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
"""


# NVRTC's time grows faster than a source's length (minutes well before a megabyte): a source
# with its local headers is held to this, far past any hand-written kernel file.
MAX_SOURCE_BYTES = 256 * 1024


def _read_source(path: Path, read: int) -> str:
    """A source file's text: UTF-8, and within what is left of `MAX_SOURCE_BYTES` after
    `read` bytes; a `ProjectError` of one line otherwise."""
    try:
        with path.open("rb") as stream:
            raw = stream.read(MAX_SOURCE_BYTES - read + 1)
    except OSError as error:
        raise ProjectError(f"{path}: cannot be read ({error.strerror or error})") from None
    if read + len(raw) > MAX_SOURCE_BYTES:
        raise ProjectError(f"{path}: more than {MAX_SOURCE_BYTES // 1024} KiB of CUDA source "
                           "with its local headers, more than ncuh compiles (NVRTC would take "
                           "minutes): keep each variant's kernels in a smaller file")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ProjectError(f"{path}: not UTF-8 text (byte {error.start} is "
                           f"{raw[error.start]:#04x}); CUDA sources are read as UTF-8") \
            from None


def source_text(folder: Path, source: str) -> str:
    """The CUDA source with local headers inlined (so CuPy's cache key covers them);
    `ProjectError` for a source that is not UTF-8 or is too large."""
    main_text = _read_source(folder / source, 0)
    read = [len(main_text.encode())]

    def inline(match: re.Match[str]) -> str:
        header_path = inside_project(folder, match.group(1))
        if header_path is None:
            raise ProjectError(f"{folder / source}: #include {match.group(1)!r} leads outside "
                               f"the project folder (set {OUTSIDE_ENV}=1 to allow files "
                               "outside it)")
        if not header_path.is_file():
            return match.group(0)  # a system or toolkit header: NVRTC finds it
        # `#pragma once` makes no sense once inlined (NVRTC warns about it in a main file).
        header = _read_source(header_path, read[0]).replace("#pragma once\n", "")
        read[0] += len(header.encode())
        # #line keeps -lineinfo (ncu's source view, the writeup's hot instructions) pointing
        # at the real file and line, not at CuPy's hashed temporary name.
        resume = main_text.count("\n", 0, match.end()) + 2
        return f'#line 1 "{match.group(1)}"\n{header}\n#line {resume} "{source}"'

    return f'#line 1 "{source}"\n' + _INCLUDE.sub(inline, main_text)


def program_text(folder: Path, source: str) -> str:
    """What NVRTC compiles: the prelude, then the source with its local headers inlined."""
    return PRELUDE + source_text(folder, source)


def shared_defaults(project: Project, variant: Variant) -> dict[str, int]:
    """The parameters that other variants of the same source define, at their defaults.

    A .cu file may hold several kernels, each sized by its own variant's parameters; every
    variant's compile defines the others' too (its own values win), so that
    `__launch_bounds__(BLOCK)` of one kernel compiles for the variant of another.
    """
    shared: dict[str, int] = {}
    for other in project.variants:
        if other.source == variant.source and other.name != variant.name:
            for key, value in other.params.items():
                shared.setdefault(key, value)
    return shared


def variant_macros(project: Project, variant: Variant, size: Size,
                   params: dict[str, int]) -> dict[str, int]:
    """Every -D macro of `variant`: the other kernels' defaults, then its own `macros`."""
    return {**shared_defaults(project, variant), **macros(variant, size, params)}


def identity_macros(variant: Variant) -> tuple[str, ...]:
    """`-DNCUH_VARIANT_<name>` and `-DNCUH_KERNEL_<kernel>`: a source can tell which variant
    it is compiled for (`#ifdef NCUH_KERNEL_softmax_warp`) and leave the other kernels out."""
    names = [f"NCUH_VARIANT_{variant.name}"]
    if variant.kernel:
        names.append(f"NCUH_KERNEL_{variant.kernel}")
    return tuple(f"-D{re.sub(r'[^A-Za-z0-9_]', '_', name)}=1" for name in names)


def macros(variant: Variant, size: Size, params: dict[str, int]) -> dict[str, int]:
    """Every -D macro: the parameters, then what the variant's `defines` adds for this size."""
    defined = dict(params)
    if variant.defines is not None:
        extra = variant.defines(size, dict(params)) or {}
        defined.update({str(key): int(value) for key, value in extra.items()})
    return defined


def compile_options(defined: dict[str, int], variant: Variant | None = None) -> tuple[str, ...]:
    """NVRTC options: C++17, line info for ncu's source view, the stub headers, one -D per
    macro, then the variant's own names (`identity_macros`)."""
    return ("--std=c++17", "-lineinfo", f"-I{STUB_INCLUDE}",
            *(f"-D{key}={value}" for key, value in sorted(defined.items())),
            *(identity_macros(variant) if variant is not None else ()))


def arch_options(variant: Variant) -> tuple[str, ...]:
    """The target a variant names (`arch = "sm_90a"`), else none: CuPy adds the GPU's own
    `-arch=sm_XX` after the options it is given, and NVRTC keeps the arch-specific features
    of an `sm_90a` named before it, so wgmma and setmaxnreg compile."""
    return (f"--gpu-architecture={variant.arch}",) if variant.arch else ()


def compile_module(folder: Path, variant: Variant, options: tuple[str, ...]) -> Any:
    """The CuPy RawModule of `variant`'s source with `options` (cached per process)."""
    cupy = require_gpu()
    text = program_text(folder, variant.source or "")
    key = (text, options)
    if key not in _MODULES:
        try:
            module = cupy.RawModule(code=text, options=options, backend="nvrtc")
            module.compile()
        except cupy.cuda.compiler.CompileException as error:
            given = [o for o in options if o.startswith("-D") and not o.startswith("-DNCUH_")]
            raise NcuhError(
                f"{variant.name} failed to compile with {' '.join(given) or 'no -D'}: "
                f"{first_error_line(error)}"
            ) from None
        _MODULES[key] = module
    return _MODULES[key]


@dataclass
class Runnable:
    """A variant (or the reference, or a limit) ready to launch at one size."""

    name: str
    size: Size
    params: dict[str, int]  # what it was given (defaults merged with overrides)
    defines: dict[str, int] = field(default_factory=dict)  # every -D macro it was compiled with
    kernel_name: str | None = None
    _launch: Callable[[dict[str, Any]], Any] = field(default=lambda inputs: None, repr=False)
    _module: Any = field(default=None, repr=False)
    # Looked up once: a timed launch should pay for the launch, not for finding the function.
    _functions: dict[str | None, Any] = field(default_factory=dict, repr=False)
    _opted_in: dict[str | None, int] = field(default_factory=dict, repr=False)

    def __call__(self, inputs: dict[str, Any]) -> None:
        """Launch once on the current stream (asynchronously)."""
        self._launch(inputs)

    def function(self, kernel: str | None = None) -> Any:
        """The compiled `__global__` (registers, spills: `.num_regs`, `.local_size_bytes`)."""
        if self._module is None:
            raise NcuhError(f"{self.name} is a Python launcher: no compiled function")
        name = kernel or self.kernel_name
        if name not in self._functions:
            try:
                self._functions[name] = self._module.get_function(name)
            except Exception as error:
                raise NcuhError(f"{self.name}: the source has no __global__ {name!r} "
                                f"({first_error_line(error)})") from None
        return self._functions[name]

    def opt_in(self, kernel: str | None, shared_mem: int) -> None:
        """Allow `shared_mem` bytes of dynamic shared memory (needed past 48 KiB)."""
        name = kernel or self.kernel_name
        if shared_mem > max(self._opted_in.get(name, 0), DEFAULT_DYNAMIC_SMEM):
            self.function(name).max_dynamic_shared_size_bytes = shared_mem
            self._opted_in[name] = shared_mem

    @property
    def registers(self) -> int | None:
        return None if self._module is None else int(self.function().num_regs)

    @property
    def spill_bytes(self) -> int | None:
        return None if self._module is None else int(self.function().local_size_bytes)


def _nvrtc_launcher(variant: Variant, size: Size, params: dict[str, int],
                    runnable: Runnable) -> Callable[[dict[str, Any]], None]:
    def launch(inputs: dict[str, Any]) -> None:
        planned = variant.launch(size, dict(params), inputs)  # type: ignore[misc]
        launches = planned if isinstance(planned, (list, tuple)) else [planned]
        for one in launches:
            one = Launch.coerce(one)
            function = runnable.function(one.kernel)
            runnable.opt_in(one.kernel, one.shared_mem)
            function(tuple(one.grid), tuple(one.block), tuple(one.args),
                     shared_mem=one.shared_mem)

    return launch


def prepare(project: Project, variant: Variant | str, size: Size,
            params: dict[str, Any] | None = None) -> Runnable:
    """Check, compile (cached) and return `variant` for `size` with `params` (resolved by the
    caller; None means the defaults). Invalid parameters raise `NcuhError` and sizes the
    variant cannot take `UnsupportedShapeError`, both before compiling; no GPU, `NoGpuError`.
    """
    variant = project.resolve(variant)
    merged = project.check_params(variant, params, size)
    require_gpu()
    if variant.call is not None:
        call = variant.call
        return Runnable(variant.name, size, merged, kernel_name=variant.kernel,
                        _launch=lambda inputs: call(inputs, size, dict(merged)))
    defined = variant_macros(project, variant, size, merged)
    module = compile_module(project.folder, variant,
                            compile_options(defined, variant) + arch_options(variant))
    runnable = Runnable(variant.name, size, merged, defined, variant.kernel, _module=module)
    runnable.function()  # a missing __global__ is this variant's compile error
    runnable._launch = _nvrtc_launcher(variant, size, merged, runnable)
    return runnable


def prepare_call(name: str, call: Callable[..., Any], size: Size) -> Runnable:
    """The project's reference or a limit: `call(inputs, size)` launches it once."""
    require_gpu()
    return Runnable(name, size, {}, _launch=lambda inputs: call(inputs, size))
