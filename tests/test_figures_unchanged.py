"""bench/figures_unchanged.py compares a revision's figures with the working tree's."""

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from simulator import load_graph
from simulator import simulate
from simulator.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
TOOLS = ("bench/figures_unchanged.py", "bench/revisions.py")
sys.path.insert(0, str(REPO))
from bench.figures_unchanged import QUICK_CASES  # noqa: E402
from bench.figures_unchanged import STRATEGIES  # noqa: E402
from bench.figures_unchanged import differences  # noqa: E402
from tests.head_worktree import head_worktree  # noqa: E402
from tests.head_worktree import lengthen_h100_host_roundtrip  # noqa: E402
from tests.head_worktree import worktrees  # noqa: E402


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


def test_a_trace_array_added_is_no_change_and_one_lost_is(result):
    added = {**result.trace, "since_the_base": np.zeros(result.iterations)}
    assert differences(result, dataclasses.replace(result, trace=added)) == []
    lost = {k: v for k, v in result.trace.items() if k != "time_us"}
    assert differences(result, dataclasses.replace(result, trace=lost)) == ["trace[time_us]"]


def test_refusals_compare_by_kind_and_message(result):
    assert differences(ConfigError("W=3"), ConfigError("W=3")) == []
    assert differences(ConfigError("W=3"), ConfigError("W=5")) == ["refusal"]
    assert differences(ConfigError("W=3"), result) == ["refusal"]


def _figures_unchanged(tree: Path) -> tuple[subprocess.CompletedProcess, int, int]:
    """Run ``tree``'s copy of the tool against HEAD at --quick size: the outcome, the cases
    and how many differ (from its last line)."""
    done = subprocess.run(
        [sys.executable, str(tree / "bench" / "figures_unchanged.py"), "--base", "HEAD",
         "--quick"],
        capture_output=True, text=True, timeout=300, cwd=tree,
    )
    cases, rest = done.stdout.strip().splitlines()[-1].split(" cases, ")
    return done, int(cases), int(rest.split()[0])


@pytest.mark.skipif(_git("rev-parse", "HEAD").returncode != 0, reason="not a git checkout")
def test_head_against_itself_differs_nowhere_and_a_moved_figure_is_found(tmp_path):
    """Run where the "working tree" is HEAD's own: no case may differ. Then with the H100's
    host round trip lengthened there, every case it runs must differ in time_us."""
    quick_cases = sum(len(algorithms) for _, algorithms in QUICK_CASES) * len(STRATEGIES)
    with head_worktree(tmp_path, TOOLS) as tree:
        before = worktrees()
        done, cases, differing = _figures_unchanged(tree)
        assert (done.returncode, cases, differing) == (0, quick_cases, 0), done.stdout
        assert "DIFFERS" not in done.stdout
        assert worktrees() == before  # the tool removed the revision's worktree

        lengthen_h100_host_roundtrip(tree)
        done, cases, differing = _figures_unchanged(tree)
        assert done.returncode == 1, done.stderr
        lines = [line for line in done.stdout.splitlines() if line.startswith("DIFFERS")]
        assert cases == quick_cases and differing == len(lines)
        # all but the 13 that both refuse alike: PageRank's unroll, its 6 hybrids and its 2
        # relax=store strategies (one graph runs it), and BFS's 2 relax=store (two graphs)
        assert differing == quick_cases - 13
        assert all("time_us" in line.split(": ")[1] for line in lines)
        assert worktrees() == before


def test_an_unknown_revision_fails_with_a_message():
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "figures_unchanged.py"), "--base",
         "no-such-revision", "--quick"],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )
    assert done.returncode != 0
    assert "'no-such-revision' is not a commit" in done.stderr
    assert "Traceback" not in done.stderr
