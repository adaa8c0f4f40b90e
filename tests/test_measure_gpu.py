"""`warpsweep measure` on a real GPU: every supported family of configurations gives the
functional run's answer on small graphs, and its counters add up. Skipped (with the reason)
where CuPy or a CUDA device is missing, as in CI."""

import json

import numpy as np
import pytest

from simulator import Graph
from simulator.load import load_graph
from tuner.measure.measure import gpu_unavailable

REASON = gpu_unavailable()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"no GPU: {REASON}")

SWEEPS = (
    "mapping=thread",
    "mapping=thread,defer_threshold=8",
    "mapping=vwarp,w=4",
    "mapping=vwarp,w=32,defer_threshold=64",
    "mapping=vwarp,w=8,chunk=16",
    "mapping=vwarp,w=8,chunk=16,distribution=dynamic",
    "mapping=vwarp,w=32,chunk=4,distribution=dynamic,defer_threshold=32",
    "mapping=vwarp,w=1,chunk=4",
    "mapping=vwarp,w=1,distribution=dynamic",
    "mapping=vwarp,w=1,chunk=8,distribution=dynamic,defer_threshold=32",
)
WORKLISTS = (
    ("mapping=thread,driven=data,push=atomic", "plain"),
    ("mapping=vwarp,w=8,driven=data,push=atomic", "warp_aggregated"),
    ("mapping=vwarp,w=32,driven=data,push=block", "block"),
    ("mapping=thread,driven=data,push=block,block_size=128", "block"),
)
DEDUP = (
    ("mapping=vwarp,w=8,driven=data,push=atomic,dedup=true", "plain"),
    ("mapping=thread,driven=data,push=block,dedup=true", "block"),
)
TEMPORAL = (
    "mapping=thread,driven=temporal,switch_to_topology=0.05",
    "mapping=vwarp,w=8,driven=temporal,switch_to_topology=0.2,switch_to_data=0.01",
    "mapping=vwarp,w=32,driven=temporal,push=block,switch_to_topology=0.02",
    # in-queue flags across the switches: a flag left set had kept SSSP's lowered vertices
    # off every later worklist (probe CNT: 24 wrong answers)
    "mapping=thread,driven=temporal,dedup=true,switch_to_topology=0.05,switch_to_data=0.01",
    "mapping=vwarp,w=8,driven=temporal,push=block,dedup=true,switch_to_topology=0.05",
)

REDISTRIBUTING = ("mapping=wer", "mapping=wer+", "mapping=wer,chunk=4", "mapping=wer+,chunk=16")
# donation (BFS, SSSP, CC): the hubs' edges past their block's cap walked by the whole block
DONATING_SWEEPS = (  # every algorithm
    "mapping=thread,donate_threshold=0",
    "mapping=thread,donate_threshold=4,defer_threshold=64",
    "mapping=thread,donate_threshold=1,block_size=1024",
    "mapping=thread,donate_threshold=0,block_size=96",
    "mapping=thread,donate_threshold=2147483647",  # the bound: the cap must not overflow
)
DONATING = (
    ("mapping=thread,driven=data,donate_threshold=0", "plain"),
    ("mapping=thread,driven=data,donate_threshold=2", "warp_aggregated"),
    ("mapping=thread,driven=data,push=block,donate_threshold=0", "block"),
    ("mapping=thread,driven=data,push=block,dedup=true,donate_threshold=1", "block"),
    ("mapping=thread,driven=data,dedup=true,donate_threshold=0,block_size=64", "plain"),
    ("mapping=thread,driven=temporal,switch_to_topology=0.05,donate_threshold=0", None),
)
SPATIAL = (
    ("driven=spatial", "plain"),
    ("mapping=vwarp,w=8,driven=spatial,partition=64", "warp_aggregated"),
)


def skewed(directed: bool) -> Graph:
    """A small RMAT graph with hubs (deferral has outliers to queue) and random weights."""
    spec = "rmat:scale=12,ef=8,weights=random,seed=3" + (",directed=true" if directed else "")
    return load_graph(spec, cache=False)


