"""Two benchmarks of a sweep on a local multi-node Ray cluster (``ray.cluster_utils.Cluster``).

Real evaluator (default): 8 studies on a head with no CPUs and 2 one-CPU worker nodes. Prints
trials/s, how busy the workers were in the steady state (first evaluation started to last one
finished) and over the whole run, and the driver's own cost per trial (its CPU time, from
getrusage). Exits non-zero if the steady-state busy fraction is below 90%. The default graphs
(scale 14, ~0.2 s evaluations) are the size of a real sweep's small graphs.

Driver alone (``--noop S --cpus N``): worker nodes declaring 32 CPUs each (fake CPUs: this
machine need not have them), N in all, and every evaluation sleeps S seconds instead of
simulating, so only the driver (its asks, tells, journal and Parquet writes) and Ray's dispatch
are measured. The graphs are tiny and really loaded (counted per node). Worker processes are
started by a warm-up before the clock starts. Its last line::

    busy NN% of N CPUs, T trials/s, driver CPU X ms/trial

busy: evaluation seconds over N x the span from the first evaluation started to the last one
finished; driver CPU: the driver process's CPU time (all its threads) over the evaluations.
Exits non-zero below 90% busy.

    python bench/bench_cluster.py [--trials 30] [--scale 14] [--json FILE]
    python bench/bench_cluster.py --noop 0.25 --cpus 128 [--studies 20] [--trials 300]
    python bench/bench_cluster.py ... --old-driver   # the same with the driver before issue 44

Driver without Ray (``--inline --cpus N``): the same sweep with the batch driver on an
in-process executor of capacity N whose evaluations return at once (reporting S seconds, so
batches are sized as on the cluster). No Ray process competes with the driver for this
machine's cores, so its CPU per trial is what a head spends. ``--profile FILE`` writes the
driver's cProfile statistics (``python -m pstats FILE``).

    python bench/bench_cluster.py --inline --noop 0.25 --cpus 128 [--profile driver.prof]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import resource
import sys
import tempfile
import time
import zlib
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ray  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

from tuner.results.store import ResultStore  # noqa: E402
from tuner.results.store import read_trials  # noqa: E402
from tuner.tuning.evaluate import Outcome  # noqa: E402
from tuner.tuning.evaluate import SimulatorBackend  # noqa: E402
from tuner.tuning.executor import InlineExecutor  # noqa: E402
from tuner.tuning.plan import check_spec  # noqa: E402
from tuner.tuning.plan import load_spaces  # noqa: E402
from tuner.tuning.plan import run_studies  # noqa: E402
from tuner.tuning.spec import StudySpec  # noqa: E402

FLOOR = 0.90
CPUS_PER_NODE = 32
STORE_BYTES = 100 * 1024**2


def cpu_seconds() -> float:
    """CPU time of this process (the driver, all threads) so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class NoopBackend(SimulatorBackend):
    """Real (tiny) graph preparation; each evaluation sleeps ``delay_s`` and reports a
    time_us that depends only on the configuration (so samplers have something to learn)."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s

    def evaluate(self, graph, runs, algorithm, device, config):  # noqa: ANN001, ANN201
        """Sleep, then a deterministic made-up time."""
        t0 = time.perf_counter()
        time.sleep(self.delay_s)
        text = json.dumps(config, sort_keys=True, default=str)
        value = 1.0 + zlib.crc32(text.encode()) % 1000
        from tuner.env import hostname
        from tuner.env import ray_node_id

        return Outcome({"time_us": value}, {}, None, time.perf_counter() - t0, hostname(),
                       ray_node_id())


class InstantBackend(NoopBackend):
    """``NoopBackend`` without the sleep: reports ``delay_s`` as the evaluation's wall time."""

    def evaluate(self, graph, runs, algorithm, device, config):  # noqa: ANN001, ANN201
        """The deterministic made-up time, at once."""
        text = json.dumps(config, sort_keys=True, default=str)
        value = 1.0 + zlib.crc32(text.encode()) % 1000
        return Outcome({"time_us": value}, {}, None, self.delay_s, "inline", None)


