"""Tuning with Ray workers: one local Ray session (2 CPUs) shared by the tests of this module."""

from __future__ import annotations

import pytest

from tuner.cli import main
from tuner.plan import check_spec
from tuner.plan import load_spaces
from tuner.plan import run_studies
from tuner.store import read_trials
from tuner.study import StudySpec

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module", autouse=True)
def ray_session():
    """Start Ray once for the module; the tuner uses it and leaves it running."""
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield
    ray.shutdown()


def test_tune_with_ray_workers(tmp_path, capsys):
    results = tmp_path / "res"
    code = main(["tune", "--graph", "rmat:scale=9,seed=1", "--trials", "16", "--sources", "2",
                 "--results", str(results), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0 and "Ray, up to 2 CPUs in flight" in out and "vs thread" in out
    assert ray.is_initialized()  # a session the tuner did not start is left running
    rows = read_trials(results).to_pylist()
    trials = [r for r in rows if r["role"] == "trial"]
    assert sorted(r["trial"] for r in trials) == list(range(len(trials)))
    tried = {tuple(sorted((k, v) for k, v in r.items()
                          if k.startswith("param_") and v is not None)) for r in trials}
    assert len(tried) == 16  # repeats answered from the study do not use up the budget
    assert all(r["worker"] and r["wall_s"] > 0 for r in rows if r["state"] == "complete")
    assert len([r for r in rows if r["role"] == "reference"]) == 7


def test_sweep_studies_share_workers_and_prepared_graphs(tmp_path):
    specs = [
        check_spec(StudySpec(graph="rmat:scale=8,seed=2", algorithm="bfs", device=device,
                             space="vwarp", trials=10, sources=2, references=False))
        for device in ("h100", "c2050")
    ]
    result = run_studies(specs, load_spaces(specs), tmp_path / "res", workers=2)
    assert [s.done for s in result.summaries] == [10, 10]
    assert result.stats.prepares == 1  # one graph + functional runs in the object store
    assert result.stats.capacity == 2
    rows = read_trials(tmp_path / "res").to_pylist()
    assert {r["device"] for r in rows} == {"h100", "c2050"}
