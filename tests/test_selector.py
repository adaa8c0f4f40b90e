"""The adaptive selector: a known answer recovered, regrets computed by hand, the model file's
format and version check, and the verbs end to end on a tiny real results set."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from simulator import Strategy
from simulator import functional_run
from simulator import load_graph
from simulator import simulate
from simulator.device import device_digest
from simulator.device import get_device
from simulator.errors import ConfigError
from simulator.features import graph_features
from tuner.cli import main
from tuner.results.configs import canonical_params
from tuner.results.records import TrialRecord
from tuner.results.store import ParquetDirBackend
from tuner.results.store import ResultStore
from tuner.results.store import check_manifest
from tuner.selection.selector import POLICY_BEST_SINGLE
from tuner.selection.selector import POLICY_POW2
from tuner.selection.selector import POLICY_SELECTOR
from tuner.selection.selector import POLICY_THREAD
from tuner.selection.selector import POLICY_W32
from tuner.selection.selector import Hyper
from tuner.selection.selector import compare_adaptive
from tuner.selection.selector import cv_picks
from tuner.selection.selector import evaluate
from tuner.selection.selector import evaluate_matrix
from tuner.selection.selector import fit
from tuner.selection.selector import hyper_grid
from tuner.selection.selector import load_matrix
from tuner.selection.selector import pow2_width
from tuner.selection.selector import train
from tuner.selection.selector_model import SELECTOR_SCHEMA_VERSION
from tuner.selection.selector_model import load_model
from tuner.selection.selector_model import save_model
from tuner.tuning.evaluate import GraphMeta
from tuner.tuning.evaluate import graph_id
from tuner.tuning.evaluate import graph_kind
from tuner.tuning.runner import graph_row

# Skewed graphs (degree Gini ~0.55-0.62) are fastest with virtual warps of 16 lanes, uniform
# low-degree ones (Gini <= 0.2) with a thread per vertex.
SKEWED = ("rmat:scale=7,seed=1", "rmat:scale=7,seed=2", "rmat:scale=8,seed=3",
          "rmat:scale=7,ef=8,seed=4")
UNIFORM = ("grid2d:rows=8,cols=8", "grid2d:rows=10,cols=12", "mesh2d:rows=9,cols=9",
           "road:rows=12,seed=1")
LABELS = ("thread", "vwarp w=4", "vwarp w=8", "vwarp w=16", "vwarp w=32")
SKEWED_TIMES = (300.0, 250.0, 150.0, 100.0, 110.0)
UNIFORM_TIMES = (100.0, 120.0, 140.0, 180.0, 200.0)


def label_params(label: str) -> dict:
    """The configuration of a reference label, as the study writes it."""
    return {"mapping": "thread"} if label == "thread" else {"mapping": "vwarp",
                                                             "w": int(label.split("=")[1])}


def add_graph(store: ResultStore, spec: str) -> tuple[str, dict]:
    """Store a real graph's row (its real features) and return its id and features."""
    graph = load_graph(spec)
    feats = graph_features(graph)
    gid = graph_id(graph.spec)
    store.add_graph(graph_row(GraphMeta(gid, graph.spec, graph.name, graph_kind(graph.spec),
                                        graph.n, graph.m, graph.directed, False, (0,), feats)))
    return gid, feats


def record(gid: str, spec: str, label: str | None, time_us: float, *, full_params: bool,
           state: str = "complete", algorithm: str = "bfs", params: dict | None = None,
           **kw) -> TrialRecord:
    """A reference row (or, with ``params`` and kw, a trial row); knobs written minimal
    (defaults NULL) or in full (effective values)."""
    params = params or label_params(label)
    if full_params:
        params = Strategy.from_params(params).to_params()
    extra = {}
    if state == "complete":
        extra = {"values": [time_us], "metrics": {"time_us": time_us}}
    elif state == "duplicate":
        extra = {"values": [time_us], "metrics": {"time_us": time_us}, "duplicate_of": -1}
    else:
        extra = {"error": "ConfigError: boom"}
    base = dict(study_key=f"{gid}.{algorithm}.h100.s", role="reference", state=state,
                graph_id=gid, graph_spec=spec, algorithm=algorithm, device="h100",
                space="s", space_digest="d", sampler="grid", objective="time_us",
                params=params, seed=0, label=label, n_sources=1)
    base.update(extra)
    base.update(kw)
    return TrialRecord(**base)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """A results directory with the known answer, and each graph's features."""
    root = tmp_path_factory.mktemp("synthetic")
    check_manifest(root)
    store = ResultStore(ParquetDirBackend(root), flush_every_s=60)
    feats = {}
    for k, spec in enumerate(SKEWED + UNIFORM):
        gid, f = add_graph(store, spec)
        feats[spec] = f
        times = SKEWED_TIMES if spec in SKEWED else UNIFORM_TIMES
        for label, t in zip(LABELS, times, strict=True):
            store.add_trial(record(gid, spec, label, t, full_params=k % 2 == 0))
        # neither a repeat (even a wrong one) nor a failure is a candidate or a time
        store.add_trial(record(gid, spec, None, 1.0, full_params=True, state="duplicate",
                               params=label_params("vwarp w=16"), role="trial", trial=0))
        store.add_trial(record(gid, spec, "wer+", 0.0, full_params=False, state="failed",
                               params={"mapping": "wer+"}))
    # the first graph again under another spec: one of the two is left out, or
    # leave-one-graph-out would train on the graph it holds out
    graph = load_graph(SKEWED[0])
    twin = graph_id("rmat:scale=7,seed=1,moved")
    store.add_graph(graph_row(GraphMeta(twin, "rmat:scale=7,seed=1,moved", graph.name, "rmat",
                                        graph.n, graph.m, False, False, (0,),
                                        feats[SKEWED[0]])))
    for label, t in zip(LABELS, SKEWED_TIMES, strict=True):
        store.add_trial(record(twin, "rmat:scale=7,seed=1,moved", label, t, full_params=True))
    feats["rmat:scale=7,seed=1,moved"] = feats[SKEWED[0]]
    store.close()
    return root, feats


