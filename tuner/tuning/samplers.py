"""The samplers a study can use, by name, with a clear error for unknown or unavailable ones."""

from __future__ import annotations

import bisect
import copy
import importlib.util
import math
import random
import warnings
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.distributions import CategoricalDistribution
from optuna.distributions import FloatDistribution
from optuna.distributions import IntDistribution
from optuna.samplers import BaseSampler
from optuna.trial import TrialState

from search_spaces.loader import SearchSpace
from search_spaces.loader import float_step_count
from search_spaces.loader import float_step_value
from simulator.errors import ConfigError


@dataclass(frozen=True)
class SamplerInfo:
    """A registered sampler: how to build it and what it is for."""

    name: str
    doc: str
    build: Callable[[int, SearchSpace], optuna.samplers.BaseSampler]
    exhaustive: bool = False
    requires: str | None = None


try:  # Optuna's own group decomposition, which TPE(group=True) keeps on the sampler
    from optuna.search_space.group_decomposed import _GroupDecomposedSearchSpace
except ImportError:  # pragma: no cover - a future Optuna that moved it: TPE as shipped
    _GroupDecomposedSearchSpace = None


if _GroupDecomposedSearchSpace is not None:

    class IncrementalGroups(_GroupDecomposedSearchSpace):
        """Optuna's group decomposition of a conditional space, adding each finished trial
        once: Optuna adds every trial again at every ask, O(trials^2) over a study
        (optuna/optuna#2649), the larger part of a TPE trial's cost at a few hundred trials.
        A trial's parameters refine the partition idempotently and in any order, so the
        groups, and the trials TPE samples from them, are the same. The copy handed out is
        made again only after a trial was added (TPE reads it, never changes it)."""

        def __init__(self, include_pruned: bool = False) -> None:
            super().__init__(include_pruned)
            self._added: set[int] = set()
            self._copy = None

        def calculate(self, study: optuna.Study, use_cache: bool = False):
            if self._study_id is None:
                self._study_id = study._study_id
            elif self._study_id != study._study_id:
                raise ValueError("IncrementalGroups cannot handle multiple studies")
            states = ((TrialState.COMPLETE, TrialState.PRUNED) if self._include_pruned
                      else (TrialState.COMPLETE,))
            for trial in study._get_trials(deepcopy=False, states=states, use_cache=use_cache):
                if trial.number not in self._added:
                    self._added.add(trial.number)
                    self._search_space.add_distributions(trial.distributions)
                    self._copy = None
            if self._copy is None:
                self._copy = copy.deepcopy(self._search_space)
            return self._copy


def _tpe(seed: int, space: SearchSpace) -> optuna.samplers.BaseSampler:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        sampler = optuna.samplers.TPESampler(
            seed=seed, multivariate=True, group=space.has_conditionals, constant_liar=True,
        )
    groups = getattr(sampler, "_group_decomposed_search_space", None)
    if _GroupDecomposedSearchSpace is not None and type(groups) is _GroupDecomposedSearchSpace:
        sampler._group_decomposed_search_space = IncrementalGroups(groups._include_pruned)
    return sampler


def _random(seed: int, space: SearchSpace) -> optuna.samplers.BaseSampler:
    return optuna.samplers.RandomSampler(seed=seed)


def _gp(seed: int, space: SearchSpace) -> optuna.samplers.BaseSampler:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.GPSampler(seed=seed)


SAMPLERS: dict[str, SamplerInfo] = {
    s.name: s
    for s in (
        SamplerInfo("tpe", "Tree-structured Parzen estimator, seeded (default)", _tpe),
        SamplerInfo("random", "uniform random sampling, seeded", _random),
        # The grid is enqueued by the study (every configuration, conditions honoured); the
        # sampler itself only answers if asked beyond the grid.
        SamplerInfo("grid", "every configuration of the space's finite values (ground truth)",
                    _random, exhaustive=True),
        SamplerInfo("gp", "Gaussian-process Bayesian optimisation (needs torch)", _gp,
                    requires="torch"),
    )
}


def sampler_info(name: str) -> SamplerInfo:
    """Look up a sampler; unknown or not installable ones raise ConfigError."""
    info = SAMPLERS.get(name)
    if info is None:
        raise ConfigError(f"unknown sampler {name!r}; choose one of {', '.join(SAMPLERS)}")
    if info.requires and importlib.util.find_spec(info.requires) is None:
        raise ConfigError(
            f"sampler {name!r} needs the {info.requires!r} package, which is not installed "
            f"(pip install {info.requires}); use tpe or random instead"
        )
    return info


