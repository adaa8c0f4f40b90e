"""Per-iteration policies (issue 45): the runner against constant runs, the switch and
feature-counter costs counted on paper, the oracle's dynamic programme, the cost-sensitive
tree, leave-one-graph-out really leaving the graph out, policy files and ``policy=FILE``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from simulator import Graph
from simulator import Strategy
from simulator import functional_run
from simulator import simulate
from simulator.auxiliary_kernels import compaction_kernel
from simulator.costs import total_cost
from simulator.device import Device
from simulator.device import get_device
from simulator.errors import ConfigError
from simulator.load import load_graph
from simulator.policy import FEATURES
from simulator.policy import Policy
from simulator.policy import feature_counter_cost
from simulator.policy import load_policy
from simulator.policy import policy_iteration_costs
from tests.hand_counted import star_graph
from tuner.selection.adaptive import IterationTable
from tuner.selection.adaptive import oracle
from tuner.selection.adaptive import schedule_family
from tuner.selection.adaptive_policy import GATE_GAIN
from tuner.selection.adaptive_policy import Fitted
from tuner.selection.adaptive_policy import Samples
from tuner.selection.adaptive_policy import fit_selector
from tuner.selection.adaptive_policy import fit_tree
from tuner.selection.adaptive_policy import fold_fit
from tuner.selection.adaptive_policy import graft
from tuner.selection.adaptive_policy import graph_ratio
from tuner.selection.adaptive_policy import prune
from tuner.selection.adaptive_policy import selector_costs
from tuner.selection.adaptive_policy import tree_choices

H100 = get_device("h100")
TOPO, DATA = "mapping=vwarp,w=8", "mapping=vwarp,w=32,driven=data"


def path_graph(n: int = 12) -> Graph:
    """0 - 1 - ... - n-1, undirected, random weights: one vertex per level, no duplicates."""
    a = np.arange(n - 1)
    rng = np.random.default_rng(0)
    w = rng.integers(1, 9, size=n - 1)
    return Graph.from_edges(np.concatenate([a, a + 1]), np.concatenate([a + 1, a]), n,
                            weights=np.concatenate([w, w]).astype(np.float64), name="path")


def _us(its) -> float:
    return H100.us(total_cost([it.cost for it in its]).cycles)


@pytest.mark.parametrize("algo", ["bfs", "sssp"])
@pytest.mark.parametrize("config", [TOPO, DATA, "mapping=thread,donate_threshold=0"])
def test_one_candidate_schedule_is_the_constant_run(algo, config):
    g = star_graph(np.arange(1, 41, dtype=np.float64))
    fr = functional_run(g, algo, 0)
    want = simulate(g, algo, config, "h100", functional=fr)
    its = policy_iteration_costs(fr, Policy((Strategy.parse(config),), schedule=(0,)), H100,
                                 count_features=False)
    assert len(its) == want.iterations
    assert _us(its) == pytest.approx(want.time_us, rel=1e-12)


@pytest.mark.parametrize("algo", ["sssp", "cc"])
def test_a_plain_store_candidate_runs_the_constant_runs_verify_sweeps(algo):
    # the policy's loop had stopped where the worklist emptied: no verify sweep repaired the
    # lowerings racing stores lost (rmat9 SSSP: 9 launches, 656 us, against 14 and 949 us;
    # one distance 80 where Dijkstra's is 49; probe CORRECT)
    g = load_graph("rmat:scale=9,seed=2,weights=random")
    fr = functional_run(g, algo)
    config = "driven=data,relax=store"
    want = simulate(g, algo, config, "h100", functional=fr, trace=True)
    # SSSP's stores lose a lowering the first verify sweep repairs; CC's lose none
    assert list(want.trace["form"]).count("topology") == (2 if algo == "sssp" else 1)
    its = policy_iteration_costs(fr, Policy((Strategy.parse(config),), schedule=(0,)), H100,
                                 count_features=False)
    assert [it.form for it in its] == list(want.trace["form"])
    assert _us(its) == pytest.approx(want.time_us, rel=1e-12)


def test_feature_counters_hand_counted():
    # 40 frontier vertices, 70 tasks: ceil(70 / 32) = 3 rounds on each counter word at
    # atomic_cycles; 3 x ceil(40/32) + 2 x ceil(70/32) = 6 + 6 atomics; 40 row-bound sectors
    dev = Device("paper", simd_width=32, sms=1, schedulers=1, max_warps_per_sm=1,
                 max_blocks_per_sm=1, clock_ghz=1.0, dram_bandwidth_gbs=64.0,
                 dram_latency_cycles=100, atomic_cycles=5.0)
    cost = feature_counter_cost(40, 70, dev)
    # 3 x 5 cycles + 40 sectors x 32 bytes at 64 bytes a cycle = 15 + 20
    assert cost.cycles == pytest.approx(35.0)
    assert cost.extra_cycles == cost.cycles
    assert cost.atomics == 12 and cost.transactions == 40


def test_switch_pays_compaction_and_scatter():
    """BFS on a path (no duplicates): a schedule topology, topology, data, data, topology...
    costs each iteration as its constant run does, plus a compaction where it turns to the
    worklist (BFS's: no scatter where it turns back)."""
    g = path_graph()
    fr = functional_run(g, "bfs", 0)
    cands = (Strategy.parse(TOPO), Strategy.parse(DATA))
    const = [policy_iteration_costs(fr, Policy((s,), schedule=(0,)), H100,
                                    count_features=False) for s in cands]
    schedule = (0, 0, 1, 1, 0, 0, 0, 1, 0)
    its = policy_iteration_costs(fr, Policy(cands, schedule=schedule), H100,
                                 count_features=False)
    assert [it.choice for it in its[:9]] == list(schedule)
    assert [it.form for it in its[:4]] == ["topology", "topology", "data", "data"]
    switches = [i for i in range(1, len(its)) if its[i].choice != its[i - 1].choice]
    assert switches == [2, 4, 7, 8]
    # iteration 2 turns the sweep's levels (vertex 2's) into a worklist: BFS's compaction
    # reads levels and clears no flag; a turn back to sweeps scatters nothing (BFS's sweeps
    # find their vertices by level, as tuner/measure/kernels.cu's runner does)
    compaction = compaction_kernel(fr.n, np.array([2]), cands[1], H100, hit_rate=_hit(
        fr, True), clears=False).cycles
    assert its[2].switch_cycles == pytest.approx(compaction)
    for i, it in enumerate(its):
        base = const[it.choice][i].cost.cycles
        assert it.cost.cycles == pytest.approx(base + it.switch_cycles, rel=1e-9)
        assert (it.switch_cycles > 0) == (i in switches and it.form == "data")


def _hit(fr, worklist: bool) -> float:
    from simulator.timing import working_set_bytes
    return H100.l2_hit_rate(working_set_bytes(fr.n, fr.indices.size,
                                              reads_weights=fr.reads_weights,
                                              worklist=worklist))


def _table(times, convert, forms=("topology", "data")) -> IterationTable:
    k = len(times)
    return IterationTable("g", "bfs", "h100", 0, tuple(f"c{i}" for i in range(k)), forms,
                          [np.array(t, float) for t in times],
                          [np.array(c, float) for c in convert],
                          [np.zeros((len(t), len(FEATURES))) for t in times])


def test_oracle_pays_switches():
    # per-iteration costs: c0 wins iterations 0-1, c1 iterations 2-3 by 3 each
    times = [[1, 1, 10, 10], [5, 5, 7, 7]]
    # cheap switch: c0 c0 c1 c1 = 1 + 1 + 2 (converting iteration 1's frontier) + 7 + 7
    orc = oracle(_table(times, [[2, 2, 2, 2], [2, 2, 2, 2]]))
    assert orc.time_us == 18 and orc.schedule == [0, 0, 1, 1] and orc.switches == 1
    # a switch dearer than the 6 it saves: stay on c0 (22) rather than 1 + 1 + 7 + 7 + 7
    orc = oracle(_table(times, [[7, 7, 7, 7], [7, 7, 7, 7]]))
    assert orc.time_us == 22 and orc.schedule == [0, 0, 0, 0]
    # same form: switching is free
    orc = oracle(_table(times, [[99] * 4, [99] * 4], forms=("topology", "topology")))
    assert orc.time_us == 16


def test_oracle_ends_with_its_candidate():
    # c1 ends after 2 iterations: c0 then c1 at its last iteration ends the run there
    orc = oracle(_table([[1, 1, 1, 1], [5, 1]], [[0] * 4, [0] * 2],
                        forms=("topology", "topology")))
    assert orc.time_us == 2 and orc.schedule == [0, 1]


def test_schedule_family_by_hand():
    # runs: 1 x2, 7 x3, 1 x1; best constant 7
    fam = schedule_family([1, 1, 7, 7, 7, 1], 7)
    assert fam == [(1, 1, 7, 7, 7, 1), (1, 1), (1, 1, 7), (1, 1, 7, 7, 7),
                   (1, 1, 7, 7, 7, 7), (1, 1, 7, 7, 7, 1, 7)]
    assert schedule_family([1, 1, 7, 7, 7, 1], 7, segments=1) == [
        (1, 1, 7, 7, 7, 1), (1, 1), (1, 1, 7)]


def test_cost_sensitive_tree_finds_the_split():
    x = np.zeros((40, len(FEATURES)))
    x[:, 0] = np.linspace(0, 1, 40)
    cost = np.where(x[:, [0]] <= 0.5, [1.0, 3.0], [3.0, 1.0])
    tree = fit_tree(x, cost, depth=2, min_leaf=0.05)
    assert tree["feature"] == FEATURES[0] and 0.48 < tree["threshold"] < 0.52
    assert (tree_choices(tree, x) == (x[:, 0] > 0.5)).all()
    assert fit_tree(x, cost, depth=0, min_leaf=0.05) == {"choose": 0}
    # rows x <= 0.5 all from graph 0, the rest from graphs 1 and 2: at min_graphs=2 a leaf
    # of graph 0's rows alone is refused; the best allowed cut takes one row of graph 1 with
    # them (that row costs 3 instead of 1)
    groups = np.where(x[:, 0] <= 0.5, 0, np.where(x[:, 0] <= 0.75, 1, 2))
    assert fit_tree(x, cost, 1, 0.0, groups=groups, min_graphs=1) == tree
    two = fit_tree(x, cost, 1, 0.0, groups=groups, min_graphs=2)
    assert two["threshold"] == pytest.approx(0.5 * (x[20, 0] + x[21, 0]))
    assert (tree_choices(two, x) != (x[:, 0] > 0.5)).sum() == 1
    assert "choose" in fit_tree(x, cost, 1, 0.0, groups=groups, min_graphs=3)


def _samples(x, cost, groups, convert=None, data=None, winners=None) -> Samples:
    """Samples with each graph's constants summed from its rows (BFS-like: every candidate
    runs every row)."""
    k = cost.shape[1]
    graphs = np.unique(groups)
    constant = np.array([cost[groups == g].sum(axis=0) for g in graphs])
    return Samples(x, cost, groups, [f"g{g}" for g in graphs],
                   np.zeros_like(cost) if convert is None else convert,
                   np.zeros(k, bool) if data is None else np.asarray(data),
                   constant,
                   winners or [set(range(k)) for _ in graphs])


def test_leave_one_graph_out_never_sees_the_held_out_graph():
    rng = np.random.default_rng(1)
    groups = np.repeat(np.arange(5), 12)
    x = rng.random((60, len(FEATURES)))
    cost = rng.random((60, 3)) + 0.1
    winners = [{0, 1}, {1}, {2}, {0}, {1, 2}]
    s = _samples(x, cost, groups, winners=winners)
    held = fold_fit(s, 2)
    assert list(held.candidates) == [0, 1, 2] and list(fold_fit(s, 4).candidates) == [0, 1, 2]
    assert list(fold_fit(_samples(x, cost, groups, winners=[{0}, {0}, {2}, {0}, {1}]), 2)
                .candidates) == [0, 1]  # graph 2's winner (2) is not among its fold's
    # whatever graph 2's rows, constants and winners say, the model made without it is the same
    cost2 = cost.copy()
    cost2[groups == 2] = rng.random((12, 3)) * 100
    x2 = x.copy()
    x2[groups == 2] = rng.random((12, len(FEATURES)))
    s2 = _samples(x2, cost2, groups, winners=[*winners[:2], {0, 1, 2}, *winners[3:]])
    other = fold_fit(s2, 2)
    assert other.tree == held.tree and other.kind == held.kind
    # the policy file names the code that made it (the shipped ones had not)
    from tuner.env import git_commit
    from tuner.selection.adaptive_policy import make_policy

    doc = make_policy(held, ["mapping=thread", "mapping=vwarp,w=8", "mapping=vwarp,w=32"],
                      "p").to_json()
    assert doc["git_commit"] == git_commit() and doc["warpsweep_version"]
    assert other.selector.inner == held.selector.inner
    # ... while another fold, which trains on graph 2, sees the change
    assert fold_fit(s2, 0).adaptive.inner != fold_fit(s, 0).adaptive.inner


def test_graph_ratio_counts_switches_by_hand():
    # one graph, 3 iterations, candidates c0 (topology) and c1 (data); the tree picks c0 at
    # iteration 0 and c1 after: cost 1 + 2 + 2, plus converting iteration 0's frontier out
    # of c0 (0.5); c1 alone costs 3 + 2 + 2 = 7, c0 alone 1 + 4 + 4 = 9
    x = np.zeros((3, len(FEATURES)))
    x[:, FEATURES.index("iteration")] = [0, 1, 2]
    cost = np.array([[1.0, 3.0], [4.0, 2.0], [4.0, 2.0]])
    convert = np.array([[0.5, 0.25], [0.5, 0.25], [0.5, 0.25]])
    s = _samples(x, cost, np.zeros(3, int), convert, data=[False, True])
    tree = {"feature": "iteration", "threshold": 0.5, "le": {"choose": 0}, "gt": {"choose": 1}}
    assert graph_ratio(tree, s, 0) == pytest.approx(5.5)
    assert graph_ratio(tree, s, 0, switches=False) == pytest.approx(5.0)
    # same form: no conversion
    assert graph_ratio(tree, _samples(x, cost, np.zeros(3, int), convert,
                                      data=[True, True]), 0) == pytest.approx(5.0)
    # a tree that keeps one candidate costs that candidate's constant run
    assert graph_ratio({"choose": 1}, s, 0) == pytest.approx(7.0)


def test_pruning_drops_a_split_whose_switch_eats_its_gain():
    x = np.zeros((3, len(FEATURES)))
    x[:, FEATURES.index("iteration")] = [0, 1, 2]
    # per iteration: c0 1, 4, 4; c1 2, 2, 2: the split (1 + 2 + 2 = 5) saves 1 over c1
    # alone (6) before the conversion of iteration 0's frontier
    cost = np.array([[1.0, 2.0], [4.0, 2.0], [4.0, 2.0]])
    tree = {"feature": "iteration", "threshold": 0.5, "le": {"choose": 0}, "gt": {"choose": 1}}
    cheap = _samples(x, cost, np.zeros(3, int), np.full((3, 2), 0.5), data=[False, True])
    dear = _samples(x, cost, np.zeros(3, int), np.full((3, 2), 1.5), data=[False, True])
    assert prune(tree, cheap, [0]) == tree            # 5.5 < 6: keep the split
    assert prune(tree, dear, [0]) == {"choose": 1}    # 6.5 > 6: keep c1 throughout
    assert fit_tree(x, cost, 1, 0.0) == tree          # the fit alone sees no switch


def test_selector_adapts_only_where_the_tree_wins_by_the_margin():
    # six graphs: 0-2 small, 3-5 large; constants c0 wins the small (c1 1.3x), c1 the large
    x = np.zeros((12, len(FEATURES)))
    x[:, FEATURES.index("vertices")] = np.repeat([10, 20, 30, 1000, 2000, 3000], 2)
    groups = np.repeat(np.arange(6), 2)
    s = _samples(x, np.ones((12, 2)), groups)
    s.constant = np.array([[1.0, 1.3]] * 3 + [[1.3, 1.0]] * 3)
    tree = {"feature": "edge_frac", "threshold": 0.1, "le": {"choose": 1},
            "gt": {"choose": 0}}
    # the tree's leave-one-out figures: 10% better on the small graphs, 10% worse on the large
    adaptive = Fitted(tree, 1, 0.05, 1.0, {0: 0.9, 1: 0.9, 2: 0.9, 3: 1.1, 4: 1.1, 5: 1.1})
    assert selector_costs(s, adaptive)[0, 2] == pytest.approx(0.9 * (1 + GATE_GAIN))
    selector = fit_selector(s, np.arange(6), adaptive)
    assert selector.tree == {"feature": "vertices", "threshold": 515.0,
                             "le": {"choose": 2}, "gt": {"choose": 1}}
    # leave-one-out: without graph 3 the split falls at (30 + 2000) / 2, so graph 3 (1000
    # vertices) adapts and loses 10%; the others get their leaf's choice
    assert selector.inner == pytest.approx({0: 0.9, 1: 0.9, 2: 0.9, 3: 1.1, 4: 1.0, 5: 1.0})
    assert selector.cv_geomean == pytest.approx(math.exp((3 * math.log(0.9) + math.log(1.1))
                                                         / 6))
    grafted, adapt, leaves = graft(selector.tree, tree, 2)
    assert (adapt, leaves) == (1, 2) and grafted["le"] == tree
    # a gain under GATE_GAIN (0.5%) keeps the small graphs' constant
    adaptive.inner.update({0: 0.995, 1: 0.995, 2: 0.995})
    selector = fit_selector(s, np.arange(6), adaptive)
    assert graft(selector.tree, tree, 2)[1] == 0
    assert sorted(leaf["choose"] for leaf in [selector.tree["le"], selector.tree["gt"]]) \
        == [0, 1]
    # no tree (a leaf): never adapt
    assert (selector_costs(s, Fitted({"choose": 0}, 0, 0.05, 1.0, {}))[:, 2] == 1e6).all()


def test_a_graph_level_policy_keeps_one_candidate_and_pays_no_counters():
    """A tree over graph-level features is a per-graph constant: the run is the constant
    run to the last bit (no feature counters), and which constant depends on the graph."""
    small, big = path_graph(12), path_graph(60)
    tree = {"feature": "vertices", "threshold": 40.0, "le": {"choose": 0}, "gt": {"choose": 1}}
    policy = Policy((Strategy.parse(TOPO), Strategy.parse(DATA)), tree=tree)
    assert policy.constant() and not policy.needs_counters()
    for g, config in ((small, TOPO), (big, DATA)):
        fr = functional_run(g, "bfs", 1)
        its = policy_iteration_costs(fr, policy, H100)
        assert _us(its) == pytest.approx(simulate(g, "bfs", config, "h100", functional=fr)
                                         .time_us, rel=1e-12)
        assert all(it.feature_cycles == 0 for it in its)
    frontier = Policy(policy.candidates, tree={**tree, "feature": "edge_frac"})
    assert not frontier.constant() and frontier.needs_counters()
    its = policy_iteration_costs(functional_run(small, "bfs", 1), frontier, H100)
    assert all(it.feature_cycles > 0 for it in its)
    # graph-level split first: the small graph reaches a frontier split (counters paid), the
    # big one a leaf (its constant run, no counters)
    mixed = Policy(policy.candidates, tree={**tree, "le": {**tree, "feature": "edge_frac",
                                                           "threshold": 0.5}})
    assert mixed.residual({"vertices": 60.0}) == {"choose": 1}
    assert mixed.residual({"vertices": 12.0})["feature"] == "edge_frac"
    assert all(it.feature_cycles > 0 for it in policy_iteration_costs(
        functional_run(small, "bfs", 1), mixed, H100))
    fr = functional_run(big, "bfs", 1)
    its = policy_iteration_costs(fr, mixed, H100)
    assert all(it.feature_cycles == 0 for it in its)
    assert _us(its) == pytest.approx(simulate(big, "bfs", DATA, "h100", functional=fr).time_us,
                                     rel=1e-12)


@pytest.mark.parametrize("algorithm", ["bfs", "sssp", "cc"])
def test_a_policy_whose_leaves_all_choose_one_candidate_pays_no_counters(algorithm):
    """A tree splitting on the frontier whose leaves all choose one candidate (or a policy of
    one candidate) keeps that candidate whatever it counts: its run is the constant run to
    the last bit, as docs/selector.md says (probe CORRECT2: it had paid the counters)."""
    graph = load_graph("rmat:scale=9,ef=8,weights=random,seed=1")
    fr = functional_run(graph, algorithm)
    tree = {"feature": "frontier_frac", "threshold": 0.5, "le": {"choose": 0},
            "gt": {"choose": 0}}
    constant = simulate(graph, algorithm, DATA, "h100", functional=fr).time_us
    for candidates in ((Strategy.parse(DATA),), (Strategy.parse(DATA), Strategy.parse(TOPO))):
        policy = Policy(candidates, tree=tree)
        assert policy.constant() and not policy.needs_counters()
        its = policy_iteration_costs(fr, policy, H100)
        assert all(it.feature_cycles == 0 for it in its)
        assert _us(its) == pytest.approx(constant, rel=1e-12)
    two = Policy((Strategy.parse(DATA), Strategy.parse(TOPO)),
                 tree={**tree, "gt": {"choose": 1}})
    assert not two.constant() and two.needs_counters()


def test_tune_searches_the_policy_space_in_process(tmp_path, monkeypatch):
    """search_spaces/policy.yaml end to end: a few trials on a generated graph, in this
    process (workers=0), each a run of policies/bfs-h100.json with policy_t1 sampled."""
    from pathlib import Path

    from tuner import api

    root = Path(__file__).resolve().parent.parent
    monkeypatch.chdir(root)  # the space names the policy file relative to the repository
    run = api.tune("rmat:scale=9,seed=2", "bfs", space="policy", trials=4, sources=1,
                   results=str(tmp_path / "results"), workers=0)
    (study,) = run.studies
    assert study.done == 4 and study.failed == 0
    rows = api.load_results(tmp_path / "results")
    trials = rows[rows["role"] == "trial"]
    assert len(trials) == 4 and (trials["policy"] == "policies/bfs-h100.json").all()
    assert trials["policy_t1"].between(0.25, 4.0).all()
    t1 = float(trials["policy_t1"].iloc[0])
    want = simulate(load_graph("rmat:scale=9,seed=2"), "bfs",
                    f"policy=policies/bfs-h100.json,policy_t1={t1!r}", "h100",
                    source=int(study.graph.sources[0]))
    assert float(trials["time_us"].iloc[0]) == pytest.approx(want.time_us, rel=1e-9)


def test_policy_file_rules_and_strategy(tmp_path):
    tree = {"feature": "frontier_frac", "threshold": 0.2,
            "le": {"choose": 1}, "gt": {"choose": 0}}
    policy = Policy((Strategy.parse(TOPO), Strategy.parse(DATA)), tree=tree, name="t")
    path = policy.save(tmp_path / "p.json")
    doc = json.loads(path.read_text())
    assert doc["rules"] == [
        {"when": "frontier_frac <= 0.2", "choose": 1, "config": str(Strategy.parse(DATA))},
        {"when": "frontier_frac > 0.2", "choose": 0, "config": str(Strategy.parse(TOPO))}]
    assert Policy.from_json(doc) == policy
    assert policy.scaled({0: 2.0}).tree["threshold"] == pytest.approx(0.4)
    g = star_graph(np.arange(1, 41, dtype=np.float64))
    r = simulate(g, "bfs", f"policy={path}", "h100", source=1, trace=True)
    # from leaf 1: frontier 1/64 (worklist), then the hub, then 39 of 64 leaves (a sweep)
    assert list(r.trace["choice"]) == [1, 1, 0]
    assert r.trace["rule"][2] == "frontier_frac > 0.2"
    assert list(r.trace["form"]) == ["data", "data", "topology"]
    assert r.trace["switch_us"].sum() == 0  # BFS's turn to a sweep scatters nothing
    assert (r.output == simulate(g, "bfs", TOPO, "h100", source=1).output).all()
    scaled = simulate(g, "bfs", f"policy={path},policy_t1=4", "h100", source=1, trace=True)
    assert list(scaled.trace["choice"]) == [1, 1, 1]


def test_policy_refuses_bad_input(tmp_path):
    with pytest.raises(ConfigError, match="plain topology or data"):
        Policy((Strategy.parse("driven=temporal"),), schedule=(0,))
    with pytest.raises(ConfigError, match="features are"):
        Policy((Strategy(),), tree={"feature": "nope", "threshold": 1,
                                    "le": {"choose": 0}, "gt": {"choose": 0}})
    with pytest.raises(ConfigError, match="not one of"):
        Policy((Strategy(),), tree={"choose": 3})
    with pytest.raises(ConfigError, match="policy_t1 > 0"):
        Strategy.parse("policy=x.json,policy_t1=0")
    with pytest.raises(ConfigError, match="does not exist"):
        simulate(star_graph(), "bfs", f"policy={tmp_path / 'none.json'}", "h100", source=0)
    p = Policy((Strategy(),), schedule=(0,)).save(tmp_path / "p.json")
    with pytest.raises(ConfigError, match="runs bfs"):
        simulate(star_graph(), "pagerank", f"policy={p}", "h100")
    # a policy learnt on SSSP's runs, run on BFS; rules edited apart from the tree
    shipped = Path(__file__).resolve().parents[1] / "policies"
    with pytest.raises(ConfigError, match="is for sssp, not bfs"):
        simulate(star_graph(), "bfs", f"policy={shipped / 'sssp-h100.json'}", "h100", source=0)
    doc = json.loads((shipped / "bfs-h100.json").read_text())
    doc["rules"][0]["choose"] = 1 - doc["rules"][0]["choose"]
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match="rules` are not its tree's"):
        simulate(star_graph(), "bfs", f"policy={edited}", "h100", source=0)
    # a schedule's rules saying otherwise had run the schedule without a word (probe SELECT)
    edited.write_text(json.dumps({
        "format": "warpsweep-policy", "schema_version": 1,
        "candidates": [{"mapping": "vwarp", "w": 8}, {"mapping": "thread"}],
        "schedule": [0, 1], "rules": [{"when": "always", "choose": 1}]}))
    with pytest.raises(ConfigError, match="rules` are not its schedule's"):
        simulate(star_graph(), "bfs", f"policy={edited}", "h100", source=0)
    # the last entry's rule holds from there on, as the schedule runs (review CR15)
    doc = json.loads(edited.read_text())
    doc["rules"] = [{"when": "iteration == 0", "choose": 0},
                    {"when": "iteration >= 1", "choose": 1}]
    edited.write_text(json.dumps(doc))
    assert simulate(star_graph(), "bfs", f"policy={edited}", "h100", source=0).time_us > 0
    # with each candidate's config, as a tree's rules are written; one entry's `>= 0`
    # (review CR16)
    configs = [str(Strategy.from_params(c)) for c in doc["candidates"]]
    doc["rules"] = [{**r, "config": configs[r["choose"]]} for r in doc["rules"]]
    edited.write_text(json.dumps(doc))
    assert simulate(star_graph(), "bfs", f"policy={edited}", "h100", source=0).time_us > 0
    doc["rules"][1]["config"] = configs[0]  # a config not its candidate's
    edited.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match="rules` are not its schedule's"):
        simulate(star_graph(), "bfs", f"policy={edited}", "h100", source=0)
    edited.write_text(json.dumps({**doc, "schedule": [1], "rules": [
        {"when": "iteration >= 0", "choose": 1}]}))
    assert simulate(star_graph(), "bfs", f"policy={edited}", "h100", source=0).time_us > 0
    # the last rule `always`, first match winning, is the same; `true` for 1 is not
    # (review CR17)
    rules = [{"when": "iteration == 0", "choose": 0}, {"when": "always", "choose": 1}]
    edited.write_text(json.dumps({**doc, "schedule": [0, 1], "rules": rules}))
    assert simulate(star_graph(), "bfs", f"policy={edited}", "h100", source=0).time_us > 0
    # and so is `iteration >= 0` there, as `always` (review CR18)
    rules[1]["when"] = "iteration >= 0"
    edited.write_text(json.dumps({**doc, "schedule": [0, 1], "rules": rules}))
    assert simulate(star_graph(), "bfs", f"policy={edited}", "h100", source=0).time_us > 0
    rules[1]["choose"] = True
    edited.write_text(json.dumps({**doc, "schedule": [0, 1], "rules": rules}))
    with pytest.raises(ConfigError, match="rules` are not its schedule's"):
        simulate(star_graph(), "bfs", f"policy={edited}", "h100", source=0)


