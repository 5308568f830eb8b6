"""What machine a measurement was taken on: GPU, driver, CUDA, CuPy, clocks, ncu.

Every number ncuh records (bench.json, manifest.json) carries this dictionary, so that two runs
are compared only when they are comparable. Each field is collected on its own and is None when
its source is missing (CuPy's runtime API, NVML through `pynvml`, else `nvidia-smi`, and `ncu
--version`). Nothing here raises except `require_gpu`, whose job is to say in one line why GPU
work cannot run. `collect_environment(cuda=False)` never imports CuPy nor starts CUDA.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness import __version__
from harness.errors import NoGpuError

# Runs an argument list and returns its stdout, or None when it cannot run; injectable so
# the parsers are tested without the tools.
CommandRunner = Callable[[Sequence[str]], "str | None"]

_SMI_FIELDS = (
    "name",
    "driver_version",
    "clocks.sm",
    "clocks.mem",
    "clocks.max.sm",
    "clocks.max.mem",
)
# Asked for too, but only drivers from 510 on know it (an unknown field fails the whole query).
_SMI_COMPUTE_CAP = "compute_cap"


def _smi_names(with_compute_cap: bool) -> tuple[str, ...]:
    """The fields of the nvidia-smi query, in its order (compute_cap last when asked)."""
    return (*_SMI_FIELDS, _SMI_COMPUTE_CAP) if with_compute_cap else _SMI_FIELDS


def run_command(argv: Sequence[str], timeout: float = 20.0) -> str | None:
    """Stdout of `argv`, or None when it is not installed, fails or hangs."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        completed = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if completed.returncode != 0:
        return None
    return completed.stdout


def format_cuda_version(encoded: int | None) -> str | None:
    """CUDA's integer version (13000, 12040) as "13.0", "12.4"."""
    if not encoded:
        return None
    return f"{encoded // 1000}.{(encoded % 1000) // 10}"


def parse_ncu_version(text: str | None) -> str | None:
    """The version from `ncu --version` ("... Version 2025.3.1.0 (build ...)") as "2025.3.1.0"."""
    if not text:
        return None
    match = re.search(r"Version\s+(\d+(?:\.\d+)+)", text)
    return match.group(1) if match else None


def _mhz(value: str) -> float | None:
    value = value.strip()
    try:
        return float(value)
    except ValueError:  # "[N/A]", "[Not Supported]"
        return None


def parse_nvidia_smi(text: str | None, with_compute_cap: bool = False) -> dict[str, Any]:
    """Fields of the first line of `nvidia-smi --query-gpu=... --format=csv,noheader,nounits`.

    `with_compute_cap`: the query asked for `compute_cap` too, as its last field.
    """
    if not text or not text.strip():
        return {}
    names = _smi_names(with_compute_cap)
    cells = [cell.strip() for cell in text.strip().splitlines()[0].split(",")]
    if len(cells) != len(names):
        return {}
    row = dict(zip(names, cells, strict=True))
    fields = {"compute_capability": row[_SMI_COMPUTE_CAP] or None} if with_compute_cap else {}
    return {
        **fields,
        "gpu": row["name"] or None,
        "driver": row["driver_version"] or None,
        "sm_clock_mhz": _mhz(row["clocks.sm"]),
        "mem_clock_mhz": _mhz(row["clocks.mem"]),
        "max_sm_clock_mhz": _mhz(row["clocks.max.sm"]),
        "max_mem_clock_mhz": _mhz(row["clocks.max.mem"]),
    }


def _import_cupy() -> Any | None:
    try:
        import cupy
    except ImportError:
        return None
    return cupy


def cupy_install_hint(package_file: str | None = None) -> str:
    """The command that installs CuPy for this ncuh: from a checkout (an editable install),
    the checkout's own extra by its path; otherwise CuPy's own wheel, which works wherever
    ncuh came from (the name `ncuh` is not on the package index)."""
    root = checkout_root(package_file)
    if root is not None:
        return f"pip install -e '{root}[cuda13]', or [cuda12] for CUDA 12"
    return "pip install cupy-cuda13x, or cupy-cuda12x for CUDA 12"


def checkout_root(package_file: str | None = None) -> Path | None:
    """The ncuh checkout this ncuh runs from (an editable install), else None."""
    root = Path(package_file or __file__).resolve().parents[2]
    pyproject = root / "pyproject.toml"
    try:
        checkout = pyproject.is_file() and 'name = "ncuh"' in pyproject.read_text("utf-8")
    except OSError:
        checkout = False
    return root if checkout else None


# The first words of every "no GPU" line: what the user sees, before why.
NO_GPU = "no NVIDIA GPU visible"


def no_cupy_reason() -> str:
    """The no-GPU line where CuPy is missing."""
    return (f"{NO_GPU} to ncuh: CuPy, through which it runs kernels, is not installed "
            f"({cupy_install_hint()})")


