"""`warpsweep tune` from the console runs its study in a child process: when Ray ends that
child without a word (the node's raylet dying does), the command still names what happened and
how to resume; Ctrl-C still stops it as before. Real processes, real Ray, real signals."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tuner.results.store import read_trials

pytest.importorskip("ray")

TRIALS = 400  # far more than run before each signal; --timeout ends the last run


def start(results: Path, ignore_hangup: bool = False) -> subprocess.Popen:
    """The console command (``python -m tuner.cli``: ``main()`` with no argv, as the script),
    taking Ctrl-C as a terminal's command does whatever this process inherited (a background
    job of a non-interactive shell ignores SIGINT); ``ignore_hangup``: as `nohup` starts it."""

    def dispositions() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if ignore_hangup:
            signal.signal(signal.SIGHUP, signal.SIG_IGN)

    return subprocess.Popen(
        [sys.executable, "-m", "tuner.cli", "tune", "--graph",
         "rmat:scale=12,seed=4,weights=random", "--algo", "sssp", "--trials", str(TRIALS),
         "--sources", "2", "--workers", "2", "--timeout", "20", "--results", str(results),
         "--no-progress", "-v"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=dispositions)


def wait_for_trials(run: subprocess.Popen, count: int) -> dict[int, float]:
    """Read the run's stderr until ``count`` trials have finished (a line each, -v): their
    numbers and times."""
    lines, finished = [], {}
    for line in run.stderr:
        lines.append(line)
        if found := re.match(r"tune: trial (\d+) time_us=(\S+) ", line):
            finished[int(found[1])] = float(found[2])
            if len(finished) >= count:
                return finished
    raise AssertionError("the run ended before its trials:\n" + "".join(lines))


def child_of(parent: int) -> int:
    (child,) = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    return int(child)


def finished_trials(results: Path) -> dict[int, float]:
    return {r["trial"]: r["time_us"] for r in read_trials(str(results)).to_pylist()
            if r["role"] == "trial" and r["state"] == "complete"}


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc for the child")
def test_an_abrupt_end_is_named_with_its_resume_command_and_ctrl_c_still_stops(tmp_path):
    results = tmp_path / "r"
    # started as `nohup` starts it: a hangup is ignored by the command and so by its child
    run = start(results, ignore_hangup=True)
    wait_for_trials(run, 2)
    run.send_signal(signal.SIGHUP)
    wait_for_trials(run, 2)  # still running
    run.send_signal(signal.SIGTERM)  # as `timeout` stops it: passed on as Ctrl-C
    run.send_signal(signal.SIGINT)  # impatient: a second signal must not break the stop
    _, err = run.communicate(timeout=120)
    assert run.returncode == 130
    assert "interrupted; every finished evaluation is saved" in err
    assert "stopping; every finished evaluation is saved" in err
    assert "ended abruptly" not in err and "Traceback" not in err
    before = finished_trials(results)
    assert len(before) >= 3

    run = start(results)  # resumed, then its child killed as Ray kills a driver
    seen = wait_for_trials(run, 2)  # finished before the kill (rows still unwritten)
    subprocess.run(["kill", "-KILL", str(child_of(run.pid))], check=True)
    _, err = run.communicate(timeout=120)
    assert run.returncode == 128 + signal.SIGKILL
    assert "the tune run ended abruptly (killed by SIGKILL)" in err
    resume = err.split("resume with:\n")[1].strip()
    assert resume.startswith("warpsweep tune --graph rmat:scale=12,seed=4,weights=random ")

    # from a directory whose optuna.py would shadow the real one: the child imports what the
    # command imported, never the working directory
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "optuna.py").write_text('raise ImportError("shadowed")\n')
    script = Path(sys.executable).with_name("warpsweep")  # the console script, as installed
    command = [str(script)] if script.exists() else [sys.executable, "-P", "-m", "tuner.cli"]
    done = subprocess.run([*command, *resume.split()[1:]], cwd=shadow,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "ended abruptly" not in done.stderr
    trials = [r for r in read_trials(str(results)).to_pylist() if r["role"] == "trial"]
    numbers = [r["trial"] for r in trials]
    assert len(numbers) == len(set(numbers))  # no trial written twice
    after = finished_trials(results)
    for number, time_us in (*before.items(), *seen.items()):  # nothing finished is lost
        assert after[number] == pytest.approx(time_us, rel=1e-5)
