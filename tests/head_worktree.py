"""A git worktree of HEAD, for the bench tools that compare a revision's simulator with the
working tree's: run from there (the working tree's copies of the tools put in), their "working
tree" is HEAD's own, with no simulator change pending, so what they must say is known."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)


def worktrees() -> str:
    return git("worktree", "list").stdout


@contextmanager
def head_worktree(parent: Path, tools: tuple[str, ...]) -> Iterator[Path]:
    """A worktree of HEAD under ``parent`` holding the working tree's ``tools`` (paths from
    the repository root), removed after."""
    tree = parent / "head"
    added = git("worktree", "add", "--quiet", "--detach", str(tree), "HEAD")
    assert added.returncode == 0, added.stderr
    try:
        for path in tools:
            shutil.copyfile(REPO / path, tree / path)
        yield tree
    finally:
        git("worktree", "remove", "--force", str(tree))


def lengthen_h100_host_roundtrip(tree: Path) -> None:
    """Move a figure of every H100 simulation in ``tree``: its host round trip 1 us longer."""
    with open(tree / "simulator" / "device.py", "a") as f:
        f.write('\nDEVICES["h100"] = dataclasses.replace(\n'
                '    DEVICES["h100"], host_roundtrip_us=DEVICES["h100"].host_roundtrip_us + 1)\n')
