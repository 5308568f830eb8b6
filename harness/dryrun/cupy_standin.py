"""A stand-in for CuPy made of NumPy: what the project's Python sees of the GPU in a dry run.

Arrays are NumPy arrays (`DeviceArray`), `cupy.<function>` is NumPy's of the same name, random
draws are NumPy's (a block of them repeated; zeros where `values_matter` is off: the values are
never compared, only shapes and types matter), the device is the target's, and a kernel launch
(`RawKernel`, `RawModule`, `ElementwiseKernel`) or a copy is recorded in the `Recorder`, not
run. Allocations are weighed before they are made: past the host's limit or the target's
memory they stop the run (`TooMuchMemory`). What CuPy has beyond this is `Blocked`: using it
stops the run, named.
"""

from __future__ import annotations

import ctypes
import functools
import math
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy

try:
    from numpy.lib.array_utils import byte_bounds
except ImportError:  # NumPy before 2.0 has it at the top
    from numpy import byte_bounds  # type: ignore[attr-defined,no-redef]

from harness.dryrun.blocked import Blocked, NotStoodIn
from harness.dryrun.targets import Target

# Random draws are made this many at a time and repeated to the size asked for.
_DRAWN = 1 << 16


class TooMuchMemory(BaseException):
    """An allocation that would take the inputs past what the host stands in for, or past
    what the target GPU holds: the run at this size stops here."""

    def __init__(self, requested: int, limit: int, on_gpu: bool) -> None:
        super().__init__(requested)
        self.requested, self.limit, self.on_gpu = requested, limit, on_gpu


@dataclass
class KernelCall:
    """One kernel launch the project's Python asked for."""

    kernel: str
    grid: Any
    block: Any
    args: Any
    shared_mem: Any = 0
    code: str | None = None  # the CUDA source the kernel is in, where known
    via: str = "launch"  # what launched it: "launch" (ncuh's Launch), "cupy.RawKernel"
    opted_in: int = 0  # dynamic shared memory the kernel was allowed (max_dynamic_...)


@dataclass
class Recorder:
    """What the project's Python did on the stand-in GPU since the last `reset`."""

    target: Target
    host_limit: int
    calls: list[KernelCall] = field(default_factory=list)
    writes: list[tuple[int, int]] = field(default_factory=list)  # byte ranges written
    allocated: int = 0  # bytes allocated through the stand-in since `reset`
    # whether random draws must look like draws (where `expected` runs), or may be zeros
    values_matter: bool = True
    # arrays whose address the project's Python has seen (`.data`): where a raw address points
    seen: dict[int, numpy.ndarray] = field(default_factory=dict)

    def reset(self) -> None:
        """Forget the launches, writes and allocations (not the arrays seen)."""
        self.calls, self.writes, self.allocated = [], [], 0

    def forget(self) -> None:
        """Forget everything, the arrays seen too (a new size: new arrays)."""
        self.reset()
        self.seen = {}

    def allocate(self, nbytes: int) -> None:
        total = self.allocated + nbytes
        if self.target.memory is not None and total > self.target.memory:
            raise TooMuchMemory(total, self.target.memory, on_gpu=True)
        if total > self.host_limit:
            raise TooMuchMemory(total, self.host_limit, on_gpu=False)
        self.allocated = total


# The recorder of the dry run under way (set by `install`).
RECORDER: Recorder | None = None


def _recorder() -> Recorder:
    assert RECORDER is not None, "the CuPy stand-in is used outside a dry run"
    return RECORDER


def extent(value: Any) -> tuple[int, int]:
    """The bytes an array (or a view of one) spans: (first address, one past the last)."""
    low, high = byte_bounds(numpy.asarray(value))
    return int(low), int(high)


def _buffer_extent(array: numpy.ndarray) -> tuple[int, int]:
    """The bytes of the whole allocation a view belongs to."""
    root = array
    while isinstance(root.base, numpy.ndarray):
        root = root.base
    return extent(root)


