"""Shared fixtures: small seeded graphs built directly from edge lists."""

import os
from pathlib import Path

import numpy as np
import pytest

from simulator import Graph

SHARED_GRAPHS = Path(__file__).resolve().parents[2] / "shared" / "graphs"


def random_graph(n: int, m: int, seed: int, *, directed: bool = False, weights: bool = False):
    """A uniform random multigraph on n vertices, normalised (loops and duplicates dropped)."""
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    w = rng.integers(1, 101, m).astype(np.float32) if weights else None
    return Graph.from_edges(src, dst, n, w, directed=directed, name=f"random{seed}")


def skewed_graph(n: int, m: int, seed: int, *, weights: bool = False) -> Graph:
    """A graph whose endpoints follow a Zipf-like law: a few hubs, many leaves."""
    rng = np.random.default_rng(seed)
    pick = lambda size: np.minimum((rng.pareto(1.2, size) * 3).astype(np.int64), n - 1)  # noqa: E731
    src, dst = pick(m), rng.integers(0, n, m)
    w = rng.integers(1, 101, m).astype(np.float32) if weights else None
    return Graph.from_edges(src, dst, n, w, name=f"skewed{seed}")


@pytest.fixture(scope="session")
def small_graphs():
    """Graphs of different shapes, with weights, for algorithm reference checks."""
    return [
        random_graph(300, 900, 1, weights=True),
        random_graph(300, 200, 2, weights=True),  # many components and isolated vertices
        skewed_graph(500, 3000, 3, weights=True),
        random_graph(200, 800, 4, directed=True, weights=True),
    ]


@pytest.fixture
def bucket_uri(monkeypatch):
    """An ``s3://`` results URI on a moto server of this test's own, in a new bucket (moto's
    state outlives the server)."""
    import uuid

    moto_server = pytest.importorskip("moto.server")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "warpsweep-test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "warpsweep-test")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    bucket = f"sweeps-{uuid.uuid4().hex[:12]}"
    yield (f"s3://{bucket}/results?endpoint_override=http://{host}:{port}&scheme=http"
           "&region=us-east-1&allow_bucket_creation=true")
    server.stop()


# modules that start Ray (a new one belongs here): run one after another on one xdist worker
# (pyproject.toml: -n auto --dist loadgroup), beside the rest of the suite on the others
RAY_MODULES = {"test_tuner_ray", "test_cluster_dispatch", "test_cluster_multinode",
               "test_reproducible", "test_supervised_run", "test_tuner_handover",
               "test_tuner_tune", "test_cluster_launcher"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.module.__name__.rsplit(".", 1)[-1] in RAY_MODULES:
            item.add_marker(pytest.mark.xdist_group("ray"))


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: the CPUs this process may run on (xdist counts physical cores where
    psutil is installed: one on a VM of two hyperthreads)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
