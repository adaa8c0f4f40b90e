"""`warpsweep simulate`: one simulation with its full metric report."""

from __future__ import annotations

import argparse
import json

import numpy as np

from simulator import ALGORITHMS
from simulator import DEVICES
from simulator import simulate
from simulator.simulate import as_strategy
from simulator.sizes import max_memory
from simulator.strategy import Strategy
from tuner.cli.args import OneValue
from tuner.cli.args import add_config
from tuner.cli.args import add_json
from tuner.cli.args import add_max_memory
from tuner.cli.args import config_text
from tuner.cli.args import knob_arg


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `simulate` verb."""
    p = sub.add_parser(
        "simulate",
        help="simulate one algorithm on one graph under one strategy",
        description="Simulate one algorithm on one graph under one load-balancing strategy.",
        epilog="examples:\n"
               "  warpsweep simulate --graph rmat:scale=16 --algo bfs --set mapping=vwarp "
               "--set w=8\n"
               "  warpsweep simulate --graph road:rows=256,weights=random --algo sssp "
               "--device c2050 --config driven=data,push=chunked --json\n"
               "  warpsweep simulate --graph rmat:scale=12 --algo bfs --trace\n"
               "  warpsweep simulate --graph rmat:scale=12,weights=random --algo sssp "
               "--config mapping=vwarp,w=32,driven=data --trace",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--graph", required=True, metavar="SPEC", action=OneValue,
                   help="graph spec, e.g. rmat:scale=14")
    p.add_argument("--algo", required=True, choices=ALGORITHMS)
    p.add_argument("--device", default="h100",
                   help=f"preset ({', '.join(DEVICES)}) or a .toml/.yaml device file")
    p.add_argument("--source", type=int, default=None,
                   help="BFS/SSSP source (default: the vertex of highest degree)")
    p.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE", type=knob_arg,
                   help=f"a strategy knob, repeatable; knobs: {', '.join(Strategy.KNOBS)}")
    add_config(p, "knobs as one comma-separated string, repeatable (combined with --set)")
    add_json(p, "print the metrics as JSON")
    add_max_memory(p)
    p.add_argument("--trace", action="store_true", help="also print the per-iteration trace")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Load the graph, simulate, print (under ``--max-memory``)."""
    with max_memory(args.max_memory):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from simulator import functional_run
    from simulator.device import device_digest
    from simulator.device import get_device
    from simulator.load import load_graph
    from tuner.env import git_commit
    from tuner.env import library_versions
    from tuner.env import simulator_digest
    from tuner.env import warpsweep_version

    strategy = as_strategy(config_text(args.config, args.set))
    graph = load_graph(args.graph)
    device = get_device(args.device)
    functional = functional_run(graph, args.algo, args.source)
    result = simulate(graph, args.algo, strategy, device, args.source,
                      functional=functional, trace=args.trace)
    report = {
        "graph": graph.spec or graph.name, "n": graph.n, "m": graph.m,
        "algorithm": args.algo, "source": functional.source, "device": result.device,
        "device_digest": device_digest(device), "strategy": result.strategy,
        **result.to_dict(),
        # what made these figures, to make them again
        "warpsweep_version": warpsweep_version(), "git_commit": git_commit(),
        "simulator": simulator_digest(), "libraries": library_versions(),
    }
    if args.trace:
        report["trace"] = {k: v.tolist() for k, v in result.trace.items()}
    if args.json:
        print(json.dumps(report, indent=2, default=_jsonable))
        return 0
    source = "" if functional.source is None else f" from {functional.source}"
    print(f"{report['graph']}  n={graph.n} m={graph.m}  {args.algo}{source} on {result.device}")
    print(f"strategy: {_strategy_line(strategy, args.algo)}")
    for name, value in result.to_dict().items():
        print(f"  {name:26s} {_fmt(value)}")
    if args.trace:
        print_trace(result.trace)
    return 0


def _strategy_line(strategy, algorithm: str) -> str:
    """The strategy as run: a policy's file and candidates, not the adaptive mapping's
    defaults it implies and never reads (``adaptive_stat=mean``, ``driven=topology``)."""
    if strategy.policy is None:
        return str(strategy)
    from simulator.policy import strategy_policy

    policy = strategy_policy(strategy, algorithm)
    scaled = "".join(f",{k}={getattr(strategy, k)}" for k in ("policy_t1", "policy_t2",
                                                               "policy_t3")
                     if getattr(strategy, k) is not None)
    candidates = "; ".join(f"{i}: {c}" for i, c in enumerate(policy.candidates))
    return (f"policy={strategy.policy}{scaled} (each iteration one of its candidates, the "
            f"trace's choice: {candidates})")


def print_trace(trace: dict) -> None:
    """One line per iteration: the form that ran it, its work, its pushes and duplicates,
    its time and what bounds it; then the time by form and by bound, which is why one
    strategy beats another on a graph."""
    print("  iter form      W   frontier   worklist  duplicates     pushed        edges"
          "     atomics     time_us   host_us  simd_eff  bound")
    t = trace
    for i in range(len(t["time_us"])):
        print(f"  {i:4d} {t['form'][i]:8s} {t['w'][i]:3d} {t['frontier'][i]:10.0f} "
              f"{t['worklist'][i]:10.0f} {t['duplicates'][i]:11.0f} {t['pushed'][i]:10.0f} "
              f"{t['edges'][i]:12.0f} {t['atomics'][i]:11.0f} {t['time_us'][i]:11.2f} "
              f"{t['host_us'][i]:9.2f} {t['simd_efficiency'][i]:9.3f}  {t['bound'][i]}")
    if "rule" in t:  # a policy run (policy=FILE): what it chose per iteration, and why
        print("  iter choice switch_us  rule that fired")
        for i in range(len(t["time_us"])):
            print(f"  {i:4d} {t['choice'][i]:6d} {t['switch_us'][i]:9.2f}  {t['rule'][i]}")
    total = float(t["time_us"].sum()) or 1.0
    # an iteration's whole time goes under its form, and under the part that bounds it most
    # (near ties decide that one): said so, beside the host's own share of the time
    for key, label in (("form", "time by form"),
                       ("bound", "time by what bounds each iteration most (its whole time)")):
        shares = ", ".join(
            f"{name} {t['time_us'][t[key] == name].sum() / total:.0%}"
            f" ({int((t[key] == name).sum())} it.)"
            for name in sorted(set(t[key].tolist()),
                               key=lambda v: -t["time_us"][t[key] == v].sum()))
        print(f"  {label}: {shares}")
    print(f"  host round trips: {float(t['host_us'].sum()) / total:.0%} of the time")
    dup = float(t["duplicates"].sum())
    items = float(t["worklist"].sum())
    if items:
        print(f"  worklist entries {items:,.0f}, duplicates {dup:,.0f} ({dup / items:.0%})")


def _fmt(value: float) -> str:
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:.4g}"


def _jsonable(value):
    return value.item() if isinstance(value, np.generic) else str(value)
