"""What the GPU harness measures: the graphs, the (algorithm, strategy, variant) configurations
and the Parquet columns it writes (a contract for bench/fidelity.py and `warpsweep calibrate`).

No CuPy here: the tests import this module on machines without a GPU.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

# The real graphs of ../shared/graphs (SOURCES.md there); none has weights of its own, so SSSP
# uses seeded random weights as the sweeps do (weights do not change BFS).
FILE_GRAPHS = (
    "p2p-Gnutella08.txt.gz",
    "ca-AstroPh.txt.gz",
    "deezer_HU_edges.csv.gz",
    "cit-HepPh.lg.gz",
    "email-Enron.txt.gz",
    "p2p-Gnutella31.txt.gz",
    "USA-road-NY.gr.gz",
    "coAuthorsDBLP.mtx.gz",
    "dblp-2010.mtx.gz",
    "web-NotreDame.txt.gz",
    "USA-road-FLA.gr.gz",
)
GENERATED_GRAPHS = (
    "rmat:scale=16,ef=16,weights=random,seed=1",
    "rmat:scale=18,ef=16,weights=random,seed=1",
    "random:n=131072,deg=8,weights=random,seed=1",
    "random:n=131072,deg=32,weights=random,seed=1",
    "grid2d:rows=512,weights=random,seed=1",
    "road:rows=512,weights=random,seed=1",
)
FILE_OPTIONS = "weights=random,seed=1"
REPO_GRAPHS_DIR = "../shared/graphs"  # where a user of the repo has the files (from its root)

BFS_TOPOLOGY = (
    "mapping=thread",
    "mapping=thread,defer_threshold=32",
    *(f"mapping=vwarp,w={w}" for w in (2, 4, 8, 16, 32)),
    "mapping=vwarp,w=8,chunk=16",
    "mapping=vwarp,w=32,chunk=4",
    "mapping=vwarp,w=8,chunk=16,distribution=dynamic",
    "mapping=vwarp,w=32,chunk=4,distribution=dynamic",
)
DATA_DRIVEN = (
    "mapping=thread,driven=data,push=atomic",
    "mapping=vwarp,w=8,driven=data,push=atomic",
    "mapping=vwarp,w=32,driven=data,push=atomic",
)
SSSP_TOPOLOGY = ("mapping=thread", "mapping=vwarp,w=8", "mapping=vwarp,w=32")
# How a data-driven kernel pushes: every pushing lane's own atomicAdd on the tail (`plain`),
# one atomicAdd per warp step by a leader (`warp_aggregated`), or (BFS) the vertex claimed by
# atomicCAS first so that no duplicate is pushed (`claimed`).
BFS_PUSH_VARIANTS = ("plain", "warp_aggregated", "claimed")
SSSP_PUSH_VARIANTS = ("plain", "warp_aggregated")
TOPOLOGY_VARIANT = "default"

# PageRank and CC (bench/gpu/pr_cc.py, `warpsweep measure`'s kernels): the BFS topology list,
# the data-driven list with both atomic push variants and as block pushes, and (CC) two
# temporal hybrids
PR_CC_TOPOLOGY = BFS_TOPOLOGY
PR_CC_PUSH_VARIANTS = ("plain", "warp_aggregated")
BLOCK_PUSH = tuple(c.replace("push=atomic", "push=block") for c in DATA_DRIVEN)
CC_TEMPORAL = (
    "mapping=thread,driven=temporal,switch_to_topology=0.05",
    "mapping=vwarp,w=32,driven=temporal,switch_to_topology=0.05",
)
PR_CC_ALGORITHMS = ("pagerank", "cc")
# The spatial hybrid (bench/gpu/pr_cc.py --catalog spatial): partitions of 4-64 vertices under
# the thread mapping and at W = 8 and 32, beside the sweeps and worklists of those widths
SPATIAL = (
    "mapping=thread,driven=spatial,partition=4",
    "mapping=thread,driven=spatial,partition=16",
    "mapping=thread,driven=spatial,partition=64",
    "mapping=vwarp,w=8,driven=spatial,partition=16",
    "mapping=vwarp,w=32,driven=spatial,partition=16",
)
SPATIAL_PEERS = (
    "mapping=thread", "mapping=vwarp,w=8", "mapping=vwarp,w=32",
    "mapping=thread,driven=data,push=atomic", "mapping=vwarp,w=8,driven=data,push=atomic",
    "mapping=vwarp,w=32,driven=data,push=atomic",
)
SPATIAL_ALGORITHMS = ("bfs", "sssp", "cc")
# Warp-level edge redistribution (bench/gpu/pr_cc.py --catalog wer): WER and WER+ with 1, 4
# and 16 vertices a thread, beside the thread mapping and virtual warps (BFS, SSSP, CC)
WER = tuple(f"mapping={m}" + (f",chunk={c}" if c > 1 else "")
            for c in (1, 4, 16) for m in ("wer", "wer+"))
WER_PEERS = ("mapping=thread", "mapping=vwarp,w=4", "mapping=vwarp,w=8", "mapping=vwarp,w=32")
# PageRank's sweeps against the chunk C (bench/gpu/pr_cc.py --catalog pr_chunks): nvcc groups
# the gathering loop's loads only where a virtual warp takes one vertex (docs/fidelity.md)
PR_CHUNKS = ("mapping=thread",) + tuple(
    f"mapping=vwarp,w={w}" + (f",chunk={c}" if c > 1 else "")
    for w, chunks in ((2, (1, 8)), (8, (1, 2, 4, 8, 16)), (32, (1, 2, 4, 8))) for c in chunks)
# SSSP's hybrids among everything they compete with (bench/gpu/pr_cc.py --catalog
# sssp_hybrids): the temporal hybrid at W = 1, 8, 32 switching to sweeps early and late, beside
# BFS's sweep list (widths, chunks, dynamic grabs, deferral) and the worklists of those widths
# pushing by a lane's atomic, a warp's aggregated one or a block's, with and without an
# in-queue flag; bench/gpu's own SSSP rows (configs.measurements()) hold 6 configurations
SSSP_TEMPORAL = tuple(
    f"{m},driven=temporal,switch_to_topology={s}"
    for m in ("mapping=thread", "mapping=vwarp,w=8", "mapping=vwarp,w=32")
    for s in (0.05, 0.3))
SSSP_DEDUP = tuple(c + ",dedup=true" for c in DATA_DRIVEN[1:])


def sssp_hybrid_measurements() -> list[Measurement]:
    """Every (algorithm, config, variant) bench/gpu/pr_cc.py --catalog sssp_hybrids runs on
    each graph, in run order."""
    out = [Measurement("sssp", c, TOPOLOGY_VARIANT) for c in BFS_TOPOLOGY]
    out += [Measurement("sssp", c, v) for c in DATA_DRIVEN for v in SSSP_PUSH_VARIANTS]
    out += [Measurement("sssp", c, "block") for c in BLOCK_PUSH]
    out += [Measurement("sssp", c, "plain") for c in SSSP_DEDUP]
    out += [Measurement("sssp", c, v) for c in SSSP_TEMPORAL for v in SSSP_PUSH_VARIANTS]
    out.append(Measurement("sssp", SSSP_TEMPORAL[-2].replace("driven=temporal",
                                                            "driven=temporal,push=block"),
                           "block"))
    return out


# Work donation (bench/gpu/pr_cc.py --catalog donation): the thread mapping's sweeps and
# worklists with thresholds 0-32 over the block's mean degree, beside the same forms without
# it and the virtual warps they compete with (BFS, SSSP, CC; PageRank's sweeps)
DONATION_SWEEPS = ("mapping=thread",) + tuple(
    f"mapping=thread,donate_threshold={t}" for t in (0, 2, 8, 32)) + (
    "mapping=thread,defer_threshold=64", "mapping=thread,donate_threshold=2,defer_threshold=64",
    "mapping=vwarp,w=8", "mapping=vwarp,w=32")
DONATION_WORKLISTS = tuple(f"mapping=thread,driven=data,push=atomic{d}"
                           for d in ("", ",donate_threshold=0", ",donate_threshold=8")) + (
    "mapping=vwarp,w=32,driven=data,push=atomic",)
DONATION_ALGORITHMS = ("bfs", "sssp", "cc", "pagerank")
DONATION_TEMPORAL = tuple(f"mapping=thread,driven=temporal,switch_to_topology=0.05{d}"
                          for d in ("", ",donate_threshold=0"))


def donation_measurements() -> list[Measurement]:
    """Every (algorithm, config, variant) bench/gpu/pr_cc.py --catalog donation runs on each
    graph, in run order."""
    out = []
    for algorithm in DONATION_ALGORITHMS:
        out += [Measurement(algorithm, c, TOPOLOGY_VARIANT) for c in DONATION_SWEEPS]
        if algorithm != "pagerank":  # (its worklists do not donate in warpsweep measure)
            out += [Measurement(algorithm, c, "warp_aggregated") for c in DONATION_WORKLISTS]
            out += [Measurement(algorithm, c, "plain") for c in DONATION_TEMPORAL]
    return out


def block_push_measurements() -> list[Measurement]:
    """Every (algorithm, config, variant) bench/gpu/pr_cc.py --catalog block_push runs on each
    graph, in run order: BFS and CC pushing by a block's rounds beside a lane's atomic and a
    warp's aggregated one, in worklists and temporal hybrids, beside the sweep list."""
    out = []
    for algorithm in ("bfs", "cc"):
        out += [Measurement(algorithm, c, TOPOLOGY_VARIANT) for c in BFS_TOPOLOGY]
        out += [Measurement(algorithm, c, v) for c in DATA_DRIVEN for v in SSSP_PUSH_VARIANTS]
        out += [Measurement(algorithm, c, "block") for c in BLOCK_PUSH]
        out += [Measurement(algorithm, c, "plain") for c in CC_TEMPORAL]
        out += [Measurement(algorithm, c.replace("driven=temporal", "driven=temporal,push=block"),
                            "block") for c in CC_TEMPORAL]
    return out