def test_report_section_rows_and_verdicts(tmp_path, monkeypatch):
    from tuner.analysis.figures import adaptation_figure
    from tuner.selection.adaptive import AdaptationRow
    from tuner.selection.adaptive import adaptation_rows

    monkeypatch.setenv("WARPSWEEP_CACHE", str(tmp_path))
    rows, skipped = adaptation_rows([("grid2d:rows=8,cols=8", "bfs", "h100"),
                                     ("grid2d:rows=8,cols=8", "pagerank", "h100"),
                                     ("grid2d:rows=8,cols=8", "cc", "h100"),
                                     ("nonsense:x=1", "bfs", "h100")])
    # CC, which takes no source, has its row (its source had been int(None): left out)
    assert [r.algorithm for r in rows] == ["bfs", "cc"]
    assert len(skipped) == 1 and "nonsense" in skipped[0]
    assert rows[0].gain >= 1.0 and list(tmp_path.glob("adaptive/*.json"))
    keep = AdaptationRow("g", "bfs", "h100", "mapping=vwarp,w=8", 100.0, 99.0, 1)
    assert keep.verdict.startswith("under 2% (1.0%): keep the constant mapping=vwarp,w=8")
    adapt = AdaptationRow("g", "sssp", "h100", "mapping=thread", 100.0, 90.0, 2)
    assert adapt.verdict == "adaptation can save 10.0% (2 switch(es))"
    _, caption = adaptation_figure([keep, adapt], "t")
    assert "oracle 0.990x, under 2%" in caption and "oracle 0.900x" in caption
    assert "g bfs (h100): best constant" in caption  # one graph on two devices reads apart


