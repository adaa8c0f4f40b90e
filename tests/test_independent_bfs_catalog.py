"""The independent BFS catalog (bench/gpu/independent/bfs_catalog.py): its implementations,
their simulator configs, their kernels in bfs.cu, the Parquet contract and the reference
levels. CPU only, no CuPy."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import scipy.sparse
import scipy.sparse.csgraph

from bench.gpu.independent import bfs_catalog
from bench.gpu.independent.bfs_catalog import KERNEL_TEMPLATES
from bench.gpu.independent.bfs_catalog import UNVISITED
from bench.gpu.independent.bfs_catalog import implementations
from bench.gpu.independent.bfs_catalog import kernel_names
from bench.gpu.independent.bfs_catalog import reference_levels
from bench.gpu.independent.catalog import COLUMNS
from bench.gpu.independent.catalog import SCHEMA
from simulator.driver import check_applicable
from simulator.strategy import Strategy

CU = Path(bfs_catalog.__file__).with_name("bfs.cu").read_text()
IMPLS = implementations()


def test_25_implementations_with_unique_ids():
    ids = [i.impl for i in IMPLS]
    assert len(ids) == 25 and len(set(ids)) == 25
    counts = {d: sum(i.driven == d for i in IMPLS) for d in ("topology", "data", "temporal")}
    assert counts == {"topology": 3, "data": 18, "temporal": 4}
    assert {"topo-w8", "wl-w8-cas-warp", "wl-w1-store-block", "temporal-w32-0.05"} <= set(ids)


@pytest.mark.parametrize("impl", IMPLS, ids=lambda i: i.impl)
def test_config_parses_and_applies_to_bfs(impl):
    strategy = Strategy.parse(impl.config)
    check_applicable(strategy, "bfs")
    assert strategy.driven == impl.driven
    assert strategy.block_size == bfs_catalog.BLOCK_SIZE == 256


def test_expected_configs():
    by_id = {i.impl: i.config for i in IMPLS}
    assert by_id["topo-w1"] == "mapping=thread"
    assert by_id["topo-w32"] == "mapping=vwarp,w=32"
    assert by_id["wl-w8-cas-thread"] == "mapping=vwarp,w=8,driven=data,push=atomic"
    assert by_id["wl-w8-store-warp"] == "mapping=vwarp,w=8,driven=data,push=atomic"
    assert by_id["wl-w1-cas-block"] == "mapping=thread,driven=data,push=block"
    assert by_id["temporal-w32-0.2"] == ("mapping=vwarp,w=32,driven=temporal,"
                                         "switch_to_topology=0.2,switch_to_data=0.2")


def _template_arity() -> dict[str, int]:
    """Kernel name -> number of template parameters, from bfs.cu's text."""
    found = {}
    pattern = (r"(?:template\s*<([^>]*)>\s*)?__global__\s+void\s+"
               r"(?:__launch_bounds__\(\w+\)\s+)?(\w+)\s*\(")
    for params, name in re.findall(pattern, CU):
        found[name] = len([p for p in params.split(",") if p.strip()]) if params else 0
    return found


def test_kernel_templates_exist_in_cu():
    assert _template_arity() == KERNEL_TEMPLATES


@pytest.mark.parametrize("impl", IMPLS, ids=lambda i: i.impl)
def test_kernel_instances_are_well_formed(impl):
    arity = _template_arity()
    for name in impl.kernels:
        m = re.fullmatch(r"(\w+)(?:<(\d+(?:,\d+)*)>)?", name)
        assert m, name
        args = m.group(2).split(",") if m.group(2) else []
        assert m.group(1) in arity and len(args) == arity[m.group(1)], name
        if m.group(1) in ("topo_sweep", "wl_step"):
            assert int(args[0]) == impl.w
    if impl.driven == "data":
        (step,) = impl.kernels
        visit = {"cas": 0, "store": 1}[impl.relax]
        push = {"thread": 0, "warp": 1, "block": 2}[impl.push]
        assert step == f"wl_step<{impl.w},{visit},{push}>"


def test_kernel_names_deduplicated():
    names = kernel_names(IMPLS)
    assert len(names) == len(set(names))
    # 3 sweeps + 18 steps + 2 counting sweeps + compaction (the hybrids' steps are listed)
    assert len(names) == 3 + 18 + 2 + 1


def _fake_rows() -> list[dict]:
    rows = []
    for k, impl in enumerate(IMPLS):
        rows.append({
            "device": "h200", "gpu_name": "NVIDIA H200", "graph": "g",
            "graph_spec": "grid2d:rows=4",
            "n": 16, "m": 48, "source": 0, "impl": impl.impl, "driven": impl.driven, "w": impl.w,
            "relax": impl.relax, "dedup": impl.dedup, "push": impl.push,
            "switch_on": impl.switch_on, "switch_fraction": impl.switch_fraction,
            "config": impl.config, "iterations": 7, "launches": 7 + k, "worklist_items": 16,
            "topology_rounds": 0, "verify_sweeps": 0, "repairs": 0, "time_us": 10.5 + k,
            "time_us_min": 10.0, "kernel_us": float("nan"), "reps": 5, "correct": k % 2 == 0,
            "cupy_version": "13.0", "cuda_version": "12.4", "commit": "abc",
            "measured_at": "2024-01-01T00:00:00+00:00",
        })
    return rows


