"""What an SSSP sweep's stores cost on the GPU: one all-active Bellman-Ford sweep in which
every relaxation improves, timed with parts of kernels.cu's SsspTopo::edge taken out.

Each graph's sweep runs with every vertex active and every distance 0 over negated weights,
so every lane that checks its target finds it improvable and runs the store path: atomicMin
on the distance, the target's activity flag, and the sweep's changed flag (one word every
storing lane writes, the word the host reads to stop). Variants: ``kernel`` (as the harness
runs it), ``no_changed_flag``, ``plain_min`` (a plain store instead of atomicMin),
``no_activity_flag``, ``changed_flag_only`` (neither atomicMin nor activity flag), and
``read_only`` (the kernel over positive weights: nothing improves, nothing is stored).
On the H100 the changed flag is most of the store path (e.g. coAuthorsDBLP at W = 32:
276 us with it, 64 without): same-address stores serialise at the L2 as atomics do, which
is how the simulator now charges them (simulator/engine.py).

On a machine with an NVIDIA GPU and CuPy, from the repository root:
PYTHONPATH=. python bench/gpu/flag_stores.py --graphs-dir ../shared/graphs \\
    --out bench/gpu/results/h100_flag_stores.parquet [--only rmat cit-HepPh]
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
import harness  # noqa: E402
from plans import KernelPlan  # noqa: E402

from simulator.graph_spec import parse_spec  # noqa: E402
from simulator.load import load_graph  # noqa: E402

ATOMIC_MIN = "            atomicMin(reinterpret_cast<int*>(dist) + u, __float_as_int(nd));\n"
ACTIVITY_FLAG = "            nxt[u] = 1;\n"
CHANGED_FLAG = "            ctl[CTL_FLAG] = round + 1;\n"
WIDTHS = (1, 8, 32)
BLOCK = 256


def kernel_sources() -> dict[str, str]:
    """kernels.cu and its variants with parts of SsspTopo::edge's store path removed."""
    src = harness.KERNELS.read_text()
    for part in (ATOMIC_MIN, ACTIVITY_FLAG, CHANGED_FLAG):
        if src.count(part) != 1:
            raise SystemExit(f"kernels.cu changed: cannot find {part.strip()!r} once")
    return {
        "kernel": src,
        "no_changed_flag": src.replace(CHANGED_FLAG, ""),
        "plain_min": src.replace(ATOMIC_MIN, "            dist[u] = nd;\n"),
        "no_activity_flag": src.replace(ACTIVITY_FLAG, ""),
        "changed_flag_only": src.replace(ATOMIC_MIN, "").replace(ACTIVITY_FLAG, ""),
    }


def compile_variants(plans: list[KernelPlan], names: tuple[str, ...] | None = None
                     ) -> dict[str, dict]:
    """The plans' kernel functions compiled from each of ``kernel_sources`` (or ``names``)."""
    sources = kernel_sources()
    return {name: harness.compile_kernels(plans, source=sources[name])
            for name in names or sources}


def time_sweeps(spec: str, variants: dict[str, dict], reps: int) -> list[tuple[str, int, float]]:
    """(variant, W, median microseconds) of one all-active sweep per variant and width."""
    g = load_graph(spec, cache=False)
    indptr = cp.asarray(g.indptr.astype(np.int32))
    indices = cp.asarray(g.indices.astype(np.int32))
    weights = cp.asarray(g.weights.astype(np.float32))
    dist = cp.zeros(g.n, dtype=np.float32)
    cur, nxt = cp.ones(g.n, dtype=np.int32), cp.zeros(g.n, dtype=np.int32)
    ctl = cp.zeros(8, dtype=np.int32)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    runs = [(name, name, -weights) for name in variants]
    runs.append(("read_only", "kernel", weights))
    out = []
    for label, variant, w in runs:
        for width in WIDTHS:
            plan = KernelPlan("sssp", "topology", width, 1, False, None, BLOCK, "default")
            kernel = variants[variant][plan.name]
            grid = -(-g.n * width // BLOCK)
            times = []
            for rep in range(reps + 3):  # 3 warm-up runs
                cur.fill(1)
                dist.fill(0)
                nxt.fill(0)
                args = (indptr, indices, w, dist, cur, nxt, np.int32(g.n), np.int32(0), ctl)
                start.record()
                kernel((grid,), (BLOCK,), args, shared_mem=plan.shared_bytes)
                stop.record()
                stop.synchronize()
                if rep >= 3:
                    times.append(1000.0 * cp.cuda.get_elapsed_time(start, stop))
            out.append((label, width, float(statistics.median(times))))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs-dir", default=configs.REPO_GRAPHS_DIR)
    parser.add_argument("--out", type=Path, required=True, help="Parquet file to write")
    parser.add_argument("--only", nargs="*", default=(),
                        help="graphs whose spec contains one of these strings")
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args(argv)
    variants = compile_variants([KernelPlan("sssp", "topology", w, 1, False, None, BLOCK,
                                            "default") for w in WIDTHS])
    harness.warm_gpu(2.0)
    rows = []
    for spec, repo_spec in configs.graph_specs(args.graphs_dir, tuple(args.only)):
        name = parse_spec(repo_spec).short_name()
        results = time_sweeps(spec, variants, args.reps)
        print(name, flush=True)
        for label in dict.fromkeys(r[0] for r in results):
            times = {w: t for v, w, t in results if v == label}
            print(f"  {label:18s} " + " ".join(f"W={w:<2d} {times[w]:9.1f} us" for w in WIDTHS),
                  flush=True)
        rows += [{"graph": name, "graph_spec": repo_spec, "variant": v, "w": w, "time_us": t,
                  "reps": args.reps} for v, w, t in results]
    pq.write_table(pa.Table.from_pylist(rows), args.out)
    print(f"wrote {len(rows)} rows to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
