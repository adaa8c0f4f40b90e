"""Per-iteration adaptation benchmark (issue 45): per graph, the best constant of the candidate
pool, the oracle over the pool (best configuration per iteration, switches paid: the dynamic
programme, and its schedule as run, the primary figure) and the learned policy trained
leave-one-graph-out: the policy for graph G never saw G (``--train-only``: each fold also
trains on 9 generated graphs, TRAIN_ONLY, for which no figure is reported). Inside each
fold, from the training graphs alone: the candidates (their best constants and their
oracles' per-iteration winners), a per-iteration tree (depth and leaf floor by inner
leave-one-graph-out, switches counted) and a per-graph selector over graph-level features
whose leaves keep a constant or use the tree (where its inner figures win by over 1%). BFS
and SSSP, all simulated on the calibrated H100.

Targets: geomean policy / best constant <= 0.97, worst <= 1.02, and at least half of the
oracle's saving captured where the oracle (as run) gains more than 5%. Exit status 1 when
they are not met (the figures are printed either way).

Per-iteration costs are cached per candidate under ~/.cache/warpsweep/adaptive
(WARPSWEEP_CACHE), so a second run only fits and runs the policies.

    python bench/bench_adaptive.py --quick [--jobs 2]  # 6 graphs, under 5 minutes on 2 cores
    python bench/bench_adaptive.py [--json FILE]        # 23 graphs
    python bench/bench_adaptive.py --train-only         # each fold also trains on 9 more
    python bench/bench_adaptive.py --export DIR         # also the policies trained on all graphs

Its last line reads ``policy/best constant: geomean G, worst W`` (over BFS and SSSP).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tuner.selection.adaptive import CANDIDATES  # noqa: E402
from tuner.selection.adaptive import iteration_table  # noqa: E402
from tuner.selection.adaptive_policy import fit_fold  # noqa: E402
from tuner.selection.adaptive_policy import geomean  # noqa: E402
from tuner.selection.adaptive_policy import leave_one_graph_out  # noqa: E402
from tuner.selection.adaptive_policy import make_policy  # noqa: E402
from tuner.selection.adaptive_policy import samples  # noqa: E402

GRAPHS = ROOT.parent / "shared" / "graphs"
REAL = ("p2p-Gnutella08.txt.gz", "p2p-Gnutella31.txt.gz", "ca-AstroPh.txt.gz",
        "email-Enron.txt.gz", "cit-HepPh.lg.gz", "deezer_HU_edges.csv.gz", "dblp-2010.mtx.gz",
        "coAuthorsDBLP.mtx.gz", "web-NotreDame.txt.gz", "USA-road-NY.gr.gz")
GENERATED = (
    "rmat:scale=12,weights=random,seed=1", "rmat:scale=14,weights=random,seed=1",
    "rmat:scale=14,ef=16,weights=random,seed=3", "rmat:scale=13,ef=4,weights=random,seed=2",
    "rmat:scale=15,ef=8,weights=random,seed=3", "rmat:scale=12,ef=32,weights=random,seed=4",
    "random:n=16384,deg=8,weights=random,seed=1", "random:n=65536,deg=4,weights=random,seed=1",
    "random:n=32768,deg=16,weights=random,seed=2", "road:rows=96,weights=random,seed=2",
    "road:rows=128,weights=random,seed=1", "grid2d:rows=64,cols=64,weights=random,seed=1",
    "mesh2d:rows=96,cols=96,weights=random,seed=1",
)
# With --train-only, graphs that only ever train (every fold's training set has them; no
# figure is reported for them): other scales, edge factors and skews than the evaluated ones,
# none a reseeded twin. On the 23 graphs they moved BFS 1.022 -> 1.017 and SSSP 1.014 -> 1.022
# (bench/results/adaptive-train-only.txt), so they are off by default.
TRAIN_ONLY = (
    "rmat:scale=13,ef=32,weights=random,seed=7", "rmat:scale=11,ef=64,weights=random,seed=8",
    "rmat:scale=14,ef=2,weights=random,seed=9", "rmat:scale=16,ef=4,weights=random,seed=10",
    "random:n=8192,deg=32,weights=random,seed=11", "random:n=131072,deg=3,weights=random,seed=12",
    "road:rows=160,weights=random,seed=13", "grid2d:rows=128,cols=32,weights=random,seed=14",
    "rmat:scale=13,ef=16,a=0.45,b=0.22,c=0.22,weights=random,seed=15",
)
QUICK = (
    "rmat:scale=12,weights=random,seed=1", "rmat:scale=13,ef=4,weights=random,seed=2",
    "random:n=8192,deg=8,weights=random,seed=3", "road:rows=64,weights=random,seed=2",
    f"file:{GRAPHS}/ca-AstroPh.txt.gz,weights=random,seed=1",
    f"file:{GRAPHS}/p2p-Gnutella08.txt.gz,weights=random,seed=1",
)
GEOMEAN_TARGET, WORST_TARGET, CAPTURE_TARGET, GAIN_FLOOR = 0.97, 1.02, 0.5, 1.05


def graph_specs(quick: bool) -> list[str]:
    """The benchmark's graphs (real ones only where ../shared/graphs has them)."""
    if quick:
        return [s for s in QUICK if not s.startswith("file:") or Path(
            s[5:].split(",")[0]).exists()]
    real = [f"file:{GRAPHS / name},weights=random,seed=1" for name in REAL
            if (GRAPHS / name).exists()]
    return real + list(GENERATED)


