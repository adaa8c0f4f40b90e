"""The notebook API (issue 42): a results directory as a pandas DataFrame, a tune's rows as
one, and the report's figures as matplotlib Figures, all from a real (small, in-process)
tune."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from matplotlib.figure import Figure

from simulator import load_graph
from simulator import simulate
from simulator.errors import ConfigError
from tuner import api
from tuner.analysis import figures
from tuner.analysis.report_data import load_results as report_data
from tuner.analysis.report_data import simd_bars
from tuner.analysis.report_data import time_over_w
from tuner.results.damaged import DamagedResults
from tuner.results.store import read_trials

GRAPH = "rmat:scale=7,seed=2"


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    results = tmp_path_factory.mktemp("nb") / "r"
    run = api.tune(GRAPH, "bfs", trials=6, sources=1, seed=3, results=str(results),
                   workers=0)
    other = api.tune("grid2d:rows=12", "bfs", trials=3, sources=1, results=str(results),
                     workers=0)
    return results, run, other


def test_load_results_has_knobs_and_metrics_as_columns(tuned):
    results, run, _ = tuned
    frame = api.load_results(results)
    rows = [r for r in read_trials(results).to_pylist() if r["state"] != "duplicate"]
    assert isinstance(frame, pd.DataFrame) and len(frame) == len(rows)
    for column in ("mapping", "w", "chunk", "time_us", "simd_efficiency", "graph", "device",
                   "study_key", "role", "label"):
        assert column in frame.columns, column
    assert not any(c.startswith("param_") for c in {"mapping", "w", "chunk"} & set(frame))
    assert set(frame["graph"]) == {"rmat7-ef16-s2", "grid2d-12x12"}
    # the thread reference's time is what the simulator gives for it
    thread = frame[(frame["label"] == "thread") & (frame["graph"] == "rmat7-ef16-s2")]
    assert len(thread) == 1 and thread["mapping"].item() == "thread"
    source = int(thread["sources"].item()[0])
    assert thread["time_us"].item() == pytest.approx(simulate(
        load_graph(GRAPH), "bfs", {"mapping": "thread"}, "h100", source=source).time_us)
    # the best row by time is the tune's winner
    mine = frame[frame["study_key"] == run.studies[0].key]
    assert mine["time_us"].min() == pytest.approx(run.studies[0].best[0].values[0])
    # knob values keep their types: W an integer (missing where it does not apply)
    assert str(frame["w"].dtype) == "Int64" and frame.loc[frame["mapping"] == "thread",
                                                          "w"].isna().all()
    vwarp = frame[frame["label"] == "vwarp w=8"]
    assert set(vwarp["w"]) == {8}


def test_duplicates_are_left_out_unless_asked(tuned):
    results, _, _ = tuned
    stored = read_trials(results).to_pylist()
    with_all = api.load_results(results, duplicates=True)
    assert len(with_all) == len(stored)
    assert (api.load_results(results)["state"] != "duplicate").all()


def test_to_pandas_is_the_runs_own_studies(tuned):
    results, run, other = tuned
    frame = run.to_pandas()
    assert set(frame["study_key"]) == {run.studies[0].key}
    assert set(other.to_pandas()["graph"]) == {"grid2d-12x12"}
    assert len(frame) + len(other.to_pandas()) == len(api.load_results(results))
    # the references and the budget's distinct configurations
    assert (frame["role"] == "reference").sum() == 7
    assert (frame["role"] == "trial").sum() >= run.studies[0].evaluations - 7


def test_the_reports_figures_come_back_as_figures(tuned):
    results, _, _ = tuned
    figs = api.figures(results, graphs=("rmat7-ef16-s2",))
    assert figs and all(isinstance(f, Figure) for f in figs.values())
    title = "rmat7-ef16-s2, bfs on h100: time over virtual warp size"
    assert title in figs
    assert figs[title].axes[0].get_title() == title
    # the points drawn are the data the report computes: best time per W
    data = report_data(results)
    group = next(g for g in data.groups() if g.graph_name == "rmat7-ef16-s2")
    curve = time_over_w(data.runs_of(group))
    line = figs[title].axes[0].lines[0]
    assert list(line.get_xdata()) == [w for w, _ in curve.points]
    assert list(line.get_ydata()) == pytest.approx([t for _, t in curve.points])
    assert not any("grid2d" in t for t in figs)  # the filter held
    every = api.figures(results)
    assert any(t.startswith("grid2d-12x12") for t in every) and len(every) > len(figs)


def test_every_report_figure_has_a_function_that_returns_it(tuned):
    results, _, _ = tuned
    data = report_data(results)
    group = data.groups()[0]
    runs = data.runs_of(group)
    fig, caption = figures.time_over_w_figure(time_over_w(runs), "t")
    assert isinstance(fig, Figure) and "virtual warp size" in caption
    fig, caption = figures.simd_breakdown_figure(simd_bars(runs), "s")
    assert isinstance(fig, Figure) and "SIMD" in caption
    for name in ("time_over_w", "w_chunk_heatmap", "defer_curves", "switch_curves",
                 "simd_breakdown", "history", "selector"):
        assert callable(getattr(figures, f"{name}_figure")), name


def test_bad_input_is_a_clear_error(tmp_path, tuned):
    with pytest.raises(ConfigError, match="does not exist"):
        api.load_results(tmp_path / "nothing")
    with pytest.raises(ConfigError, match="results=None"):
        api.load_results(None)
    results, _, _ = tuned
    damaged = tmp_path / "damaged"
    import shutil

    shutil.copytree(results, damaged)
    part = next((damaged / "trials").rglob("part-*.parquet"))
    meta = pq.read_metadata(part)
    col = next(meta.row_group(0).column(i) for i in range(meta.num_columns)
               if meta.row_group(0).column(i).path_in_schema == "time_us")
    body = bytearray(part.read_bytes())
    body[col.data_page_offset + col.total_compressed_size - 3] ^= 0x5A  # in time_us's data
    part.write_bytes(bytes(body))
    with pytest.raises((DamagedResults, ConfigError), match=part.name):
        api.load_results(damaged)


def test_a_space_given_as_a_path_is_a_file_not_a_shipped_name(tmp_path):
    """``space=Path("vwarp")`` had tuned the shipped vwarp space though no such file exists."""
    with pytest.raises(ConfigError, match="search space file 'vwarp' does not exist"):
        api.tune("rmat:scale=6,seed=1", "bfs", space=Path("vwarp"), trials=2, workers=0,
                 results=str(tmp_path / "r"))
    assert not (tmp_path / "r").exists()


def test_two_graphs_of_one_name_are_told_apart_in_the_frame(tmp_path):
    """Files of one stem in two directories had both been named "y": a groupby("graph")
    merged two graphs' results."""
    import numpy as np

    results = tmp_path / "r"
    for folder, seed in (("a", 1), ("b", 2)):
        rng = np.random.default_rng(seed)
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "y.txt").write_text("".join(
            f"{u} {v}\n" for u, v in zip(rng.integers(0, 60, 200), rng.integers(0, 60, 200),
                                         strict=True)))
        api.tune(f"file:{tmp_path / folder / 'y.txt'}", "bfs", trials=2, sources=1,
                 workers=0, results=str(results))
    frame = api.load_results(str(results))
    names = frame.groupby("graph")["graph_id"].nunique()
    assert len(names) == 2 and (names == 1).all()
    assert all(name.startswith("y (y-") for name in names.index)


