"""Declarative search spaces: YAML files turned into Optuna suggestions and strategy configs.

A space file has ``name``, ``description``, ``fixed`` (knob: value, always set) and ``params``
(knob: definition, drawn in file order). A definition is one of::

    w: {choices: [1, 2, 4, 8, 16, 32]}          # categorical (shorthand: w: [1, 2, 4])
    chunk: {int: [1, 2048], log: true}           # integer range, optional log / step / grid
    chunk: {int: [1, 2048], powers_of_two: true} # 1, 2, 4, ..., 2048: Optuna draws log2_chunk
    switch_to_topology: {float: [0.01, 0.5], log: true, grid: [0.01, 0.05, 0.2]}
    block_size: {value: 256}                     # fixed value (shorthand: block_size: 256)

and may carry ``when: {knob: value-or-list, ...}``: the knob is set only when every listed knob
is set to one of the listed values (a chunk only for chunked mappings, switch points only for the
temporal hybrid). Knobs that are not set are absent from the config, never silently ignored.
"""

from __future__ import annotations

import dataclasses
import decimal
import hashlib
import itertools
import json
import math
import random
import re
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.errors import ConfigError
from simulator.errors import WarpsweepError
from simulator.yamldoc import YamlDoc
from simulator.yamldoc import load_yaml

SPACES_DIR = Path(__file__).resolve().parent
TOP_KEYS = ("name", "description", "fixed", "params")
KINDS = ("choices", "int", "float", "value")
OPTIONS = ("log", "step", "grid", "powers_of_two", "when", "doc")
MAX_GRID = 200_000
AUTO_INT_GRID = 64
MAX_NAME = 64  # characters of a space's name
PROBE_LIMIT = 2_000
ALGORITHM_PLACEHOLDER = "{algorithm}"  # in a text value: the study's algorithm

Scalar = None | bool | int | float | str


@dataclass(frozen=True)
class Param:
    """One knob of a space: how it is drawn and when it is active."""

    name: str
    kind: str
    choices: tuple[Scalar, ...] = ()
    low: float | None = None
    high: float | None = None
    log: bool = False
    step: float | None = None
    grid: tuple[Scalar, ...] | None = None
    powers_of_two: bool = False
    value: Scalar = None
    when: tuple[tuple[str, tuple[Scalar, ...]], ...] = ()
    line: int | None = None

    @property
    def suggested(self) -> bool:
        """Whether Optuna draws this knob (fixed values are not drawn)."""
        return self.kind != "value"

    @property
    def optuna_name(self) -> str:
        """The name Optuna draws this knob under: a powers-of-two range is drawn as its
        exponent, an ordered integer whose few distinct values keep TPE's Parzen estimators
        cheap (a log-scaled integer range costs it several times more per trial)."""
        return f"log2_{self.name}" if self.powers_of_two else self.name

    def optuna_value(self, value: Scalar) -> Scalar:
        """A config value as Optuna holds it (the exponent of a power of two)."""
        if not self.powers_of_two:
            return value
        if not (isinstance(value, int) and value >= 1 and value & (value - 1) == 0):
            raise ConfigError(f"param {self.name!r} takes powers of two, got {value!r}")
        return value.bit_length() - 1

    def config_value(self, value: Scalar) -> Scalar:
        """An Optuna value as the config holds it (the inverse of ``optuna_value``)."""
        return 2 ** int(value) if self.powers_of_two else value

    def offers(self, value: Any) -> bool:
        """Whether ``value`` is one of this knob's choices (a range lists none)."""
        return self.kind == "choices" and _member(value, self.choices)

    def active(self, config: Mapping[str, Any]) -> bool:
        """Whether every ``when`` condition holds in the partial ``config``."""
        return all(k in config and _member(config[k], vals) for k, vals in self.when)

    def suggest(self, trial: Any) -> Scalar:
        """Draw this knob from an Optuna trial (anything with ``suggest_*``)."""
        if self.kind == "choices":
            return trial.suggest_categorical(self.name, list(self.choices))
        if self.powers_of_two:
            exponents = self.optuna_value(self.low), self.optuna_value(self.high)
            return self.config_value(trial.suggest_int(self.optuna_name, *exponents))
        if self.kind == "int":
            step = int(self.step or 1)
            return trial.suggest_int(self.name, int(self.low), int(self.high), step=step,
                                     log=self.log)
        if self.kind == "float":
            return trial.suggest_float(self.name, float(self.low), float(self.high),
                                       step=self.step, log=self.log)
        return self.value

    def grid_values(self) -> tuple[Scalar, ...]:
        """The finite values an exhaustive grid visits; ConfigError for a continuous range."""
        if self.kind == "choices":
            return self.choices
        if self.kind == "value":
            return (self.value,)
        if self.grid is not None:
            return self.grid
        if self.kind == "int":
            low, high = int(self.low), int(self.high)
            if self.powers_of_two:
                return tuple(2**k for k in range(low.bit_length() - 1, high.bit_length()))
            if self.log:
                vals, v = [], low
                while v <= high:
                    vals.append(v)
                    v *= 2
                if vals[-1] != high:
                    vals.append(high)
                return tuple(vals)
            step = int(self.step or 1)
            count = (high - low) // step + 1
            if count <= AUTO_INT_GRID:
                return tuple(range(low, high + 1, step))
            raise ConfigError(
                f"param {self.name!r} has {count} integer values; "
                f"give it `grid: [...]` (or `log: true`) for the grid sampler"
            )
        steps = self.drawable_values()  # a stepped float range (or low = high) is finite
        if steps is not None:
            return steps
        if self.step:
            raise ConfigError(f"param {self.name!r} has {self.float_steps()} steps; give it "
                              "`grid: [...]` values for the grid sampler")
        raise ConfigError(
            f"param {self.name!r} is a float range; "
            f"give it `grid: [...]` values (or a `step`) for the grid sampler"
        )

    def float_steps(self) -> int:
        """How many steps a stepped float range holds."""
        return float_step_count(self.low, self.high, self.step)

    def float_step(self, k: int) -> float:
        """A stepped float range's k-th step as Optuna draws it."""
        return float_step_value(self.low, self.high, self.step, k)

    def drawable_values(self) -> tuple[Scalar, ...] | None:
        """Every value a sampler can draw (a powers-of-two range's powers, an int range's
        integers, a stepped float range's steps, as Optuna draws them, up to
        ``AUTO_INT_GRID`` of them), or None: a float range without a step, or more."""
        if self.kind in ("choices", "value"):
            return self.grid_values()
        if self.kind == "float":
            if self.low == self.high:
                return (float(self.low),)
            if not self.step or self.float_steps() > AUTO_INT_GRID:
                return None
            return tuple(self.float_step(k) for k in range(self.float_steps()))
        if self.kind != "int":
            return None
        low, high = int(self.low), int(self.high)
        if self.powers_of_two:
            return tuple(2**k for k in range(low.bit_length() - 1, high.bit_length()))
        step = int(self.step or 1)
        if (high - low) // step + 1 > AUTO_INT_GRID:
            return None
        return tuple(range(low, high + 1, step))

    def corner_values(self) -> tuple[Scalar, ...]:
        """Values enough to check the knob against the simulator: choices, or range ends."""
        if self.kind in ("choices", "value"):
            return self.grid_values()
        ends = [self.low, self.high] if self.low != self.high else [self.low]
        if self.kind == "int":
            ends = [int(v) for v in ends]
        return tuple(dict.fromkeys([*ends, *(self.grid or ())]))

    def describe(self) -> dict[str, Any]:
        """Canonical JSON-able form (for digests and listings)."""
        d: dict[str, Any] = {"kind": self.kind}
        if self.kind == "choices":
            d["choices"] = list(self.choices)
        elif self.kind == "value":
            d["value"] = self.value
        else:
            d.update(low=self.low, high=self.high, log=self.log, step=self.step)
            if self.powers_of_two:
                d["powers_of_two"] = True
            if self.grid is not None:
                d["grid"] = list(self.grid)
        if self.when:
            d["when"] = {k: list(v) for k, v in self.when}
        return d


