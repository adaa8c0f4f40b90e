"""The GPU harness's CPU side: its configurations are simulator strategies the kernels
implement, it writes the columns bench/fidelity.py and calibrate read, and the committed H100
files hold every measurement. (How well the simulator matches them is bench/*fidelity.py's
to judge, over every graph, not a test's.)"""

import importlib
import re
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from simulator import Strategy
from simulator.graph_spec import parse_spec
from tuner.calibration.measurements import load_measured
from tuner.measure.plan import KERNELS

REPO = Path(__file__).resolve().parents[1]
GPU_DIR = REPO / "bench" / "gpu"
RESULTS = GPU_DIR / "results" / "h100.parquet"
SHARED_GRAPHS = REPO.parent / "shared" / "graphs"
INT_COLUMNS = ("n", "m", "source", "iterations", "launches", "reps")
FLOAT_COLUMNS = ("time_us", "time_us_min", "kernel_us")


@pytest.fixture(scope="module")
def gpu():
    """bench/gpu's configs and plans modules (scripts beside the harness, not a package)."""
    sys.path.insert(0, str(GPU_DIR))
    try:
        configs = importlib.import_module("configs")
        plans = importlib.import_module("plans")
        yield configs, plans
    finally:
        sys.path.remove(str(GPU_DIR))
        for name in ("configs", "plans"):
            sys.modules.pop(name, None)


@pytest.fixture(scope="module")
def table():
    return pq.read_table(RESULTS)


def test_every_config_is_a_simulator_strategy_with_a_kernel(gpu):
    configs, plans = gpu
    source = KERNELS.read_text()  # moved to tuner/measure (warpsweep measure)
    kernels = set(re.findall(r"__global__ void (\w+)\(", source))
    measurements = configs.measurements()
    assert len(set(measurements)) == len(measurements) == 29
    for m in measurements:
        strategy = Strategy.parse(m.config)
        assert strategy.block_size == 256
        plan = plans.plan_for(m)
        assert plan.name.split("<")[0] in kernels, plan.name
        assert plan.w == strategy.lanes_per_vertex and plan.chunk == strategy.vertices_per_grab