def test_rows_spelling_a_configuration_differently_are_one_candidate(synthetic):
    root, _ = synthetic
    m = load_matrix(root, "bfs", "h100")
    assert len(m.graphs) == 8
    [(left_out, why)] = m.dropped.items()
    assert "same features as" in why
    assert {left_out, why.split()[3]} == {graph_id("rmat:scale=7,seed=1,moved"),
                                           graph_id(load_graph(SKEWED[0]).spec)}
    assert sorted(c["mapping"] + str(c.get("w", "")) for c in m.configs) == [
        "thread", "vwarp16", "vwarp32", "vwarp4", "vwarp8"]
    assert canonical_params({"mapping": "vwarp", "w": 8, "chunk": None}) == \
        canonical_params({"mapping": "vwarp", "w": 8, "chunk": 1, "distribution": "static"})
    assert m.times.min() == 100.0  # the duplicate's 1.0 was not read


def test_training_recovers_the_known_answer(synthetic):
    root, _ = synthetic
    trained = train(load_matrix(root, "bfs", "h100"))
    assert trained.scores[0].geomean_regret == 1.0
    sel = trained.selector
    for spec, want in (("rmat:scale=8,seed=9", {"mapping": "vwarp", "w": 16}),
                       ("rmat:scale=9,ef=8,seed=11", {"mapping": "vwarp", "w": 16}),
                       ("grid2d:rows=16,cols=16", {"mapping": "thread"}),
                       ("road:rows=20,seed=5", {"mapping": "thread"})):
        choice = sel.choose(graph_features(load_graph(spec)))
        assert choice.config == Strategy.from_params(want).to_params(), spec
        assert 1.0 <= choice.predicted_relative < 1.5  # a weighted mean leaning to its side


def test_cross_validation_shortcut_picks_what_the_fitted_models_pick(synthetic):
    root, _ = synthetic
    m = load_matrix(root, "bfs", "h100")
    m.times[1:3] = m.times[1:3] * np.array([1.0, 1.3, 0.9, 1.0, 1.2])  # less tidy answers
    grid = hyper_grid(len(m.graphs) - 1)
    picks = cv_picks(m, grid)
    for h in grid[::3]:
        for i in range(len(m.graphs)):
            others = m.subset([j for j in range(len(m.graphs)) if j != i])
            assert fit(others, h).pick(m.graphs[i].features) == picks[h][i], (h, i)


def test_tree_path_reads_in_the_features_own_units(synthetic):
    root, feats = synthetic
    m = load_matrix(root, "bfs", "h100")
    sel = fit(m, Hyper("tree", "degree", max_depth=1, min_samples_leaf=1))
    choice = sel.choose(graph_features(load_graph("grid2d:rows=16,cols=16")))
    assert choice.config["mapping"] == "thread"
    name, op, value = choice.path[0].split()
    assert op == "<=" and choice.path[-1] == "leaf of 4 training graph(s)"
    # the split lies between the two families, in raw units (log features un-logged)
    assert max(feats[s][name] for s in UNIFORM) <= float(value) < min(feats[s][name]
                                                                       for s in SKEWED)
    assert sorted(n.graph_spec for n in choice.neighbours) == sorted(UNIFORM)


def test_evaluate_regrets_are_the_hand_computed_ones(synthetic):
    root, feats = synthetic
    [ev] = evaluate(root, "bfs", "h100")
    assert ev.policies == [POLICY_SELECTOR, POLICY_THREAD, POLICY_W32, POLICY_POW2,
                           POLICY_BEST_SINGLE]
    assert len(ev.rows) == 8
    expected_all = {}
    for row in ev.rows:
        skewed = row.graph_spec.startswith("rmat")
        times = dict(zip(LABELS, SKEWED_TIMES if skewed else UNIFORM_TIMES, strict=True))
        best = min(times.values())
        w = pow2_width(feats[row.graph_spec]["avg_degree"])
        expected = {
            POLICY_SELECTOR: 1.0,
            POLICY_THREAD: times["thread"] / best,
            POLICY_W32: times["vwarp w=32"] / best,
            POLICY_POW2: times[f"vwarp w={w}"] / best,
            # w=16 has the lowest geometric-mean relative time on any 7 of the 8 graphs:
            # 4 skewed at 1.0 and 3 uniform at 1.8 (or 3 and 4): below w=8 (1.5 / 1.4)
            POLICY_BEST_SINGLE: times["vwarp w=16"] / best,
        }
        assert row.best_time_us == best
        assert row.regrets == pytest.approx(expected, rel=1e-12)
        assert row.selected[POLICY_BEST_SINGLE]["w"] == 16
        for policy, value in expected.items():
            expected_all.setdefault(policy, []).append(value)
    for policy, values in expected_all.items():
        want = math.exp(sum(math.log(v) for v in values) / len(values))
        assert ev.geomean[policy] == pytest.approx(want, rel=1e-12)
    # by hand: thread sqrt(3), w=32 sqrt(1.1 * 2), best single sqrt(1.8)
    assert ev.geomean[POLICY_THREAD] == pytest.approx(math.sqrt(3))
    assert ev.geomean[POLICY_W32] == pytest.approx(math.sqrt(2.2))
    assert ev.geomean[POLICY_BEST_SINGLE] == pytest.approx(math.sqrt(1.8))


