"""Run every variant of the project once without ncu, so that CuPy's and NVRTC's on-disk caches
are warm before a timed profile: on a fresh machine the first compiles take about 15 s and
would fall on whichever timed run came first. Shared by the profile benchmarks."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def warm_up(*sizes: int) -> float:
    """Seconds spent running every variant once at each of `sizes` (results not checked)."""
    sys.path.insert(0, str(ROOT))
    from harness.project import open_project

    started = time.perf_counter()
    for size in sizes:
        for name in open_project(None).names:
            subprocess.run([sys.executable, "-m", "harness.gpu.runner", "--variant", name,
                            "--size", f"{size}x{size}x{size}", "--warmup", "1"], cwd=ROOT,
                           capture_output=True, text=True, timeout=600, check=False)
    return round(time.perf_counter() - started, 1)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[4096],
                        help="cube sizes to run every variant at (default 4096)")
    print(f"warm-up took {warm_up(*parser.parse_args().sizes)} s")
