"""`warpsweep measure`'s CPU side, for real on machines without a GPU: a configuration's
kernel plan (template instances, grids, shared memory) or its one-line refusal, the answer
checks, the counters set beside the simulator's, and the CLI without a GPU."""

import argparse
import dataclasses
import json
import re
import shutil
import subprocess

import numpy as np
import pytest

from simulator import functional_run
from simulator import simulate
from simulator.errors import ConfigError
from simulator.errors import GraphError
from simulator.load import load_graph
from simulator.mappings import registered
from simulator.strategy import Strategy
from tuner.cli import measure as cli_measure
from tuner.measure import measure as measure_module
from tuner.measure.check import check_output
from tuner.measure.check import pagerank_slack
from tuner.measure.check import reference_iterations
from tuner.measure.check import reference_output
from tuner.measure.plan import KERNELS
from tuner.measure.plan import PLANNED_KNOBS
from tuner.measure.plan import REFUSED_KNOBS
from tuner.measure.plan import UnsupportedConfig
from tuner.measure.plan import plan_for
from tuner.measure.record import Counters
from tuner.measure.record import MeasureResult
from tuner.measure.record import simulated_counters

SUPPORTED = [
    ("bfs", "mapping=thread,defer_threshold=32", None),
    ("sssp", "mapping=vwarp,w=8,chunk=16,distribution=dynamic", None),
    ("cc", "mapping=vwarp,w=32,chunk=4,defer_threshold=64", None),
    ("pagerank", "mapping=vwarp,w=4,distribution=dynamic,defer_threshold=100", None),
    ("bfs", "mapping=vwarp,w=8,driven=data,push=atomic", "claimed"),
    ("sssp", "mapping=thread,driven=data,push=block,dedup=true", None),
    ("cc", "mapping=vwarp,w=16,driven=data,push=atomic", "warp_aggregated"),
    ("pagerank", "mapping=vwarp,w=32,driven=data,push=block", None),
    ("bfs", "mapping=vwarp,w=8,driven=temporal,switch_to_topology=0.1", None),
    ("cc", "mapping=thread,driven=temporal,push=block,switch_to_topology=0.2,"
           "switch_to_data=0.01", None),
    ("sssp", "driven=spatial", None),
    ("bfs", "mapping=wer", None),
    ("cc", "mapping=wer+,chunk=4", None),
    ("bfs", "mapping=vwarp,w=8,driven=spatial,partition=64", "warp_aggregated"),
    ("sssp", "mapping=thread,donate_threshold=4,defer_threshold=64", None),
    ("cc", "mapping=thread,driven=data,push=block,donate_threshold=0", None),
    ("bfs", "driven=temporal,donate_threshold=8", None),
    ("pagerank", "mapping=thread,donate_threshold=2,defer_threshold=64", None),
]


def kernel_templates() -> set[str]:
    """The __global__ functions kernels.cu defines."""
    return set(re.findall(r"__global__ void (\w+)\(", KERNELS.read_text()))


@pytest.mark.parametrize("algorithm, config, variant", SUPPORTED)
def test_every_supported_plan_names_kernels_that_exist(algorithm, config, variant):
    plan = plan_for(algorithm, config, variant)
    assert plan.names()
    for name in plan.names():
        assert name.split("<")[0] in kernel_templates(), name


# Families beyond SUPPORTED whose kernels must compile: donation in every form it runs in
COMPILED = SUPPORTED + [
    ("pagerank", "mapping=thread,donate_threshold=0", None),
    ("bfs", "mapping=thread,driven=data,push=atomic,donate_threshold=2", "warp_aggregated"),
    ("bfs", "mapping=thread,driven=data,donate_threshold=0", "claimed"),
    ("sssp", "mapping=thread,driven=temporal,push=block,dedup=true,donate_threshold=1", None),
    ("cc", "mapping=thread,driven=data,dedup=true,donate_threshold=0", None),
]


def _nvcc_targets_sm90() -> bool:
    """Whether an nvcc here compiles for the H100's sm_90 (an older one cannot)."""
    if shutil.which("nvcc") is None:
        return False
    listed = subprocess.run(["nvcc", "--list-gpu-arch"], capture_output=True, text=True,
                            timeout=60, check=False)
    return listed.returncode == 0 and "compute_90" in listed.stdout