def test_kernel_plans_follow_the_strategy(gpu):
    configs, plans = gpu
    dynamic = plans.plan_for(configs.Measurement(
        "bfs", "mapping=vwarp,w=8,chunk=16,distribution=dynamic", "default"))
    assert dynamic.name == "bfs_topo<8,16,true,false>"
    assert dynamic.shared_bytes == 4 * (256 // 8) * (2 * 16 + 1)  # statuses and bounds
    deferred = plans.plan_for(configs.Measurement(
        "bfs", "mapping=thread,defer_threshold=32", "default"))
    assert deferred.name == "bfs_topo<1,1,false,true>" and deferred.shared_bytes == 0
    data = plans.plan_for(configs.Measurement(
        "sssp", "mapping=vwarp,w=32,driven=data,push=atomic", "warp_aggregated"))
    assert data.name == "sssp_data<32,1>"


@pytest.mark.parametrize("config, variant", [
    ("mapping=wer", "default"),                                       # no WER kernel
    ("mapping=thread,driven=data,push=prefix", "plain"),              # only atomic pushes
    ("mapping=vwarp,w=8", "plain"),                                   # variants are for pushes
    ("mapping=thread,driven=data,push=atomic", "default"),
])
def test_plans_refuse_what_the_kernels_do_not_implement(gpu, config, variant):
    configs, plans = gpu
    with pytest.raises(ValueError):
        plans.plan_for(configs.Measurement("bfs", config, variant))


def test_only_bfs_has_the_claimed_variant(gpu):
    configs, plans = gpu
    config = "mapping=thread,driven=data,push=atomic"
    assert plans.plan_for(configs.Measurement("bfs", config, "claimed")).name == "bfs_data<1,2>"
    with pytest.raises(ValueError):
        plans.plan_for(configs.Measurement("sssp", config, "claimed"))


def test_harness_rows_are_written_in_the_contract_and_read_back_by_calibrate(gpu, tmp_path):
    """The harness's writer gives the contract's columns, in order, with their types and the
    rows' values; calibrate's reader takes back per configuration its fastest correct
    variant (here not the faster incorrect one)."""
    configs, _ = gpu
    data = "mapping=thread,driven=data,push=atomic"
    meta = {"device": "h100", "gpu_name": "test h100", "graph": "rmat8",
            "graph_spec": "rmat:scale=8,seed=1", "n": np.int64(256), "m": np.int64(2000),
            "algorithm": "bfs", "source": np.int64(3), "iterations": 5, "launches": 6,
            "reps": 5, "cupy_version": "-", "cuda_version": "-", "commit": "0" * 40,
            "measured_at": "2026-01-01T00:00:00+00:00", "not_a_column": 1}

    def row(config, variant, time_us, correct=True):
        return {**meta, "config": config, "variant": variant, "time_us": time_us,
                "time_us_min": 0.9 * time_us, "kernel_us": 0.5 * time_us, "correct": correct}

    rows = [row("mapping=thread", "default", 50.0), row(data, "plain", 40.0),
            row(data, "warp_aggregated", 30.0), row(data, "claimed", 10.0, correct=False)]
    path = tmp_path / "results.parquet"
    configs.write_results(rows, path)
    written = pq.read_table(path)
    assert tuple(written.column_names) == configs.COLUMNS
    for name in INT_COLUMNS:
        assert written.schema.field(name).type == pa.int64(), name
    for name in FLOAT_COLUMNS:
        assert written.schema.field(name).type == pa.float64(), name
    assert written.schema.field("correct").type == pa.bool_()
    for name in ("device", "gpu_name", "graph", "graph_spec", "algorithm", "config", "variant",
                 "cupy_version", "cuda_version", "commit", "measured_at"):
        assert written.schema.field(name).type == pa.string(), name
    assert written.to_pylist() == [{c: r[c] for c in configs.COLUMNS} for r in rows]
    measured = load_measured(path, device="h100")
    assert [(m.config, m.variant, m.time_us, m.kernel_us, m.launches, m.source)
            for m in measured] == [("mapping=thread", "default", 50.0, 25.0, 6, 3),
                                   (data, "warp_aggregated", 30.0, 15.0, 6, 3)]


def test_the_committed_results_have_the_writers_schema(gpu, table):
    """A change to the contract must come with the file measured again."""
    configs, _ = gpu
    assert table.schema.equals(configs.SCHEMA)


def test_every_row_is_correct_with_positive_times(table):
    rows = table.to_pylist()
    assert rows
    for r in rows:
        assert r["correct"] is True, r
        assert r["time_us"] > 0 and r["time_us_min"] > 0 and r["kernel_us"] > 0, r
        assert r["time_us_min"] <= r["time_us"], r
        assert r["iterations"] >= 1 and r["launches"] >= r["iterations"], r
        assert r["device"] == "h100" and r["reps"] >= 1 and 0 <= r["source"] < r["n"], r


def test_every_measurement_ran_on_every_graph(gpu, table):
    configs, _ = gpu
    rows = table.to_pylist()
    keys = {(r["graph_spec"], r["algorithm"], r["config"], r["variant"]) for r in rows}
    assert len(keys) == len(rows)
    specs = [repo for _, repo in configs.graph_specs(configs.REPO_GRAPHS_DIR)]
    wanted = {(s, m.algorithm, m.config, m.variant)
              for s in specs for m in configs.measurements()}
    assert keys == wanted


def test_generated_graph_specs_parse_and_name_their_graph(table):
    for spec, name in {(r["graph_spec"], r["graph"]) for r in table.to_pylist()}:
        if not spec.startswith("file:"):
            assert parse_spec(spec).short_name() == name


def test_file_graph_specs_name_files_of_shared_graphs(table):
    if not SHARED_GRAPHS.is_dir():
        pytest.skip("../shared/graphs is absent")
    specs = {(r["graph_spec"], r["graph"]) for r in table.to_pylist()}
    files = [(s, name) for s, name in specs if s.startswith("file:")]
    assert len(files) == 11
    for spec, name in files:
        parsed = parse_spec(spec)
        assert parsed.short_name() == name
        assert parsed.options.weights == "random"
        assert (REPO / parsed.params["path"]).resolve().parent == SHARED_GRAPHS.resolve()
        assert (REPO / parsed.params["path"]).is_file(), spec


@pytest.fixture(scope="module")
def merge():
    sys.path.insert(0, str(GPU_DIR))
    try:
        yield importlib.import_module("merge")
    finally:
        sys.path.remove(str(GPU_DIR))
        sys.modules.pop("merge", None)


def _session(table: pa.Table, scale: float, correct: bool = True) -> pa.Table:
    rows = table.slice(0, 3).to_pylist()
    for r in rows:
        r.update(time_us=r["time_us"] * scale, time_us_min=r["time_us_min"] * scale,
                 kernel_us=r["kernel_us"] * scale, correct=correct and r["correct"])
    return pa.Table.from_pylist(rows, schema=table.schema)


def test_sessions_merge_to_their_median(merge, table):
    """Per measurement: the median of the sessions' medians, the fastest run of any, every rep,
    correct only if every session was."""
    sessions = [_session(table, s) for s in (1.0, 1.3, 0.9)] + [_session(table, 1.1, False)]
    merged = merge.merge_sessions(sessions).to_pylist()
    base = table.slice(0, 3).to_pylist()
    assert len(merged) == 3
    for got, r in zip(merged, base, strict=True):
        assert got["time_us"] == pytest.approx(r["time_us"] * 1.05)
        assert got["kernel_us"] == pytest.approx(r["kernel_us"] * 1.05)
        assert got["time_us_min"] == pytest.approx(r["time_us_min"] * 0.9)
        assert got["reps"] == 4 * r["reps"] and got["correct"] is False
    assert merge.merge_sessions(sessions[:3]).column("correct").to_pylist() == [True] * 3


def test_sessions_of_other_commits_or_measurements_do_not_merge(merge, table):
    one = _session(table, 1.0)
    other = one.set_column(one.schema.get_field_index("commit"), "commit",
                           pa.array(["0" * 40] * one.num_rows))
    with pytest.raises(ValueError, match="differ in commit"):
        merge.merge_sessions([one, other])
    with pytest.raises(ValueError, match="measured in 1 of 2 sessions"):
        merge.merge_sessions([one, one.slice(0, 2)])


@pytest.mark.parametrize("algorithm, spread", [("bfs", (0.73, 1.11)), ("sssp", (0.77, 1.04))])
def test_per_launch_times_cover_the_measurements_and_sum_to_the_runs(table, algorithm, spread):
    """results/h100_launches_<algorithm>.parquet (bench/gpu/launch_times.py, another device
    session) holds every graph, configuration and variant of h100.parquet, launches numbered
    0..L-1, worklist launches starting from the source alone, and per run launch times that
    sum to the run's kernel time measured apart within the ``spread`` these committed files
    show (the smallest and largest ratio, to 2 places: files measured again must be looked
    at again)."""
    launches = pq.read_table(GPU_DIR / "results" / f"h100_launches_{algorithm}.parquet")
    runs: dict[tuple, list[dict]] = {}
    for r in launches.to_pylist():
        runs.setdefault((r["graph"], r["config"], r["variant"]), []).append(r)
    expected = {(r["graph"], r["config"], r["variant"]) for r in table.to_pylist()
                if r["algorithm"] == algorithm}
    assert set(runs) == expected
    kernel_us = {(r["graph"], r["config"], r["variant"]): r["kernel_us"]
                 for r in table.to_pylist() if r["algorithm"] == algorithm}
    ratios = []
    for key, rows in runs.items():
        rows.sort(key=lambda r: r["launch"])
        assert [r["launch"] for r in rows] == list(range(len(rows))), key
        assert all(r["kernel_us"] > 0 and r["runs"] >= 1 for r in rows), key
        if "driven=data" in key[1]:
            assert rows[0]["entries"] == 1 and all(r["entries"] > 0 for r in rows), key
        else:
            assert all(r["entries"] == -1 for r in rows), key
        ratios.append(sum(r["kernel_us"] for r in rows) / kernel_us[key])
    assert (round(min(ratios), 2), round(max(ratios), 2)) == spread


def test_l1_probe_covers_every_measurement_in_each_mode(table):
    """results/h100_l1.parquet (bench/l1_effect.py over bench/gpu/launch_times.py --l1)
    holds every graph, configuration and variant of h100.parquet with L1 cached, shrunk and
    bypassed, and the cached runs' kernel times over the harness file's (another session)
    have the median these committed files show, 0.93 (to 2 places)."""
    rows = pq.read_table(GPU_DIR / "results" / "h100_l1.parquet").to_pylist()
    expected = {(r["algorithm"], r["graph"], r["config"], r["variant"])
                for r in table.to_pylist()}
    for mode in ("cached", "small", "bypass"):
        got = {(r["algorithm"], r["graph"], r["config"], r["variant"])
               for r in rows if r["l1"] == mode}
        assert got == expected, mode
    assert all(r["kernel_us"] > 0 and r["launches"] >= 1 for r in rows)
    kernel_us = {(r["algorithm"], r["graph"], r["config"], r["variant"]): r["kernel_us"]
                 for r in table.to_pylist()}
    ratios = sorted(r["kernel_us"] / kernel_us[(r["algorithm"], r["graph"], r["config"],
                                                r["variant"])]
                    for r in rows if r["l1"] == "cached")
    assert round(ratios[len(ratios) // 2], 2) == 0.93


def test_relative_rms_ignores_each_graphs_level():
    """bench/fidelity.py's relative error, counted by hand: graph a's errors 0.1 and 0.3 are
    +-0.1 about their mean, graph b's are all level (0); each graph weighs the same, so the
    RMS is sqrt((0.01 + 0) / 2). Shifting a graph's errors by a constant changes nothing."""
    import numpy as np

    sys.path.insert(0, str(REPO))
    from bench.fidelity import relative_rms

    rows = {("bfs", "a"): np.array([0, 1]), ("bfs", "b"): np.array([2, 3, 4])}
    errors = np.array([0.1, 0.3, 1.0, 1.0, 1.0])
    assert relative_rms(errors, rows) == pytest.approx(np.sqrt(0.005))
    assert relative_rms(errors + np.array([5, 5, -2, -2, -2]), rows) == pytest.approx(
        np.sqrt(0.005))
