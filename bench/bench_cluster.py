"""A sweep of 8 studies on a local multi-node Ray cluster (a head with no CPUs and 2 one-CPU
worker nodes, as `ray.cluster_utils.Cluster` makes them on this machine).

Prints trials/s, how busy the workers were in the steady state (first evaluation started to
last one finished) and over the whole run, and the driver's own cost per trial (its CPU time,
from getrusage) with the number of worker CPUs one driver could feed at that cost. Exits
non-zero if the steady-state busy fraction is below 90%.

How busy the workers stay depends on how long an evaluation is against the 10-20 ms between a
result and the next start on that worker (the driver's tell, Ray's task round trip): the
default graphs (scale 14, ~0.2 s evaluations) are the size of a real sweep's small graphs;
at scale 13 (~0.08 s) the same driver keeps about 80% busy.

    python bench/bench_cluster.py [--trials 30] [--scale 14] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ray  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

from tuner.plan import check_spec  # noqa: E402
from tuner.plan import load_spaces  # noqa: E402
from tuner.plan import run_studies  # noqa: E402
from tuner.store import read_trials  # noqa: E402
from tuner.study import StudySpec  # noqa: E402

FLOOR = 0.90


def cpu_seconds() -> float:
    """CPU time of this process (the driver) so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=30, help="trials per study (default 30)")
    parser.add_argument("--scale", type=int, default=14,
                        help="RMAT scale of the graphs (default 14: evaluations of ~0.2 s)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()

    graphs = [f"rmat:scale={args.scale},seed={s}" for s in (1, 2)] + [
        f"random:n={1 << args.scale},deg=8,seed=1", f"road:rows={1 << (args.scale // 2)},seed=1"]
    specs = [check_spec(StudySpec(graph=g, algorithm=a, device="h100", space="vwarp",
                                  trials=args.trials, sources=1))
             for g in graphs for a in ("bfs", "cc")]
    assert len(specs) == 8

    t0 = time.monotonic()
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": False, "object_store_memory": 100 * 1024**2})
    for _ in range(2):
        cluster.add_node(num_cpus=1, object_store_memory=100 * 1024**2)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, logging_level="WARNING")
    print(f"cluster up in {time.monotonic() - t0:.1f} s: head (0 CPUs) + 2 worker nodes "
          f"(1 CPU each)", flush=True)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cpu0 = cpu_seconds()
            result = run_studies(specs, load_spaces(specs), tmp, workers=None)
            driver_cpu = cpu_seconds() - cpu0
            rows = read_trials(tmp).to_pylist()
    finally:
        ray.shutdown()
        cluster.shutdown()

    st = result.stats
    evaluated = [r for r in rows if r["state"] != "duplicate"]
    eval_ms = 1000 * sum(r["wall_s"] for r in evaluated) / max(1, len(evaluated))
    driver_ms = 1000 * driver_cpu / max(1, st.evaluations)
    figures = {
        "studies": len(specs), "evaluations": st.evaluations, "rows": len(rows),
        "elapsed_s": round(st.elapsed_s, 2), "eval_s": round(st.eval_s, 2),
        "trials_per_s": round(st.evaluations / st.eval_s, 2),
        "busy_steady": round(st.eval_busy_fraction, 3),
        "busy_whole_run": round(st.busy_fraction, 3),
        "worker_eval_ms": round(eval_ms, 1), "driver_cpu_s": round(driver_cpu, 2),
        "driver_cpu_share": round(driver_cpu / st.elapsed_s, 3),
        "driver_ms_per_trial": round(driver_ms, 2),
        "worker_cpus_one_driver_feeds": round(eval_ms / driver_ms, 1) if driver_ms else None,
        "nodes": sorted({r["node_id"][:8] for r in evaluated if r["node_id"]}),
    }
    print(f"{st.evaluations} evaluations ({len(rows)} rows) of 8 studies in {st.eval_s:.1f} s "
          f"steady ({st.elapsed_s:.1f} s whole run): {figures['trials_per_s']} trials/s")
    print(f"workers busy {100 * st.eval_busy_fraction:.1f}% in the steady state, "
          f"{100 * st.busy_fraction:.1f}% over the whole run (floor {100 * FLOOR:.0f}%)")
    print(f"driver: {driver_cpu:.1f} CPU s = {100 * figures['driver_cpu_share']:.0f}% of one "
          f"core, {driver_ms:.1f} ms per trial; a worker evaluation takes {eval_ms:.0f} ms, so "
          f"one driver feeds about {figures['worker_cpus_one_driver_feeds']} worker CPUs")
    print(f"trials ran on worker nodes {', '.join(figures['nodes'])}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
    return 0 if st.eval_busy_fraction >= FLOOR else 1


if __name__ == "__main__":
    sys.exit(main())