def test_write_results_round_trips(tmp_path):
    rows = _fake_rows()
    path = tmp_path / "bfs.parquet"
    bfs_catalog.write_results(rows, path)
    table = pq.read_table(path)
    assert table.schema.equals(SCHEMA)
    back = table.to_pylist()
    assert len(back) == len(rows)
    for got, want in zip(back, rows, strict=True):
        for c in COLUMNS:
            if isinstance(want[c], float) and np.isnan(want[c]):
                assert np.isnan(got[c])
            else:
                assert got[c] == want[c], c
    assert {r["relax"] for r in back} == {"cas", "store"}


def _random_csr(n: int, m: int, seed: int, symmetric: bool) -> scipy.sparse.csr_matrix:
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    if symmetric:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    matrix = scipy.sparse.csr_matrix((np.ones(src.size), (src, dst)), shape=(n, n))
    matrix.sum_duplicates()
    return matrix


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("symmetric", [True, False])
def test_reference_levels_match_scipy(seed, symmetric):
    n = 60 + 17 * seed
    matrix = _random_csr(n, n // 2 + 10 * seed, seed, symmetric)  # sparse: unreachable parts
    source = seed % n
    got = reference_levels(matrix.indptr, matrix.indices, source)
    want = scipy.sparse.csgraph.shortest_path(matrix, directed=True, unweighted=True,
                                              indices=source)
    reach = np.isfinite(want)
    assert got.dtype == np.int32
    assert np.array_equal(got != UNVISITED, reach)
    assert not reach.all()  # the case of unreachable vertices is exercised
    assert np.array_equal(got[reach], want[reach].astype(np.int32))


def test_reference_levels_isolated_source():
    indptr = np.array([0, 0, 1, 2])
    indices = np.array([2, 1])
    got = reference_levels(indptr, indices, 0)
    assert got.tolist() == [0, UNVISITED, UNVISITED]
    assert reference_levels(indptr, indices, 1).tolist() == [UNVISITED, 0, 1]


def test_committed_h200_measurements_cover_every_kernel_and_graph_correctly():
    """The committed H200 file: every (graph, kernel) once, each right, its config the
    catalog's (fixed before the runs)."""
    path = Path(__file__).resolve().parents[1] / "bench/gpu/results/h200_independent_bfs.parquet"
    rows = pq.read_table(path).to_pylist()
    keys = {(r["graph"], r["impl"]) for r in rows}
    assert len(keys) == len(rows) == 17 * 25
    assert all(r["correct"] and r["time_us"] > 0 for r in rows)
    configs = {i.impl: i.config for i in IMPLS}
    assert all(r["config"] == configs[r["impl"]] for r in rows)


def test_merge_takes_the_median_session_and_keeps_a_wrong_row(tmp_path):
    from bench.gpu.independent.merge import merged_rows

    base = {c: None for c in COLUMNS}
    paths = []
    for k, (fast, slow_ok) in enumerate(((30.0, True), (10.0, False), (20.0, True))):
        rows = [{**base, "graph": "g", "impl": "a", "time_us": fast, "time_us_min": fast - 1,
                 "correct": True, "reps": k},
                {**base, "graph": "g", "impl": "b", "time_us": 5.0, "time_us_min": 4.0,
                 "correct": slow_ok, "reps": k}]
        paths.append(tmp_path / f"s{k}.parquet")
        bfs_catalog.write_results(rows, paths[-1])
    merged = {r["impl"]: r for r in merged_rows(paths)}
    assert (merged["a"]["time_us"], merged["a"]["reps"], merged["a"]["time_us_min"]) == (
        20.0, 2, 9.0)
    assert merged["b"]["correct"] is False and merged["b"]["reps"] == 1


def test_result_row_fills_the_contract_and_takes_the_median():
    from types import SimpleNamespace

    from bench.gpu.independent.catalog import result_row

    counts = SimpleNamespace(iterations=3, launches=4, worklist_items=5, topology_rounds=1)
    r = result_row({"device": "h200"}, (10, 20, 0), IMPLS[5], counts, [3.0, 1.0, 2.0, 9.0],
                   [1.0, 2.0], True)
    assert set(COLUMNS) - set(r) == {"gpu_name", "graph", "graph_spec", "cupy_version",
                                     "cuda_version", "commit", "measured_at"}
    assert (r["time_us"], r["time_us_min"], r["kernel_us"], r["reps"]) == (2.5, 1.0, 1.5, 4)
    assert r["config"] == IMPLS[5].config and r["repairs"] == r["verify_sweeps"] == 0