def make_sampler(name: str, seed: int, space: SearchSpace) -> optuna.samplers.BaseSampler:
    """Build the named sampler for a study."""
    return sampler_info(name).build(seed, space)


class _Recorder:
    """Stands in for a trial to read the Optuna distribution a knob is drawn from."""

    def __init__(self) -> None:
        self.drawn: tuple[str, BaseDistribution] | None = None

    def suggest_categorical(self, name: str, choices: list) -> Any:
        self.drawn = (name, CategoricalDistribution(choices))
        return choices[0]

    def suggest_int(self, name: str, low: int, high: int, step: int = 1,
                    log: bool = False) -> int:
        self.drawn = (name, IntDistribution(low, high, log=log, step=step))
        return low

    def suggest_float(self, name: str, low: float, high: float, step: float | None = None,
                      log: bool = False) -> float:
        self.drawn = (name, FloatDistribution(low, high, log=log, step=step))
        return low


def drawn_distributions(space: SearchSpace) -> dict[str, BaseDistribution]:
    """Each knob Optuna draws, by its Optuna name (``log2_chunk``), with its distribution."""
    out: dict[str, BaseDistribution] = {}
    for p in space.params:
        if p.suggested:
            recorder = _Recorder()
            p.suggest(recorder)
            name, dist = recorder.drawn
            out[name] = dist
    return out


def user_distributions(space: SearchSpace) -> dict[str, BaseDistribution]:
    """Each knob Optuna draws, as the journal holds it: by the knob's own name, a powers-of-two
    range as the integers it takes (``chunk`` from 1 to 2048, log-scaled)."""
    drawn = drawn_distributions(space)
    out: dict[str, BaseDistribution] = {}
    for p in space.params:
        if not p.suggested:
            continue
        dist = drawn[p.optuna_name]
        if p.powers_of_two:
            dist = IntDistribution(2 ** dist.low, 2 ** dist.high, log=True)
        out[p.name] = dist
    return out


class UserNamedTrial:
    """An Optuna trial that the space draws from under Optuna's names (``log2_chunk``) and that
    records each knob under its own name and value (``chunk=64``), as the journal shows it."""

    def __init__(self, trial: optuna.trial.Trial, space: SearchSpace) -> None:
        self._trial = trial
        self._powers = {p.optuna_name: p for p in space.params if p.powers_of_two}

    def suggest_int(self, name: str, low: int, high: int, step: int = 1,
                    log: bool = False) -> int:
        """A powers-of-two knob is recorded as its value, and returned as its exponent."""
        p = self._powers.get(name)
        if p is None:
            return self._trial.suggest_int(name, low, high, step=step, log=log)
        value = self._trial.suggest_int(p.name, 2 ** low, 2 ** high, log=True)
        return min(max(round(math.log2(value)), low), high)

    def suggest_categorical(self, name: str, choices: list) -> Any:
        """As Optuna's."""
        return self._trial.suggest_categorical(name, choices)

    def suggest_float(self, name: str, low: float, high: float, step: float | None = None,
                      log: bool = False) -> float:
        """As Optuna's."""
        return self._trial.suggest_float(name, low, high, step=step, log=log)


