"""Tuning with Ray workers: one local Ray session (2 CPUs) shared by the tests of this module."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from tuner.cli import main
from tuner.results.store import read_trials
from tuner.tuning.evaluate import SimulatorBackend
from tuner.tuning.executor import TASK_RETRIES
from tuner.tuning.plan import check_spec
from tuner.tuning.plan import load_spaces
from tuner.tuning.plan import run_studies
from tuner.tuning.spec import StudySpec

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module", autouse=True)
def ray_session():
    """Start Ray once for the module; the tuner uses it and leaves it running."""
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="WARNING")
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


def test_a_finite_space_on_ray_workers_writes_one_row_per_configuration(tmp_path):
    # with its configurations in flight the sampler had been asked on, drawing repeats only:
    # 56 trial rows for a 12-configuration space, 44 of them duplicates (probe CR10)
    space = tmp_path / "vref.yaml"
    space.write_text("name: vref\nfixed: {mapping: vwarp}\nparams:\n"
                     "  w: {choices: [1, 2, 4, 8, 16, 32]}\n"
                     "  distribution: {choices: [static, dynamic]}\n")
    results = tmp_path / "res"
    assert main(["tune", "--graph", "rmat:scale=8,seed=1", "--space", str(space), "--trials",
                 "20", "--sources", "1", "--workers", "2", "--results", str(results),
                 "--no-progress", "-q"]) == 0
    trials = [r for r in read_trials(results).to_pylist() if r["role"] == "trial"]
    assert len(trials) == 12
    configs = {(r["param_w"], r["param_distribution"]) for r in trials}
    assert len(configs) == 12
    # the 6 a reference runs (vwarp w=W, static) answered from it, once each
    assert sorted(r["param_w"] for r in trials if r["state"] == "duplicate") == [
        1, 2, 4, 8, 16, 32]


def test_the_progress_line_counts_references_and_configurations_apart(tmp_path, capsys):
    # A grid space holds the references' configurations: trials that repeat one wait on its
    # run and finish with it. The line had booked them as whichever kind finished last,
    # "61/56 configurations, 2/7 references" on Ray where the table said 56 and 7 (probe UX)
    code = main(["tune", "--graph", "rmat:scale=8,seed=4", "--space", "select", "--sampler",
                 "grid", "--sources", "1", "--workers", "2", "--results", str(tmp_path)])
    captured = capsys.readouterr()
    table = re.search(r"(\d+) configurations tried and (\d+) references", captured.out)
    assert code == 0 and table is not None
    configs, refs = map(int, table.groups())
    last = captured.err.strip().splitlines()[-1]
    assert last.startswith(f"tune: {configs}/{configs} configurations, {refs}/{refs} "
                           "references"), last


@pytest.mark.parametrize("workers,said", [(1, "up to 1 CPU in flight, capped at 1"),
                                           (5, "up to 2 CPUs in flight")])
def test_the_footer_names_a_cap_only_where_it_held_cpus_back(workers, said):
    # "up to 1 CPUs", and "capped at 5" on a 2-CPU cluster, a cap that never applied (probe JJ)
    from tuner.tuning.executor import RayExecutor

    executor = RayExecutor(workers=workers)
    assert executor.capacity == min(workers, 2)
    assert executor.description == f"Ray, {said}"


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


class CrashingBackend(SimulatorBackend):
    """The simulator, but the worker process dies on its first ``crashes`` evaluations of
    W=8 (counted in a file, since each attempt runs in a fresh worker)."""

    def __init__(self, counter: Path, crashes: int) -> None:
        self.counter = counter
        self.crashes = crashes

    def evaluate(self, graph, runs, algorithm, device, config):
        if config.get("w") == 8:
            seen = int(self.counter.read_text()) if self.counter.exists() else 0
            if seen < self.crashes:
                self.counter.write_text(str(seen + 1))
                os._exit(1)  # a dead worker, as a lost node looks to its tasks
        return super().evaluate(graph, runs, algorithm, device, config)


def test_a_task_that_fails_after_rays_retries_is_submitted_again(tmp_path):
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    space = tmp_path / "w8.yaml"
    space.write_text("fixed: {mapping: vwarp, w: 8, chunk: 4}\n")
    spec = check_spec(StudySpec(graph="rmat:scale=8,seed=2", algorithm="bfs", device="h100",
                                space=str(space), trials=1, sources=1, references=False))
    counter = tmp_path / "crashes"
    backend = CrashingBackend(counter, crashes=TASK_RETRIES + 2)  # Ray's attempts, then one more
    result = run_studies([spec], load_spaces([spec]), tmp_path / "res", workers=1,
                         backend=backend)
    assert int(counter.read_text()) == TASK_RETRIES + 2
    assert result.stats.resubmitted == 1  # Ray gave up once; the driver asked again
    (row,) = read_trials(tmp_path / "res").to_pylist()
    assert row["state"] == "complete" and row["trial"] == 0  # recorded once, not lost


def test_without_address_a_running_cluster_is_not_borrowed(monkeypatch):
    # A cluster this machine runs (here a head with no CPUs, as `ray start --num-cpus 0`
    # leaves) must not capture a run that names no --address: it starts its own.
    from ray import cluster_utils

    from tuner.tuning.executor import RayExecutor

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    ray.shutdown()  # the module's session: this test needs Ray not yet started
    cluster = cluster_utils.Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": False, "object_store_memory": 80 * 1024**2})
    try:
        executor = RayExecutor(workers=1)
        try:
            assert executor.capacity == 1
            assert ray.get_runtime_context().gcs_address != cluster.address
        finally:
            executor.close()
    finally:
        ray.shutdown()
        cluster.shutdown()


def _prepared(tag):
    return (f"graph {tag}", f"runs {tag}", "meta")


def test_a_shared_object_that_cannot_be_fetched_is_computed_again(monkeypatch):
    """A worker waiting for a shared object longer than ``RESOLVE_TIMEOUT_S`` (one lost with
    its node, say) computes it itself from its ``Rebuild``, and keeps it for the next call;
    the object itself is still not ready."""
    import time

    from tuner.tuning import executor as executor_module
    from tuner.tuning.executor import Rebuild
    from tuner.tuning.executor import Shared

    @ray.remote(num_cpus=0)
    def never_ready():
        time.sleep(3600)

    ref = never_ready.remote()
    monkeypatch.setattr(executor_module, "RESOLVE_TIMEOUT_S", 0.5)
    start = time.monotonic()
    value = executor_module._resolve(Shared(ref, Rebuild(_prepared, ("x",), 1)))
    assert value == "runs x" and time.monotonic() - start < 30
    assert executor_module._resolve(Shared(ref, Rebuild(_prepared, ("y",), 1))) == "runs x"
    with pytest.raises(ray.exceptions.GetTimeoutError):  # no rebuild: Ray's own wait
        ray.get(ref, timeout=0.5)
    ray.cancel(ref, force=True)


def test_rays_token_notice_is_left_out_but_not_its_warning():
    """Starting a local cluster, Ray says token authentication is on: not the tool's output
    (-q, --json). That it is off is a security warning, and stays."""
    import logging

    from tuner.tuning.executor import _quiet_token_notice

    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    logger = logging.getLogger("ray._private.authentication.authentication_token_setup")
    handler = Keep(logging.WARNING)
    logger.addHandler(handler)
    try:
        with _quiet_token_notice():
            logger.warning("Token authentication is enabled for this Ray cluster. Set ...")
            logger.warning("Token authentication is disabled for this Ray cluster. Anyone ...")
        logger.warning("Token authentication is enabled for this Ray cluster. Set ...")
    finally:
        logger.removeHandler(handler)
    assert [m[:29] for m in seen] == ["Token authentication is disab",
                                      "Token authentication is enabl"]


class HangingBackend(SimulatorBackend):
    """The simulator, but an evaluation of W=8 never returns (a hung worker)."""

    def evaluate(self, graph, runs, algorithm, device, config):
        if config.get("w") == 8:
            import time

            time.sleep(3600)
        return super().evaluate(graph, runs, algorithm, device, config)


@pytest.mark.parametrize("deterministic", [False, True])
def test_a_hung_evaluation_is_cancelled_past_the_timeout_and_run_again_by_a_resume(
        tmp_path, monkeypatch, deterministic):
    """A worker that hangs had held a run with --timeout for good (the run only said every
    30 s what it waited for). Past the timeout by OVERDUE_CANCEL_S it is cancelled, its trial
    failed for the machine's sake: named at the end, and a resume runs it again."""
    import time

    from tuner.tuning import runner as runner_module

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    monkeypatch.setattr(runner_module, "OVERDUE_CANCEL_S", 1.0)
    space = tmp_path / "ws.yaml"
    space.write_text("fixed: {mapping: vwarp, chunk: 4}\nparams:\n  w: {choices: [4, 8]}\n")
    spec = check_spec(StudySpec(graph="rmat:scale=8,seed=2", algorithm="bfs", device="h100",
                                space=str(space), trials=2, sources=1, references=False,
                                sampler="grid"))
    results = tmp_path / "res"
    start = time.monotonic()
    result = run_studies([spec], load_spaces([spec]), results, workers=2, timeout=4.0,
                         backend=HangingBackend(), deterministic=deterministic)
    assert time.monotonic() - start < 60
    (summary,) = result.summaries
    assert summary.to_retry == 1
    rows = {r["param_w"]: r for r in read_trials(results).to_pylist()}
    assert rows[4]["state"] == "complete"
    assert rows[8]["state"] == "failed" and "past --timeout, cancelled" in rows[8]["error"]

    result = run_studies([spec], load_spaces([spec]), results, workers=2)
    assert result.summaries[0].to_retry == 0
    after = [r for r in read_trials(results).to_pylist() if r["param_w"] == 8]
    assert [r["state"] for r in after] == ["failed", "complete"]
