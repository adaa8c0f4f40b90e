"""The TPE sampler's cheaper per-ask work: same numbers and proposals as Optuna's own TPE."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import optuna
import pytest
from optuna.distributions import CategoricalDistribution
from optuna.distributions import FloatDistribution
from optuna.distributions import IntDistribution
from optuna.samplers._tpe import _truncnorm
from optuna.samplers._tpe.parzen_estimator import _ParzenEstimator
from optuna.samplers._tpe.parzen_estimator import _ParzenEstimatorParameters
from optuna.samplers._tpe.sampler import default_weights
from optuna.search_space import _GroupDecomposedSearchSpace
from scipy import special

from search_spaces.loader import load_space
from tuner.samplers import IncrementalGroups
from tuner.samplers import VectorisedParzenEstimator
from tuner.samplers import WarpsweepTPE
from tuner.samplers import log_gauss_mass
from tuner.samplers import log_ndtr
from tuner.samplers import make_sampler

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _objective(config: dict) -> float:
    """A seeded, knob-dependent stand-in for a simulated time (minimum at w=8, chunk=64)."""
    return (100.0 + abs(math.log2(config.get("w", 1)) - 3)
            + abs(math.log2(config.get("chunk", 1)) - 6)
            + 0.5 * (config.get("distribution") == "static")
            + (config.get("switch_to_topology") or 0.0) + 0.01 * (config.get("partition") or 0))


def _proposals(sampler: optuna.samplers.BaseSampler, space_name: str, n: int) -> list[str]:
    space = load_space(space_name)
    study = optuna.create_study(sampler=sampler)
    out = []
    for _ in range(n):
        trial = study.ask()
        config = space.suggest(trial)
        study.tell(trial, _objective(config))
        out.append(json.dumps(config, sort_keys=True))
    return out


def _stock_tpe(seed: int, space_name: str) -> optuna.samplers.TPESampler:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.TPESampler(
            seed=seed, multivariate=True, group=load_space(space_name).has_conditionals,
            constant_liar=True)


def test_log_ndtr_matches_scipy_over_both_tails():
    a = np.concatenate([np.linspace(-400.0, 40.0, 44_001), [-np.inf, np.inf, 0.0, -5.0, 5.0]])
    ours, ref = log_ndtr(a), special.log_ndtr(a)
    finite = np.isfinite(ref) & (ref != 0)
    rel = np.abs(ours[finite] - ref[finite]) / np.abs(ref[finite])
    assert rel.max() < 1e-12
    assert ours[-5] == -np.inf and ours[-4] == 0.0 and ours[-3] == pytest.approx(math.log(0.5))


def test_log_gauss_mass_matches_optuna():
    rng = np.random.default_rng(3)
    ends = rng.normal(0.0, 15.0, (2, 20_000))
    a, b = np.minimum(*ends), np.maximum(*ends)
    ours, ref = log_gauss_mass(a, b), _truncnorm._log_gauss_mass(a, b)
    assert np.array_equal(np.isfinite(ours), np.isfinite(ref))
    finite = np.isfinite(ref)
    np.testing.assert_allclose(ours[finite], ref[finite], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vectorised_log_pdf_equals_optunas(seed):
    rng = np.random.default_rng(seed)
    space = {
        "w": CategoricalDistribution([1, 2, 4, 8, 16, 32]),
        "chunk": IntDistribution(1, 2048, log=True),
        "unroll": IntDistribution(1, 9, step=2),
        "partition": IntDistribution(2, 64),
        "switch": FloatDistribution(0.02, 1.5, log=True),
        "frac": FloatDistribution(0.0, 1.0),
        "threshold": FloatDistribution(0.0, 1.0, step=0.25),
    }
    n = 60
    observations = {
        "w": rng.integers(0, 6, n).astype(float),
        "chunk": np.round(np.exp(rng.uniform(0, math.log(2048), n))),
        "unroll": rng.choice([1, 3, 5, 7, 9], n).astype(float),
        "partition": rng.integers(2, 65, n).astype(float),
        "switch": np.exp(rng.uniform(math.log(0.02), math.log(1.5), n)),
        "frac": rng.uniform(0, 1, n),
        "threshold": rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], n),
    }
    params = _ParzenEstimatorParameters(prior_weight=1.0, consider_magic_clip=True,
                                        consider_endpoints=False, weights=default_weights,
                                        multivariate=True)
    stock = _ParzenEstimator(observations, space, params)
    ours = VectorisedParzenEstimator(observations, space, params)
    samples = stock.sample(np.random.RandomState(seed), 200)
    np.testing.assert_allclose(ours.log_pdf(samples), stock.log_pdf(samples), rtol=1e-9,
                               atol=1e-9)


def test_incremental_groups_equal_optunas_decomposition():
    space = load_space("driven")
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=5))
    ours, stock = IncrementalGroups(include_pruned=True), _GroupDecomposedSearchSpace(True)
    for _ in range(40):
        trial = study.ask()
        study.tell(trial, _objective(space.suggest(trial)))
        assert ours.calculate(study).search_spaces == stock.calculate(study).search_spaces
    assert len(ours._added) == 40  # each finished trial added once, not once per ask


@pytest.mark.parametrize("space_name", ["vwarp", "driven"])
def test_warpsweep_tpe_proposes_what_optunas_tpe_proposes(space_name):
    space = load_space(space_name)
    ours = _proposals(make_sampler("tpe", 7, space), space_name, 60)
    stock = _proposals(_stock_tpe(7, space_name), space_name, 60)
    assert ours == stock
    assert len(set(ours)) > 20  # past the 10 random start-up trials, TPE really proposed


def test_the_study_gets_the_fast_tpe():
    sampler = make_sampler("tpe", 0, load_space("vwarp"))
    assert isinstance(sampler, WarpsweepTPE)
    assert sampler._parzen_estimator_cls is VectorisedParzenEstimator
    assert isinstance(sampler._group_decomposed_search_space, IncrementalGroups)


def test_log_density_makes_no_python_call_per_kernel():
    """Optuna's discrete log-int density calls a Python function per (value, kernel) pair,
    thousands per ask at 100 trials; ours only the sampling step's few dozen."""
    counter = _truncnorm._log_ndtr_single

    def calls(sampler: optuna.samplers.BaseSampler) -> int:
        space = load_space("vwarp")
        study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=2))
        for _ in range(100):
            trial = study.ask()
            study.tell(trial, _objective(space.suggest(trial)))
        study.sampler = sampler
        counter.cache_clear()
        for _ in range(5):
            trial = study.ask()
            study.tell(trial, _objective(space.suggest(trial)))
        info = counter.cache_info()
        return info.hits + info.misses

    ours = calls(make_sampler("tpe", 0, load_space("vwarp")))
    stock = calls(_stock_tpe(0, "vwarp"))
    print(f"Python log_ndtr calls in 5 asks: ours {ours}, Optuna's {stock}")
    assert ours <= 5 * 200  # drawing the 24 candidates of the one numeric knob (chunk)
    assert stock > 10 * ours