def test_an_address_sends_the_api_default_to_the_cluster(tmp_path):
    # docs/cluster.md's script route, api.sweep(..., address=...), had been refused for the
    # in-process default workers=0 (probe JJ); now it goes to the address, here none
    with pytest.raises(ConfigError, match="no Ray cluster at --address '127.0.0.1:9'"):
        api.tune("rmat:scale=6,seed=1", trials=1, address="127.0.0.1:9",
                 results=str(tmp_path / "r"))


def test_load_results_warns_of_results_the_rows_lack(tmp_path):
    # every CLI reader warned; load_results had returned the shorter frame without a word
    # (probe API)
    import shutil

    from tuner.results.query import UnsavedResults

    results = tmp_path / "r"
    api.tune("rmat:scale=7,seed=3", trials=4, sources=1, results=str(results))
    shutil.rmtree(results / "trials")
    (results / "trials").mkdir()
    with pytest.warns(UnsavedResults, match="deleted or moved since") as said:
        frame = api.load_results(str(results))
    assert frame.empty and said[0].filename == __file__  # the caller's line


def test_the_python_readers_refuse_wrong_arguments_in_one_line(tmp_path):
    # a metric named twice had made every configuration the front; None had been a raw
    # AttributeError or TypeError (probe API)
    from tuner.analysis.answers import effect
    from tuner.analysis.answers import pareto
    from tuner.analysis.report import build_report

    results = tmp_path / "r"
    api.tune("rmat:scale=6,seed=1", trials=3, sources=1, results=str(results))
    with pytest.raises(ConfigError, match="a metric is named twice"):
        pareto(str(results), ["time_us", "time_us:max"])
    with pytest.raises(ConfigError, match="pareto takes a list of objectives"):
        pareto(str(results), None)
    with pytest.raises(ConfigError, match="effect's knob is a knob's name"):
        effect(str(results), None)
    for args in ((str(results), None), (None, str(tmp_path / "rep"))):
        with pytest.raises(ConfigError, match="build_report's (results|out) is a directory"):
            build_report(*args)


