"""bench/figures_unchanged.py compares a revision's figures with the working tree's."""

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from simulator import load_graph
from simulator import simulate
from simulator.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.figures_unchanged import differences  # noqa: E402


def _git(*args):
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def result():
    graph = load_graph("road:rows=10,cols=12,seed=1")
    return simulate(graph, "bfs", "mapping=vwarp,w=4", trace=True)


def test_equal_simulations_do_not_differ(result):
    graph = load_graph("road:rows=10,cols=12,seed=1")
    again = simulate(graph, "bfs", "mapping=vwarp,w=4", trace=True)
    assert differences(result, again) == []


def test_a_moved_metric_or_trace_array_is_named(result):
    moved = dataclasses.replace(result, time_us=result.time_us * (1 + 1e-6))
    assert differences(result, moved) == ["time_us"]
    trace = dict(result.trace)
    trace["time_us"] = trace["time_us"].copy()
    trace["time_us"][-1] += 1.0
    assert differences(result, dataclasses.replace(result, trace=trace)) == ["trace[time_us]"]
    shorter = {**result.trace, "time_us": result.trace["time_us"][:-1]}
    assert differences(result, dataclasses.replace(result, trace=shorter)) == [
        "trace[time_us]"]
    within = dataclasses.replace(result, time_us=result.time_us * (1 + 1e-12))
    assert differences(result, within) == []


def test_refusals_compare_by_kind_and_message(result):
    assert differences(ConfigError("W=3"), ConfigError("W=3")) == []
    assert differences(ConfigError("W=3"), ConfigError("W=5")) == ["refusal"]
    assert differences(ConfigError("W=3"), result) == ["refusal"]


@pytest.mark.skipif(_git("rev-parse", "HEAD").returncode != 0, reason="not a git checkout")
def test_the_working_tree_against_head_quick_matrix():
    before = _git("worktree", "list").stdout
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "figures_unchanged.py"), "--base", "HEAD",
         "--quick"],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )
    # the working tree may hold uncommitted changes to the simulator: then it says so
    summary = done.stdout.strip().splitlines()[-1]
    assert " cases, " in summary and summary.split()[0].isdigit()
    differing = int(summary.split(" cases, ")[1].split()[0])
    assert done.returncode == (1 if differing else 0), done.stderr
    assert len([line for line in done.stdout.splitlines()
                if line.startswith("DIFFERS")]) == differing
    assert _git("worktree", "list").stdout == before


def test_an_unknown_revision_fails_with_a_message():
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "figures_unchanged.py"), "--base",
         "no-such-revision", "--quick"],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )
    assert done.returncode != 0
    assert "'no-such-revision' is not a commit" in done.stderr
    assert "Traceback" not in done.stderr
