"""`--seed` with `--workers N --deterministic` gives the same trials on every run (issue 41):
Ray workers whose evaluations take a random extra time, so they finish in a different order on
each run, and the sampler still draws the same configurations in the same order."""

from __future__ import annotations

import json
import random
import sys
import time

import numpy as np
import pytest

from simulator.errors import ConfigError
from tuner.cli import main
from tuner.results.store import read_trials
from tuner.tuning.evaluate import SimulatorBackend
from tuner.tuning.executor import make_executor
from tuner.tuning.plan import check_spec
from tuner.tuning.plan import load_spaces
from tuner.tuning.plan import run_studies
from tuner.tuning.spec import StudySpec

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module", autouse=True)
def ray_session():
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="WARNING")
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    ray.shutdown()


class JitteredBackend(SimulatorBackend):
    """The simulator, each evaluation held 0 to 30 ms longer at random (not seeded), so the
    two workers' finish order changes from run to run."""

    def evaluate(self, graph, runs, algorithm, device, config):
        time.sleep(random.SystemRandom().uniform(0.0, 0.03))
        return super().evaluate(graph, runs, algorithm, device, config)


def _trials(results) -> list[tuple]:
    rows = [r for r in read_trials(results).to_pylist() if r["role"] == "trial"]
    rows.sort(key=lambda r: r["trial"])
    return [(r["trial"], r["state"], tuple(sorted((k, v) for k, v in r.items()
                                                  if k.startswith("param_") and v is not None)))
            for r in rows]


def _run(results, deterministic: bool) -> list[tuple]:
    spec = check_spec(StudySpec(graph="rmat:scale=7,seed=3", algorithm="bfs", device="h100",
                                space="vwarp", trials=24, sources=1, seed=11,
                                references=False))
    result = run_studies([spec], load_spaces([spec]), results, workers=2,
                         backend=JitteredBackend(), deterministic=deterministic)
    if deterministic:
        assert "results taken in order" in result.executor
    assert result.summaries[0].done == 24
    return _trials(results)


def test_deterministic_workers_give_the_same_trials_in_the_same_order(tmp_path):
    first = _run(tmp_path / "a", deterministic=True)
    second = _run(tmp_path / "b", deterministic=True)
    assert len(first) >= 24  # past TPE's 10 random start-up trials
    assert [t[0] for t in first] == list(range(len(first)))
    assert first == second


def test_deterministic_needs_a_number_of_workers():
    with pytest.raises(ConfigError, match="--deterministic needs --workers N"):
        make_executor(None, None, deterministic=True)


def test_cli_deterministic_tune(tmp_path, capsys):
    argv = ["tune", "--graph", "rmat:scale=6,seed=2", "--trials", "12", "--sources", "1",
            "--seed", "5", "--workers", "2", "--deterministic", "--no-references",
            "--no-progress"]
    assert main([*argv, "--results", str(tmp_path / "a")]) == 0
    assert "results taken in order" in capsys.readouterr().out
    assert main([*argv, "--results", str(tmp_path / "b")]) == 0
    assert _trials(tmp_path / "a") == _trials(tmp_path / "b")


def test_each_run_of_a_study_records_how_it_drew_its_trials(tmp_path):
    """The seed alone does not give a resumed study's trials (a resume reseeds the sampler
    by how far it got) nor a Ray run's (results told as they come): each run records in the
    journal its first trial, the sampler's seed, how it dispatched, version and model."""
    import optuna

    from tuner import api
    from tuner.env import model_digest
    from tuner.results.location import Location
    from tuner.tuning.spec import resume_seed

    results = tmp_path / "r"
    for trials in (4, 9):
        api.tune("rmat:scale=6,seed=1", trials=trials, sources=1, results=str(results),
                 sampler="random", seed=7, workers=0)
    (journal,) = Location.of(str(results)).journal_dir().glob("*.journal")
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(
        str(journal)))
    (summary,) = optuna.get_all_study_summaries(storage)
    attrs = optuna.load_study(study_name=summary.study_name, storage=storage).user_attrs
    runs = sorted((v for k, v in attrs.items() if k.startswith("run:")),
                  key=lambda r: r["first_trial"])
    assert [r["first_trial"] for r in runs] == [0, runs[1]["first_trial"]]
    assert runs[1]["first_trial"] >= 4
    assert runs[0]["sampler_seed"] == 7
    assert runs[1]["sampler_seed"] == resume_seed(7, runs[1]["first_trial"])
    assert {r["dispatch"] for r in runs} == {"in-process"}
    assert {r["model"] for r in runs} == {model_digest()}


def test_an_untracked_module_in_the_packages_marks_the_commit_dirty(tmp_path, monkeypatch):
    # a new simulator module changes the model as an edit does, and had left the commit clean
    # (probe FF); an untracked file elsewhere (notes, results) does not make it dirty
    import subprocess

    from tuner import env

    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t",
                        *args], check=True, capture_output=True)
    (tmp_path / "simulator").mkdir()
    (tmp_path / "simulator" / "model.py").write_text("x = 1\n")
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "one")
    monkeypatch.setattr(env, "REPO_ROOT", tmp_path)
    commit = env.git_commit.__wrapped__
    assert not commit().endswith("-dirty")
    (tmp_path / "notes.txt").write_text("mine\n")
    assert not commit().endswith("-dirty")
    (tmp_path / "simulator" / "new_cost.py").write_text("y = 2\n")
    assert commit().endswith("-dirty")
    (tmp_path / "simulator" / "new_cost.py").unlink()
    (tmp_path / "simulator" / "model.py").write_text("x = 2\n")
    assert commit().endswith("-dirty")


def test_the_version_is_the_running_checkouts_not_the_installed_one(tmp_path, monkeypatch):
    # an editable install keeps the version it was installed with: rows of a checkout whose
    # pyproject moved on had named the old one beside the new commit (probe REPRO)
    import importlib.metadata

    from tuner import env

    monkeypatch.setattr(env, "REPO_ROOT", tmp_path)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "warpsweep"\nversion = "9.8.7"\n')
    assert env.warpsweep_version.__wrapped__() == "9.8.7"
    # not a checkout of this project (an installed package's directory): the installed one
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "other"\nversion = "1.0"\n')
    assert env.warpsweep_version.__wrapped__() == importlib.metadata.version("warpsweep")
    (tmp_path / "pyproject.toml").unlink()
    assert env.warpsweep_version.__wrapped__() == importlib.metadata.version("warpsweep")


def test_simulate_json_says_what_made_its_figures(capsys):
    # the source it ran from (chosen when not given) and the code that simulated (probe FF)
    from simulator import functional_run
    from simulator import load_graph
    from tuner.env import git_commit
    from tuner.env import simulator_digest
    from tuner.env import warpsweep_version

    assert main(["simulate", "--graph", "rmat:scale=7,seed=1", "--algo", "bfs", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["source"] == functional_run(load_graph("rmat:scale=7,seed=1"), "bfs").source
    assert (report["warpsweep_version"], report["git_commit"], report["simulator"]) == (
        warpsweep_version(), git_commit(), simulator_digest())
    assert report["libraries"]["numpy"] == np.__version__  # a generated graph follows from it
    # and the device's fields, not its name alone: a file named h100 had printed "h100" and
    # other figures (probe REPRO)
    from simulator.device import device_digest
    from simulator.device import get_device

    assert report["device_digest"] == device_digest(get_device("h100"))
    assert main(["simulate", "--graph", "rmat:scale=7,seed=1", "--algo", "bfs",
                 "--source", "3"]) == 0
    assert "bfs from 3 on h100" in capsys.readouterr().out
