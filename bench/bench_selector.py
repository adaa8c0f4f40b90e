"""Selector benchmark: the `select` grid on every graph of sweeps/selector.yaml, then
leave-one-graph-out regret of the selector against the fixed rules.

Floor (issue 9): over at least 12 graphs (generated families at several sizes plus the real
graphs of ../shared/graphs), the selector's geometric-mean regret (simulated time of its pick
over the best found for the held-out graph) is at most 1.05 and below every fixed rule (always
thread, always vwarp W=32, W = next power of two of the average degree, the best single
configuration on the training graphs). Exit status 1 when it is not.

Steps: a single simulation per graph (timed, to size the sweep), the sweep (resumable: a
finished study is not run again), the evaluation table, the adaptive-vs-constant comparison.

Run from anywhere: python bench/bench_selector.py [--results DIR] [--workers N] [--algos bfs]
(about 18 minutes on one core for BFS and SSSP from scratch, 6 for BFS alone; seconds when
the results directory already holds the sweep).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tuner.cli.select import evaluation_json  # noqa: E402
from tuner.cli.select import evaluation_table  # noqa: E402
from tuner.selection.selector import POLICY_SELECTOR  # noqa: E402
from tuner.selection.selector import compare_matrix  # noqa: E402
from tuner.selection.selector import describe_config  # noqa: E402
from tuner.selection.selector import evaluate_matrix  # noqa: E402
from tuner.selection.selector import load_matrix  # noqa: E402
from tuner.tuning.plan import check_spec  # noqa: E402
from tuner.tuning.plan import load_spaces  # noqa: E402
from tuner.tuning.plan import run_studies  # noqa: E402
from tuner.tuning.spec import planned_runs  # noqa: E402
from tuner.tuning.sweep import load_sweep  # noqa: E402

SWEEP = ROOT / "sweeps" / "selector.yaml"
MAX_REGRET = 1.05
MIN_GRAPHS = 12


def time_one_simulation(specs) -> list[dict]:
    """Load each graph and time one thread-mapping simulation (load and functional run apart)."""
    from simulator import functional_run
    from simulator import load_graph
    from simulator import simulate

    rows = []
    for spec in specs:
        t0 = time.perf_counter()
        graph = load_graph(spec.graph)
        t1 = time.perf_counter()
        fr = functional_run(graph, spec.algorithm)
        t2 = time.perf_counter()
        simulate(graph, spec.algorithm, {"mapping": "thread"}, spec.device, functional=fr)
        t3 = time.perf_counter()
        rows.append({"graph": spec.graph, "algorithm": spec.algorithm, "n": graph.n,
                     "m": graph.m, "load_s": t1 - t0, "functional_s": t2 - t1,
                     "simulate_s": t3 - t2})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default="./selector-results", metavar="DIR",
                    help="results directory (default ./selector-results; resumed if present)")
    ap.add_argument("--workers", type=int, default=1,
                    help="evaluations in flight (default 1: the machine is shared; 0: in this "
                         "process, without Ray)")
    ap.add_argument("--algos", default="bfs,sssp",
                    help="algorithms of the sweep to run and evaluate (default bfs,sssp; "
                         "bfs alone takes about a third of the time)")
    ap.add_argument("--sweep", default=str(SWEEP),
                    help="sweep file (default sweeps/selector.yaml)")
    ap.add_argument("--skip-timing", action="store_true",
                    help="skip the single-simulation timing of each graph")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = ap.parse_args()
    results = str(Path(args.results).resolve())
    sweep_file = str(Path(args.sweep).resolve())
    os.chdir(ROOT)  # the sweep's file: paths are relative to the repository root
    algos = [a.strip() for a in args.algos.split(",") if a.strip()]
    specs = [check_spec(s) for s in load_sweep(sweep_file) if s.algorithm in algos]
    spaces = load_spaces(specs)
    figures: dict = {"results": results, "algorithms": algos, "studies": len(specs)}

    if not args.skip_timing:
        print(f"one simulation per graph (thread mapping), to size the sweep of {len(specs)} "
              "studies:")
        timing = time_one_simulation(specs)
        total = 0.0
        for spec, t in zip(specs, timing, strict=True):
            runs = planned_runs(spec, spaces[spec.space_ref])
            estimate = t["load_s"] + t["functional_s"] + runs * t["simulate_s"]
            total += estimate
            print(f"  {t['algorithm']:<5} {Path(t['graph'].split(',')[0]).name:<36} "
                  f"n={t['n']:>8,} m={t['m']:>10,}  load {t['load_s']:5.2f} s  sim "
                  f"{t['simulate_s']:6.3f} s  x {runs} runs ~ {estimate:6.1f} s")
        print(f"  estimated sweep time (one core, not counting resumed studies): "
              f"{total / 60:.1f} min")
        figures["timing"] = timing
        figures["estimated_sweep_s"] = total

    t0 = time.perf_counter()
    run = run_studies(specs, spaces, results, workers=args.workers, progress="log",
                      desc="selector")
    sweep_s = time.perf_counter() - t0
    print(f"sweep: {run.stats.evaluations} evaluations in {sweep_s:.1f} s ({run.executor}); "
          f"results in {results}")
    figures["sweep_s"] = sweep_s
    figures["evaluations"] = run.stats.evaluations

    ok = True
    figures["evaluations_by_algorithm"] = {}
    for algo in algos:
        device = specs[0].device
        matrix = load_matrix(results, algo, device)
        t1 = time.perf_counter()
        ev = evaluate_matrix(matrix, seed=0)
        eval_s = time.perf_counter() - t1
        print()
        print(evaluation_table(ev))
        print(f"(evaluation: {eval_s:.1f} s, nested leave-one-graph-out)")
        picks: dict[str, int] = {}
        for r in ev.rows:
            picks[r.selector_setting] = picks.get(r.selector_setting, 0) + 1
        print("selector settings chosen per fold: "
              + ", ".join(f"{k} ({v})" for k, v in sorted(picks.items(), key=lambda x: -x[1])))
        errors = sorted(abs(r.predicted_time_us / (r.best_time_us * r.regrets[POLICY_SELECTOR])
                            - 1) for r in ev.rows)
        median_error = errors[len(errors) // 2]
        print(f"selector's absolute time estimate for its pick (recommend's 'predicted'): "
              f"median error {100 * median_error:.0f}%, worst {100 * errors[-1]:.0f}%")
        sel = ev.geomean[POLICY_SELECTOR]
        rules = {p: v for p, v in ev.geomean.items() if p != POLICY_SELECTOR}
        passed = (len(ev.rows) >= MIN_GRAPHS and sel <= MAX_REGRET
                  and all(sel < v for v in rules.values() if not math.isnan(v)))
        ok &= passed
        best_rule = min(rules, key=lambda p: math.inf if math.isnan(rules[p]) else rules[p])
        print(f"{algo}: selector geomean regret {sel:.4f} over {len(ev.rows)} graphs (floor "
              f"<= {MAX_REGRET}, >= {MIN_GRAPHS} graphs); best fixed rule {best_rule} "
              f"{rules[best_rule]:.4f}: {'PASS' if passed else 'FAIL'}")
        comparison = compare_matrix(matrix)
        print(f"\nadaptive (per-iteration W) against the best constant configuration, {algo}:")
        for r in comparison.rows:
            print(f"  {r.graph_name or r.graph_spec:<28} ratio {r.ratio:6.3f}  "
                  f"{describe_config(r.adaptive_config)} / {describe_config(r.constant_config)}")
        print(f"  geometric mean ratio {comparison.geomean_ratio:.3f}; {comparison.where}")
        figures["evaluations_by_algorithm"][algo] = {
            "evaluation": evaluation_json(ev), "evaluation_s": eval_s, "pass": passed,
            "time_estimate_median_error": median_error,
            "adaptive_geomean_ratio": comparison.geomean_ratio, "adaptive_where": comparison.where,
        }
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1, default=str))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
