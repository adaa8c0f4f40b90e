"""Launch by launch, what a real CC or SSSP run on the GPU works on, beside the simulator.

Where ``sweep_count_spread.py`` counts a run's launches, this prints each launch of one run:
the vertices active at its start (a sweep's set flags, a worklist's entries) and how many
values it lowered, read back from ``warpsweep measure``'s buffers between launches, with the
simulator's active tasks (``simulate(..., trace=True)``'s frontier: a sweep's active
vertices, a worklist launch's entries) for the same launch. A model that relays values
further within a launch than the GPU does shows as a frontier that falls faster.

Run on a machine with an NVIDIA GPU and CuPy, from the repo's root:
PYTHONPATH=. python bench/gpu/sweep_profiles.py --graphs-dir DIR [--graphs ca-AstroPh.txt.gz]
[--configs mapping=vwarp,w=32,chunk=4 ...] [--algo cc] [--sim-device h200] [--l1 bypass]
(``--l1 bypass``: the status and value loads from L2 only, ld.global.cg, as
``launch_times.py --l1 bypass`` compiles them: whether L1's stale copies shape the relay)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import configs  # noqa: E402

from simulator import simulate  # noqa: E402
from simulator.errors import WarpsweepError  # noqa: E402
from tuner.measure.check import check_output  # noqa: E402
from tuner.measure.check import reference_output  # noqa: E402
from tuner.measure.measure import Session  # noqa: E402
from tuner.measure.plan import plan_for  # noqa: E402

CONFIGS = ("mapping=vwarp,w=32,chunk=4", "mapping=vwarp,w=8,chunk=16", "mapping=vwarp,w=32",
           "mapping=vwarp,w=32,driven=data,push=atomic")


def bypass_kernels(session: Session, names: tuple[str, ...]) -> dict:
    """kernels.cu's instances ``names`` compiled with STATUS_LOADS_BYPASS_L1."""
    source = "#define STATUS_LOADS_BYPASS_L1\n" + session.runner.KERNELS.read_text()
    module = session.cp.RawModule(code=source, options=("-std=c++17",),
                                  name_expressions=list(names))
    return {name: module.get_function(name) for name in names} | {"__module__": module}


def gpu_profile(session: Session, prepared, algorithm: str, config: str, l1: str = "cached"
                ) -> tuple[list[tuple[int, int]], bool]:
    """(active at the launch's start, values it lowered) for each launch of one run (after
    a warm-up run), and whether the answer was right."""
    variant = configs.TOPOLOGY_VARIANT if "driven=" not in config else "plain"
    plan = plan_for(algorithm, config, variant)
    names = tuple(sorted(set(plan.names())))
    kernels = (bypass_kernels(session, names) if l1 == "bypass"
               else session.runner.compile_kernels(plan.names()))
    dg = session.device_graph(prepared, algorithm)
    dg.bound_pushes(kernels)
    dg.allow_shared(plan, kernels)
    outlier_grid = dg.outlier_grid(plan, kernels)
    cp = session.cp
    rows: list[tuple[int, int]] = []
    sweep, worklist = dg._sweep, dg._worklist

    def profiled_sweep(plan_, kernels_, it, parity, grid):
        before = dg.value.copy()
        active = int(cp.count_nonzero(dg.flags[parity]))
        sweep(plan_, kernels_, it, parity, grid)
        rows.append((active, int(cp.count_nonzero(dg.value != before))))

    def profiled_worklist(plan_, kernels_, it, wl_in, count, wl_out):
        before = dg.value.copy()
        worklist(plan_, kernels_, it, wl_in, count, wl_out)
        rows.append((int(count), int(cp.count_nonzero(dg.value != before))))

    for profiled in (False, True):  # a warm-up run first, unprofiled
        dg.reset(plan)
        dg.clock.start(False)
        if profiled:
            dg._sweep, dg._worklist = profiled_sweep, profiled_worklist
        taken = dg.run(plan, kernels, outlier_grid)
        cp.cuda.Device().synchronize()
    dg._sweep, dg._worklist = sweep, worklist
    reference = reference_output(prepared.runs[algorithm], plan.driven)
    correct = check_output(algorithm, dg.answer(plan, taken.iterations), reference) is None
    return rows, correct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs-dir", default=configs.REPO_GRAPHS_DIR)
    parser.add_argument("--graphs", nargs="*", default=["ca-AstroPh.txt.gz"])
    parser.add_argument("--configs", nargs="*", default=list(CONFIGS))
    parser.add_argument("--algo", default="cc", choices=("cc", "sssp"))
    parser.add_argument("--sim-device", default="h200")
    parser.add_argument("--l1", default="cached", choices=("cached", "bypass"))
    args = parser.parse_args()
    try:
        session = Session()
    except WarpsweepError as exc:  # no CuPy or no GPU: one line
        raise SystemExit(f"sweep_profiles: {exc}") from None
    loads = "from L2 only (ld.global.cg)" if args.l1 == "bypass" else "cached in L1"
    print(f"# {session.gpu_name}, status and value loads {loads}; simulator on "
          f"{args.sim_device}; per launch: GPU active (lowered) / simulator active")
    for graph, prepared in configs.prepared_graphs(args.graphs, args.graphs_dir, args.algo):
        for config in args.configs:
            rows, correct = gpu_profile(session, prepared, args.algo, config, args.l1)
            trace = simulate(graph, args.algo, config, args.sim_device,
                             functional=prepared.runs[args.algo], trace=True).trace
            sim = [int(w if f == "data" else a) for a, w, f in
                   zip(trace["frontier"], trace["worklist"], trace["form"], strict=True)]
            print(f"{prepared.name} {config} ({'right' if correct else 'WRONG'}): "
                  f"{len(rows)} launches on the GPU, {len(sim)} simulated", flush=True)
            for i in range(max(len(rows), len(sim))):
                g = f"{rows[i][0]:9d} ({rows[i][1]:8d})" if i < len(rows) else " " * 20
                s = f"{sim[i]:9d}" if i < len(sim) else ""
                print(f"  {i:3d} {g}  {s}", flush=True)


if __name__ == "__main__":
    main()
