"""Lost updates of plain-store relaxation: the simulator's verify sweeps and repairs against
the H100's store_recheck kernels, and the race-loss rate chosen on graphs left out.

``bench/gpu/results/h100_independent.parquet`` holds, for every store_recheck worklist
kernel (W = 1, 8, 32; with and without an in-queue flag; pushes per thread, warp or block),
the verify sweeps the run took, the vertices they re-pushed (``repairs``; the harness
summed them over the kernel's 2 x reps + 1 runs, so they are divided by that here), its
worklist rounds. Each is simulated at the measured source (``relax=store``) under every
rate of ``--rates`` (``simulator.store_races.LOST_RACE_RATE``), and compared counter by
counter. Times are not looked at: the rate is fitted to counts, and the times it gives are
judged by ``bench/implementation_fidelity.py``.

Per rate: the median over kernels and graphs of |log(simulated / measured)| for repairs,
verify sweeps and iterations. Leave one graph out: for each graph the rate with the lowest
median repairs error on the other graphs, and that rate's errors on the graph.

Run from the repository root: python bench/store_race_fidelity.py [--rates 0.25,0.5,1]
[--graphs NAME,...] [--pushes thread,warp,block] [--jobs N]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench" / "gpu" / "independent"))

import catalog  # noqa: E402

from simulator import functional_run  # noqa: E402
from simulator import load_graph  # noqa: E402
from simulator import simulate  # noqa: E402
from simulator import store_races  # noqa: E402

MEASURED = REPO / "bench" / "gpu" / "results" / "h100_independent.parquet"
COUNTERS = ("repairs", "verify_sweeps", "iterations")


def measured_rows(graphs: set[str] | None, pushes: set[str]) -> list[dict]:
    """The store_recheck kernels' measured counters, one dict per kernel and graph."""
    table = pq.read_table(MEASURED).to_pylist()
    rows = [r for r in table if r["relax"] == "store_recheck" and r["correct"]
            and r["push"] in pushes and (graphs is None or r["graph"] in graphs)]
    by_impl = {impl.impl: impl for impl in catalog.implementations()}
    for row in rows:  # the measured rows' configs predate ``relax=store``
        row["config"] = by_impl[row["impl"]].config
        # the harness summed repairs over every run of a kernel (a check run, then reps
        # timed whole and reps timed kernel by kernel); the other counters are one run's
        row["repairs"] = row["repairs"] / (2 * row["reps"] + 1)
    return rows


def simulated_counts(spec: str, source: int, config: str, rates: list[float]
                     ) -> dict[float, dict[str, float]]:
    """Verify sweeps, repairs and iterations of one config at each rate, on one graph."""
    graph = load_graph(spec)
    functional = functional_run(graph, "sssp", source=source)
    out = {}
    for rate in rates:
        store_races.LOST_RACE_RATE = rate
        trace = simulate(graph, "sssp", config, functional=functional, trace=True).trace
        forms, items = list(trace["form"]), list(trace["worklist"])
        verify = [i for i, form in enumerate(forms) if form == "topology"]
        repairs = sum(items[i + 1] for i in verify if i + 1 < len(forms))
        out[rate] = {"repairs": float(repairs), "verify_sweeps": len(verify),
                     "iterations": len(forms) - len(verify)}
    return out


def _job(args):
    return args[0], args[3], simulated_counts(*args[1:])


def log_error(simulated: float, measured: float) -> float:
    return abs(math.log(max(simulated, 1.0) / max(measured, 1.0)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="0.125,0.25,0.5,1")
    parser.add_argument("--graphs", default=None, help="comma-separated graph names")
    parser.add_argument("--pushes", default="thread,warp,block")
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args(argv)
    os.chdir(REPO)
    rates = [float(r) for r in args.rates.split(",")]
    rows = measured_rows(set(args.graphs.split(",")) if args.graphs else None,
                         set(args.pushes.split(",")))
    by_graph: dict[str, list[dict]] = {}
    for row in rows:
        by_graph.setdefault(row["graph"], []).append(row)
    # the largest graphs first, so that their runs do not end the pool's work alone
    jobs = [(name, g[0]["graph_spec"], int(g[0]["source"]), config, rates)
            for name, g in sorted(by_graph.items(), key=lambda kv: -kv[1][0]["m"])
            for config in sorted({r["config"] for r in g})]
    simulated: dict[str, dict] = {}
    with ProcessPoolExecutor(args.jobs) as pool:
        for name, config, counts in pool.map(_job, jobs):
            for rate, count in counts.items():
                simulated.setdefault(name, {})[config, rate] = count
            print(f"simulated {name} {config}", file=sys.stderr, flush=True)
    errors = {}  # (graph, rate) -> counter -> [errors]
    print(f"{'graph':22s} {'kernel':32s} " + " ".join(
        f"{c:>14s}" for c in COUNTERS) + "   (measured / simulated at each rate)")
    for name, graph_rows in by_graph.items():
        for row in sorted(graph_rows, key=lambda r: r["impl"]):
            cells = []
            for counter in COUNTERS:
                sims = [simulated[name][row["config"], rate][counter] for rate in rates]
                cells.append(f"{row[counter]:>7.0f} / " + ",".join(f"{s:.0f}" for s in sims))
                for rate, sim in zip(rates, sims, strict=True):
                    errors.setdefault((name, rate), {}).setdefault(counter, []).append(
                        log_error(sim, row[counter]))
            print(f"{name:22s} {row['impl']:32s} " + "  ".join(cells))
    print("\nmedian |log(simulated / measured)| over kernels and graphs:")
    for rate in rates:
        parts = [f"{c} {np.median([e for g in by_graph for e in errors[g, rate][c]]):.2f}"
                 for c in COUNTERS]
        print(f"  rate {rate:<6g} " + ", ".join(parts))
    print("\nleave one graph out (the rate with the lowest median repairs error on the others):")
    chosen = []
    for name in by_graph:
        def others(rate, held=name):
            return np.median([e for g in by_graph if g != held
                              for e in errors[g, rate]["repairs"]])
        rate = min(rates, key=others)
        chosen.append(rate)
        parts = [f"{c} {np.median(errors[name, rate][c]):.2f}" for c in COUNTERS]
        print(f"  {name:22s} rate {rate:<6g} " + ", ".join(parts))
    held = {c: np.median([np.median(errors[g, r][c]) for g, r in zip(by_graph, chosen,
                                                                       strict=True)])
            for c in COUNTERS}
    print("median over graphs, left out: " + ", ".join(f"{c} {v:.2f}" for c, v in held.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