# what the PR/CC file adds to the contract's columns: the counters `warpsweep measure` reads
PR_CC_EXTRA = ("worklist_items", "pushes", "atomics")

COLUMNS = (
    "device", "gpu_name", "graph", "graph_spec", "n", "m", "algorithm", "config", "variant",
    "source", "iterations", "launches", "time_us", "time_us_min", "kernel_us", "reps",
    "correct", "cupy_version", "cuda_version", "commit", "measured_at",
)
_TYPES = {"n": pa.int64(), "m": pa.int64(), "source": pa.int64(), "iterations": pa.int64(),
          "launches": pa.int64(), "reps": pa.int64(), "time_us": pa.float64(),
          "time_us_min": pa.float64(), "kernel_us": pa.float64(), "correct": pa.bool_()}
SCHEMA = pa.schema([(c, _TYPES.get(c, pa.string())) for c in COLUMNS])


@dataclass(frozen=True)
class Measurement:
    """One thing to time: an algorithm under a simulator strategy, in one kernel variant."""

    algorithm: str
    config: str
    variant: str


def measurements() -> list[Measurement]:
    """Every (algorithm, config, variant) the harness runs on each graph, in run order."""
    out = [Measurement("bfs", c, TOPOLOGY_VARIANT) for c in BFS_TOPOLOGY]
    out += [Measurement("bfs", c, v) for c in DATA_DRIVEN for v in BFS_PUSH_VARIANTS]
    out += [Measurement("sssp", c, TOPOLOGY_VARIANT) for c in SSSP_TOPOLOGY]
    out += [Measurement("sssp", c, v) for c in DATA_DRIVEN for v in SSSP_PUSH_VARIANTS]
    return out


