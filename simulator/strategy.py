"""The load-balancing configuration of one simulation: every knob, validated on construction."""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any

from simulator.errors import ConfigError
from simulator.knob_checks import NUMBER_TEXT
from simulator.knob_checks import VIRTUAL_WARP_SIZES as VIRTUAL_WARP_SIZES
from simulator.knob_checks import check_choice
from simulator.knob_checks import check_positive
from simulator.knob_checks import check_threshold
from simulator.knob_checks import check_whole
from simulator.knob_checks import is_int
from simulator.knob_checks import is_number
from simulator.knob_checks import plain
from simulator.mappings import MAPPINGS as MAPPING_REGISTRY
from simulator.mappings import knob_owners
from simulator.mappings import mapping_names
from simulator.mappings import mapping_of
from simulator.mappings._adaptive import ADAPTIVE_STATS as ADAPTIVE_STATS
from simulator.mappings._vwarp import DISTRIBUTIONS as DISTRIBUTIONS

# VIRTUAL_WARP_SIZES, ADAPTIVE_STATS and DISTRIBUTIONS (the mappings' choices) are imported
# from here too, as MAPPINGS is (below)
DRIVEN = ("topology", "data", "temporal", "spatial")
PUSHES = ("atomic", "chunked", "prefix", "block")
SWITCH_ONS = ("vertices", "edges")
RELAXES = ("atomic", "store")
CHANGED_FLAGS = ("step", "warp")
# Integer knobs are 32-bit on the GPU (and in the simulator's slot arrays).
INT_MAX = 2**31 - 1
_INT_KNOBS = ("chunk", "defer_threshold", "donate_threshold", "partition", "unroll")


def __getattr__(name: str):
    """``MAPPINGS``: the registered mappings' names (``simulator.mappings``), as they are
    now: a test may register its own for a while."""
    if name == "MAPPINGS":
        return mapping_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Knobs that only some driven forms take: (knob, the settings it applies to, default). The
# mappings' own knobs are theirs (``Mapping.knobs``).
_DRIVEN_KNOBS = {
    "push": (("data", "temporal", "spatial"), "atomic"),
    "dedup": (("data", "temporal"), False),
    "variable_grid": (("data", "temporal", "spatial"), True),
    "switch_to_topology": (("temporal",), 0.1),
    "switch_to_data": (("temporal",), None),
    "switch_on": (("temporal",), "vertices"),
    "relax": (("data",), "atomic"),
    "partition": (("spatial",), 16),
    "unroll": (("topology",), 1),
}


