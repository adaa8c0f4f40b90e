"""Configurations as the results store holds them: knob dicts made canonical (every effective
knob, defaults filled in), keyed, and written for people. One place, so the tuner's tables,
the queries, the report and the selector agree on what "the same configuration" is."""

from __future__ import annotations

import functools
import json
import math
from typing import Any

from simulator.errors import WarpsweepError
from simulator.strategy import Strategy


def config_key(params: dict[str, Any]) -> str:
    """A stable, hashable identity of a configuration (of its canonical form)."""
    return json.dumps(canonical_params(params), sort_keys=True, default=str)


def canonical_params(params: dict[str, Any]) -> dict[str, Any]:
    """Every effective knob of a configuration (defaults filled in), null (None or NaN) knobs
    dropped first, so rows that leave defaults null and rows that write them agree; knobs
    Strategy does not know are kept as they are, and a configuration it refuses is returned
    without its nulls."""
    present = {k: v for k, v in params.items()
               if v is not None and not (isinstance(v, float) and math.isnan(v))}
    need = needed_knobs(present.get("mapping"), present.get("driven"))
    if need is not None and need <= present.keys():
        return present  # every knob that applies is set: canonical as it stands
    try:
        return dict(_canonical_items(tuple(present.items())))
    except TypeError:  # an unhashable value: not a knob value Strategy takes
        return present


@functools.lru_cache(maxsize=1 << 16)
def _canonical_items(items: tuple[tuple[str, Any], ...]) -> tuple[tuple[str, Any], ...]:
    params = dict(items)
    known = {k: v for k, v in params.items() if k in Strategy.KNOBS and v is not None}
    extra = {k: v for k, v in params.items() if k not in Strategy.KNOBS}
    try:
        return tuple({**Strategy.from_params(known).to_params(), **extra}.items())
    except (WarpsweepError, TypeError):
        return items


def config_text(params: dict[str, Any]) -> str:
    """``knob=value`` for the knobs away from the default they would take if left out
    (mapping and w always shown)."""
    try:
        return _config_text(tuple(params.items()))
    except TypeError:
        return " ".join(f"{k}={v}" for k, v in params.items())


@functools.lru_cache(maxsize=1 << 16)
def _config_text(items: tuple[tuple[str, Any], ...]) -> str:
    params = dict(items)
    known = {k: v for k, v in params.items() if k in Strategy.KNOBS}
    base = strategy_defaults(None, None)
    mapping, driven = known.get("mapping", base["mapping"]), known.get("driven", base["driven"])
    try:
        # The defaults of this mapping and driven form; the driven form itself against the
        # strategy's default one.
        defaults = {**strategy_defaults(mapping, driven), "driven": base["driven"]}
        shown = {k: v for k, v in params.items()
                 if k in ("mapping", "w") or k not in defaults or defaults[k] != v}
        # One check covers a default that depends on another knob (switch_to_data) and
        # input that is not canonical: the shown knobs must give back every known one.
        if Strategy.from_params({k: v for k, v in shown.items() if k in known}
                                ).to_params() != known:
            shown = _minimal(params, known)
    except (WarpsweepError, TypeError):
        shown = params
    # in the strategy's knob order, whatever order the caller read them in (the report read
    # them sorted by name, `best` as stored: one configuration had been written two ways)
    order = {k: i for i, k in enumerate(Strategy.KNOBS)}
    ranked = sorted(shown.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0]))
    return " ".join(f"{k}={value_text(v)}" for k, v in ranked)


def _minimal(params: dict[str, Any], known: dict[str, Any]) -> dict[str, Any]:
    """``params`` without each knob (but mapping and w) whose removal leaves the strategy."""
    full = Strategy.from_params(known)
    shown = dict(params)
    for knob in [k for k in known if k not in ("mapping", "w")]:
        rest = {k: v for k, v in shown.items() if k != knob and k in known}
        try:
            if Strategy.from_params(rest) == full:
                del shown[knob]
        except (WarpsweepError, TypeError):
            continue
    return shown


@functools.cache
def needed_knobs(mapping: Any, driven: Any) -> frozenset[str] | None:
    """Knobs with a non-null default under this mapping and driven form (None: not a pair
    Strategy takes)."""
    try:
        return frozenset(strategy_defaults(mapping, driven))
    except (WarpsweepError, TypeError):
        return None


@functools.cache
def strategy_defaults(mapping: str | None, driven: str | None) -> dict[str, Any]:
    """The knob values a strategy of this mapping and driven form (None: the default one)
    takes when left out."""
    chosen = {k: v for k, v in (("mapping", mapping), ("driven", driven)) if v is not None}
    return Strategy(**chosen).to_params()


def value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