class MemoryPointer:
    """`array.data`: the address of an array's first element, and copies into it."""

    def __init__(self, array: numpy.ndarray, offset: int = 0) -> None:
        self._array = array
        self.ptr = extent(array)[0] + offset
        self.mem = self

    def __add__(self, offset: int) -> MemoryPointer:
        return MemoryPointer(self._array, self.ptr - extent(self._array)[0] + int(offset))

    def __int__(self) -> int:
        return self.ptr

    def copy_from_device(self, source: MemoryPointer, size: int, stream: Any = None) -> None:
        copy_bytes(self.ptr, source.ptr, size, "copy_from_device")

    copy_from_device_async = copy_from_device
    copy_from = copy_from_device
    copy_from_async = copy_from_device

    def copy_from_host(self, source: Any, size: int, stream: Any = None) -> None:
        copy_bytes(self.ptr, int(getattr(source, "value", source) or 0), size,
                   "copy_from_host", host_source=True)

    copy_from_host_async = copy_from_host

    def memset(self, value: int, size: int, stream: Any = None) -> None:
        set_bytes(self.ptr, value, size, "memset")

    memset_async = memset

    def __getattr__(self, name: str) -> Any:
        raise NotStoodIn(f"cupy.cuda.MemoryPointer.{name}")


def _inside(address: int, size: int) -> numpy.ndarray | None:
    for array in _recorder().seen.values():
        low, high = _buffer_extent(array)
        if low <= address and address + size <= high:
            return array
    return None


def _checked(address: int, size: int, what: str, role: str) -> None:
    if size < 0:
        raise ValueError(f"{what}: a negative size ({size})")
    if _inside(address, size) is None:
        raise ValueError(f"{what}: {size} bytes at the {role} address {address:#x} are not "
                         "inside one array (past its end, or not a device array)")


def copy_bytes(destination: int, source: int, size: int, what: str,
               host_source: bool = False) -> None:
    """A device copy of `size` bytes, each end checked to lie inside one array."""
    size = int(size)
    _checked(destination, size, what, "destination")
    if not host_source:
        _checked(source, size, what, "source")
    ctypes.memmove(destination, source, size)
    _recorder().writes.append((destination, destination + size))


def set_bytes(destination: int, value: int, size: int, what: str) -> None:
    size = int(size)
    _checked(destination, size, what, "destination")
    ctypes.memset(destination, int(value), size)
    _recorder().writes.append((destination, destination + size))


class DeviceArray(numpy.ndarray):
    """A NumPy array standing in for a CuPy array in device memory."""

    @property
    def data(self) -> MemoryPointer:  # type: ignore[override]
        _recorder().seen[id(self)] = self
        return MemoryPointer(self)

    @property
    def device(self) -> Device:
        return Device(0)

    def get(self, stream: Any = None, order: str = "C", out: Any = None,
            blocking: bool = True) -> numpy.ndarray:
        host = numpy.array(self, order=order).view(numpy.ndarray)
        if out is not None:
            out[...] = host
            return out
        return host

    def set(self, array: Any, stream: Any = None) -> None:
        self[...] = array

    def toDlpack(self) -> Any:
        raise NotStoodIn("cupy.ndarray.toDlpack")


def _device(value: Any) -> Any:
    """NumPy's result as the stand-in's: an ndarray becomes a DeviceArray (the same memory)."""
    if isinstance(value, numpy.ndarray) and not isinstance(value, DeviceArray):
        return value.view(DeviceArray)
    if isinstance(value, tuple):
        return tuple(_device(item) for item in value)
    return value


def _count(shape: Any) -> int:
    if isinstance(shape, (int, numpy.integer)):
        return int(shape)
    return math.prod(int(extent) for extent in shape)


def _weighed(shape: Any, dtype: Any) -> None:
    count = _count(shape)
    if count < 0:
        raise ValueError(f"negative dimensions are not allowed: {shape}")
    _recorder().allocate(count * numpy.dtype(dtype).itemsize)