@dataclass(frozen=True)
class SearchSpace:
    """A loaded, validated search space; knobs are drawn in declaration order."""

    name: str
    source: str
    description: str
    fixed: tuple[tuple[str, Scalar], ...]
    params: tuple[Param, ...]

    @property
    def knobs(self) -> tuple[str, ...]:
        """Every knob this space can set (fixed first, then params in order)."""
        return tuple(k for k, _ in self.fixed) + tuple(p.name for p in self.params)

    @property
    def has_conditionals(self) -> bool:
        """Whether some knob is set only under a condition."""
        return any(p.when for p in self.params)

    @property
    def finite(self) -> bool:
        """Whether a sampler can draw only a few configurations, each of them listed by
        ``drawable_configs`` (no float range, no int range of many values)."""
        return all(p.drawable_values() is not None for p in self.params)

    def drawable_configs(self) -> Iterator[dict[str, Scalar]]:
        """Every configuration a sampler can draw (finite spaces only)."""
        return self._enumerate(lambda p: p.drawable_values() or ())

    def _lacked_knob(self, accepts: Callable[[dict[str, Any]], bool], emptied: Param
                     ) -> Param | None:
        """The searched knob without which some value of ``emptied`` (a knob no value of
        which applied) would apply: what the algorithm lacks (PageRank's ``unroll``), where
        one knob is it."""
        for other in self.params:
            if other is emptied or other.name in {n for n, _ in self.fixed}:
                continue
            without = dataclasses.replace(
                self, params=tuple(q for q in self.params if q is not other))
            original = next(q for q in self.params if q.name == emptied.name)
            if any(without._usable(accepts, original, v) for v in original.choices):
                return other
        return None

    def for_algorithm(self, accepts: Callable[[dict[str, Any]], bool],
                      algorithm: str = "this algorithm") -> SearchSpace:
        """This space without the choices no configuration of it can use, as judged by
        ``accepts`` (e.g. the hybrids for PageRank), and without knobs left never active.

        A study of an algorithm searches only knobs its kernels have, so no trial is spent on
        a configuration the simulator would refuse for that algorithm. ``{algorithm}`` in a
        text value (the `policy` space's file) is the algorithm's name.
        """
        return self._named_for(algorithm)._narrowed(accepts, algorithm)

    def _narrowed(self, accepts: Callable[[dict[str, Any]], bool],
                  algorithm: str) -> SearchSpace:
        """``for_algorithm`` of a space whose values name no placeholder."""
        params = list(self.params)
        changed = True
        while changed:
            changed = False
            space = dataclasses.replace(self, params=tuple(params))
            for i, p in enumerate(params):
                if p.kind != "choices":
                    continue
                keep = tuple(v for v in p.choices if space._usable(accepts, p, v))
                if keep != p.choices:
                    params[i] = dataclasses.replace(p, choices=keep)
                    changed = True
            pruned = _without_dead(params, dict(self.fixed))
            changed = changed or len(pruned) != len(params)
            params = pruned
            if not changed:  # ranges last: one a narrowed choice leaves dead is not probed
                space = dataclasses.replace(self, params=tuple(params))
                for i, p in enumerate(params):
                    narrowed = space._int_range_narrowed(accepts, p) if p.kind == "int" else p
                    if narrowed is not p:
                        params[i] = narrowed
                        changed = True
        for p in params:
            if p.kind == "choices" and not p.choices:
                culprit = self._lacked_knob(accepts, p)
                if culprit is not None:  # the knob that rules every value out, not the first
                    values = ", ".join(map(str, culprit.drawable_values() or ())) or "a range"
                    raise ConfigError(
                        f"{self.source}:{culprit.line}: space {self.name!r}: {algorithm} "
                        f"takes none of {culprit.name}'s values here ({values}; without "
                        f"{culprit.name}, {p.name} would apply): leave it out of a space for "
                        f"{algorithm}")
                fixed = ", ".join(f"{k}={v}" for k, v in self.fixed)
                raise ConfigError(
                    f"{self.source}:{p.line}: space {self.name!r}: no value of {p.name} "
                    f"applies to {algorithm}"
                    + (f" beside its fixed knobs ({fixed}): one of those may be what "
                       f"{algorithm} lacks" if fixed else "")
                )
        narrowed = dataclasses.replace(self, params=tuple(params))
        corners = narrowed._enumerate(lambda p: p.corner_values())
        if not any(accepts(c) for c in itertools.islice(corners, PROBE_LIMIT)):
            fixed = ", ".join(f"{k}={v}" for k, v in self.fixed)
            raise ConfigError(
                f"{self.source}: space {self.name!r}: no configuration of it applies to "
                f"{algorithm}" + (f" (its fixed knobs: {fixed})" if fixed else ""))
        return narrowed

    def _int_range_narrowed(self, accepts: Callable[[dict[str, Any]], bool],
                            p: Param) -> Param:
        """An integer range cut to the run of its drawable values the algorithm can use
        (``unroll: {int: [1, 8]}`` is 1 for PageRank, whose trials had all failed), as
        choices are narrowed; a range of no usable value becomes an empty choice (refused,
        naming it). ``p`` itself where every value is usable, none can be listed, or the
        usable ones are no one run."""
        values = p.drawable_values()
        if values is None:
            return p
        keep = [v for v in values if self._usable(accepts, p, v)]
        if len(keep) == len(values):
            return p
        if not keep:
            return dataclasses.replace(p, kind="choices", choices=(), low=None, high=None,
                                       log=False, step=None, grid=None, powers_of_two=False)
        if keep != [v for v in values if keep[0] <= v <= keep[-1]]:
            return p
        grid = None if p.grid is None else tuple(v for v in p.grid if keep[0] <= v <= keep[-1])
        if grid == ():  # the values listed for the grid sampler: none usable
            return dataclasses.replace(p, kind="choices", choices=(), low=None, high=None,
                                       log=False, step=None, grid=None, powers_of_two=False)
        return dataclasses.replace(p, low=keep[0], high=keep[-1], grid=grid)

    def _named_for(self, algorithm: str) -> SearchSpace:
        """This space with ``{algorithm}`` in its text values replaced by ``algorithm``:
        fixed knobs, choices, a param's value and the values its ``when`` names (a condition
        left unnamed had never held, its knob dropped without a word)."""
        def named(value: Any) -> Any:
            return (value.replace(ALGORITHM_PLACEHOLDER, algorithm)
                    if isinstance(value, str) else value)

        return dataclasses.replace(
            self, fixed=tuple((k, named(v)) for k, v in self.fixed),
            params=tuple(dataclasses.replace(
                p, choices=tuple(map(named, p.choices)), value=named(p.value),
                when=tuple((k, tuple(map(named, values))) for k, values in p.when))
                for p in self.params))

    def _usable(self, accepts: Callable[[dict[str, Any]], bool], target: Param,
                value: Scalar) -> bool:
        candidates = self._corners_setting(target, value)
        return any(accepts(c) for c in itertools.islice(candidates, PROBE_LIMIT))

    def _corners_setting(self, target: Param, value: Scalar) -> Iterator[dict[str, Scalar]]:
        """The configurations of corner values in which ``target`` is set, to ``value``, in
        grid order. The knobs its conditions name (and theirs, in turn) only take values
        that let it be set: the others would yield nothing but configurations without it."""
        params = {p.name: p for p in self.params}
        allowed: dict[str, tuple[Scalar, ...]] = {}
        pending = [target]
        while pending:
            for knob, values in pending.pop().when:
                if knob not in allowed and knob in params:
                    pending.append(params[knob])
                allowed[knob] = tuple(v for v in allowed.get(knob, values)
                                      if _member(v, values))

        def values_of(p: Param) -> tuple[Scalar, ...]:
            if p is target:
                return (value,)
            if p.name not in allowed:
                return p.corner_values()
            # the values a condition names, a range's inner ones too (a range's corners are
            # its ends: `when: {w: 8}` on w in 1..32 had found no configuration; review CR10)
            possible = _possible(p)
            if possible is not None:  # as the knob spells them (8 where `when` says 8.0)
                return tuple(c for c in possible if _member(c, allowed[p.name]))
            return tuple(int(v) if p.kind == "int" else v
                         for v in allowed[p.name] if _in_range(p, v))

        return (c for c in self._enumerate(values_of) if target.name in c)

    @property
    def digest(self) -> str:
        """Short stable hash of the space's content (not its comments or description)."""
        body = {
            "fixed": dict(self.fixed),
            "params": {p.name: p.describe() for p in self.params},
        }
        text = json.dumps(body, sort_keys=True, default=repr)
        return hashlib.sha256(text.encode()).hexdigest()[:10]

    def suggest(self, trial: Any) -> dict[str, Scalar]:
        """The strategy config for one Optuna trial (inactive knobs absent)."""
        config: dict[str, Scalar] = dict(self.fixed)
        for p in self.params:
            if p.active(config):
                config[p.name] = p.suggest(trial)
        return config

    def optuna_params(self, config: Mapping[str, Any]) -> dict[str, Scalar]:
        """The part of ``config`` Optuna draws, as Optuna names it (for enqueueing)."""
        drawn = {p.name: p for p in self.params if p.suggested}
        return {drawn[k].optuna_name: drawn[k].optuna_value(v) for k, v in config.items()
                if k in drawn}

    def config_params(self, params: Mapping[str, Any]) -> dict[str, Scalar]:
        """Optuna's ``params`` as config knobs (the inverse of ``optuna_params``)."""
        by_optuna = {p.optuna_name: p for p in self.params if p.suggested}
        config = {}
        for k, v in params.items():
            p = by_optuna.get(k)
            config[p.name if p else k] = p.config_value(v) if p else v
        return config

    def configs(self) -> Iterator[dict[str, Scalar]]:
        """Every configuration of the grid, honouring conditions (finite spaces only)."""
        def values(p: Param) -> tuple[Scalar, ...]:
            try:
                return p.grid_values()
            except ConfigError as exc:  # at the space file's line, as its other errors
                raise ConfigError(f"{self.source}:{p.line}: space {self.name!r}: {exc}"
                                  ) from None
        return self._enumerate(values)

    def grid_size(self) -> int:
        """Number of distinct grid configurations; ConfigError if infinite or too large."""
        count = 0
        for _ in self.configs():
            count += 1
            if count > MAX_GRID:
                raise ConfigError(
                    f"{self.source}: space {self.name!r} has more than {MAX_GRID} grid "
                    "configurations: the "
                    "grid sampler would build every one (give its ranges fewer `grid` "
                    "values, or use the tpe or random sampler)"
                )
        return count

    def _enumerate(
        self, values_of: Callable[[Param], tuple[Scalar, ...]]
    ) -> Iterator[dict[str, Scalar]]:
        params = self.params
        values = {p.name: values_of(p) for p in params}

        def walk(i: int, config: dict[str, Scalar]) -> Iterator[dict[str, Scalar]]:
            if i == len(params):
                yield dict(config)
                return
            p = params[i]
            if not p.active(config):
                yield from walk(i + 1, config)
                return
            for v in values[p.name]:
                config[p.name] = v
                yield from walk(i + 1, config)
            config.pop(p.name, None)  # (no value: a knob the algorithm narrowed to none)

        return walk(0, dict(self.fixed))

    def check_knobs(self, known: tuple[str, ...]) -> None:
        """Every knob must be one the simulator knows; raises ConfigError naming the line."""
        lines = {p.name: p.line for p in self.params}
        for knob in self.knobs:
            if knob not in known:
                at = f"{self.source}:{lines[knob]}" if lines.get(knob) else self.source
                raise ConfigError(
                    f"{at}: space {self.name!r} sets knob {knob!r}, which this simulator does "
                    f"not know (known knobs: {', '.join(known)})"
                )

    def validate(self, build: Callable[[dict[str, Any]], Any] | None = None,
                 known: tuple[str, ...] | None = None) -> None:
        """Check the space against the simulator: known knobs, and every value usable.

        ``build`` turns a config into a strategy or raises ConfigError (default:
        ``simulator.Strategy.from_params``). A value that is rejected in every combination
        tried (e.g. a mapping the simulator lacks) is an error here, not a failed trial later;
        combinations that are only sometimes invalid become failed trials with their reason.
        """
        if build is None or known is None:
            from simulator import Strategy

            build = build or Strategy.from_params
            known = known or tuple(Strategy.KNOBS)
        self.check_knobs(known)
        rejected = [(p, v, reason) for p in self.params for v in p.corner_values()
                    for ok, reason in [self._probe(build, p, v)] if not ok]
        if rejected:
            # a knob whose every value is refused makes every other knob's probes fail too:
            # named is the first rejection whose reason names its own knob (w=3, not the
            # mapping='vwarp' every probe of which held w=3)
            def names(knob: str, reason: str | None) -> bool:
                return reason is not None and re.search(rf"\b{re.escape(knob)}\b",
                                                        reason) is not None

            own = next((r for r in rejected if names(r[0].name, r[2])), None)
            fixed = next((k for k, _ in self.fixed if names(k, rejected[0][2])), None)
            if own is None and fixed is not None:  # a fixed knob refused in every probe
                raise ConfigError(
                    f"{self.source}: space {self.name!r}: fixed {fixed}="
                    f"{dict(self.fixed)[fixed]!r} is rejected by the simulator: "
                    f"{rejected[0][2]}")
            never = next((r for r in rejected if r[2] is None), None)
            p, v, reason = never or own or rejected[0]
            if reason is None:  # no configuration of the space sets it: its `when`'s fault
                conditions = ", ".join(f"{k}: {list(vals) if len(vals) > 1 else vals[0]}"
                                       for k, vals in p.when)
                raise ConfigError(
                    f"{self.source}:{p.line}: space {self.name!r}: {p.name} can never be "
                    f"set: its `when` ({conditions}) never holds beside the other knobs' "
                    "conditions")
            raise ConfigError(
                f"{self.source}:{p.line}: space {self.name!r}: {p.name}={v!r} is rejected "
                f"by the simulator in every combination tried: {reason}"
            )
        if not self.params:
            try:
                build(dict(self.fixed))
            except WarpsweepError as exc:
                raise ConfigError(f"{self.source}: space {self.name!r}: {exc}") from None

    def _probe(self, build: Callable[[dict[str, Any]], Any], target: Param,
               value: Scalar) -> tuple[bool, str | None]:
        """Whether some configuration setting ``target`` to ``value`` builds; else the
        simulator's last reason, None where no configuration sets it at all."""
        candidates = self._corners_setting(target, value)
        reason = None
        for config in itertools.islice(candidates, PROBE_LIMIT):
            try:
                build(config)
                return True, ""
            except WarpsweepError as exc:
                reason = str(exc)
        return False, reason


