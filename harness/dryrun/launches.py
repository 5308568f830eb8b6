"""A recorded kernel launch against the target's limits and the kernel's own parameters.

The geometry: a grid and a block of one to three whole numbers of at least one, within CUDA's
limits (2^31-1 x 65535 x 65535 blocks; 1024 x 1024 x 64 threads, 1024 in all) and dynamic
shared memory within what a block may have on the target. The arguments, as CuPy passes them
(a device array as its pointer, a NumPy scalar by its own type, a Python int as 64 bits, a
Python float as a double): as many as the kernel takes, a pointer where it takes a pointer, and
a scalar of the kernel's size and kind where it takes one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy

from harness.dryrun.cupy_standin import DeviceArray, KernelCall, MemoryPointer, extent
from harness.dryrun.targets import (
    DEFAULT_SHARED_MEMORY,
    MAX_BLOCK,
    MAX_GRID,
    MAX_THREADS_PER_BLOCK,
    Target,
)
from harness.gpu import Parameter

_AXES = "xyz"
_WORDS = {("i", 4): "a 32-bit integer", ("u", 4): "a 32-bit unsigned integer",
          ("i", 8): "a 64-bit integer", ("u", 8): "a 64-bit unsigned integer",
          ("f", 4): "a float", ("f", 8): "a double", ("f", 2): "a half",
          ("i", 2): "a 16-bit integer", ("u", 2): "a 16-bit unsigned integer",
          ("i", 1): "an 8-bit integer", ("u", 1): "an 8-bit unsigned integer",
          ("b", 1): "a bool"}
_NUMPY_TYPE = {("i", 4): "numpy.int32", ("u", 4): "numpy.uint32", ("i", 8): "numpy.int64",
               ("u", 8): "numpy.uint64", ("f", 4): "numpy.float32", ("f", 8): "numpy.float64",
               ("f", 2): "numpy.float16", ("i", 2): "numpy.int16", ("u", 2): "numpy.uint16",
               ("i", 1): "numpy.int8", ("u", 1): "numpy.uint8", ("b", 1): "numpy.bool_"}


def _whole(value: Any) -> bool:
    return isinstance(value, (int, numpy.integer)) and not isinstance(value, (bool, numpy.bool_))


def dims_problems(value: Any, what: str, limits: Sequence[int], tuple_only: bool) -> list[str]:
    """Why `value` cannot be a grid or block (`what`) of at most `limits` per axis."""
    if _whole(value):
        return [f"{what} {value} is a number, not a tuple: write ({value},)"]
    if isinstance(value, list) and tuple_only:
        return [f"{what} {value} is a list: CuPy takes a tuple, ({', '.join(map(str, value))},)"]
    if not isinstance(value, (tuple, list)) or not 1 <= len(value) <= 3:
        return [f"{what} {value!r} is not a tuple of one to three whole numbers"]
    odd = [item for item in value if not _whole(item)]
    if odd:
        return [f"{what} {tuple(value)} holds {odd[0]!r} ({type(odd[0]).__name__}), not a whole "
                "number"]
    problems = []
    for axis, (count, limit) in enumerate(zip(value, limits, strict=False)):
        if count < 1:
            problems.append(f"{what} {tuple(value)} has {count} in {_AXES[axis]}: a launch "
                            "needs at least 1 (CUDA: invalid configuration argument)")
        elif count > limit:
            problems.append(f"{what} {tuple(value)} has {count} in {_AXES[axis]}, more than "
                            f"CUDA's {limit}")
    return problems


def geometry_problems(call: KernelCall, target: Target) -> list[str]:
    """The grid, block and dynamic shared memory of `call` against `target`."""
    tuple_only = call.via != "launch"  # ncuh makes a tuple of a Launch's list itself
    problems = dims_problems(call.grid, "grid", MAX_GRID, tuple_only)
    block = dims_problems(call.block, "block", MAX_BLOCK, tuple_only)
    problems += block
    if not block and not _whole(call.block):
        threads = int(numpy.prod([int(count) for count in call.block]))
        if threads > MAX_THREADS_PER_BLOCK:
            problems.append(f"block {tuple(call.block)} has {threads} threads, more than the "
                            f"{MAX_THREADS_PER_BLOCK} a block may have")
    shared = call.shared_mem
    if not _whole(shared) or shared < 0:
        problems.append(f"shared_mem {shared!r} is not a whole number of bytes")
    elif shared > target.shared_memory_optin:
        problems.append(f"shared_mem {shared} bytes is more than a block may have on "
                        f"{target.arch} ({target.shared_memory_optin} bytes)")
    elif shared > max(DEFAULT_SHARED_MEMORY, call.opted_in) and call.via != "launch":
        problems.append(f"shared_mem {shared} bytes is past the {DEFAULT_SHARED_MEMORY} a "
                        f"kernel has unless it opts in: set {call.via}'s "
                        f"max_dynamic_shared_size_bytes to {shared} before the launch")
    return problems


def _describe(value: Any, name: Callable[[Any], str | None]) -> tuple[str, tuple[str, int] | str]:
    """(how to say it, what CuPy passes: (kind, bytes), "pointer" or "host array")."""
    if isinstance(value, DeviceArray):
        called = name(value)
        return (f"the array {called!r}" if called else f"an array of shape {value.shape}",
                "pointer")
    if isinstance(value, MemoryPointer) or value is None:
        return ("a device pointer" if value is not None else "None (a null pointer)",
                "pointer")
    if isinstance(value, numpy.ndarray):
        if value.size != 1:
            return f"a NumPy array of shape {value.shape} in host memory", "host array"
        value = value.reshape(()).dtype.type(value.reshape(()))
    if isinstance(value, numpy.generic):
        name = type(value).__name__
        article = "an" if name[0] in "aeio" else "a"
        return f"{article} {name} ({value})", (value.dtype.kind, value.dtype.itemsize)
    if isinstance(value, bool):
        return f"a Python bool ({value})", ("b", 1)
    if isinstance(value, int):
        return f"a Python int ({value}), which CuPy passes as a 64-bit integer", ("i", 8)
    if isinstance(value, float):
        return f"a Python float ({value}), which CuPy passes as a double", ("f", 8)
    return f"a {type(value).__name__}", "unsupported"


def _argument_problem(index: int, value: Any, parameter: Parameter | None,
                      name: Callable[[Any], str | None]) -> str | None:
    said, passes = _describe(value, name)
    where = f"argument {index + 1}" + (f" ({parameter.text})" if parameter else "")
    if passes == "host array":
        return (f"{where} is {said}: CuPy passes device arrays only (make it with cupy, or "
                "cupy.asarray it)")
    if passes == "unsupported":
        return f"{where} is {said}, which CuPy cannot pass to a kernel"
    if parameter is None:
        return None
    if parameter.pointer:
        if passes == "pointer" or passes in (("i", 8), ("u", 8)):
            return None  # an array, or a raw address
        return f"{where} is {said}, but the kernel takes a pointer there"
    if passes == "pointer":
        return f"{where} is {said}, but the kernel takes a value there, not a pointer"
    if parameter.scalar is None or passes == parameter.scalar:
        return None
    kind, size = passes  # type: ignore[misc]
    want_kind, want_size = parameter.scalar
    integers = "iub"
    if size == want_size and (kind in integers) == (want_kind in integers) and (
            kind == "f") == (want_kind == "f"):
        return None  # signed for unsigned, or a bool for a char: the same bytes
    return (f"{where} is {said}, but the kernel takes {_WORDS[parameter.scalar]}: pass "
            f"{_NUMPY_TYPE[parameter.scalar]}(...)")


def argument_problems(call: KernelCall, parameters: Sequence[Parameter] | None,
                      name: Callable[[Any], str | None]) -> list[str]:
    """The arguments of `call` against the kernel's `parameters` (None: unknown, so only what
    CuPy itself refuses); `name` says which input an array is."""
    if not isinstance(call.args, (tuple, list)):
        return [f"args {type(call.args).__name__} is not a tuple of the kernel's arguments"]
    problems = []
    if parameters is not None and len(call.args) != len(parameters):
        takes = ", ".join(p.text for p in parameters) or "none"
        problems.append(f"passes {len(call.args)} argument(s); kernel {call.kernel!r} takes "
                        f"{len(parameters)} ({takes})")
        parameters = None
    for index, value in enumerate(call.args):
        parameter = parameters[index] if parameters is not None else None
        problem = _argument_problem(index, value, parameter, name)
        if problem:
            problems.append(problem)
    return problems


def written_ranges(call: KernelCall, parameters: Sequence[Parameter] | None
                   ) -> list[tuple[int, int]]:
    """The byte ranges `call` may write: each array (or address) it passes, except where the
    kernel takes it as a pointer to const."""
    if not isinstance(call.args, (tuple, list)):
        return []
    known = parameters if parameters is not None and len(parameters) == len(call.args) else None
    ranges = []
    for index, value in enumerate(call.args):
        if known is not None and known[index].const:
            continue
        if isinstance(value, DeviceArray):
            ranges.append(extent(value))
        elif isinstance(value, MemoryPointer):
            ranges.append((value.ptr, value.ptr + 1))
        elif _whole(value) and known is not None and known[index].pointer:
            ranges.append((int(value), int(value) + 1))
    return ranges
