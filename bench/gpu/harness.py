"""Real CUDA runs of the simulator's BFS and SSSP strategies: timed, checked, one Parquet file.

Each (graph, algorithm, strategy, variant) of configs.measurements() runs once to warm up and
to check its answer against simulator.functional_run, then ``--reps`` times with CUDA events
around the whole algorithm (kernels and the host loop's read-back per iteration: what the
simulator's time_us models) and ``--reps`` times more with events around every kernel
(kernel_us). Rows are written after every graph, so a run cut short keeps what it finished.

Run on a GPU machine from the repository root (the simulator loads and checks the graphs):
    PYTHONPATH=. python bench/gpu/harness.py --graphs-dir ../shared/graphs \
        --out bench/gpu/results/h100.parquet --commit "$(git rev-parse HEAD)"
Needs numpy, scipy, pyyaml, pyarrow and CuPy; never imports the tuner.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import statistics
import sys
import time
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import cupy as cp
import numpy as np

from simulator import functional_run
from simulator.functional import default_source
from simulator.graph_spec import parse_spec
from simulator.load import load_graph

# the kernels, the launch clock, the occupancy query and the warm-up are `warpsweep measure`'s
from tuner.measure.plan import KERNELS  # noqa: E402,F401  (flag_stores, store_counts)
from tuner.measure.runner import Clock  # noqa: E402
from tuner.measure.runner import device_resident_blocks  # noqa: E402,F401
from tuner.measure.runner import resident_blocks_fn  # noqa: E402
from tuner.measure.runner import warm_gpu  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import configs  # noqa: E402
from plans import KernelPlan  # noqa: E402
from plans import plan_for  # noqa: E402

CTL_FLAG, CTL_TAIL = 0, 5  # kernels.cu's control words
WORD = 4


class DeviceGraph:
    """One graph's CSR, weights and work buffers on the GPU, and the host loops that run it."""

    def __init__(self, graph, resident_blocks) -> None:
        self.n, self.m = graph.n, graph.m
        self.indptr = cp.asarray(graph.indptr.astype(np.int32))
        self.indices = cp.asarray(graph.indices.astype(np.int32))
        self.weights = cp.asarray(graph.weights.astype(np.float32))
        self.level = cp.empty(self.n, dtype=np.int32)
        self.dist = cp.empty(self.n, dtype=np.float32)
        self.flags = [cp.zeros(self.n, dtype=np.int32) for _ in range(2)]
        cap = 2 * self.m + self.n + 1  # a launch pushes about once per expanded edge at most
        self.queues = [cp.empty(cap, dtype=np.int32) for _ in range(2)]
        self.deferred = cp.empty(self.n, dtype=np.int32)
        self.ctl = cp.zeros(8, dtype=np.int32)
        self.host_ctl = np.frombuffer(cp.cuda.alloc_pinned_memory(8 * WORD), np.int32, 8)
        self.resident_blocks = resident_blocks
        self.degree = np.diff(graph.indptr)
        self.outliers: dict[int, int] = {}
        self.clock = Clock()

    def outlier_count(self, threshold: int) -> int:
        """Vertices of degree above ``threshold``, counted on the host once (in the untimed
        warm-up run), so that the timed runs hold no host work but the algorithm's loop."""
        if threshold not in self.outliers:
            self.outliers[threshold] = int((self.degree > threshold).sum())
        return self.outliers[threshold]

    def read_ctl(self) -> np.ndarray:
        """Copy the control words to pinned host memory (waits for the GPU: the round trip)."""
        cp.cuda.runtime.memcpy(self.host_ctl.ctypes.data, self.ctl.data.ptr, 8 * WORD,
                               cp.cuda.runtime.memcpyDeviceToHost)
        return self.host_ctl

    def reset(self, algorithm: str, source: int, driven: str) -> None:
        """Initial state of a run (queued before the start event, so not timed)."""
        self.ctl.fill(0)
        if algorithm == "bfs":
            self.level.fill(-1)
            self.level[source] = 0
        else:
            self.dist.fill(np.inf)
            self.dist[source] = 0.0
            self.flags[0].fill(0)
            self.flags[1].fill(0)
            if driven == "topology":
                self.flags[0][source] = 1
        if driven == "data":
            self.queues[0][0] = source

    def run(self, plan: KernelPlan, kernels: dict, source: int, limit: int,
            entries_per_launch: int = 0) -> int:
        """Run the algorithm's host loop once; returns its iterations (-1: hit ``limit``).
        ``entries_per_launch``: split each worklist launch into consecutive launches of at
        most this many entries, each seeing the stores of the ones before (0: one launch)."""
        kernel = kernels[plan.name]
        b = plan.block_size
        i32 = np.int32
        clock = self.clock
        n = i32(self.n)
        if plan.driven == "topology":
            if plan.dynamic:
                grid = self.resident_blocks(kernel, b, plan.shared_bytes)
            else:
                virtual_warps = -(-self.n // plan.chunk)
                grid = -(-virtual_warps * plan.w // b)
            thr = plan.defer_threshold
            outlier_grid = 0
            if thr is not None:
                outlier_grid = min(self.outlier_count(thr),
                                   self.resident_blocks(kernels["bfs_outliers"], b, 0))
            for it in range(limit):
                if plan.algorithm == "bfs":
                    args = (self.indptr, self.indices, self.level, n, i32(it), self.ctl,
                            i32(thr or 0), self.deferred)
                else:
                    cur, nxt = self.flags[it & 1], self.flags[(it + 1) & 1]
                    args = (self.indptr, self.indices, self.weights, self.dist, cur, nxt, n,
                            i32(it), self.ctl)
                clock.launch(kernel, grid, b, args, plan.shared_bytes)
                if outlier_grid:
                    clock.launch(kernels["bfs_outliers"], outlier_grid, b,
                                 (self.indptr, self.indices, self.level, i32(it), self.ctl,
                                  self.deferred))
                if self.read_ctl()[CTL_FLAG] != it + 1:
                    return it + 1
            return -1
        count = 1
        self.items = 0  # worklist entries the launches read, duplicates included
        for it in range(limit):
            self.items += count
            wl_in, wl_out = self.queues[it & 1], self.queues[(it + 1) & 1]
            step = entries_per_launch or count
            for first in range(0, count, step):
                entries = min(step, count - first)
                grid = -(-entries * plan.w // b)
                if plan.algorithm == "bfs":
                    args = (self.indptr, self.indices, self.level, i32(it), wl_in[first:],
                            i32(entries), wl_out, self.ctl)
                else:
                    args = (self.indptr, self.indices, self.weights, self.dist, i32(it),
                            wl_in[first:], i32(entries), wl_out, self.ctl)
                clock.launch(kernel, grid, b, args)
            count = int(self.read_ctl()[CTL_TAIL + (it & 1)])
            if count == 0:
                return it + 1
            if count >= self.queues[0].size:
                raise RuntimeError(f"worklist overflow: {count} items")
        return -1

    def answer(self, algorithm: str) -> np.ndarray:
        """The run's levels or distances, on the host."""
        return (self.level if algorithm == "bfs" else self.dist).get()


def correct(algorithm: str, got: np.ndarray, reference: np.ndarray) -> bool:
    """Levels equal exactly; float32 distances within float32 rounding of the float64 ones."""
    if algorithm == "bfs":
        return bool(np.array_equal(got.astype(np.int64), reference))
    finite = np.isfinite(reference)
    if not np.array_equal(finite, np.isfinite(got)):
        return False
    return bool(np.allclose(got[finite], reference[finite], rtol=1e-5, atol=0.0))


def device_graphs(graphs_dir: str, only: tuple[str, ...], resident):
    """Each graph of the harness on the GPU, one at a time: (short name, spec as the repo's
    users write it, its source, its ``DeviceGraph``); a graph's buffers are freed before the
    next is loaded."""
    for spec, repo_spec in configs.graph_specs(graphs_dir, only):
        graph = load_graph(spec, cache=False)
        dg = DeviceGraph(graph, resident)
        yield parse_spec(repo_spec).short_name(), repo_spec, default_source(graph), dg
        del dg
        cp.get_default_memory_pool().free_all_blocks()


def compile_kernels(plans: list[KernelPlan], defines: tuple[str, ...] = (),
                    source: str | None = None) -> dict:
    """Compile kernels.cu (or ``source``, a variant of it) once with NVRTC, instantiating
    every template the plans need (``defines``: macros such as ``STATUS_LOADS_BYPASS_L1``)."""
    names = sorted({p.name for p in plans} | {"bfs_outliers"})
    options = ("-std=c++17", *(f"-D{d}" for d in defines))
    code = KERNELS.read_text() if source is None else source
    module = cp.RawModule(code=code, options=options, name_expressions=names)
    return {name: module.get_function(name) for name in names}


@dataclass
class Samples:
    """One measurement's runs on one graph: total and per-kernel times, loop counts."""

    totals: list[float] = field(default_factory=list)
    kernels: list[float] = field(default_factory=list)
    iterations: list[int] = field(default_factory=list)
    launches: list[int] = field(default_factory=list)
    correct: bool = True


def measure_graph(spec: str, repo_spec: str, plans, kernels, resident, args, meta) -> list:
    """Every measurement on one graph: rows for the Parquet file."""
    t0 = time.time()
    graph = load_graph(spec, cache=False)
    source = default_source(graph)
    runs = {a: functional_run(graph, a, source) for a in ("bfs", "sssp")}
    refs = {a: run.output for a, run in runs.items()}
    dg = DeviceGraph(graph, resident)
    name = parse_spec(repo_spec).short_name()
    print(f"{name}: n={graph.n} m={graph.m} source={source} levels="
          f"{len(runs['bfs'].iterations)} sssp rounds={len(runs['sssp'].iterations)} "
          f"(load+reference {time.time() - t0:.1f} s)", flush=True)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    limit = 4 * graph.n + 16
    samples = [Samples() for _ in plans]

    def once(m: configs.Measurement, plan: KernelPlan, sample: Samples, kind: str) -> None:
        """One run; ``kind``: check (warm-up), total or kernels (per-kernel events)."""
        dg.reset(m.algorithm, source, plan.driven)
        dg.clock.start(kind == "kernels")
        start.record()
        it = dg.run(plan, kernels, source, limit)
        stop.record()
        stop.synchronize()
        if kind == "total":
            sample.totals.append(1000.0 * cp.cuda.get_elapsed_time(start, stop))
            sample.iterations.append(it)
            sample.launches.append(dg.clock.launches)
        elif kind == "kernels":
            sample.kernels.append(dg.clock.kernel_us())
        if kind == "check" or len(sample.kernels) == args.reps:  # the first and last run
            sample.correct = sample.correct and it > 0 and correct(
                m.algorithm, dg.answer(m.algorithm), refs[m.algorithm])

    # every configuration once (warm-up and check), then round-robin passes, so that a slow
    # drift of the machine touches all configurations alike
    for kind in ("check", *["total"] * args.reps, *["kernels"] * args.reps):
        for (m, plan), sample in zip(plans, samples, strict=True):
            once(m, plan, sample, kind)
    rows = []
    for (m, _), sample in zip(plans, samples, strict=True):
        row = {
            **meta, "graph": name, "graph_spec": repo_spec, "n": graph.n, "m": graph.m,
            "algorithm": m.algorithm, "config": m.config, "variant": m.variant,
            "source": source, "iterations": int(statistics.median_low(sample.iterations)),
            "launches": int(statistics.median_low(sample.launches)),
            "time_us": float(statistics.median(sample.totals)),
            "time_us_min": float(min(sample.totals)),
            "kernel_us": float(statistics.median(sample.kernels)), "reps": args.reps,
            "correct": sample.correct,
            "measured_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        }
        rows.append(row)
        mark = "" if sample.correct else "   <-- INCORRECT"
        print(f"  {m.algorithm:4s} {m.config:48s} {m.variant:15s} it={row['iterations']:5d} "
              f"time={row['time_us']:10.1f} (min {row['time_us_min']:10.1f}) us "
              f"kernels={row['kernel_us']:10.1f} us{mark}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs-dir", default=configs.REPO_GRAPHS_DIR,
                        help="folder holding the files of ../shared/graphs (default: %(default)s)")
    parser.add_argument("--out", type=Path, required=True, help="Parquet file to write")
    parser.add_argument("--commit", required=True, help="git commit of the repo measured")
    parser.add_argument("--device", default=None,
                        help="the device column (default: the GPU's model, e.g. h100)")
    parser.add_argument("--reps", type=int, default=5,
                        help="timed runs of each kind (total; per-kernel events)")
    parser.add_argument("--only", nargs="*", default=(),
                        help="graphs whose spec contains one of these strings")
    parser.add_argument("--budget-s", type=float, default=540.0,
                        help="stop before a graph when this many seconds have passed")
    parser.add_argument("--warmup-s", type=float, default=2.0,
                        help="seconds of busy GPU before the first graph (default 2)")
    args = parser.parse_args(argv)
    t_begin = time.time()
    wanted = [(m, plan_for(m)) for m in configs.measurements()]
    kernels = compile_kernels([p for _, p in wanted])
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    gpu_name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    meta = {"device": configs.device_label(gpu_name, args.device), "gpu_name": gpu_name,
            "cupy_version": cp.__version__,
            "cuda_version": str(cp.cuda.runtime.runtimeGetVersion()), "commit": args.commit}
    resident = resident_blocks_fn(props["multiProcessorCount"])
    print(f"{gpu_name}, {props['multiProcessorCount']} SMs; CuPy {cp.__version__}, CUDA "
          f"runtime {meta['cuda_version']}; compiled {len(kernels)} kernels in "
          f"{time.time() - t_begin:.1f} s", flush=True)
    warm_gpu(args.warmup_s)
    rows: list[dict] = []
    for spec, repo_spec in configs.graph_specs(args.graphs_dir, tuple(args.only)):
        if time.time() - t_begin > args.budget_s:
            print(f"budget spent: skipping {repo_spec}", flush=True)
            continue
        gc.collect()
        gc.disable()  # no collector pauses inside the timed host loops
        rows += measure_graph(spec, repo_spec, wanted, kernels, resident, args, meta)
        gc.enable()
        cp.get_default_memory_pool().free_all_blocks()  # the graph's buffers are gone now
        configs.write_results(rows, args.out)
    bad = [r for r in rows if not r["correct"]]
    print(f"{len(rows)} rows, {len(bad)} incorrect, {time.time() - t_begin:.0f} s; "
          f"wrote {args.out}", flush=True)
    for r in bad:
        print(f"INCORRECT: {r['graph']} {r['algorithm']} {r['config']} {r['variant']}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
