"""Runs a KernelPlan's kernels (tuner/measure/kernels.cu, NVRTC through CuPy) on one graph:
the algorithm's host loop as the simulator models it, timed with CUDA events, its answer
read back, and a separate untimed run that tallies the atomics. Needs CuPy and a GPU."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from dataclasses import field

import cupy as cp
import numpy as np

from simulator.errors import WarpsweepError
from simulator.functional import FunctionalRun
from tuner.measure.plan import CTL_ACC
from tuner.measure.plan import CTL_COUNT
from tuner.measure.plan import CTL_FLAG
from tuner.measure.plan import CTL_TAIL
from tuner.measure.plan import CTL_WORDS
from tuner.measure.plan import KERNELS
from tuner.measure.plan import KernelPlan

WORD = 4
PR_DAMPING = 0.85  # simulator.functional_run's defaults
PR_TOLERANCE = 1e-6
PR_MAX_ITERATIONS = 100
_MODULES: dict[tuple[tuple[str, ...], bool], dict] = {}


class SharedMemoryTooSmall(WarpsweepError):
    """A plan's blocks need more shared memory than the GPU gives a block."""


class EdgesPastInt32(WarpsweepError):
    """A graph whose stored edges the kernels' int32 offsets cannot index."""


# Dynamic shared memory a launch may take without opting in (CUDA's portable limit).
DEFAULT_SHARED_BYTES = 48 * 1024


class QueueOverflow(WarpsweepError):
    """A launch pushed more entries than its queue holds: the run is refused (its kernels
    stored none past the queue's end, ``ws_queue_cap``), not measured."""

    def __init__(self, count: int, room: int, what: str, dedup: bool) -> None:
        hint = ("" if dedup else "; duplicates re-push what they reach, launch after launch: "
                "dedup=true keeps each vertex once on a worklist")
        super().__init__(f"a worklist launch pushed {count} {what}, more than the queue's "
                         f"{room}: not measured{hint}")


def compile_kernels(names: tuple[str, ...] | list[str], count: bool = False) -> dict:
    """kernels.cu compiled once per set of template instances (``count``: with the atomic
    tally, -DWS_COUNT); name -> kernel, with the module under ``"__module__"``."""
    key = (tuple(sorted(set(names))), count)
    if key not in _MODULES:
        options = ("-std=c++17", *(("-DWS_COUNT",) if count else ()))
        module = cp.RawModule(code=KERNELS.read_text(), options=options,
                              name_expressions=list(key[0]))
        kernels = {name: module.get_function(name) for name in key[0]}
        kernels["__module__"] = module
        _MODULES[key] = kernels
    return _MODULES[key]


def compile_together(name_sets: list[tuple[str, ...]], count: bool = False) -> None:
    """Compile the instances of many plans in one NVRTC module (one compile, not one per
    plan) and let each plan's ``compile_kernels`` find it."""
    union = sorted({name for names in name_sets for name in names})
    kernels = compile_kernels(union, count)
    for names in name_sets:
        key = (tuple(sorted(set(names))), count)
        _MODULES.setdefault(key, kernels)


class Clock:
    """Launches kernels, optionally between a pair of CUDA events each (for kernel_us)."""

    def __init__(self) -> None:
        self.pairs: list[tuple[cp.cuda.Event, cp.cuda.Event]] = []
        self.used = 0
        self.per_kernel = False
        self.launches = 0

    def start(self, per_kernel: bool) -> None:
        """A new run: count launches from 0, with events around each or not."""
        self.per_kernel, self.used, self.launches = per_kernel, 0, 0

    def launch(self, kernel, grid: int, block: int, args: tuple, shared: int = 0) -> None:
        """Launch ``kernel`` (between two events when timing each kernel)."""
        self.launches += 1
        if not self.per_kernel:
            kernel((grid,), (block,), args, shared_mem=shared)
            return
        if self.used == len(self.pairs):
            self.pairs.append((cp.cuda.Event(), cp.cuda.Event()))
        begin, end = self.pairs[self.used]
        self.used += 1
        begin.record()
        kernel((grid,), (block,), args, shared_mem=shared)
        end.record()

    def kernel_us(self) -> float:
        """Sum of the per-kernel event times of the last run (after it synchronised)."""
        return 1000.0 * sum(cp.cuda.get_elapsed_time(b, e) for b, e in self.pairs[: self.used])


