"""bench/verify_regret.py: the top-K pick, its regret, and the summary lines, on times worked
out by hand; and the committed figures' last lines in the promised form."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import verify_regret  # noqa: E402

from tuner.calibration.calibrate import Measured  # noqa: E402


def test_the_fastest_measured_of_the_top_k_is_kept():
    pred = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    times = np.array([12.0, 11.0, 10.5, 13.0, 14.0, 10.0])  # the best is ranked last
    assert verify_regret.top_k_regret(pred, times, 1) == (pytest.approx(1.2), 0)
    assert verify_regret.top_k_regret(pred, times, 3) == (pytest.approx(1.05), 2)
    assert verify_regret.top_k_regret(pred, times, 6) == (pytest.approx(1.0), 5)
    # ties in the prediction count against the pick, whatever the catalog's order
    assert verify_regret.top_k_regret(np.ones(3), np.array([3.0, 2.0, 1.0]), 1) == (3.0, 0)
    assert verify_regret.top_k_regret(np.ones(3), np.array([1.0, 2.0, 3.0]), 1) == (3.0, 2)
    assert verify_regret.top_k_regret(np.array([1.0, 2.0, 2.0, 2.0]),
                                      np.array([5.0, 4.0, 1.0, 6.0]), 2) == (5.0, 0)


def test_judge_and_the_last_lines():
    rows = [Measured("g1", "s1", "bfs", c, 0, t, "default", m=10)
            for c, t in (("mapping=thread", 20.0), ("mapping=vwarp,w=8", 10.0),
                         ("mapping=vwarp,w=32", 10.1))]
    rows += [Measured("g2", "s2", "bfs", c, 0, t, "default", m=20)
             for c, t in (("mapping=thread", 10.0), ("mapping=vwarp,w=8", 30.0),
                          ("mapping=vwarp,w=32", 12.0))]
    pred = np.array([1.0, 3.0, 2.0, 3.0, 1.0, 2.0])  # g1: w=32 ranked above w=8; g2: w=8 first
    scores = verify_regret.judge({"LOGO": pred}, rows, 2)
    assert scores[("bfs", "g1")]["LOGO K=2"][0] == pytest.approx(10.1 / 10.0)
    assert scores[("bfs", "g1")]["LOGO K=1"][0] == pytest.approx(2.0)
    assert scores[("bfs", "g2")]["LOGO K=2"][0] == pytest.approx(1.2)
    # spread over kernel families (one of two): g1's top 2 are thread and W=32 either way;
    # g2's W=8 and W=32 share a family, so W=8 and thread are measured
    assert scores[("bfs", "g1")]["LOGO K=2 spread"][0] == pytest.approx(10.1 / 10.0)
    assert scores[("bfs", "g2")]["LOGO K=2 spread"][0] == pytest.approx(1.0)
    lines = verify_regret.report_lines(scores, rows, 2, "LOGO")
    assert lines[-2:] == ["bfs verify 2 (top): worst regret 1.200, within 1.02 on 1 of 2 graphs",
                          "bfs verify 2 (spread): worst regret 1.010, within 1.02 on 2 of 2 "
                          "graphs"]


def test_the_spread_top_k_leaves_a_family_for_another():
    configs = ["mapping=vwarp,w=8", "mapping=vwarp,w=16", "mapping=vwarp,w=32",
               "mapping=thread,defer_threshold=32"]
    pred = np.array([1.0, 2.0, 3.0, 4.0])
    times = np.array([12.0, 11.0, 10.5, 10.0])  # deferral, ranked last, is the best
    assert verify_regret.top_k_regret(pred, times, 2) == (pytest.approx(1.1), 1)
    # K = 2: one of the vwarp family (ceil(2/2)), then the deferral kernel
    assert verify_regret.top_k_regret(pred, times, 2, configs) == (pytest.approx(1.0), 3)


def test_the_committed_figures_end_with_one_line_per_algorithm():
    path = ROOT / "bench" / "gpu" / "results" / "verify_regret.txt"
    if not path.is_file():
        pytest.skip("bench/gpu/results/verify_regret.txt not written yet")
    last = path.read_text().strip().splitlines()[-4:]
    form = re.compile(r"^(bfs|cc|pagerank|sssp) verify 5: worst regret \d+\.\d{3}, within "
                      r"1\.02 on \d+ of \d+ graphs$")
    assert [form.match(line).group(1) for line in last] == ["bfs", "cc", "pagerank", "sssp"]


def test_the_committed_nested_figures_end_with_both_rules_per_algorithm():
    path = ROOT / "bench" / "gpu" / "results" / "verify_regret_nested.txt"
    last = path.read_text().strip().splitlines()[-8:]
    form = re.compile(r"^(bfs|cc|pagerank|sssp) verify 5 \((top|spread)\): worst regret "
                      r"\d+\.\d{3}, within 1\.02 on \d+ of \d+ graphs$")
    assert [form.match(line).groups() for line in last] == [
        (a, rule) for a in ("bfs", "cc", "pagerank", "sssp") for rule in ("top", "spread")]