def _without_dead(params: list[Param], fixed: dict[str, Scalar]) -> list[Param]:
    """Drop params whose ``when`` asks for a value its knob can no longer take."""
    possible: dict[str, tuple[Scalar, ...] | None] = {k: (v,) for k, v in fixed.items()}
    out = []
    for p in params:
        alive = all(
            k in possible and (possible[k] is None
                               or any(_member(v, possible[k]) for v in vals))
            for k, vals in p.when
        )
        if alive:
            out.append(p)
            possible[p.name] = _possible(p)
    return out


def _member(value: Any, allowed: tuple[Scalar, ...]) -> bool:
    return any(value == a and type(value) is type(a) or _same_number(value, a) for a in allowed)


def _same_number(a: Any, b: Any) -> bool:
    num = (int, float)
    return (isinstance(a, num) and isinstance(b, num) and not isinstance(a, bool)
            and not isinstance(b, bool) and a == b)


def available_spaces() -> list[str]:
    """Names of the spaces shipped in ``search_spaces/``."""
    return sorted(p.stem for p in SPACES_DIR.glob("*.yaml"))


def resolve_space_path(ref: str) -> Path:
    """A shipped space name or a path to a user's space file."""
    if not ref.strip():  # Path("") is the working directory: "cannot read '.'"
        raise ConfigError(f"no search space given; name one of {', '.join(available_spaces())} "
                          "or a space file")
    p = Path(ref)
    if p.suffix in (".yaml", ".yml") or "/" in ref:
        return p
    builtin = SPACES_DIR / f"{ref}.yaml"
    if builtin.exists():  # a shipped name is the shipped space, whatever the directory holds
        return builtin  # (a file "all" there had been used in its stead, under its name)
    if p.exists():
        return p
    raise ConfigError(
        f"unknown search space {ref!r}: not a file and not one of {', '.join(available_spaces())}"
    )