def empty(shape: Any, dtype: Any = float, order: str = "C") -> DeviceArray:
    _weighed(shape, dtype)
    return numpy.empty(shape, dtype, order).view(DeviceArray)


def zeros(shape: Any, dtype: Any = float, order: str = "C") -> DeviceArray:
    _weighed(shape, dtype)
    return numpy.zeros(shape, dtype, order).view(DeviceArray)


def ones(shape: Any, dtype: Any = float, order: str = "C") -> DeviceArray:
    array = empty(shape, dtype, order)
    array.fill(1)
    return array


def full(shape: Any, fill_value: Any, dtype: Any = None, order: str = "C") -> DeviceArray:
    array = empty(shape, numpy.result_type(fill_value) if dtype is None else dtype, order)
    array.fill(fill_value)
    return array


def _prototype(prototype: Any, dtype: Any, shape: Any) -> tuple[Any, Any]:
    host = numpy.asarray(prototype)
    return (host.shape if shape is None else shape), (host.dtype if dtype is None else dtype)


def empty_like(prototype: Any, dtype: Any = None, order: str = "K", subok: Any = None,
               shape: Any = None) -> DeviceArray:
    return empty(*_prototype(prototype, dtype, shape))


def zeros_like(prototype: Any, dtype: Any = None, order: str = "K", subok: Any = None,
               shape: Any = None) -> DeviceArray:
    return zeros(*_prototype(prototype, dtype, shape))


def ones_like(prototype: Any, dtype: Any = None, order: str = "K", subok: Any = None,
              shape: Any = None) -> DeviceArray:
    return ones(*_prototype(prototype, dtype, shape))


def full_like(prototype: Any, fill_value: Any, dtype: Any = None, order: str = "K",
              subok: Any = None, shape: Any = None) -> DeviceArray:
    shape, dtype = _prototype(prototype, dtype, shape)
    return full(shape, fill_value, dtype)


def arange(*args: Any, dtype: Any = None) -> DeviceArray:
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (*args[:2], 1) \
        if len(args) == 2 else args[:3]
    count = max(0, math.ceil((stop - start) / step))
    whole = all(isinstance(a, (int, numpy.integer)) for a in (start, stop, step))
    _weighed(count, dtype if dtype is not None else numpy.int64 if whole else numpy.float64)
    return numpy.arange(*args, dtype=dtype).view(DeviceArray)


def array(value: Any, dtype: Any = None, copy: bool = True, order: str = "K",
          **kwargs: Any) -> DeviceArray:
    host = numpy.array(value, dtype=dtype, order=order)
    _weighed(host.shape, host.dtype)
    return host.view(DeviceArray)


def asarray(value: Any, dtype: Any = None, order: str | None = None,
            **kwargs: Any) -> DeviceArray:
    if isinstance(value, DeviceArray) and (dtype is None or value.dtype == dtype):
        return value
    return array(value, dtype=dtype, order=order or "K")


def ascontiguousarray(value: Any, dtype: Any = None) -> DeviceArray:
    return array(value, dtype=dtype, order="C")


def asnumpy(value: Any, stream: Any = None, order: str = "C", out: Any = None,
            blocking: bool = True) -> numpy.ndarray:
    host = numpy.array(value, order=order).view(numpy.ndarray)
    if out is not None:
        out[...] = host
        return out
    return host


# --- random numbers -------------------------------------------------------------------------

# method -> where its `size` argument sits among the positional arguments
_SIZE_AT = {"random": 0, "standard_normal": 0, "standard_exponential": 0, "random_sample": 0,
            "normal": 2, "uniform": 2, "integers": 2, "exponential": 1, "randint": 2,
            "standard_gamma": 1, "gamma": 2, "poisson": 1, "lognormal": 2, "binomial": 2}


