"""Time the independent SSSP kernels (sssp.cu) on a real GPU with CuPy and write one Parquet
file: ground truth for the simulator that shares none of its code or assumptions.

PYTHONPATH=. python bench/gpu/independent/run.py --graphs-dir DIR --out OUT.parquet --commit SHA
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import cupy as cp
import numpy as np
import scipy.sparse
import scipy.sparse.csgraph

from bench.gpu.independent.catalog import BLOCK_SIZE
from bench.gpu.independent.catalog import Implementation
from bench.gpu.independent.catalog import graph_specs
from bench.gpu.independent.catalog import harness_args
from bench.gpu.independent.catalog import implementations
from bench.gpu.independent.catalog import kernel_names
from bench.gpu.independent.catalog import result_row
from bench.gpu.independent.catalog import select
from bench.gpu.independent.catalog import write_results
from simulator.functional import default_source
from simulator.graph_spec import parse_spec
from simulator.load import load_graph

SOURCE = Path(__file__).with_name("sssp.cu")
RTOL = 1e-5
ZERO_WEIGHT_EPS = 1e-30
CTL_SLOTS = 8
CHANGED = 4
D2H = cp.cuda.runtime.memcpyDeviceToHost


class RunFailed(RuntimeError):
    """A run that cannot give an answer: its worklist overflowed or it passed the round limit."""


def compile_module(names: list[str]) -> dict[str, cp.RawKernel]:
    """sssp.cu compiled once by NVRTC, as {name expression: kernel} for ``names``."""
    module = cp.RawModule(code=SOURCE.read_text(), options=("-std=c++17",),
                          name_expressions=names)
    return {name: module.get_function(name) for name in names}


def reference_distances(graph) -> tuple[np.ndarray, bool]:
    """Dijkstra's float64 distances from the source, and whether zero weights were bumped
    (scipy drops explicit zeros, so they become ZERO_WEIGHT_EPS in the reference only)."""
    weights = np.asarray(graph.weights, dtype=np.float64)
    bumped = bool(weights.size and (weights == 0).any())
    if bumped:
        weights = np.where(weights == 0, ZERO_WEIGHT_EPS, weights)
    matrix = scipy.sparse.csr_matrix((weights, graph.indices, graph.indptr),
                                     shape=(graph.n, graph.n))
    return scipy.sparse.csgraph.dijkstra(matrix, indices=default_source(graph)), bumped


def answer_is_right(dist: np.ndarray, reference: np.ndarray, atol: float) -> bool:
    """Finite where the reference is, and within RTOL of it there."""
    finite = np.isfinite(reference)
    if not np.array_equal(np.isfinite(dist), finite):
        return False
    err = np.abs(dist[finite].astype(np.float64) - reference[finite])
    return bool(np.all(err <= RTOL * np.abs(reference[finite]) + atol))


@dataclass
class Counts:
    """What one run did: host rounds, kernels launched, queue items launched, sweeps."""

    iterations: int = 0
    launches: int = 0
    worklist_items: int = 0
    topology_rounds: int = 0
    verify_sweeps: int = 0
    repairs: int = 0


@dataclass
class Launcher:
    """Launches kernels on the current stream, counting them, with events around each one
    when ``per_kernel`` is on (their sum is the run's kernel time)."""

    per_kernel: bool
    counts: Counts = field(default_factory=Counts)
    events: list = field(default_factory=list)
    used: int = 0

    def __call__(self, kernel: cp.RawKernel, threads: int, args: tuple) -> None:
        """Launch ``kernel`` on ceil(threads / BLOCK_SIZE) blocks."""
        blocks = max(1, -(-threads // BLOCK_SIZE))
        if self.per_kernel:
            if self.used == len(self.events):
                self.events.append((cp.cuda.Event(), cp.cuda.Event()))
            start, end = self.events[self.used]
            self.used += 1
            start.record()
            kernel((blocks,), (BLOCK_SIZE,), args)
            end.record()
        else:
            kernel((blocks,), (BLOCK_SIZE,), args)
        self.counts.launches += 1

    def kernel_us(self) -> float:
        """Summed kernel time of this run, in microseconds (after the run has synchronised)."""
        return 1e3 * sum(cp.cuda.get_elapsed_time(s, e) for s, e in self.events[:self.used])

    def reset(self) -> None:
        """Start a new run (the event pool is kept)."""
        self.counts = Counts()
        self.used = 0


class GraphState:
    """One graph on the device: CSR, distances, flags, two queues and the control words."""

    def __init__(self, graph, source: int) -> None:
        if graph.m >= 2**31 - 1 or graph.n >= 2**31 - 1:
            raise ValueError("sssp.cu indexes with int: the graph is too large")
        self.n, self.m, self.source = int(graph.n), int(graph.m), int(source)
        self.indptr = cp.asarray(np.asarray(graph.indptr, dtype=np.int32))
        self.indices = cp.asarray(np.asarray(graph.indices, dtype=np.int32))
        self.weights = cp.asarray(np.asarray(graph.weights, dtype=np.float32))
        self.capacity = 2 * self.m + self.n + 1
        self.dist = cp.empty(self.n, dtype=np.float32)
        self.flags = [cp.zeros(self.n, dtype=np.int32) for _ in range(2)]
        self.inq = cp.zeros(self.n, dtype=np.int32)
        self.queues = [cp.zeros(self.capacity, dtype=np.int32) for _ in range(2)]
        self.ctl = cp.zeros(CTL_SLOTS, dtype=np.uint64)
        self._pinned = cp.cuda.alloc_pinned_memory(CTL_SLOTS * 8)
        self.host_ctl = np.frombuffer(self._pinned, dtype=np.uint64, count=CTL_SLOTS)
        self.round_limit = 4 * self.n + 16

    def reset(self, impl: Implementation) -> None:
        """Distances to +inf but the source's 0, flags and queues to the start state, synced."""
        self.dist.fill(np.inf)
        self.dist[self.source] = 0
        for flags in self.flags:
            flags.fill(0)
        self.inq.fill(0)
        self.ctl.fill(0)
        if impl.driven == "topology":
            self.flags[0][self.source] = 1
        else:
            self.queues[0][0] = self.source
            if impl.dedup == "flag":
                self.inq[self.source] = 1
        cp.cuda.Device().synchronize()

    def read_ctl(self) -> np.ndarray:
        """The control words, through the pinned buffer (cudaMemcpy synchronises)."""
        cp.cuda.runtime.memcpy(self._pinned.ptr, self.ctl.data.ptr, CTL_SLOTS * 8, D2H)
        return self.host_ctl

    def checked_count(self, count: int, impl: Implementation) -> int:
        """``count`` if the queue held it, else RunFailed."""
        if count >= self.capacity:
            raise RunFailed(f"{impl.impl}: worklist overflow, {count} items for a capacity of "
                            f"{self.capacity} (2m + n + 1)")
        return count

    def check_round(self, rounds: int, impl: Implementation) -> None:
        """RunFailed once ``rounds`` passes the limit of 4n + 16."""
        if rounds > self.round_limit:
            raise RunFailed(f"{impl.impl}: no fixpoint after {self.round_limit} rounds")


def run_topology(st: GraphState, impl: Implementation, k: dict, launch: Launcher) -> None:
    """Bellman-Ford rounds over all vertices until a round lowers nothing."""
    sweep = k[impl.kernels[0]]
    c = launch.counts
    fin, fout = st.flags
    while True:
        c.iterations += 1
        st.check_round(c.iterations, impl)
        launch(sweep, st.n * impl.w,
               (np.int32(st.n), st.indptr, st.indices, st.weights, st.dist, fin, fout, st.ctl,
                np.int32(0), np.int32(c.iterations)))
        c.topology_rounds += 1
        if int(st.read_ctl()[CHANGED]) != c.iterations:
            return
        fin, fout = fout, fin


def run_worklist(st: GraphState, impl: Implementation, k: dict, launch: Launcher) -> None:
    """Worklist steps until the queue is empty (for store_recheck: until a verify sweep also
    finds no unrelaxed edge)."""
    step, *rest = (k[name] for name in impl.kernels)
    verify = rest[0] if rest else None
    c = launch.counts
    qin, qout = st.queues
    count, o = 1, 0
    while True:
        if count == 0 and verify is None:
            return
        c.iterations += 1
        st.check_round(c.iterations, impl)
        if count == 0:
            launch(verify, st.n * impl.w,
                   (np.int32(st.n), st.indptr, st.indices, st.weights, st.dist, qout, st.ctl,
                    np.int32(o), np.uint64(st.capacity)))
            c.verify_sweeps += 1
        else:
            launch(step, count * impl.w,
                   (qin, np.int32(count), qout, st.ctl, np.int32(o), np.uint64(st.capacity),
                    st.indptr, st.indices, st.weights, st.dist, st.inq))
            c.worklist_items += count
        pushed = st.checked_count(int(st.read_ctl()[o]), impl)
        if count == 0:
            c.repairs += pushed
            if pushed == 0:
                return
        qin, qout, o, count = qout, qin, 1 - o, pushed


def run_temporal(st: GraphState, impl: Implementation, k: dict, launch: Launcher) -> None:
    """Worklist steps or topology sweeps, switching on the next frontier's size against
    switch_fraction x n (vertices) or x m (edges: out-degree sums counted on the GPU)."""
    step, sweep, to_queue, to_flags = (k[name] for name in impl.kernels)
    limit = impl.switch_fraction * (st.n if impl.switch_on == "vertices" else st.m)
    slot = 0 if impl.switch_on == "vertices" else 2
    c = launch.counts
    qin, qout = st.queues
    fin, fout = st.flags
    count, o, topology = 1, 0, False
    while True:
        c.iterations += 1
        st.check_round(c.iterations, impl)
        if topology:
            launch(sweep, st.n * impl.w,
                   (np.int32(st.n), st.indptr, st.indices, st.weights, st.dist, fin, fout,
                    st.ctl, np.int32(o), np.int32(c.iterations)))
            c.topology_rounds += 1
            fin, fout = fout, fin
        else:
            launch(step, count * impl.w,
                   (qin, np.int32(count), qout, st.ctl, np.int32(o), np.uint64(st.capacity),
                    st.indptr, st.indices, st.weights, st.dist, st.inq))
            c.worklist_items += count
            qin, qout = qout, qin
        ctl = st.read_ctl()
        count, size = st.checked_count(int(ctl[o]), impl), int(ctl[slot + o])
        o = 1 - o
        if count == 0:
            return
        if not topology and size > limit:
            launch(to_flags, count, (qin, np.int32(count), fin))
            topology = True
        elif topology and size < limit:
            launch(to_queue, st.n, (np.int32(st.n), fin, qin, st.ctl, np.int32(o),
                                    np.uint64(st.capacity)))
            o = 1 - o
            topology = False


RUNNERS = {"topology": run_topology, "data": run_worklist, "temporal": run_temporal}


def timed_run(st: GraphState, impl: Implementation, k: dict, launch: Launcher) -> float:
    """One run from a fresh state; the microseconds between events around the host loop."""
    st.reset(impl)
    launch.reset()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    RUNNERS[impl.driven](st, impl, k, launch)
    end.record()
    end.synchronize()
    return 1e3 * cp.cuda.get_elapsed_time(start, end)


@dataclass
class Outcome:
    """One implementation's measurements on one graph."""

    impl: Implementation
    totals: list[float] = field(default_factory=list)
    kernels: list[float] = field(default_factory=list)
    counts: Counts = field(default_factory=Counts)
    # summed over every run of the kernel (the check run, reps timed whole, reps timed
    # kernel by kernel): 2 x reps + 1 runs' repairs, unlike the other counters, one run's;
    # kept so for the committed results (bench/store_race_fidelity.py divides)
    repairs: int = 0
    correct: bool = True
    error: str = ""


def measure_graph(st: GraphState, impls: list[Implementation], k: dict, reference: np.ndarray,
                  atol: float, reps: int) -> list[Outcome]:
    """Warm-up and check each implementation, then reps round-robin passes timing the whole
    host loop, then reps passes timing each kernel; checks the answer after the last of each."""
    outcomes = [Outcome(i) for i in impls]
    total_launchers = {i.impl: Launcher(per_kernel=False) for i in impls}
    kernel_launchers = {i.impl: Launcher(per_kernel=True) for i in impls}

    def attempt(out: Outcome, launch: Launcher, into: list[float] | None, check: bool) -> None:
        if out.error:
            return
        try:
            elapsed = timed_run(st, out.impl, k, launch)
        except RunFailed as exc:
            out.error, out.correct = str(exc), False
            return
        out.repairs += launch.counts.repairs
        if into is not None:
            into.append(elapsed)
        if check and not answer_is_right(cp.asnumpy(st.dist), reference, atol):
            out.correct = False

    for out in outcomes:
        attempt(out, total_launchers[out.impl.impl], None, True)
    for rep in range(reps):
        for out in outcomes:
            attempt(out, total_launchers[out.impl.impl], out.totals, rep == reps - 1)
            out.counts = total_launchers[out.impl.impl].counts
    for rep in range(reps):
        for out in outcomes:
            launch = kernel_launchers[out.impl.impl]
            attempt(out, launch, None, rep == reps - 1)
            if not out.error:
                out.kernels.append(launch.kernel_us())
    return outcomes


def gpu_info() -> dict:
    """The GPU's name and the CuPy and CUDA runtime versions."""
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = props["name"]
    version = cp.cuda.runtime.runtimeGetVersion()
    return {"gpu_name": name.decode() if isinstance(name, bytes) else str(name),
            "cupy_version": cp.__version__,
            "cuda_version": f"{version // 1000}.{version % 1000 // 10}"}


def row(out: Outcome, common: dict, st: GraphState) -> dict:
    """The Parquet row of one outcome (catalog.py's COLUMNS)."""
    return result_row(common, (st.n, st.m, st.source), out.impl, out.counts, out.totals,
                      out.kernels, out.correct, verify_sweeps=out.counts.verify_sweeps,
                      repairs=out.repairs)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    return harness_args(__doc__.splitlines()[0], "h100", argv)


def main(argv: list[str] | None = None) -> int:
    """Measure every selected implementation on every selected graph; 1 if any answer is wrong."""
    args = parse_args(argv)
    began = time.monotonic()
    impls = select(implementations(), tuple(args.impls))
    if not impls:
        raise SystemExit(f"no implementation matches {args.impls}")
    kernels = compile_module(kernel_names(impls))
    print(f"compiled {len(kernels)} kernels in {time.monotonic() - began:.1f} s", flush=True)
    info = gpu_info()
    rows: list[dict] = []
    for load_spec, repo_spec in graph_specs(args.graphs_dir, tuple(args.only)):
        if time.monotonic() - began > args.budget_s:
            print(f"budget of {args.budget_s:.0f} s spent: skipping {repo_spec} and the rest")
            break
        graph = load_graph(load_spec, cache=False)
        short = parse_spec(repo_spec).short_name()
        reference, bumped = reference_distances(graph)
        atol = ZERO_WEIGHT_EPS * graph.n if bumped else 0.0
        if bumped:
            print(f"{short}: zero weights are {ZERO_WEIGHT_EPS} in the reference only")
        st = GraphState(graph, default_source(graph))
        outcomes = measure_graph(st, impls, kernels, reference, atol, args.reps)
        common = {"device": args.device, **info, "graph": short, "graph_spec": repo_spec,
                  "commit": args.commit,
                  "measured_at": datetime.datetime.now(datetime.UTC).isoformat(
                      timespec="seconds")}
        for out in outcomes:
            r = row(out, common, st)
            rows.append(r)
            print(f"{short:>14} {out.impl.impl:<34} {r['time_us']:11.1f} us "
                  f"kernel {r['kernel_us']:11.1f} us  it {r['iterations']:5d} "
                  f"launches {r['launches']:5d} items {r['worklist_items']:9d} "
                  f"topo {r['topology_rounds']:4d} repairs {r['repairs']:3d} "
                  f"{'ok' if out.correct else 'WRONG ' + out.error}", flush=True)
        write_results(rows, args.out)
        del st
        cp.get_default_memory_pool().free_all_blocks()
    wrong = [r for r in rows if not r["correct"]]
    for r in wrong:
        print(f"INCORRECT: {r['graph']} {r['impl']}", file=sys.stderr)
    print(f"{len(rows)} rows to {args.out} in {time.monotonic() - began:.0f} s")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