class WideInlineExecutor(InlineExecutor):
    """An in-process executor that claims ``capacity`` CPUs, for ``BatchRunner``."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.description = f"in-process, capacity {capacity}"


def noop_specs(args: argparse.Namespace) -> list[StudySpec]:
    """The driver-alone sweep: ``--studies`` studies of tiny graphs."""
    graphs = [f"rmat:scale=7,seed={s}" for s in range(1, args.studies // 2 + 2)]
    return [check_spec(StudySpec(graph=g, algorithm=a, device="h100", space="vwarp",
                                 trials=args.trials, sources=1, sampler=args.sampler,
                                 references=False))
            for g in graphs for a in ("bfs", "cc")][:args.studies]


def inline_main(args: argparse.Namespace) -> int:
    """The driver without Ray: its CPU per trial (and a profile of it, with ``--profile``)."""
    import optuna

    from tuner.tuning.dispatch import BatchRunner
    from tuner.tuning.runner import Runner

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    specs = noop_specs(args)
    spaces = load_spaces(specs)
    cls = Runner if args.old_driver else BatchRunner
    with tempfile.TemporaryDirectory() as tmp:
        store = ResultStore.open(tmp)
        profile = cProfile.Profile() if args.profile else None
        try:
            runner = cls(WideInlineExecutor(args.cpus), store, tmp,
                         backend=InstantBackend(args.noop))
            cpu0, t0 = cpu_seconds(), time.monotonic()
            if profile is not None:
                profile.enable()
            runner.run(specs, spaces)
            if profile is not None:
                profile.disable()
            driver_cpu, wall = cpu_seconds() - cpu0, time.monotonic() - t0
        finally:
            store.close()
        rows = read_trials(tmp).to_pylist()
    if profile is not None:
        profile.dump_stats(args.profile)
    if args.dump:  # each study's trials in order: what its sampler proposed
        params = {}
        for r in sorted(rows, key=lambda r: (r["study_key"], r["trial"])):
            params.setdefault(r["study_key"], []).append(
                [r["trial"], r["state"], {k: v for k, v in r.items()
                                          if k.startswith("param_") and v is not None}])
        Path(args.dump).write_text(json.dumps(params, sort_keys=True, default=str) + "\n")
    evaluations = runner.stats.evaluations
    driver_ms = 1000 * driver_cpu / max(1, evaluations)
    print(json.dumps({"driver": cls.__name__, "capacity": args.cpus, "studies": len(specs),
                      "trials": args.trials, "sampler": args.sampler,
                      "evaluations": evaluations, "rows": len(rows),
                      "wall_s": round(wall, 2), "driver_cpu_s": round(driver_cpu, 2),
                      "tasks": getattr(runner.stats, "tasks", None)}))
    print(f"in-process, capacity {args.cpus}: {evaluations} trials, "
          f"driver CPU {driver_ms:.2f} ms/trial")
    return 0


def start_cluster(worker_nodes: int, cpus_per_node: int) -> Cluster:
    """A head with no CPUs and ``worker_nodes`` nodes, Ray initialised on it."""
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": False, "object_store_memory": STORE_BYTES})
    for _ in range(worker_nodes):
        cluster.add_node(num_cpus=cpus_per_node, object_store_memory=STORE_BYTES)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, logging_level="WARNING")
    return cluster


def sweep_on(cluster: Cluster, specs: list[StudySpec], **options):
    """Run ``specs`` on the started ``cluster`` into a temporary results directory, then shut
    Ray and the cluster down: the sweep's result, the driver's CPU seconds and the rows."""
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cpu0 = cpu_seconds()
            result = run_studies(specs, load_spaces(specs), tmp, workers=None, **options)
            driver_cpu = cpu_seconds() - cpu0
            rows = read_trials(tmp).to_pylist()
    finally:
        ray.shutdown()
        cluster.shutdown()
    return result, driver_cpu, rows


def warm_up(cpus: int) -> float:
    """Start a worker process for every CPU (a task that sleeps on each), before timing."""
    t0 = time.monotonic()

    @ray.remote(num_cpus=1)
    def hold(s: float) -> int:
        import tuner.tuning.evaluate  # noqa: F401 - what the sweep's tasks import

        time.sleep(s)
        return 0

    ray.get([hold.options(scheduling_strategy="SPREAD").remote(2.0) for _ in range(cpus)])
    return time.monotonic() - t0


def noop_main(args: argparse.Namespace) -> int:
    """The driver-alone benchmark."""
    nodes = max(1, -(-args.cpus // CPUS_PER_NODE))
    per_node = args.cpus // nodes
    specs = noop_specs(args)
    t0 = time.monotonic()
    cluster = start_cluster(nodes, per_node)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    warm_s = warm_up(nodes * per_node)
    print(f"cluster up in {time.monotonic() - t0:.1f} s (warm-up {warm_s:.1f} s): head (0 "
          f"CPUs) + {nodes} nodes x {per_node} fake CPUs; {len(specs)} studies x "
          f"{args.trials} trials ({args.sampler}), evaluations sleep {args.noop} s", flush=True)
    result, driver_cpu, rows = sweep_on(cluster, specs, backend=NoopBackend(args.noop))
    st = result.stats
    cpus = nodes * per_node
    evaluated = [r for r in rows if r["state"] != "duplicate"]
    eval_total = sum(r["wall_s"] for r in evaluated)
    busy = eval_total / (cpus * st.eval_s) if st.eval_s else 0.0
    rate = st.evaluations / st.eval_s if st.eval_s else 0.0
    driver_ms = 1000 * driver_cpu / max(1, st.evaluations)
    loads = getattr(st, "loads", None)
    figures = {"cpus": cpus, "studies": len(specs), "trials": args.trials,
               "sampler": args.sampler, "evaluations": st.evaluations, "rows": len(rows),
               "eval_s": round(st.eval_s, 2), "elapsed_s": round(st.elapsed_s, 2),
               "busy": round(busy, 3), "trials_per_s": round(rate, 1),
               "driver_cpu_s": round(driver_cpu, 2), "driver_ms_per_trial": round(driver_ms, 2),
               "rows_per_node": dict(Counter((r["node_id"] or "")[:8] for r in evaluated)),
               "graph_loads": loads, "tasks": getattr(st, "tasks", None),
               "mean_batch": round(getattr(st, "mean_batch", 1.0), 2),
               "max_studies_in_flight": getattr(st, "max_studies_in_flight", None),
               "mean_trials_in_flight": round(getattr(st, "trials_in_flight_s", 0.0)
                                              / max(st.elapsed_s, 1e-9), 1),
               "mean_submit_to_start_s": round(getattr(st, "to_start_s", 0.0)
                                               / max(1, getattr(st, "tasks", 1) or 1), 3),
               "mean_end_to_handled_s": round(getattr(st, "to_handled_s", 0.0)
                                              / max(1, getattr(st, "tasks", 1) or 1), 3),
               "fetches": getattr(st, "fetches", None)}
    print(json.dumps(figures))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
    print(f"busy {100 * busy:.0f}% of {cpus} CPUs, {rate:.0f} trials/s, "
          f"driver CPU {driver_ms:.2f} ms/trial")
    return 0 if busy >= FLOOR else 1


def real_main(args: argparse.Namespace) -> int:
    """The real-evaluator benchmark on 2 one-CPU worker nodes."""
    graphs = [f"rmat:scale={args.scale},seed={s}" for s in (1, 2)] + [
        f"random:n={1 << args.scale},deg=8,seed=1", f"road:rows={1 << (args.scale // 2)},seed=1"]
    specs = [check_spec(StudySpec(graph=g, algorithm=a, device="h100", space="vwarp",
                                  trials=args.trials, sources=1))
             for g in graphs for a in ("bfs", "cc")]
    assert len(specs) == 8

    t0 = time.monotonic()
    cluster = start_cluster(2, 1)
    print(f"cluster up in {time.monotonic() - t0:.1f} s: head (0 CPUs) + 2 worker nodes "
          f"(1 CPU each)", flush=True)
    result, driver_cpu, rows = sweep_on(cluster, specs)

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
        "graph_loads": getattr(st, "loads", None),
    }
    print(f"{st.evaluations} evaluations ({len(rows)} rows) of 8 studies in {st.eval_s:.1f} s "
          f"steady ({st.elapsed_s:.1f} s whole run): {figures['trials_per_s']} trials/s")
    print(f"workers busy {100 * st.eval_busy_fraction:.1f}% in the steady state, "
          f"{100 * st.busy_fraction:.1f}% over the whole run (floor {100 * FLOOR:.0f}%)")
    print(f"driver: {driver_cpu:.1f} CPU s = {100 * figures['driver_cpu_share']:.0f}% of one "
          f"core, {driver_ms:.1f} ms per trial; a worker evaluation takes {eval_ms:.0f} ms, so "
          f"one driver feeds about {figures['worker_cpus_one_driver_feeds']} worker CPUs")
    print(f"trials ran on worker nodes {', '.join(figures['nodes'])}; graph loads "
          f"{figures['graph_loads']}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
    return 0 if st.eval_busy_fraction >= FLOOR else 1


def main() -> int:
    """Run the benchmark the arguments choose."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=None,
                        help="trials per study (default 30; 300 with --noop)")
    parser.add_argument("--scale", type=int, default=14,
                        help="RMAT scale of the graphs (default 14: evaluations of ~0.2 s)")
    parser.add_argument("--noop", type=float, metavar="S",
                        help="driver alone: evaluations sleep S seconds on fake CPUs")
    parser.add_argument("--cpus", type=int, default=128, help="fake CPUs with --noop")
    parser.add_argument("--studies", type=int, default=20, help="studies with --noop")
    parser.add_argument("--sampler", default="tpe", help="sampler with --noop (default tpe)")
    parser.add_argument("--old-driver", action="store_true",
                        help="the driver before issue 44 (tuner.tuning.runner.Runner: a task per "
                             "trial, one study after another), for a before/after on one machine")
    parser.add_argument("--inline", action="store_true",
                        help="driver without Ray: an in-process executor of capacity --cpus "
                             "whose evaluations return at once (with --noop S: reporting S s)")
    parser.add_argument("--profile", metavar="FILE",
                        help="with --inline: write the driver's cProfile statistics to FILE")
    parser.add_argument("--dump", metavar="FILE",
                        help="with --inline: write each study's trials (number, state, "
                             "params) to FILE, to compare two revisions' proposals")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if args.old_driver:
        import tuner.tuning.plan
        from tuner.tuning.runner import Runner

        tuner.tuning.plan.make_runner = Runner
    if args.inline:
        args.noop = 0.25 if args.noop is None else args.noop
        args.trials = args.trials or 300
        return inline_main(args)
    if args.noop is not None:
        args.trials = args.trials or 300
        return noop_main(args)
    args.trials = args.trials or 30
    return real_main(args)


if __name__ == "__main__":
    sys.exit(main())
