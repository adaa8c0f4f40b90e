"""Whether the working tree's simulator gives the figures an earlier revision's gives.

A speed change must not move a figure. Over a matrix of graphs, algorithms and strategies
(``--quick``: small generated graphs only) the revision's ``simulator`` (checked out in a
temporary git worktree) and the working tree's simulate each case; every metric of
``Result.to_dict`` and every traced per-iteration array must agree within ``--rtol``
(absolute 1e-9 besides), and a case one of them refuses must be refused by both alike.
Prints each case that differs and what differs, then the count; exits 1 if any differs.

Run: python bench/figures_unchanged.py --base REV [--quick] [--rtol 1e-9]
e.g. python bench/figures_unchanged.py --base HEAD~2
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.revisions import old_and_new  # noqa: E402
from tuner.memory import keep_freed_memory  # noqa: E402

GRAPHS = "../shared/graphs"
# graphs (random weights where SSSP runs) and the algorithms each is simulated under
CASES = [
    ("rmat:scale=12,ef=8,seed=3,weights=random", ("bfs", "sssp", "pagerank", "cc")),
    ("road:rows=60,cols=70,seed=4,weights=random", ("bfs", "sssp", "cc")),
    (f"file:{GRAPHS}/p2p-Gnutella08.txt.gz,weights=random", ("bfs", "sssp", "pagerank", "cc")),
    (f"file:{GRAPHS}/email-Enron.txt.gz,weights=random", ("bfs", "sssp")),
    (f"file:{GRAPHS}/ca-AstroPh.txt.gz", ("bfs", "cc")),
    (f"file:{GRAPHS}/USA-road-NY.gr.gz", ("bfs",)),
    (f"file:{GRAPHS}/USA-road-NY.gr.gz,weights=random", ("sssp",)),
    ("rmat:scale=15,ef=16,seed=2,weights=random", ("bfs", "sssp")),
]
QUICK_CASES = [
    ("rmat:scale=9,ef=6,seed=3,weights=random", ("bfs", "sssp", "pagerank", "cc")),
    ("road:rows=24,cols=30,seed=4,weights=random", ("bfs", "sssp", "cc")),
]
STRATEGIES = [
    "mapping=thread", "mapping=vwarp,w=2", "mapping=vwarp,w=8", "mapping=vwarp,w=32",
    "mapping=vwarp,w=8,chunk=64,distribution=dynamic", "mapping=vwarp,w=4,chunk=3",
    "mapping=thread,defer_threshold=64", "mapping=vwarp,w=8,defer_threshold=16",
    "mapping=wer", "mapping=wer+", "mapping=adaptive", "mapping=thread,donate_threshold=4",
    "mapping=thread,unroll=4", "mapping=vwarp,w=16,block_size=128",
    "mapping=vwarp,w=8,driven=data,push=chunked", "driven=data", "driven=data,push=prefix",
    "mapping=vwarp,w=32,driven=data,variable_grid=False",
    "driven=temporal,switch_to_topology=0.1",
    "driven=temporal,switch_to_topology=0.05,switch_to_data=0.01",
    "driven=spatial,partition=16",
    "mapping=vwarp,w=4,driven=spatial,partition=4,push=chunked",
    "mapping=wer+,driven=data", "mapping=adaptive,driven=temporal",
    "driven=data,relax=store", "mapping=vwarp,w=32,driven=data,push=block,dedup=true,relax=store",
    "mapping=vwarp,w=8,driven=temporal,switch_on=edges,push=block,dedup=true",
]


def differences(old, new, rtol: float = 1e-9) -> list[str]:
    """What differs between two simulations' outcomes: each a ``Result`` (with its trace) or
    the exception that refused the case; the names of the metrics and trace arrays."""
    if isinstance(old, Exception) or isinstance(new, Exception):
        # each package has its own exception classes: alike by name and message
        same = type(old).__name__ == type(new).__name__ and str(old) == str(new)
        return [] if same else ["refusal"]
    out = [name for name, value in old.to_dict().items()
           if not np.isclose(value, getattr(new, name), rtol=rtol, atol=1e-9)]
    old_trace, new_trace = old.trace or {}, new.trace or {}
    for name in sorted(set(old_trace) | set(new_trace)):
        a, b = old_trace.get(name), new_trace.get(name)
        if a is None:  # an array the base did not trace: added, no figure changed
            continue
        if b is None:
            out.append(f"trace[{name}]")
            continue
        a, b = np.asarray(a), np.asarray(b)
        numeric = a.dtype.kind in "biuf" and b.dtype.kind in "biuf"
        if a.shape != b.shape or not (np.allclose(a, b, rtol=rtol, atol=1e-9) if numeric
                                      else np.array_equal(a, b)):
            out.append(f"trace[{name}]")
    return out


def _outcome(package, graph, algorithm, strategy, device, functional):
    try:
        return package.simulate(graph, algorithm, strategy, device, functional=functional,
                                trace=True)
    except Exception as error:  # noqa: BLE001 -- a refusal is an outcome to compare
        return error


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the git revision to compare against")
    parser.add_argument("--quick", action="store_true",
                        help="small generated graphs only (seconds, not minutes)")
    parser.add_argument("--device", default="h100")
    parser.add_argument("--rtol", type=float, default=1e-9)
    args = parser.parse_args()
    keep_freed_memory()
    cases = QUICK_CASES if args.quick else CASES
    started = time.perf_counter()
    count = differing = 0
    with old_and_new(args.base, "figures_unchanged") as packages:
        for spec, algorithms in cases:
            graph = packages["new"].load_graph(spec)
            for algorithm in algorithms:
                functional = {name: package.functional_run(graph, algorithm)
                              for name, package in packages.items()}
                for strategy in STRATEGIES:
                    old, new = (_outcome(package, graph, algorithm, strategy, args.device,
                                         functional[name])
                                for name, package in packages.items())
                    count += 1
                    what = differences(old, new, args.rtol)
                    if what:
                        differing += 1
                        print(f"DIFFERS {spec} {algorithm} {strategy}: {', '.join(what)}",
                              flush=True)
    print(f"{count} cases, {differing} differ (old = {args.base}, new = working tree; "
          f"{time.perf_counter() - started:.0f} s)")
    sys.exit(1 if differing else 0)


if __name__ == "__main__":
    main()
