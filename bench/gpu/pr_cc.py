"""PageRank and CC ground truth: every measurement of configs.pr_cc_measurements() on every
graph of the harness, run with `warpsweep measure`'s kernels (tuner/measure), checked against
simulator.functional_run, one Parquet file in the harness's columns plus the counters.

Per (graph, measurement): one warm-up run whose answer is checked, ``--reps`` runs timed
whole (CUDA events around the host loop: kernels and read-backs, what the simulator's
time_us models), ``--reps`` runs with events around every kernel (kernel_us), then one untimed
run of the tallying build (atomics). A measurement's runs come one after the other (the BFS/
SSSP harness goes round-robin over a graph's measurements instead). Rows are written after
every graph, so a run cut short keeps what it finished.

``--catalog spatial`` measures configs.spatial_measurements() instead (BFS, SSSP and CC:
the spatial hybrid beside the sweeps and worklists of its widths), ``--catalog wer``
configs.wer_measurements() (WER and WER+ beside the thread mapping and virtual warps),
``--catalog pr_chunks`` configs.pr_chunk_measurements() (PageRank's sweeps against the chunk),
``--catalog cc_chunks`` configs.cc_chunk_measurements() (CC's, the same widths and chunks),
``--catalog sssp_hybrids`` configs.sssp_hybrid_measurements() (SSSP's temporal hybrids beside
the sweeps and worklists they compete with), ``--catalog block_push``
configs.block_push_measurements() (BFS's and CC's block pushes beside their atomic ones),
``--catalog donation`` configs.donation_measurements() (the thread mapping's work donation
beside the same forms without it: BFS, SSSP and CC, and PageRank's sweeps).

Run on a GPU machine from the repository root:
    PYTHONPATH=. python bench/gpu/pr_cc.py --graphs-dir .gpu_graphs \\
        --out bench/gpu/results/h100_pr_cc.parquet --commit "$(git rev-parse HEAD)"
Needs numpy, scipy, pyyaml, pyarrow and CuPy; never imports Optuna, Ray or DuckDB.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import sys
import time
from pathlib import Path

import cupy as cp

from simulator.load import load_graph

sys.path.insert(0, str(Path(__file__).resolve().parent))
import configs  # noqa: E402

from tuner.measure.measure import Session  # noqa: E402
from tuner.measure.measure import prepare  # noqa: E402
from tuner.measure.plan import plan_for  # noqa: E402
from tuner.measure.runner import compile_together  # noqa: E402
from tuner.measure.runner import warm_gpu  # noqa: E402

# --catalog: the measurements and their algorithms
CATALOGS = {"pr_cc": (configs.pr_cc_measurements, configs.PR_CC_ALGORITHMS),
            "spatial": (configs.spatial_measurements, configs.SPATIAL_ALGORITHMS),
            "wer": (configs.wer_measurements, configs.SPATIAL_ALGORITHMS),
            "pr_chunks": (configs.pr_chunk_measurements, ("pagerank",)),
            "cc_chunks": (configs.cc_chunk_measurements, ("cc",)),
            "sssp_hybrids": (configs.sssp_hybrid_measurements, ("sssp",)),
            "block_push": (configs.block_push_measurements, ("bfs", "cc")),
            "donation": (configs.donation_measurements, configs.DONATION_ALGORITHMS)}


def main(argv: list[str] | None = None) -> int:
    """Measure, check and write; exit 1 if any answer was wrong."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs-dir", default=configs.REPO_GRAPHS_DIR)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--commit", required=True)
    parser.add_argument("--device", default=None,
                        help="the device column (default: the GPU's model, e.g. h100)")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--only", nargs="*", default=())
    parser.add_argument("--catalog", choices=tuple(CATALOGS), default="pr_cc")
    parser.add_argument("--algorithms", nargs="*", default=None,
                        help="default: the catalog's")
    parser.add_argument("--budget-s", type=float, default=540.0,
                        help="stop before a graph when this many seconds have passed")
    args = parser.parse_args(argv)
    t_begin = time.time()
    catalog, algorithms = CATALOGS[args.catalog]
    args.algorithms = args.algorithms or algorithms
    wanted = [(m, plan_for(m.algorithm, m.config, m.variant))
              for m in catalog() if m.algorithm in args.algorithms]
    session = Session(0)
    t0 = time.time()
    for count in (False, True):
        compile_together([plan.names() for _, plan in wanted], count)
    print(f"compiled in {time.time() - t0:.1f} s", flush=True)
    meta = {"device": configs.device_label(session.gpu_name, args.device),
            "gpu_name": session.gpu_name,
            "cupy_version": cp.__version__,
            "cuda_version": str(cp.cuda.runtime.runtimeGetVersion()), "commit": args.commit}
    print(f"{session.gpu_name}; CuPy {cp.__version__}; {len(wanted)} measurements",
          flush=True)
    warm_gpu(2.0)
    rows: list[dict] = []
    for spec, repo_spec in configs.graph_specs(args.graphs_dir, tuple(args.only)):
        if time.time() - t_begin > args.budget_s:
            print(f"budget spent: skipping {repo_spec}", flush=True)
            continue
        graph = load_graph(spec, cache=False)
        for algorithm in args.algorithms:
            t0 = time.time()
            prepared = prepare(graph, repo_spec, algorithm)
            fr = prepared.runs[algorithm]
            print(f"{prepared.name} {algorithm}: n={graph.n} m={graph.m} iterations="
                  f"{len(fr.iterations)} (reference {time.time() - t0:.1f} s)", flush=True)
            gc.collect()
            gc.disable()  # no collector pauses inside the timed host loops
            for m, plan in wanted:
                if m.algorithm != algorithm:
                    continue
                r = session.measure(prepared, algorithm, plan, m.config, args.reps)
                row = {
                    **meta, "graph": r.graph, "graph_spec": repo_spec, "n": r.n, "m": r.m,
                    "algorithm": algorithm, "config": m.config, "variant": m.variant,
                    "source": -1 if r.source is None else r.source,
                    "iterations": r.measured.iterations, "launches": r.measured.launches,
                    "time_us": r.time_us, "time_us_min": r.time_us_min,
                    # the per-kernel pass is separate: where its median comes out above the
                    # whole runs' (by noise, on kernel-bound runs), the part is not known
                    "kernel_us": r.kernel_us if r.kernel_us <= r.time_us else None,
                    "reps": args.reps, "correct": r.correct,
                    "worklist_items": r.measured.worklist_items,
                    "pushes": r.measured.pushes, "atomics": r.measured.atomics,
                    "measured_at": datetime.datetime.now(datetime.UTC).isoformat(
                        timespec="seconds"),
                }
                rows.append(row)
                mark = "" if r.correct else f"   <-- INCORRECT: {r.check}"
                print(f"  {algorithm:8s} {m.config:60s} {m.variant:15s} "
                      f"it={row['iterations']:5d} time={r.time_us:10.1f} (min "
                      f"{r.time_us_min:10.1f}) us kernels={r.kernel_us:10.1f} us{mark}",
                      flush=True)
            gc.enable()
            session.device_graphs.clear()
            cp.get_default_memory_pool().free_all_blocks()
        configs.write_results(rows, args.out, configs.PR_CC_EXTRA)
    bad = [r for r in rows if not r["correct"]]
    print(f"{len(rows)} rows, {len(bad)} incorrect, {time.time() - t_begin:.0f} s; "
          f"wrote {args.out}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
