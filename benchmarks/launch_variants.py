"""Launch several bundled variants once each: a small "user program" for `ncuh profile -- ...`.

    python3 benchmarks/launch_variants.py --variants naive,smem_tiled,... --size 1024

Each variant is compiled first, then launched exactly once on random inputs, so
`ncu -k regex:^sgemm_` records one kernel per variant in one report. (Correctness is the
business of `ncuh bench` and the GPU tests; a verification here would launch each kernel
again.)
"""

from __future__ import annotations

import argparse

from harness.gpu.backend import prepare
from harness.gpu.env import require_gpu
from harness.project import load_project
from harness.project.locate import default_project_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--variants", required=True, help="comma-separated variant names")
    parser.add_argument("--size", type=int, default=1024)
    args = parser.parse_args()
    cupy = require_gpu()
    project = load_project(default_project_path())
    size = project.parse_size(str(args.size))
    names = [name.strip() for name in args.variants.split(",") if name.strip()]
    kernels = [prepare(project, name, size) for name in names]
    inputs = project.inputs(size, None)
    for kernel in kernels:
        kernel(inputs)
    cupy.cuda.Device().synchronize()
    print(f"launched {len(kernels)} kernels at {args.size}^3: {', '.join(names)}")


if __name__ == "__main__":
    main()
