"""Time the independent BFS kernels (bfs.cu) on a real GPU with CuPy and write one Parquet file
in catalog.py's contract: ground truth for the simulator that shares none of its code.

PYTHONPATH=. python bench/gpu/independent/bfs_run.py --graphs-dir DIR --out OUT.parquet \
    --commit SHA

Per graph: one upload; per implementation: one untimed warm-up run (its levels checked), then
--reps runs timed by the host's wall clock around the whole run (time_us: their median,
time_us_min: their minimum; the counters are those of the median run), then --reps runs with
CUDA events around every kernel (kernel_us: the median over those runs of the summed kernel
times). The levels are checked after the warm-up and after the last run of each timed pass
against exact hop counts (bfs_catalog.reference_levels, cross-checked with scipy's
breadth_first_order reach); a wrong answer or a RunFailed keeps its row with correct=False.
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

from bench.gpu.independent.bfs_catalog import UNVISITED
from bench.gpu.independent.bfs_catalog import Implementation
from bench.gpu.independent.bfs_catalog import graph_specs
from bench.gpu.independent.bfs_catalog import implementations
from bench.gpu.independent.bfs_catalog import kernel_names
from bench.gpu.independent.bfs_catalog import reference_levels
from bench.gpu.independent.bfs_catalog import select
from bench.gpu.independent.bfs_catalog import write_results
from bench.gpu.independent.catalog import harness_args
from bench.gpu.independent.catalog import result_row
from bench.gpu.independent.run import Counts
from bench.gpu.independent.run import Launcher
from bench.gpu.independent.run import gpu_info
from simulator.functional import default_source
from simulator.graph_spec import parse_spec
from simulator.load import load_graph

SOURCE = Path(__file__).with_name("bfs.cu")
CTL_SLOTS = 4  # bfs.cu: 0 and 1 the alternating counters, 2 the sweeps' changed word
CHANGED = 2
D2H = cp.cuda.runtime.memcpyDeviceToHost
INT32_LIMIT = 2**31 - 64  # bfs.cu's edge loops add W <= 32 to an int below m


class RunFailed(RuntimeError):
    """A run that cannot give an answer: a queue overflowed or it passed n + 1 levels."""


def compile_module(names: list[str]) -> dict[str, cp.RawKernel]:
    """bfs.cu compiled once by NVRTC, as {name expression: kernel} for ``names``."""
    module = cp.RawModule(code=SOURCE.read_text(), options=("-std=c++17",),
                          name_expressions=names)
    return {name: module.get_function(name) for name in names}


def checked_reference(graph, source: int) -> np.ndarray:
    """Exact levels from ``source``; their reached set must be scipy's BFS order's."""
    level = reference_levels(graph.indptr, graph.indices, source)
    matrix = scipy.sparse.csr_matrix(
        (np.ones(len(graph.indices), dtype=np.int8), np.asarray(graph.indices),
         np.asarray(graph.indptr)), shape=(graph.n, graph.n))
    order = scipy.sparse.csgraph.breadth_first_order(matrix, source, directed=True,
                                                     return_predecessors=False)
    reached = np.zeros(graph.n, dtype=bool)
    reached[order] = True
    if not np.array_equal(reached, level != UNVISITED):
        raise AssertionError("reference_levels and scipy's breadth_first_order disagree")
    return level


class GraphState:
    """One graph on the device: CSR, levels, two queues and the control words."""

    def __init__(self, graph, source: int) -> None:
        self.n, self.m, self.source = int(graph.n), int(graph.m), int(source)
        edges = max(self.m, len(graph.indices))  # the stored (directed) edges
        # a queue holds every push of a level; duplicates ("store" visits) can exceed n, so
        # 2 x edges + n + 1 slots, and a tail past them is refused, never read past
        self.capacity = 2 * edges + self.n + 1
        if self.capacity >= INT32_LIMIT:
            raise ValueError("bfs.cu indexes with int: the graph is too large")
        self.indptr = cp.asarray(np.asarray(graph.indptr, dtype=np.int32))
        self.indices = cp.asarray(np.asarray(graph.indices, dtype=np.int32))
        self.level = cp.empty(self.n, dtype=np.int32)
        self.queues = [cp.zeros(self.capacity, dtype=np.int32) for _ in range(2)]
        self.ctl = cp.zeros(CTL_SLOTS, dtype=np.uint64)
        self._pinned = cp.cuda.alloc_pinned_memory(CTL_SLOTS * 8)
        self.host_ctl = np.frombuffer(self._pinned, dtype=np.uint64, count=CTL_SLOTS)
        self.level_limit = self.n + 1

    def reset(self) -> None:
        """Levels UNVISITED but the source's 0, the source alone in queue 0, control words
        zero; synchronised."""
        self.level.fill(UNVISITED)
        self.level[self.source] = 0
        self.queues[0][0] = self.source
        self.ctl.fill(0)
        cp.cuda.Device().synchronize()

    def read_ctl(self) -> np.ndarray:
        """The control words, through the pinned buffer (cudaMemcpy synchronises)."""
        cp.cuda.runtime.memcpy(self._pinned.ptr, self.ctl.data.ptr, CTL_SLOTS * 8, D2H)
        return self.host_ctl

    def checked_count(self, count: int, impl: Implementation) -> int:
        """``count`` if the queue held it, else RunFailed."""
        if count > self.capacity:
            raise RunFailed(f"{impl.impl}: queue overflow, {count} pushes for a capacity of "
                            f"{self.capacity} (2 x edges + n + 1)")
        return count

    def check_level(self, iterations: int, impl: Implementation) -> None:
        """RunFailed once a run passes n + 1 levels."""
        if iterations > self.level_limit:
            raise RunFailed(f"{impl.impl}: not done after {self.level_limit} levels")


def sweep_args(st: GraphState, p: int, cur: int) -> tuple:
    return (np.int32(st.n), st.indptr, st.indices, st.level, st.ctl, np.int32(p),
            np.int32(cur))


def step_args(st: GraphState, qin, count: int, qout, p: int, cur: int) -> tuple:
    return (qin, np.int32(count), qout, st.ctl, np.int32(p), np.uint64(st.capacity),
            st.indptr, st.indices, st.level, np.int32(cur))


def run_topology(st: GraphState, impl: Implementation, k: dict, launch: Launcher) -> None:
    """One sweep a level until a sweep visits nothing (it leaves the changed word below
    cur + 1)."""
    sweep = k[impl.kernels[0]]
    c = launch.counts
    cur = 0
    while True:
        c.iterations += 1
        st.check_level(c.iterations, impl)
        launch(sweep, st.n * impl.w, sweep_args(st, 0, cur))
        c.topology_rounds += 1
        if int(st.read_ctl()[CHANGED]) != cur + 1:
            return
        cur += 1


def run_worklist(st: GraphState, impl: Implementation, k: dict, launch: Launcher) -> None:
    """One worklist step a level until a step pushes nothing."""
    step = k[impl.kernels[0]]
    c = launch.counts
    qin, qout = st.queues
    count, cur, p = 1, 0, 0
    while count:
        c.iterations += 1
        st.check_level(c.iterations, impl)
        launch(step, count * impl.w, step_args(st, qin, count, qout, p, cur))
        c.worklist_items += count
        count = st.checked_count(int(st.read_ctl()[p]), impl)
        p ^= 1
        qin, qout = qout, qin
        cur += 1


def run_temporal(st: GraphState, impl: Implementation, k: dict, launch: Launcher) -> None:
    """Worklist steps (cas, warp push) until the next queue holds more than F x n vertices,
    then counting sweeps until one newly visits fewer than F x n, whose level is then
    compacted into a queue for the worklist again."""
    step, sweep, compact = (k[name] for name in impl.kernels)
    limit = impl.switch_fraction * st.n
    c = launch.counts
    qin, qout = st.queues
    count, cur, p, topology = 1, 0, 0, False
    while True:
        c.iterations += 1
        st.check_level(c.iterations, impl)
        if not topology:
            launch(step, count * impl.w, step_args(st, qin, count, qout, p, cur))
            c.worklist_items += count
            count = st.checked_count(int(st.read_ctl()[p]), impl)
            p ^= 1
            qin, qout = qout, qin
            cur += 1
            if count == 0:
                return
            topology = count > limit  # the levels mark the frontier: no conversion
            continue
        launch(sweep, st.n * impl.w, sweep_args(st, p, cur))
        c.topology_rounds += 1
        newly = int(st.read_ctl()[p])
        p ^= 1
        cur += 1
        if newly == 0:
            return
        if newly < limit:  # back to the worklist: queue the vertices of level cur
            launch(compact, st.n, (np.int32(st.n), st.level, np.int32(cur), qin, st.ctl,
                                   np.int32(p), np.uint64(st.capacity)))
            count = st.checked_count(int(st.read_ctl()[p]), impl)
            p ^= 1
            topology = False
            if count == 0:
                return


RUNNERS = {"topology": run_topology, "data": run_worklist, "temporal": run_temporal}


def wall_run(st: GraphState, impl: Implementation, k: dict, launch: Launcher) -> float:
    """One run from a fresh state; host wall-clock microseconds of the whole host loop (the
    loop ends on a synchronising copy; the stream is synchronised again before the clock
    stops)."""
    st.reset()
    launch.reset()
    began = time.perf_counter()
    RUNNERS[impl.driven](st, impl, k, launch)
    cp.cuda.get_current_stream().synchronize()
    return 1e6 * (time.perf_counter() - began)


@dataclass
class Outcome:
    """One implementation's measurements on one graph."""

    impl: Implementation
    totals: list[float] = field(default_factory=list)
    kernels: list[float] = field(default_factory=list)
    run_counts: list[Counts] = field(default_factory=list)
    correct: bool = True
    error: str = ""

    @property
    def counts(self) -> Counts:
        """The counters of the median wall-timed run (the warm-up's if none was timed)."""
        if not self.totals:
            return self.run_counts[0] if self.run_counts else Counts()
        order = np.argsort(self.totals)
        return self.run_counts[1 + int(order[(len(order) - 1) // 2])]


def measure(st: GraphState, impl: Implementation, k: dict, reference: np.ndarray,
            reps: int) -> Outcome:
    """Warm-up (checked), reps wall-timed runs, reps kernel-timed runs (last of each checked)."""
    out = Outcome(impl)
    wall = Launcher(per_kernel=False)
    events = Launcher(per_kernel=True)

    def attempt(launch: Launcher, check: bool) -> float | None:
        try:
            elapsed = wall_run(st, impl, k, launch)
        except RunFailed as exc:
            out.error, out.correct = str(exc), False
            return None
        if check and not np.array_equal(cp.asnumpy(st.level), reference):
            out.correct = False
        return elapsed

    failed = attempt(wall, True) is None
    out.run_counts.append(wall.counts)  # a failed warm-up's row shows how far it got
    if failed:
        return out
    for rep in range(reps):
        elapsed = attempt(wall, rep == reps - 1)
        if elapsed is None:
            return out
        out.totals.append(elapsed)
        out.run_counts.append(wall.counts)
    for rep in range(reps):
        if attempt(events, rep == reps - 1) is None:
            return out
        out.kernels.append(events.kernel_us())
    return out


def row(out: Outcome, common: dict, st: GraphState) -> dict:
    """The Parquet row of one outcome (catalog.py's COLUMNS)."""
    return result_row(common, (st.n, st.m, st.source), out.impl, out.counts, out.totals,
                      out.kernels, out.correct)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    return harness_args(__doc__.splitlines()[0], "h200", argv)


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
        source = default_source(graph)
        reference = checked_reference(graph, source)
        st = GraphState(graph, source)
        common = {"device": args.device, **info, "graph": short, "graph_spec": repo_spec,
                  "commit": args.commit,
                  "measured_at": datetime.datetime.now(datetime.UTC).isoformat(
                      timespec="seconds")}
        for impl in impls:
            out = measure(st, impl, kernels, reference, args.reps)
            r = row(out, common, st)
            rows.append(r)
            print(f"{short:>14} {impl.impl:<22} {r['time_us']:11.1f} us "
                  f"kernel {r['kernel_us']:11.1f} us  it {r['iterations']:5d} "
                  f"launches {r['launches']:5d} items {r['worklist_items']:9d} "
                  f"topo {r['topology_rounds']:4d} "
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