class Generator:
    """`cupy.random.default_rng(seed)` (and `RandomState`): NumPy's draws, in CuPy's form
    (a `dtype` where NumPy has none)."""

    def __init__(self, seed: Any = None) -> None:
        self._numpy = numpy.random.default_rng(None if seed is None else int(seed) % 2**63)

    def __getattr__(self, name: str) -> Callable[..., DeviceArray]:
        if name not in _SIZE_AT:
            raise NotStoodIn(f"cupy.random.Generator.{name}")
        return functools.partial(self._draw, name, _SIZE_AT[name])

    def _draw(self, name: str, size_at: int, *args: Any, **kwargs: Any) -> Any:
        dtype = kwargs.pop("dtype", None)
        size = kwargs.pop("size", None)
        if size is None and len(args) > size_at:
            size, args = args[size_at], args[:size_at] + args[size_at + 1:]
        method = getattr(self._numpy, "integers" if name == "randint" else name)
        if size is None:
            return method(*args, **kwargs)
        count = _count(size)
        drawn = numpy.asarray(method(*args, size=min(count, _DRAWN), **kwargs))
        chosen = numpy.dtype(dtype) if dtype is not None else drawn.dtype
        if not _recorder().values_matter:
            return zeros(size, chosen)  # no page of it is touched unless the project does
        _weighed(size, chosen)
        return numpy.resize(drawn.astype(chosen), count).reshape(size).view(DeviceArray)

    # the legacy module-level functions take dims as positional arguments
    def rand(self, *dims: int, dtype: Any = float) -> DeviceArray:
        return self._draw("random", 0, size=dims, dtype=dtype)

    def randn(self, *dims: int, dtype: Any = float) -> DeviceArray:
        return self._draw("standard_normal", 0, size=dims, dtype=dtype)


def _random_module() -> types.ModuleType:
    module = types.ModuleType("cupy.random")
    state = Generator(0)
    module.default_rng = Generator  # type: ignore[attr-defined]
    module.Generator = Generator  # type: ignore[attr-defined]
    module.RandomState = Generator  # type: ignore[attr-defined]
    module.seed = lambda seed=None: state.__init__(seed)  # type: ignore[attr-defined]
    module.__getattr__ = lambda name: _dunder(name) or getattr(state, name)  # type: ignore[attr-defined]
    return module


# --- kernels --------------------------------------------------------------------------------


class RawKernel:
    """`cupy.RawKernel(code, name)`: a launch of it is recorded, not run."""

    def __init__(self, code: str, name: str, options: Sequence[str] = (), *args: Any,
                 **kwargs: Any) -> None:
        self.code, self.name, self.options = code, name, tuple(options)
        self.max_dynamic_shared_size_bytes = 0

    def __call__(self, grid: Any, block: Any, args: Any, *, shared_mem: Any = 0,
                 stream: Any = None, enable_cooperative_groups: bool = False) -> None:
        _recorder().calls.append(KernelCall(self.name, grid, block, args, shared_mem,
                                            self.code, "cupy.RawKernel",
                                            self.max_dynamic_shared_size_bytes))

    def compile(self, log_stream: Any = None) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        raise NotStoodIn(f"cupy.RawKernel.{name}")


class RawModule:
    """`cupy.RawModule(code=...)`: its functions are `RawKernel`s of the same code."""

    def __init__(self, code: str | None = None, path: str | None = None,
                 options: Sequence[str] = (), *args: Any, **kwargs: Any) -> None:
        if code is None:
            raise NotStoodIn("cupy.RawModule(path=...)")
        self.code, self.options = code, tuple(options)

    def get_function(self, name: str) -> RawKernel:
        return RawKernel(self.code, name, self.options)

    def compile(self, log_stream: Any = None) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        raise NotStoodIn(f"cupy.RawModule.{name}")


