"""sort_keys picks timsort or numpy's default sort by the keys' order; the result is a sort."""

import numpy as np
import pytest

from simulator.sorted_runs import _nearly_in_order
from simulator.sorted_runs import distinct
from simulator.sorted_runs import sort_keys
from simulator.sorted_runs import stable_order

RNG = np.random.default_rng(7)
N = 1 << 14


def _locally_swapped() -> np.ndarray:
    keys = np.sort(RNG.integers(0, 1 << 40, N))
    at = RNG.integers(0, N - 1, N // 50)
    keys[at], keys[at + 1] = keys[at + 1], keys[at].copy()
    return keys


def _random_runs(length: int) -> np.ndarray:
    """Ascending runs that start at random: a frontier's neighbour lists one after another."""
    return np.sort(RNG.integers(0, 1 << 40, N).reshape(-1, length), axis=1).ravel()


def _shuffled_groups(width: int) -> np.ndarray:
    """Ascending groups shuffled within: a warp step's lanes reading scattered sectors."""
    keys = np.sort(RNG.integers(0, 1 << 40, N)).reshape(-1, width)
    return RNG.permuted(keys, axis=1).ravel()


@pytest.mark.parametrize("keys, merged", [
    (np.arange(N), True),
    (_locally_swapped(), True),
    (_random_runs(64), False),
    (_random_runs(8), False),
    (_shuffled_groups(32), False),
    (RNG.integers(0, 1 << 40, N), False),
])
def test_sort_keys_sorts_and_merges_only_nearly_ordered_keys(keys, merged):
    assert _nearly_in_order(keys) is merged
    got = keys.copy()
    sort_keys(got)
    assert np.array_equal(got, np.sort(keys))


def test_stable_order_and_distinct_agree_with_numpy_on_repeated_keys():
    keys = np.concatenate([_random_runs(16) % 1000, _locally_swapped() % 5000])
    assert np.array_equal(stable_order(keys), np.argsort(keys, kind="stable"))
    assert np.array_equal(distinct(keys), np.unique(keys))
