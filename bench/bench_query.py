"""Query benchmark: `warpsweep query`, `best` and `pareto` over 1,000,000 trial rows.

Floor (issue 9): a query over 1 million trial rows answers in under 2 s. The script writes a
synthetic results directory (the declared schema, written with pyarrow: a few hundred studies,
realistic knob and metric columns, references, failed and duplicate rows), then times each
verb through the CLI's own code path (`tuner.cli.main`, output captured), a fresh DuckDB
connection every time (the files are in the OS cache after the first run). The median of
``--repeat`` runs of each SQL query is held to the floor (the exit status is 1 if one misses
it); `best`, `pareto` and `effect` are timed for information.

Run from the repository root: python bench/bench_query.py [--rows N] [--dir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stdout
from datetime import UTC
from datetime import datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tuner import cli  # noqa: E402
from tuner.cli.args import positive_arg  # noqa: E402
from tuner.cli.args import seed_arg  # noqa: E402
from tuner.results.schema import SCHEMA_VERSION  # noqa: E402
from tuner.results.schema import TRIALS  # noqa: E402
from tuner.results.store import ParquetDirBackend  # noqa: E402
from tuner.results.store import ResultStore  # noqa: E402
from tuner.results.store import check_manifest  # noqa: E402
from tuner.results.store import rows_to_table  # noqa: E402

FLOOR_S = 2.0
ALGORITHMS = ("bfs", "sssp", "pagerank", "cc")
DEVICES = ("h100", "a100", "c2050")
REFERENCES = (("thread", "thread", None), *((f"vwarp w={w}", "vwarp", w)
                                            for w in (1, 2, 4, 8, 16, 32)))
GROUP_BY_SQL = """SELECT algorithm, device, param_mapping AS mapping, count(*) AS runs,
       min(time_us) AS best_us, avg(time_us) AS mean_us, avg(simd_efficiency) AS simd
