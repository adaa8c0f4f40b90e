"""bench/compare_revisions.py runs a revision's simulator beside the working tree's."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _git(*args):
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)


@pytest.mark.skipif(_git("rev-parse", "HEAD").returncode != 0, reason="not a git checkout")
def test_compares_a_revision_side_by_side_and_removes_its_worktree():
    before = _git("worktree", "list").stdout
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "compare_revisions.py"), "--base", "HEAD",
         "--spec", "road:rows=12,cols=12,seed=1", "--repeat", "1",
         "--strategies", "mapping=thread", "mapping=vwarp,w=8"],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("mapping=")]
    assert len(lines) == 2
    for line in lines:
        ratio = float(line.split("new/old")[1].split()[0])
        assert ratio > 0
        assert "same time_us" in line or "TIME_US DIFFERS" in line
    assert _git("worktree", "list").stdout == before


def test_an_unknown_revision_fails_with_git_s_message():
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "compare_revisions.py"), "--base",
         "no-such-revision", "--strategies", "mapping=thread"],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )
    assert done.returncode != 0
    assert "'no-such-revision' is not a commit" in done.stderr
    assert "Traceback" not in done.stderr
