"""How each measurement maps onto kernels.cu: which template instance, grid and shared memory.

No CuPy here, so that the tests can check every configuration on a machine without a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

import configs

from simulator import Strategy

VARIANT_CODES = {"plain": 0, "warp_aggregated": 1, "claimed": 2}  # kernels.cu's PUSH_*
WORD = 4


@dataclass(frozen=True)
class KernelPlan:
    """How one measurement maps onto kernels.cu: the template to instantiate and its shape."""

    algorithm: str
    driven: str
    w: int
    chunk: int
    dynamic: bool
    defer_threshold: int | None
    block_size: int
    variant: str

    @property
    def name(self) -> str:
        """The template instance's name expression (as NVRTC spells it)."""
        if self.driven == "data":
            return f"{self.algorithm}_data<{self.w},{VARIANT_CODES[self.variant]}>"
        dyn = "true" if self.dynamic else "false"
        if self.algorithm == "bfs":
            defer = "true" if self.defer_threshold is not None else "false"
            return f"bfs_topo<{self.w},{self.chunk},{dyn},{defer}>"
        return f"sssp_topo<{self.w},{self.chunk},{dyn}>"

    @property
    def shared_bytes(self) -> int:
        """Shared memory of a vwarp sweep: each virtual warp's staged statuses and bounds."""
        if self.driven == "data" or self.w == 1:
            return 0
        vws = self.block_size // self.w
        return WORD * vws * (2 * self.chunk + 1)


def plan_for(m: configs.Measurement) -> KernelPlan:
    """The kernel plan of a measurement; refuses strategies kernels.cu does not implement."""
    s = Strategy.parse(m.config)
    if s.mapping not in ("thread", "vwarp") or s.driven not in ("topology", "data"):
        raise ValueError(f"{m.config}: only thread/vwarp, topology/data kernels exist")
    if s.driven == "data" and (s.push != "atomic" or not s.variable_grid or s.chunk not in
                               (None, 1) or s.dynamic or s.defer_threshold is not None):
        raise ValueError(f"{m.config}: worklist kernels are push=atomic, chunk 1, static")
    if s.unroll not in (None, 1) or s.donate_threshold is not None:
        raise ValueError(f"{m.config}: unroll and donation are not implemented")
    if s.defer_threshold is not None and (m.algorithm != "bfs" or s.mapping != "thread"):
        raise ValueError(f"{m.config}: outlier deferral is implemented for BFS thread only")
    expected = configs.TOPOLOGY_VARIANT if s.driven == "topology" else None
    if expected and m.variant != expected or not expected and m.variant not in VARIANT_CODES:
        raise ValueError(f"{m.config}: variant {m.variant!r} does not apply")
    if m.variant == "claimed" and m.algorithm != "bfs":
        raise ValueError(f"{m.config}: only BFS claims vertices (SSSP pushes what it lowered)")
    return KernelPlan(m.algorithm, s.driven, s.lanes_per_vertex, s.vertices_per_grab,
                      s.dynamic, s.defer_threshold, s.block_size, m.variant)
