"""A program's run (`ncuh profile --top`) made without a GPU, from real reports.

`ProgramNcu` stands in for ncu the way `test_profile_cpu.FakeNcu` does: the first pass writes
a report and, asked for its raw page (`ncu --import ... --csv --page raw`), prints the launch
table of `STEP` as ncu prints one; each second-pass ncu writes the committed report of the
kernel its `-k` names: real H200 reports of PyTorch's kernels (the zoo's cuBLAS GEMM, flash
attention and Inductor kernel). The launches' durations are this module's; their names
and launch shapes are those the reports hold.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packed_fixtures import fixture, report
from test_profile_cpu import FakeNcu

from harness.profile import WORKER_RESULT_PREFIX

ZOO = Path(__file__).parent / "fixtures" / "zoo"
GEMM = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
FUSED = "triton_red_fused_mul_native_layer_norm_sigmoid_0"
# What the environment probe answers on the H200 the zoo's PyTorch reports came from
# (tests/fixtures/zoo/env-h200.txt).
ENVIRONMENT = {"gpu": "NVIDIA H200", "compute_capability": "9.0", "driver": "580.159.04",
               "cuda": "13.0", "ncu_version": "2025.3.1.0"}
FILL = ("void vectorized_elementwise_kernel<4, FillFunctor<float>, std::array<char *, 1>>(int, "
        "T2, T3)")
FILL_MANGLED = ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPc"
                "Lm1EEEEviT0_T1_")


@functools.cache
def flash_name() -> str:
    """flash attention's name as ncu prints it demangled: its raw page's (long: read, not
    typed)."""
    with fixture(ZOO / "zoo_flash_attention.raw.csv").open(encoding="utf-8") as page:
        header, _, row, *_ = csv.reader(page)
    return row[header.index("Kernel Name")]


@functools.cache
def flash_mangled() -> str:
    """flash attention's mangled name, as its report holds it."""
    from harness.report import load_kernel_reports

    (profile,) = load_kernel_reports(report(ZOO / "zoo_flash_attention.ncu-rep"))
    return profile.mangled_name


def mangled(name: str) -> str:
    """A kernel's mangled name: the C++ template's, or the extern "C" name itself."""
    return flash_mangled() if name == flash_name() else FILL_MANGLED if name == FILL else name


@dataclass(frozen=True)
class Launch:
    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    ns: float
    process: int = 4242
    device: int = 0


def step(process: int = 4242, device: int = 0, *, layers: int = 3, gemm_scale: float = 1.0,
         second_shape: bool = False) -> list[Launch]:
    """One training step's launches, in launch order: a fill, then per layer a GEMM, flash
    attention and the fused norm; with `second_shape`, the GEMM also at another grid (another
    kernel, of which no report is committed). `gemm_scale` stretches the GEMM's durations."""
    flash = flash_name()
    launches = [Launch(FILL, (4096, 1, 1), (128, 1, 1), 2000, process, device)]
    for layer in range(layers):
        launches += [
            Launch(GEMM, (2, 66, 1), (384, 1, 1), gemm_scale * (210_000 + 4_000 * (layer % 3)),
                   process, device),
            Launch(flash, (16, 4, 16), (128, 1, 1), 340_000 + 2_000 * (layer % 3), process,
                   device),
            Launch(FUSED, (8192, 1, 1), (512, 1, 1), 80_000 + 1_000 * (layer % 3), process,
                   device),
        ]
        if second_shape:
            launches.append(Launch(GEMM, (1, 66, 1), (384, 1, 1), 100_000, process, device))
    return launches