def test_held_out_graph_times_do_not_steer_its_own_pick(synthetic):
    root, _ = synthetic
    m = load_matrix(root, "bfs", "h100").subset([0, 1, 4, 5, 6])  # 2 skewed, 3 uniform
    before = evaluate_matrix(m)
    m.times[0] = m.times[0][::-1].copy()  # the held-out graph's own times, scrambled
    after = evaluate_matrix(m)
    assert after.rows[0].selected[POLICY_SELECTOR] == before.rows[0].selected[POLICY_SELECTOR]


@pytest.mark.parametrize("edit", [
    {"device": ["h100"]}, {"device": {"a": 1}}, {"device": None}, {"device": 100},
    {"seed": 1.5}, {"seed": True},
    {"hyperparameters": {"model": "knn", "features": "degree", "k": True}},
    {"hyperparameters": {"model": "tree", "features": "degree", "max_depth": True}},
    {"hyperparameters": {"model": "tree", "features": "degree", "max_depth": 2,
                         "min_samples_leaf": 0.5}},
])
def test_a_model_file_with_a_value_of_another_type_is_damaged(synthetic, tmp_path, edit):
    """A device that is a list had ended in a traceback, `k: true` in one inside
    scikit-learn's predict; a null device, a float seed or `max_depth: true` had been read as
    something else, exit 0 (review SELECT2)."""
    root, _ = synthetic
    doc = json.loads(save_model(train(load_matrix(root, "bfs", "h100")), tmp_path / "m.json",
                                str(root)).read_text())
    (tmp_path / "edited.json").write_text(json.dumps({**doc, **edit}))
    with pytest.raises(ConfigError, match="is damaged"):
        load_model(tmp_path / "edited.json")


def test_model_file_round_trip_and_version_refusal(synthetic, tmp_path):
    root, _ = synthetic
    trained = train(load_matrix(root, "bfs", "h100"))
    path = save_model(trained, tmp_path / "model.json", str(root))
    doc = json.loads(path.read_text())
    assert doc["format"] == "warpsweep-selector"
    assert doc["schema_version"] == SELECTOR_SCHEMA_VERSION
    assert len(doc["graphs"]) == 8 and len(doc["candidates"]) == 5
    assert np.array(doc["time_us"]).shape == (8, 5)
    selector, _ = load_model(path)
    feats = graph_features(load_graph("grid2d:rows=16,cols=16"))
    assert selector.choose(feats).config == trained.selector.choose(feats).config
    assert selector.hyper == trained.selector.hyper

    doc["schema_version"] = SELECTOR_SCHEMA_VERSION + 1
    other = tmp_path / "newer.json"
    other.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match=rf"schema version {SELECTOR_SCHEMA_VERSION + 1}.*"
                                          rf"schema version {SELECTOR_SCHEMA_VERSION}"):
        load_model(other)
    other.write_text(json.dumps({"format": "something-else", "schema_version": 1}))
    with pytest.raises(ConfigError, match="not a warpsweep selector model"):
        load_model(other)
    doc["schema_version"] = SELECTOR_SCHEMA_VERSION
    doc["scaler"]["mean"][0] += 1.0
    other.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match="damaged"):
        load_model(other)
    with pytest.raises(ConfigError, match=r"\.json"):
        save_model(trained, tmp_path / "model.pkl")


def test_adaptive_comparison_names_where_it_wins(tmp_path):
    check_manifest(tmp_path)
    store = ResultStore(ParquetDirBackend(tmp_path), flush_every_s=60)
    adaptive = {"mapping": "adaptive"}
    for spec, (t_adaptive, t_thread, t_w16) in {
        SKEWED[0]: (90.0, 300.0, 100.0), SKEWED[1]: (95.0, 300.0, 100.0),
        UNIFORM[0]: (130.0, 100.0, 180.0), UNIFORM[1]: (120.0, 100.0, 180.0),
    }.items():
        gid, _ = add_graph(store, spec)
        store.add_trial(record(gid, spec, "thread", t_thread, full_params=True))
        store.add_trial(record(gid, spec, "vwarp w=16", t_w16, full_params=False))
        store.add_trial(record(gid, spec, None, t_adaptive, full_params=False,
                               params=adaptive, role="trial", trial=0))
    store.close()
    [c] = compare_adaptive(tmp_path)
    assert c.constants == 2 and c.narrowed_by == []  # every graph has both constants
    assert sorted(round(r.ratio, 6) for r in c.rows) == [0.9, 0.95, 1.2, 1.3]
    assert [r.wins for r in c.rows].count(True) == 2
    assert c.geomean_ratio == pytest.approx((0.9 * 0.95 * 1.2 * 1.3) ** 0.25)
    assert "adaptive wins on 2 of 4 graphs" in c.where
    assert "best single split" in c.where


