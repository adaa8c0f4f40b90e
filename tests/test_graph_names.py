"""Unique graph names (issue 42): a generated graph's name says what tells it apart (seed,
weights, parameters off their defaults), every reader shows and filters by it, and results
written before (under the old, shared names) still read and resume without a duplicate row."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from simulator import load_graph
from simulator.graph_spec import parse_spec
from tuner import api
from tuner.cli import main
from tuner.results.store import read_graphs
from tuner.results.store import read_trials
from tuner.tuning.evaluate import graph_id


@pytest.mark.parametrize(("spec", "name"), [
    ("rmat:scale=14", "rmat14-ef16-s0"),
    ("rmat:scale=14,seed=1", "rmat14-ef16-s1"),
    ("kron:scale=14,seed=1,weights=random", "rmat14-ef16-wrandom-s1"),
    ("rmat:scale=14,ef=8,a=0.45,b=0.25,c=0.15,seed=2", "rmat14-ef8-a0.45-b0.25-c0.15-s2"),
    ("random:n=100,m=300,seed=3", "random-n100-m300-s3"),
    ("random:n=100,seed=3,directed=true", "random-n100-deg8-directed-s3"),
    ("grid2d:rows=16", "grid2d-16x16"),
    ("grid2d:rows=16,cols=8,weights=random,seed=5", "grid2d-16x8-wrandom-s5"),
    ("mesh2d:rows=4,order=degree", "mesh2d-4x4-degree-order"),
    ("road:rows=64,keep=0.5,seed=2", "road-64x64-keep0.5-s2"),
    ("road:rows=64,keep=0.65,seed=2", "road-64x64-s2"),
    ("file:g/USA-road-NY.gr.gz", "USA-road-NY"),
    ("file:x.txt,format=snap,weights=random,order=random,seed=4",
     "x-snap-wrandom-random-order-s4"),
])
def test_a_name_says_what_tells_the_graph_apart(spec, name):
    assert parse_spec(spec).unique_name() == name
    assert parse_spec(str(parse_spec(spec))).unique_name() == name  # canonical: same name


def test_generated_graphs_that_differ_have_different_names():
    specs = [f"rmat:scale=10,seed={s}" for s in range(5)]
    specs += [f"rmat:scale=10,seed={s},weights=random" for s in range(5)]
    specs += ["rmat:scale=10,ef=8,seed=1", "rmat:scale=10,a=0.6,seed=1",
              "rmat:scale=10,seed=1,directed=true", "rmat:scale=10,seed=1,order=bfs",
              "grid2d:rows=10", "grid2d:rows=10,weights=random", "grid2d:rows=10,cols=11",
              "road:rows=10,seed=1", "road:rows=10,seed=2", "road:rows=10,keep=0.5,seed=1"]
    names = [parse_spec(s).unique_name() for s in specs]
    assert len(set(names)) == len(names), Counter(names).most_common(2)


def test_loaded_graphs_carry_the_name_and_keys_keep_the_short_slug(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPSWEEP_CACHE_DIR", str(tmp_path / "cache"))
    spec = "rmat:scale=6,seed=3,weights=random"
    first = load_graph(spec)
    again = load_graph(spec)  # from the cache
    assert first.name == again.name == "rmat6-ef16-wrandom-s3"
    # the slug of study keys and graph ids is the short name, as before: old keys still match
    assert graph_id(str(parse_spec(spec)), "c").startswith("rmat6-ef16-")


def _best(results: Path, capsys, *args: str) -> dict:
    assert main(["best", "--results", str(results), "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_readers_tell_seeds_apart(tmp_path, capsys):
    results = tmp_path / "r"
    for seed in (1, 2):
        api.tune(f"rmat:scale=6,seed={seed}", "bfs", trials=2, sources=1, results=str(results))
    names = sorted(s["study"]["graph"] for s in _best(results, capsys)["studies"])
    assert names == ["rmat6-ef16-s1", "rmat6-ef16-s2"]
    only = _best(results, capsys, "--graph", "rmat6-ef16-s2")["studies"]
    assert [s["study"]["graph_spec"] for s in only] == [str(parse_spec("rmat:scale=6,seed=2"))]
    assert main(["best", "--results", str(results), "--graph", "rmat6-ef16-s9"]) == 2
    assert "graphs present: rmat6-ef16-s1, rmat6-ef16-s2" in capsys.readouterr().err


def _rename_graphs_as_before(results: Path) -> None:
    """Give every stored graph row the name warpsweep stored before names were unique."""
    for path in (results / "graphs").rglob("part-*.parquet"):
        table = pq.read_table(path, partitioning=None)
        old = [parse_spec(s).short_name() for s in table.column("graph_spec").to_pylist()]
        index = table.schema.get_field_index("name")
        pq.write_table(table.set_column(index, "name", [old]), path)


def test_an_old_directory_reads_and_resumes_without_duplicate_rows(tmp_path, capsys):
    results = tmp_path / "r"
    specs = ("rmat:scale=6,seed=1", "rmat:scale=6,seed=2")
    for spec in specs:
        api.tune(spec, "bfs", trials=3, sources=1, results=str(results))
    _rename_graphs_as_before(results)
    assert set(read_graphs(results).column("name").to_pylist()) == {"rmat6-ef16"}
    keys = {r["study_key"] for r in read_trials(results).to_pylist()}
    # readers show the unique names, and find a graph by it or by the old shared name
    names = sorted(s["study"]["graph"] for s in _best(results, capsys)["studies"])
    assert names == ["rmat6-ef16-s1", "rmat6-ef16-s2"]
    assert len(_best(results, capsys, "--graph", "rmat6-ef16-s1")["studies"]) == 1
    assert len(_best(results, capsys, "--graph", "rmat6-ef16")["studies"]) == 2
    # resume both with a larger budget: the same studies go on, no row is written twice
    for spec in specs:
        run = api.tune(spec, "bfs", trials=5, sources=1, results=str(results))
        assert run.studies[0].key in keys and run.studies[0].done == 5
    rows = read_trials(results).to_pylist()
    assert {r["study_key"] for r in rows} == keys
    ids = Counter((r["study_key"], r["role"], r["trial"], r["label"]) for r in rows)
    assert max(ids.values()) == 1
    assert Counter(r["role"] for r in rows)["trial"] == 2 * 5
    graphs = read_graphs(results).to_pylist()
    assert len(graphs) == 2 and len({g["graph_id"] for g in graphs}) == 2
