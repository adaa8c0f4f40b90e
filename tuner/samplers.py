"""The samplers a study can use, by name, with a clear error for unknown or unavailable ones."""

from __future__ import annotations

import importlib.util
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import optuna
from optuna.samplers._tpe.parzen_estimator import _ParzenEstimator
from optuna.samplers._tpe.probability_distributions import _BatchedCategoricalDistributions
from optuna.samplers._tpe.probability_distributions import _MixtureOfProductDistribution
from optuna.search_space import _GroupDecomposedSearchSpace
from optuna.search_space import _SearchSpaceGroup
from optuna.trial import FrozenTrial
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


_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_SQRT_HALF = math.sqrt(0.5)
# math.erf/erfc mapped over arrays: one C call per element, the functions Optuna's own
# _truncnorm uses (so tails are as accurate), without its Python frame and cache per element
_ERF = np.frompyfunc(math.erf, 1, 1)
_ERFC = np.frompyfunc(math.erfc, 1, 1)


def _erf(x: np.ndarray) -> np.ndarray:
    return _ERF(x).astype(float) if x.size else np.zeros(x.shape)


def _erfc(x: np.ndarray) -> np.ndarray:
    return _ERFC(x).astype(float) if x.size else np.zeros(x.shape)


def ndtr(a: np.ndarray) -> np.ndarray:
    """Standard normal CDF elementwise, accurate in both tails (erfc where erf would cancel)."""
    x = np.asarray(a, dtype=float) * _SQRT_HALF
    out = np.empty(x.shape)
    low, high = x < -_SQRT_HALF, x >= _SQRT_HALF
    mid = ~(low | high)
    out[low] = 0.5 * _erfc(-x[low])
    out[mid] = 0.5 + 0.5 * _erf(x[mid])
    out[high] = 1.0 - 0.5 * _erfc(x[high])
    return out


def log_ndtr(a: np.ndarray) -> np.ndarray:
    """log of the standard normal CDF elementwise, to about 1e-15 relative: in the tails
    (|a| >= 5, most of TPE's kernel-candidate pairs) from a continued fraction in numpy, in
    between from math.erf/erfc."""
    a = np.asarray(a, dtype=float)
    out = np.empty(a.shape)
    lower, upper = a <= -_TAIL, a >= _TAIL
    mid = ~(lower | upper)
    out[lower] = _log_tail(-a[lower])
    out[upper] = np.log1p(-np.exp(_log_tail(a[upper])))
    below = mid & (a <= 0)
    above = mid & (a > 0)  # log(1 - Phi(-a)), not the log of a rounded number near 1
    with np.errstate(divide="ignore"):
        out[below] = np.log(ndtr(a[below]))
    out[above] = np.log1p(-ndtr(-a[above]))
    return out


_TAIL = 5.0
# continued-fraction terms that reach double precision from each x up (checked against SciPy
# in the tests): far tails, most of TPE's kernel-candidate pairs, need half as many
_TAIL_TERMS = ((10.0, 10), (_TAIL, 20))


def _log_tail(x: np.ndarray) -> np.ndarray:
    """log Phi(-x) for x >= 5: log of the normal density over Laplace's continued fraction
    x + 1/(x + 2/(x + 3/(x + ...))), cut where it has converged to double precision."""
    out = np.empty(x.shape)
    todo = np.ones(x.shape, dtype=bool)
    for start, terms in _TAIL_TERMS:
        part = todo & (x >= start)
        xs = x[part]
        t = np.zeros(xs.shape)
        for k in range(terms, 0, -1):
            t = k / (xs + t)
        out[part] = -0.5 * xs**2 - _LOG_SQRT_2PI - np.log(xs + t)
        todo &= ~part
    return out


