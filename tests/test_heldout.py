"""Nested leave-one-graph-out (tuner/calibration/heldout.py): no held-out time reaches its
prediction, the inner cross-validation picks the model the data were made with, and the figures'
helpers (bootstrap intervals, harness sessions' spread) count what they say."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from simulator import get_device
from simulator.costs import BOUND_NAMES
from simulator.errors import ConfigError
from tuner.calibration.calibrate import Measured
from tuner.calibration.calibrate import Parts
from tuner.calibration.heldout import Choice
from tuner.calibration.heldout import Data
from tuner.calibration.heldout import bootstrap_interval
from tuner.calibration.heldout import choices
from tuner.calibration.heldout import graph_folds
from tuner.calibration.heldout import groups_of
from tuner.calibration.heldout import nested_logo
from tuner.calibration.heldout import regret

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.fidelity import parse_simulation  # noqa: E402
from bench.fidelity import session_times  # noqa: E402
from bench.fidelity import within_noise  # noqa: E402

BASE = get_device("h100-datasheet")
TRUTH = (1.5, 0.8, 2.0, 1.0, 1.2, 1.7)  # issue, lsu, latency, memory, atomics, overhead


def true_cycles(bounds: np.ndarray) -> float:
    """A run's time worked by hand: per launch the largest scaled bound plus its scaled
    overhead (no host round trips, no other cycles)."""
    scaled = bounds * np.array(TRUTH)
    return float(np.sum(scaled[:, :5].max(axis=1) + scaled[:, 5]))


def synthetic(graphs: int = 7, configs: int = 6, seed: int = 3):
    """Measured rows made by the true surrogate from each run's bounds, with a per-graph level
    and 3% noise; and a second 'simulation' whose bounds belong to another configuration of
    the same graph (a wrong model)."""
    rng = np.random.default_rng(seed)
    measured, right, wrong = [], [], []
    for g in range(graphs):
        level = rng.uniform(0.5, 2.0)
        bounds = [rng.lognormal(0.0, 1.0, size=(3, len(BOUND_NAMES))) * 1e3
                  for _ in range(configs)]
        shuffled = [bounds[(c + 1 + g % (configs - 1)) % configs] for c in range(configs)]
        for c in range(configs):
            cycles = true_cycles(bounds[c]) * level * rng.lognormal(0, 0.03)
            measured.append(Measured(graph=f"g{g}", graph_spec=f"g{g}", algorithm="bfs",
                                     config=f"c{c}", source=0, time_us=BASE.us(cycles),
                                     variant="default"))
            for out, b in ((right, bounds[c]), (wrong, shuffled[c])):
                out.append(Parts(b, 0.0, 0.0, true_cycles(b)))
    return measured, right, wrong


WRONG = (("atomic_round_trips", 1),)  # a label for the wrong simulation: any device field


def test_no_held_out_time_reaches_its_prediction():
    measured, right, wrong = synthetic()
    candidates = choices([WRONG, ()], [math.inf], ["relative"])
    data = Data(measured, {(): right, WRONG: wrong}, None, BASE)
    pred, _, _ = nested_logo(data, candidates, inner_folds=3, starts=1)
    rng = np.random.default_rng(0)
    changed = [m if m.graph != "g2" else
               Measured(**{**m.__dict__, "time_us": m.time_us * rng.uniform(0.2, 5.0)})
               for m in measured]
    pred2, _, _ = nested_logo(Data(changed, data.parts, None, BASE), candidates,
                              inner_folds=3, starts=1)
    held = np.array([m.graph == "g2" for m in measured])
    assert np.array_equal(pred[held], pred2[held])
    assert not np.allclose(pred[~held], pred2[~held])  # the other folds did see g2's times


def test_the_inner_folds_choose_the_simulation_the_times_came_from():
    measured, right, wrong = synthetic()
    data = Data(measured, {(): right, WRONG: wrong}, None, BASE)
    # the wrong simulation is listed first: a tie would choose it
    candidates = [Choice(WRONG, math.inf, "relative"), Choice((), math.inf, "relative")]
    pred, folds, final = nested_logo(data, candidates, inner_folds=3, starts=1)
    assert final.chosen == candidates[1]
    assert final.scores["all"][candidates[0]][0] > final.scores["all"][candidates[1]][0] + 0.01
    assert {s.chosen for s in folds.values()} == {candidates[1]}
    times = np.array([m.time_us for m in measured])
    for g in range(7):
        idx = np.flatnonzero([m.graph == f"g{g}" for m in measured])
        assert regret(pred[idx], times[idx])[0] < 1.05


def two_algorithms(graphs: int = 7):
    """``synthetic`` rows twice over: BFS's times made from the right simulation's bounds,
    CC's from the wrong one's (so each algorithm's times follow another simulation)."""
    measured, right, wrong = synthetic(graphs)
    cc = [Measured(**{**m.__dict__, "algorithm": "cc",
                      "time_us": m.time_us * true_cycles(w.bounds) / true_cycles(r.bounds)})
          for m, r, w in zip(measured, right, wrong, strict=True)]
    return measured + cc, right + right, wrong + wrong


def test_chosen_per_algorithm_each_algorithm_gets_the_simulation_its_times_came_from():
    measured, right, wrong = two_algorithms()
    data = Data(measured, {(): right, WRONG: wrong}, None, BASE)
    candidates = [Choice(WRONG, math.inf, "relative"), Choice((), math.inf, "relative")]
    pred, folds, final = nested_logo(data, candidates, inner_folds=3, starts=1,
                                     per_algorithm=True)
    assert final.by_algorithm == {"bfs": candidates[1], "cc": candidates[0]}
    for selection in folds.values():
        assert selection.by_algorithm == final.by_algorithm
    with pytest.raises(ValueError, match="differ"):
        _ = final.chosen
    times = np.array([m.time_us for m in measured])

    def log_regrets(pred: np.ndarray, algorithm: str) -> np.ndarray:
        return np.log([regret(pred[idx], times[idx])[0] for g in range(7)
                       for idx in [np.flatnonzero([m.graph == f"g{g}" and m.algorithm == algorithm
                                                   for m in measured])]])

    # one choice for both: one of the two algorithms is predicted from the other's simulation
    one_pred, _, one = nested_logo(data, candidates, inner_folds=3, starts=1)
    assert len(set(one.by_algorithm.values())) == 1
    for algorithm in ("bfs", "cc"):
        assert log_regrets(pred, algorithm).mean() <= log_regrets(one_pred, algorithm).mean()
    assert (log_regrets(pred, "bfs").sum() + log_regrets(pred, "cc").sum()
            < log_regrets(one_pred, "bfs").sum() + log_regrets(one_pred, "cc").sum() - 1)


def test_algorithms_whose_times_follow_other_scales_get_fits_of_their_own_rows():
    """BFS's times made with ``TRUTH``'s thetas, CC's from the same bounds with others: one
    fit of both cannot follow either, a fit of each algorithm's own rows follows each."""
    measured, right, _ = synthetic()
    other = (0.5, 1.0, 0.6, 1.0, 3.0, 0.4)
    cc = []
    for m, p in zip(measured, right, strict=True):
        scaled = p.bounds * np.array(other)
        cycles = float(np.sum(scaled[:, :5].max(axis=1) + scaled[:, 5]))
        cc.append(Measured(**{**m.__dict__, "algorithm": "cc",
                              "time_us": m.time_us * cycles / true_cycles(p.bounds)}))
    data = Data(measured + cc, {(): right + right}, None, BASE)
    shared, own = Choice((), math.inf, "relative"), Choice((), math.inf, "relative", True)
    assert own.label == "relative fit of each algorithm's own rows, max"
    pred, _, final = nested_logo(data, [shared, own], inner_folds=3, starts=1,
                                 per_algorithm=True)
    assert final.by_algorithm == {"bfs": own, "cc": own}
    times = np.array([m.time_us for m in data.measured])
    for (_, _), idx in groups_of(data.measured).items():
        assert regret(pred[idx], times[idx])[0] < 1.05
    with pytest.raises(ConfigError, match="totals"):
        Choice((), math.inf, "launch", True)
    assert choices([()], [math.inf], ["launch", "relative", "none"], own_rows=True)[3:] == [own]


def test_the_base_device_unfitted_predicts_from_the_simulation_alone():
    measured, right, _ = synthetic()
    unfitted = Choice((), math.inf, "none")
    assert unfitted.label.startswith("not fitted")
    data = Data(measured, {(): right}, None, BASE)
    pred, _, final = nested_logo(data, [unfitted], inner_folds=3, starts=1)
    # theta 1 and the maximum of the bounds: each launch's largest bound plus its overhead
    by_hand = [BASE.us(float(np.sum(p.bounds[:, :5].max(axis=1) + p.bounds[:, 5])))
               for p in right]
    assert np.allclose(pred, by_hand)
    scaled = [Measured(**{**m.__dict__, "time_us": m.time_us * 3.0}) for m in measured]
    pred2, _, _ = nested_logo(Data(scaled, {(): right}, None, BASE), [unfitted],
                              inner_folds=3, starts=1)
    assert np.array_equal(pred, pred2)
    # measured times that follow the base device's own model: nothing to gain by a fit
    own = [Measured(**{**m.__dict__, "time_us": t}) for m, t in zip(measured, by_hand,
                                                                      strict=True)]
    fitted = Choice((), math.inf, "absolute")
    _, _, final = nested_logo(Data(own, {(): right}, None, BASE), [unfitted, fitted],
                              inner_folds=3, starts=1)
    assert final.chosen == unfitted


def test_candidates_that_cannot_be_fitted_are_left_out_or_refused():
    measured, right, _ = synthetic(graphs=4)
    data = Data(measured, {(): right}, None, BASE)
    assert not data.supports(Choice((), math.inf, "launch"))  # no per-launch times
    assert not data.supports(Choice(WRONG, math.inf, "relative"))  # never simulated
    with pytest.raises(ConfigError, match="no candidate"):
        nested_logo(data, [Choice((), math.inf, "launch")])
    few = Data(measured[:12], {(): right[:12]}, None, BASE)  # 2 graphs
    with pytest.raises(ConfigError, match="3 graphs"):
        nested_logo(few, [Choice((), math.inf, "relative")])
    with pytest.raises(ConfigError, match="fit mode"):
        Choice((), math.inf, "median")
    with pytest.raises(ConfigError, match="norm"):
        Choice((), 0.5, "relative")


def test_graph_folds_deal_every_graph_once():
    graphs = [f"g{i}" for i in range(10)]
    folds = graph_folds(graphs, 4, seed=1)
    assert len(folds) == 4 and sorted(sum(folds, [])) == sorted(graphs)
    assert sorted(len(f) for f in folds) == [2, 2, 3, 3]
    assert graph_folds(graphs, 4, seed=1) == folds
    assert len(graph_folds(graphs[:2], 4, seed=1)) == 2


def test_bootstrap_interval_by_hand():
    # every graph within: the share is 1 in every draw; equal rhos: the median is that rho
    ci = bootstrap_interval([0.9] * 5, [1.0] * 5, within=1.05)
    assert ci == {"median_rho": (0.9, 0.9), "fraction_within": (1.0, 1.0)}
    # one graph of two misses: draws of both graphs give shares 0, 0.5 or 1
    ci = bootstrap_interval([0.5, 1.0], [1.0, 2.0], within=1.05, draws=2000)
    assert ci["fraction_within"] == (0.0, 1.0)
    assert ci["median_rho"] == (0.5, 1.0)


LOG = """# session 1
gpu line
gA: n=10 m=20 source=0 levels=3
  bfs mapping=thread default it= 3 time= 100.0 (min 90.0) us
  bfs mapping=vwarp,w=8,driven=data,push=atomic plain it= 3 time= 120.0 (min 90.0) us
  bfs mapping=vwarp,w=8,driven=data,push=atomic claimed it= 3 time= 95.0 us <-- INCORRECT
# session 2
gA: n=10 m=20 source=0 levels=3
  bfs mapping=thread default it= 3 time= 110.0 (min 90.0) us
  bfs mapping=vwarp,w=8,driven=data,push=atomic plain it= 3 time= 105.0 (min 90.0) us
  bfs mapping=vwarp,w=8,driven=data,push=atomic claimed it= 3 time= 130.0 (min 90.0) us
"""


def test_session_times_take_each_sessions_fastest_correct_variant(tmp_path):
    log = tmp_path / "h.log"
    log.write_text(LOG)
    times = session_times(log)
    assert sorted(times[("gA", "bfs", "mapping=thread")]) == [100.0, 110.0]
    data = ("gA", "bfs", "mapping=vwarp,w=8,driven=data,push=atomic")
    assert sorted(times[data]) == [105.0, 120.0]  # session 1's 95 was incorrect

    def row(config: str) -> Measured:
        return Measured("gA", "gA", "bfs", config, 0, 1.0, "default")

    # data ran 105..120, thread 100..110: the ranges overlap either way round
    assert within_noise(row(data[2]), row("mapping=thread"), times) is True
    times[data] = [111.0, 120.0]
    assert within_noise(row(data[2]), row("mapping=thread"), times) is False
    assert within_noise(row("mapping=vwarp,w=2"), row("mapping=thread"), times) is None


def test_parse_simulation_reads_typed_device_fields():
    assert parse_simulation("preset") == ()
    assert parse_simulation("serial_virtual_warps=true,atomic_cycles=4") == (
        ("atomic_cycles", 4), ("serial_virtual_warps", True))
    from simulator.errors import WarpsweepError

    for bad in ("warp=3", "name=x", "atomic_cycles=fast", "bounds_norm=2"):
        with pytest.raises(WarpsweepError):
            parse_simulation(bad)


GRAPHS_DIR = Path(__file__).resolve().parents[2] / "shared" / "graphs"


@pytest.mark.skipif(not (GRAPHS_DIR / "p2p-Gnutella08.txt.gz").is_file(),
                    reason="needs ../shared/graphs")
def test_fidelity_reports_the_nested_figure_on_three_small_graphs(tmp_path, capsys):
    from bench.fidelity import main as fidelity

    out = tmp_path / "h100.toml"
    report = tmp_path / "fidelity.json"
    assert fidelity(["--graphs", "p2p-Gnutella08,ca-AstroPh,email-Enron", "--algorithms",
                     "sssp", "--simulations", "preset", "--norms", "inf", "--fits",
                     "launch,relative", "--inner-folds", "2", "--no-resim", "--cache",
                     str(tmp_path / "cache"), "--out", str(out), "--json", str(report)]) == 0
    text = capsys.readouterr().out
    assert "SSSP summary (targets judged on nested)" in text
    assert "95% bootstrap interval over graphs" in text
    assert "picks within the run-to-run spread" in text
    import json

    figures = json.loads(report.read_text())
    nested = figures["algorithms"]["sssp"]["summary"]["nested"]
    assert nested["graphs"] == 3
    lo, hi = nested["bootstrap95"]["fraction_within"]
    assert 0 <= lo <= nested["fraction_within"] <= hi <= 1
    assert set(figures["nested"]["chosen_per_fold"]) == {"p2p-Gnutella08", "ca-AstroPh",
                                                         "email-Enron"}
    assert get_device(str(out)).name == "h100-calibrated"


def test_fidelity_refuses_a_launch_fit_without_launch_rows_before_simulating(tmp_path,
                                                                            capsys):
    """CC has no per-launch times: a launch fit is refused at once, with what to do, and
    nothing is simulated (the refusal once came after minutes of simulations)."""
    from bench.fidelity import main as fidelity

    cache = tmp_path / "cache"
    assert fidelity(["--graphs", "p2p-Gnutella08", "--algorithms", "cc", "--cache",
                     str(cache), "--out", str(tmp_path / "h100.toml")]) == 2
    err = capsys.readouterr().err
    assert "hold none of the measured" in err and "--totals" in err
    assert not cache.exists() or not any(cache.rglob("*.npz"))
    assert not (tmp_path / "h100.toml").exists()