FROM trials WHERE state = 'complete' GROUP BY ALL ORDER BY ALL"""


# -- synthetic results ----------------------------------------------------------------------
def write_results(root: Path, rows: int, graphs: int, seed: int, legacy: float = 0.0) -> int:
    """A results directory of ``rows`` trial rows: one study per graph x algorithm x device,
    one file per study; returns the number of studies."""
    rng = np.random.default_rng(seed)
    check_manifest(root)
    schema = rows_to_table(TRIALS, []).schema
    store = ResultStore(ParquetDirBackend(root), flush_every_s=1e9)
    graph_info = []
    for g in range(graphs):
        scale = 10 + g % 8
        spec = f"rmat:scale={scale},ef=16,a=0.57,b=0.19,c=0.19,seed={g}"
        gid = f"rmat{scale}-ef16-{g:08x}"
        skew = float(rng.uniform(0.2, 0.9))
        store.add_graph({"graph_id": gid, "graph_spec": spec, "name": f"rmat{scale}-s{g}",
                         "kind": "rmat", "n": 2 ** scale, "m": 16 * 2 ** scale,
                         "directed": False, "weighted": False, "timestamp": datetime.now(UTC),
                         "warpsweep_version": "bench", "schema_version": SCHEMA_VERSION,
                         "degree_gini": skew, "avg_degree": 16.0})
        graph_info.append((gid, spec, scale, skew))
    store.close()
    studies = [(a, d, g) for a in ALGORITHMS for d in DEVICES for g in graph_info]
    per, extra = divmod(rows, len(studies))
    for i, (algo, device, (gid, spec, scale, skew)) in enumerate(studies):
        n = per + (1 if i < extra else 0)
        table = _study_table(rng, schema, n, algo, device, gid, spec, scale, skew, i, legacy)
        out = root / TRIALS / f"algorithm={algo}" / f"device={device}"
        out.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, out / f"part-{i:06d}.parquet")
    return len(studies)


def _study_table(rng: np.random.Generator, schema: pa.Schema, n: int, algo: str, device: str,
                 gid: str, spec: str, scale: int, skew: float, index: int,
                 legacy: float) -> pa.Table:
    """One study's rows: the 7 references, then sampled trials over every mapping."""
    refs = min(len(REFERENCES), n)
    trials = n - refs
    role = np.array(["reference"] * refs + ["trial"] * trials, dtype=object)
    label = np.array([r[0] for r in REFERENCES[:refs]] + [None] * trials, dtype=object)
    trial = np.r_[np.zeros(refs, np.int64), np.arange(trials, dtype=np.int64)]
    trial_null = np.r_[np.ones(refs, bool), np.zeros(trials, bool)]
    u = rng.random(n)
    state = np.where(u < 0.02, "failed", np.where(u < 0.05, "duplicate", "complete")).astype(
        object)
    state[:refs] = "complete"
    mapping = rng.choice(np.array(["thread", "vwarp", "wer", "wer+", "adaptive"], object), n,
                         p=[0.1, 0.5, 0.1, 0.1, 0.2])
    mapping[:refs] = [r[1] for r in REFERENCES[:refs]]
    driven = rng.choice(np.array(["topology", "data", "temporal", "spatial"], object), n,
                        p=[0.6, 0.25, 0.1, 0.05])
    driven[:refs] = "topology"
    is_vwarp, is_thread = mapping == "vwarp", mapping == "thread"
    is_adaptive = mapping == "adaptive"
    chunked = ~is_thread
    w = 2 ** rng.integers(0, 6, n)
    w[:refs] = [r[2] or 1 for r in REFERENCES[:refs]]
    chunk = np.maximum(1, np.exp(rng.uniform(0, np.log(256), n)).astype(np.int64))
    chunk[:refs] = 1
    distribution = rng.choice(np.array(["static", "dynamic"], object), n)
    distribution[:refs] = "static"
    defer = rng.choice(np.array([16, 64, 256, 1024]), n)
    defer_null = rng.random(n) < 0.6
    defer_null[:refs] = True
    block = rng.choice(np.array([64, 128, 256, 512, 1024]), n)
    block[:refs] = 256
    donate = rng.integers(0, 64, n)
    donate_null = ~is_thread | (rng.random(n) < 0.7)
    donate_null[:refs] = True
    worklist = driven != "topology"
    push = rng.choice(np.array(["atomic", "chunked", "prefix"], object), n)
    variable_grid = rng.random(n) < 0.5
    temporal, spatial, topology = driven == "temporal", driven == "spatial", driven == "topology"
    to_topology = rng.choice(np.array([0.05, 0.1, 0.2, 0.5]), n)
    to_data = to_topology * rng.choice(np.array([0.25, 0.5, 1.0]), n)
    partition = rng.choice(np.array([4, 8, 16, 32, 64]), n)
    unroll = rng.choice(np.array([1, 2, 4, 8]), n)
    unroll[:refs] = 1
    min_w = 2 ** rng.integers(0, 3, n)
    max_w = 2 ** rng.integers(3, 6, n)
    stat = rng.choice(np.array(["mean", "median", "p90"], object), n)

    # A cost model with structure: the best W grows with the graph's skew.
    best_log_w = 1 + 4 * skew
    lanes = np.where(is_vwarp, np.log2(w), np.where(is_adaptive, best_log_w, 0.5))
    factor = (1 + 0.35 * np.abs(lanes - best_log_w) + 0.04 * np.log2(chunk)
              + 0.1 * (distribution == "dynamic") + 0.05 * np.abs(np.log2(block) - 8)
              + np.where(worklist, 0.15 - 0.3 * skew, 0.0) + 0.02 * np.log2(unroll)
              + 0.05 * (~defer_null) * (1 - skew))
    base = 2.0 ** (scale - 10) * {"bfs": 40, "sssp": 90, "pagerank": 300, "cc": 60}[algo]
    base *= {"h100": 1.0, "a100": 1.4, "c2050": 6.0}[device]
    time_us = base * factor * rng.lognormal(0, 0.05, n)
    transactions = (2 ** scale * 20) * (1 + 0.1 * lanes) / (1 + 0.02 * np.log2(chunk)) \
        * rng.lognormal(0, 0.05, n)
    simd = np.clip(1 / factor * rng.uniform(0.8, 1.0, n), 0.01, 1.0)
    ok = state != "failed"
    metrics = {
        "time_us": time_us, "cycles": time_us * 1800, "launches": np.full(n, 12.0),
        "iterations": np.full(n, 12.0), "simd_efficiency": simd, "u_a": simd * 0.9,
        "u_r": simd * 0.95, "me": simd * 0.8, "transactions": transactions,
        "bytes": transactions * 32, "transactions_per_request": 1 + lanes / 5,
        "atomics": np.where(worklist, transactions / 10, 0.0),
        "edges_touched": np.full(n, 16.0 * 2 ** scale),
        "work_efficiency": 1 / factor, "meps": 16 * 2 ** scale / time_us,
        "worklist_items": np.where(worklist, 2.0 ** scale, 0.0), "duplicates": np.zeros(n),
    }
    now = int(time.time() * 1e6)
    key = f"rmat{scale}-ef16.{algo}.{device}.all.{index:010x}"
    failed = state == "failed"
    values = pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32)),
                                      pa.array(time_us), mask=pa.array(failed))
    columns = {
        "study_key": _const(key, n), "trial": pa.array(trial, mask=trial_null),
        "role": pa.array(role, pa.string()), "label": pa.array(label, pa.string()),
        "state": pa.array(state, pa.string()),
        "duplicate_of": pa.array(np.maximum(trial - 1, 0), mask=state != "duplicate"),
        "graph_id": _const(gid, n), "graph_spec": _const(spec, n), "space": _const("all", n),
        "space_digest": _const("d1g35t", n), "sampler": _const("tpe", n),
        "objective": _const("time_us", n), "values": values, "values_std": pa.nulls(
            n, pa.list_(pa.float64())),
        "sources": pa.array([[0, 1, 2, 3]] * n, pa.list_(pa.int64())),
        "n_sources": pa.array(np.full(n, 4)), "time_us_std": pa.array(time_us * 0.01, mask=failed),
        "time_us_min": pa.array(time_us * 0.98, mask=failed),
        "time_us_max": pa.array(time_us * 1.02, mask=failed),
        "error": pa.array(np.where(failed, "ConfigError: synthetic", None), pa.string()),
        "wall_s": pa.array(rng.uniform(0.01, 2.0, n)), "worker": _const("bench-host", n),
        "node_id": pa.nulls(n, pa.string()), "seed": pa.array(np.zeros(n, np.int64)),
        "timestamp": pa.array(now + np.arange(n) * 1000, pa.timestamp("us", tz="UTC")),
        "warpsweep_version": _const("bench", n), "git_commit": pa.nulls(n, pa.string()),
        "schema_version": pa.array(np.full(n, SCHEMA_VERSION, np.int32)),
        "param_mapping": pa.array(mapping, pa.string()),
        "param_w": pa.array(w, mask=~is_vwarp),
        "param_chunk": pa.array(chunk, mask=~chunked),
        "param_distribution": pa.array(distribution, pa.string(), mask=~chunked),
        "param_defer_threshold": pa.array(defer, mask=defer_null),
        "param_block_size": pa.array(block),
        "param_driven": pa.array(driven, pa.string()),
        "param_push": pa.array(push, pa.string(), mask=~worklist),
        "param_donate_threshold": pa.array(donate, mask=donate_null),
        "param_variable_grid": pa.array(variable_grid, mask=~worklist),
        "param_switch_to_topology": pa.array(to_topology, mask=~temporal),
        "param_switch_to_data": pa.array(to_data, mask=~temporal),
        "param_partition": pa.array(partition, mask=~spatial),
        "param_unroll": pa.array(unroll, mask=~topology),
        "param_adaptive_min_w": pa.array(min_w, mask=~is_adaptive),
        "param_adaptive_max_w": pa.array(max_w, mask=~is_adaptive),
        "param_adaptive_stat": pa.array(stat, pa.string(), mask=~is_adaptive),
    }
    for name, value in metrics.items():
        columns[name] = pa.array(np.asarray(value, float), mask=~ok)
    old = rng.random(n) < legacy  # an older writer: knobs at their defaults left NULL
    for name, default in (("param_chunk", 1), ("param_distribution", "static"),
                          ("param_block_size", 256), ("param_unroll", 1),
                          ("param_driven", "topology")):
        column = columns[name]
        drop = pa.array(old & np.asarray(pc.equal(column, default).fill_null(False)))
        columns[name] = pc.if_else(drop, pa.nulls(n, column.type), column)
    # columns the schema gained after this generator was written (device_digest, newer
    # knobs, repeats): null, as an older writer's rows hold them
    return pa.table({f.name: (columns[f.name].cast(f.type) if f.name in columns
                              else pa.nulls(n, f.type)) for f in schema}, schema=schema)