def log_gauss_mass(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """log(Phi(b) - Phi(a)) elementwise: Optuna's ``_truncnorm._log_gauss_mass`` with the same
    left/right/central cases, vectorised (its Python call per element is the cost of TPE's
    discrete and log-int knobs)."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    out = np.full(a.shape, np.nan)
    left = b <= 0
    right = a > 0
    central = ~(left | right)
    with np.errstate(divide="ignore", invalid="ignore"):
        if left.any():  # both ends in the left tail: log Phi(b) + log(1 - Phi(a) / Phi(b))
            lb, la = log_ndtr(b[left]), log_ndtr(a[left])
            out[left] = lb + np.log1p(-np.exp(la - lb))
        if right.any():  # mirrored into the left tail, where the CDF is accurate
            lb, la = log_ndtr(-a[right]), log_ndtr(-b[right])
            out[right] = lb + np.log1p(-np.exp(la - lb))
        if central.any():
            out[central] = np.log1p(-ndtr(a[central]) - ndtr(-b[central]))
    return out


def mixture_log_pdf(mixture: _MixtureOfProductDistribution, x: np.ndarray) -> np.ndarray:
    """Log density of TPE's kernel mixture at the rows of ``x`` (internal representation):
    the computation of Optuna's ``_MixtureOfProductDistribution.log_pdf``, vectorised."""
    n_kernels = len(mixture.weights)
    weighted = np.zeros((len(x), n_kernels))
    with np.errstate(divide="ignore", invalid="ignore"):
        for i, d in enumerate(mixture.distributions):
            if isinstance(d, _BatchedCategoricalDistributions):
                weighted += np.log(d.weights[:, x[:, i].astype(np.int64)]).T
                continue
            mu, sigma = d.mu[np.newaxis, :], d.sigma[np.newaxis, :]
            low, high = d.adapted_low, d.adapted_high
            norm = log_gauss_mass((low - d.mu) / d.sigma, (high - d.mu) / d.sigma)
            xi = x[:, i]
            if d.step == 0.0:  # continuous: truncated normal density
                xs = (np.log(xi) if d.is_log else xi)[:, np.newaxis]
                z = (xs - mu) / sigma
                dens = -(z**2) / 2.0 - _LOG_SQRT_2PI - norm - np.log(sigma)
                dens = np.where((xs < low) | (xs > high), -np.inf, dens)
                weighted += np.where(low == high, np.nan, dens)
            else:  # discrete: the mass of the value's step-wide cell, per distinct value
                # and distinct kernel (a log-int knob repeats both: the cost is in the tails)
                values, at_value = np.unique(xi, return_inverse=True)
                # (mu, sigma) pairs as complex numbers: a 1-d unique, sorted by mu then sigma
                kernels, at_kernel = np.unique(d.mu + 1j * d.sigma, return_inverse=True)
                kmu, ksigma = kernels.real[np.newaxis, :], kernels.imag[np.newaxis, :]
                half = d.step / 2
                left, right = values - half, values + half
                if d.is_log:
                    left, right = np.log(left), np.log(right)
                mass = log_gauss_mass((left[:, np.newaxis] - kmu) / ksigma,
                                      (right[:, np.newaxis] - kmu) / ksigma)
                weighted += mass[np.ix_(at_value, at_kernel)] - norm
        weighted += np.log(mixture.weights)[np.newaxis, :]
        top = weighted.max(axis=1)
        top[np.isneginf(top)] = 0
        return np.log(np.exp(weighted - top[:, np.newaxis]).sum(axis=1)) + top


class VectorisedParzenEstimator(_ParzenEstimator):
    """Optuna's Parzen estimator with its log density computed in numpy (see
    ``mixture_log_pdf``); sampling and the kernels are Optuna's own."""

    def log_pdf(self, samples_dict: dict[str, np.ndarray]) -> np.ndarray:
        return mixture_log_pdf(self._mixture_distribution, self._transform(samples_dict))


class IncrementalGroups(_GroupDecomposedSearchSpace):
    """Optuna's group decomposition of a conditional space, fed each finished trial once.

    Optuna re-adds every finished trial on every ask (O(trials) per ask); adding a trial's
    distributions again leaves the partition and its order unchanged, so adding only the
    trials not seen yet gives the same groups.
    """

    def __init__(self, include_pruned: bool = True) -> None:
        super().__init__(include_pruned)
        self._added: set[int] = set()

    def calculate(self, study: optuna.Study, use_cache: bool = False) -> _SearchSpaceGroup:
        if self._study_id is None:
            self._study_id = study._study_id
        elif self._study_id != study._study_id:
            raise ValueError("IncrementalGroups cannot handle multiple studies.")
        states = ((TrialState.COMPLETE, TrialState.PRUNED) if self._include_pruned
                  else (TrialState.COMPLETE,))
        for trial in study._get_trials(deepcopy=False, states=states, use_cache=use_cache):
            if trial.number not in self._added:
                self._added.add(trial.number)
                self._search_space.add_distributions(trial.distributions)
        groups = _SearchSpaceGroup()
        groups._search_spaces = [dict(s) for s in self._search_space.search_spaces]
        return groups


class WarpsweepTPE(optuna.samplers.TPESampler):
    """Optuna's TPESampler, same options and proposals, with the costs that grow with the
    study cut: the kernel mixture's log density in numpy (``VectorisedParzenEstimator``),
    the group decomposition fed each trial once (``IncrementalGroups``), and each finished
    trial's parameters converted to TPE's internal form once, not on every ask.

    It uses the customisation points Optuna's TPE keeps for this (``_parzen_estimator_cls``,
    the group decomposition object, ``_get_internal_repr``); tests check its proposals are
    Optuna's.
    """

    def __init__(self, **options: Any) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            super().__init__(**options)
        self._parzen_estimator_cls = VectorisedParzenEstimator
        if self._group_decomposed_search_space is not None:
            self._group_decomposed_search_space = IncrementalGroups(include_pruned=True)
        self._internal: dict[tuple, dict[int, tuple[float, ...] | None]] = {}

    def _get_internal_repr(self, trials: list[FrozenTrial], search_space: dict[str, Any],
                           study: optuna.Study) -> dict[str, np.ndarray]:
        cache = self._internal.setdefault(tuple(search_space.items()), {})
        rows = []
        for trial in trials:
            finished = trial.state.is_finished()  # a finished trial's parameters are final
            row = cache.get(trial._trial_id, _MISSING) if finished else _MISSING
            if row is _MISSING:
                params = self._get_params(trial, study)
                row = (tuple(d.to_internal_repr(params[name])
                             for name, d in search_space.items())
                       if search_space.keys() <= params.keys() else None)
                if finished:
                    cache[trial._trial_id] = row
            if row is not None:
                rows.append(row)
        columns = np.array(rows, dtype=float).reshape(len(rows), len(search_space))
        return {name: columns[:, i] for i, name in enumerate(search_space)}


_MISSING = object()


def tpe_sampler(seed: int, space: SearchSpace, **options: Any) -> optuna.samplers.TPESampler:
    """Optuna's TPE for a space: multivariate, grouped when knobs are conditional, constant
    liar for parallel workers (``WarpsweepTPE``: Optuna's proposals at a fraction of the
    per-ask cost)."""
    return WarpsweepTPE(**{"seed": seed, "multivariate": True,
                           "group": space.has_conditionals, "constant_liar": True,
                           **options})


def _tpe(seed: int, space: SearchSpace) -> optuna.samplers.BaseSampler:
    return tpe_sampler(seed, space)


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
