"""`warpsweep measure`'s work: a configuration on the GPU, checked against the functional run
and set beside the simulator's prediction. CuPy is imported only once a GPU run is asked for,
so the module (and the CLI's errors) work without it."""

from __future__ import annotations

import multiprocessing
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass

from simulator.errors import WarpsweepError
from simulator.functional import FunctionalRun
from simulator.functional import functional_run
from simulator.graph import Graph
from simulator.graph_spec import parse_spec
from simulator.simulate import simulate
from simulator.strategy import Strategy
from tuner.measure.check import check_output
from tuner.measure.check import pagerank_slack
from tuner.measure.check import reference_iterations
from tuner.measure.check import reference_output
from tuner.measure.plan import KernelPlan
from tuner.measure.plan import plan_for
from tuner.measure.record import Counters
from tuner.measure.record import MeasureResult
from tuner.measure.record import simulated_counters

INSTALL_HINT = 'pip install -e ".[gpu]"'


class NoGpu(WarpsweepError):
    """No CuPy or no CUDA device here: nothing can be measured."""


class GpuFault(WarpsweepError):
    """The GPU failed a measurement: out of its memory, or a CUDA error (a launch it refused)."""


def gpu_unavailable(device_index: int = 0) -> str | None:
    """None when CuPy and CUDA device ``device_index`` are usable, else why not (one line)."""
    try:
        import cupy as cp
    except ImportError as exc:
        return f"CuPy is not installed ({INSTALL_HINT}): {exc}"
    try:
        count = cp.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001  (CUDA's errors differ by driver and build)
        return f"no CUDA device is usable: {str(exc).splitlines()[0] if str(exc) else exc}"
    if not 0 <= device_index < count:
        return f"device index {device_index} does not exist ({count} CUDA device(s))"
    return None


def require_gpu(device_index: int = 0) -> None:
    """Raise ``NoGpu`` (one line) unless a GPU run can be made."""
    reason = gpu_unavailable(device_index)
    if reason is not None:
        raise NoGpu(f"cannot measure on a GPU here: {reason}")


@dataclass
class Prepared:
    """A graph loaded, with each algorithm's functional run, ready to measure on."""

    graph: Graph
    spec: str
    name: str
    runs: dict[str, FunctionalRun]
    seconds: dict[str, float]


def prepare(graph: Graph, spec: str, algorithm: str, source: int | None = None) -> Prepared:
    """The functional run of ``algorithm`` on ``graph`` (the answer each GPU run must give)."""
    t0 = time.perf_counter()
    fr = functional_run(graph, algorithm, source)
    name = parse_spec(spec).short_name() if spec else graph.name
    return Prepared(graph, spec, name, {algorithm: fr},
                    {"reference": time.perf_counter() - t0})


class Session:
    """The GPU side: one DeviceGraph per (graph, algorithm) at a time, kernels compiled once."""

    def __init__(self, device_index: int = 0) -> None:
        require_gpu(device_index)
        import cupy as cp

        from tuner.measure import runner

        self.cp, self.runner = cp, runner
        cp.cuda.Device(device_index).use()
        self.resident = runner.device_resident_blocks()
        self.gpu_name = runner.gpu_name()
        self.device_graphs: dict[tuple[int, str], object] = {}
        self.broken: str | None = None  # why the GPU can run nothing more (a sticky error)

    def device_graph(self, prepared: Prepared, algorithm: str):
        """The graph's arrays for ``algorithm`` on the GPU (uploaded once, the last kept)."""
        key = (id(prepared), algorithm)
        if key not in self.device_graphs:
            self.device_graphs.clear()
            self.cp.get_default_memory_pool().free_all_blocks()
            self.device_graphs[key] = self.runner.DeviceGraph(
                prepared.runs[algorithm], prepared.graph.degrees, self.resident)
        return self.device_graphs[key]

    @contextmanager
    def _faults(self, prepared: Prepared, config: str):
        """GPU memory running out, or CUDA refusing a launch, as one line naming the
        configuration and graph (they had ended in CuPy's traceback, or in the host-memory
        advice for a MemoryError, probe KERN); a measurement taken before stays taken."""
        from cupy_backends.cuda.api.driver import CUDADriverError

        cp = self.cp
        where = (f"measuring {config} on {prepared.name} ({prepared.graph.n:,} vertices, "
                 f"{prepared.graph.m:,} edges)")
        if self.broken is not None:  # each later row had been blamed on its own config
            raise GpuFault(f"not measured: the GPU can run nothing more since {self.broken}")
        cuda_errors = (CUDADriverError, cp.cuda.runtime.CUDARuntimeError)
        try:
            yield
        except cp.cuda.memory.OutOfMemoryError as exc:
            self.device_graphs.clear()
            cp.get_default_memory_pool().free_all_blocks()
            raise GpuFault(f"the GPU ({self.gpu_name}) ran out of its memory {where}: "
                           f"{str(exc).splitlines()[0]}; not measured") from None
        except cuda_errors as exc:
            first = str(exc).splitlines()[0]
            self.device_graphs.clear()
            try:  # a launch refused leaves the context usable; a fault in a kernel does not
                cp.cuda.Device().synchronize()
                cp.get_default_memory_pool().free_all_blocks()
            except cuda_errors:
                self.broken = f"CUDA failed {where} ({first})"
            raise GpuFault(f"CUDA failed {where}: {first}; not measured") from None

    def measure(self, prepared: Prepared, algorithm: str, plan: KernelPlan, config: str,
                reps: int = 5, count_atomics: bool = True) -> MeasureResult:
        """Run ``plan`` ``reps`` times (and once more to warm up and check)."""
        t0 = time.perf_counter()
        self.runner.compile_kernels(plan.names())
        if count_atomics:
            self.runner.compile_kernels(plan.names(), count=True)
        t1 = time.perf_counter()
        with self._faults(prepared, config):
            dg = self.device_graph(prepared, algorithm)
            t2 = time.perf_counter()
            timed = self.runner.time_plan(dg, plan, reps, count_atomics)
        t3 = time.perf_counter()
        fr = prepared.runs[algorithm]
        slack = None
        if algorithm == "pagerank" and plan.driven == "data":
            slack = pagerank_slack(fr, prepared.graph.degrees)
        problem = check_output(algorithm, timed.answer, reference_output(fr, plan.driven),
                               slack=slack)
        c = timed.counts
        return MeasureResult(
            graph=prepared.name, graph_spec=prepared.spec, n=prepared.graph.n,
            m=prepared.graph.m, algorithm=algorithm, config=config, variant=plan.variant,
            source=fr.source, gpu_name=self.gpu_name, time_us=timed.time_us,
            time_us_min=timed.time_us_min, kernel_us=timed.kernel_us, reps=reps,
            correct=problem is None, check=problem or "ok",
            measured=Counters(c.launches, c.iterations, c.worklist_items, c.pushes,
                              timed.atomics if timed.atomics >= 0 else None),
            reference_iterations=reference_iterations(fr, plan.driven),
            seconds={**prepared.seconds, "compile": t1 - t0, "upload": t2 - t1,
                     "runs": t3 - t2},
        )


def add_prediction(result: MeasureResult, prepared: Prepared, algorithm: str,
                   strategy: Strategy, device: str) -> MeasureResult:
    """The simulator's time and counters for the same configuration, beside the GPU's."""
    return _set_prediction(result, _prediction(prepared, algorithm, strategy, device))


def _prediction(prepared: Prepared, algorithm: str, strategy: Strategy, device: str
                ) -> tuple[Counters, float, str, float]:
    """The simulator's counters, time (us) and device name, and the seconds it took."""
    t0 = time.perf_counter()
    fr = prepared.runs[algorithm]
    sim = simulate(prepared.graph, algorithm, strategy, device, fr.source, functional=fr)
    return (simulated_counters(sim, strategy.driven, prepared.graph.n), float(sim.time_us),
            sim.device, time.perf_counter() - t0)


def _set_prediction(result: MeasureResult, prediction: tuple[Counters, float, str, float]
                    ) -> MeasureResult:
    result.simulated, result.simulated_time_us, result.sim_device, seconds = prediction
    result.seconds["simulate"] = seconds
    return result


# CPU cores from which the prediction runs beside the GPU's work: with fewer, a busy core
# could slow the host loop being timed.
_BESIDE_FROM_CORES = 4
_FORKED: tuple | None = None  # what a forked prediction process reads (inherited, not pickled)


def _predict_in_child() -> None:
    graph, algorithm, source, strategy, device, conn = _FORKED
    try:
        prepared = prepare(graph, "", algorithm, source)
        conn.send(_prediction(prepared, algorithm, strategy, device))
    except BaseException:  # noqa: BLE001 - the parent makes it again, raising where it raises
        conn.send(None)
    conn.close()


class PredictionBeside:
    """``add_prediction`` made in a forked process, its own functional run included, while
    this one makes the reference, starts CUDA, uploads and measures (the prediction is 0.45
    s of a 2 s `measure` of a 10M-edge graph on the H200 host). In this process where fork
    is not there or the machine has few cores, and again here where the child fails (so its
    error is raised as it would be)."""

    def __init__(self, graph: Graph, algorithm: str, source: int | None, strategy: Strategy,
                 device: str) -> None:
        global _FORKED
        self._strategy, self._device = strategy, device
        self._conn = self._process = None
        if ("fork" not in multiprocessing.get_all_start_methods()
                or (os.cpu_count() or 1) < _BESIDE_FROM_CORES):
            return
        context = multiprocessing.get_context("fork")
        receive, send = context.Pipe(duplex=False)
        _FORKED = (graph, algorithm, source, strategy, device, send)
        try:
            self._process = context.Process(target=_predict_in_child, daemon=True)
            self._process.start()
        finally:
            _FORKED = None
            send.close()
        self._conn = receive

    def add_to(self, result: MeasureResult, prepared: Prepared) -> MeasureResult:
        """``result`` with the prediction (waiting for the child's; ``prepared``: this
        process's functional run, for a prediction made here)."""
        prediction = None
        if self._conn is not None:
            try:
                prediction = self._conn.recv()
            except (EOFError, OSError):  # the child died (killed for memory?)
                prediction = None
            self._conn.close()
            self._process.join()
        if prediction is None:
            return add_prediction(result, prepared, result.algorithm, self._strategy,
                                  self._device)
        return _set_prediction(result, prediction)


def measure_config(graph: Graph, spec: str, algorithm: str, config: str,
                   variant: str | None = None, *, reps: int = 5, device_index: int = 0,
                   sim_device: str | None = "h100", source: int | None = None
                   ) -> MeasureResult:
    """Measure one configuration of ``algorithm`` on ``graph`` (the API behind the CLI):
    refuses what kernels.cu cannot run before touching the GPU."""
    strategy = Strategy.parse(config)
    plan = plan_for(algorithm, strategy, variant)
    require_gpu(device_index)
    prepared = prepare(graph, spec, algorithm, source)
    result = Session(device_index).measure(prepared, algorithm, plan, str(strategy), reps)
    if sim_device:
        add_prediction(result, prepared, algorithm, strategy, sim_device)
    return result
