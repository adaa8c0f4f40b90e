"""Sweeps on a multi-node Ray cluster on one machine (``ray.cluster_utils.Cluster``): a head
with no CPUs, as on a real cluster, and 1-CPU worker nodes. Trials run on every node (node ids
in Parquet), a node removed mid-sweep costs no trial, and a driver killed with SIGKILL and
started again finishes the sweep without repeating a finished trial."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from ray_cluster import DelayedBackend
from ray_cluster import local_cluster

from tuner.results.store import read_trials
from tuner.tuning.executor import CPU_REFRESH_S
from tuner.tuning.executor import RayExecutor
from tuner.tuning.plan import check_spec
from tuner.tuning.plan import load_spaces
from tuner.tuning.plan import run_studies
from tuner.tuning.spec import StudySpec

ray = pytest.importorskip("ray")
cluster_utils = pytest.importorskip("ray.cluster_utils")

REPO = Path(__file__).resolve().parent.parent
GRAPH = "rmat:scale=8,seed=3"


@pytest.fixture
def cluster():
    with local_cluster(2, 1, sys.modules[__name__]) as nodes:
        yield nodes


def specs(trials: int, algorithms=("bfs", "cc")) -> list[StudySpec]:
    return [check_spec(StudySpec(graph=GRAPH, algorithm=a, device="h100", space="vwarp",
                                 trials=trials, sources=1, references=False, sampler="random"))
            for a in algorithms]


def trial_rows(results: Path) -> list[dict]:
    return [r for r in read_trials(results).to_pylist() if r["role"] == "trial"]


def test_sweep_uses_every_worker_node_and_survives_losing_one(cluster, tmp_path):
    c, workers = cluster
    worker_ids = {w.node_id for w in workers}
    head_id = c.head_node.node_id
    results = tmp_path / "res"
    removed = threading.Event()

    def remove_when_both_busy() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            files = list((results / "trials").rglob("part-*.parquet")) if results.exists() else []
            if files:
                nodes = {r["node_id"] for r in trial_rows(results)}
                if nodes >= worker_ids:
                    c.remove_node(workers[1])
                    removed.set()
                    return
            time.sleep(0.1)

    remover = threading.Thread(target=remove_when_both_busy, daemon=True)
    remover.start()
    result = run_studies(specs(30), load_spaces(specs(30)), results, workers=None,
                         backend=DelayedBackend(0.05), flush_every_s=0.2)
    remover.join(timeout=5)
    assert removed.is_set()
    rows = trial_rows(results)
    assert [s.done for s in result.summaries] == [30, 30]
    # every trial recorded once, on a worker node (never the CPU-less head)
    assert Counter((r["study_key"], r["trial"]) for r in rows).most_common(1)[0][1] == 1
    assert {r["node_id"] for r in rows if r["state"] == "complete"} <= worker_ids
    assert head_id not in {r["node_id"] for r in rows}
    assert not [r for r in rows if r["state"] == "failed"]
    # in flight: as many evaluations as the cluster has CPUs, as nodes leave and join
    executor = RayExecutor(address=c.address)
    assert executor.capacity == 1
    c.add_node(num_cpus=1, object_store_memory=80 * 1024**2)
    c.wait_for_nodes()
    time.sleep(CPU_REFRESH_S)
    assert executor.capacity == 2
    # the footer names the nodes (the head, the worker left and the one added; probe JJ)
    assert executor.description == "Ray, up to 2 CPUs in flight on 3 nodes"
    assert RayExecutor(workers=1, address=c.address).capacity == 1  # --workers caps it


def test_driver_killed_and_restarted_repeats_nothing(cluster, tmp_path):
    c, _ = cluster
    results = tmp_path / "res"
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(f"trials: 60\nsampler: random\nsources: 1\nreferences: false\n"
                     f"graphs: ['{GRAPH}']\nalgorithms: [bfs, cc]\ndevices: [h100]\n"
                     "spaces: [vwarp]\n")
    argv = [sys.executable, "-m", "tuner.cli", "sweep", str(sweep), "--address", c.address,
            "--results", str(results), "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    recorded: dict[str, dict[int, list]] = {}
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and proc.poll() is None:
        journals = list((results / "studies").glob("*.journal"))
        if journals and sum(j.read_text().count('"record"') for j in journals) >= 30:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    for journal in (results / "studies").glob("*.journal"):
        recorded[journal.stem] = {}
        lines = journal.read_text().split("\n")
        # the kill may cut the line being written: its trial did not finish, only that one
        for line in lines[:-1]:
            if '"record"' in line:
                op = json.loads(line)
                rec = op["user_attr"]["record"]
                recorded[journal.stem][rec["trial"]] = rec["values"]
    finished = sum(len(v) for v in recorded.values())
    assert 30 <= finished < 120, proc.stderr.read().decode()[-2000:]
    again = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True,
                           timeout=180)
    assert again.returncode == 0, again.stderr[-2000:]
    rows = trial_rows(results)
    by_study = Counter(r["study_key"] for r in rows)
    assert set(by_study) == set(recorded)
    assert Counter((r["study_key"], r["trial"]) for r in rows).most_common(1)[0][1] == 1
    for key, trials in recorded.items():  # every trial finished before the kill kept as it was
        mine = {r["trial"]: r for r in rows if r["study_key"] == key}
        for number, values in trials.items():
            assert mine[number]["values"] == values
        tried = {tuple(sorted((k, v) for k, v in r.items() if k.startswith("param_")
                              and v is not None)) for r in mine.values()}
        assert len(tried) == 60  # the budget: distinct configurations, exact
