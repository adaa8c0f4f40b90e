"""The Python API takes what a notebook gives it (probe API): a results directory where a
reader wanted a connection, a pathlib.Path for a graph, "~" in a results path, a results
directory with no rows yet, a Graph where a study wants a spec."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from simulator import Graph
from simulator import load_graph
from simulator.errors import GraphError
from simulator.loaders import save_npz
from tuner.analysis.answers import best
from tuner.api import load_results
from tuner.api import tune
from tuner.results.query import connect


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("r") / "res"
    tune("rmat:scale=7,seed=1", "bfs", trials=3, sources=1, results=str(out), workers=0)
    return out


def test_best_takes_the_results_directory_as_a_connection(results):
    by_path = best(results)
    by_text = best(str(results))
    by_connection = best(connect(str(results)))
    assert ([(s.config, s.value) for s in by_path.studies]
            == [(s.config, s.value) for s in by_text.studies]
            == [(s.config, s.value) for s in by_connection.studies])
    assert len(by_path.studies) == 1


def test_a_results_directory_without_rows_has_every_knob_and_metric_column(results,
                                                                             tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "_warpsweep.json").write_bytes((results / "_warpsweep.json").read_bytes())
    frame = load_results(str(empty))
    full = load_results(str(results))
    assert frame.empty and set(full.columns) <= set(frame.columns)
    # with the dtypes rows give them (probe CR: graph had been float, knobs int64 and bool)
    assert {c: str(frame[c].dtype) for c in full.columns} == {
        c: str(full[c].dtype) for c in full.columns}
    assert frame.groupby("w")["time_us"].min().empty  # the README's line, on no rows


def test_a_path_object_is_a_graph_spec_and_tilde_is_home(tmp_path, monkeypatch):
    g = Graph.from_edges([0, 1, 2], [1, 2, 3], 4)
    path = save_npz(g, tmp_path / "g.npz")
    by_path, by_text = load_graph(Path(path)), load_graph(str(path))
    assert (by_path.n, by_path.m) == (by_text.n, by_text.m) == (4, 6)  # both ways stored
    # simulate reads one too, as docs/graphs-and-devices.md says (it had refused it: API)
    from simulator import simulate

    assert simulate(Path(path), "bfs").to_dict() == simulate(str(path), "bfs").to_dict()
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    tune(Path(path), "bfs", trials=2, sources=1, results="~/tilde-res", workers=0)
    assert (tmp_path / "tilde-res" / "_warpsweep.json").exists()
    assert not (tmp_path / "~").exists()
    assert not load_results("~/tilde-res").empty


def test_a_graph_object_given_to_tune_names_the_way_to_a_spec(tmp_path):
    g = Graph.from_edges([0, 1], [1, 2], 3)
    with pytest.raises(GraphError, match=r"got Graph; .*save_npz.*file:g\.npz"):
        tune(g, "bfs", trials=2, results=str(tmp_path / "r"), workers=0)
    assert os.listdir(tmp_path) == []


def test_a_result_says_which_source_it_ran_from():
    """The CLI prints the source simulate picks when given none; the Python Result had no
    word of it (probe API)."""
    from simulator import simulate
    from simulator.functional import default_source

    g = load_graph("rmat:scale=8,seed=1")
    assert simulate(g, "bfs", "mapping=vwarp,w=8", "h100").source == default_source(g)
    assert simulate(g, "bfs", "mapping=thread", "h100", source=5).source == 5
    assert simulate(g, "cc", "mapping=thread", "h100").source is None