def load_space(ref: str | Path) -> SearchSpace:
    """Load and check the syntax of a space by name or path (see :meth:`SearchSpace.validate`);
    a ``Path`` is a file, never a shipped space's name."""
    if isinstance(ref, Path) and not ref.is_file():
        raise ConfigError(f"search space file {str(ref)!r} does not exist"
                          + (f" (for the shipped space {ref.name!r}, give its name as a string)"
                             if ref.name in available_spaces() else ""))
    path = resolve_space_path(str(ref))
    space = parse_space(load_yaml(path), default_name=path.stem)
    shipped = SPACES_DIR / f"{space.name}.yaml"
    if (shipped.exists() and path.resolve() != shipped.resolve()
            and space.digest != parse_space(load_yaml(shipped), shipped.stem).digest):
        # its rows would carry the shipped space's name: `space = 'vwarp'` would mix the two
        raise ConfigError(f"search space file {str(path)!r} is named {space.name!r}, as a "
                          "shipped space is, with other content: give it a name of its own "
                          "(`name:` in the file, else the file's name)")
    return space


def parse_space(doc: YamlDoc, default_name: str = "space") -> SearchSpace:
    """Build a SearchSpace from a loaded YAML document; errors name the key and line."""
    data = doc.data
    if not isinstance(data, dict):
        raise doc.error((), "a search space must be a mapping with `params` (and `fixed`)")
    for key in data:
        if key not in TOP_KEYS:
            raise doc.error((key,), f"unknown key {key!r} (allowed: {', '.join(TOP_KEYS)})")
    name = data.get("name", default_name)
    if not isinstance(name, str) or not name.replace("-", "_").replace("+", "").isidentifier():
        if "name" not in data:  # the file's name stands in: no key or line to point at
            raise doc.error((), f"a space's name must be a simple word, and with no `name:` "
                                f"key it is the file's, {name!r}: give the file a `name:`")
        raise doc.error(("name",), f"name must be a simple word, got {name!r}")
    if len(name) > MAX_NAME:  # it names the study's files: ENAMETOOLONG had stopped the run
        where = ("name",) if "name" in data else ()
        raise doc.error(where, f"a space's name must be at most {MAX_NAME} characters (it "
                               f"names the study's files), got {len(name)}")
    description = data.get("description") or ""
    fixed_raw = data.get("fixed") or {}
    if not isinstance(fixed_raw, dict):
        raise doc.error(("fixed",), f"`fixed` must be a mapping knob: value, got {fixed_raw!r}")
    fixed: dict[str, Scalar] = {}
    for knob, value in fixed_raw.items():
        _check_knob_name(doc, ("fixed", knob), knob)
        fixed[knob] = _scalar(doc, ("fixed", knob), value)
    params_raw = data.get("params") or {}
    if not isinstance(params_raw, dict):
        raise doc.error(("params",), "`params` must be a mapping knob: definition")
    params: list[Param] = []
    defined: dict[str, Param | Scalar] = dict(fixed)
    for knob, spec in params_raw.items():
        path = ("params", knob)
        _check_knob_name(doc, path, knob)
        if knob in fixed:
            raise doc.error(path, f"knob {knob!r} is both fixed and a param")
        p = _parse_param(doc, path, knob, spec, defined)
        params.append(p)
        defined[knob] = p
    if not params and not fixed:
        raise doc.error((), "the space sets no knob (empty `fixed` and `params`)")
    return SearchSpace(name, doc.source, str(description).strip(), tuple(fixed.items()),
                       tuple(params))