def resident_blocks_fn(sms: int):
    """Resident blocks of a kernel on the whole GPU (CUDA's occupancy query)."""
    cache: dict = {}

    def resident(kernel, block: int, shared: int) -> int:
        key = (id(kernel), block, shared)
        if key not in cache:
            try:
                per_sm = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
                    kernel.kernel.ptr, block, shared)
            except Exception:  # noqa: BLE001  (CuPy builds without the driver API)
                per_sm = max(1, 2048 // block)
            cache[key] = sms * max(1, int(per_sm))
        return cache[key]

    return resident


def device_resident_blocks():
    """``resident_blocks_fn`` of the GPU in use."""
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    return resident_blocks_fn(props["multiProcessorCount"])


def gpu_name() -> str:
    """The name of the GPU in use."""
    name = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def warm_gpu(seconds: float) -> None:
    """Keep the GPU busy a moment so that the first run is not timed at idle clocks."""
    x = cp.arange(1 << 24, dtype=np.float32)
    end = time.time() + seconds
    while time.time() < end:
        for _ in range(50):
            x = x * np.float32(0.5) + np.float32(1.0)
        cp.cuda.Device().synchronize()


@dataclass
class RunCounts:
    """What one run's host loop counted."""

    iterations: int = 0
    launches: int = 0
    worklist_items: int = 0  # entries the worklist launches read, duplicates included
    pushes: int = 0  # items the worklist launches and compactions put on a tail


class DeviceGraph:
    """One functional run's CSR (the graph, its transpose for PageRank, its symmetrisation for
    CC), weights and work buffers on the GPU, and the host loops that run a plan on it."""

    def __init__(self, fr: FunctionalRun, out_degree: np.ndarray | None, resident) -> None:
        t0 = time.perf_counter()
        self.algorithm, self.source = fr.algorithm, fr.source
        self.n = fr.n
        if fr.indices.size > np.iinfo(np.int32).max:  # the cast below had wrapped
            raise EdgesPastInt32(
                f"the GPU kernels index edges with int32 offsets: {fr.indices.size:,} stored "
                f"edges is past {np.iinfo(np.int32).max:,}: not measured")
        self.indptr = cp.asarray(fr.indptr.astype(np.int32))
        self.indices = cp.asarray(fr.indices.astype(np.int32))
        self.m = int(fr.indices.size)
        n = self.n
        self.weights = None
        if fr.edge_values is not None:
            self.weights = cp.asarray(fr.edge_values.astype(np.float32))
        i32 = np.int32
        if self.algorithm == "pagerank":
            deg = np.asarray(out_degree, dtype=np.float64)
            inv = np.divide(1.0, deg, out=np.zeros(n), where=deg > 0)
            self.inv_outdeg = cp.asarray(inv)
            self.dangling = int((deg == 0).sum())
            self.rank = [cp.empty(n, dtype=np.float64) for _ in range(2)]  # as the
            self.share = [cp.empty(n, dtype=np.float64) for _ in range(2)]  # functional run
            self.retired = [cp.empty(n, dtype=i32) for _ in range(2)]
            cap = n + 1
        else:
            self.value = cp.empty(n, dtype=np.float32 if self.algorithm == "sssp" else i32)
            self.flags = [cp.zeros(n, dtype=i32) for _ in range(2)]
            self.inq = cp.zeros(n, dtype=i32)
            self.tags = cp.zeros(n, dtype=i32)  # spatial: a partition's last claiming launch
            # a launch pushes at most once per edge its entries expand, duplicates included:
            # asynchronous CC worklists reach 2.3 m on grid2d-512
            cap = 8 * self.m + n + 16
        self.queue_room = cap
        self._queues: list | None = None  # ``queues``, allocated for the first plan pushing
        self.everyone = cp.arange(n, dtype=i32)
        self.deferred = cp.empty(n, dtype=i32)
        self.ctl = cp.zeros(CTL_WORDS, dtype=i32)
        self.host_ctl = np.frombuffer(cp.cuda.alloc_pinned_memory(CTL_WORDS * WORD), i32,
                                      CTL_WORDS)
        self.resident = resident
        self.degree = np.diff(fr.indptr)
        self.clock = Clock()
        cp.cuda.Device().synchronize()
        self.upload_s = time.perf_counter() - t0

    @property
    def queues(self) -> list:
        """The two worklists a run's launches read and push (``queue_room`` ids each),
        allocated when a plan first uses them: a topology plan needs none, and they take 64
        bytes a stored edge (probe KERN: they had capped the graphs every plan could run)."""
        if self._queues is None:
            self._queues = [cp.empty(self.queue_room, dtype=np.int32) for _ in range(2)]
        return self._queues

    def read_ctl(self) -> np.ndarray:
        """Copy the control block to pinned host memory (waits for the GPU: the round trip)."""
        cp.cuda.runtime.memcpy(self.host_ctl.ctypes.data, self.ctl.data.ptr, CTL_WORDS * WORD,
                               cp.cuda.runtime.memcpyDeviceToHost)
        return self.host_ctl

    def acc(self, i: int) -> float:
        """Double ``i`` of the control block as last read."""
        return float(self.host_ctl[CTL_ACC:].view(np.float64)[i])

    def reset(self, plan: KernelPlan) -> None:
        """Initial state of a run (queued before the start event, so not timed)."""
        self.ctl.fill(0)
        n, a = self.n, self.algorithm
        if a == "pagerank":
            for r, s in zip(self.rank, self.share, strict=True):
                r.fill(1.0 / n)
                cp.multiply(self.inv_outdeg, 1.0 / n, out=s)
            acc = np.zeros(CTL_WORDS - CTL_ACC, dtype=np.int32)
            acc.view(np.float64)[3] = self.dangling / n
            self.ctl[CTL_ACC:] = cp.asarray(acc)
            if plan.driven == "data":
                self.queues[0][:n] = self.everyone
            return
        for f in self.flags:
            f.fill(0)
        if plan.dedup:
            self.inq.fill(0)
        if plan.driven == "spatial":
            self.tags.fill(0)
        if a == "bfs":
            self.value.fill(-1)
            self.value[self.source] = 0
        elif a == "sssp":
            self.value.fill(np.inf)
            self.value[self.source] = 0.0
        else:
            self.value[:] = self.everyone
        initial = n if a == "cc" else 1
        if plan.driven == "spatial":  # the flags as a sweep's, the partitions listing them
            if a == "cc":
                self.flags[0].fill(1)
                partitions = self._partitions(plan)
                self.queues[0][:partitions] = self.everyone[:partitions]
            else:
                if a == "sssp":
                    self.flags[0][self.source] = 1
                self.queues[0][0] = self.source // plan.partition
            return
        first_form = plan.driven
        if plan.driven == "temporal":
            first_form = "topology" if initial > plan.switch_to_topology * n else "data"
        if first_form == "topology" and a != "bfs":
            if a == "cc":
                self.flags[0].fill(1)
            else:
                self.flags[0][self.source] = 1
        elif first_form == "data":
            if a == "cc":
                self.queues[0][:n] = self.everyone
            else:
                self.queues[0][0] = self.source

    def answer(self, plan: KernelPlan, iterations: int) -> np.ndarray:
        """The run's levels, distances, labels or ranks, on the host."""
        if self.algorithm == "pagerank":
            return self.rank[iterations & 1].get()
        return self.value.get()

    # ---- launches ----------------------------------------------------------------------

    def _sweep(self, plan: KernelPlan, kernels: dict, it: int, parity: int,
               outlier_grid: int) -> None:
        """Launch sweep ``it`` (flags ``parity`` current) and its outlier kernel."""
        i32, b = np.int32, plan.block_size
        kernel = kernels[plan.sweep_name()]
        grid = (self.resident(kernel, b, plan.shared_bytes) if plan.dynamic
                else plan.sweep_grid(self.n))
        thr = i32(plan.defer_threshold or 0)
        dthr = i32(plan.donate_threshold or 0)
        n, a, iti = i32(self.n), self.algorithm, i32(it)
        if a == "bfs":
            args = (self.indptr, self.indices, self.value, n, iti, iti, self.ctl, thr,
                    self.deferred, dthr)
            outlier_args = (self.indptr, self.indices, self.value, iti, iti, self.ctl,
                            self.deferred)
        elif a in ("sssp", "cc"):
            cur, nxt = self.flags[parity], self.flags[parity ^ 1]
            head = (self.indptr, self.indices) + ((self.weights,) if a == "sssp" else ())
            args = (*head, self.value, cur, nxt, n, iti, self.ctl, thr, self.deferred, dthr)
            outlier_args = (*head, self.value, cur, nxt, iti, self.ctl, self.deferred)
        else:
            p, q = it & 1, (it + 1) & 1
            head = (self.indptr, self.indices, self.share[p], self.rank[p], self.inv_outdeg,
                    self.rank[q], self.share[q], np.float64(PR_DAMPING), n, iti, self.ctl)
            args = (*head, thr, self.deferred, dthr)
            outlier_args = (*head, self.deferred)
        self.clock.launch(kernel, grid, b, args, plan.shared_bytes)
        if outlier_grid:
            self.clock.launch(kernels[plan.outlier_name()], outlier_grid, b, outlier_args)

    def _worklist(self, plan: KernelPlan, kernels: dict, it: int, wl_in, count: int,
                  wl_out) -> None:
        """Launch worklist launch ``it`` over ``count`` entries of ``wl_in``."""
        i32, a = np.int32, self.algorithm
        iti, c, dthr = i32(it), i32(count), i32(plan.donate_threshold or 0)
        if a == "bfs":
            args = (self.indptr, self.indices, self.value, iti, iti, wl_in, c, wl_out,
                    self.ctl, self.inq, dthr)
        elif a == "sssp":
            args = (self.indptr, self.indices, self.weights, self.value, iti, wl_in, c,
                    wl_out, self.ctl, self.inq, dthr)
        elif a == "cc":
            args = (self.indptr, self.indices, self.value, iti, wl_in, c, wl_out, self.ctl,
                    self.inq, dthr)
        else:
            p, q = it & 1, (it + 1) & 1
            args = (self.indptr, self.indices, self.share[p], self.rank[p], self.inv_outdeg,
                    self.rank[q], self.share[q], np.float64(PR_DAMPING),
                    np.float64(PR_TOLERANCE), i32(self.n), iti, wl_in, c, wl_out, self.ctl,
                    self.retired[q], self.retired[p])
        self.clock.launch(kernels[plan.worklist_name()], plan.worklist_grid(count),
                          plan.block_size, args)

    def _partitions(self, plan: KernelPlan) -> int:
        """The graph's partitions of ``plan.partition`` consecutive vertices."""
        return -(-self.n // plan.partition)

    def _spatial(self, plan: KernelPlan, kernels: dict, it: int, parity: int, parts_in,
                 count: int, parts_out) -> None:
        """Launch spatial launch ``it`` over ``count`` partitions of ``parts_in`` (flags
        ``parity`` current)."""
        i32, a = np.int32, self.algorithm
        n, p, iti, c = i32(self.n), i32(plan.partition), i32(it), i32(count)
        tail = (parts_in, c, parts_out, self.ctl, self.tags)
        if a == "bfs":
            args = (self.indptr, self.indices, self.value, n, p, iti, iti, *tail)
        else:
            cur, nxt = self.flags[parity], self.flags[parity ^ 1]
            head = (self.indptr, self.indices) + ((self.weights,) if a == "sssp" else ())
            args = (*head, self.value, cur, nxt, n, p, iti, *tail)
        self.clock.launch(kernels[plan.spatial_name()], plan.spatial_grid(count),
                          plan.block_size, args)

    def outlier_grid(self, plan: KernelPlan, kernels: dict) -> int:
        """Blocks of the outlier kernel: the resident ones, at most one per outlier; 0 when
        the graph has none (then it is never launched)."""
        if plan.defer_threshold is None:
            return 0
        outliers = int((self.degree > plan.defer_threshold).sum())
        kernel = kernels[plan.outlier_name()]
        return min(outliers, self.resident(kernel, plan.block_size, 0))

    # ---- host loops --------------------------------------------------------------------

    def bound_pushes(self, kernels: dict) -> None:
        """Set the room every push of ``kernels``' module may store into (``ws_queue_cap``),
        before its runs and outside their timing."""
        cap = kernels["__module__"].get_global("ws_queue_cap")
        cp.ndarray((1,), cp.int32, cap).fill(min(self.queue_room, 2**31 - 1))

    def allow_shared(self, plan: KernelPlan, kernels: dict) -> None:
        """Let the plan's sweep take its dynamic shared memory past the 48 KiB a launch
        may take by default, up to what the GPU gives a block (a large chunk's statuses and
        bounds); refuse a plan that needs more (its launch had failed with CUDA's "invalid
        argument", probe KERN)."""
        need = plan.shared_bytes
        sweep = kernels.get(plan.sweep_name())  # (the only kernel given shared memory)
        if need <= DEFAULT_SHARED_BYTES or sweep is None:
            return
        most = int(cp.cuda.Device().attributes.get("MaxSharedMemoryPerBlockOptin",
                                                    DEFAULT_SHARED_BYTES))
        if need > most:
            raise SharedMemoryTooSmall(
                f"a block of {plan.block_size} threads at W={plan.w}, chunk={plan.chunk} "
                f"needs {need:,} bytes of shared memory; this GPU gives a block at most "
                f"{most:,}: not measured; use a smaller chunk or block_size")
        sweep.max_dynamic_shared_size_bytes = need

    def run(self, plan: KernelPlan, kernels: dict, outlier_grid: int) -> RunCounts:
        """Run the algorithm's host loop once (after ``reset``)."""
        limit = 4 * self.n + 16
        if plan.driven == "topology":
            return self._run_topology(plan, kernels, outlier_grid, limit)
        if plan.driven == "data":
            return self._run_data(plan, kernels, limit)
        if plan.driven == "spatial":
            return self._run_spatial(plan, kernels, limit)
        return self._run_temporal(plan, kernels, limit)

    def _run_topology(self, plan, kernels, outlier_grid, limit) -> RunCounts:
        counts = RunCounts()
        pagerank = self.algorithm == "pagerank"
        for it in range(PR_MAX_ITERATIONS if pagerank else limit):
            self._sweep(plan, kernels, it, it & 1, outlier_grid)
            ctl = self.read_ctl()
            counts.iterations = it + 1
            if pagerank:
                if self.acc(it % 3) < self.n * PR_TOLERANCE:
                    break
            elif ctl[CTL_FLAG] != it + 1:
                break
        else:
            if not pagerank:
                raise RuntimeError(f"no convergence in {limit} sweeps")
        counts.launches = self.clock.launches
        return counts

    def _run_data(self, plan, kernels, limit) -> RunCounts:
        counts = RunCounts()
        pagerank = self.algorithm == "pagerank"
        count = self.n if self.algorithm in ("cc", "pagerank") else 1
        for it in range(PR_MAX_ITERATIONS if pagerank else limit):
            if count == 0:
                break
            counts.worklist_items += count
            self._worklist(plan, kernels, it, self.queues[it & 1], count,
                           self.queues[(it + 1) & 1])
            count = int(self.read_ctl()[CTL_TAIL + (it & 1)])
            counts.pushes += count
            counts.iterations = it + 1
            if count >= self.queues[0].size:
                raise QueueOverflow(count, self.queues[0].size, "items", plan.dedup)
        else:
            if not pagerank and count:
                raise RuntimeError(f"no convergence in {limit} launches")
        counts.launches = self.clock.launches
        return counts

    def _run_spatial(self, plan, kernels, limit) -> RunCounts:
        """Launches over the listed partitions until a launch stores into none."""
        counts = RunCounts()
        count = self._partitions(plan) if self.algorithm == "cc" else 1
        for it in range(limit):
            if count == 0:
                break
            counts.worklist_items += count
            self._spatial(plan, kernels, it, it & 1, self.queues[it & 1], count,
                          self.queues[(it + 1) & 1])
            count = int(self.read_ctl()[CTL_TAIL + (it & 1)])
            counts.pushes += count
            counts.iterations = it + 1
            if count >= self.queues[0].size:
                raise QueueOverflow(count, self.queues[0].size, "partitions", plan.dedup)
        else:
            raise RuntimeError(f"no convergence in {limit} launches")
        counts.launches = self.clock.launches
        return counts

    def _run_temporal(self, plan, kernels, limit) -> RunCounts:
        """Worklist launches while the worklist holds at most switch_to_topology x N items,
        counting sweeps until fewer than switch_to_data x N vertices are active; a switch
        to sweeps scatters the worklist into the flags (SSSP, CC; BFS sweeps read levels),
        a switch back compacts the flags (levels) into a worklist."""
        counts = RunCounts()
        n, a = self.n, self.algorithm
        to_topology, to_data = plan.switch_to_topology * n, plan.switch_to_data * n
        count = n if a == "cc" else 1
        form = "topology" if count > to_topology else "data"
        q, parity = 0, 0  # the queue holding the worklist, the current flags
        block = plan.block_size
        for it in range(limit):
            if count == 0:
                break
            counts.iterations = it + 1
            if form == "data":
                counts.worklist_items += count
                self._worklist(plan, kernels, it, self.queues[q], count, self.queues[q ^ 1])
                q ^= 1
                count = int(self.read_ctl()[CTL_TAIL + (it & 1)])
                counts.pushes += count
                if count >= self.queues[0].size:
                    raise QueueOverflow(count, self.queues[0].size, "items", plan.dedup)
                if count > to_topology:
                    form = "topology"
                    if a != "bfs":
                        self.clock.launch(kernels["scatter_flags"], -(-count // block), block,
                                          (self.queues[q], np.int32(count),
                                           self.flags[parity], self.inq,
                                           np.int32(plan.dedup)))
                continue
            self._sweep(plan, kernels, it, parity, 0)
            parity ^= 1
            count = int(self.read_ctl()[CTL_COUNT + (it & 1)])
            if count < to_data:  # (the simulator compacts after the last sweep too)
                form = "data"
                grid = -(-n // block)
                if a == "bfs":
                    args = (self.value, np.int32(n), np.int32(it + 1), self.queues[q],
                            self.ctl, np.int32(it))
                    self.clock.launch(kernels["compact_levels"], grid, block, args)
                else:
                    args = (self.flags[parity], np.int32(n), self.queues[q], self.ctl,
                            np.int32(it), self.inq, np.int32(plan.dedup))
                    self.clock.launch(kernels["compact_flags"], grid, block, args)
                counts.pushes += count
        else:
            raise RuntimeError(f"no convergence in {limit} launches")
        counts.launches = self.clock.launches
        return counts


@dataclass
class Timed:
    """One plan's runs on one graph: medians and what the runs counted."""

    time_us: float
    time_us_min: float
    kernel_us: float
    counts: RunCounts
    atomics: int
    answer: np.ndarray
    reps: int
    totals: list[float] = field(default_factory=list)


def time_plan(dg: DeviceGraph, plan: KernelPlan, reps: int, count_atomics: bool = True
              ) -> Timed:
    """A warm-up run (its answer kept), ``reps`` runs timed whole (events around the host
    loop: kernels and read-backs), ``reps`` with events around every kernel too, then (with
    ``count_atomics``) one untimed run of the tallying build for the atomics. The kernel time
    is the share of those runs' whole time their kernels take (median), of the whole time:
    their events' sums themselves, taken apart from the whole times and inflated by the
    events, had come to 1.3x the whole time (PageRank's short kernels on an H200), which
    no run gives and calibrate refuses."""
    kernels = compile_kernels(plan.names())
    dg.bound_pushes(kernels)
    dg.allow_shared(plan, kernels)
    outlier_grid = dg.outlier_grid(plan, kernels)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    totals: list[float] = []
    per_kernel: list[float] = []
    counts = RunCounts()
    answer = None
    for kind in ("check", *["total"] * reps, *["kernels"] * reps):
        dg.reset(plan)
        dg.clock.start(kind == "kernels")
        start.record()
        counts = dg.run(plan, kernels, outlier_grid)
        stop.record()
        stop.synchronize()
        if kind == "check":
            answer = dg.answer(plan, counts.iterations)
        elif kind == "total":
            totals.append(1000.0 * cp.cuda.get_elapsed_time(start, stop))
        else:  # the kernels' events lie in order between start and stop, on one stream
            whole = 1000.0 * cp.cuda.get_elapsed_time(start, stop)
            per_kernel.append(min(1.0, dg.clock.kernel_us() / whole) if whole > 0 else 1.0)
    atomics = -1
    if count_atomics:
        tally = compile_kernels(plan.names(), count=True)
        ws_counts = cp.ndarray((1,), cp.uint64, tally["__module__"].get_global("ws_counts"))
        ws_counts.fill(0)
        dg.bound_pushes(tally)
        dg.allow_shared(plan, tally)
        dg.reset(plan)
        dg.clock.start(False)
        dg.run(plan, tally, outlier_grid)
        cp.cuda.Device().synchronize()
        atomics = int(ws_counts.get()[0])
    time_us = float(statistics.median(totals)) if totals else float("nan")
    return Timed(
        time_us=time_us,
        time_us_min=float(min(totals)) if totals else float("nan"),
        kernel_us=time_us * float(statistics.median(per_kernel)) if per_kernel
        else float("nan"),
        counts=counts, atomics=atomics, answer=answer, reps=reps, totals=totals)