def _kinds(rows: list) -> str:
    """``constant 15, adaptive 8``: on how many held-out graphs the policy kept one
    candidate for the whole run (its graph-level splits led to a leaf) or adapted."""
    return ", ".join(f"{k} {sum(r.kind == k for r in rows)}" for k in ("constant", "adaptive"))


def _table(job: tuple[str, str, str]) -> tuple[object, float]:
    t0 = time.perf_counter()
    spec, algo, device = job
    return iteration_table(spec, algo, device), time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="6 graphs")
    ap.add_argument("--algos", default="bfs,sssp")
    ap.add_argument("--device", default="h100")
    ap.add_argument("--jobs", type=int, default=1,
                    help="processes building the per-iteration tables (default 1)")
    ap.add_argument("--train-only", action="store_true",
                    help="every fold also trains on TRAIN_ONLY (9 generated graphs, never "
                         "evaluated)")
    ap.add_argument("--json", metavar="FILE", help="write every graph's figures here")
    ap.add_argument("--export", metavar="DIR",
                    help="write the policies trained on every graph (ALGO-DEVICE.json) here")
    args = ap.parse_args()
    from simulator.policy import POLICY_ALGORITHMS

    wrong = [a for a in args.algos.split(",") if a not in POLICY_ALGORITHMS]
    if wrong:  # (pagerank had ended in a traceback: probe ADP)
        ap.error(f"--algos {','.join(wrong)}: a policy runs {', '.join(POLICY_ALGORITHMS)}")
    specs = graph_specs(args.quick)
    start = time.perf_counter()
    every, lines = [], []
    print(f"candidate pool: {', '.join(f'{i}={c}' for i, c in enumerate(CANDIDATES))}")
    train_only = list(TRAIN_ONLY) if args.train_only and not args.quick else []
    for algo in args.algos.split(","):
        jobs = [(spec, algo, args.device) for spec in [*specs, *train_only]]
        if args.jobs > 1:
            with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
                built = list(pool.map(_table, jobs))
        else:
            built = [_table(job) for job in jobs]
        tables = [t for t, _ in built[:len(specs)]]
        extra = [t for t, _ in built[len(specs):]]
        for t, seconds in built:
            print(f"  {algo} {t.graph}: {seconds:.1f} s", file=sys.stderr)
        rows = leave_one_graph_out(specs, tables, algo, args.device, train_only=extra)
        every += rows
        print(f"\n{algo.upper()} on {args.device}, {len(rows)} graphs, leave-one-graph-out "
              f"(each fold also trains on {len(extra)} graphs never evaluated); "
              "oracle = its schedule as run (never above the best constant), DP = the "
              "dynamic programme's own figure")
        print(f"{'graph':30s} {'best constant':38s} {'DP':>6s} {'oracle':>6s} "
              f"{'policy':>7s} {'captured':>8s} {'kind':8s} cands  choices (pool index x "
              "iterations)")
        for r in rows:
            # the share captured is noise where the oracle saves under 1%
            cap = "-" if math.isnan(r.captured) or r.oracle_gain < 1.01 else \
                f"{r.captured:8.2f}"
            print(f"{r.graph[:30]:30s} {r.best_constant[:38]:38s} "
                  f"{r.constant_us and r.oracle_us / r.constant_us:6.3f} "
                  f"{1 / r.oracle_gain:6.3f} {r.ratio:7.3f} {cap:>8s} {r.kind:8s} "
                  f"{r.candidates:5d}  {r.policy_choices[:50]}")
        ratios = [r.ratio for r in rows]
        big = [r for r in rows if r.oracle_gain > GAIN_FLOOR]
        lines.append(f"{algo}: policy/best constant geomean {geomean(ratios):.3f}, worst "
                     f"{max(ratios):.3f} ({rows[ratios.index(max(ratios))].graph}); "
                     f"oracle as run/best constant geomean "
                     f"{geomean([1 / r.oracle_gain for r in rows]):.3f} (DP "
                     f"{geomean([r.oracle_us / r.constant_us for r in rows]):.3f}); "
                     f"{len(big)} graph(s) where the oracle gains > 5%, the policy captures "
                     f"half there on {sum(1 for r in big if r.captured >= CAPTURE_TARGET)}; "
                     f"policies {_kinds(rows)}")
        if args.export:
            s = samples([*tables, *extra])
            model = fit_fold(s, list(range(len(tables) + len(extra))))
            policy = make_policy(model, CANDIDATES, f"{algo}-{args.device}",
                                 {"algorithm": algo, "device": args.device,
                                  "trained_on": [t.graph for t in [*tables, *extra]]})
            path = policy.save(Path(args.export) / f"{algo}-{args.device}.json")
            print(f"wrote {path} ({model.kind}: selector depth {model.selector.depth}, "
                  f"tree depth {model.adaptive.depth}, {len(policy.candidates)} candidates)")
    ratios = [r.ratio for r in every]
    big = [r for r in every if r.oracle_gain > GAIN_FLOOR]
    met = (geomean(ratios) <= GEOMEAN_TARGET and max(ratios) <= WORST_TARGET
           and all(r.captured >= CAPTURE_TARGET for r in big))
    if args.json:
        Path(args.json).write_text(json.dumps([r.to_json() for r in every], indent=1))
    print()
    for line in lines:
        print(line)
    print(f"targets (geomean <= {GEOMEAN_TARGET}, worst <= {WORST_TARGET}, half the oracle's "
          f"saving where it exceeds 5%): {'met' if met else 'NOT met'}; "
          f"{time.perf_counter() - start:.0f} s")
    print(f"policy/best constant: geomean {geomean(ratios):.3f}, worst {max(ratios):.3f}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