def test_adaptive_names_the_graphs_it_leaves_out(tmp_path, capsys):
    """`select adaptive` had left a graph with no adaptive row out of its table, and its
    summary counted the others as "the graphs", without a word (probe SELECT)."""
    check_manifest(tmp_path)
    store = ResultStore(ParquetDirBackend(tmp_path), flush_every_s=60)
    for spec in (SKEWED[0], UNIFORM[0]):
        gid, _ = add_graph(store, spec)
        store.add_trial(record(gid, spec, "thread", 300.0, full_params=True))
        if spec == SKEWED[0]:
            store.add_trial(record(gid, spec, None, 110.0, full_params=False,
                                   params={"mapping": "adaptive"}, role="trial", trial=0))
    store.close()
    uniform = load_graph(UNIFORM[0]).name
    [c] = compare_adaptive(tmp_path)
    assert len(c.rows) == 1
    assert [why for g, why in c.left_out.items() if g.startswith(uniform)] == [
        "no complete adaptive configuration"]
    assert main(["select", "adaptive", "--results", str(tmp_path)]) == 0
    assert f"left out {uniform}" in capsys.readouterr().out
    assert main(["select", "adaptive", "--results", str(tmp_path), "--json"]) == 0
    [doc] = json.loads(capsys.readouterr().out)["comparisons"]
    assert list(doc["left_out"].values()) == ["no complete adaptive configuration"]
    # nothing to compare: refused, as evaluate refuses a group it cannot judge
    only = tmp_path / "constants"
    check_manifest(only)
    store = ResultStore(ParquetDirBackend(only), flush_every_s=60)
    gid, _ = add_graph(store, UNIFORM[0])
    store.add_trial(record(gid, UNIFORM[0], "thread", 300.0, full_params=True))
    store.close()
    assert main(["select", "adaptive", "--results", str(only)]) == 2
    assert "no graph in" in capsys.readouterr().err


def _narrowed_results(root: Path) -> str:
    """A results directory where three graphs have thread, vwarp W=16 and adaptive rows and
    UNIFORM[1] (tuned over fewer constants) only thread and adaptive; W=16 is fastest
    everywhere it ran. Returns UNIFORM[1]'s name."""
    check_manifest(root)
    store = ResultStore(ParquetDirBackend(root), flush_every_s=60)
    for spec in (*SKEWED[:2], UNIFORM[0], UNIFORM[1]):
        gid, _ = add_graph(store, spec)
        store.add_trial(record(gid, spec, "thread", 300.0, full_params=True))
        if spec != UNIFORM[1]:
            store.add_trial(record(gid, spec, "vwarp w=16", 100.0, full_params=True))
        store.add_trial(record(gid, spec, None, 110.0, full_params=False,
                               params={"mapping": "adaptive"}, role="trial", trial=0))
    store.close()
    return load_graph(UNIFORM[1]).name