@pytest.mark.skipif(not _nvcc_targets_sm90(), reason="no nvcc for sm_90 here")
def test_every_plans_kernels_compile(tmp_path):
    """kernels.cu's template instances that plans name compile with nvcc (to PTX, for the
    H100's sm_90): CI has no GPU, and a kernel that does not compile had been found only on
    a GPU machine."""
    names = sorted({n for a, c, v in COMPILED for n in plan_for(a, c, v).names()})
    source = tmp_path / "instances.cu"
    source.write_text(f'#include "{KERNELS}"\nvoid* instances[] = {{\n'
                      + ",\n".join(f"    (void*)&{name}" for name in names) + "\n};\n")
    done = subprocess.run(["nvcc", "-std=c++17", "-arch=sm_90", "-ptx", "-o",
                           str(tmp_path / "instances.ptx"), str(source)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    ptx = (tmp_path / "instances.ptx").read_text()
    for name in names:  # each instance emitted (a template's mangled name holds its name)
        assert re.search(rf"\.entry _Z\d+{re.escape(name.split('<')[0])}\w*\(", ptx), name


def test_plans_follow_the_strategy():
    sweep = plan_for("sssp", "mapping=vwarp,w=8,chunk=16,distribution=dynamic")
    assert sweep.names() == ("sssp_sweep<8,16,true,false,false,false>",)
    assert sweep.shared_bytes == 4 * (256 // 8) * (2 * 16 + 1)
    assert sweep.sweep_grid(1000) == 2  # 63 chunks x 8 lanes over blocks of 256
    deferred = plan_for("pagerank", "mapping=thread,defer_threshold=32")
    assert deferred.names() == ("pagerank_sweep<1,1,false,true,false>", "pagerank_outliers")
    assert deferred.shared_bytes == 0
    data = plan_for("bfs", "mapping=vwarp,w=32,driven=data,push=atomic", "warp_aggregated")
    assert data.names() == ("bfs_wl<32,1,false,false>",) and data.worklist_grid(100) == 13
    block = plan_for("sssp", "mapping=thread,driven=data,push=block,dedup=true")
    assert block.variant == "block" and block.names() == ("sssp_wl<1,3,true,false>",)
    hybrid = plan_for("sssp", "mapping=vwarp,w=4,driven=temporal,switch_to_topology=0.3")
    assert hybrid.names() == ("sssp_sweep<4,1,false,false,true,false>",
                              "sssp_wl<4,0,false,false>", "scatter_flags", "compact_flags")
    donating = plan_for("cc", "driven=temporal,donate_threshold=2")
    assert donating.names() == ("cc_sweep<1,1,false,false,true,true>", "cc_wl<1,0,false,true>",
                                "scatter_flags", "compact_flags")
    assert donating.donate_threshold == 2 and donating.shared_bytes == 0  # (static: the box)
    assert hybrid.switch_to_data == 0.3  # the strategy's default: the same threshold
    assert plan_for("bfs", "driven=temporal").names()[-1] == "compact_levels"
    assert plan_for("pagerank", "driven=data").names() == ("pagerank_wl<1,0>",)
    assert plan_for("cc", "mapping=vwarp,w=2,block_size=128").block_size == 128
    spatial = plan_for("cc", "mapping=vwarp,w=4,driven=spatial,partition=32",
                       "warp_aggregated")
    assert spatial.names() == ("cc_spatial<4,1>",) and spatial.partition == 32
    assert spatial.spatial_grid(3) == 2  # 3 partitions x 32 slots x 4 lanes over 256
    wer = plan_for("sssp", "mapping=wer+,chunk=4")
    assert wer.names() == ("sssp_wer<4,true>",) and wer.redistribute == "wer+"
    assert wer.sweep_grid(1000) == 1  # 250 threads of 4 vertices each
    assert wer.shared_bytes == 4 * 8 * 97  # a table a warp
    assert plan_for("bfs", "mapping=wer").names() == ("bfs_wer<1,false>",)


@pytest.mark.parametrize("algorithm, config, variant, words", [
    ("pagerank", "mapping=wer", None, "PageRank has no GPU kernel"),
    ("bfs", "mapping=wer+,driven=data", None, "driven=data has no GPU kernel"),
    ("sssp", "mapping=wer,chunk=4,distribution=dynamic", None, "dynamic distribution"),
    ("sssp", "mapping=adaptive", None, "mapping=adaptive"),
    ("pagerank", "driven=data,donate_threshold=4", None,
     "a PageRank worklist has no GPU kernel"),
    ("sssp", "driven=spatial,donate_threshold=4", None, "driven=spatial has no GPU kernel"),
    ("cc", "driven=spatial,push=block", None, "push=block for driven=spatial"),
    ("sssp", "mapping=vwarp,w=8,chunk=4,driven=spatial", None, "chunk=1"),
    ("bfs", "unroll=2", None, "unroll"),
    ("sssp", "mapping=vwarp,w=8,changed_flag=warp", None, "changed_flag=warp"),
    ("cc", "driven=data,precheck=false", None, "precheck=false"),
    ("sssp", "driven=data,push=prefix", None, "push=prefix"),
    ("sssp", "driven=data,push=chunked", None, "push=chunked"),
    ("bfs", "driven=data,variable_grid=false", None, "variable_grid=false"),
    ("bfs", "mapping=vwarp,w=8,chunk=4,driven=data", None, "chunk=1"),
    ("bfs", "mapping=vwarp,w=8,driven=data,distribution=dynamic", None, "static"),
    ("sssp", "driven=data,defer_threshold=8", None, "deferring outliers"),
    ("pagerank", "driven=data,dedup=true", None, "dedup"),
    ("bfs", "driven=temporal", "claimed", "temporal"),
    ("bfs", "mapping=vwarp,w=8,driven=spatial", "claimed", "spatial"),
    ("sssp", "mapping=vwarp,w=32,driven=data,relax=store", None, "relax=store"),
    ("cc", "driven=temporal,switch_on=edges", None, "switch_on=edges"),
])
def test_what_has_no_kernel_is_refused_in_one_line(algorithm, config, variant, words):
    with pytest.raises(UnsupportedConfig) as info:
        plan_for(algorithm, config, variant)
    message = str(info.value)
    assert words in message and "\n" not in message


# A knob's setting the kernels do not implement, in a strategy it applies to: each of
# plan.REFUSED_KNOBS (a knob added to the strategy must be planned or refused, not ignored)
REFUSED_SETTINGS = {
    "adaptive_min_w": "mapping=adaptive,adaptive_min_w=4",
    "adaptive_max_w": "mapping=adaptive,adaptive_max_w=8",
    "adaptive_stat": "mapping=adaptive,adaptive_stat=p90",
    "policy": "mapping=adaptive,policy=policies/bfs.json",
    "policy_t1": "mapping=adaptive,policy=policies/bfs.json,policy_t1=2",
    "policy_t2": "mapping=adaptive,policy=policies/bfs.json,policy_t2=2",
    "policy_t3": "mapping=adaptive,policy=policies/bfs.json,policy_t3=2",
    "variable_grid": "driven=data,variable_grid=false",
    "switch_on": "driven=temporal,switch_on=edges",
    "relax": "driven=data,relax=store",
    "unroll": "unroll=2",
    "changed_flag": "changed_flag=warp",
    "precheck": "driven=data,precheck=false",
}


def test_every_strategy_knob_is_planned_or_refused():
    knobs = {f.name for f in dataclasses.fields(Strategy)}
    assert knobs == set(PLANNED_KNOBS) | set(REFUSED_KNOBS)
    assert not set(PLANNED_KNOBS) & set(REFUSED_KNOBS)
    assert set(REFUSED_SETTINGS) == set(REFUSED_KNOBS)


@pytest.mark.parametrize("knob", sorted(REFUSED_SETTINGS))
def test_a_knob_the_kernels_ignore_is_refused_not_measured_as_another(knob):
    config = REFUSED_SETTINGS[knob]
    algorithm = "bfs" if knob.startswith("policy") else "sssp"
    with pytest.raises(UnsupportedConfig) as info:
        plan_for(algorithm, config)
    # the adaptive mapping's knobs go with it; every other is named
    named = "mapping=adaptive" if "adaptive" in config else knob
    assert named in str(info.value)


# A setting of each of plan.PLANNED_KNOBS against a base without it: the plan differs
PLANNED_SETTINGS = {
    "mapping": ("mapping=wer", "mapping=thread"),
    "w": ("mapping=vwarp,w=8", "mapping=vwarp,w=4"),
    "chunk": ("mapping=vwarp,chunk=4", "mapping=vwarp"),
    "distribution": ("mapping=vwarp,distribution=dynamic", "mapping=vwarp"),
    "defer_threshold": ("defer_threshold=32", "mapping=thread"),
    "block_size": ("block_size=512", "mapping=thread"),
    "driven": ("driven=data", "mapping=thread"),
    "push": ("driven=data,push=block", "driven=data"),
    "dedup": ("driven=data,dedup=true", "driven=data"),
    "switch_to_topology": ("driven=temporal,switch_to_topology=0.3", "driven=temporal"),
    "switch_to_data": ("driven=temporal,switch_to_data=0.01", "driven=temporal"),
    "partition": ("driven=spatial,partition=4", "driven=spatial"),
    "donate_threshold": ("donate_threshold=4", "mapping=thread"),
}


def test_every_planned_knob_has_a_setting_below():
    assert set(PLANNED_SETTINGS) == set(PLANNED_KNOBS)


@pytest.mark.parametrize("knob", sorted(PLANNED_SETTINGS))
def test_a_planned_knob_changes_the_plan(knob):
    config, base = PLANNED_SETTINGS[knob]
    assert plan_for("sssp", config) != plan_for("sssp", base)


def test_a_mapping_kernels_cu_does_not_implement_is_refused():
    """A newly registered mapping is refused, not measured as the vwarp kernel of its W."""
    from tests.test_mapping_contract import LockstepPairs

    with registered(LockstepPairs()):
        with pytest.raises(UnsupportedConfig, match="mapping=toy-pairs has no GPU kernel"):
            plan_for("bfs", "mapping=toy-pairs")


@pytest.mark.parametrize("algorithm, config, variant", [
    ("sssp", "driven=data", "claimed"),          # only BFS claims
    ("bfs", "mapping=vwarp,w=8", "plain"),       # variants are for worklist pushes
    ("bfs", "driven=data,push=block", "plain"),  # a block push has one way
    ("pagerank", "driven=temporal", None),       # the simulator refuses it too
    ("sssp", "mapping=thread,w=8", None),        # not a strategy
])
def test_what_does_not_apply_is_a_config_error(algorithm, config, variant):
    with pytest.raises(ConfigError):
        plan_for(algorithm, config, variant)


def test_checks_catch_wrong_answers():
    levels = np.array([0, 1, 2, -1])
    assert check_output("bfs", levels.astype(np.int32), levels) is None
    assert "1 vertices differ" in check_output("bfs", np.array([0, 1, 3, -1]), levels)
    dist = np.array([0.0, 1.5, np.inf])
    assert check_output("sssp", dist.astype(np.float32), dist) is None
    assert "reachability" in check_output("sssp", np.array([0.0, 1.5, 2.0]), dist)
    assert "beyond float32" in check_output("sssp", np.array([0.0, 1.6, np.inf]), dist)
    assert check_output("cc", np.array([0, 0, 2]), np.array([0, 0, 2])) is None
    assert check_output("cc", np.array([0, 1, 2]), np.array([0, 0, 2])) is not None
    ranks = np.array([0.25, 0.5, 0.25])
    assert check_output("pagerank", ranks + 1e-7, ranks) is None
    assert "differ" in check_output("pagerank", ranks + [0, 1e-4, 0], ranks)
    assert check_output("pagerank", ranks + [0, 1e-4, 0], ranks,
                        slack=np.array([0, 2e-4, 0])) is None
    assert "not finite" in check_output("pagerank", ranks * np.nan, ranks)
    assert "values for" in check_output("cc", np.zeros(2), np.zeros(3))


def test_references_follow_the_driven_form():
    graph = load_graph("rmat:scale=8,ef=4,seed=2")
    fr = functional_run(graph, "pagerank")
    assert reference_output(fr, "data") is fr.worklist_run.output
    assert reference_output(fr, "topology") is fr.output
    assert reference_iterations(fr, "data") == len(fr.worklist_run.iterations)
    slack = pagerank_slack(fr, graph.degrees)
    # one in-neighbour u adds 2 x tolerance x damping / out-degree(u)
    v = int(np.argmax(np.diff(fr.indptr)))
    us = fr.indices[fr.indptr[v]:fr.indptr[v + 1]]
    assert slack[v] == pytest.approx(2e-6 * 0.85 * (1.0 / graph.degrees[us]).sum())


def test_simulated_counters_sit_beside_the_measured():
    graph = load_graph("rmat:scale=8,ef=4,weights=random,seed=2")
    data = simulate(graph, "sssp", "mapping=vwarp,w=8,driven=data")
    c = simulated_counters(data, "data", graph.n)
    assert c.launches == data.launches and c.iterations == data.iterations
    assert c.pushes == c.worklist_items - 1 and c.atomics == round(data.atomics)
    sweep = simulate(graph, "cc", "mapping=thread")
    assert simulated_counters(sweep, "topology", graph.n).pushes == 0
    hybrid = simulate(graph, "cc", "driven=temporal")
    assert simulated_counters(hybrid, "temporal", graph.n).pushes is None
    result = MeasureResult(
        graph="g", graph_spec="rmat:scale=8", n=graph.n, m=graph.m, algorithm="sssp",
        config="mapping=vwarp,w=8,driven=data", variant="plain", source=0, gpu_name="GPU",
        time_us=100.0, time_us_min=90.0, kernel_us=40.0, reps=3, correct=True, check="ok",
        measured=Counters(4, 4, 10, 9, 30), simulated=c, simulated_time_us=150.0,
        sim_device="h100", reference_iterations=4, seconds={"runs": 0.5})
    row = result.to_dict()
    assert row["measured_atomics"] == 30 and row["simulated_launches"] == data.launches
    assert row["runs_s"] == 0.5 and json.loads(json.dumps(row)) == row
    text = result.to_text()
    assert "1.50x" in text and "worklist_items" in text and "correct" in text
    assert "simulated as the plain push" not in text
    # a claimed push's prediction is the plain push's, and says so (probe CNT)
    claimed = dataclasses.replace(result, variant="claimed").to_text()
    assert "(simulated as the plain push: a claimed push's atomicCAS" in claimed


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli_measure.register(parser.add_subparsers())
    return parser.parse_args(["measure", *argv])


def test_without_a_gpu_measure_says_so_in_one_line(monkeypatch, capsys):
    monkeypatch.setattr(measure_module, "gpu_unavailable",
                        lambda index=0: "CuPy is not installed (pip install -e \".[gpu]\")")
    args = parse(["--graph", "rmat:scale=8", "--algo", "bfs", "--config", "mapping=thread"])
    assert args.run(args) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("warpsweep measure: cannot measure on a GPU here") and "\n" not in err


def test_an_unsupported_config_is_refused_before_the_gpu(monkeypatch):
    def no_gpu_check(index=0):
        raise AssertionError("the GPU was asked about")

    monkeypatch.setattr(measure_module, "gpu_unavailable", no_gpu_check)
    args = parse(["--graph", "rmat:scale=8", "--algo", "pagerank", "--config", "mapping=wer"])
    with pytest.raises(UnsupportedConfig):
        args.run(args)


def test_repeated_configs_combine_and_a_knob_set_twice_is_refused(monkeypatch):
    monkeypatch.setattr(measure_module, "gpu_unavailable", lambda index=0: "no GPU here")
    args = parse(["--graph", "rmat:scale=8", "--algo", "bfs", "--config", "mapping=vwarp",
                  "--config", "w=8"])
    assert args.config == ["mapping=vwarp", "w=8"] and args.run(args) == 1
    args = parse(["--graph", "rmat:scale=8", "--algo", "bfs", "--config", "mapping=vwarp,w=8",
                  "--config", "w=4"])
    with pytest.raises(ConfigError, match="knob 'w' is set twice"):
        args.run(args)


def test_a_bad_graph_spec_is_refused_before_the_gpu(monkeypatch):
    def no_gpu_check(index=0):
        raise AssertionError("the GPU was asked about")

    monkeypatch.setattr(measure_module, "gpu_unavailable", no_gpu_check)
    args = parse(["--graph", "rmat:scale=0", "--algo", "bfs", "--config", "mapping=thread"])
    with pytest.raises(GraphError, match="scale=0 out of range"):
        args.run(args)


@pytest.mark.parametrize("argv, error, words", [
    (["--graph", "rmat:scale=8", "--algo", "bfs", "--source", "100000"], ConfigError,
     "out of range"),
    (["--graph", "rmat:scale=8", "--algo", "sssp"], ConfigError, "SSSP needs edge weights"),
    (["--graph", "rmat:scale=8", "--algo", "cc", "--source", "3"], ConfigError,
     "takes no source"),
    (["--graph", "rmat:scale=8", "--algo", "bfs", "--sim-device", "nosuch"], ConfigError,
     "nosuch"),
    (["--graph", "file:/nonexistent/g.gr", "--algo", "bfs"], GraphError, "not found"),
])
def test_what_the_graph_or_source_cannot_run_is_named_before_the_gpu(monkeypatch, argv, error,
                                                                     words):
    """These had all answered only 'CuPy is not installed' on a machine without a GPU."""
    def no_gpu_check(index=0):
        raise AssertionError("the GPU was asked about")

    monkeypatch.setattr(measure_module, "gpu_unavailable", no_gpu_check)
    args = parse(argv)
    with pytest.raises(error, match=words):
        args.run(args)


def test_a_negative_device_index_is_refused(monkeypatch, capsys):
    monkeypatch.setattr(measure_module, "gpu_unavailable", lambda index=0: "no GPU here")
    args = parse(["--graph", "rmat:scale=8", "--algo", "bfs", "--device-index", "-1"])
    assert args.run(args) == 2 and "--device-index" in capsys.readouterr().err


def test_the_api_refuses_the_config_then_the_missing_gpu(monkeypatch):
    graph = load_graph("rmat:scale=8,ef=4,seed=2")
    with pytest.raises(UnsupportedConfig):
        measure_module.measure_config(graph, "rmat:scale=8", "pagerank",
                                      "driven=data,donate_threshold=4")
    monkeypatch.setattr(measure_module, "gpu_unavailable", lambda index=0: "no CUDA device")
    with pytest.raises(measure_module.NoGpu, match="no CUDA device"):
        measure_module.measure_config(graph, "rmat:scale=8", "bfs", "mapping=vwarp,w=8")


def test_a_prediction_the_sim_device_cannot_make_is_refused_before_the_gpu(monkeypatch,
                                                                          tmp_path):
    """W = 32 on a prediction device of 16-lane warps had been found out on a GPU machine
    only (here the no-GPU line came first)."""
    def no_gpu_check(index=0):
        raise AssertionError("the GPU was asked about")

    monkeypatch.setattr(measure_module, "gpu_unavailable", no_gpu_check)
    device = tmp_path / "w16.toml"
    device.write_text('name = "w16"\nbase = "h100"\nwarp_size = 16\nsimd_width = 16\n')
    args = parse(["--graph", "rmat:scale=8", "--algo", "bfs", "--config", "mapping=vwarp,w=32",
                  "--sim-device", str(device)])
    with pytest.raises(ConfigError, match="w=32 exceeds the device w16's warp_size=16"):
        args.run(args)


def test_gpu_faults_are_one_line_and_a_broken_gpu_measures_nothing_more(monkeypatch):
    """CuPy's out-of-memory and CUDA errors become one line naming the configuration (they
    had ended in a traceback); after a fault that leaves the GPU unusable, later rows are
    refused naming that first fault rather than each blamed on its own configuration (probe
    CR7); a refusal of warpsweep's own (a queue overflow) passes unchanged. CuPy stands in."""
    import sys
    import types

    from simulator.errors import WarpsweepError
    from tuner.measure.measure import GpuFault
    from tuner.measure.measure import Session

    class DriverError(Exception):
        pass

    class RuntimeFault(Exception):
        pass

    class OutOfMemory(MemoryError):
        pass

    for name in ("cupy_backends", "cupy_backends.cuda", "cupy_backends.cuda.api"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    driver = types.ModuleType("cupy_backends.cuda.api.driver")
    driver.CUDADriverError = DriverError
    monkeypatch.setitem(sys.modules, "cupy_backends.cuda.api.driver", driver)
    sticky = []

    def synchronize():
        if sticky:
            raise DriverError("CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access")

    cp = types.SimpleNamespace(
        cuda=types.SimpleNamespace(
            memory=types.SimpleNamespace(OutOfMemoryError=OutOfMemory),
            runtime=types.SimpleNamespace(CUDARuntimeError=RuntimeFault),
            Device=lambda: types.SimpleNamespace(synchronize=synchronize)),
        get_default_memory_pool=lambda: types.SimpleNamespace(free_all_blocks=lambda: None))
    session = object.__new__(Session)
    session.cp, session.gpu_name, session.device_graphs, session.broken = cp, "GPU", {1: 2}, None
    prepared = types.SimpleNamespace(name="g", graph=types.SimpleNamespace(n=3, m=4))

    def fails(config, exc):
        with session._faults(prepared, config):
            raise exc

    with pytest.raises(GpuFault, match=r"^the GPU \(GPU\) ran out of its memory measuring a "
                                       r"on g \(3 vertices, 4 edges\): Out of memory"):
        fails("a", OutOfMemory("Out of memory allocating 512 bytes\nmore"))
    assert session.device_graphs == {}
    with pytest.raises(GpuFault, match=r"CUDA failed measuring b on g .*invalid argument; not"):
        fails("b", DriverError("CUDA_ERROR_INVALID_VALUE: invalid argument"))
    assert session.broken is None  # a refused launch leaves the GPU usable
    with pytest.raises(WarpsweepError, match="pushed") as caught:
        fails("c", WarpsweepError("a worklist launch pushed 9 items"))
    assert not isinstance(caught.value, GpuFault)
    sticky.append(True)
    with pytest.raises(GpuFault, match="CUDA failed measuring d"):
        fails("d", DriverError("CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access"))
    with pytest.raises(GpuFault, match=r"not measured: the GPU can run nothing more since "
                                       r"CUDA failed measuring d on g"):
        with session._faults(prepared, "e"):
            pass


def _blank_result(prepared) -> MeasureResult:
    return MeasureResult(graph="g", graph_spec="", n=prepared.graph.n, m=prepared.graph.m,
                         algorithm="bfs", config="mapping=thread", variant="default",
                         source=0, gpu_name="none", time_us=1.0, time_us_min=1.0,
                         kernel_us=1.0, reps=1, correct=True, check="ok",
                         measured=Counters(), reference_iterations=1)


@pytest.mark.parametrize("beside_from", [1, 10**6], ids=["forked", "in-process"])
def test_the_prediction_made_beside_the_gpu_is_the_one_made_after_it(monkeypatch,
                                                                     beside_from):
    """`measure` makes the simulator's prediction in a forked process while the GPU runs
    (or here, with few cores): the same counters and time as made in this process."""
    monkeypatch.setattr(measure_module, "_BESIDE_FROM_CORES", beside_from)
    graph = load_graph("rmat:scale=9,seed=2")
    prepared = measure_module.prepare(graph, "rmat:scale=9,seed=2", "bfs")
    strategy = Strategy.parse("mapping=vwarp,w=8,driven=data")
    beside = measure_module.PredictionBeside(graph, "bfs", None, strategy, "h100")
    assert (beside._process is not None) == (beside_from == 1)
    got = beside.add_to(_blank_result(prepared), prepared)
    want = measure_module.add_prediction(_blank_result(prepared), prepared, "bfs", strategy,
                                         "h100")
    assert (got.simulated, got.simulated_time_us, got.sim_device) == (
        want.simulated, want.simulated_time_us, want.sim_device)
    assert got.seconds["simulate"] > 0


def test_a_prediction_that_fails_in_the_child_raises_as_it_would_here(monkeypatch):
    monkeypatch.setattr(measure_module, "_BESIDE_FROM_CORES", 1)
    graph = load_graph("rmat:scale=8,seed=2")
    prepared = measure_module.prepare(graph, "rmat:scale=8,seed=2", "bfs")
    beside = measure_module.PredictionBeside(graph, "bfs", None,
                                             Strategy.parse("mapping=thread"), "no-such-device")
    with pytest.raises(ConfigError, match="no-such-device"):
        beside.add_to(_blank_result(prepared), prepared)
