"""bench/compare_revisions.py runs a revision's simulator beside the working tree's."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.head_worktree import head_worktree
from tests.head_worktree import lengthen_h100_host_roundtrip
from tests.head_worktree import worktrees

REPO = Path(__file__).resolve().parents[1]
TOOLS = ("bench/compare_revisions.py", "bench/revisions.py")


def _git(*args):
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)


def _compare(tree: Path) -> list[str]:
    """Run ``tree``'s copy of the tool against HEAD on a small road graph: its two lines."""
    done = subprocess.run(
        [sys.executable, str(tree / "bench" / "compare_revisions.py"), "--base", "HEAD",
         "--spec", "road:rows=12,cols=12,seed=1", "--repeat", "1",
         "--strategies", "mapping=thread", "mapping=vwarp,w=8"],
        capture_output=True, text=True, timeout=300, cwd=tree,
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("mapping=")]
    assert [line.split()[0] for line in lines] == ["mapping=thread", "mapping=vwarp,w=8"]
    for line in lines:
        assert float(line.split("new/old")[1].split()[0]) > 0
    return lines


@pytest.mark.skipif(_git("rev-parse", "HEAD").returncode != 0, reason="not a git checkout")
def test_head_against_itself_is_the_same_and_a_moved_time_differs(tmp_path):
    """Run where the "working tree" is HEAD's own: both strategies give the same time_us;
    with the H100's host round trip lengthened there, both differ. Each run removes the
    revision's worktree it made."""
    with head_worktree(tmp_path, TOOLS) as tree:
        before = worktrees()
        assert all(line.endswith("same time_us") for line in _compare(tree))
        assert worktrees() == before
        lengthen_h100_host_roundtrip(tree)
        assert all(line.endswith("TIME_US DIFFERS") for line in _compare(tree))
        assert worktrees() == before


def test_an_unknown_revision_fails_with_git_s_message():
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "compare_revisions.py"), "--base",
         "no-such-revision", "--strategies", "mapping=thread"],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )
    assert done.returncode != 0
    assert "'no-such-revision' is not a commit" in done.stderr
    assert "Traceback" not in done.stderr
