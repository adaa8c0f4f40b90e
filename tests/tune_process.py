"""A `warpsweep tune` run in a process of its own, stopped once its journal holds some
results: what the tests of stopping and resuming a run start from."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def tune_argv(results: Path, trials: int) -> list[str]:
    """An in-process random study of many quick trials, on the graph these tests share."""
    return ["tune", "--graph", "rmat:scale=10,seed=2", "--trials", str(trials), "--sampler",
            "random", "--workers", "0", "--no-references", "--results", str(results),
            "--no-progress"]


def started_until(argv: list[str], results: Path, records: int
                  ) -> tuple[subprocess.Popen, Path | None]:
    """The command started, once its journal records ``records`` results (or a minute has
    passed, or it ended): the process and the journal (None if it never held that many)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "tuner.cli", *argv], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        journals = list((results / "studies").glob("*.journal"))
        if journals and journals[0].read_text().count('"record"') >= records:
            return proc, journals[0]
        time.sleep(0.02)
    return proc, None