@dataclass(frozen=True)
class Strategy:
    """How a kernel maps vertices to lanes and warps, and which vertices it visits.

    mapping: ``thread`` gives each thread one vertex (the baseline); ``vwarp`` gives each
        virtual warp of ``w`` lanes a chunk of ``chunk`` consecutive vertices, expanded one
        after the other with the ``w`` lanes striding over the edge list; ``wer``/``wer+``
        (Huang et al.) give each thread a vertex, then spread the warp's edges over its active
        lanes (``wer``) or all 32 lanes (``wer+``); ``adaptive`` is ``vwarp`` with W chosen
        per iteration: the frontier degree statistic ``adaptive_stat`` rounded up to a power
        of two and clamped to ``adaptive_min_w..adaptive_max_w``.
    distribution: ``static`` launches one virtual warp per chunk; ``dynamic`` launches only
        the resident warps, which pull chunks from a global queue (one atomic per chunk).
    defer_threshold: vertices of degree above it are queued (one atomic each) and expanded
        by a second kernel with a whole block per vertex.
    donate_threshold: (thread mapping) threads with more edges than the block's mean degree
        plus this give the excess to a shared donation box that the whole block drains.
    block_size: threads per block, a multiple of 32.
    driven: ``topology`` checks every vertex each iteration; ``data`` expands a worklist
        built by the previous launch (``push``: ``atomic`` per item, ``chunked`` one atomic
        per thread or warp batch, ``prefix`` an atomic-free prefix sum, ``block`` one atomic
        per block a round of its warps in step), duplicates included;
        ``temporal`` switches to topology when the worklist exceeds ``switch_to_topology``
        x N and back below ``switch_to_data`` x N (``switch_on=edges``: when the
        frontier's out-edges exceed those fractions of M; the kernels sum the pushed
        vertices' degrees); ``spatial`` pushes a representative per
        ``partition`` consecutive vertices, all of which are visited.
    relax: (data-driven SSSP and CC) how a lane lowers its target: ``atomic`` (atomicMin,
        pushing only if the old value it returns was higher) or ``store`` (a plain store,
        re-read and stored again until it holds: every lane of the first warp step that
        lowers a target pushes it, no atomic; stores of different warps race and some
        lowerings are lost (``simulator.store_races``), so the run ends with verify sweeps
        over every edge, each re-pushing the vertices with an edge still to relax, until
        one finds none).
    dedup: (worklist forms) an in-queue flag per vertex keeps duplicates off the worklist:
        a pushing lane claims its target's flag with an exchange (waited for, after a fence)
        and pushes only if it was clear; an entry clears its own flag (an exchange and a
        fence) before it reads its value.
    variable_grid: (worklist forms) size the grid to the worklist instead of launching the
        resident warps, which then stride over it.
    unroll: (topology) levels per launch, separated by grid barriers instead of relaunches.
    changed_flag: (topology) how a sweep tells the host it lowered or reached a vertex, in
        the one word the host reads to stop: ``step`` (the default) every warp step with a
        storing lane stores it, and those stores serialise on its address; ``warp`` each
        warp votes once its loop is done and one lane stores it (``__any_sync``), as the
        independent kernels do. ``step`` is left out of the canonical form.
    precheck: (SSSP and CC, atomicMin) whether a lane reads its target before it lowers
        it: ``true`` (the default, kernels.cu's) reads it and issues atomicMin only where
        its value is lower, not waiting for the atomic unless it pushes; ``false`` issues
        atomicMin on every edge and waits for its old value to decide (the independent
        kernels'): an atomic a lane step, and the atomic's round trips in place of the
        read's. ``true`` is left out of the canonical form; ``relax=store`` refuses
        ``false``.

    Knobs that do not apply to the chosen mapping or driven form must be left unset; those
    that apply get their defaults.
    """

    mapping: str = "thread"
    w: int | None = None
    chunk: int | None = None
    distribution: str | None = None
    defer_threshold: int | None = None
    block_size: int = 256
    adaptive_min_w: int | None = None
    adaptive_max_w: int | None = None
    adaptive_stat: str | None = None
    donate_threshold: int | None = None
    driven: str = "topology"
    push: str | None = None
    dedup: bool | None = None
    variable_grid: bool | None = None
    switch_to_topology: float | None = None
    switch_to_data: float | None = None
    switch_on: str | None = None
    relax: str | None = None
    partition: int | None = None
    unroll: int | None = None
    changed_flag: str | None = None
    precheck: bool | None = None
    policy: str | None = None
    policy_t1: float | None = None
    policy_t2: float | None = None
    policy_t3: float | None = None

    def __post_init__(self) -> None:
        self._plain_scalars()
        self._check_settable()
        if self.policy is not None and self.mapping == "thread":
            object.__setattr__(self, "mapping", "adaptive")
        mapping = mapping_of(self.mapping)
        if self.driven not in DRIVEN:
            raise ConfigError(f"`driven in {DRIVEN}` must hold, but got driven={self.driven!r}")
        self._apply_mapping_knobs(mapping)
        self._apply(_DRIVEN_KNOBS, "driven", self.driven)
        mapping.check(self)
        check_threshold("defer_threshold", self.defer_threshold)
        check_whole("block_size", self.block_size)
        if not is_int(self.block_size) or not (
            32 <= self.block_size <= 1024 and self.block_size % 32 == 0
        ):
            raise ConfigError(
                "`block_size` must be a multiple of 32 in 32..1024, "
                f"but got block_size={self.block_size!r}"
            )
        check_choice("push", self.push, PUSHES)
        for knob in ("variable_grid", "dedup"):
            _check_bool(knob, getattr(self, knob))
        check_choice("switch_on", self.switch_on, SWITCH_ONS)
        check_choice("relax", self.relax, RELAXES)
        self._check_changed_flag()
        self._check_precheck()
        if self.driven == "temporal":
            if self.switch_to_data is None:
                object.__setattr__(self, "switch_to_data", self.switch_to_topology)
            for knob, least in (("switch_to_topology", "> 0"), ("switch_to_data", ">= 0")):
                value = getattr(self, knob)
                if not is_number(value) or not math.isfinite(value) or not (
                        value > 0 if least == "> 0" else value >= 0):
                    raise ConfigError(
                        f"`{knob} {least}` must hold, a finite number (a share of the "
                        f"graph's vertices or edges; never switching is driven=data), but got "
                        f"{knob}={value!r}")
                if value == 0 and math.copysign(1.0, value) < 0:  # -0.0 written as 0.0
                    object.__setattr__(self, knob, 0.0)
            if self.switch_to_data > self.switch_to_topology:
                raise ConfigError(
                    "`switch_to_data <= switch_to_topology` must hold (the switch back needs a "
                    f"smaller worklist), but got {self.switch_to_data} > "
                    f"{self.switch_to_topology}"
                )
        for knob in ("partition", "unroll"):
            check_positive(knob, getattr(self, knob))
        if (self.unroll or 1) > 1 and self.defer_threshold is not None:
            raise ConfigError(
                f"defer_threshold does not apply with unroll={self.unroll}: the outlier kernel "
                "is a launch of its own after each level, and an unrolled grid runs its levels "
                "without relaunching (got defer_threshold="
                f"{self.defer_threshold!r}); use one or the other")
        for knob in _INT_KNOBS:
            value = getattr(self, knob)
            if value is not None and value > INT_MAX:
                raise ConfigError(
                    f"`{knob} <= {INT_MAX}` must hold (the kernels' counters are 32-bit), "
                    f"but got {knob}={value!r}"
                )

    def _plain_scalars(self) -> None:
        """Numpy scalar knobs (``w=np.int64(8)``, ``dedup=np.True_``) as Python scalars:
        the checks had refused them, and str() must read as for the Python values."""
        for f in dataclasses.fields(self):
            object.__setattr__(self, f.name, plain(getattr(self, f.name)))

    def _check_settable(self) -> None:
        """Refuse None (``none`` in a config) for the knobs with no 'unset' value: mapping,
        driven, block_size; the message had not named the knob set to none."""
        for knob, choices in (("mapping", f"one of {tuple(mapping_names())}"),
                              ("driven", f"one of {DRIVEN}"),
                              ("block_size", "a multiple of 32 in 32..1024")):
            if getattr(self, knob) is None:
                raise ConfigError(f"`{knob}=none`: {knob} has no 'unset' value; give "
                                  f"{choices} (or leave it out for the default "
                                  f"{_FIELD_DEFAULTS[knob]!r})")

    def _check_changed_flag(self) -> None:
        """Refuse a ``changed_flag`` other than step or warp, or on a form that stores none
        (worklists push, the hybrids' sweeps count); the default ``step`` is kept as None,
        so configurations written before the knob keep their canonical form."""
        if self.changed_flag is None:
            return
        check_choice("changed_flag", self.changed_flag, CHANGED_FLAGS)
        if self.driven != "topology":
            raise ConfigError(
                f"knob `changed_flag` does not apply to driven={self.driven!r} (got "
                f"changed_flag={self.changed_flag!r}); it applies to driven='topology'"
            )
        if self.changed_flag == "step":
            object.__setattr__(self, "changed_flag", None)

    def _check_precheck(self) -> None:
        """Refuse a ``precheck`` that is not a bool, or ``false`` with plain stores (which
        read their target anyway); the default ``true`` is kept as None, so configurations
        written before the knob keep their canonical form."""
        if self.precheck is None:
            return
        _check_bool("precheck", self.precheck)
        if self.precheck:
            object.__setattr__(self, "precheck", None)
        elif self.relax == "store":
            raise ConfigError(
                "precheck=false does not apply to relax='store': a plain store re-reads its "
                "target anyway; precheck=false issues atomicMin on every edge (relax='atomic')")

    @property
    def unchecked_atomics(self) -> bool:
        """Whether every edge's lane issues atomicMin and waits for it (``precheck`` false)."""
        return self.precheck is False

    def _apply_mapping_knobs(self, mapping) -> None:
        """Default the knobs ``mapping`` owns; refuse those set that it does not (but some
        other mapping does)."""
        owners = knob_owners()
        for knob in _mapping_knob_order():
            value = getattr(self, knob)
            if knob in mapping.knobs:
                if value is None:
                    object.__setattr__(self, knob, mapping.knobs[knob])
            elif value is not None:
                applies = ", ".join(f"mapping={s!r}" for s in owners[knob])
                if knob.startswith("policy_t"):  # (the hint alone had led to a second error)
                    applies += " with `policy=FILE`, a factor on the file's thresholds"
                raise ConfigError(
                    f"knob `{knob}` does not apply to mapping={self.mapping!r} (got "
                    f"{knob}={value!r}); it applies to {applies}"
                )

    def _apply(self, knobs: dict, selector: str, setting: str) -> None:
        """Default the knobs that apply to ``setting``; refuse those set that do not."""
        for knob, (applies_to, default) in knobs.items():
            value = getattr(self, knob)
            if setting in applies_to:
                if value is None:
                    object.__setattr__(self, knob, default)
            elif value is not None:
                owners = ", ".join(f"{selector}={s!r}" for s in applies_to)
                raise ConfigError(
                    f"knob `{knob}` does not apply to {selector}={setting!r} (got "
                    f"{knob}={value!r}); it applies to {owners}"
                )

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> Strategy:
        """Build from a flat dict of knob values, rejecting unknown knobs."""
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
            if key.strip() in params:  # the last one silently winning hides a typo
                raise ConfigError(f"knob {key.strip()!r} is set twice in {text!r}")
            if not value.strip():  # `policy=` had run the default silently
                raise ConfigError(f"knob {key.strip()!r} has no value in {text!r} (`none` "
                                  "leaves it unset)")
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
        """Lanes that expand one vertex's edge list: W for vwarp, 1 for the thread-based ones
        (the mapping's ``lanes_per_vertex``)."""
        return MAPPING_REGISTRY[self.mapping].lanes_per_vertex(self)

    @property
    def vertices_per_grab(self) -> int:
        """Consecutive vertices a virtual warp (or thread) takes at once."""
        return self.chunk or 1

    @property
    def dynamic(self) -> bool:
        """Whether resident warps pull work from a global queue."""
        return self.distribution == "dynamic"

    @property
    def uses_worklist(self) -> bool:
        """Whether (some) launches expand a worklist built by the previous launch."""
        return self.driven != "topology"

    def with_width(self, w: int) -> Strategy:
        """The vwarp strategy an adaptive one runs as for an iteration where it picks ``w``."""
        params = {
            k: v for k, v in self.to_params().items() if not k.startswith("adaptive_")
        }
        return Strategy.from_params({**params, "mapping": "vwarp", "w": w})

    def __str__(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.to_params().items())


