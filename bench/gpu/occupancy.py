"""Registers and occupancy of kernels.cu's sweep and worklist kernels on the GPU at hand: how
many warps an SM really holds, against the simulator's full occupancy (``max_warps_per_sm``).

Per (algorithm, configuration): the kernel's instance, its registers a thread, its shared
memory a block, CUDA's resident blocks an SM at the plan's block size, and the warps an SM
holds. Run on a GPU machine from the repository root:

    python bench/gpu/occupancy.py [--algorithms sssp,cc] [--configs C;C]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))

import cupy as cp  # noqa: E402

from tuner.measure.plan import plan_for  # noqa: E402
from tuner.measure.runner import compile_kernels  # noqa: E402

CONFIGS = ("mapping=thread;mapping=vwarp,w=2;mapping=vwarp,w=4;mapping=vwarp,w=8;"
           "mapping=vwarp,w=16;mapping=vwarp,w=32;mapping=vwarp,w=8,chunk=4;"
           "mapping=vwarp,w=32,chunk=8;mapping=vwarp,w=8,driven=data;"
           "mapping=vwarp,w=32,driven=data")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algorithms", default="bfs,sssp,cc,pagerank")
    parser.add_argument("--configs", default=CONFIGS)
    args = parser.parse_args(argv)
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    print(f"{props['name'].decode()}: {props['multiProcessorCount']} SMs, "
          f"{props['regsPerMultiprocessor']} registers an SM")
    print(f"{'algorithm':9s} {'configuration':36s} {'kernel':44s} {'regs':>4s} {'smem':>6s} "
          f"{'blocks/SM':>9s} {'warps/SM':>8s}")
    for algorithm in args.algorithms.split(","):
        for config in args.configs.split(";"):
            try:
                plan = plan_for(algorithm, config)
            except Exception as exc:  # noqa: BLE001  (a form the algorithm lacks)
                print(f"{algorithm:9s} {config:36s} skipped: {exc}")
                continue
            name = plan.worklist_name() if plan.driven == "data" else plan.sweep_name()
            kernel = compile_kernels([name])[name]
            shared = plan.shared_bytes if plan.driven != "data" else 0
            blocks = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
                kernel.kernel.ptr, plan.block_size, shared)
            print(f"{algorithm:9s} {config:36s} {name:44s} {kernel.num_regs:4d} "
                  f"{shared:6d} {blocks:9d} {blocks * plan.block_size // 32:8d}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