class _DrawnView:
    """A study as the wrapped sampler sees it: every trial's knobs under Optuna's names, as
    the space draws them (``log2_chunk=6`` for the journal's ``chunk=64``), so TPE keeps the
    12-value ordered integer it samples fastest; and, just before each trial, its repeats:
    the tried configurations the sampler proposed for it, each with the result the study
    holds, as the trials TPE would have seen had each repeat been a trial of its own (before
    issue 42 they were, in the journal). Trials are renumbered to keep that order.

    Converted trials are kept per trial number with the study's trial object they were made
    from, and made again only when that object changed: Optuna's storages replace a trial's
    ``FrozenTrial`` on every change (copy on write), so the same object is the same trial.
    The listing is kept too, and listed again only from the first trial that changed (or
    whose repeats did): the sampler lists the trials several times per ask (issue 44)."""

    def __init__(self, study: optuna.Study, space: SearchSpace) -> None:
        self._study = study
        self._powers = {p.name: p for p in space.params if p.powers_of_two}
        self._drawn = drawn_distributions(space)
        # trial number -> (study's trial, renumbered as, converted)
        self._cache: dict[int, tuple[optuna.trial.FrozenTrial, int, optuna.trial.FrozenTrial]] = {}
        # trial number -> (study's trial, repeats before it, its repeats' count, the trials
        # listed for it: its repeats, then itself)
        self._listed: dict[int, tuple[optuna.trial.FrozenTrial, int, int,
                                      list[optuna.trial.FrozenTrial]]] = {}
        self._repeats: dict[int, list[tuple[dict[str, Any], list[float] | None]]] = {}
        self._prefix: tuple[list[int], list[int]] | None = None  # see number()
        # the listing (_get_trials): the study's trials it was made from, where each one's
        # entries start, the entries, those of given states; trials from _stale_from on
        # (a repeat was added) are listed again
        self._src: list[optuna.trial.FrozenTrial] = []
        self._starts: list[int] = []
        self._full: list[optuna.trial.FrozenTrial] = []
        self._filtered: dict[frozenset, list[optuna.trial.FrozenTrial]] = {}
        self._stale_from = 0
        for t in study._get_trials(deepcopy=False):
            for r in t.user_attrs.get(REPEATED_ATTR) or []:
                self._repeats.setdefault(t.number, []).append((r["params"], r["values"]))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._study, name)

    def add_repeat(self, trial: optuna.trial.FrozenTrial, params: dict[str, Any],
                   values: list[float] | None) -> None:
        """A tried configuration proposed for ``trial`` (Optuna-named ``params``) and its
        result (None: failed); kept on the trial in the journal for a resumed study."""
        mine = self._repeats.setdefault(trial.number, [])
        mine.append((params, values))
        self._prefix = None
        self._stale_from = min(self._stale_from, trial.number)  # (its user attribute
        # below replaces the trial's object too; the listing does not rely on that)
        self._study._storage.set_trial_user_attr(
            trial._trial_id, REPEATED_ATTR, [{"params": p, "values": v} for p, v in mine])

    def number(self, t: optuna.trial.FrozenTrial) -> int:
        """``t``'s number with the repeats before it counted in (a binary search in the
        repeats' running totals, worked out again after a repeat is added)."""
        if self._prefix is None:
            numbers = sorted(self._repeats)
            totals, total = [], 0
            for n in numbers:
                total += len(self._repeats[n])
                totals.append(total)
            self._prefix = (numbers, totals)
        numbers, totals = self._prefix
        i = bisect.bisect_right(numbers, t.number)
        return t.number + (totals[i - 1] if i else 0)

    def convert(self, t: optuna.trial.FrozenTrial,
                number: int | None = None) -> optuna.trial.FrozenTrial:
        """``t`` renumbered, its powers-of-two knobs under Optuna's names (a trial of a
        journal written before them, already so named, is kept)."""
        number = self.number(t) if number is None else number
        cached = self._cache.get(t.number)
        if cached is not None and cached[0] is t and cached[1] == number:
            return cached[2]
        params, dists = {}, {}
        for k, v in t.params.items():
            p = self._powers.get(k)
            if p is None:
                params[k], dists[k] = v, t.distributions[k]
            else:
                params[p.optuna_name] = round(math.log2(v))
                dists[p.optuna_name] = self._drawn[p.optuna_name]
        out = optuna.trial.FrozenTrial(
            number=number, state=t.state, value=None, values=t.values,
            datetime_start=t.datetime_start, datetime_complete=t.datetime_complete,
            params=params, distributions=dists, user_attrs=t.user_attrs,
            system_attrs=t.system_attrs, intermediate_values=t.intermediate_values,
            trial_id=t._trial_id)
        self._cache[t.number] = (t, number, out)
        return out

    def _listed_for(self, t: optuna.trial.FrozenTrial,
                    offset: int) -> tuple[int, list[optuna.trial.FrozenTrial]]:
        """The trials listed for ``t`` (its repeats, then itself), ``offset`` repeats before
        it: made again only if ``t``, the repeats before it or its own changed."""
        repeats = self._repeats.get(t.number, ())
        entry = self._listed.get(t.number)
        if entry is not None and entry[0] is t and entry[1] == offset \
                and entry[2] == len(repeats):
            return entry[2], entry[3]
        listed = []
        for i, (params, values) in enumerate(repeats):
            state = TrialState.COMPLETE if values is not None else TrialState.FAIL
            listed.append(optuna.trial.FrozenTrial(
                number=t.number + offset + i, state=state, value=None, values=values,
                datetime_start=t.datetime_start, datetime_complete=t.datetime_start,
                params=params, distributions={k: self._drawn[k] for k in params},
                user_attrs={}, system_attrs={}, intermediate_values={},
                trial_id=t._trial_id))
        listed.append(self.convert(t, t.number + offset + len(repeats)))
        self._listed[t.number] = (t, offset, len(repeats), listed)
        return len(repeats), listed

    def _get_trials(self, deepcopy: bool = True, states: Any = None,
                    use_cache: bool = False) -> list[optuna.trial.FrozenTrial]:
        src = self._study._get_trials(deepcopy=False, use_cache=use_cache)
        prev = self._src
        n = min(len(src), len(prev), self._stale_from)
        k = next((i for i in range(n) if src[i] is not prev[i]), n)  # first changed trial
        if k < len(prev) or len(src) > len(prev):  # list again from there on
            start = self._starts[k] if k < len(self._starts) else len(self._full)
            del self._full[start:]
            del self._starts[k:]
            offset = start - k  # repeats before trial k
            for i in range(k, len(src)):
                t = src[i]
                if t.number != i:  # not numbered by position: listed whole, nothing kept
                    self._src, self._starts, self._full = [], [], []
                    self._filtered.clear()
                    self._stale_from = 0
                    return self._listing(src, states)
                self._starts.append(len(self._full))
                count, listed = self._listed_for(t, offset)
                self._full += listed
                offset += count
            self._src = list(src)
            self._filtered.clear()
        self._stale_from = len(src)
        if states is None:
            return list(self._full)
        key = frozenset(states)
        filtered = self._filtered.get(key)
        if filtered is None:
            filtered = self._filtered[key] = [x for x in self._full if x.state in key]
        return list(filtered)

    def _listing(self, src: list[optuna.trial.FrozenTrial],
                 states: Any) -> list[optuna.trial.FrozenTrial]:
        """The listing of ``src`` made whole, of the given states (None: all)."""
        out: list[optuna.trial.FrozenTrial] = []
        offset = 0
        for t in src:
            count, listed = self._listed_for(t, offset)
            offset += count
            out += [x for x in listed if states is None or x.state in states]
        return out

    def get_trials(self, deepcopy: bool = True,
                   states: Any = None) -> list[optuna.trial.FrozenTrial]:
        """The trials, converted, repeats included."""
        return self._get_trials(deepcopy, states)

    @property
    def trials(self) -> list[optuna.trial.FrozenTrial]:
        """The trials, converted, repeats included."""
        return self._get_trials()