def _check_knob_name(doc: YamlDoc, path: tuple, knob: Any) -> None:
    if not isinstance(knob, str) or not knob.isidentifier():
        raise doc.error(path, f"knob names must be identifiers, got {knob!r}")


def _scalar(doc: YamlDoc, path: tuple, value: Any) -> Scalar:
    if value is None or isinstance(value, (bool, int, float, str)):
        if isinstance(value, float) and not math.isfinite(value):
            raise doc.error(path, f"values must be finite, got {value!r}")
        return value
    raise doc.error(path, f"expected a single value (number, string, bool or null), got {value!r}")


def _parse_param(doc: YamlDoc, path: tuple, knob: str, spec: Any,
                 defined: dict[str, Param | Scalar]) -> Param:
    line = doc.line(path)
    if isinstance(spec, list):
        spec = {"choices": spec}
    elif not isinstance(spec, dict):
        spec = {"value": spec}
    kinds = [k for k in spec if k in KINDS]
    for key in spec:
        if key not in KINDS and key not in OPTIONS:
            raise doc.error((*path, key),
                            f"unknown key {key!r} (allowed: {', '.join(KINDS + OPTIONS)})")
    if len(kinds) != 1:
        raise doc.error(path, f"give exactly one of {', '.join(KINDS)}, got {kinds or 'none'}")
    kind = kinds[0]
    raw = spec[kind]
    fields: dict[str, Any] = {"name": knob, "kind": kind, "line": line}
    if kind == "choices":
        if not isinstance(raw, list) or not raw:
            raise doc.error((*path, kind), f"`choices` must be a non-empty list, got {raw!r}")
        choices = tuple(_scalar(doc, (*path, kind, i), v) for i, v in enumerate(raw))
        if len(set(map(repr, choices))) != len(choices):
            raise doc.error((*path, kind), f"duplicate values in choices {list(choices)!r}")
        fields["choices"] = choices
    elif kind == "value":
        fields["value"] = _scalar(doc, (*path, kind), raw)
    else:
        fields.update(_parse_range(doc, path, kind, raw, spec))
    for opt in ("log", "step", "grid"):
        if opt in spec and kind in ("choices", "value"):
            raise doc.error((*path, opt), f"`{opt}` applies only to int and float ranges")
    if "powers_of_two" in spec:
        fields["powers_of_two"] = _parse_powers_of_two(doc, path, kind, spec)
    fields["when"] = _parse_when(doc, (*path, "when"), spec.get("when"), defined)
    return Param(**fields)


