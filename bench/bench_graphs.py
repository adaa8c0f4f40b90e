"""Graph input speed: RMAT generation and the largest shared graph, parsed and from the cache.

Floors (issue 2): rmat:scale=20,ef=16 generated and normalised in < 10 s on one core with peak
memory < 3 GB; the largest graph of ../shared/graphs loaded from its gzip file in < 10 s and
from the cache in < 1 s. Every measurement runs in a fresh process pinned to one core, with a
private cache directory; peak memory is that process's maximum resident set size.
Run: python bench/bench_graphs.py [--rmat SPEC] [--file PATH] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if sys.path[:1] != [str(REPO)]:
    sys.path.insert(0, str(REPO))

from simulator.errors import GraphError  # noqa: E402
from simulator.errors import WarpsweepError  # noqa: E402
from simulator.graph_spec import parse_spec  # noqa: E402
from tuner.cli.args import positive_arg  # noqa: E402

SHARED_GRAPHS = REPO.parent / "shared" / "graphs"


def child(spec: str, cache: bool) -> None:
    """In a fresh process: load ``spec`` once and print its time and peak memory as JSON."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    from simulator.load import load_graph

    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    try:
        graph = load_graph(spec, cache=cache)
    except WarpsweepError as exc:  # a file that is no graph: the parent says it in one line
        print(exc, file=sys.stderr)
        sys.exit(2)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": seconds, "peak_mb": peak / 1024, "import_mb": base / 1024,
                      "n": graph.n, "m": graph.m}))


def measure(spec: str, cache: bool, cache_dir: str) -> dict:
    """Run :func:`child` in a subprocess and return its figures."""
    env = {**os.environ, "WARPSWEEP_CACHE_DIR": cache_dir, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, __file__, "--child", spec, *(["--cache"] if cache else [])],
        capture_output=True, text=True, env=env, check=False,
    )
    if done.returncode == 2:
        print(f"bench_graphs.py: error: {done.stderr.strip()}", file=sys.stderr)
        sys.exit(2)
    if done.returncode != 0:
        sys.exit(f"benchmark child failed for {spec}:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def largest_shared_graph() -> Path:
    """The biggest file of ../shared/graphs (by size)."""
    files = [p for p in SHARED_GRAPHS.glob("*.gz")]
    if not files:
        sys.exit(f"no graphs under {SHARED_GRAPHS}")
    return max(files, key=lambda p: p.stat().st_size)


def main() -> None:
    """Measure, print a table, exit 1 if a floor is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rmat", default="rmat:scale=20,ef=16", metavar="SPEC",
                        help="the generated graph's spec (default rmat:scale=20,ef=16)")
    parser.add_argument("--file", type=Path, default=None, help="default: largest shared graph")
    parser.add_argument("--repeat", type=positive_arg, default=1,
                        help="runs per row (best is shown)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--cache", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.cache)
        return
    path = args.file or largest_shared_graph()
    file_spec = f"file:{path}"
    try:  # bad input as one line here, not as a child's traceback
        parse_spec(args.rmat)
        if not path.is_file():
            raise GraphError(f"--file {str(path)!r}: no such file")
    except WarpsweepError as exc:
        parser.error(str(exc))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        def best(spec: str, cache: bool) -> dict:
            runs = [measure(spec, cache, tmp) for _ in range(max(1, args.repeat))]
            return min(runs, key=lambda r: r["seconds"])

        gen = best(args.rmat, False)
        rows.append((f"{args.rmat} generate+normalise", gen, 10.0, 3072.0))
        parsed = best(file_spec, False)
        rows.append((f"{path.name} parse from gzip (no cache)", parsed, 10.0, None))
        measure(file_spec, True, tmp)  # fill the cache
        cached = best(file_spec, True)
        rows.append((f"{path.name} from the cache", cached, 1.0, None))
    print(f"{'measurement':58s} {'n':>10s} {'m':>11s} {'seconds':>8s} {'peak MB':>8s}  floor")
    ok = True
    for label, r, floor_s, floor_mb in rows:
        passed = r["seconds"] < floor_s and (floor_mb is None or r["peak_mb"] < floor_mb)
        ok &= passed
        floor = f"< {floor_s:g} s" + (f", < {floor_mb / 1024:g} GB" if floor_mb else "")
        print(f"{label:58s} {r['n']:>10,} {r['m']:>11,} {r['seconds']:8.2f} "
              f"{r['peak_mb']:8.0f}  {floor} {'ok' if passed else 'MISSED'}")
    print(f"(one core; peak MB is the process's max RSS, {rows[0][1]['import_mb']:.0f} MB of it "
          "is the interpreter and imports)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