# every field is a knob (from_params, to_params)
Strategy.KNOBS = tuple(f.name for f in dataclasses.fields(Strategy))
_FIELDS = frozenset(Strategy.KNOBS)
_FIELD_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Strategy)}
_knob_orders: dict[tuple[str, ...], tuple[str, ...]] = {}


def _mapping_knob_order() -> tuple[str, ...]:
    """The knobs some registered mapping owns, in the order of the Strategy's fields (the
    order in which a misplaced one is reported)."""
    owners = knob_owners()
    key = tuple(owners)
    order = _knob_orders.get(key)
    if order is None:
        unknown = sorted(set(owners) - _FIELDS)
        if unknown:
            raise ValueError(f"mapping knob(s) {unknown} are not Strategy fields; a mapping's "
                             "knobs must be fields of simulator.strategy.Strategy")
        order = _knob_orders[key] = tuple(k for k in Strategy.KNOBS if k in owners)
    return order


def _check_bool(knob: str, value: Any) -> None:
    """Refuse a bool knob's value that is not a bool (None: unset), naming a string as one:
    ``{'dedup': 'true'}`` had been told it "got 'true'", which reads as the value it wants.
    Strings are not read as bools, as no knob given as a Python value is (``block_size``
    takes 256, not '256'); ``Strategy.parse`` reads the CLI's text."""
    if value is None or isinstance(value, bool):
        return
    meant = {"true": "True", "false": "False"}.get(
        value.strip().lower() if isinstance(value, str) else None)
    if meant is not None:  # only a dict of knobs holds the text: the CLI's is read as a bool
        raise ConfigError(f"`{knob}` must be true or false (a bool), but got the string "
                          f"{value!r}: a dict of knobs takes Python values, so give the bool "
                          f"({meant}); text such as '{knob}=true' is read by Strategy.parse")
    raise ConfigError(f"`{knob}` must be true or false, but got {value!r}")


_INT_TEXT = re.compile(r"[+-]?[0-9]+")  # a whole number, as NUMBER_TEXT reads numbers


def _parse_value(text: str) -> Any:
    lowered = text.lower()
    if lowered in ("none", "null", ""):
        return None
    if lowered in ("true", "false"):
        return lowered == "true"
    stripped = text.strip()
    if _INT_TEXT.fullmatch(stripped):
        return int(stripped)
    if NUMBER_TEXT.fullmatch(stripped):
        return float(stripped)
    return text
