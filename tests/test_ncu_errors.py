"""Reading ncu's output: which failures stop the command (exit 2), which fail one entry."""

from __future__ import annotations

import pytest

from harness.errors import CounterPermissionError, NoGpuError, ProfilerError
from harness.profile.ncu_errors import classify, runner_error

PERM = (
    "==PROF== Connected to process 4242 (/usr/bin/python3.12)\n"
    "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
    "Performance Counters on the target device 0. For instructions on enabling permissions and "
    "to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM\n"
    "==PROF== Disconnected from process 4242\n"
)


def test_success_is_none() -> None:
    output = "==PROF== Connected to process 1\n==PROF== Report: /r/naive_256.ncu-rep\n"
    assert classify(output, 0, report_written=True) is None


def test_counter_permission_is_fatal_and_names_the_fix() -> None:
    failure = classify(PERM, 1, report_written=False)
    assert failure is not None and failure.fatal and failure.kind == "counter_permission"
    assert "NVreg_RestrictProfilingToAdminUsers=0" in failure.message
    assert "root" in failure.message
    assert isinstance(failure.error(), CounterPermissionError)
    assert "\n" not in failure.message


@pytest.mark.parametrize("output", [
    "==ERROR== cudaErrorNoDevice: no CUDA-capable device is detected\n",
    "CUDA driver version is insufficient for CUDA runtime version\n",
])
def test_no_gpu_is_fatal(output: str) -> None:
    failure = classify(output, 1, report_written=False)
    assert failure is not None and failure.kind == "no_gpu" and failure.fatal
    assert isinstance(failure.error(), NoGpuError)


def test_a_profiler_that_cannot_load_is_fatal() -> None:
    output = "==ERROR== Failed to initialize the profiler: LibraryNotLoaded\n"
    failure = classify(output, 1, report_written=False)
    assert failure is not None and failure.kind == "profiler" and failure.fatal
    assert isinstance(failure.error(), ProfilerError)
    assert "LibraryNotLoaded" in failure.message


def test_a_runner_failure_belongs_to_its_entry() -> None:
    output = (
        "==PROF== Connected to process 9\n"
        "ncuh-runner: naive: CompileException: kern.cu(12): error: identifier \"x\" is undefined\n"
        "==ERROR== The application returned an error code (1).\n"
    )
    failure = classify(output, 1, report_written=False)
    assert failure is not None and not failure.fatal and failure.kind == "runner"
    assert failure.message == (
        'naive: CompileException: kern.cu(12): error: identifier "x" is undefined'
    )


def test_a_runner_without_gpu_is_fatal() -> None:
    output = (
        "ncuh-runner: no CUDA GPU is visible\n"
        "==ERROR== The application returned an error code (3).\n"
    )
    failure = classify(output, 1, report_written=False)
    assert failure is not None and failure.kind == "no_gpu" and failure.fatal
    assert failure.message == "no CUDA GPU is visible"


def test_no_kernel_profiled_even_with_status_zero() -> None:
    failure = classify("==WARNING== No kernels were profiled.\n", 0, report_written=False)
    assert failure is not None and failure.kind == "no_kernel" and not failure.fatal
    silent = classify("", 0, report_written=False)
    assert silent is not None and silent.kind == "no_kernel"


def test_a_user_program_that_fails() -> None:
    output = "Traceback ...\n==ERROR== The application returned an error code (7).\n"
    failure = classify(output, 7, report_written=False)
    assert failure is not None and failure.kind == "program" and "status 7" in failure.message


def test_other_ncu_errors_keep_ncus_last_error_line() -> None:
    output = "==ERROR== first\n==ERROR== Unknown option: --bogus\n"
    failure = classify(output, 1, report_written=False)
    assert failure is not None and failure.message == "ncu: Unknown option: --bogus"
    bare = classify("", 9, report_written=False)
    assert bare is not None and bare.message == "ncu exited with status 9"


def test_runner_error_takes_the_last_runner_line() -> None:
    assert runner_error("ncuh-runner: a\nother\nncuh-runner: b \n") == "b"
    assert runner_error("nothing here") is None
