"""Which GPUs a run profiles on: the host's GPUs, `--gpus all|0,1,…`, and one slot per GPU.

GPUs are listed with `nvidia-smi --query-gpu` (PCI bus order, as `CUDA_VISIBLE_DEVICES` indexes
with `CUDA_DEVICE_ORDER=PCI_BUS_ID`); each ncu child is pinned to its GPU by UUID.

Each GPU also gets its own TMPDIR: ncu serializes profiling between processes through one lock
file, `$TMPDIR/nsight-compute-lock`, so two ncu processes on two GPUs with the same TMPDIR take
turns. A lock directory per GPU (`<tmp>/ncuh-ncu-lock-<uid>/<gpu uuid>`) serializes the ncu
processes of one GPU only. The program sees that TMPDIR too, so the Inductor cache a
`torch.compile`d program keeps under it is named where the program alone finds it
(`TORCHINDUCTOR_CACHE_DIR`, unless set): a cold cache compiles and autotunes again under ncu,
with launches that shift the one a second pass counts to.
"""

from __future__ import annotations

import getpass
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.errors import NcuhError, NoGpuError

INDUCTOR_CACHE = "TORCHINDUCTOR_CACHE_DIR"
SMI_QUERY = ("index", "uuid", "pci.bus_id", "name", "compute_cap")
# Runs an argv and returns its stdout, or None when it cannot run (harness.gpu.env.run_command).
CommandRunner = Callable[[Sequence[str]], "str | None"]


@dataclass(frozen=True)
class Gpu:
    """One GPU of the host, as the manifest records it."""

    index: int
    name: str
    uuid: str
    pci_bus_id: str
    compute_capability: str | None = None

    def manifest(self) -> dict[str, Any]:
        return asdict(self)


def smi_argv() -> list[str]:
    return ["nvidia-smi", f"--query-gpu={','.join(SMI_QUERY)}", "--format=csv,noheader,nounits"]


def parse_gpu_list(text: str | None) -> list[Gpu]:
    """The rows of `nvidia-smi --query-gpu=index,uuid,pci.bus_id,name,compute_cap`."""
    gpus = []
    for line in (text or "").splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) != len(SMI_QUERY) or not cells[0].isdigit():
            continue
        index, uuid, bus, name, capability = cells
        gpus.append(Gpu(int(index), name, uuid, bus, capability or None))
    return gpus


def list_gpus(runner: CommandRunner | None = None) -> list[Gpu]:
    """Every GPU of this host ([] when nvidia-smi is missing or fails)."""
    if runner is None:
        from harness.gpu import run_command as runner
    return parse_gpu_list(runner(smi_argv()))


def select_gpus(spec: str, available: Sequence[Gpu], *, allow_mismatch: bool = False) -> list[Gpu]:
    """`all` or `0,2` (nvidia-smi indexes) -> those GPUs; one clear error when it cannot be."""
    if not available:
        raise NoGpuError("--gpus: nvidia-smi lists no GPU on this host")
    text = spec.strip().lower()
    if text == "all":
        chosen = list(available)
    else:
        by_index = {gpu.index: gpu for gpu in available}
        chosen = []
        for part in text.split(","):
            if not part.strip().isdigit():
                raise NcuhError(f"--gpus {spec!r}: give 'all' or GPU indexes such as 0,1")
            index = int(part)
            if index not in by_index:
                known = ", ".join(str(gpu.index) for gpu in available)
                raise NcuhError(f"--gpus {spec!r}: no GPU {index} on this host (it has {known})")
            if by_index[index] not in chosen:
                chosen.append(by_index[index])
    models = sorted({gpu.name for gpu in chosen})
    if len(models) > 1 and not allow_mismatch:
        raise NcuhError(
            f"--gpus {spec!r} mixes GPU models ({'; '.join(models)}): their profiles do not "
            "compare; choose GPUs of one model or pass --allow-mismatch"
        )
    return chosen


def lock_directory(gpu: Gpu, base: Path | None = None) -> Path:
    """The TMPDIR for ncu children on `gpu`: one ncu lock file per GPU (see the module note)."""
    root = (base or Path(tempfile.gettempdir())) / f"ncuh-ncu-lock-{os.getuid()}"
    return root / gpu.uuid.replace("/", "_")


def inductor_cache_directory() -> Path | None:
    """Where PyTorch's Inductor keeps its cache by default, as it names it
    (torch/_inductor/runtime/cache_dir_utils.py: the temporary directory, the user's name with
    path characters replaced); None where the user has no name (a uid without a passwd entry
    and no USER or LOGNAME, as in some containers), where PyTorch would fail to name it too."""
    try:
        name = getpass.getuser()
    except (KeyError, OSError):
        return None
    user = re.sub(r'[\\/:*?"<>|]', "_", name)
    return Path(tempfile.gettempdir()) / f"torchinductor_{user}"


def pinned_environment(env: dict[str, str], gpu: Gpu, base: Path | None = None) -> dict[str, str]:
    """`env` with the child pinned to `gpu` and given its per-GPU ncu lock directory; the
    Inductor cache stays where the program alone finds it (see the module note)."""
    lock_dir = lock_directory(gpu, base)
    lock_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    cache = None if INDUCTOR_CACHE in env else inductor_cache_directory()
    kept = {INDUCTOR_CACHE: str(cache)} if cache is not None else {}
    return {**env, **kept, "CUDA_VISIBLE_DEVICES": gpu.uuid, "TMPDIR": str(lock_dir)}


def gpu_for_bus_id(gpus: Sequence[Gpu], pci_bus_id: str | None) -> Gpu | None:
    """The listed GPU at a PCI bus ID (CUDA: `0000:1B:00.0`, smi: `00000000:1B:00.0`)."""
    if not pci_bus_id:
        return None
    wanted = _bus_key(pci_bus_id)
    return next((gpu for gpu in gpus if _bus_key(gpu.pci_bus_id) == wanted), None)


def _bus_key(bus_id: str) -> tuple[int, ...] | str:
    try:
        domain, bus, rest = bus_id.strip().split(":")
        device, function = rest.split(".")
        return int(domain, 16), int(bus, 16), int(device, 16), int(function, 16)
    except ValueError:
        return bus_id.strip().lower()