def raw_page(launches: Sequence[Launch], unit: str = "nsecond", names: str = "demangled") -> str:
    """ncu's `--page raw --csv` of the first pass: a header, a unit row, a row per launch,
    each kernel named as `--print-kernel-base` says."""
    header = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context",
              "Stream", "Block Size", "Grid Size", "Device", "CC", "gpu__time_duration.sum"]
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(header)
    writer.writerow([""] * (len(header) - 1) + [unit])
    for index, launch in enumerate(launches):
        name = mangled(launch.name) if names == "mangled" else launch.name
        writer.writerow([index, launch.process, "python3", "gpu-host", name, 1, 7,
                         f"({', '.join(map(str, launch.block))})",
                         f"({', '.join(map(str, launch.grid))})", launch.device, "9.0",
                         f"{launch.ns:g}"])
    return out.getvalue()


def report_of(name: str) -> Path:
    """The committed report of the kernel named (or mangled) `name`."""
    stems = {GEMM: "zoo_bf16_gemm", FUSED: "zoo_compiled_fused"}
    return report(ZOO / f"{stems.get(name, 'zoo_flash_attention')}.ncu-rep")


class ProgramNcu(FakeNcu):
    """Answers ncu's command lines for a program's two passes (and ncuh's children)."""

    def __init__(self, launches: Sequence[Launch], *, first_pass: tuple[int, str] | None = None,
                 table: str | None = None, mangled_table: str | None = None) -> None:
        super().__init__()
        self.launches = list(launches)
        self.first_pass = first_pass  # (status, output) for a failing first pass
        # the raw page as ncu prints it with demangled names, and with mangled ones
        self.table = table if table is not None else raw_page(self.launches)
        self.mangled_table = (mangled_table if mangled_table is not None
                              else raw_page(self.launches, names="mangled"))

    def answer(self, argv: list[str]) -> tuple[int, str]:
        if argv[1:] == ["--version"]:
            return 0, "Version 2025.3.1.0 (build 36398880) (public-release)\n"
        if argv[1:3] == ["-m", "harness.profile.worker"]:  # the environment probe
            env = {**ENVIRONMENT, "ncu_path": argv[4]}
            return 0, WORKER_RESULT_PREFIX + json.dumps(env) + "\n"
        if "--import" in argv:
            names = argv[argv.index("--print-kernel-base") + 1]
            table = self.table if names == "demangled" else self.mangled_table
            return 0, "==WARNING== a note ncu prints first\n" + table
        out = Path(argv[argv.index("-o") + 1])
        if out.name == "ranking.ncu-rep":
            if self.first_pass is not None:
                return self.first_pass
            shutil.copyfile(report_of(GEMM), out)
            return 0, "==PROF== Connected to process 4242\n==PROF== Disconnected\n"
        name = argv[argv.index("-k") + 1]
        shutil.copyfile(report_of(name), out)
        return 0, (f'==PROF== Profiling "{name[:20]}" - 0: 0%....50%....100% - 38 passes\n'
                   "==PROF== Disconnected from process 4242\n")

    @property
    def second_pass(self) -> list[list[str]]:
        return [argv for argv in self.calls
                if "-o" in argv and not argv[argv.index("-o") + 1].endswith("ranking.ncu-rep")]


def program_run(monkeypatch: Any, out: Path, launches: Sequence[Launch], run_id: str, *,
                top: int = 2, program: tuple[str, ...] = ("python", "train.py"),
                fake: ProgramNcu | None = None) -> Path:
    """A program's run directory, made by `run_profile` with `ProgramNcu` as ncu; the first
    pass's seconds are set to 12.5 in its manifest (a stand-in's seconds are the machine's)."""
    from harness.profile import run as lib
    from harness.profile.planning import ProfileRequest

    monkeypatch.setattr("harness.util.ncu_executable",
                        lambda: Path("/opt/nvidia/nsight-compute/2025.3.1/ncu"))
    fake = fake or ProgramNcu(launches)
    request = ProfileRequest(program=program, out=out, top=top, run_id=run_id)
    outcome = lib.run_profile(request, runner=fake, spawner=lib.in_threads(fake))
    manifest = outcome.run_dir / "manifest.json"
    data = json.loads(manifest.read_text())
    data["ranking"]["seconds"] = 12.5
    manifest.write_text(json.dumps(data, indent=2) + "\n")
    return outcome.run_dir
