"""The committed PageRank/CC ground truth (bench/gpu/results/h100_pr_cc.parquet, from
bench/gpu/pr_cc.py with `warpsweep measure`'s kernels) is whole, correct and in the harness's
contract, calibrate reads it, and its sessions merged as the log says; the spatial and WER
catalogs (h200_spatial.parquet, h200_wer.parquet) are whole and labelled. CPU only."""

import importlib
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tuner.calibration.measurements import load_measured
from tuner.measure.plan import plan_for

REPO = Path(__file__).resolve().parents[1]
GPU_DIR = REPO / "bench" / "gpu"
RESULTS = GPU_DIR / "results" / "h100_pr_cc.parquet"


@pytest.fixture(scope="module")
def bench():
    """bench/gpu's configs and merge modules (scripts, not a package)."""
    sys.path.insert(0, str(GPU_DIR))
    try:
        yield importlib.import_module("configs"), importlib.import_module("merge")
    finally:
        sys.path.remove(str(GPU_DIR))
        for name in ("configs", "merge"):
            sys.modules.pop(name, None)


@pytest.fixture(scope="module")
def rows():
    return pq.read_table(RESULTS).to_pylist()


def test_every_measurement_has_a_kernel_plan(bench):
    configs, _ = bench
    measurements = configs.pr_cc_measurements()
    assert len(set(measurements)) == len(measurements) == 42
    for m in measurements:
        plan = plan_for(m.algorithm, m.config, m.variant)
        assert plan.variant == m.variant


def test_the_file_has_the_contract_and_the_counters(bench):
    configs, _ = bench
    schema = pq.read_schema(RESULTS)
    assert schema.names == [*configs.COLUMNS, *configs.PR_CC_EXTRA]
    for name in configs.PR_CC_EXTRA:
        assert schema.field(name).type == pa.int64()


def test_every_measurement_ran_on_every_graph_and_was_correct(bench, rows):
    configs, _ = bench
    keys = {(r["graph_spec"], r["algorithm"], r["config"], r["variant"]) for r in rows}
    assert len(keys) == len(rows)
    specs = [repo for _, repo in configs.graph_specs(configs.REPO_GRAPHS_DIR)]
    assert keys == {(s, m.algorithm, m.config, m.variant)
                    for s in specs for m in configs.pr_cc_measurements()}
    for r in rows:
        assert r["correct"] is True and r["device"] == "h100" and r["source"] == -1, r
        assert 0 < r["time_us_min"] <= r["time_us"], r
        assert r["kernel_us"] is None or 0 < r["kernel_us"] <= r["time_us"], r
        assert r["launches"] >= r["iterations"] >= 1 and r["reps"] == 10, r
        assert r["atomics"] >= 0 and r["pushes"] >= 0 and r["worklist_items"] >= 0, r
        if "driven=" not in r["config"]:  # sweeps only
            assert r["worklist_items"] == r["pushes"] == 0, r
        elif "driven=data" in r["config"]:
            assert r["worklist_items"] > 0, r


def test_data_driven_worklists_are_the_pushes_and_the_first_list(rows):
    for r in rows:
        if "driven=data" in r["config"]:
            assert r["worklist_items"] == r["pushes"] + r["n"], r  # every vertex, then pushes


def test_calibrate_reads_one_row_per_configuration(rows):
    measured = load_measured(RESULTS, device="h100")
    graphs = {r["graph"] for r in rows}
    # CC: 11 sweeps, 3 atomic worklists (fastest variant), 3 block pushes, 2 hybrids
    assert len(measured) == len(graphs) * (19 + 17)
    assert {m.algorithm for m in measured} == {"pagerank", "cc"}


def test_two_sessions_merge_to_the_fastest(bench, rows):
    _, merge = bench
    table = pa.Table.from_pylist(rows[:3], schema=pq.read_schema(RESULTS))
    slow = table.to_pylist()
    for r in slow:
        r.update(time_us=2 * r["time_us"], time_us_min=2 * r["time_us_min"],
                 kernel_us=None if r["kernel_us"] is None else 2 * r["kernel_us"],
                 atomics=r["atomics"] + 2)
    other = pa.Table.from_pylist(slow, schema=table.schema)
    fastest = merge.merge_sessions([other, table], "min").to_pylist()
    median = merge.merge_sessions([other, table]).to_pylist()
    for r, f, m in zip(rows[:3], fastest, median, strict=True):
        assert f["time_us"] == r["time_us"] and f["kernel_us"] == r["kernel_us"]
        assert m["time_us"] == pytest.approx(1.5 * r["time_us"]) and f["reps"] == 20
        assert f["atomics"] == r["atomics"]  # the lower median of the counters


@pytest.mark.parametrize("name, catalog, count", [
    ("h200_spatial.parquet", "spatial_measurements", 561),
    ("h200_wer.parquet", "wer_measurements", 510),
    ("h200_sssp_hybrids.parquet", "sssp_hybrid_measurements", 595),
    ("h200_block_push.parquet", "block_push_measurements", 816),
])
def test_the_spatial_and_wer_catalogs_are_whole_and_labelled_by_their_gpu(bench, name, catalog,
                                                                           count):
    """bench/gpu/pr_cc.py --catalog spatial|wer: every measurement on all 17 graphs, each
    correct, with a kernel plan, and the device column the GPU the rows ran on."""
    configs, _ = bench
    measured = pq.read_table(GPU_DIR / "results" / name).to_pylist()
    wanted = {(m.algorithm, m.config, m.variant) for m in getattr(configs, catalog)()}
    assert len(measured) == count == 17 * len(wanted)
    assert {(r["algorithm"], r["config"], r["variant"]) for r in measured} == wanted
    assert all(r["correct"] and r["time_us"] > 0 for r in measured)
    for r in measured[:: len(wanted)]:
        assert configs.device_label(r["gpu_name"], r["device"]) == r["device"]
    for algorithm, config, variant in wanted:
        plan_for(algorithm, config, variant)


