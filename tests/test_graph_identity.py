"""A study's rows are computed on one graph and one set of sources, wherever and whenever they
run: a generated graph and the sources drawn on it follow from numpy's random generator, so a
machine with another numpy could build another graph from the same spec and seed. Such a resume,
or such a cluster node rebuilding a lost copy, is refused by name rather than filed under the
study (probe FF: the graph id had covered only the spec)."""

from __future__ import annotations

import functools
import os

import numpy as np
import optuna
import pytest

import simulator
from simulator import Graph
from simulator import load_graph
from simulator.errors import GraphError
from tuner import api
from tuner.cli import main
from tuner.env import library_versions
from tuner.results.location import Location
from tuner.results.store import read_graphs
from tuner.results.store import read_trials
from tuner.tuning import evaluate
from tuner.tuning.batches import prepare_from
from tuner.tuning.batches import prepared_again
from tuner.tuning.evaluate import SimulatorBackend

GRAPH = "rmat:scale=7,seed=3"


def _tune(results, trials, sources=1):
    return main(["tune", "--graph", GRAPH, "--trials", str(trials), "--sources", str(sources),
                 "--sampler", "random", "--workers", "0", "--results", str(results), "-q"])


def _rows(results):
    return read_trials(str(results)).to_pylist()


def _study_attrs(results):
    (journal,) = Location.of(str(results)).journal_dir().glob("*.journal")
    storage = optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(journal)))
    (summary,) = optuna.get_all_study_summaries(storage)
    return optuna.load_study(study_name=summary.study_name, storage=storage).user_attrs


def _reordered(g):
    """``g``'s indices with two neighbours of a vertex swapped: the same edges, another CSR
    (what the simulator walks, lane by lane)."""
    v = int(np.flatnonzero(g.degrees >= 2)[0])
    indices = g.indices.copy()
    at = int(g.indptr[v])
    indices[[at, at + 1]] = indices[[at + 1, at]]
    return indices


def test_the_digest_a_study_records_follows_the_edges_not_their_width():
    g = load_graph(GRAPH)
    same = Graph(g.indptr.astype(np.int32), g.indices, name="other name")
    assert same.content_digest == g.content_digest
    assert (Graph(g.indptr, _reordered(g))).content_digest != g.content_digest
    assert (Graph(g.indptr, g.indices, directed=True)).content_digest != g.content_digest
    weights = np.ones(g.m, dtype=np.float32)
    weighted = (Graph(g.indptr, g.indices, weights, directed=True)).content_digest
    weights[-1] = 2
    assert weighted != (Graph(g.indptr, g.indices, weights, directed=True)).content_digest
    assert weighted != (Graph(g.indptr, g.indices, directed=True)).content_digest


def test_the_graph_row_and_the_journal_record_what_was_built(tmp_path):
    results = tmp_path / "r"
    api.tune(GRAPH, trials=3, sources=2, results=str(results), sampler="random", workers=0)
    built = load_graph(GRAPH).content_digest
    assert read_graphs(str(results)).column("edges_digest").to_pylist() == [built]
    attrs = _study_attrs(results)
    (sources,) = {tuple(r["sources"]) for r in _rows(results)}
    assert attrs["graph"]["edges"] == built and tuple(attrs["graph"]["sources"]) == sources
    assert attrs["graph"]["libraries"]["numpy"] == np.__version__
    (run,) = [v for k, v in attrs.items() if k.startswith("run:")]
    assert run["libraries"] == library_versions() and run["libraries"]["numpy"] == np.__version__


def _another_graph(real):
    """load_graph as another numpy's generator might build the spec: neighbours reordered."""
    def load(spec):
        g = real(spec)
        return Graph(g.indptr, _reordered(g), name=g.name, spec=g.spec)
    return load


def test_a_resume_where_the_spec_builds_another_graph_is_refused(tmp_path, monkeypatch, capsys):
    results = tmp_path / "r"
    assert _tune(results, 4) == 0
    before = _rows(results)
    monkeypatch.setattr(simulator, "load_graph", _another_graph(simulator.load_graph))
    assert _tune(results, 8) == 2
    err = capsys.readouterr().err
    assert "rmat:scale=7," in err and ": this machine builds other edges from the spec" in err
    assert f"numpy {np.__version__}" in err and "another --results directory" in err
    assert len(_rows(results)) == len(before)  # nothing computed on the other graph is filed
    monkeypatch.undo()
    assert _tune(results, 8) == 0  # where it builds the same graph, the study goes on
    assert len(_rows(results)) > len(before)


@pytest.mark.parametrize("recorded_in", ["journal", "rows"])
def test_a_resume_that_draws_other_sources_is_refused(tmp_path, monkeypatch, capsys,
                                                      recorded_in):
    """Its values would be means over other sources than the study's first trials'. A study
    of an older warpsweep recorded no sources in its journal; its rows name them."""
    results = tmp_path / "r"
    assert _tune(results, 4, sources=2) == 0
    before = _rows(results)
    if recorded_in == "rows":  # as an older warpsweep left it: no graph record in the journal
        monkeypatch.setattr("tuner.tuning.study.StudyRun._refuse_another_build",
                            lambda self, meta: None)
        assert _tune(results, 5, sources=2) == 0
        monkeypatch.undo()
        before = _rows(results)
        monkeypatch.setattr(optuna.study.Study, "user_attrs", property(
            lambda self: {k: v for k, v in self._storage.get_study_user_attrs(
                self._study_id).items() if k != "graph"}))
    real = evaluate.choose_sources

    def others(degrees, count, seed, default):
        first, *rest = real(degrees, count, seed, default)
        spare = next(v for v in np.flatnonzero(degrees) if v != first and v not in rest)
        return (first, int(spare))

    monkeypatch.setattr(evaluate, "choose_sources", others)
    assert _tune(results, 8, sources=2) == 2
    assert "this machine builds other sources from the spec" in capsys.readouterr().err
    assert len(_rows(results)) == len(before)


def test_a_lost_copy_built_again_as_another_graph_is_refused_where_it_is_built():
    """A cluster node that computes a study's lost graph again (``Rebuild``) must build the
    study's graph: prepare's refusal is raised there, not returned as a graph of None."""
    prepare = functools.partial(prepared_again, functools.partial(
        prepare_from, os.getcwd(), SimulatorBackend().prepare))
    graph, runs, meta = prepare(GRAPH, "bfs", 1, 0, False, "", "", ())
    assert meta.edges == graph.content_digest and graph is not None
    again = prepare(GRAPH, "bfs", 1, 0, False, "", meta.edges, meta.sources)
    assert again[2].edges == meta.edges
    with pytest.raises(GraphError, match="other edges from the spec"):
        prepare(GRAPH, "bfs", 1, 0, False, "", "0123456789abcdef", meta.sources)
    with pytest.raises(GraphError, match="other sources from the spec"):
        prepare(GRAPH, "bfs", 1, 0, False, "", meta.edges, (meta.sources[0] + 1,))
