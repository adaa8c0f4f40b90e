"""The contract every registered lane mapping keeps (``simulator.mappings``), generated from
the registry: a mapping registered there is checked here without editing this file.

- its knobs: defaults applied, samples accepted, refused under the other mappings;
- outputs: every mapping (its defaults, and its knobs' middle samples) x driven form x
  algorithm computes what scipy.sparse.csgraph / networkx compute (tests/references.py), or
  is refused with a ConfigError (PageRank has no hybrids);
- its lane assignment (``Mapping.lanes``), on drawn launches: every edge one lane-step, no
  lane twice in a step, every step in its unit (or, sharing, its block), idle lane-steps
  within the issued ones; ``lockstep`` mappings lay their lanes out as
  ``simulator.lanes.lockstep_lanes`` does; and more edges never take fewer steps, except
  where a thread shares work across its block (donation: see the counterexample below).

The lane-accounting invariants of whole runs draw every registered mapping too
(tests/test_engine_invariants.py, through tests/mapping_draws.py).

A toy mapping defined here, registered for its tests only (``registered``), runs through the
same contract, and the engine lays out its lanes by asking it (``Mapping.lanes``): a second
toy, whose lanes take one idle step more per busy unit than any built-in mapping's, computes
the references and costs more than its twin.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

import simulator.strategy
from simulator import ConfigError
from simulator import Strategy
from simulator import simulate
from simulator.device import get_device
from simulator.functional import default_source
from simulator.lanes import lockstep_lanes
from simulator.layout import task_layout
from simulator.layout import worklist_layouts
from simulator.mappings import MAPPINGS
from simulator.mappings import LaneRequest
from simulator.mappings import Mapping
from simulator.mappings import registered
from simulator.mappings._vwarp import CHUNKED_KNOBS
from simulator.mappings._vwarp import CHUNKED_SAMPLES
from simulator.mappings._vwarp import check_chunked
from simulator.strategy import DRIVEN
from tests.conftest import random_graph
from tests.conftest import skewed_graph
from tests.mapping_draws import mapping_knobs
from tests.references import assert_cc_labels
from tests.references import bfs_levels
from tests.references import networkx_pagerank
from tests.references import sssp_distances

ALGORITHMS = ("bfs", "sssp", "pagerank", "cc")
DEVICE = get_device("h100")


def variants(mapping: Mapping) -> list[dict]:
    """A mapping's knob sets the output contract runs: its defaults, and each knob it owns
    at the middle of its samples."""
    middle = {knob: values[len(values) // 2] for knob, values in mapping.knob_samples.items()}
    return [{}, middle] if middle else [{}]


CONFIGS = [pytest.param(name, knobs, id=f"{name}-{i}")
           for name, mapping in MAPPINGS.items()
           for i, knobs in enumerate(variants(mapping))]


@pytest.fixture(scope="module")
def graph():
    """Small, skewed (hubs for donation and deferral), weighted, with isolated vertices."""
    return skewed_graph(160, 700, 5, weights=True)


# --- knobs -----------------------------------------------------------------------------------

def check_knobs(name: str) -> None:
    """The knob contract of the registered mapping ``name``."""
    mapping = MAPPINGS[name]
    assert name in simulator.strategy.MAPPINGS
    assert set(mapping.knobs) <= set(Strategy.KNOBS)
    assert set(mapping.knob_samples) <= set(mapping.knobs)
    s = Strategy(mapping=name)
    for knob, default in mapping.knobs.items():
        assert getattr(s, knob) == default
    for knob, values in mapping.knob_samples.items():
        for value in values:
            assert getattr(Strategy.from_params({"mapping": name, knob: value}), knob) == value
    for other in MAPPINGS.values():  # another mapping's knob, at a valid value of its own
        for knob, values in other.knob_samples.items():
            if knob not in mapping.knobs and values[-1] is not None:
                with pytest.raises(ConfigError, match=re.escape(
                        f"`{knob}` does not apply to mapping={name!r}")):
                    Strategy.from_params({"mapping": name, knob: values[-1]})


@pytest.mark.parametrize("name", list(MAPPINGS))
def test_knobs_default_validate_and_belong_to_their_mapping(name):
    check_knobs(name)


def test_the_registry_names_the_mappings():
    assert simulator.strategy.MAPPINGS == tuple(MAPPINGS)
    assert set(MAPPINGS) >= {"thread", "vwarp", "wer", "wer+", "adaptive"}
    with pytest.raises(ConfigError, match=r"`mapping in \('thread', 'vwarp'"):
        Strategy(mapping="warp")


# --- outputs ---------------------------------------------------------------------------------

def check_outputs(g, algorithm: str, params: dict) -> None:
    """The run's output equals the independent reference's, or the strategy or run is
    refused with a ConfigError; the run's lane accounting adds up."""
    source = default_source(g) if algorithm in ("bfs", "sssp") else None
    if algorithm == "pagerank" and params.get("driven") in ("temporal", "spatial"):
        with pytest.raises(ConfigError, match="does not apply to pagerank"):
            simulate(g, algorithm, params, source=source)
        return
    r = simulate(g, algorithm, params, source=source)
    if algorithm == "bfs":
        np.testing.assert_array_equal(r.output, bfs_levels(g, source))
    elif algorithm == "sssp":
        np.testing.assert_array_equal(r.output, sssp_distances(g, source))
    elif algorithm == "cc":
        assert_cc_labels(g, r.output)
    elif params.get("driven", "topology") == "topology":
        np.testing.assert_allclose(r.output, networkx_pagerank(g), atol=1e-6)
    else:  # data-driven PageRank freezes converged vertices (tests/test_algorithms.py)
        np.testing.assert_allclose(r.output, networkx_pagerank(g), rtol=0.1, atol=1e-5)
        assert abs(r.output.sum() - 1.0) < 1e-3
    assert r.u_a + r.u_r + r.me == pytest.approx(1.0)
    assert 0 < r.simd_efficiency <= 1
    assert r.time_us > 0 and r.launches >= r.iterations


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("driven", DRIVEN)
@pytest.mark.parametrize("name, knobs", CONFIGS)
def test_outputs_match_the_references(graph, name, knobs, driven, algorithm):
    check_outputs(graph, algorithm, {"mapping": name, **knobs, "driven": driven})