# Whether a proposal of a tried configuration is replaced by an untried one (off: answered
# from the study as a `duplicate`, as before issue 42; bench/bench_tuner.py compares the two).
REPLACE_REPEATS = True
# A trial's user attribute holding its repeats (Optuna-named params and values).
REPEATED_ATTR = "repeated"
# Proposals asked of the wrapped sampler for one trial, each seeing the repeats before it,
# before an untried neighbour of the last is taken instead. 1 (a neighbour at the first
# repeat) found bests as good as answering repeats from the study in 16 of 18 60-trial vwarp
# studies (3 graphs x 6 seeds), mean gap to the grid optimum 1.75% against 4.31%; 3 did in 17
# but with a 3.05% mean gap and more repeats; 10 draws exactly what answering them did.
PROPOSALS_PER_TRIAL = 1
# How far (knob changes) an untried neighbour is looked for, and how many configurations of
# each ring at most, before drawing untried configurations at random.
NEIGHBOUR_DEPTH = 3
NEIGHBOUR_RING = 400
RANDOM_TRIES = 200


class UntriedSampler(BaseSampler):
    """Wraps a sampler so that a trial gets a configuration not tried yet. When the wrapped
    sampler proposes one already tried (TPE converging on a finite space asks for its best
    again and again), the proposal is shown to it as a trial with the study's result for that
    configuration (as a repeated trial was before) and it is asked again, up to
    ``PROPOSALS_PER_TRIAL`` times; then a seeded random choice among the last proposal's
    untried neighbours (one knob moved a step: the next choice or power of two) is taken,
    then among theirs, then an untried configuration at random. Each repeat is counted on the
    trial (``repeats``) and kept in its user attributes (``repeated``), never a trial itself.

    The whole configuration is proposed at once, as relative parameters, under the knobs' own
    names (``UserNamedTrial``); the wrapped sampler sees the trials under the names the space
    draws (``_DrawnView``). Enqueued trials (the grid, requeued trials) never reach it.
    """

    def __init__(self, inner: BaseSampler, space: SearchSpace, seed: int,
                 key: Callable[[dict[str, Any]], tuple[Any, bool]],
                 tried: Callable[[Any], bool],
                 answer: Callable[[Any], tuple[bool, list[float] | None]],
                 trial_tried: Callable[[Any], bool] | None = None) -> None:
        self.inner = inner
        self._space = space
        self._seed = seed
        self._key = key
        self._tried = tried
        self._trial_tried = trial_tried or tried
        self._answer = answer
        self._drawn = drawn_distributions(space)
        self._user = user_distributions(space)
        self._inner_space: dict[str, BaseDistribution] = {}
        self._view: _DrawnView | None = None
        self.repeats: dict[int, int] = {}

    def _view_of(self, study: optuna.Study) -> _DrawnView:
        if self._view is None or self._view._study is not study:
            self._view = _DrawnView(study, self._space)
        return self._view

    def reseed_rng(self) -> None:
        """Reseed the wrapped sampler."""
        self.inner.reseed_rng()

    def before_trial(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        """The wrapped sampler's."""
        self.inner.before_trial(self._view_of(study), trial)

    def after_trial(self, study: optuna.Study, trial: optuna.trial.FrozenTrial,
                    state: TrialState, values: Sequence[float] | None) -> None:
        """The wrapped sampler's, on the converted trial."""
        view = self._view_of(study)
        self.inner.after_trial(view, view.convert(trial), state, values)

    def infer_relative_search_space(self, study: optuna.Study,
                                    trial: optuna.trial.FrozenTrial
                                    ) -> dict[str, BaseDistribution]:
        """Every knob the space draws (the configuration is proposed whole)."""
        view = self._view_of(study)
        self._inner_space = self.inner.infer_relative_search_space(view, view.convert(trial))
        return dict(self._user)

    def sample_relative(self, study: optuna.Study, trial: optuna.trial.FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        """The wrapped sampler's configuration, or an untried one near it."""
        view = self._view_of(study)
        for attempt in range(PROPOSALS_PER_TRIAL):
            frozen = view.convert(trial)
            if attempt:
                self._inner_space = self.inner.infer_relative_search_space(view, frozen)
            config, values = self._propose(view, frozen)
            key, _ = self._key(config)
            if not REPLACE_REPEATS or not self._tried(key):
                return self._journal_params(config)
            self.repeats[trial.number] = self.repeats.get(trial.number, 0) + 1
            known, result = self._answer(key)
            if known:
                view.add_repeat(trial, values, result)
        rng = random.Random(f"warpsweep-untried|{self._seed}|{trial.number}")
        # at a finite space's end, a configuration only a reference ran: answered from it, it
        # counts as the space's cap counts it (else repeats until 50 in a row; probe SPACE)
        # and last, an invalid one (the cap counts each; it fails once: review CR11)
        return self._journal_params(self._untried_near(values, rng, self._tried)
                                    or self._untried_near(values, rng, self._trial_tried)
                                    or self._untried_near(values, rng, self._trial_tried,
                                                          valid_only=False)
                                    or config)

    def _propose(self, view: _DrawnView, frozen: optuna.trial.FrozenTrial
                 ) -> tuple[dict[str, Any], dict[str, Any]]:
        relative = (self.inner.sample_relative(view, frozen, self._inner_space)
                    if self._inner_space else {})

        def draw(name: str, dist: BaseDistribution) -> Any:
            if name in relative and dist._contains(dist.to_internal_repr(relative[name])):
                return relative[name]  # (a choice may be None: no deferring)
            return self.inner.sample_independent(view, frozen, name, dist)

        return self._walk(draw)

    def sample_independent(self, study: optuna.Study, trial: optuna.trial.FrozenTrial,
                           param_name: str, param_distribution: BaseDistribution) -> Any:
        """A knob left out of the proposal: drawn by the wrapped sampler under the name and
        distribution it knows, returned as the journal holds it."""
        view = self._view_of(study)
        p = next((p for p in self._space.params if p.name == param_name and p.powers_of_two),
                 None)
        if p is None:
            return self.inner.sample_independent(view, view.convert(trial), param_name,
                                                 param_distribution)
        exponent = self.inner.sample_independent(view, view.convert(trial), p.optuna_name,
                                                  self._drawn[p.optuna_name])
        return p.config_value(exponent)

    # -- configurations --------------------------------------------------------------------
    def _walk(self, draw: Callable[[str, BaseDistribution], Any]
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        """A configuration (knob -> value) and its drawn values (Optuna name -> value), each
        active knob drawn in the space's order."""
        config: dict[str, Any] = dict(self._space.fixed)
        values: dict[str, Any] = {}
        for p in self._space.params:
            if not p.active(config):
                continue
            if not p.suggested:
                config[p.name] = p.value
                continue
            value = draw(p.optuna_name, self._drawn[p.optuna_name])
            values[p.optuna_name] = value
            config[p.name] = p.config_value(value)
        return config, values

    def _journal_params(self, config: dict[str, Any]) -> dict[str, Any]:
        return {p.name: config[p.name] for p in self._space.params
                if p.suggested and p.name in config}

    def _untried_near(self, values: dict[str, Any], rng: random.Random,
                      tried: Callable[[Any], bool], valid_only: bool = True
                      ) -> dict[str, Any] | None:
        """A configuration not ``tried`` (and valid, with ``valid_only``), as few knob steps
        from ``values`` as found."""
        ring = [values]
        seen: set[Any] = set()
        for _ in range(NEIGHBOUR_DEPTH):
            found, nxt = [], []
            for base in ring:
                for name, value in base.items():
                    for other in _steps(self._drawn[name], value):
                        moved = dict(base)
                        moved[name] = other
                        config, drawn = self._walk(
                            lambda n, d, moved=moved: moved[n] if n in moved
                            else _random_value(d, rng))
                        key, valid = self._key(config)
                        if key in seen:
                            continue
                        seen.add(key)
                        nxt.append(drawn)
                        if (valid or not valid_only) and not tried(key):
                            found.append(config)
            if found:
                return rng.choice(found)
            rng.shuffle(nxt)
            ring = nxt[:NEIGHBOUR_RING]
            if not ring:
                break
        for _ in range(RANDOM_TRIES):
            config, _ = self._walk(lambda n, d: _random_value(d, rng))
            key, valid = self._key(config)
            if (valid or not valid_only) and not tried(key):
                return config
        return None


def _steps(dist: BaseDistribution, value: Any) -> list[Any]:
    """The values one step from ``value``: the neighbouring choices of an ordered (numeric)
    choice, any other of a categorical one; the next integer (or power of two, for a log
    range), a sixteenth of a float range."""
    if isinstance(dist, CategoricalDistribution):
        choices = list(dist.choices)
        if value not in choices:
            return []
        i = choices.index(value)
        ordered = all(c is None or (isinstance(c, int | float) and not isinstance(c, bool))
                      for c in choices)
        if ordered:
            return [choices[j] for j in (i - 1, i + 1) if 0 <= j < len(choices)]
        return [c for c in choices if c != value]
    if isinstance(dist, IntDistribution):
        cands = [value // 2, value * 2] if dist.log else [value - dist.step, value + dist.step]
        return [v for v in cands if dist.low <= v <= dist.high and v != value]
    if isinstance(dist, FloatDistribution):
        if dist.step:
            return _float_steps_from(dist, value)
        if dist.log:
            f = (dist.high / dist.low) ** (1 / 16)
            cands = [value / f, value * f]
        else:
            d = (dist.high - dist.low) / 16
            cands = [value - d, value + d]
        return [v for v in cands if dist.low <= v <= dist.high and v != value]
    return []


def _float_steps_from(dist: FloatDistribution, value: float) -> list[float]:
    """The steps of a stepped float range a sixteenth of it (at least one step) from
    ``value``, as Optuna draws them."""
    count = float_step_count(dist.low, dist.high, dist.step)
    k = round((value - dist.low) / dist.step)
    jump = max(1, round((count - 1) / 16))
    return [float_step_value(dist.low, dist.high, dist.step, j)
            for j in (k - jump, k + jump) if 0 <= j < count]


def _random_value(dist: BaseDistribution, rng: random.Random) -> Any:
    """A value of ``dist`` drawn uniformly (log-uniformly for a log range)."""
    if isinstance(dist, CategoricalDistribution):
        return rng.choice(list(dist.choices))
    if isinstance(dist, IntDistribution):
        if dist.log:
            v = round(math.exp(rng.uniform(math.log(dist.low), math.log(dist.high))))
            return min(max(v, dist.low), dist.high)
        return dist.low + dist.step * rng.randrange((dist.high - dist.low) // dist.step + 1)
    if dist.log:
        return math.exp(rng.uniform(math.log(dist.low), math.log(dist.high)))
    if dist.step:
        k = rng.randrange(float_step_count(dist.low, dist.high, dist.step))
        return float_step_value(dist.low, dist.high, dist.step, k)
    return rng.uniform(dist.low, dist.high)
