"""The samplers a study can use, by name, with a clear error for unknown or unavailable ones."""

from __future__ import annotations

import copy
import importlib.util
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import optuna
from optuna.trial import TrialState

from search_spaces.loader import SearchSpace
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
        groups, and the trials TPE samples from them, are the same."""

        def __init__(self, include_pruned: bool = False) -> None:
            super().__init__(include_pruned)
            self._added: set[int] = set()

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
            return copy.deepcopy(self._search_space)


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