# --- lane assignment -------------------------------------------------------------------------

def lane_request(strategy: Strategy, degree: np.ndarray, slots: np.ndarray, n: int,
                 sweep: bool) -> tuple[Strategy, LaneRequest]:
    """The strategy a launch runs as (``for_iteration``) and its lane request: ``slots``
    (ascending) of a sweep of ``n`` vertices or a worklist of ``n`` entries expand
    ``degree`` edges each."""
    strategy = MAPPINGS[strategy.mapping].for_iteration(strategy, degree)
    layout = (task_layout(n, strategy, DEVICE) if sweep
              else worklist_layouts(np.array([n]), strategy, DEVICE, None))
    local = np.arange(int(degree.sum())) - np.repeat(np.cumsum(degree) - degree, degree)
    return strategy, LaneRequest(slots, degree, local, layout, DEVICE.warp_size, True,
                                 lambda: np.arange(layout.units), np.zeros(1, dtype=np.int64))


def check_lanes(strategy: Strategy, request: LaneRequest) -> int:
    """The lane-assignment contract on one request; the launch's warp steps."""
    mapping, r, ws = MAPPINGS[strategy.mapping], request, request.warp_size
    layout = r.layout
    lanes, sharing = mapping.lanes(strategy, r)
    edges = int(r.degree.sum())
    steps = np.asarray(lanes.steps)
    assert steps.shape == (layout.units,) and (steps >= 0).all()
    total = int(steps.sum())
    group = np.asarray(lanes.group)
    assert group.shape == (edges,)  # every edge one lane-step
    if edges:
        assert group.min() >= 0 and group.max() < total
        assert np.bincount(group).max() <= ws
    if lanes.lane is not None:  # no lane twice in a step
        assert ((lanes.lane >= 0) & (lanes.lane < ws)).all()
        assert np.unique(group * ws + lanes.lane).size == edges
    # each step belongs to a unit; an edge runs in its slot's unit (or, sharing, its block)
    unit_of_step = np.repeat(np.arange(layout.units), steps)
    edge_unit = unit_of_step[group]
    slot_unit = np.repeat(r.slots // layout.per_unit, r.degree)
    shares = mapping.shares_within_block(strategy)
    if shares:
        per_block = strategy.block_size // ws
        np.testing.assert_array_equal(edge_unit // per_block, slot_unit // per_block)
        assert sharing is not None and sharing.shape == (layout.units,)
    else:
        np.testing.assert_array_equal(edge_unit, slot_unit)
        assert sharing is None
    # idle lane-steps of the vertices' own lanes: within the unit's issued lane-steps
    u_a = np.asarray(lanes.u_a)
    unit_edges = np.bincount(edge_unit, minlength=layout.units)
    assert u_a.shape == (layout.units,) and (u_a >= 0).all()
    assert (u_a + unit_edges <= ws * steps).all()
    pop = np.broadcast_to(lanes.pop_steps, steps.shape)
    assert ((pop >= 0) & (pop <= steps)).all()
    if mapping.lockstep(strategy):
        want = lockstep_lanes(r.slots, r.degree, r.local, layout, True)
        for name in ("group", "lane", "steps", "u_a"):
            np.testing.assert_array_equal(getattr(lanes, name), getattr(want, name))
    return total


@st.composite
def launches(draw):
    """A launch's expanding slots (ascending, some of zero degree) among n, and a degree
    each (a few hubs), on a sweep or a worklist."""
    n = draw(st.integers(1, 400))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    slots = np.sort(rng.choice(n, int(rng.integers(1, n + 1)), replace=False))
    degree = rng.integers(0, int(rng.choice([2, 9, 40])), slots.size)
    degree[rng.random(slots.size) < 0.03] += int(rng.integers(50, 300))
    return n, slots, degree.astype(np.int64), draw(st.booleans())


def check_lane_contract(strategy: Strategy, launch) -> None:
    """``check_lanes`` on a launch, and on it with one more edge: never fewer warp steps,
    but where a thread shares work across its block."""
    n, slots, degree, sweep = launch
    strategy, request = lane_request(strategy, degree, slots, n, sweep)
    total = check_lanes(strategy, request)
    more = degree.copy()
    more[(int(degree.sum()) * 7 + n) % degree.size] += 1
    _, request = lane_request(strategy, more, slots, n, sweep)
    # the strategy the iteration runs as stays: adaptive picks W per frontier, and a wider
    # W takes fewer steps, which is its point
    more_total = check_lanes(strategy, request)
    if not MAPPINGS[strategy.mapping].shares_within_block(strategy):
        assert more_total >= total


@pytest.mark.parametrize("name", list(MAPPINGS))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_lane_assignment_keeps_the_contract(name, data):
    params = data.draw(mapping_knobs(MAPPINGS[name],
                                     block_size=st.sampled_from([32, 64, 256])))
    check_lane_contract(Strategy.from_params(params), data.draw(launches()))


def test_donation_may_take_fewer_steps_with_one_more_edge():
    """Why monotonicity is not asked of a sharing mapping: one more edge in a block of 64
    threads (threshold 0) lifts its cap from 2 to 3; the 21 donors each keep one more
    edge, the box drops from 84 to 63 entries, one drain round instead of two for both
    warps, and the warp without donors finishes a step sooner (8 steps -> 7)."""
    s = Strategy(mapping="thread", donate_threshold=0, block_size=64)
    degree = np.zeros(64, dtype=np.int64)
    degree[:21], degree[32] = 6, 2
    more = degree.copy()
    more[33] = 1
    slots = np.arange(64)
    steps = [check_lanes(*lane_request(s, d, slots, 64, True)) for d in (degree, more)]
    assert steps == [8, 7]


# --- a mapping defined by a test -------------------------------------------------------------

class LockstepPairs(Mapping):
    """A toy: virtual warps of two lanes, each taking chunks of vertices (vwarp at W = 2
    under another name, with no ``w`` knob); it counts the launches it lays out."""

    name = "toy-pairs"
    knobs = CHUNKED_KNOBS
    knob_samples = CHUNKED_SAMPLES

    def __init__(self):
        self.calls = 0

    def check(self, strategy):
        check_chunked(strategy)

    def lanes_per_vertex(self, strategy):
        return 2

    def lockstep(self, strategy):
        return True

    def lanes(self, strategy, request):
        self.calls += 1
        r = request
        return lockstep_lanes(r.slots, r.degree, r.local, r.layout, r.want_lanes), None


class PaddedPairs(LockstepPairs):
    """A toy whose lanes no built-in mapping lays out: ``toy-pairs``' virtual warps of two
    lanes, but each unit that expands an edge idles one warp step more after its own (no
    longer lockstep: the engine takes none of its closed forms)."""

    name = "toy-padded"

    def lockstep(self, strategy):
        return False

    def lanes(self, strategy, request):
        lanes, sharing = super().lanes(strategy, request)
        r, units = request, request.layout.units
        busy = (np.bincount(r.slots // r.layout.per_unit, weights=r.degree, minlength=units)
                > 0).astype(np.int64)
        padding_before = np.cumsum(busy) - busy  # the earlier units' idle steps
        lanes.group = lanes.group + np.repeat(padding_before[r.slots // r.layout.per_unit],
                                              r.degree)
        lanes.steps = lanes.steps + busy
        return lanes, sharing


TOYS = [LockstepPairs, PaddedPairs]


def test_a_test_can_register_a_mapping_for_a_while():
    toy = LockstepPairs()
    with registered(toy):
        assert simulator.strategy.MAPPINGS[-1] == "toy-pairs"
        s = Strategy.parse("mapping=toy-pairs,chunk=4")
        assert (s.chunk, s.distribution, s.lanes_per_vertex) == (4, "static", 2)
        with pytest.raises(ConfigError, match="`w` does not apply to mapping='toy-pairs'"):
            Strategy(mapping="toy-pairs", w=4)
        with pytest.raises(ConfigError, match="mapping='adaptive', mapping='toy-pairs'$"):
            Strategy(mapping="thread", chunk=2)
        with pytest.raises(ValueError, match="registered already"):
            with registered(LockstepPairs()):
                pass
    assert "toy-pairs" not in simulator.strategy.MAPPINGS
    with pytest.raises(ConfigError, match="mapping in"):
        Strategy(mapping="toy-pairs")


def test_a_mapping_knob_must_be_a_strategy_field():
    class Stray(LockstepPairs):
        name = "toy-stray"
        knobs = {"lanes": 2}

    with registered(Stray()), pytest.raises(ValueError, match="not Strategy fields"):
        Strategy()


@pytest.mark.parametrize("toy", TOYS)
def test_a_toy_mappings_knobs_keep_the_contract(toy):
    with registered(toy()):
        check_knobs(toy.name)


@pytest.mark.parametrize("toy", TOYS)
@settings(max_examples=25, deadline=None)
@given(launch=launches(), knobs=st.fixed_dictionaries(
    {knob: st.sampled_from(values) for knob, values in CHUNKED_SAMPLES.items()}))
def test_a_toy_mappings_lanes_keep_the_contract(toy, launch, knobs):
    with registered(toy()):
        check_lane_contract(Strategy(mapping=toy.name, **knobs), launch)


@pytest.mark.parametrize("toy", TOYS)
@pytest.mark.parametrize("driven", DRIVEN)
def test_a_toy_mapping_computes_the_references(graph, toy, driven):
    mapping = toy()
    with registered(mapping):
        for algorithm in ALGORITHMS:
            calls = mapping.calls
            check_outputs(graph, algorithm, {"mapping": toy.name, "driven": driven})
            if algorithm != "pagerank" or driven == "topology":  # else refused
                assert mapping.calls > calls  # the engine laid its lanes out by asking it


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_a_toy_mapping_costs_what_its_twin_does(algorithm):
    """Virtual warps of two lanes under another name cost what vwarp W = 2 costs; with an
    idle step more per busy unit, more (the engine costs the lanes the mapping gives)."""
    g = random_graph(200, 900, 11, weights=True)
    source = default_source(g) if algorithm in ("bfs", "sssp") else None
    twin = simulate(g, algorithm, "mapping=vwarp,w=2,chunk=3", source=source).to_dict()
    with registered(LockstepPairs()) as pairs:
        toy = simulate(g, algorithm, "mapping=toy-pairs,chunk=3", source=source).to_dict()
    assert toy == twin and pairs.calls > 0
    with registered(PaddedPairs()) as padded:
        r = simulate(g, algorithm, "mapping=toy-padded,chunk=3", source=source)
    assert padded.calls > 0
    assert r.edges_touched == twin["edges_touched"]
    assert r.simd_efficiency < twin["simd_efficiency"]
    assert r.time_us > twin["time_us"]


def test_the_engine_asks_a_mapping_for_its_lanes():
    toy = LockstepPairs()
    with registered(toy):
        simulate(random_graph(100, 300, 2), "bfs", "mapping=toy-pairs")
    assert toy.calls > 0