def spatial_measurements() -> list[Measurement]:
    """Every (algorithm, config, variant) bench/gpu/pr_cc.py --catalog spatial runs on each
    graph, in run order: the spatial hybrids and their peers, pushing with plain atomics."""
    out = []
    for algorithm in SPATIAL_ALGORITHMS:
        for c in SPATIAL + SPATIAL_PEERS:
            out.append(Measurement(algorithm, c, "plain" if "driven=" in c else
                                   TOPOLOGY_VARIANT))
    return out


def wer_measurements() -> list[Measurement]:
    """Every (algorithm, config, variant) bench/gpu/pr_cc.py --catalog wer runs on each graph,
    in run order: WER and WER+ and their sweep peers."""
    return [Measurement(a, c, TOPOLOGY_VARIANT) for a in SPATIAL_ALGORITHMS
            for c in WER + WER_PEERS]


def pr_chunk_measurements() -> list[Measurement]:
    """Every (algorithm, config, variant) bench/gpu/pr_cc.py --catalog pr_chunks runs on each
    graph: PageRank's sweeps at W = 2, 8 and 32 with chunks of 1-16 vertices."""
    return [Measurement("pagerank", c, TOPOLOGY_VARIANT) for c in PR_CHUNKS]


def cc_chunk_measurements() -> list[Measurement]:
    """Every (algorithm, config, variant) bench/gpu/pr_cc.py --catalog cc_chunks runs on each
    graph: CC's sweeps over the same widths and chunks as PageRank's (``PR_CHUNKS``)."""
    return [Measurement("cc", c, TOPOLOGY_VARIANT) for c in PR_CHUNKS]


