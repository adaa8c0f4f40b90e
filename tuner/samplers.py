"""The samplers a study can use, by name, with a clear error for unknown or unavailable ones."""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import optuna

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


def _tpe(seed: int, space: SearchSpace) -> optuna.samplers.BaseSampler:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.TPESampler(
            seed=seed, multivariate=True, group=space.has_conditionals, constant_liar=True,
            warn_independent_sampling=False,
        )


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
