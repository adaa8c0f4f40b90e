"""The independent BFS implementations (bfs.cu), their kernels, the simulator strategy each is
compared with, and the exact reference levels; rows are written with catalog.py's Parquet
contract (same COLUMNS / SCHEMA / write_results).

No CuPy here: the CPU tests import this module.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from bench.gpu.independent.catalog import BLOCK_SIZE  # noqa: F401  (bfs.cu's BLOCK: 256)
from bench.gpu.independent.catalog import COLUMNS  # noqa: F401  (the shared contract)
from bench.gpu.independent.catalog import SCHEMA  # noqa: F401
from bench.gpu.independent.catalog import graph_specs  # noqa: F401
from bench.gpu.independent.catalog import write_results  # noqa: F401

WIDTHS = (1, 8, 32)
VISITS = ("cas", "store")
PUSHES = ("thread", "warp", "block")
TEMPORAL_WIDTHS = (1, 32)
SWITCH_FRACTIONS = (0.05, 0.2)
UNVISITED = 2**31 - 1  # bfs.cu's UNVISITED (0x7fffffff)

# bfs.cu's template codes
_VISIT_CODE = {"cas": 0, "store": 1}
_PUSH_CODE = {"thread": 0, "warp": 1, "block": 2}

# Kernel templates of bfs.cu and how many template arguments each takes (0: not a template).
KERNEL_TEMPLATES = {"topo_sweep": 2, "wl_step": 3, "compact_level": 0}

# The closest simulator strategy of each implementation, fixed before any measurement, from
# the Strategy docstring (simulator/strategy.py):
# - W = 1 is mapping=thread; W > 1 is mapping=vwarp,w=W with its defaults chunk=1 and
#   distribution=static (one virtual warp per vertex or item, lanes striding the edges by W),
#   block_size=256 (the default, bfs.cu's BLOCK).
# - The topology sweep stores the changed word from every lane that visited a vertex, at once,
#   not after a warp vote: that is changed_flag=step, the default, left out of the config.
# - The worklists size the grid to the queue (variable_grid=true, the default). The thread
#   push (a lane's own atomicAdd) and the warp push (ballot + one leader atomicAdd) both map
#   to push=atomic: the simulator has one atomic push per item, and compilers turn a
#   same-address atomicAdd into a warp-aggregated one (catalog.py maps them the same way); the
#   block push (one atomicAdd per block round over a shared-memory prefix sum) is push=block.
# - Visits: the simulator has no CAS-visit knob for BFS (relax= is refused for bfs: "BFS's
#   worklists store plainly already", duplicates included), so "cas" and "store" map to the
#   same config; the CAS visit (no duplicates, an atomic per edge) is the one the model does
#   not describe, "store" the one it does.
# - The temporal hybrid switches to sweeps above switch_to_topology x N queued vertices and back
#   below switch_to_data x N newly visited ones (switch_on=vertices, the default): both F.
_SIM_PUSH = {"thread": "atomic", "warp": "atomic", "block": "block"}


@dataclass(frozen=True)
class Implementation:
    """One BFS implementation of bfs.cu: how it picks work, visits and pushes.

    ``relax`` holds the visit style ("cas" or "store"; a sweep's is "store", a hybrid's the
    worklist's "cas"); ``push`` is "thread" for the sweeps, which push nothing (catalog.py's
    convention for its sweeps).
    """

    impl: str
    driven: str
    w: int
    relax: str = "store"
    dedup: str = "none"
    push: str = "thread"
    switch_on: str | None = None
    switch_fraction: float | None = None

    @property
    def config(self) -> str:
        """The closest simulator strategy, as `Strategy.parse` takes it."""
        mapping = "mapping=thread" if self.w == 1 else f"mapping=vwarp,w={self.w}"
        if self.driven == "topology":
            return mapping
        if self.driven == "data":
            return f"{mapping},driven=data,push={_SIM_PUSH[self.push]}"
        f = self.switch_fraction
        return f"{mapping},driven=temporal,switch_to_topology={f},switch_to_data={f}"

    @property
    def kernels(self) -> tuple[str, ...]:
        """Every kernel instance this implementation launches, as NVRTC name expressions."""
        if self.driven == "topology":
            return (f"topo_sweep<{self.w},0>",)
        step = f"wl_step<{self.w},{_VISIT_CODE[self.relax]},{_PUSH_CODE[self.push]}>"
        if self.driven == "data":
            return (step,)
        return (step, f"topo_sweep<{self.w},1>", "compact_level")


def implementations() -> list[Implementation]:
    """All 25 implementations, in run order: topology, worklists, temporal hybrids."""
    out = [Implementation(f"topo-w{w}", "topology", w) for w in WIDTHS]
    for w, visit, push in itertools.product(WIDTHS, VISITS, PUSHES):
        out.append(Implementation(f"wl-w{w}-{visit}-{push}", "data", w, visit, "none", push))
    for w, fraction in itertools.product(TEMPORAL_WIDTHS, SWITCH_FRACTIONS):
        out.append(Implementation(f"temporal-w{w}-{fraction}", "temporal", w, "cas", "none",
                                  "warp", "vertices", fraction))
    return out


def select(impls: list[Implementation], substrings: tuple[str, ...] = ()) -> list[Implementation]:
    """The implementations whose id contains one of ``substrings`` (all when none given)."""
    return [i for i in impls if not substrings or any(s in i.impl for s in substrings)]


def kernel_names(impls: list[Implementation]) -> list[str]:
    """The kernel instances ``impls`` need, each once, for RawModule's name_expressions."""
    return list(dict.fromkeys(k for i in impls for k in i.kernels))


def reference_levels(indptr: np.ndarray, indices: np.ndarray, source: int) -> np.ndarray:
    """Exact BFS levels (hops along CSR out-edges) from ``source``, int32 with UNVISITED for
    the unreachable: a level-by-level frontier expansion, vectorised within a level."""
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    n = indptr.size - 1
    level = np.full(n, UNVISITED, dtype=np.int32)
    level[source] = 0
    frontier = np.array([source], dtype=np.int64)
    depth = 0
    while frontier.size:
        starts = indptr[frontier]
        counts = indptr[frontier + 1] - starts
        total = int(counts.sum())
        if total == 0:
            break
        # positions starts[i] .. starts[i] + counts[i] - 1 of every frontier vertex, in one array
        offsets = np.repeat(starts - (np.cumsum(counts) - counts), counts)
        neighbours = indices[offsets + np.arange(total, dtype=np.int64)]
        fresh = np.unique(neighbours[level[neighbours] == UNVISITED])
        depth += 1
        level[fresh] = depth
        frontier = fresh
    return level
