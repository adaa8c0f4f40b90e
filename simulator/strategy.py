"""The load-balancing configuration of one simulation: every knob, validated on construction."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from simulator.errors import ConfigError

MAPPINGS = ("thread", "vwarp")
DISTRIBUTIONS = ("static", "dynamic")
VIRTUAL_WARP_SIZES = (1, 2, 4, 8, 16, 32)
# Knobs of the papers that this simulator version does not model yet: naming one is an error
# that says so, never a silently ignored setting.
PLANNED_KNOBS = frozenset(
    {"driven", "push", "donate_threshold", "variable_grid", "switch_to_topology",
     "switch_to_data", "partition", "unroll"}
)


@dataclass(frozen=True)
class Strategy:
    """How a kernel maps vertices to lanes and warps (Hong et al.'s knobs).

    mapping: ``thread`` gives each thread one vertex (the baseline); ``vwarp`` gives each
        virtual warp of ``w`` lanes a chunk of ``chunk`` consecutive vertices, expanded one
        after the other with the ``w`` lanes striding over the edge list.
    distribution: ``static`` launches one virtual warp per chunk; ``dynamic`` launches only
        the resident warps, which pull chunks from a global queue (one atomic per chunk).
    defer_threshold: vertices of degree above it are queued (one atomic each) and expanded
        by a second kernel with a whole block per vertex.
    block_size: threads per block, a multiple of 32.

    Knobs that do not apply (``w``, ``chunk``, ``distribution`` for ``thread``) must be left
    unset; for ``vwarp`` they default to w=32, chunk=1, static.
    """

    mapping: str = "thread"
    w: int | None = None
    chunk: int | None = None
    distribution: str | None = None
    defer_threshold: int | None = None
    block_size: int = 256

    def __post_init__(self) -> None:
        if self.mapping not in MAPPINGS:
            raise ConfigError(f"`mapping in {MAPPINGS}` must hold, but got {self.mapping!r}")
        vwarp_knobs = {"w": self.w, "chunk": self.chunk, "distribution": self.distribution}
        if self.mapping == "thread":
            for knob, value in vwarp_knobs.items():
                if value is not None:
                    raise ConfigError(
                        f"knob `{knob}` does not apply to mapping='thread' (got {knob}={value!r});"
                        " use mapping='vwarp'"
                    )
        else:
            defaults = {"w": 32, "chunk": 1, "distribution": "static"}
            for knob, value in vwarp_knobs.items():
                if value is None:
                    object.__setattr__(self, knob, defaults[knob])
            if not _is_int(self.w) or self.w not in VIRTUAL_WARP_SIZES:
                raise ConfigError(
                    f"`w in {VIRTUAL_WARP_SIZES}` (a power of two up to the warp size) must "
                    f"hold, but got w={self.w!r}"
                )
            if not _is_int(self.chunk) or self.chunk < 1:
                raise ConfigError(f"`chunk >= 1` must hold, but got chunk={self.chunk!r}")
            if self.distribution not in DISTRIBUTIONS:
                raise ConfigError(
                    f"`distribution in {DISTRIBUTIONS}` must hold, "
                    f"but got distribution={self.distribution!r}"
                )
        if self.defer_threshold is not None and (
            not _is_int(self.defer_threshold) or self.defer_threshold < 0
        ):
            raise ConfigError(
                "`defer_threshold` must be None or an integer >= 0, "
                f"but got defer_threshold={self.defer_threshold!r}"
            )
        if not _is_int(self.block_size) or not (
            32 <= self.block_size <= 1024 and self.block_size % 32 == 0
        ):
            raise ConfigError(
                "`block_size` must be a multiple of 32 in 32..1024, "
                f"but got block_size={self.block_size!r}"
            )

    KNOBS = ("mapping", "w", "chunk", "distribution", "defer_threshold", "block_size")

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> Strategy:
        """Build from a flat dict of knob values, rejecting unknown or unmodelled knobs."""
        planned = sorted(set(params) & PLANNED_KNOBS)
        if planned:
            raise ConfigError(
                f"knob(s) {planned} are not modelled by this simulator version; "
                f"known knobs: {list(cls.KNOBS)}"
            )
        unknown = sorted(set(params) - set(cls.KNOBS))
        if unknown:
            raise ConfigError(f"unknown knob(s) {unknown}; known knobs: {list(cls.KNOBS)}")
        return cls(**params)

    @classmethod
    def parse(cls, text: str) -> Strategy:
        """Build from ``key=value,key=value`` text, as the CLI's ``--config`` takes it."""
        params: dict[str, Any] = {}
        for item in filter(None, (part.strip() for part in text.split(","))):
            key, sep, value = item.partition("=")
            if not sep:
                raise ConfigError(f"strategy setting {item!r} is not of the form key=value")
            params[key.strip()] = _parse_value(value.strip())
        return cls.from_params(params)

    def to_params(self) -> dict[str, Any]:
        """The knobs that apply to this mapping, as a flat dict (round-trips via from_params)."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if getattr(self, f.name) is not None
        }

    @property
    def lanes_per_vertex(self) -> int:
        """Lanes that expand one vertex's edge list: W for vwarp, 1 for thread."""
        return self.w if self.mapping == "vwarp" else 1

    @property
    def vertices_per_grab(self) -> int:
        """Consecutive vertices a virtual warp (or thread) takes at once."""
        return self.chunk if self.mapping == "vwarp" else 1

    @property
    def dynamic(self) -> bool:
        """Whether resident warps pull work from a global queue."""
        return self.distribution == "dynamic"

    def __str__(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.to_params().items())


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _parse_value(text: str) -> Any:
    lowered = text.lower()
    if lowered in ("none", "null", ""):
        return None
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text