def _const(value: str, n: int) -> pa.Array:
    return pa.array([value] * n, pa.string())


# -- timing ---------------------------------------------------------------------------------
def time_verb(argv: list[str], repeat: int) -> tuple[list[float], list[float], str]:
    """Wall and CPU times (every thread of this process) of ``warpsweep ARGV`` run in this
    process, a new connection each time; and its output."""
    times, cpu, text = [], [], ""
    for _ in range(repeat):
        buf = io.StringIO()
        start, start_cpu = time.perf_counter(), time.process_time()
        with redirect_stdout(buf):
            rc = cli.main(argv)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        text = buf.getvalue()
        if rc != 0:
            sys.exit(f"warpsweep {' '.join(argv)} exited {rc}:\n{text}")
    return times, cpu, text


def fraction_arg(text: str) -> float:
    """An argparse type: a number from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 1, got {text!r}") from None
    if not 0 <= value <= 1:  # nan too
        raise argparse.ArgumentTypeError(f"must be from 0 to 1, got {text}")
    return value


def main() -> int:
    """Write the results (unless --dir holds them already), time the verbs, hold the floor."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=positive_arg, default=1_000_000,
                        help="trial rows (default 1e6)")
    parser.add_argument("--graphs", type=positive_arg, default=25,
                        help="graphs; studies = graphs x 4 algorithms x 3 devices (default 25)")
    parser.add_argument("--dir", type=Path, default=None,
                        help="results directory to write (or reuse, if it has trial files); "
                             "default a temp dir, removed at the end")
    parser.add_argument("--repeat", type=positive_arg, default=3, help="runs per verb (default 3)")
    parser.add_argument("--seed", type=seed_arg, default=0)
    parser.add_argument("--legacy", type=fraction_arg, default=0.0, metavar="F",
                        help="fraction of rows written as an older writer did, knobs at their "
                             "defaults left NULL (exercises the canonical keys; default 0)")
    parser.add_argument("--keep", action="store_true", help="keep the temp directory")
    args = parser.parse_args()
    if args.dir is not None and args.dir.exists() and not args.dir.is_dir():
        parser.error(f"--dir {str(args.dir)!r} is a file, not a directory")
    root = args.dir or Path(tempfile.mkdtemp(prefix="bench-query-"))
    try:
        if any((root / TRIALS).rglob("*.parquet")) if (root / TRIALS).exists() else False:
            print(f"reusing {root}")
        else:
            start = time.perf_counter()
            studies = write_results(root, args.rows, args.graphs, args.seed, args.legacy)
            print(f"wrote {args.rows:,} trial rows, {studies} studies, to {root} in "
                  f"{time.perf_counter() - start:.1f} s")
        return _run(root, args.repeat)
    finally:
        if args.dir is None and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        elif args.keep:
            print(f"kept {root}")