def test_the_pagerank_chunk_probe_is_whole_and_shows_the_chunk_step(bench):
    """bench/gpu/pr_cc.py --catalog pr_chunks on its five graphs: every measurement, correct,
    with a kernel plan; and the finding docs/fidelity.md reads from it: W = 8 sweeps of the
    skewed graphs take over twice as long with chunks as without, the road graphs' not."""
    configs, _ = bench
    measured = pq.read_table(GPU_DIR / "results" / "h200_pr_chunks.parquet").to_pylist()
    wanted = {m.config for m in configs.pr_chunk_measurements()}
    assert len(measured) == 5 * len(wanted)
    assert {r["config"] for r in measured} == wanted
    assert all(r["correct"] and r["algorithm"] == "pagerank" for r in measured)
    for config in wanted:
        plan_for("pagerank", config, configs.TOPOLOGY_VARIANT)
    time = {(r["graph"], r["config"]): r["time_us"] for r in measured}
    for graph in ("rmat18-ef16", "web-NotreDame"):
        assert time[graph, "mapping=vwarp,w=8,chunk=2"] > 2 * time[graph, "mapping=vwarp,w=8"]
    for graph in ("USA-road-NY", "road-512x512"):
        assert time[graph, "mapping=vwarp,w=8,chunk=2"] < time[graph, "mapping=vwarp,w=8"]


def test_the_device_column_names_the_gpu_measured_on(bench):
    configs, _ = bench
    assert configs.device_label("NVIDIA H100 80GB HBM3") == "h100"
    assert configs.device_label("NVIDIA H200") == "h200"
    assert configs.device_label("NVIDIA H100 80GB HBM3", "h100-sxm") == "h100-sxm"
    with pytest.raises(SystemExit, match="this GPU is 'NVIDIA H200'"):
        configs.device_label("NVIDIA H200", "h100")
    with pytest.raises(SystemExit, match="no GPU model"):
        configs.device_label("Some Accelerator")


def test_the_cc_chunk_probe_is_whole_and_shows_the_measured_optimum(bench):
    """bench/gpu/pr_cc.py --catalog cc_chunks on its eight graphs: every measurement, correct,
    with a kernel plan; and the finding docs/fidelity.md reads from it: at W = 32 the GPU's
    best chunk is at most 4 on 7 of the 8 graphs, and chunks of 8 lose to it there."""
    configs, _ = bench
    measured = pq.read_table(GPU_DIR / "results" / "h200_cc_chunks.parquet").to_pylist()
    wanted = {m.config for m in configs.cc_chunk_measurements()}
    graphs = {r["graph"] for r in measured}
    assert len(graphs) == 8 and len(measured) == 8 * len(wanted)
    assert {r["config"] for r in measured} == wanted
    assert all(r["correct"] and r["algorithm"] == "cc" for r in measured)
    for config in wanted:
        plan_for("cc", config, configs.TOPOLOGY_VARIANT)
    time = {(r["graph"], r["config"]): r["time_us"] for r in measured}
    w32 = {c: "mapping=vwarp,w=32" + (f",chunk={c}" if c > 1 else "") for c in (1, 2, 4, 8)}
    small_best = [g for g in graphs
                  if min(time[g, w32[c]] for c in (1, 2, 4)) < time[g, w32[8]]]
    assert len(small_best) == 7


def test_the_cc_chunk_launch_file_is_whole(bench):
    """bench/gpu/measure_launch_times.py --catalog cc_chunks on four graphs: every
    configuration's launches with a kernel time, and each sweep's active vertices; on
    road-512 the one-vertex sweeps start from more vertices in all than the chunk walks (the
    GPU's side of docs/fidelity.md's frontier comparison)."""
    configs, _ = bench
    rows = pq.read_table(GPU_DIR / "results" / "h200_cc_chunk_launches.parquet").to_pylist()
    wanted = {m.config for m in configs.cc_chunk_measurements()}
    graphs = {r["graph"] for r in rows}
    assert len(graphs) == 4
    assert {(r["graph"], r["config"]) for r in rows} == {(g, c) for g in graphs for c in wanted}
    assert all(r["kernel_us"] > 0 and r["kernel"].startswith("cc_") for r in rows)
    sweeps = [r for r in rows if r["kernel"].startswith("cc_sweep") and r["active"] is not None]
    assert all(r["active"] >= 0 for r in sweeps)

    def active(config):
        return sum(r["active"] for r in sweeps
                   if r["graph"] == "road-512x512" and r["config"] == config)

    assert active("mapping=vwarp,w=32") > 1.4 * active("mapping=vwarp,w=32,chunk=8")


def test_frontier_fidelity_sets_the_model_s_active_vertices_against_the_gpu_s(capsys):
    """bench/frontier_fidelity.py on the generated random graph: the thread mapping's sweeps
    start from the GPU's active vertices exactly, in the same number of sweeps."""
    sys.path.insert(0, str(REPO / "bench"))
    import frontier_fidelity

    assert frontier_fidelity.main(["--graphs", "random-n131072-deg32",
                                   "--configs", "mapping=thread"]) == 0
    out = capsys.readouterr().out
    assert ("mapping=thread: sweeps GPU 6, model 6; active summed GPU 613642, model 613642 "
            "(1.00x)") in out