def test_adaptive_compares_every_graph_with_the_constants_complete_on_all(tmp_path, capsys):
    """A graph tuned over fewer constants (the `policy` space's references) had been compared
    with those alone while the others had every one, and nothing said so (probe SEL)."""
    narrow = _narrowed_results(tmp_path)
    [c] = compare_adaptive(tmp_path)
    assert c.constants == 1 and c.most_constants == 2 and c.narrowed_by == [narrow]
    assert [r.constant_config["mapping"] for r in c.rows] == ["thread"] * 4
    assert all(r.wins for r in c.rows)  # 110 against thread's 300 on each, not W=16's 100
    assert main(["select", "adaptive", "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert ("constant side: the 1 constant configuration(s) complete on every graph, of up "
            f"to 2 on one graph: narrowed by {narrow}") in out
    assert main(["select", "adaptive", "--results", str(tmp_path), "--json"]) == 0
    [doc] = json.loads(capsys.readouterr().out)["comparisons"]
    assert doc["constants"] == 1 and doc["constants_narrowed_by"] == [narrow]


def test_train_names_the_graphs_that_narrowed_the_candidates(tmp_path, capsys):
    """`not candidates: N configuration(s) ...` had not said which graph lacked them."""
    narrow = _narrowed_results(tmp_path)
    model = str(tmp_path.parent / f"{tmp_path.name}-model.json")
    assert main(["select", "train", "--results", str(tmp_path), "--model", model]) == 0
    out = capsys.readouterr().out
    assert (f"not candidates: 1 configuration(s) not complete on every graph (failed or not "
            f"tried on some: {narrow} lacks 1)") in out


def test_evaluate_names_a_group_it_leaves_out(tmp_path, capsys):
    """A group of too few graphs had been passed over without a word (probe SEL)."""
    check_manifest(tmp_path)
    store = ResultStore(ParquetDirBackend(tmp_path), flush_every_s=60)
    for k, spec in enumerate(SKEWED[:2] + UNIFORM[:2]):
        gid, _ = add_graph(store, spec)
        devices = ("h100", "a100") if k < 2 else ("h100",)
        for device in devices:
            for label, t in zip(LABELS, SKEWED_TIMES if k < 2 else UNIFORM_TIMES, strict=True):
                store.add_trial(record(gid, spec, label, t, full_params=True, device=device,
                                       study_key=f"{gid}.bfs.{device}.s"))
    store.close()
    assert main(["select", "evaluate", "--results", str(tmp_path), "--algo", "bfs"]) == 0
    out = capsys.readouterr().out
    assert "bfs on h100: leave-one-graph-out over 4 graphs" in out
    assert "left out bfs on a100: 2 graph(s) with features, needs 3" in out
    assert main(["select", "evaluate", "--results", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [e["device"] for e in doc["evaluations"]] == ["h100"]
    assert doc["left_out_groups"] == [{"algorithm": "bfs", "device": "a100",
                                       "why": "2 graph(s) with features, needs 3"}]


def test_a_model_whose_schema_version_is_true_is_refused(synthetic, tmp_path):
    """``true == 1`` had passed for selector schema version 1."""
    root, _ = synthetic
    path = save_model(train(load_matrix(root, "bfs", "h100")), tmp_path / "m.json", str(root))
    doc = json.loads(path.read_text())
    doc["schema_version"] = True
    path.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match="has selector schema version True"):
        load_model(path)


def _tiny_sweep(tmp_path, mappings: str) -> tuple[str, str]:
    """A grid sweep of BFS on three small graphs over ``mappings`` (W = 4 and 32 for vwarp):
    its results directory, and a model path beside it."""
    space = tmp_path / "tiny.yaml"
    space.write_text(f"name: tiny\nparams:\n  mapping: {{choices: [{mappings}]}}\n"
                     "  w:\n    choices: [4, 32]\n    when: {mapping: vwarp}\n")
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("sampler: grid\nsources: 1\ngraphs:\n  - rmat:scale=7,seed=1\n"
                     "  - grid2d:rows=8,cols=8\n  - random:n=128,deg=4,seed=1\n"
                     f"algorithms: [bfs]\ndevices: [h100]\nspaces: [{space}]\n")
    res, model = str(tmp_path / "res"), str(tmp_path / "m.json")
    assert main(["sweep", str(sweep), "--workers", "0", "--results", res, "-q"]) == 0
    return res, model


def test_verbs_end_to_end_on_a_tiny_real_sweep(tmp_path, capsys):
    res, model = _tiny_sweep(tmp_path, "thread, vwarp, adaptive")
    capsys.readouterr()

    assert main(["select", "train", "--results", res, "--model", model]) == 0
    out = capsys.readouterr().out
    assert "bfs on h100: 3 graphs" in out and "model written to" in out
    assert "so in-sample (select evaluate gives the held-out one" in out  # (probe ADP)

    assert main(["select", "evaluate", "--results", res, "--json"]) == 0
    [ev] = json.loads(capsys.readouterr().out)["evaluations"]
    assert len(ev["rows"]) == 3
    assert all(v >= 1.0 for r in ev["rows"] for v in r["regrets"].values())
    assert main(["select", "evaluate", "--results", res]) == 0
    assert "geometric mean" in capsys.readouterr().out

    assert main(["select", "recommend", "--graph", "rmat:scale=8,seed=5", "--model", model,
                 "--verify", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert isinstance(rec["extrapolated"], bool) and rec["nearest_distance"] >= 0
    graph = load_graph("rmat:scale=8,seed=5")
    fr = functional_run(graph, "bfs")
    assert rec["verify"]["time_us"] == simulate(graph, "bfs", rec["config"], "h100",
                                                functional=fr).time_us
    assert rec["verify"]["thread_time_us"] == simulate(graph, "bfs", None, "h100",
                                                       functional=fr).time_us
    assert rec["neighbours"] and rec["predicted_time_us"] > 0
    assert main(["select", "recommend", "--graph", "grid2d:rows=9,cols=9", "--model", model,
                 "--verify"]) == 0
    out = capsys.readouterr().out
    assert "config" in out and "verified    simulated" in out
    assert "in-sample" not in out
    # a training graph's recommendation says it is in-sample (probe ADP)
    assert main(["select", "recommend", "--graph", "grid2d:rows=8,cols=8", "--model",
                 model]) == 0
    assert "so the prediction is in-sample" in capsys.readouterr().out

    assert main(["select", "adaptive", "--results", res]) == 0
    assert "best adaptive against best constant" in capsys.readouterr().out

    # the calibrated H100's device file is the h100 preset's fields under another name
    calibrated = str(Path(__file__).resolve().parents[1] / "bench/gpu/results/h100.toml")
    assert main(["select", "recommend", "--graph", "grid2d:rows=9,cols=9", "--model", model,
                 "--device", calibrated]) == 0
    capsys.readouterr()

    # bad input: one line, exit 2
    assert main(["select", "recommend", "--graph", "grid2d:rows=9,cols=9", "--model", model,
                 "--algo", "sssp"]) == 2
    err = capsys.readouterr().err  # the path as given, not PosixPath('...') (probe SELECT)
    assert f"the model {model!r} was trained for bfs on h100" in err
    assert main(["select", "recommend", "--graph", "grid2d:rows=9,cols=9", "--model", model,
                 "--device", "a100"]) == 2
    assert "trained for bfs on h100" in capsys.readouterr().err
    assert main(["select", "train", "--results", res, "--algo", "cc", "--model", model]) == 2
    assert "no complete results for algorithm=cc" in capsys.readouterr().err
    # a model naming an algorithm warpsweep does not run, or an SSSP model asked about a
    # graph without weights: refused before a pick, not only under --verify
    with open(model) as f:
        doc = json.load(f)
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({**doc, "algorithm": "dfs"}))
    assert main(["select", "recommend", "--graph", "grid2d:rows=9,cols=9", "--model",
                 str(odd)]) == 2
    assert "names the algorithm 'dfs'" in capsys.readouterr().err
    odd.write_text(json.dumps({**doc, "algorithm": "sssp"}))
    assert main(["select", "recommend", "--graph", "grid2d:rows=9,cols=9", "--model",
                 str(odd)]) == 2
    assert "SSSP needs edge weights" in capsys.readouterr().err


def test_a_graph_whose_features_are_not_finite_is_left_out_with_its_reason():
    """A NaN feature (no loader writes one; an edited graphs row) had reached the models'
    scaler and failed there with scikit-learn's traceback; now the graph is left out, named."""
    from tuner.selection.selector import _unusable

    assert _unusable({"avg_degree": 4.0, "degree_cv": 1.5}) is None
    assert _unusable(None) == "no features in the graphs table"
    assert _unusable({"avg_degree": 4.0, "degree_cv": float("nan")}).startswith(
        "feature degree_cv is nan in the graphs table")
    assert "feature avg_degree is inf" in _unusable({"avg_degree": float("inf")})


def test_a_device_file_reusing_the_models_device_name_is_refused(tmp_path, capsys):
    """A device file named h100 with other fields (sms = 2) had passed `select train
    --device` and `recommend --device` for the h100 the results were simulated with (the
    names alone compared), as `tune` refuses it."""
    res, model = _tiny_sweep(tmp_path, "thread, vwarp")
    other = tmp_path / "fake.toml"
    other.write_text('name = "h100"\nbase = "h100"\nsms = 2\n')
    same = tmp_path / "same.toml"
    same.write_text('name = "h100"\nbase = "h100"\n')
    capsys.readouterr()
    assert main(["select", "train", "--results", res, "--model", model, "--device",
                 str(other)]) == 2
    assert "has other fields than the h100 of the results' bfs rows" in capsys.readouterr().err
    assert main(["select", "train", "--results", res, "--model", model, "--device",
                 str(same)]) == 0
    capsys.readouterr()
    graph = ["select", "recommend", "--graph", "rmat:scale=7,seed=5", "--model", model]
    assert main([*graph, "--device", str(other)]) == 2
    assert "has other fields than the h100 of the model" in capsys.readouterr().err
    assert main([*graph, "--device", str(same)]) == 0
    assert json.loads(open(model).read())["device_digest"]
    # without --device too: a model whose h100 is not the preset's (another version's fields,
    # or a name edited in the file) had been recommended and verified on the preset (probe SE)
    doc = json.loads(open(model).read())
    doc["device_digest"] = "0" * len(doc["device_digest"])
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["select", "recommend", "--graph", "rmat:scale=7,seed=5", "--model",
                 str(edited)]) == 2
    assert "the preset h100 has other fields than the h100 of the model" in \
        capsys.readouterr().err
    # a model of a warpsweep before models recorded the digest: its h100 is the datasheet-era
    # one, which had passed for today's calibrated h100 (probe COMPAT)
    del doc["device_digest"]
    edited.write_text(json.dumps(doc))
    assert main(["select", "recommend", "--graph", "rmat:scale=7,seed=5", "--model",
                 str(edited)]) == 2
    err = capsys.readouterr().err
    assert "has other fields than the h100 of the model" in err and "9a731a5c989842f1" in err
    # and a k beyond the graphs stored is damage, not "every graph"
    doc = json.loads(open(model).read())
    doc["hyperparameters"] = {**doc["hyperparameters"], "model": "knn", "k": 100}
    edited.write_text(json.dumps(doc))
    assert main(["select", "recommend", "--graph", "rmat:scale=7,seed=5", "--model",
                 str(edited)]) == 2
    assert "knn's k is 100, not 0 (every graph) to the" in capsys.readouterr().err


def test_a_graph_unlike_every_training_graph_is_named_extrapolated(synthetic):
    """recommend had shown "1.000x this graph's best" for a graph far from every training
    graph (91% off when simulated), with no word that the pick was extrapolated."""
    root, feats = synthetic
    selector = train(load_matrix(root, "bfs", "h100")).selector
    for spec in SKEWED + UNIFORM:  # each training graph lies on itself
        cover = selector.coverage(feats[spec])
        assert cover.nearest == pytest.approx(0.0, abs=1e-9) and not cover.extrapolated
    dense = graph_features(load_graph("random:n=2048,deg=96,seed=1"))
    cover = selector.coverage(dense)
    assert cover.extrapolated and cover.nearest > cover.spread > 0


def test_a_graph_timed_on_two_workloads_learns_one_of_them(tmp_path):
    """The selector had averaged a graph's studies of other sources: a configuration timed
    by one study could become the graph's best while it lost in each."""
    from tuner import api
    from tuner.results.query import connect
    from tuner.selection.selector import load_matrix

    res = str(tmp_path / "r")
    for sources in (1, 2):
        api.tune("rmat:scale=7,seed=1", "bfs", trials=3, sources=sources, results=res)
    api.tune("grid2d:rows=8,cols=8", "bfs", trials=3, sources=1, results=res)
    matrix = load_matrix(res, "bfs", "h100")
    rmat = next(i for i, g in enumerate(matrix.graphs) if g.graph_spec.startswith("rmat"))
    con = connect(res)
    thread = dict(con.execute("SELECT n_sources, time_us FROM trials WHERE label = 'thread' "
                              "AND graph_spec LIKE 'rmat%'").fetchall())
    key = next(k for k, c in matrix.all_configs.items()
               if c.get("mapping") == "thread" and len(c) == 4 and not c.get("defer_threshold"))
    assert matrix.all_times[rmat][key] == pytest.approx(thread[2])  # not the mean
    assert any("another workload of the graph" in why for why in matrix.dropped.values())


def _matrix_with_an_older_study(root: Path, **older: str):
    """Both graphs' rows of a study, and SKEWED[0]'s of an older one (``older``: its
    record's fields) timing thread 10 us, the fastest: the time matrix ``load_matrix``
    reads from them."""
    from datetime import UTC
    from datetime import datetime

    from tuner.selection.selector import load_matrix

    check_manifest(root)
    store = ResultStore(ParquetDirBackend(root), flush_every_s=60)
    old, new = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 6, 1, tzinfo=UTC)
    for spec in (SKEWED[0], UNIFORM[0]):
        gid, _ = add_graph(store, spec)
        newer = {"model_digest": "new"} if "model_digest" in older else {}
        for label, t in zip(LABELS, SKEWED_TIMES, strict=True):
            store.add_trial(record(gid, spec, label, t, full_params=True, timestamp=new,
                                   **newer))
        if spec == SKEWED[0]:
            for label, t in zip(LABELS, (10.0, *SKEWED_TIMES[1:]), strict=True):
                store.add_trial(record(gid, spec, label, t, full_params=True,
                                       study_key=f"{gid}.bfs.h100.older", timestamp=old,
                                       **older))
    store.close()
    matrix = load_matrix(str(root), "bfs", "h100")
    for i in range(len(matrix.graphs)):
        assert sorted(matrix.all_times[i].values()) == sorted(SKEWED_TIMES)
    return matrix


def test_a_graph_studied_under_two_cost_models_learns_the_newest(tmp_path):
    """A graph studied again after the simulator changed had had each configuration's time
    averaged over the two cost models' rows, without a word (probe REPRO)."""
    matrix = _matrix_with_an_older_study(tmp_path, model_digest="old")
    (why,) = [why for g, why in matrix.dropped.items() if "[cost model old]" in g]
    assert "older cost model" in why and "(new)" in why


def test_two_studies_timing_the_same_knobs_apart_learn_the_newer(tmp_path):
    """Rows of two versions of one policy file (or a device file's fields under one name)
    carry the same knobs; their times had been averaged into one no run gave (probe
    SELECT)."""
    matrix = _matrix_with_an_older_study(tmp_path)
    (why,) = [why for g, why in matrix.dropped.items() if "in study" in g and "older" in g]
    assert "newer study" in why


def test_evaluate_refuses_a_group_it_does_not_hold(synthetic):
    """``evaluate(results, "BFS")`` had returned [] without a word, where the CLI refuses
    it; a seed of another type had ended in sklearn's traceback (probe API)."""
    from tuner.selection.selector import evaluate

    root, _ = synthetic
    for algorithm, device in (("BFS", None), ("sssp", None), (None, "x")):
        with pytest.raises(ConfigError, match="no complete results for"):
            evaluate(root, algorithm, device)
    with pytest.raises(ConfigError, match="seed must be an integer"):
        evaluate(root, "bfs", seed="1")
    for seed in (-1, 2**32):  # out of range: sklearn's traceback, or taken unused
        with pytest.raises(ConfigError, match=f"seed must be from 0 to 4294967295, got {seed}"):
            evaluate(root, "bfs", seed=seed)


def test_a_configurations_label_names_its_worklist():
    """A data-driven thread configuration had been labelled as the topology one."""
    from simulator.strategy import Strategy
    from tuner.selection.selector import describe_config

    labels = {describe_config(Strategy.parse(c).to_params())
              for c in ("mapping=thread", "mapping=thread,driven=data",
                        "mapping=thread,driven=data,push=block")}
    assert labels == {"thread", "thread driven=data", "thread driven=data push=block"}


def test_a_policy_fit_on_no_rows_is_a_clear_error():
    """A leave-one-graph-out fold of one or two graphs had died on numpy's reduction
    error."""
    from simulator.errors import ConfigError
    from tuner.selection.adaptive_policy import fit_tree

    with pytest.raises(ConfigError, match="needs graphs besides the one held out"):
        fit_tree(np.zeros((0, 3)), np.zeros((0, 2)), 2, 0.0)


def test_ties_go_to_the_configuration_of_fewer_knobs():
    """W = 32 and W = 32 deferring at 64 time alike where no vertex passes 64: the plain one
    comes first, so an argmin over equal times picks it (sorted by text, the deferring one had
    been first and was picked on a skewed held-out graph, 1.41x its best: probe SE)."""
    from tuner.results.configs import canonical_params
    from tuner.results.configs import config_key
    from tuner.selection.selector import candidate_order

    plain = canonical_params({"mapping": "vwarp", "w": 32})
    deferring = canonical_params({"mapping": "vwarp", "w": 32, "defer_threshold": 64})
    configs = {config_key(c): c for c in (deferring, plain)}
    assert sorted(configs)[0] == config_key(deferring)  # what the order had been
    assert candidate_order(set(configs), configs) == [config_key(plain), config_key(deferring)]


def test_a_mean_over_fewer_graphs_says_so(synthetic):
    """A configuration without a complete time on a graph (its rows failed) shows "-" there,
    and its column's mean is over the others: said under the table, where means over 2 and 3
    graphs had stood side by side without a word (probe SE)."""
    from tuner.cli.select import evaluation_table

    root, _ = synthetic
    [ev] = evaluate(root, "bfs", "h100")
    assert "mean is over" not in evaluation_table(ev)
    ev.rows[0].regrets[POLICY_W32] = math.nan
    assert "w=32's mean is over 7 of 8 graphs: its configuration has no complete time on " \
        in evaluation_table(ev)


def test_one_nearest_graph_says_its_1x_is_no_estimate():
    """With k = 1 the pick is the nearest graph's best, so "1.000x this graph's best" holds
    by construction, extrapolated or not (probe SE: -33% when simulated)."""
    from tuner.cli.select import recommend_text

    neighbour = {"name": "g1", "graph_spec": "rmat:scale=8", "distance": 9.7, "weight": 1.0,
                 "time_us": 10.0, "best_time_us": 10.0}
    out = {"graph": "file:one.txt", "n": 2, "m": 1, "model": "knn", "algorithm": "bfs",
           "device": "h100", "setting": "knn k=1 uniform on degree", "config_label": "thread",
           "config": {"mapping": "thread"}, "path": [], "neighbours": [neighbour],
           "predicted_relative": 1.0, "predicted_time_us": 10.0, "predicted_time_basis": "x",
           "extrapolated": False}
    assert "the 1x says nothing of the error" in recommend_text(out, 8)
    out["neighbours"] = [neighbour, {**neighbour, "name": "g2"}]
    assert "the 1x says nothing" not in recommend_text(out, 8)


def test_train_names_the_configurations_not_complete_on_every_graph():
    """One graph's failed row had taken a configuration out of the candidates for every
    graph and fold without a word (probe ADP)."""
    from types import SimpleNamespace

    from tuner.cli.select import _configs_not_on_every_graph
    from tuner.results.configs import config_key

    thread, w32 = {"mapping": "thread"}, {"mapping": "vwarp", "w": 32}
    k1, k2 = config_key(thread), config_key(w32)
    matrix = SimpleNamespace(configs=[thread], all_times=[{k1: 1.0, k2: 2.0}, {k1: 1.0}],
                             all_configs={k1: thread, k2: w32})
    assert _configs_not_on_every_graph(matrix) == ["mapping=vwarp w=32"]


def test_a_short_list_of_graphs_says_what_its_remainder_counts():
    # "g lacks 3 and 2 more" had read as two more configurations (probe CR)
    from tuner.selection.selector import few

    assert few(["a lacks 3", "b lacks 2", "c lacks 1", "d lacks 1", "e lacks 1"]) == (
        "a lacks 3, b lacks 2, c lacks 1 and 2 more graphs")
    assert few(["a", "b"]) == "a, b"


def test_verify_of_a_model_trained_on_a_device_file_asks_for_the_file(tmp_path, capsys):
    """Probe DEV: `recommend --verify` of a model trained with a device file (no preset of its
    name) had said "unknown device 'x'" rather than asking for the file."""
    res, model = _tiny_sweep(tmp_path, "thread, vwarp")
    assert main(["select", "train", "--results", res, "--model", model]) == 0
    mine = tmp_path / "mine.toml"
    mine.write_text('name = "mine"\nbase = "h100"\nsms = 66\n')
    doc = json.loads(open(model).read())
    doc["device"] = "mine"
    doc["device_digest"] = device_digest(get_device(str(mine)))
    edited = tmp_path / "mine.json"
    edited.write_text(json.dumps(doc))
    argv = ["select", "recommend", "--graph", "rmat:scale=7,seed=5", "--model", str(edited)]
    capsys.readouterr()
    assert main([*argv, "--verify"]) == 2
    err = capsys.readouterr().err
    assert "trained on device 'mine', which is no preset" in err and "--device FILE" in err
    assert main([*argv, "--verify", "--device", str(mine)]) == 0


def test_a_pick_whose_policy_file_is_another_now_is_not_verified(tmp_path, monkeypatch):
    """A model learnt on a policy file; another file under its path (run from another
    directory, or retrained): `recommend --verify` had simulated the other policy and
    reported its time as the model's (review SELECT2). The model records the files by
    content, and a pick whose file differs is said so, not verified."""
    import shutil

    from tuner.cli.select import _policy_changed
    from tuner.selection.selector_model import candidate_policy_digests

    repo = Path(__file__).resolve().parents[1]
    (tmp_path / "policies").mkdir()
    shutil.copy(repo / "policies" / "bfs-h100.json", tmp_path / "policies" / "bfs-h100.json")
    monkeypatch.chdir(tmp_path)
    config = {"mapping": "adaptive", "policy": "policies/bfs-h100.json"}
    doc = {"policy_digests": candidate_policy_digests([config])}
    assert _policy_changed(config, doc) is None
    policy = tmp_path / "policies" / "bfs-h100.json"
    policy.write_text(policy.read_text() + "\n")
    assert "is not the one the model learnt" in _policy_changed(config, doc)
    assert _policy_changed(config, {}) is None  # a model of before: nothing recorded


def test_a_graph_whose_every_evaluation_failed_is_named_as_left_out(tmp_path):
    """It had left the matrix without a word, where `best` names such a study (review
    SELECT2)."""
    from tuner.cli import main

    device = tmp_path / "small256.toml"
    device.write_text('name = "small256"\nbase = "h100"\nmax_threads_per_block = 256\n')
    bad, good = tmp_path / "bad.yaml", tmp_path / "good.yaml"
    bad.write_text("name: bad\ndescription: fails\nparams:\n  mapping: {choices: [vwarp]}\n"
                   "  w: {choices: [4, 8]}\n  block_size: {choices: [512]}\n")
    good.write_text("name: good\ndescription: runs\nparams:\n  mapping: {choices: [vwarp]}\n"
                    "  w: {choices: [4, 8]}\n")
    results = tmp_path / "r"
    common = ["--algo", "bfs", "--device", str(device), "--sampler", "grid", "--trials", "2",
              "--workers", "0", "--sources", "1", "--results", str(results), "-q"]
    assert main(["tune", "--graph", "rmat:scale=6,seed=1", "--space", str(bad),
                 "--no-references", *common]) == 1  # every evaluation failed
    for graph in ("rmat:scale=6,seed=2", "grid2d:rows=8,cols=8", "random:n=64,deg=4,seed=1"):
        assert main(["tune", "--graph", graph, "--space", str(good), *common]) == 0
    matrix = load_matrix(results, "bfs", "small256")
    assert len(matrix.graphs) == 3
    (why,) = matrix.dropped.values()
    assert why.startswith("every evaluation failed (rmat:scale=6,") and "seed=1)" in why


def test_two_graphs_of_one_name_read_apart_in_the_select_tables():
    """Two files of one name (in two directories) had made two identical rows in select
    evaluate, adaptive and recommend, where best tells them apart by id (review SELECT2)."""
    from tuner.cli.select import evaluation_table
    from tuner.selection.selector import Evaluation
    from tuner.selection.selector import GraphRegret

    policies = ["selector", "thread", "w=32", "w=pow2", "best1"]
    rows = [GraphRegret(gid, f"file:/{d}/g.txt", 10.0, {}, dict.fromkeys(policies, 1.0),
                        {"selector": {"mapping": "thread"}}, graph_name="g")
            for gid, d in (("g-1111aaaa", "a"), ("g-2222bbbb", "b"))]
    table = evaluation_table(Evaluation("bfs", "h100", policies, rows,
                                        dict.fromkeys(policies, 1.0)))
    assert "g-1111aaaa" in table and "g-2222bbbb" in table
