"""The tuner's samplers: TPE on a conditional space keeps Optuna's groups incrementally."""

from __future__ import annotations

import math
import warnings

import optuna

from search_spaces.loader import load_space
from tuner.tuning.samplers import IncrementalGroups
from tuner.tuning.samplers import make_sampler


def _objective(config: dict) -> float:
    if config["mapping"] == "thread":
        return 110.0
    return 100.0 + abs(math.log2(config["w"]) - 3) + abs(math.log2(config["chunk"]) - 6)


def _drawn(sampler: optuna.samplers.BaseSampler, space, trials: int) -> list[dict]:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=sampler)
    drawn = []
    for _ in range(trials):
        trial = study.ask()
        config = space.suggest(trial)
        drawn.append(config)
        study.tell(trial, _objective(config))
    return drawn


def test_tpe_draws_what_optunas_own_groups_draw():
    space = load_space("vwarp")
    assert space.has_conditionals
    ours = make_sampler("tpe", 7, space)
    assert isinstance(ours._group_decomposed_search_space, IncrementalGroups)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        shipped = optuna.samplers.TPESampler(seed=7, multivariate=True, group=True,
                                             constant_liar=True)
    assert type(shipped._group_decomposed_search_space) is not IncrementalGroups
    ours_drawn, shipped_drawn = _drawn(ours, space, 80), _drawn(shipped, space, 80)
    assert ours_drawn == shipped_drawn
    assert {c["mapping"] for c in ours_drawn} == {"thread", "vwarp"}  # both groups exercised