def pr_cc_measurements() -> list[Measurement]:
    """Every (algorithm, config, variant) bench/gpu/pr_cc.py runs on each graph, in run order."""
    out = []
    for algorithm in PR_CC_ALGORITHMS:
        out += [Measurement(algorithm, c, TOPOLOGY_VARIANT) for c in PR_CC_TOPOLOGY]
        out += [Measurement(algorithm, c, v) for c in DATA_DRIVEN for v in PR_CC_PUSH_VARIANTS]
        out += [Measurement(algorithm, c, "block") for c in BLOCK_PUSH]
        if algorithm == "cc":
            out += [Measurement(algorithm, c, "plain") for c in CC_TEMPORAL]
    return out


def device_label(gpu_name: str, given: str | None = None) -> str:
    """The results' ``device`` column: ``given``, or else the GPU's model read from its name
    (``NVIDIA H100 80GB HBM3`` -> ``h100``). A given label that leaves out the model of the
    GPU it runs on is refused: a file must not say it was measured on another GPU."""
    found = re.search(r"\b([A-Z]{1,2}\d{2,4}[A-Z]?)\b", gpu_name.upper())
    model = found.group(1).lower() if found else None
    if given is None:
        if model is None:
            raise SystemExit(f"--device: no GPU model in the name {gpu_name!r}; name one")
        return model
    if model is not None and model not in given.lower():
        raise SystemExit(f"--device {given!r}: this GPU is {gpu_name!r} ({model}); the "
                         "device column must name the GPU the rows were measured on")
    return given


def file_spec(name: str, graphs_dir: str) -> str:
    """The spec of a file graph in ``graphs_dir``, with the options every run uses."""
    return f"file:{graphs_dir.rstrip('/')}/{name},{FILE_OPTIONS}"


def prepared_graphs(names: list[str], graphs_dir: str, algorithm: str):
    """Each of ``names`` loaded and its functional run of ``algorithm`` done, as (graph,
    ``measure.prepare``'s Prepared): a name with a colon is a generated graph's spec, any
    other a file in ``graphs_dir``."""
    from simulator.load import load_graph
    from tuner.measure.measure import prepare

    for name in names:
        spec = name if ":" in name else file_spec(name, graphs_dir)
        graph = load_graph(spec)
        yield graph, prepare(graph, spec, algorithm)


def graph_specs(graphs_dir: str, only: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """(spec to load here, spec as the repo's users write it) for every graph, generated first;
    ``only`` keeps the graphs whose short name or spec contains one of its strings."""
    pairs = [(s, s) for s in GENERATED_GRAPHS]
    pairs += [(file_spec(f, graphs_dir), file_spec(f, REPO_GRAPHS_DIR)) for f in FILE_GRAPHS]
    if only:
        pairs = [p for p in pairs if any(o in p[1] for o in only)]
    return pairs


def write_results(rows: list[dict], out: Path, extra: tuple[str, ...] = ()) -> None:
    """The harness's rows as Parquet, in the contract's column order and types (``extra``:
    int64 columns after them)."""
    schema = SCHEMA
    for c in extra:
        schema = schema.append(pa.field(c, pa.int64()))
    table = pa.Table.from_pylist([{c: r[c] for c in schema.names} for r in rows], schema)
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, out)
