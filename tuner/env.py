"""Provenance stamped on every result row: warpsweep version, git commit, host."""

from __future__ import annotations

import hashlib
import importlib.metadata
import socket
import subprocess
import sys
import tomllib
from functools import cache
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


@cache
def warpsweep_version() -> str:
    """The version of the code that runs: its checkout's pyproject where it runs from one (an
    editable install keeps the version it was installed with until reinstalled), else the
    installed distribution's."""
    try:
        with open(REPO_ROOT / "pyproject.toml", "rb") as f:
            project = tomllib.load(f)["project"]
        if project["name"] == "warpsweep":
            return str(project["version"])
    except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError):
        pass
    try:
        return importlib.metadata.version("warpsweep")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


# the libraries a result can depend on: numpy draws the generated graphs and the sources,
# the others read, search and store them
LIBRARIES = ("numpy", "scipy", "optuna", "ray", "pyarrow", "duckdb")


@cache
def library_versions() -> dict[str, str]:
    """Python's and each installed library's version (a library not installed is left
    out): a seed reproduces a run only with the same numpy."""
    versions = {"python": ".".join(map(str, sys.version_info[:3]))}
    for name in LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


SIMULATOR_DIR = REPO_ROOT / "simulator"


# Simulator modules no simulated figure follows from: reading configuration text (device and
# space fields are digested apart), error types, memory estimates, temporary names. An edit
# of a message there had made every study unresumable as "another model" (review CR10).
NOT_THE_MODEL = frozenset({"yamldoc.py", "errors.py", "sizes.py", "temp_files.py"})


def simulator_digest(root: Path = SIMULATOR_DIR) -> str:
    """A short hash of the simulator's sources, its subpackages' (the mappings) included,
    ``NOT_THE_MODEL`` left out: cached parts of another cost model are stale."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).as_posix() in NOT_THE_MODEL:
            continue
        h.update(path.relative_to(root).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


@cache
def model_digest() -> str:
    """What a trial's values follow from besides its study's inputs: the simulator's sources
    and how a trial draws and averages its sources (``tuner/tuning/evaluate.py``). A study
    records it and resumes only under the same (results of two cost models are not one
    study)."""
    h = hashlib.sha256(simulator_digest().encode())
    h.update((REPO_ROOT / "tuner" / "tuning" / "evaluate.py").read_bytes())
    return h.hexdigest()[:16]


# the packages whose untracked files (not ignored) are code the commit does not hold
CODE_DIRS = ("simulator", "tuner", "search_spaces")


@cache
def git_commit() -> str | None:
    """Commit of the source checkout, or None outside git; ``-dirty`` where a tracked file
    is modified or the packages hold a file git does not track (a new simulator module
    changes the model as much as an edit does)."""
    if not (REPO_ROOT / ".git").exists():
        return None

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True,
                              text=True, timeout=5, check=True).stdout.strip()
    try:
        head = git("rev-parse", "--short=12", "HEAD")
        dirty = (git("status", "--porcelain", "--untracked-files=no")
                 or git("ls-files", "--others", "--exclude-standard", "--", *CODE_DIRS))
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}-dirty" if dirty else head or None


def ray_node_id() -> str | None:
    """The Ray node this process runs on (a Ray worker), or None outside Ray; never imports
    Ray itself, so the in-process path stays free of it."""
    if not ray_initialized():
        return None
    try:
        return sys.modules["ray"].get_runtime_context().get_node_id()
    except Exception:  # noqa: BLE001 - provenance only: a row without it beats no row
        return None


def ray_initialized() -> bool:
    """Whether this process runs Ray (``ray.init`` done); never imports Ray, and a Ray still
    being imported by another thread (a local Ray starting in the background) is not
    running yet: its half-built module is not asked."""
    ray = sys.modules.get("ray")
    if ray is None or getattr(getattr(ray, "__spec__", None), "_initializing", False):
        return False
    try:
        return bool(ray.is_initialized())
    except Exception:  # noqa: BLE001 - a module without it yet is not running Ray
        return False


@cache
def hostname() -> str:
    """This machine's host name (the ``worker`` column)."""
    return socket.gethostname()