def _parse_range(doc: YamlDoc, path: tuple, kind: str, raw: Any, spec: dict) -> dict[str, Any]:
    at = (*path, kind)
    number = int if kind == "int" else (int, float)
    if (not isinstance(raw, list) or len(raw) != 2
            or not all(isinstance(v, number) and not isinstance(v, bool) for v in raw)):
        hint = ""
        if isinstance(raw, list) and any(isinstance(v, str) and _is_float_text(v) for v in raw):
            hint = " (a number in quotes is text: write it unquoted)"
        raise doc.error(at, f"`{kind}` must be [low, high] {kind} values, got {raw!r}{hint}")
    low, high = raw
    if not all(math.isfinite(v) for v in raw):  # a sampler cannot draw from it
        raise doc.error(at, f"`{kind}` bounds must be finite, got {raw!r}")
    if low > high:
        raise doc.error(at, f"`low <= high` must hold, but got (low={low}, high={high})")
    log = spec.get("log", False)
    if not isinstance(log, bool):
        raise doc.error((*path, "log"), f"`log` must be true or false, got {log!r}")
    if log and low <= 0:
        raise doc.error(at, f"a log range needs low > 0, got low={low}")
    step = spec.get("step")
    if step is not None:
        if not isinstance(step, number) or isinstance(step, bool) or step <= 0:
            raise doc.error((*path, "step"), f"`step` must be a positive {kind}, got {step!r}")
        if log:
            raise doc.error((*path, "step"), "`step` and `log: true` cannot be combined")
        if low < high and step > high - low:  # Optuna would shrink the range to [low, low]
            raise doc.error((*path, "step"), f"`step` {step} is wider than the range "
                                             f"[{low}, {high}]: it holds only {low}")
        span = _decimal(high) - _decimal(low)
        if span % _decimal(step):  # Optuna would lower high, with a warning
            top = _decimal(low) + span // _decimal(step) * _decimal(step)
            raise doc.error((*path, "step"), f"`step` {step} does not divide the range "
                                             f"[{low}, {high}]: {high} could never be drawn "
                                             f"(the last step reaches {top}); make the range "
                                             "whole steps long")
    grid = spec.get("grid")
    if grid is not None:
        if not isinstance(grid, list) or not grid:
            raise doc.error((*path, "grid"), f"`grid` must be a non-empty list, got {grid!r}")
        for i, v in enumerate(grid):
            if not isinstance(v, number) or isinstance(v, bool) or not low <= v <= high:
                hint = (" (a number in quotes is text: write it unquoted)"
                        if isinstance(v, str) and _is_float_text(v) else "")
                raise doc.error((*path, "grid", i),
                                f"grid value {v!r} is not a {kind} in [{low}, {high}]{hint}")
            if step is not None and (_decimal(v) - _decimal(low)) % _decimal(step):
                # Optuna would warn and draw it off the steps
                raise doc.error((*path, "grid", i),
                                f"grid value {v!r} is not on the range's steps ({low} + a "
                                f"multiple of {step})")
        grid = tuple(grid)
    if kind == "float":
        low, high = float(low), float(high)
        step = float(step) if step is not None else None
    return {"low": low, "high": high, "log": log, "step": step, "grid": grid}


