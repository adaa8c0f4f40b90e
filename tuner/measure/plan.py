"""A simulator configuration as kernels.cu runs it: which template instances, grids and shared
memory, or one clear error for what the GPU module does not implement. No CuPy here: CI runs
it on machines without a GPU."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from simulator.driver import check_applicable
from simulator.errors import ConfigError
from simulator.functional import ALGORITHMS
from simulator.strategy import Strategy

KERNELS = Path(__file__).resolve().parent / "kernels.cu"
WORD = 4
CTL_WORDS = 32  # kernels.cu's control block: ints, then doubles from word CTL_ACC
CTL_FLAG, CTL_GRAB, CTL_DEFER, CTL_TAIL, CTL_COUNT, CTL_RETIRED, CTL_ACC = 0, 1, 3, 5, 8, 10, 16
# kernels.cu's PUSH_* codes: how a worklist launch's lanes take their places on the tail
VARIANT_CODES = {"plain": 0, "warp_aggregated": 1, "claimed": 2, "block": 3}
# the variants each push knob may run as (the first is the default)
PUSH_VARIANTS = {"atomic": ("plain", "warp_aggregated", "claimed"), "block": ("block",)}
TOPOLOGY_VARIANT = "default"

# What `warpsweep measure` cannot run, in the words its error gives (checked in this order).
UNSUPPORTED = {
    "wer": "mapping={mapping} (warp edge redistribution) runs in warpsweep measure as a BFS, "
           "SSSP or CC topology sweep, static, without deferral ({what} has no GPU kernel)",
    "adaptive": "mapping=adaptive (W picked per iteration) has no GPU kernel in warpsweep "
                "measure; measure the vwarp W it picks",
    "policy": "policy={policy} (a per-iteration policy, mapping=adaptive: each iteration's "
              "whole configuration picked among the file's candidates) has no GPU kernel in "
              "warpsweep measure; measure the candidates it picks, listed under `candidates` "
              "in {policy}, one at a time",
    "donation": "donate_threshold (block donation) runs in warpsweep measure in sweeps, and "
                "in BFS, SSSP and CC worklists ({what} has no GPU kernel)",
    "spatial_push": "push={push} for driven=spatial has no GPU kernel in warpsweep measure "
                    "(its partitions are pushed by a lane's atomic: push=atomic)",
    "unroll": "unroll > 1 (grid barriers between levels) has no GPU kernel in warpsweep measure",
    "push": "push={push} has no GPU kernel in warpsweep measure (atomic and block do)",
    "changed_flag": "changed_flag={changed_flag} has no GPU kernel in warpsweep measure "
                    "(its sweeps store the changed flag at every storing warp step: "
                    "changed_flag=step)",
    "precheck": "precheck=false (atomicMin on every edge, unread) has no GPU kernel in "
                "warpsweep measure (its lanes read the target first: precheck=true)",
    "grid": "variable_grid=false (a resident grid striding over the worklist) has no GPU "
            "kernel in warpsweep measure",
    "relax": "relax={relax} (plain stores re-read until they hold) has no GPU kernel in "
             "warpsweep measure (its worklists lower by atomicMin: relax=atomic)",
    "switch_on": "switch_on={switch_on} (switching on the frontier's out-edges) has no GPU "
                 "kernel in warpsweep measure (its hybrids switch on frontier vertices: "
                 "switch_on=vertices)",
}

# The strategy knobs a plan carries into the kernels; every other knob is refused above
# unless it holds the one setting the kernels implement (tests check that no knob is neither)
PLANNED_KNOBS = ("mapping", "w", "chunk", "distribution", "defer_threshold", "block_size",
                 "driven", "push", "dedup", "switch_to_topology", "switch_to_data",
                 "partition", "donate_threshold")
REFUSED_KNOBS = ("adaptive_min_w", "adaptive_max_w", "adaptive_stat", "policy", "policy_t1",
                 "policy_t2", "policy_t3", "variable_grid", "switch_on",
                 "relax", "unroll", "changed_flag", "precheck")


# The lane mappings kernels.cu implements; any other registered mapping is refused, not
# measured as the vwarp kernel of its lanes_per_vertex.
MEASURED_MAPPINGS = ("thread", "vwarp", "wer", "wer+")
REDISTRIBUTING = ("wer", "wer+")


class UnsupportedConfig(ConfigError):
    """A configuration the simulator takes but `warpsweep measure` has no kernel for."""


@dataclass(frozen=True)
class KernelPlan:
    """How one (algorithm, strategy, push variant) runs on kernels.cu."""

    algorithm: str
    driven: str  # topology | data | temporal | spatial
    w: int
    chunk: int
    dynamic: bool
    defer_threshold: int | None
    block_size: int
    variant: str  # default (sweeps only) | plain | warp_aggregated | claimed | block
    dedup: bool = False
    switch_to_topology: float | None = None
    switch_to_data: float | None = None
    partition: int | None = None  # spatial: the vertices a worklist entry stands for
    redistribute: str | None = None  # wer | wer+: the sweep's edges popped from a warp table
    donate_threshold: int | None = None  # thread mapping: edges past the block's cap donated

    @property
    def sweeps(self) -> bool:
        """Whether the run has topology sweeps."""
        return self.driven in ("topology", "temporal")

    @property
    def worklists(self) -> bool:
        """Whether the run has worklist launches."""
        return self.driven in ("data", "temporal")

    def sweep_name(self) -> str:
        """The sweep kernel's template instance (the hybrid's sweeps count activations)."""
        dyn = "true" if self.dynamic else "false"
        defer = "true" if self.defer_threshold is not None else "false"
        if self.redistribute:
            every = "true" if self.redistribute == "wer+" else "false"
            return f"{self.algorithm}_wer<{self.chunk},{every}>"
        if self.algorithm == "pagerank":
            return f"pagerank_sweep<{self.w},{self.chunk},{dyn},{defer},{self._donate()}>"
        count = "true" if self.driven == "temporal" else "false"
        return (f"{self.algorithm}_sweep<{self.w},{self.chunk},{dyn},{defer},{count},"
                f"{self._donate()}>")

    def _donate(self) -> str:
        """The DONATE template argument: whether the threads donate past their block's cap."""
        return "true" if self.donate_threshold is not None else "false"

    def worklist_name(self) -> str:
        """The worklist kernel's template instance."""
        code = VARIANT_CODES[self.variant]
        if self.algorithm == "pagerank":
            return f"pagerank_wl<{self.w},{code}>"
        dedup = "true" if self.dedup else "false"
        return f"{self.algorithm}_wl<{self.w},{code},{dedup},{self._donate()}>"

    def spatial_name(self) -> str:
        """The spatial hybrid's kernel: its launches list partitions."""
        return f"{self.algorithm}_spatial<{self.w},{VARIANT_CODES[self.variant]}>"

    def outlier_name(self) -> str | None:
        """The deferred outliers' kernel, where the plan defers."""
        if self.defer_threshold is None:
            return None
        return {"bfs": "bfs_sweep_outliers"}.get(self.algorithm, f"{self.algorithm}_outliers")

    def names(self) -> tuple[str, ...]:
        """Every kernel the run may launch (the name expressions NVRTC instantiates)."""
        if self.driven == "spatial":
            return (self.spatial_name(),)
        out = []
        if self.sweeps:
            out.append(self.sweep_name())
            if self.defer_threshold is not None:
                out.append(self.outlier_name())
        if self.worklists:
            out.append(self.worklist_name())
        if self.driven == "temporal":
            out += ["compact_levels"] if self.algorithm == "bfs" else ["scatter_flags",
                                                                       "compact_flags"]
        return tuple(out)

    @property
    def shared_bytes(self) -> int:
        """Dynamic shared memory of a vwarp sweep (each virtual warp's statuses and bounds)
        or of a WER sweep (each warp's table: prefix sums, first edges, values)."""
        if self.redistribute:
            return WORD * (self.block_size // 32) * 97
        if self.w == 1:
            return 0
        return WORD * (self.block_size // self.w) * (2 * self.chunk + 1)

    def sweep_grid(self, n: int) -> int:
        """Blocks of a static sweep over ``n`` vertices: one virtual warp per chunk."""
        virtual_warps = -(-n // self.chunk)
        return max(1, -(-virtual_warps * self.w // self.block_size))

    def worklist_grid(self, entries: int) -> int:
        """Blocks of a worklist launch: W lanes per entry."""
        return max(1, -(-entries * self.w // self.block_size))

    def spatial_grid(self, partitions: int) -> int:
        """Blocks of a spatial launch: W lanes per slot of each listed partition."""
        return self.worklist_grid(partitions * self.partition)


def default_variant(strategy: Strategy) -> str:
    """The variant a strategy runs as when none is named."""
    if not strategy.uses_worklist:
        return TOPOLOGY_VARIANT
    return PUSH_VARIANTS.get(strategy.push, ("plain",))[0]


def plan_for(algorithm: str, strategy: Strategy | str, variant: str | None = None
             ) -> KernelPlan:
    """The kernel plan of ``algorithm`` under ``strategy`` (and push ``variant``); raises
    ``UnsupportedConfig`` (one line) for what kernels.cu does not implement and
    ``ConfigError`` for what does not apply."""
    if algorithm not in ALGORITHMS:
        raise ConfigError(f"unknown algorithm {algorithm!r}; choose one of {ALGORITHMS}")
    s = Strategy.parse(strategy) if isinstance(strategy, str) else strategy
    check_applicable(s, algorithm)
    if s.policy is not None:  # (named as the adaptive mapping's W, which it does not pick)
        raise UnsupportedConfig(UNSUPPORTED["policy"].format(policy=s.policy))
    if s.mapping not in MEASURED_MAPPINGS:
        raise UnsupportedConfig(UNSUPPORTED.get(
            s.mapping, f"mapping={s.mapping} has no GPU kernel in warpsweep measure"))
    if s.mapping in REDISTRIBUTING:
        missing = [what for what, absent in (
            ("PageRank", algorithm == "pagerank"), (f"driven={s.driven}", s.uses_worklist),
            ("dynamic distribution", s.dynamic), ("deferral", s.defer_threshold is not None),
        ) if absent]
        if missing:
            raise UnsupportedConfig(UNSUPPORTED["wer"].format(mapping=s.mapping,
                                                              what=missing[0]))
    if s.donate_threshold is not None and s.driven == "spatial":
        raise UnsupportedConfig(UNSUPPORTED["donation"].format(what="driven=spatial"))
    if s.donate_threshold is not None and algorithm == "pagerank" and s.uses_worklist:
        raise UnsupportedConfig(UNSUPPORTED["donation"].format(what="a PageRank worklist"))
    if s.driven == "spatial" and s.push != "atomic":
        raise UnsupportedConfig(UNSUPPORTED["spatial_push"].format(push=s.push))
    if (s.unroll or 1) > 1:
        raise UnsupportedConfig(UNSUPPORTED["unroll"])
    if s.changed_flag is not None:
        raise UnsupportedConfig(UNSUPPORTED["changed_flag"].format(changed_flag=s.changed_flag))
    if s.unchecked_atomics:
        raise UnsupportedConfig(UNSUPPORTED["precheck"])
    if s.relax not in (None, "atomic"):
        raise UnsupportedConfig(UNSUPPORTED["relax"].format(relax=s.relax))
    if s.switch_on not in (None, "vertices"):
        raise UnsupportedConfig(UNSUPPORTED["switch_on"].format(switch_on=s.switch_on))
    if s.uses_worklist:
        if s.push not in PUSH_VARIANTS:
            raise UnsupportedConfig(UNSUPPORTED["push"].format(push=s.push))
        if not s.variable_grid:
            raise UnsupportedConfig(UNSUPPORTED["grid"])
        if s.vertices_per_grab != 1 or s.dynamic:
            raise UnsupportedConfig(
                f"{s}: worklist launches run one entry per virtual warp, statically "
                "(chunk=1, distribution=static) in warpsweep measure")
        if s.defer_threshold is not None:
            raise UnsupportedConfig(
                f"{s}: deferring outliers is implemented for topology sweeps only in "
                "warpsweep measure")
        if s.dedup and algorithm == "pagerank":
            raise UnsupportedConfig(
                "dedup=true: a PageRank worklist holds each vertex once already (each entry "
                "pushes only itself)")
    if variant is None:
        variant = default_variant(s)
    allowed = (TOPOLOGY_VARIANT,) if not s.uses_worklist else PUSH_VARIANTS[s.push]
    known = {TOPOLOGY_VARIANT, *(v for vs in PUSH_VARIANTS.values() for v in vs)}
    if variant not in known:
        raise ConfigError(f"unknown variant {variant!r} (one of {', '.join(sorted(known))}; "
                          f"{s} runs as {', '.join(allowed)})")
    if variant not in allowed:
        raise ConfigError(f"variant {variant!r} does not apply to {s} (it runs as "
                          f"{', '.join(allowed)})")
    if variant == "claimed" and algorithm != "bfs":
        raise ConfigError("variant 'claimed' is BFS's (SSSP and CC push what their atomicMin "
                          "lowered; PageRank pushes itself)")
    if variant == "claimed" and s.driven in ("temporal", "spatial"):
        raise UnsupportedConfig(f"variant 'claimed' is not implemented for the {s.driven} hybrid")
    return KernelPlan(
        algorithm, s.driven, s.lanes_per_vertex, s.vertices_per_grab, s.dynamic,
        s.defer_threshold, s.block_size, variant, bool(s.dedup),
        s.switch_to_topology, s.switch_to_data, s.partition,
        s.mapping if s.mapping in REDISTRIBUTING else None, s.donate_threshold)
