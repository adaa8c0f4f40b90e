"""What a nearly idle sweep costs on the GPU: one BFS or SSSP topology launch in which only k
random vertices are active, timed as k grows, with and without the store path.

The lead it follows (issue 11): on the road graphs the H100's thread-mapped SSSP sweeps grow
by 0.25-0.4 us per 1000 active vertices while its BFS sweeps stay near flat, and the
simulator charges the SSSP sweeps about two thirds of that growth. Each launch here starts
from a state set by hand: k random vertices active (BFS: at the current depth; SSSP: flagged
in ``cur``), every other vertex idle, and either every relaxation storing (BFS: all other
vertices unvisited; SSSP: distances 0 over negated weights) or none (BFS: all visited; SSSP:
positive weights), plus the SSSP kernel without its changed flag (``kernels.cu``'s
``ctl[CTL_FLAG]`` store) and with a plain store for atomicMin.

On a machine with an NVIDIA GPU and CuPy, from the repository root:
PYTHONPATH=. python bench/gpu/sparse_sweeps.py --graphs-dir ../shared/graphs \\
    --out bench/gpu/results/h100_sparse_sweeps.parquet [--only USA-road-NY]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import cupy as cp
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
import configs  # noqa: E402
import flag_stores  # noqa: E402
import harness  # noqa: E402
from plans import KernelPlan  # noqa: E402

from simulator.graph_spec import parse_spec  # noqa: E402
from simulator.load import load_graph  # noqa: E402

ACTIVE = (0, 16, 256, 2048, 8192, 32768)
WIDTHS = (1, 8)
BLOCK = 256
DEPTH = 3


def plan(algorithm: str, width: int) -> KernelPlan:
    return KernelPlan(algorithm, "topology", width, 1, False, None, BLOCK, "default")


def compile_all() -> dict[str, dict]:
    """Kernel functions per source variant: kernels.cu, and flag_stores' SSSP variants."""
    plans = [plan(a, w) for a in ("bfs", "sssp") for w in WIDTHS]
    return flag_stores.compile_variants(plans, ("kernel", "no_changed_flag", "plain_min"))


def time_launches(spec: str, kernels: dict[str, dict], reps: int, seed: int) -> list[dict]:
    """One row per (algorithm, variant, W, k): the median microseconds of one launch."""
    g = load_graph(spec, cache=False)
    n = g.n
    indptr = cp.asarray(g.indptr.astype(np.int32))
    indices = cp.asarray(g.indices.astype(np.int32))
    weights = cp.asarray(g.weights.astype(np.float32))
    negated = -weights
    level = cp.empty(n, dtype=np.int32)
    dist = cp.empty(n, dtype=np.float32)
    cur, nxt = cp.zeros(n, dtype=np.int32), cp.zeros(n, dtype=np.int32)
    ctl, dq = cp.zeros(8, dtype=np.int32), cp.zeros(max(n, 1), dtype=np.int32)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    rng = np.random.default_rng(seed)
    order = cp.asarray(rng.permutation(n).astype(np.int32))
    rows = []
    runs = [("bfs", "kernel", "stores"), ("bfs", "kernel", "no_stores"),
            ("sssp", "kernel", "stores"), ("sssp", "kernel", "no_stores"),
            ("sssp", "no_changed_flag", "stores"), ("sssp", "plain_min", "stores")]
    for algorithm, variant, state in runs:
        for width in WIDTHS:
            p = plan(algorithm, width)
            kernel = kernels[variant][p.name]
            grid = -(-n * width // BLOCK)
            for k in ACTIVE:
                active = order[:k]
                times = []
                for rep in range(reps + 3):  # 3 warm-up launches
                    ctl.fill(0)
                    if algorithm == "bfs":
                        level.fill(-1 if state == "stores" else DEPTH + 5)
                        level[active] = DEPTH
                        args = (indptr, indices, level, np.int32(n), np.int32(DEPTH), ctl,
                                np.int32(0), dq)
                    else:
                        cur.fill(0)
                        cur[active] = 1
                        nxt.fill(0)
                        dist.fill(0)
                        w = negated if state == "stores" else weights
                        args = (indptr, indices, w, dist, cur, nxt, np.int32(n),
                                np.int32(DEPTH), ctl)
                    start.record()
                    kernel((grid,), (BLOCK,), args, shared_mem=p.shared_bytes)
                    stop.record()
                    stop.synchronize()
                    if rep >= 3:
                        times.append(1000.0 * cp.cuda.get_elapsed_time(start, stop))
                rows.append({"algorithm": algorithm, "variant": variant, "state": state,
                             "w": width, "active": k, "time_us": statistics.median(times),
                             "reps": reps})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs-dir", default=configs.REPO_GRAPHS_DIR)
    parser.add_argument("--out", type=Path, required=True, help="Parquet file to write")
    parser.add_argument("--only", nargs="*",
                        default=("USA-road-NY", "road:rows=512", "grid2d:rows=512"),
                        help="graphs whose spec contains one of these strings")
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    kernels = compile_all()
    harness.warm_gpu(2.0)
    rows = []
    for spec, repo_spec in configs.graph_specs(args.graphs_dir, tuple(args.only)):
        name = parse_spec(repo_spec).short_name()
        found = time_launches(spec, kernels, args.reps, args.seed)
        print(name, flush=True)
        for r in found:
            print(f"  {r['algorithm']:4s} {r['variant']:15s} {r['state']:9s} W={r['w']:<2d} "
                  f"active {r['active']:6d}: {r['time_us']:7.1f} us", flush=True)
        rows += [{"graph": name, "graph_spec": repo_spec, **r} for r in found]
    pq.write_table(pa.Table.from_pylist(rows), args.out)
    print(f"wrote {len(rows)} rows to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