def _is_float_text(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _parse_powers_of_two(doc: YamlDoc, path: tuple, kind: str, spec: dict) -> bool:
    at = (*path, "powers_of_two")
    flag = spec["powers_of_two"]
    if not isinstance(flag, bool):
        raise doc.error(at, f"`powers_of_two` must be true or false, got {flag!r}")
    if not flag:
        return False
    if kind != "int":
        raise doc.error(at, "`powers_of_two` applies only to int ranges")
    for opt in ("log", "step", "grid"):
        if opt in spec:
            raise doc.error((*path, opt), f"`{opt}` cannot be combined with `powers_of_two` "
                            "(its values are the powers of two from low to high)")
    for end in spec[kind]:
        if end < 1 or end & (end - 1):
            raise doc.error((*path, kind), f"a powers_of_two range needs powers of two as "
                            f"its ends, got {end}")
    return True


def _parse_when(doc: YamlDoc, path: tuple, raw: Any,
                defined: dict[str, Param | Scalar]) -> tuple[tuple[str, tuple[Scalar, ...]], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not raw:
        raise doc.error(path, f"`when` must be a mapping knob: value(s), got {raw!r}")
    out = []
    for knob, vals in raw.items():
        if knob not in defined:
            raise doc.error((*path, knob), f"`when` refers to {knob!r}, which is not a fixed "
                            "knob or a param declared above it")
        values = tuple(vals) if isinstance(vals, list) else (vals,)
        if not values:
            raise doc.error((*path, knob), f"`when: {{{knob}: []}}` lists no value, so it "
                                           "never holds: list the values it applies for")
        values = tuple(_scalar(doc, (*path, knob), v) for v in values)
        ref = defined[knob]
        possible = _possible(ref)
        for v in values:
            if possible is not None and not _member(v, possible):
                raise doc.error((*path, knob),
                                f"{knob} can never be {v!r} (its values: {list(possible)!r})")
            if possible is None and not _in_range(ref, v):
                raise doc.error((*path, knob), f"{knob} can never be {v!r} (its range: "
                                               f"{_describe_range(ref)})")
        if isinstance(ref, Param) and ref.kind == "float" and ref.low != ref.high:
            if not ref.step:  # (reviews CR11, CR13: accepted, it never held under tpe)
                raise doc.error((*path, knob), f"{knob} is a float range without a `step`: "
                                               "tpe and random draw any real of it, never "
                                               "one value exactly (its `grid` is the grid "
                                               "sampler's alone); give it a `step`, or list "
                                               "`choices`")
            # a value as written (a grid's) and as the samplers spell that step (0.1 + 2 x
            # 0.1 is 0.30000000000000004; the last step is `high`): reviews CR11, CR12
            values = tuple(dict.fromkeys(
                spelled for v in values
                for spelled in (v, ref.float_step(round((v - ref.low) / ref.step)))))
        out.append((knob, values))
    return tuple(out)


def _possible(ref: Param | Scalar) -> tuple[Scalar, ...] | None:
    if not isinstance(ref, Param):
        return (ref,)
    if ref.kind in ("choices", "value"):
        return ref.grid_values()
    return None


def float_step_count(low: float, high: float, step: float) -> int:
    """How many steps ``[low, high]`` holds, counted in decimal as Optuna counts them
    (``(1e6 + 0.002 - 1e6) / 0.001`` is 1.9999998 in binary floats)."""
    return int((_decimal(high) - _decimal(low)) // _decimal(step)) + 1


def float_step_value(low: float, high: float, step: float, k: int) -> float:
    """The k-th step of ``[low, high]`` as Optuna draws it: ``low + k x step``, the last one
    clipped at ``high`` (0.1 + 6 x 0.1 is above 0.7)."""
    return min(low + k * step, high)


def float_step_index(low: float, high: float, step: float, value: float) -> int | None:
    """Which step of ``[low, high]`` ``value`` is, as written (0.3) or as Optuna draws it
    (0.30000000000000004), or None: no step."""
    k = round((value - low) / step)
    if not 0 <= k < float_step_count(low, high, step):
        return None
    if value == float_step_value(low, high, step, k) or \
            _decimal(value) == _decimal(low) + k * _decimal(step):
        return k
    return None


def _decimal(x: float) -> decimal.Decimal:
    return decimal.Decimal(str(x))


def _in_range(ref: Param, value: Any) -> bool:
    """Whether a range knob can take ``value`` (within its bounds, whole where it is an int
    range, a power of two where its values are)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    if not ref.low <= value <= ref.high:
        return False
    if ref.kind == "int" and value != int(value):
        return False
    if ref.powers_of_two:
        return value >= 1 and int(value) & (int(value) - 1) == 0
    if ref.step is not None and ref.kind == "float":
        return float_step_index(ref.low, ref.high, ref.step, value) is not None
    if ref.step is not None:
        return (value - ref.low) % ref.step == 0
    return True


def _describe_range(ref: Param) -> str:
    text = f"{ref.kind} [{ref.low}, {ref.high}]"
    return text + (", powers of two" if ref.powers_of_two else
                   f", step {ref.step}" if ref.step is not None else "")


def sample_configs(space: SearchSpace, n: int, seed: int = 0) -> list[dict[str, Scalar]]:
    """``n`` random configurations (for tests and benchmarks without Optuna)."""
    rng = random.Random(seed)

    class _Draw:
        def suggest_categorical(self, name: str, choices: list) -> Any:
            return rng.choice(choices)

        def suggest_int(self, name: str, low: int, high: int, step: int = 1,
                        log: bool = False) -> int:
            if log:
                return min(high, int(round(math.exp(rng.uniform(math.log(low),
                                                                 math.log(high))))))
            return rng.randrange(low, high + 1, step)

        def suggest_float(self, name: str, low: float, high: float, step: float | None = None,
                          log: bool = False) -> float:
            if log:
                return math.exp(rng.uniform(math.log(low), math.log(high)))
            return rng.uniform(low, high)

    return [space.suggest(_Draw()) for _ in range(n)]