def gpu_unavailable_reason() -> str | None:
    """Why no GPU work can run here (one line, starting "no NVIDIA GPU visible"), or None
    when CuPy sees a CUDA device."""
    cupy = _import_cupy()
    if cupy is None:
        return no_cupy_reason()
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # no driver, driver too old, no device node
        text = str(error).strip()
        detail = f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__
        driver = ("; where there is a GPU, its driver is missing or older than CuPy's CUDA"
                  if "driver" in text.lower() else "")
        return f"{NO_GPU} (CUDA says {detail}){driver}"
    if count < 1:
        hidden = os.environ.get("CUDA_VISIBLE_DEVICES")
        return (f"{NO_GPU} (CUDA_VISIBLE_DEVICES={hidden!r} hides every one)"
                if hidden is not None else f"{NO_GPU} (CUDA sees no device)")
    return None


def require_gpu() -> Any:
    """CuPy, when it sees a CUDA device; else `NoGpuError` with the one-line reason.

    THE GPU check of ncuh: bench, the runner and tuning all ask here.
    """
    reason = gpu_unavailable_reason()
    if reason is not None:
        raise NoGpuError(reason)
    return _import_cupy()


def _device_properties() -> dict[str, Any] | None:
    cupy = _import_cupy()
    if cupy is None:
        return None
    try:
        return dict(cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id))
    except Exception:
        return None


def current_gpu_name() -> str | None:
    """The current device's name through CuPy, or None without a GPU (never raises)."""
    props = _device_properties()
    if props is None or props.get("name") is None:
        return None
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def current_compute_capability() -> str | None:
    """The current device's compute capability ("9.0"), or None without a GPU (never raises)."""
    props = _device_properties()
    if props is None or props.get("major") is None:
        return None
    return f"{props['major']}.{props.get('minor', 0)}"


def driver_cuda_version() -> str | None:
    """The CUDA version the driver supports ("13.0"), from libcuda without initialising it."""
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
        version = ctypes.c_int(0)
        if libcuda.cuDriverGetVersion(ctypes.byref(version)) != 0:
            return None
    except (OSError, AttributeError):  # no driver installed, or not Linux
        return None
    return format_cuda_version(version.value)


def cuda_fields(cupy: Any) -> dict[str, Any]:
    """What CuPy's runtime says of the current device and the CUDA versions (never raises).

    Keys: cupy, cuda_runtime, cuda_driver, and when a device answers gpu, compute_capability,
    sm_count, l2_cache_bytes, memory_bytes, pci_bus_id. Cheap once CUDA is initialised: the
    runner under ncu reports them for `ncuh profile`.
    """
    fields: dict[str, Any] = {"cupy": getattr(cupy, "__version__", None)}
    runtime = cupy.cuda.runtime
    with contextlib.suppress(Exception):
        fields["cuda_runtime"] = format_cuda_version(runtime.runtimeGetVersion())
    with contextlib.suppress(Exception):
        fields["cuda_driver"] = format_cuda_version(runtime.driverGetVersion())
    try:
        device = cupy.cuda.Device().id
        props = runtime.getDeviceProperties(device)
    except Exception:
        return fields
    name = props.get("name")
    fields["gpu"] = name.decode() if isinstance(name, bytes) else name
    fields["compute_capability"] = f"{props.get('major')}.{props.get('minor')}"
    fields["sm_count"] = props.get("multiProcessorCount")
    fields["l2_cache_bytes"] = props.get("l2CacheSize")
    fields["memory_bytes"] = props.get("totalGlobalMem")
    with contextlib.suppress(Exception):
        fields["pci_bus_id"] = runtime.deviceGetPCIBusId(device)
    return fields


def _nvml_handle(pynvml: Any, pci_bus_id: str | None) -> Any:
    # NVML numbers devices without CUDA_VISIBLE_DEVICES, so the PCI bus id is the safe key;
    # older pynvml releases want bytes, newer ones str.
    if pci_bus_id:
        for key in (pci_bus_id, pci_bus_id.encode()):
            try:
                return pynvml.nvmlDeviceGetHandleByPciBusId(key)
            except Exception:
                continue
    return pynvml.nvmlDeviceGetHandleByIndex(0)


