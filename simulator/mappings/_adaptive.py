"""``adaptive``: ``vwarp`` with W chosen per iteration, the frontier's degree statistic
``adaptive_stat`` rounded up to a power of two and clamped to ``adaptive_min_w ..
adaptive_max_w``; with ``policy`` a policy file picks each iteration's configuration."""

from __future__ import annotations

import dataclasses
import math
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from simulator.errors import ConfigError
from simulator.knob_checks import check_choice
from simulator.knob_checks import check_width
from simulator.knob_checks import is_number
from simulator.lanes import Lanes
from simulator.lanes import lockstep_lanes
from simulator.mappings._base import LaneRequest
from simulator.mappings._base import Mapping
from simulator.mappings._vwarp import CHUNKED_KNOBS
from simulator.mappings._vwarp import CHUNKED_SAMPLES
from simulator.mappings._vwarp import check_chunked

if TYPE_CHECKING:
    from simulator.strategy import Strategy

ADAPTIVE_STATS = ("mean", "median", "p90")


def adaptive_width(degrees: np.ndarray, strategy: Strategy) -> int:
    """The adaptive policy's W: the frontier's degree statistic rounded up to a power of two,
    clamped to ``adaptive_min_w..adaptive_max_w``."""
    if degrees.size == 0:
        return strategy.adaptive_min_w
    if strategy.adaptive_stat == "mean":  # of whole degrees: their sum is exact either way
        stat = int(degrees.sum()) / degrees.size  # (numpy's mean costs several times more)
    else:
        stat = np.median(degrees) if strategy.adaptive_stat == "median" else np.percentile(
            degrees, 90)
    w = 1 << max(0, math.ceil(stat) - 1).bit_length()
    return int(min(max(w, strategy.adaptive_min_w), strategy.adaptive_max_w))


@lru_cache(maxsize=64)
def _with_width(strategy: Strategy, w: int) -> Strategy:
    """Built once per strategy and W: a Strategy validates all its knobs."""
    return strategy.with_width(w)


def check_policy_knobs(strategy: Strategy) -> None:
    """A policy run takes its configurations from the policy file: the strategy holds only
    the file and the threshold factors (each > 0)."""
    if not isinstance(strategy.policy, str) or not strategy.policy:
        raise ConfigError(f"`policy` must be a policy file's path, but got {strategy.policy!r}")
    if strategy.driven != "topology":
        raise ConfigError("`policy` picks each iteration's driven form itself: leave `driven` "
                          f"unset, but got driven={strategy.driven!r}")
    for knob in ("policy_t1", "policy_t2", "policy_t3"):
        value = getattr(strategy, knob)
        if value is not None and not (is_number(value) and 0 < value < math.inf):
            raise ConfigError(f"`{knob} > 0` must hold, finite (a factor on a threshold), but "
                              f"got {knob}={value!r}")
    beside = _set_beside_policy(strategy)
    if beside:
        raise ConfigError(f"{', '.join(beside)} {'does' if len(beside) == 1 else 'do'} not "
                          "apply with `policy`: the policy file's candidates set each "
                          "iteration's knobs (leave them unset)")


# What a policy strategy may hold besides its defaults: every other knob is the candidates'.
_POLICY_KNOBS = ("mapping", "driven", "policy", "policy_t1", "policy_t2", "policy_t3")
# defaults that a knob's field leaves None (filled in, or read so, when it applies)
_IMPLICIT_DEFAULTS = {"unroll": 1, "changed_flag": "step", "precheck": True}


def _set_beside_policy(strategy: Strategy) -> list[str]:
    """The knobs of a policy strategy set to other than their defaults (``knob=value``): a
    policy run ignored them, each spelling giving another canonical form of one run."""
    defaults = {f.name: f.default for f in dataclasses.fields(strategy)}
    defaults.update(Adaptive.knobs)
    defaults.update(_IMPLICIT_DEFAULTS)
    return [f"{k}={v}" for k, v in strategy.to_params().items()
            if k not in _POLICY_KNOBS and v != defaults.get(k)]


class Adaptive(Mapping):
    name = "adaptive"
    knobs = {
        **CHUNKED_KNOBS,
        "adaptive_min_w": 1,
        "adaptive_max_w": 32,
        "adaptive_stat": "mean",
        # a per-iteration policy file (simulator/policy.py) and factors on its first splits'
        # thresholds (``policy=FILE`` alone implies ``mapping=adaptive``)
        "policy": None,
        "policy_t1": None,
        "policy_t2": None,
        "policy_t3": None,
    }
    knob_samples = {
        **CHUNKED_SAMPLES,
        "adaptive_min_w": (1, 2, 4),
        "adaptive_max_w": (4, 16, 32),
        "adaptive_stat": ADAPTIVE_STATS,
    }
    per_iteration = True

    def check(self, strategy: Strategy) -> None:
        check_chunked(strategy)
        if strategy.policy is not None:
            check_policy_knobs(strategy)
        else:
            factors = [k for k in ("policy_t1", "policy_t2", "policy_t3")
                       if getattr(strategy, k) is not None]
            if factors:  # (copied into each iteration's vwarp strategy, refused there)
                raise ConfigError(f"{', '.join(factors)} "
                                  f"{'applies' if len(factors) == 1 else 'apply'} only with "
                                  "`policy=FILE`: factors on a policy file's thresholds")
        check_width("adaptive_min_w", strategy.adaptive_min_w)
        check_width("adaptive_max_w", strategy.adaptive_max_w)
        if strategy.adaptive_min_w > strategy.adaptive_max_w:
            raise ConfigError(
                "`adaptive_min_w <= adaptive_max_w` must hold, but got "
                f"{strategy.adaptive_min_w} > {strategy.adaptive_max_w}"
            )
        check_choice("adaptive_stat", strategy.adaptive_stat, ADAPTIVE_STATS)

    def for_iteration(self, strategy: Strategy, degrees: np.ndarray) -> Strategy:
        return _with_width(strategy, adaptive_width(degrees, strategy))

    # asked of an adaptive strategy itself (not of the vwarp one an iteration runs as):
    # one lane a vertex, in lockstep, as a vwarp of W = 1
    def lockstep(self, strategy: Strategy) -> bool:
        return True

    def lanes(self, strategy: Strategy, request: LaneRequest
              ) -> tuple[Lanes, np.ndarray | None]:
        r = request  # the layout's W is the iteration's
        return lockstep_lanes(r.slots, r.degree, r.local, r.layout, r.want_lanes), None