def test_leave_one_graph_out_trains_on_train_only_graphs_and_reports_none(tmp_path,
                                                                          monkeypatch):
    from tuner.selection.adaptive import iteration_table
    from tuner.selection.adaptive_policy import leave_one_graph_out

    monkeypatch.setenv("WARPSWEEP_CACHE", str(tmp_path))
    cands = ("mapping=thread,donate_threshold=0", "mapping=vwarp,w=8", DATA)
    specs = ["grid2d:rows=8,cols=8", "rmat:scale=7,seed=1", "random:n=128,deg=4,seed=1"]
    tables = [iteration_table(s, "bfs", candidates=cands) for s in specs]
    extra = [iteration_table("rmat:scale=8,seed=2", "bfs", candidates=cands)]
    rows = leave_one_graph_out(specs, tables, "bfs", candidates=cands, train_only=extra)
    assert [r.graph for r in rows] == [t.graph for t in tables]
    for r in rows:
        assert r.graph not in r.trained_on and extra[0].graph in r.trained_on
        assert len(r.trained_on) == 3
        best = float(min(t.sum() for t in tables[rows.index(r)].times))
        assert r.constant_us == pytest.approx(best) and r.oracle_honest_us <= best
        assert r.kind in ("constant", "adaptive") and r.policy_us > 0