def _nvml_fields(pci_bus_id: str | None) -> dict[str, Any]:
    """Driver version and clocks through NVML; {} when pynvml is missing or fails."""
    try:
        import pynvml
    except ImportError:
        return {}
    try:
        pynvml.nvmlInit()
    except Exception:
        return {}
    try:
        handle = _nvml_handle(pynvml, pci_bus_id)
        driver = pynvml.nvmlSystemGetDriverVersion()
        fields: dict[str, Any] = {
            "driver": driver.decode() if isinstance(driver, bytes) else driver,
            "clock_source": "nvml",
        }
        with contextlib.suppress(Exception):
            name = pynvml.nvmlDeviceGetName(handle)
            fields["gpu"] = name.decode() if isinstance(name, bytes) else name
        with contextlib.suppress(Exception):
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
            fields["compute_capability"] = f"{major}.{minor}"
        readers = {
            "sm_clock_mhz": (pynvml.nvmlDeviceGetClockInfo, pynvml.NVML_CLOCK_SM),
            "mem_clock_mhz": (pynvml.nvmlDeviceGetClockInfo, pynvml.NVML_CLOCK_MEM),
            "max_sm_clock_mhz": (pynvml.nvmlDeviceGetMaxClockInfo, pynvml.NVML_CLOCK_SM),
            "max_mem_clock_mhz": (pynvml.nvmlDeviceGetMaxClockInfo, pynvml.NVML_CLOCK_MEM),
        }
        for key, (reader, clock) in readers.items():
            try:
                fields[key] = float(reader(handle, clock))
            except Exception:
                fields[key] = None
        return fields
    except Exception:
        return {}
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def _smi_fields(pci_bus_id: str | None, runner: CommandRunner,
                with_compute_cap: bool = False) -> dict[str, Any]:
    query = ",".join(_smi_names(with_compute_cap))
    argv = ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"]
    if pci_bus_id:
        argv.append(f"--id={pci_bus_id}")
    fields = parse_nvidia_smi(runner(argv), with_compute_cap)
    if not fields and with_compute_cap:  # a driver before 510: ask again without it
        return _smi_fields(pci_bus_id, runner)
    if fields:
        fields["clock_source"] = "nvidia-smi"
    return fields


def read_clocks(pci_bus_id: str | None = None, runner: CommandRunner = run_command) -> dict:
    """The current SM and memory clocks in MHz (None where unreadable).

    Called right after timed work: an idle H100 drops its SM clock to a few hundred MHz, so a
    clock read before the run says little about the clock the kernels ran at.
    """
    fields = _nvml_fields(pci_bus_id) or _smi_fields(pci_bus_id, runner)
    return {
        "sm_clock_mhz": fields.get("sm_clock_mhz"),
        "mem_clock_mhz": fields.get("mem_clock_mhz"),
    }


def collect_environment(
    runner: CommandRunner = run_command, *, cuda: bool = True, pci_bus_id: str | None = None,
) -> dict[str, Any]:
    """GPU, compute capability, SM count, driver, CUDA, CuPy, clocks and ncu version.

    `cuda=False`: no CuPy, no CUDA initialisation; the GPU's name and compute capability come
    from NVML or nvidia-smi (for the device at `pci_bus_id` when given), `cuda_driver` from
    libcuda, and the CuPy-only fields (cuda_runtime, sm_count, ...) stay None.

    Keys (each value may be None): gpu, compute_capability ("9.0"), sm_count, l2_cache_bytes,
    memory_bytes, pci_bus_id, driver, cuda_runtime, cuda_driver, cuda (the manifest's name:
    cuda_runtime, else cuda_driver), cupy, sm_clock_mhz, mem_clock_mhz, max_sm_clock_mhz,
    max_mem_clock_mhz, clocks (the four clocks again, for manifest.json), clock_source
    ("nvml" / "nvidia-smi"),
    ncu_version, ncu_path, python, platform, ncuh_version, cuda_visible_devices.
    """
    env: dict[str, Any] = dict.fromkeys(
        (
            "gpu", "compute_capability", "sm_count", "l2_cache_bytes", "memory_bytes",
            "pci_bus_id", "driver", "cuda_runtime", "cuda_driver", "cupy", "sm_clock_mhz",
            "mem_clock_mhz", "max_sm_clock_mhz", "max_mem_clock_mhz", "clock_source",
        )
    )
    cupy = _import_cupy() if cuda else None
    if cupy is not None:
        env.update(cuda_fields(cupy))
    else:
        env["pci_bus_id"] = pci_bus_id
        env["cuda_driver"] = driver_cuda_version() if not cuda else None
    # NVML is asked only where a GPU is known to answer (CuPy saw one, or CuPy was not asked).
    nvml = _nvml_fields(env["pci_bus_id"]) if cupy is not None or not cuda else {}
    smi = {} if nvml else _smi_fields(env["pci_bus_id"], runner, with_compute_cap=not cuda)
    for source in (smi, nvml):
        for key, value in source.items():
            # CuPy's device fields are authoritative; NVML/smi fill only what is still missing.
            if value is not None and (env.get(key) is None
                                      or key not in ("gpu", "compute_capability")):
                env[key] = value
    env["cuda"] = env["cuda_runtime"] or env["cuda_driver"]
    env["clocks"] = {
        "sm_mhz": env["sm_clock_mhz"],
        "mem_mhz": env["mem_clock_mhz"],
        "max_sm_mhz": env["max_sm_clock_mhz"],
        "max_mem_mhz": env["max_mem_clock_mhz"],
    }
    ncu = shutil.which("ncu")
    env["ncu_path"] = ncu
    env["ncu_version"] = parse_ncu_version(runner(["ncu", "--version"])) if ncu else None
    env["python"] = platform.python_version()
    env["platform"] = platform.platform()
    env["ncuh_version"] = __version__
    env["cuda_visible_devices"] = os.environ.get("CUDA_VISIBLE_DEVICES")
    return env
