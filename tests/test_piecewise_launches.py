"""A launch laid out in pieces (``edge_work._PIECE_LANES``, bounded memory on big graphs) costs
exactly what it costs laid out at once: every figure and traced array alike, for every
form that costs a launch's full view (worklists of every push, deduplicated, plain-store
relaxation, deferred outliers, donation, redistribution, spatial and temporal hybrids)."""

import sys
from pathlib import Path

import numpy as np
import pytest

from simulator import driver
from simulator import edge_work
from simulator import engine
from simulator import functional_run
from simulator import launch_costs
from simulator import load_graph
from simulator import simulate
from simulator import slot_views
from simulator.device import get_device
from simulator.errors import ConfigError
from simulator.strategy import Strategy

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.figures_unchanged import STRATEGIES  # noqa: E402
from bench.figures_unchanged import differences  # noqa: E402

GRAPH = "rmat:scale=9,ef=6,seed=3,weights=random"
FULL_VIEW_FORMS = [
    "driven=data,push=warp", "driven=data,push=block", "driven=data,dedup=True",
    "mapping=thread,driven=data,relax=store", "mapping=vwarp,w=8,driven=data,relax=store",
    "mapping=thread,driven=data,defer_threshold=8", "mapping=vwarp,w=4,driven=data,push=block",
    "mapping=thread,driven=data,donate_threshold=4", "mapping=wer,driven=data,push=warp",
    "driven=temporal,switch_to_topology=0.2,switch_on=edges",
]


@pytest.fixture(scope="module")
def graph():
    return load_graph(GRAPH)


def _outcome(graph, algorithm, strategy, functional):
    try:
        return simulate(graph, algorithm, strategy, functional=functional, trace=True)
    except ConfigError as refused:
        return refused


@pytest.mark.parametrize("algorithm", ["bfs", "sssp", "cc", "pagerank"])
@pytest.mark.parametrize("each_on_its_own", [False, True])
def test_pieces_cost_what_the_whole_launch_costs(graph, algorithm, each_on_its_own,
                                                 monkeypatch):
    """``each_on_its_own``: small launches and sweeps too take the full-view path (no runs
    of small launches costed together, every unit of a sweep costed), as big ones do."""
    if each_on_its_own:
        monkeypatch.setattr(driver, "_BATCH_SLOTS", 0)
        monkeypatch.setattr(engine, "_SPARSE_SWEEPS", False)
    functional = functional_run(graph, algorithm)
    strategies = STRATEGIES + FULL_VIEW_FORMS
    whole = [_outcome(graph, algorithm, s, functional) for s in strategies]
    # a few dozen edges a piece: every launch of more is cut, many times over
    monkeypatch.setattr(edge_work, "_PIECE_LANES", 37)
    calls = []
    original = launch_costs.piecewise_edge_work

    def counted(*args, **kwargs):
        work = original(*args, **kwargs)
        calls.append(work is not None)
        return work

    monkeypatch.setattr(launch_costs, "piecewise_edge_work", counted)
    cut = [_outcome(graph, algorithm, s, functional) for s in strategies]
    # (a small graph's launches are otherwise costed in runs, or sparsely: none is cut)
    assert any(calls) or not each_on_its_own, "no launch was cut"
    differ = {s: d for s, a, b in zip(strategies, whole, cut, strict=True)
              if (d := differences(a, b, rtol=0))}
    assert not differ


def test_pieces_are_whole_units_of_bounded_edges(graph, monkeypatch):
    """The cuts fall on unit (under donation, block) boundaries, and a piece holds at most
    the bound plus one unit's (block's) edges."""
    monkeypatch.setattr(edge_work, "_PIECE_LANES", 50)
    device = get_device("h100")
    for text, keeps in (("mapping=vwarp,w=8", 1), ("mapping=thread,donate_threshold=4", None)):
        strategy = Strategy.parse(text)
        layout = engine.task_layout(graph.n, strategy, device, None)
        launch = engine.Launch(np.arange(graph.n), np.zeros(0, dtype=np.int64),
                               slots=np.arange(graph.n), lookup="worklist", push="atomic")
        view = slot_views.full_view(graph.indptr, launch, layout, graph.n)
        bounds = edge_work._pieces(view, strategy, device)
        assert bounds[0] == 0 and bounds[-1] == graph.n and bounds.size >= 3
        units_kept = keeps or strategy.block_size // device.warp_size
        whole = view.active_slots // (layout.per_unit * units_kept)
        inner = bounds[1:-1]
        assert (whole[inner] != whole[inner - 1]).all()  # a cut starts a unit (block)
        edges = np.add.reduceat(view.active_degree, bounds[:-1])
        largest = np.bincount(whole, weights=view.active_degree).max()
        assert edges.max() <= 50 + largest