def _policy_space(tmp_path: Path, policy: Path) -> Path:
    space = tmp_path / "pol.yaml"
    space.write_text(f"name: mypol\nfixed: {{policy: {policy}}}\n"
                     "params:\n  policy_t1: {float: [0.5, 2.0]}\n")
    return space


def test_a_policy_file_changed_makes_another_study(tmp_path):
    """The study key hashed the space's text, which holds the policy's path only: a policy
    retrained or edited resumed the study, its trials ranked with the old policy's."""
    from tuner.tuning.plan import check_spec
    from tuner.tuning.plan import load_spaces
    from tuner.tuning.spec import StudySpec

    policy = tmp_path / "p.json"
    shipped = json.loads((Path(__file__).parents[1] / "policies" / "bfs-h100.json").read_text())
    policy.write_text(json.dumps(shipped))
    spec = check_spec(StudySpec(graph="rmat:scale=6", algorithm="bfs", device="h100",
                                space=str(_policy_space(tmp_path, policy)), trials=2))
    key = spec.key(load_spaces([spec])[spec.space_ref])
    shipped.setdefault("meta", {})["note"] = "retrained"
    policy.write_text(json.dumps(shipped))
    assert spec.key(load_spaces([spec])[spec.space_ref]) != key


@pytest.mark.parametrize("algorithm, space, words", [
    ("sssp", "bfs's", "is for bfs, not sssp"),
    ("pagerank", "policy", "a policy runs bfs, sssp, cc, not pagerank"),
])
def test_a_policy_that_cannot_run_stops_the_tune_before_it_runs(tmp_path, capsys, algorithm,
                                                                  space, words):
    """Every trial had failed, exit 0, the sweep's table showing a reference as the best.
    (The shipped `policy` space runs each algorithm's own policy file: a space of one's own
    names BFS's for SSSP.)"""
    from tuner.cli import main

    if space == "bfs's":
        space = str(_policy_space(tmp_path, Path("policies/bfs-h100.json")))
    graph = "rmat:scale=6,weights=random" if algorithm == "sssp" else "rmat:scale=6"
    code = main(["tune", "--graph", graph, "--algo", algorithm, "--space", space,
                 "--trials", "2", "--workers", "0", "--results", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and words in err and not (tmp_path / "r" / "trials").exists()


def test_a_policy_nested_too_deeply_is_one_line(tmp_path):
    from simulator.policy import load_policy

    deep = tmp_path / "deep.json"
    deep.write_text('{"tree": ' + "[" * 5000 + "]" * 5000 + "}")
    with pytest.raises(ConfigError, match="nested too deeply"):
        load_policy(deep)


def test_simulate_names_a_policy_run_by_its_file_and_candidates(capsys):
    """The strategy line of a policy run had listed the adaptive mapping's defaults, which the
    policy never reads (adaptive_stat=mean, driven=topology), not its candidates (probe TR)."""
    from tuner.cli import main

    shipped = Path(__file__).resolve().parent.parent / "policies" / "bfs-h100.json"
    policy = load_policy(shipped)
    assert main(["simulate", "--graph", "rmat:scale=8,seed=1", "--algo", "bfs", "--set",
                 f"policy={shipped}", "--set", "policy_t1=2"]) == 0
    line = next(t for t in capsys.readouterr().out.splitlines() if t.startswith("strategy:"))
    assert line.startswith(f"strategy: policy={shipped},policy_t1=2 (")
    assert "adaptive_stat" not in line
    assert all(f"{i}: {c}" in line for i, c in enumerate(policy.candidates))


def test_cached_iteration_tables_follow_the_device_file_and_the_graph_file(tmp_path,
                                                                            monkeypatch):
    """The tables' cache had been keyed by the device's and graph's names: a device file or
    graph file edited in place kept serving the old times (probe ADP)."""
    from tuner.selection.adaptive import iteration_table

    monkeypatch.setenv("WARPSWEEP_CACHE", str(tmp_path / "cache"))
    device = tmp_path / "dev.toml"
    device.write_text('base = "h100"\nname = "probe"\nhost_roundtrip_us = 8.0\n')
    graph = tmp_path / "g.txt"
    graph.write_text("0 1\n1 2\n2 3\n3 4\n")
    spec, candidates = f"file:{graph}", ("mapping=thread", "mapping=vwarp,w=8")

    def times(cache: bool = True):
        table = iteration_table(spec, "bfs", str(device), candidates, cache=cache)
        return [t.tolist() for t in table.times]

    first = times()
    assert times() == first  # from the cache
    device.write_text('base = "h100"\nname = "probe"\nhost_roundtrip_us = 100.0\n')
    assert times() == times(cache=False) != first
    graph.write_text("0 1\n1 2\n2 3\n3 4\n4 5\n5 6\n")
    assert times() == times(cache=False)
    assert len(times()[0]) > len(first[0])  # a longer path: more levels
    for path in (tmp_path / "cache" / "adaptive").glob("*.json"):
        path.write_text("{}")  # damaged entries are simulated again, not a KeyError
    assert times() == times(cache=False)


def test_a_policy_trained_on_one_gpu_is_refused_on_another_gpus_preset():
    """The h100 policy had run under --device a100 without a word, its thresholds learnt on
    the H100's costs (probe ADP); the H100's datasheet preset and device files still run it."""
    from simulator.errors import ConfigError as Refused

    shipped = Path(__file__).resolve().parent.parent / "policies" / "bfs-h100.json"
    g = star_graph()
    with pytest.raises(Refused, match=r"was trained on h100: .* not a100's"):
        simulate(g, "bfs", f"policy={shipped}", "a100", source=0)
    assert simulate(g, "bfs", f"policy={shipped}", "h100-datasheet", source=0).time_us > 0


def test_tables_of_other_algorithms_devices_or_pools_are_not_mixed():
    """A BFS policy had been judged against SSSP tables (a ratio of 0.41), two devices' tables
    trained one policy, and one pool's candidate c read as another's (probe ADP)."""
    from tuner.selection.adaptive_policy import check_alike

    def table(algorithm="bfs", device="h100", candidates=("a", "b")):
        return IterationTable("g", algorithm, device, 0, candidates, ("topology", "data"),
                              [np.ones(2), np.ones(2)], [np.zeros(2), np.zeros(2)],
                              [np.zeros((2, len(FEATURES)))] * 2)

    check_alike([table(), table()], "bfs", "h100", ("a", "b"))
    for other in (table(algorithm="sssp"), table(device="a100"),
                  table(candidates=("b", "a"))):
        with pytest.raises(ConfigError, match="per-iteration tables of different"):
            check_alike([table(), other])
    with pytest.raises(ConfigError, match="not sssp's"):
        check_alike([table()], "sssp")
    with pytest.raises(ConfigError, match="candidates are not the pool given"):
        check_alike([table()], candidates=("a", "c"))


def test_the_held_out_graphs_twin_under_another_spec_is_left_out_of_its_fold():
    """A weighted and an unweighted copy of one graph are one graph to BFS: trained on one,
    the other's "held-out" figure had been its oracle's (probe ADP)."""
    from simulator.policy import GRAPH_FEATURES
    from tuner.selection.adaptive_policy import twins_of

    def table(name, graph_values):
        f = np.zeros((2, len(FEATURES)))
        for k, v in zip(GRAPH_FEATURES, graph_values, strict=True):
            f[:, FEATURES.index(k)] = v
        return IterationTable(name, "bfs", "h100", 0, ("a",), ("topology",), [np.ones(2)],
                              [np.zeros(2)], [f])

    tables = [table("g", (8, 2, 512, 4096)), table("g-weighted", (8, 2, 512, 4096)),
              table("other", (8, 2, 512, 4000))]
    assert twins_of(tables, 0) == [1] and twins_of(tables, 1) == [0]
    assert twins_of(tables, 2) == []


def test_the_policy_space_runs_on_a_device_file_of_the_policys_gpu(tmp_path):
    """The check of the policy's GPU had looked a device file's name up as a preset: tune
    --space policy had stopped, "unknown device 'my-h100'" (probe CR)."""
    from tuner.cli import main

    device = tmp_path / "mine.toml"
    device.write_text('base = "h100"\nname = "my-h100"\n')
    assert main(["tune", "--graph", "rmat:scale=7,seed=1", "--algo", "bfs", "--space",
                 "policy", "--device", str(device), "--trials", "2", "--sources", "1",
                 "--workers", "0", "--no-progress", "--results", str(tmp_path / "r")]) == 0


def test_a_policy_file_giving_a_key_twice_is_refused(tmp_path):
    # Python's JSON reader had kept the second threshold without a word (probe SELECT)
    path = tmp_path / "dup.json"
    path.write_text('{"format": "warpsweep-policy", "schema_version": 1, "candidates": '
                    '[{"mapping": "thread"}, {"mapping": "vwarp", "w": 32}], "tree": '
                    '{"feature": "edge_frac", "threshold": 0.1, "threshold": 0.9, '
                    '"le": {"choose": 0}, "gt": {"choose": 1}}}')
    with pytest.raises(ConfigError, match="key 'threshold' is given twice"):
        load_policy(path)
