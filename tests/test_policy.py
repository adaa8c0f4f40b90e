"""Per-iteration policies (issue 45): the runner against constant runs, the switch and
feature-counter costs counted on paper, the oracle's dynamic programme, the cost-sensitive
tree, leave-one-graph-out really leaving the graph out, policy files and ``policy=FILE``."""

from __future__ import annotations

import json

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
from simulator.policy import FEATURES
from simulator.policy import Policy
from simulator.policy import feature_counter_cost
from simulator.policy import policy_iteration_costs
from tests.hand_counted import star_graph
from tuner.adaptive import IterationTable
from tuner.adaptive import Samples
from tuner.adaptive import fit_tree
from tuner.adaptive import fold_fit
from tuner.adaptive import oracle
from tuner.adaptive import tree_choices

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
    worklist and a scatter where it turns back."""
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
    # iteration 2 turns the sweep's flags (vertex 2) into a worklist
    compaction = compaction_kernel(fr.n, np.array([2]), cands[1], H100, hit_rate=_hit(
        fr, True)).cycles
    assert its[2].switch_cycles == pytest.approx(compaction)
    for i, it in enumerate(its):
        base = const[it.choice][i].cost.cycles
        assert it.cost.cycles == pytest.approx(base + it.switch_cycles, rel=1e-9)
        assert (it.switch_cycles > 0) == (i in switches)


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


def test_cost_sensitive_tree_finds_the_split():
    x = np.zeros((40, len(FEATURES)))
    x[:, 0] = np.linspace(0, 1, 40)
    cost = np.where(x[:, [0]] <= 0.5, [1.0, 3.0], [3.0, 1.0])
    tree = fit_tree(x, cost, depth=2, min_leaf=0.05)
    assert tree["feature"] == FEATURES[0] and 0.48 < tree["threshold"] < 0.52
    assert (tree_choices(tree, x) == (x[:, 0] > 0.5)).all()
    assert fit_tree(x, cost, depth=0, min_leaf=0.05) == {"choose": 0}


def test_leave_one_graph_out_never_sees_the_held_out_graph():
    rng = np.random.default_rng(1)
    groups = np.repeat(np.arange(5), 12)
    x = rng.random((60, len(FEATURES)))
    cost = rng.random((60, 3)) + 0.1
    s = Samples(x, cost, groups)
    held = fold_fit(s, 2)
    # whatever graph 2's rows say, the tree made without it is the same
    cost2 = cost.copy()
    cost2[groups == 2] = rng.random((12, 3)) * 100
    x2 = x.copy()
    x2[groups == 2] = rng.random((12, len(FEATURES)))
    assert fold_fit(Samples(x2, cost2, groups), 2) == held
    # ... while another fold, which trains on graph 2, sees the change
    assert fold_fit(Samples(x2, cost2, groups), 0).tree != fold_fit(s, 0).tree


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
    assert r.trace["switch_us"][2] > 0 and r.trace["switch_us"][:2].sum() == 0
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


def test_report_section_rows_and_verdicts(tmp_path, monkeypatch):
    from tuner.adaptive import AdaptationRow
    from tuner.adaptive import adaptation_rows
    from tuner.report import adaptation_figure

    monkeypatch.setenv("WARPSWEEP_CACHE", str(tmp_path))
    rows, skipped = adaptation_rows([("grid2d:rows=8,cols=8", "bfs", "h100"),
                                     ("grid2d:rows=8,cols=8", "pagerank", "h100"),
                                     ("nonsense:x=1", "bfs", "h100")])
    assert len(rows) == 1 and len(skipped) == 1 and "nonsense" in skipped[0]
    assert rows[0].gain >= 1.0 and list(tmp_path.glob("adaptive/*.json"))
    keep = AdaptationRow("g", "bfs", "h100", "mapping=vwarp,w=8", 100.0, 99.0, 1)
    assert keep.verdict.startswith("under 2% (1.0%): keep the constant mapping=vwarp,w=8")
    adapt = AdaptationRow("g", "sssp", "h100", "mapping=thread", 100.0, 90.0, 2)
    assert adapt.verdict == "adaptation can save 10.0% (2 switch(es))"
    _, caption = adaptation_figure([keep, adapt], "t")
    assert "oracle 0.990x, under 2%" in caption and "oracle 0.900x" in caption
