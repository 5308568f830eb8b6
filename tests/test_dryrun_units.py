"""The dry run's parts on their own: launch limits on both sides of each bound, arguments as
CuPy passes them, the blocked GPU libraries and the CuPy stand-in's copies."""

from __future__ import annotations

import sys

import numpy
import pytest

from harness.dryrun.blocked import NotStoodIn, blocked
from harness.dryrun.cupy_standin import (
    DeviceArray,
    KernelCall,
    MemoryPointer,
    Recorder,
    TooMuchMemory,
    install,
    modules,
)
from harness.dryrun.launches import argument_problems, geometry_problems
from harness.dryrun.targets import target
from harness.gpu.source_check import kernels

SM90 = target("sm_90")
KERNEL = kernels('extern "C" __global__ void k(const float *x, float *out, int n, '
                 'unsigned long long m, double scale, bool flag) {}')["k"]


def _geometry(grid, block, shared=0, via="launch", opted_in=0):  # type: ignore[no-untyped-def]
    return geometry_problems(KernelCall("k", grid, block, (), shared, None, via, opted_in), SM90)


@pytest.mark.parametrize(("grid", "block", "shared", "problem"), [
    ((2**31 - 1, 65535, 65535), (1024,), 0, None),
    ((2**31,), (1,), 0, "grid (2147483648,) has 2147483648 in x, more than CUDA's 2147483647"),
    ((1, 65536), (1,), 0, "grid (1, 65536) has 65536 in y, more than CUDA's 65535"),
    ((1, 1, 65536), (1,), 0, "grid (1, 1, 65536) has 65536 in z, more than CUDA's 65535"),
    ((1,), (1024, 1, 1), 0, None),
    ((1,), (1025,), 0, "block (1025,) has 1025 in x, more than CUDA's 1024"),
    ((1,), (1, 1, 64), 0, None),
    ((1,), (1, 1, 65), 0, "block (1, 1, 65) has 65 in z, more than CUDA's 64"),
    ((1,), (32, 32), 0, None),
    ((1,), (32, 33), 0, "block (32, 33) has 1056 threads, more than the 1024 a block may have"),
    ((0,), (32,), 0, "grid (0,) has 0 in x: a launch needs at least 1 (CUDA: invalid "
                     "configuration argument)"),
    ((1,), (32,), 232448, None),
    ((1,), (32,), 232449, "shared_mem 232449 bytes is more than a block may have on sm_90 "
                          "(232448 bytes)"),
    (4096, (32,), 0, "grid 4096 is a number, not a tuple: write (4096,)"),
    ((16.0,), (32,), 0, "grid (16.0,) holds 16.0 (float), not a whole number"),
    ((1, 1, 1, 1), (32,), 0, "grid (1, 1, 1, 1) is not a tuple of one to three whole numbers"),
])
def test_launch_geometry_on_both_sides_of_each_limit(grid, block, shared, problem) -> None:  # type: ignore[no-untyped-def]
    assert _geometry(grid, block, shared) == ([problem] if problem else [])


def test_a_rawkernel_takes_tuples_and_opts_in_past_48_kib(golden) -> None:
    assert _geometry([4], (32,), via="cupy.RawKernel") == [
        "grid [4] is a list: CuPy takes a tuple, (4,)"]
    assert _geometry([4], (32,)) == []  # ncuh makes a tuple of a Launch's list itself
    assert _geometry((4,), (32,), 49152, via="cupy.RawKernel") == []
    past = _geometry((4,), (32,), 49153, via="cupy.RawKernel")
    assert len(past) == 1 and "max_dynamic_shared_size_bytes to 49153" in past[0]
    golden("rawkernel_shared_memory_without_opting_in", past[0] + "\n")
    assert _geometry((4,), (32,), 65536, via="cupy.RawKernel", opted_in=65536) == []
    assert _geometry((4,), (32,), 65536) == []  # ncuh opts in for a variant's own launches


def _arguments(*args):  # type: ignore[no-untyped-def]
    call = KernelCall("k", (1,), (1,), args, 0, "", "launch")
    return argument_problems(call, KERNEL.parameters, lambda value: None)


def test_arguments_as_cupy_passes_them_against_the_kernels_parameters(golden) -> None:
    x, out = numpy.zeros(4, numpy.float32).view(DeviceArray), numpy.zeros(4).view(DeviceArray)
    fine = (x, out, numpy.int32(4), numpy.uint64(2), numpy.float64(0.5), numpy.bool_(True))
    assert _arguments(*fine) == []
    assert _arguments(None, MemoryPointer(out), numpy.uint32(4), numpy.int64(2), 0.5, True) == []
    said = [_arguments(*fine[:5]),
            _arguments(x, out, numpy.int64(4), 2, numpy.float32(0.5), numpy.bool_(True)),
            _arguments(x, out, numpy.float32(4), 2, 0.5, True),
            _arguments(numpy.zeros(4), out, numpy.int32(4), 2, 0.5, True),
            _arguments(x, "out", numpy.int32(4), 2, 0.5, True)]
    assert [len(problems) for problems in said] == [1, 2, 1, 1, 1]
    golden("arguments_against_parameters",
           "".join(f"{problem}\n" for problems in said for problem in problems))


def test_a_blocked_library_imports_and_stops_at_its_first_use() -> None:
    before = {name: sys.modules.get(name) for name in ("torch", "triton")}
    with blocked(("torch", "triton")):
        import torch
        import torch.nn.functional as functional
        from triton import language as tl

        with pytest.raises(NotStoodIn, match=r"^torch\.cuda\.synchronize$"):
            torch.cuda.synchronize()
        with pytest.raises(NotStoodIn, match=r"^torch\.Tensor$"):
            isinstance(object(), torch.Tensor)
        with pytest.raises(NotStoodIn, match=r"^triton\.language\.constexpr$"):
            tl.constexpr(1)
        try:
            functional.relu(1)
        except Exception:  # a project's own handler does not swallow it
            pytest.fail("NotStoodIn was caught as an Exception")
        except NotStoodIn as stop:
            assert stop.what == "torch.nn.functional.relu"
    assert {name: sys.modules.get(name) for name in before} == before  # put back as it was


def test_the_stand_in_copies_within_arrays_and_refuses_past_their_ends() -> None:
    install(Recorder(SM90, 2**20))
    with blocked(("cupy",), modules()):
        import cupy

        x = cupy.arange(8, dtype=cupy.float32)
        out = cupy.zeros(8, dtype=cupy.float32)
        out.data.copy_from_device_async(x.data, x.nbytes, cupy.cuda.get_current_stream())
        assert out.tolist() == list(range(8))
        runtime = cupy.cuda.runtime
        with pytest.raises(ValueError, match="are not inside one array"):
            runtime.memcpyAsync(out.data.ptr, x.data.ptr, x.nbytes + 4,
                                runtime.memcpyDeviceToDevice, 0)
        with pytest.raises(TooMuchMemory):
            cupy.empty(2**21, dtype=cupy.uint8)  # past the host limit given above
        assert cupy.cuda.Device().attributes["MultiProcessorCount"] == 132
        with pytest.raises(NotStoodIn, match=r"^cupy\.cuda\.cub\.cub_reduction$"):
            from cupy.cuda import cub

            cub.cub_reduction(x, 0)