def _run(root: Path, repeat: int) -> int:
    cli.build_parser()  # imports every verb module once, outside the timings
    res = ["--results", str(root)]
    cases = [
        ("query (group by)", ["query", GROUP_BY_SQL, *res]),
        ("query (count)", ["query", "SELECT count(*) AS rows FROM trials", *res]),
        ("best (for information)", ["best", *res]),
        ("pareto time_us,transactions (info)", ["pareto", "--objectives",
                                                "time_us,transactions", *res]),
        ("effect w (for information)", ["effect", "w", *res]),
    ]
    missed = []
    print(f"\n{'verb':<34}{'median s':>10}{'min s':>9}{'max s':>9}{'CPU s':>8}  "
          f"floor {FLOOR_S:.0f} s")
    for name, argv in cases:
        times, cpu, text = time_verb(argv, repeat)
        median = statistics.median(times)
        held = name.startswith("query")  # the floor: a query over 1M trial rows
        verdict = "" if not held else ("ok" if median < FLOOR_S else "MISSED")
        if verdict == "MISSED":
            missed.append(name)
        print(f"{name:<34}{median:>10.3f}{min(times):>9.3f}{max(times):>9.3f}"
              f"{statistics.median(cpu):>8.2f}  {verdict}")
        if name == "query (count)":
            print(f"{'':<34}rows counted: {text.splitlines()[2].strip()}")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "tuner.cli", "query", GROUP_BY_SQL, *res],
                          capture_output=True, text=True, check=False)
    print(f"{'whole command (new process)':<34}{time.perf_counter() - start:>10.3f}"
          f"{'':>26}  interpreter start and imports included, for information")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"(CPU s: every thread of the process; {os.cpu_count()} CPUs, load average "
          f"{load:.1f} at the end)")
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
        return 1
    if missed:
        print(f"\nfloor missed ({FLOOR_S} s): {', '.join(missed)}")
        return 1
    print(f"\nevery query answered in under {FLOOR_S} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
