"""What `warpsweep measure` reports: the GPU's times and counters beside the simulator's
prediction for the same configuration, as a dict (JSON, Parquet rows) or text. No CuPy."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from dataclasses import field

from simulator.result import Result

COUNTERS = ("launches", "iterations", "worklist_items", "pushes", "atomics")
COUNTER_NOTES = {
    "worklist_items": "entries the worklist launches read, duplicates included",
    "pushes": "items put on a worklist's tail (launches and compactions)",
    "atomics": "atomicMin/CAS/exchange lanes + warp-aggregated tail, grab and deferral atomics",
}


@dataclass(frozen=True)
class Counters:
    """The counters the simulator predicts (None: not known on that side)."""

    launches: int | None = None
    iterations: int | None = None
    worklist_items: int | None = None
    pushes: int | None = None
    atomics: int | None = None


def initial_worklist_size(algorithm: str, n: int) -> int:
    """Entries of the first worklist: the source, or every vertex (CC, PageRank)."""
    return n if algorithm in ("cc", "pagerank") else 1


def simulated_counters(result: Result, driven: str, n: int) -> Counters:
    """The simulator's counters; its pushes follow from the worklists only where every
    worklist is the previous launch's pushes (driven=data), and are none for sweeps."""
    items = int(round(result.worklist_items))
    if driven == "topology":
        pushes: int | None = 0
    elif driven == "data":
        pushes = items - initial_worklist_size(result.algorithm, n)
    else:
        pushes = None
    return Counters(int(result.launches), int(result.iterations), items, pushes,
                    int(round(result.atomics)))


@dataclass
class MeasureResult:
    """One configuration measured on the GPU, checked, and set beside the simulator."""

    graph: str
    graph_spec: str
    n: int
    m: int
    algorithm: str
    config: str
    variant: str
    source: int | None
    gpu_name: str
    time_us: float  # median of the runs timed whole (kernels and the host loop)
    time_us_min: float
    kernel_us: float  # the whole time's share inside kernels (per-kernel events' runs)
    reps: int
    correct: bool
    check: str  # "ok", or how the answer differs from the functional run's
    measured: Counters
    simulated: Counters | None = None
    simulated_time_us: float | None = None
    sim_device: str | None = None
    reference_iterations: int | None = None
    seconds: dict[str, float] = field(default_factory=dict)  # wall time by phase

    def to_dict(self) -> dict:
        """A flat, JSON-ready dict: counters as ``measured_X`` and ``simulated_X``."""
        out = {k: v for k, v in dataclasses.asdict(self).items()
               if k not in ("measured", "simulated", "seconds")}
        for name in COUNTERS:
            out[f"measured_{name}"] = getattr(self.measured, name)
            out[f"simulated_{name}"] = (getattr(self.simulated, name)
                                        if self.simulated is not None else None)
        out.update({f"{k}_s": round(v, 4) for k, v in self.seconds.items()})
        return out

    def ratio(self) -> float | None:
        """Simulated over measured whole time."""
        if self.simulated_time_us is None or not self.time_us or math.isnan(self.time_us):
            return None
        return self.simulated_time_us / self.time_us

    def to_text(self) -> str:
        """A short report: times, counters beside the simulator's, the check."""
        lines = [
            f"{self.algorithm} on {self.graph} (n={self.n}, m={self.m}) with {self.config} "
            f"[{self.variant}] on {self.gpu_name}",
            f"  answer: {'correct' if self.correct else 'WRONG: ' + self.check}"
            + (f" (functional run: {self.reference_iterations} iterations)"
               if self.reference_iterations is not None else ""),
            f"  whole time  {self.time_us:12.1f} us (median of {self.reps}, min "
            f"{self.time_us_min:.1f})" + (f"   simulated {self.simulated_time_us:12.1f} us "
                                          f"({self.ratio():.2f}x) on {self.sim_device}"
                                          if self.ratio() is not None else ""),
            f"  kernel time {self.kernel_us:12.1f} us (its share in per-kernel events' runs)",
            f"  {'counter':16s} {'measured':>12s} {'simulated':>12s}",
        ]
        for name in COUNTERS:
            got = getattr(self.measured, name)
            sim = getattr(self.simulated, name) if self.simulated is not None else None
            lines.append(f"  {name:16s} {_fmt(got):>12s} {_fmt(sim):>12s}")
        if self.simulated is not None and self.variant in UNMODELLED_VARIANTS:
            lines.append(f"  (simulated as the plain push: {UNMODELLED_VARIANTS[self.variant]})")
        if self.seconds:
            lines.append("  wall: " + ", ".join(f"{k} {v:.2f} s"
                                                for k, v in self.seconds.items()))
        return "\n".join(lines)


# Variants the simulator has no knob for, so its prediction beside them is the plain push's
# (probe CNT: claimed's atomics read 2.3-11x and its pushes 0.77-1.0x the prediction).
UNMODELLED_VARIANTS = {
    "claimed": "a claimed push's atomicCAS per storing lane, and its one entry a vertex, are "
               "not modelled",
}


def _fmt(value: int | None) -> str:
    return "-" if value is None or value < 0 else str(value)
