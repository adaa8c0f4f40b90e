"""An earlier git revision's ``simulator`` beside the working tree's, in one process: the
revision checked out in a temporary worktree, each package imported apart. For comparing
their speed (``compare_revisions.py``) and their figures (``figures_unchanged.py``)."""

from __future__ import annotations

import importlib
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def import_simulator(root: Path) -> ModuleType:
    """The ``simulator`` package under ``root``, imported apart from any other copy: its
    modules bind one another at import time, so two copies can run side by side."""
    def drop() -> None:
        for name in [n for n in sys.modules if n == "simulator" or n.startswith("simulator.")]:
            del sys.modules[name]

    drop()
    sys.path.insert(0, str(root))
    try:
        package = importlib.import_module("simulator")
    finally:
        sys.path.remove(str(root))
        drop()
    return package


@contextmanager
def old_and_new(base: str, tool: str) -> Iterator[dict[str, ModuleType]]:
    """The ``simulator`` packages of revision ``base`` ("old") and of the working tree
    ("new"); the revision's worktree is removed after. Exits with a message (``tool``: the
    script's name) where ``base`` is not a commit of this repository."""
    known = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--quiet", "--verify",
                            f"{base}^{{commit}}"], capture_output=True)
    if known.returncode != 0:
        sys.exit(f"{tool}: {base!r} is not a commit of {REPO}")
    with tempfile.TemporaryDirectory(prefix="warpsweep-base-") as tmp:
        base_tree = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--quiet", "--detach",
                        str(base_tree), base], check=True)
        try:
            packages = {"old": import_simulator(base_tree), "new": import_simulator(REPO)}
            if packages["old"].__file__ == packages["new"].__file__:
                raise RuntimeError("the base revision's simulator did not load apart")
            yield packages
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                            str(base_tree)], check=False)