@pytest.fixture(scope="module")
def session():
    from tuner.measure.measure import Session

    return Session(0)


def cases():
    for algorithm in ("bfs", "sssp", "cc", "pagerank"):
        for config in SWEEPS:
            yield algorithm, config, None
        for config in DONATING_SWEEPS:
            yield algorithm, config, None
        for config, variant in WORKLISTS:
            yield algorithm, config, variant
        if algorithm != "pagerank":
            for config, variant in DEDUP:
                yield algorithm, config, variant
            for config in TEMPORAL:
                yield algorithm, config, None
            for config, variant in SPATIAL:
                yield algorithm, config, variant
            for config in REDISTRIBUTING:
                yield algorithm, config, None
            for config, variant in DONATING:
                yield algorithm, config, variant
    yield "bfs", "mapping=vwarp,w=8,driven=data,push=atomic", "claimed"
    yield "bfs", "mapping=thread,driven=data,donate_threshold=0", "claimed"


@pytest.mark.parametrize("directed", [False, True])
def test_every_family_gives_the_functional_answer(session, directed):
    from tuner.measure.measure import prepare
    from tuner.measure.plan import plan_for

    graph = skewed(directed)
    failures = []
    for algorithm in ("bfs", "sssp", "cc", "pagerank"):
        prepared = prepare(graph, "", algorithm)
        for algo, config, variant in cases():
            if algo != algorithm:
                continue
            plan = plan_for(algorithm, config, variant)
            r = session.measure(prepared, algorithm, plan, config, reps=1)
            if not r.correct:
                failures.append(f"{algorithm} {config} {plan.variant}: {r.check}")
            m = r.measured
            assert m.launches >= m.iterations >= 1, (algorithm, config)
            assert m.atomics is not None and m.atomics >= 0
            assert 0 < r.kernel_us <= r.time_us  # a share of it (1.3x had come, 1 in 8)
            if plan.driven in ("data", "spatial") and algorithm != "pagerank":
                # each launch reads what the last pushed
                first = 1 if algorithm != "cc" else (
                    graph.n if plan.driven == "data" else -(-graph.n // plan.partition))
                assert m.worklist_items == m.pushes + first, (algorithm, config)
            if algorithm == "bfs" and plan.driven not in ("temporal", "spatial"):
                assert m.iterations == r.reference_iterations, config
            if algorithm == "pagerank" and plan.driven == "topology":
                assert m.iterations == r.reference_iterations, config
            if algorithm == "bfs" and plan.driven == "topology":
                assert m.atomics == 0 or plan.dynamic or plan.defer_threshold is not None
            if plan.driven == "topology" and plan.dynamic:  # a warp grabs at least once
                assert m.atomics >= m.launches, (algorithm, config)
    assert not failures, "\n".join(failures)


def test_counted_atomics_match_hand_counts(session):
    """A star: the centre's W=32 worklist launch relaxes every leaf once (SSSP), each storing
    lane one atomicMin, and pushes them in warp steps of 32 (one tail atomic each)."""
    from tuner.measure.measure import prepare
    from tuner.measure.plan import plan_for

    leaves = 256
    src = np.zeros(leaves, dtype=np.int64)
    dst = np.arange(1, leaves + 1)
    graph = Graph.from_edges(src, dst, leaves + 1, np.ones(leaves, np.float32), directed=True,
                             name="star")
    prepared = prepare(graph, "", "sssp", 0)
    plan = plan_for("sssp", "mapping=vwarp,w=32,driven=data,push=atomic", "plain")
    r = session.measure(prepared, "sssp", plan, "data", reps=1)
    assert r.correct
    # launch 1: 256 atomicMin + 8 tail steps; launch 2: 256 leaves without edges
    assert r.measured.atomics == leaves + leaves // 32
    assert r.measured.worklist_items == 1 + leaves and r.measured.launches == 2


def test_donation_spreads_a_hubs_edges_over_its_block(session):
    """A star of 2^17 leaves, BFS from the centre: thread-mapped, the centre's thread walks
    every edge alone; with donate_threshold=0 it keeps 512 (cap: 2^17 edges over a block of
    256 threads) and its block's 256 threads drain the rest, some 256x less serial work. Its
    kernel time must fall by far more than the 4x asked here (one more guard that the
    donating kernel runs, beyond the right answers above)."""
    from tuner.measure.measure import prepare
    from tuner.measure.plan import plan_for

    leaves = 1 << 17
    graph = Graph.from_edges(np.zeros(leaves, dtype=np.int64), np.arange(1, leaves + 1),
                             leaves + 1, None, directed=False, name="star")
    prepared = prepare(graph, "", "bfs", 0)
    times = {}
    for config in ("mapping=thread", "mapping=thread,donate_threshold=0"):
        r = session.measure(prepared, "bfs", plan_for("bfs", config), config, reps=3)
        assert r.correct, (config, r.check)
        times[config] = r.kernel_us
    assert times["mapping=thread,donate_threshold=0"] * 4 < times["mapping=thread"], times


def test_cli_measures_and_prints_json(capsys):
    import argparse

    from tuner.cli import measure as cli_measure

    parser = argparse.ArgumentParser()
    cli_measure.register(parser.add_subparsers())
    args = parser.parse_args([
        "measure", "--graph", "rmat:scale=10,weights=random,seed=1", "--algo", "cc",
        "--config", "mapping=vwarp,w=8,driven=data", "--reps", "2", "--json"])
    code = args.run(args)
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["correct"] and out["measured_launches"] >= 1
    assert out["simulated_launches"] >= 1 and out["simulated_time_us"] > 0


def test_verify_measures_a_studys_candidates_on_the_gpu(tmp_path):
    """tune --verify's GPU side without a tune (the GPU machine has no Optuna): a study's top
    configurations measured, checked and written beside its trials, adaptive W kept
    unmeasured (it has no kernel)."""
    from types import SimpleNamespace

    from tuner.measure.verify import gpu_measure
    from tuner.measure.verify import read_verification
    from tuner.measure.verify import verify_study
    from tuner.measure.verify import write_verification

    def record(params, time_us, role="trial", label=None):
        return SimpleNamespace(role=role, trial=None if label else 1, label=label,
                               state="complete", params=params, values=[time_us],
                               metrics={"time_us": time_us}, sources=[])

    thread = record({"mapping": "thread"}, 30.0, "reference", "thread")
    best = [record({"mapping": "vwarp", "w": 8, "driven": "data", "push": "block"}, 10.0),
            record({"mapping": "adaptive"}, 11.0), thread]
    study = SimpleNamespace(key="gpu-study", best=best, ranked=best,
                            references={"thread": thread},
                            spec=SimpleNamespace(graph="rmat:scale=12,ef=8,seed=3",
                                                 algorithm="cc"))
    v = verify_study(study, 2, gpu_measure(0, reps=2))
    measured = v.measured()
    assert len(measured) == 2 and all(r.measured_us > 0 for r in measured)
    assert v.winner() is not None and v.pick_regret() >= 1.0
    write_verification(v, tmp_path)
    rows = read_verification(tmp_path, "gpu-study")
    assert sum(r["winner"] for r in rows) == 1 and len(rows) == 3


def _cli_json(capsys, *argv):
    import argparse

    from tuner.cli import measure as cli_measure

    parser = argparse.ArgumentParser()
    cli_measure.register(parser.add_subparsers())
    args = parser.parse_args(["measure", *argv])
    try:
        code = args.run(args)
    except Exception as exc:  # the CLI's main turns a WarpsweepError into one line
        return exc, capsys.readouterr()
    return code, capsys.readouterr()


def test_pagerank_change_sums_are_counted_as_the_simulator_counts_them(capsys):
    """The kernels had issued the rank-change sum's atomicAdd (once a block) uncounted:
    measured 0 against the simulated one a block (probe CNT)."""
    code, out = _cli_json(capsys, "--graph", "rmat:scale=10,ef=8,seed=1", "--algo",
                          "pagerank", "--config", "mapping=thread", "--reps", "1", "--json")
    doc = json.loads(out.out)
    assert code == 0 and doc["correct"]
    assert doc["measured_atomics"] == doc["simulated_atomics"] > 0


def test_a_worklist_outgrowing_its_queue_is_refused_not_written_past(capsys):
    """BFS worklists without dedup on a grid re-push what their duplicates reach: the queue
    overflowed with a RuntimeError traceback after the kernel had stored past its end
    (probe CNT). Now no push stores past the queue, and the run is refused in one line."""
    from simulator.errors import WarpsweepError

    exc, _ = _cli_json(capsys, "--graph", "grid2d:rows=32,cols=32,weights=random", "--algo",
                       "bfs", "--config", "mapping=vwarp,w=8,driven=data", "--reps", "1")
    assert isinstance(exc, WarpsweepError) and "not measured" in str(exc)
    assert "dedup=true" in str(exc)


def test_a_large_chunk_takes_the_shared_memory_it_needs_or_is_refused(session):
    """W=2, chunk=64 needs 66,048 bytes of shared memory a block: past the 48 KiB a launch
    may take unasked, its sweep had failed with CUDA's "invalid argument" traceback (probe
    KERN). It now opts in and runs; a chunk past what the GPU gives a block is refused in
    one line naming the need."""
    from tuner.measure.measure import prepare
    from tuner.measure.plan import plan_for
    from tuner.measure.runner import SharedMemoryTooSmall

    prepared = prepare(skewed(False), "", "bfs")
    for config in ("mapping=vwarp,w=2,chunk=64",
                   "mapping=vwarp,w=2,chunk=64,distribution=dynamic"):
        plan = plan_for("bfs", config)
        assert plan.shared_bytes > 48 * 1024
        assert session.measure(prepared, "bfs", plan, config, reps=1).correct, config
    plan = plan_for("bfs", "mapping=vwarp,w=2,chunk=2048")
    with pytest.raises(SharedMemoryTooSmall, match=r"needs 2,097,664 bytes of shared memory"):
        session.measure(prepared, "bfs", plan, "mapping=vwarp,w=2,chunk=2048", reps=1)


def test_gpu_memory_running_out_is_one_line_naming_the_gpu():
    """Past the GPU's memory the upload had ended in CuPy's OutOfMemoryError traceback (and
    through the CLI in advice about host memory, probe KERN)."""
    import cupy as cp

    from tuner.measure.measure import GpuFault
    from tuner.measure.measure import Session
    from tuner.measure.measure import prepare
    from tuner.measure.plan import plan_for

    pool = cp.get_default_memory_pool()
    session = Session(0)
    prepared = prepare(skewed(False), "", "bfs")
    pool.free_all_blocks()
    pool.set_limit(size=200_000)
    try:
        with pytest.raises(GpuFault, match=r"ran out of its memory measuring mapping=thread"):
            session.measure(prepared, "bfs", plan_for("bfs", "mapping=thread"),
                            "mapping=thread", reps=1)
    finally:
        pool.set_limit(size=0)
    assert session.measure(prepared, "bfs", plan_for("bfs", "mapping=thread"),
                           "mapping=thread", reps=1).correct


def test_worklist_queues_are_allocated_only_for_a_plan_that_pushes(session):
    """Two queues of 8m + n + 16 ids (64 bytes a stored edge) had been allocated for every
    plan, capping the graphs a topology sweep could be measured on (probe KERN)."""
    from tuner.measure.measure import prepare
    from tuner.measure.plan import plan_for

    prepared = prepare(skewed(False), "", "sssp")
    sweep = session.measure(prepared, "sssp", plan_for("sssp", "mapping=vwarp,w=8"),
                            "mapping=vwarp,w=8", reps=1)
    dg = session.device_graph(prepared, "sssp")
    assert sweep.correct and dg._queues is None
    config = "mapping=vwarp,w=8,driven=data"
    assert session.measure(prepared, "sssp", plan_for("sssp", config), config, reps=1).correct
    assert dg._queues is not None and dg._queues[0].size == dg.queue_room