class ElementwiseKernel:
    """`cupy.ElementwiseKernel`: a call writes its output arrays (made where not given)."""

    def __init__(self, in_params: str, out_params: str, operation: str, name: str = "kernel",
                 *args: Any, **kwargs: Any) -> None:
        self.name = name
        self.inputs = [part.split()[-2:] for part in in_params.split(",") if part.strip()]
        self.outputs = [part.split()[-2:] for part in out_params.split(",") if part.strip()]

    def __call__(self, *args: Any, size: int | None = None, block_size: int | None = None
                 ) -> Any:
        given = len(args) - len(self.inputs)
        if given not in (0, len(self.outputs)):
            raise TypeError(f"Wrong number of arguments for {self.name!r}: "
                            f"{len(self.inputs)} or {len(self.inputs) + len(self.outputs)} "
                            f"expected, {len(args)} given")
        outputs = list(args[len(self.inputs):])
        if not outputs:
            shape = numpy.broadcast_shapes(*(numpy.shape(a) for a in args)) if args else (size,)
            first = next((a.dtype for a in args if isinstance(a, numpy.ndarray)), numpy.float64)
            outputs = [empty(shape, _numpy_type(kind) or first) for kind, _ in self.outputs]
        recorder = _recorder()
        recorder.writes += [extent(out) for out in outputs if isinstance(out, numpy.ndarray)]
        return outputs[0] if len(outputs) == 1 else tuple(outputs)


def _numpy_type(name: str) -> numpy.dtype | None:
    try:
        return numpy.dtype(name)
    except TypeError:
        return None  # a type parameter such as T


# --- the device, streams, the runtime -------------------------------------------------------


class _Inert:
    """A CuPy object whose work the dry run has no need of: it is used, synchronizes and is a
    context manager; anything else of CuPy's stops the run, named (`cupy_name`)."""

    cupy_name = "cupy"

    def use(self) -> _Inert:
        return self

    def synchronize(self) -> None:
        pass

    def __enter__(self) -> _Inert:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        raise NotStoodIn(f"{self.cupy_name}.{name}")


class Device(_Inert):
    """`cupy.cuda.Device(i)`: the target GPU, whatever its number."""

    cupy_name = "cupy.cuda.Device"

    def __init__(self, device: int | None = None) -> None:
        self.id = 0 if device is None else int(device)

    @property
    def attributes(self) -> dict[str, int]:
        return _recorder().target.device_attributes()

    @property
    def compute_capability(self) -> str:
        target = _recorder().target
        return f"{target.major}{target.minor}"


class Stream(_Inert):
    """`cupy.cuda.Stream`: work on it is recorded like any other."""

    cupy_name = "cupy.cuda.Stream"
    null: Stream

    def __init__(self, null: bool = False, non_blocking: bool = False, ptds: bool = False
                 ) -> None:
        self.ptr = 0 if null else id(self)


Stream.null = Stream(null=True)


class Event(_Inert):
    """`cupy.cuda.Event`: recorded and waited on at once."""

    cupy_name = "cupy.cuda.Event"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def record(self, stream: Any = None) -> None:
        pass


def _dunder(name: str) -> None:
    """A module's attributes such as `__file__` are not the library's: absent."""
    if name.startswith("__"):
        raise AttributeError(name)


def _blocked_from(prefix: str) -> Callable[[str], Blocked]:
    """A module `__getattr__` that gives `Blocked` names under `prefix`."""

    def attribute(name: str) -> Blocked:
        _dunder(name)
        return Blocked(f"{prefix}.{name}")

    return attribute


def _runtime_module() -> types.ModuleType:
    module = types.ModuleType("cupy.cuda.runtime")
    values: dict[str, Any] = {
        "getDeviceCount": lambda: 1, "getDevice": lambda: 0, "setDevice": lambda device: None,
        "deviceSynchronize": lambda: None, "runtimeGetVersion": lambda: 13000,
        "driverGetVersion": lambda: 13000,
        "getDeviceProperties": lambda device: _recorder().target.device_properties(),
        "memcpyHostToHost": 0, "memcpyHostToDevice": 1, "memcpyDeviceToHost": 2,
        "memcpyDeviceToDevice": 3, "memcpyDefault": 4,
        "memcpy": lambda dst, src, size, kind: copy_bytes(dst, src, size, "memcpy",
                                                          host_source=kind in (0, 1)),
        "memcpyAsync": lambda dst, src, size, kind, stream: copy_bytes(
            dst, src, size, "memcpyAsync", host_source=kind in (0, 1)),
        "memset": lambda dst, value, size: set_bytes(dst, value, size, "memset"),
        "memsetAsync": lambda dst, value, size, stream: set_bytes(dst, value, size,
                                                                  "memsetAsync"),
    }
    module.__dict__.update(values)
    module.__getattr__ = _blocked_from("cupy.cuda.runtime")  # type: ignore[attr-defined]
    return module