def test_a_tune_result_reads_its_own_directory_after_a_chdir(tmp_path, monkeypatch):
    """A relative --results is resolved when the run ends: after a chdir, to_pandas had read
    another directory holding the same study (probe API2, high)."""
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    monkeypatch.chdir(there)
    api.tune(GRAPH, "bfs", trials=2, sources=1, seed=3, results="res", workers=0)
    monkeypatch.chdir(here)
    run = api.tune(GRAPH, "bfs", trials=5, sources=1, seed=3, results="res", workers=0)
    rows = len(run.to_pandas())
    assert run.results == str((here / "res").resolve())
    monkeypatch.chdir(there)
    assert len(run.to_pandas()) == rows > len(api.load_results("res"))


def test_load_results_carries_the_measured_times_the_trials_view_joins(tuned, tmp_path):
    """tune --verify's GPU times (``measured/``) as the ``trials`` view joins them, null where
    a row was not measured (probe API2: the frame had lacked the columns)."""
    import shutil

    import pyarrow as pa

    from tuner.results.measured import COLUMNS
    from tuner.results.query import connect
    from tuner.results.schema import PARAM_TYPES

    results = tmp_path / "r"
    shutil.copytree(tuned[0], results)
    run = tuned[1]
    study = run.studies[0].key
    frame = api.load_results(results)
    assert frame["measured_us"].isna().all() and "measured_kernel_us" in frame
    trial = int(frame[(frame.study_key == study) & (frame.role == "trial")].trial.iloc[0])
    row = frame[(frame.study_key == study) & (frame.trial == trial)].iloc[0]
    config = ",".join(f"{k}={row[k]}" for k in PARAM_TYPES if k in row and pd.notna(row[k]))
    measured = {"study_key": study, "role": "trial", "trial": trial, "label": None,
                "config": config, "rank": 1, "time_us": float(row["time_us"]),
                "measured_us": 12.5, "kernel_us": 10.0, "correct": True, "note": "",
                "gpu_name": "Stand-in GPU", "winner": True, "source": None, "variant": None,
                "trials": [trial], "labels": []}
    (results / "measured").mkdir()
    pq.write_table(pa.Table.from_pylist([measured], COLUMNS),
                   results / "measured" / f"{study}.parquet")
    frame = api.load_results(results)
    got = frame[frame.measured_us.notna()]
    assert got[["study_key", "trial", "measured_us", "measured_kernel_us"]].values.tolist() == [
        [study, trial, 12.5, 10.0]]
    view = connect(str(results)).execute(
        "SELECT count(measured_us), sum(measured_us) FROM trials WHERE state <> 'duplicate'"
    ).fetchone()
    assert view == (1, 12.5)


def test_sssp_on_an_unweighted_graph_built_from_arrays_says_how_to_weight_it():
    """A graph built from arrays has no spec to add `weights=random` to (probe API2)."""
    import numpy as np

    from simulator import Graph

    graph = Graph.from_edges(np.array([0, 1]), np.array([1, 2]), name="mine")
    with pytest.raises(ConfigError, match=r"Graph.from_edges\(\.\.\., weights=w\)"):
        simulate(graph, "sssp")
    with pytest.raises(ConfigError, match="add `weights=random` to the spec"):
        simulate(load_graph("rmat:scale=6,seed=1"), "sssp")


def test_the_python_readers_take_a_device_file_and_refuse_a_filter_of_another_type(tmp_path):
    """best/effect/pareto with {"device": FILE}: the file's device, as the CLI's --device
    reads it (they had said it matched nothing); a list or a number as a filter: one
    ConfigError, not DuckDB's traceback (probe API2)."""
    from tuner.analysis.answers import best
    from tuner.analysis.answers import effect
    from tuner.analysis.answers import pareto

    results = str(tmp_path / "r")
    device = str(Path(__file__).resolve().parents[1] / "bench" / "gpu" / "results" / "h100.toml")
    api.tune(GRAPH, "bfs", trials=2, sources=1, device=device, results=results, workers=0)
    assert len(best(results, {"device": device}).studies) == 1
    assert len(effect(results, "w", {"device": device}).studies) == 1
    assert len(pareto(results, ["time_us", "bytes"], {"device": device}).studies) == 1
    for filters, said in (({"algo": ["bfs", "sssp"]}, "filter algo="),
                          ({"graph": 5}, "filter graph=5"), ({"device": 5}, "filter device=5")):
        with pytest.raises(ConfigError, match=said):
            best(results, filters)
