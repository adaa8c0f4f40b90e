"""`warpsweep tune` from the console runs its study in a child process: when Ray ends that
child without a word (the node's raylet dying does), the command still names what happened and
how to resume; Ctrl-C still stops it as before. Real processes, real Ray, real signals."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tuner.results.store import read_trials

pytest.importorskip("ray")

TRIALS = 400  # far more than run before each signal; --timeout ends the last run


def start(results: Path, ignore_hangup: bool = False, background: bool = False,
          timeout_s: int = 12, graph: str = "rmat:scale=12,seed=4,weights=random",
          space: str = "vwarp") -> subprocess.Popen:
    """The console command (``python -m tuner.cli``: ``main()`` with no argv, as the script),
    taking Ctrl-C as a terminal's command does whatever this process inherited;
    ``ignore_hangup``: as `nohup` starts it; ``background``: as a non-interactive shell
    starts `warpsweep tune ... &`, SIGINT ignored."""

    def dispositions() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN if background else signal.SIG_DFL)
        if ignore_hangup:
            signal.signal(signal.SIGHUP, signal.SIG_IGN)

    return subprocess.Popen(
        [sys.executable, "-m", "tuner.cli", "tune", "--graph", graph, "--algo", "sssp",
         "--space", space, "--trials", str(TRIALS), "--sources", "2", "--workers", "2",
         "--timeout", str(timeout_s), "--results", str(results), "--no-progress", "-v"],
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

    # resumed, then its child killed as Ray kills a driver (a shorter --timeout: the resume
    # below runs the printed command, which repeats it, to its end)
    run = start(results, timeout_s=7)
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

    # started in the background (SIGINT ignored, and so in its child), the command killed:
    # its child had gone on tuning, its journal locked, refusing a resume
    results = tmp_path / "background"  # (a study of minutes: it would not end on its own)
    run = start(results, background=True, timeout_s=600,
                graph="rmat:scale=13,seed=4,weights=random", space="driven")
    later = wait_for_trials(run, 1)
    run.kill()
    try:
        run.communicate(timeout=60)  # its child holds the same stderr: read until it ends
    except subprocess.TimeoutExpired:
        raise AssertionError("the child went on tuning after its command was killed") from None
    resumed = subprocess.run(
        [sys.executable, "-m", "tuner.cli", "tune", "--graph", "rmat:scale=13,seed=4,"
         "weights=random", "--algo", "sssp", "--space", "driven", "--trials", str(TRIALS),
         "--sources", "2", "--workers", "0", "--timeout", "1", "--results", str(results), "-q"],
        capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr  # the journal is free
    after = finished_trials(results)
    for number, time_us in later.items():
        assert after[number] == pytest.approx(time_us, rel=1e-5)


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc for the child")
def test_sigterm_to_the_child_stops_it_as_ctrl_c(tmp_path):
    """`kill` of the child (what ps shows running) had printed Ray's native stack, and the
    command had called it an abrupt end."""
    results = tmp_path / "r"
    run = start(results)
    wait_for_trials(run, 2)
    subprocess.run(["kill", "-TERM", str(child_of(run.pid))], check=True)
    _, err = run.communicate(timeout=120)
    assert run.returncode == 130, err
    assert "every finished evaluation is saved" in err
    assert "ended abruptly" not in err and "SIGTERM received" not in err


def test_another_verb_under_the_supervisors_variable_writes_nothing_into_its_output():
    """A `query` run with WARPSWEEP_SUPERVISED_FD inherited (from a supervised job's
    environment) had appended "1" to its JSON on stdout."""
    import json

    env = {**os.environ, "WARPSWEEP_SUPERVISED_FD": "1"}
    out = subprocess.run([sys.executable, "-m", "tuner.cli", "graph", "info", "rmat:scale=5",
                          "--json"], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert json.loads(out)["n"] == 32