def _nvtx_module() -> types.ModuleType:
    module = types.ModuleType("cupy.cuda.nvtx")
    for name in ("RangePush", "RangePop", "Mark", "RangePushC", "MarkC"):
        setattr(module, name, lambda *args, **kwargs: None)
    return module


def _cuda_module(runtime: types.ModuleType, nvtx: types.ModuleType) -> types.ModuleType:
    module = types.ModuleType("cupy.cuda")
    module.__path__ = []  # type: ignore[attr-defined]  # a package: `import cupy.cuda.x`
    module.__dict__.update({
        "Device": Device, "Stream": Stream, "Event": Event, "MemoryPointer": MemoryPointer,
        "runtime": runtime, "nvtx": nvtx, "is_available": lambda: True,
        "get_current_stream": lambda *args: Stream.null,
        "get_elapsed_time": lambda start, end: 0.0,
        "alloc": lambda size: MemoryPointer(empty(int(size), numpy.uint8)),
    })
    module.__getattr__ = _blocked_from("cupy.cuda")  # type: ignore[attr-defined]
    return module


def _numpy_face(name: str, source: types.ModuleType) -> types.ModuleType:
    """A module whose functions are `source`'s, returning DeviceArrays."""
    module = types.ModuleType(name)

    def attribute(attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        found = getattr(source, attr, None)
        if found is None:
            return Blocked(f"{name}.{attr}")
        if isinstance(found, types.ModuleType):
            return _numpy_face(f"{name}.{attr}", found)
        if callable(found) and not isinstance(found, (type, numpy.ufunc)):
            return functools.wraps(found)(lambda *args, **kwargs: _device(found(*args,
                                                                                 **kwargs)))
        return found

    module.__getattr__ = attribute  # type: ignore[attr-defined]
    return module


def modules() -> dict[str, types.ModuleType]:
    """The stand-in `cupy` and its modules, by the names `import` finds them under."""
    runtime, nvtx = _runtime_module(), _nvtx_module()
    cuda = _cuda_module(runtime, nvtx)
    random = _random_module()
    cupy = _numpy_face("cupy", numpy)
    cupy.__path__ = []  # type: ignore[attr-defined]
    cupy.__dict__.update({
        "__version__": "0+ncuh.check", "ndarray": DeviceArray, "cuda": cuda, "random": random,
        "linalg": _numpy_face("cupy.linalg", numpy.linalg),
        "fft": _numpy_face("cupy.fft", numpy.fft),
        "RawKernel": RawKernel, "RawModule": RawModule, "ElementwiseKernel": ElementwiseKernel,
        "empty": empty, "zeros": zeros, "ones": ones, "full": full, "empty_like": empty_like,
        "zeros_like": zeros_like, "ones_like": ones_like, "full_like": full_like,
        "arange": arange, "array": array, "asarray": asarray,
        "ascontiguousarray": ascontiguousarray, "asnumpy": asnumpy,
        "is_available": lambda: True,
    })
    cupy.get_array_module = lambda *args: cupy  # type: ignore[attr-defined]
    return {"cupy": cupy, "cupy.cuda": cuda, "cupy.cuda.runtime": runtime,
            "cupy.cuda.nvtx": nvtx, "cupy.random": random,
            "cupy.linalg": cupy.linalg, "cupy.fft": cupy.fft}


def install(recorder: Recorder) -> None:
    """Make `recorder` the one the stand-in reports to."""
    global RECORDER
    RECORDER = recorder
