"""`warpsweep measure`: one configuration's real CUDA kernels on the GPU, checked against the
functional run, beside the simulator's prediction (tuner/measure; needs the gpu extra)."""

from __future__ import annotations

import argparse
import json
import sys
import time

from simulator import ALGORITHMS
from tuner.cli.args import OneValue
from tuner.cli.args import add_config
from tuner.cli.args import add_json
from tuner.cli.args import config_text
from tuner.measure.measure import NoGpu

EXAMPLES = """examples:
  warpsweep measure --graph rmat:scale=16,weights=random,seed=1 --algo sssp \\
      --config mapping=vwarp,w=8,driven=data,push=atomic
  warpsweep measure --graph file:../shared/graphs/USA-road-NY.gr.gz --algo cc \\
      --config mapping=thread,driven=temporal,switch_to_topology=0.05 --json
  warpsweep measure --graph rmat:scale=18 --algo pagerank --config mapping=vwarp,w=32 --reps 9

Runs on NVIDIA GPUs with CuPy (pip install -e ".[gpu]"). Not implemented on the GPU (one-line
error; docs/measure.md): mapping=adaptive; policy=FILE; donate_threshold in PageRank's
worklists or driven=spatial; PageRank under wer / wer+ or hybrids; wer / wer+ with a worklist,
dynamic distribution or deferral; driven=spatial with push other than atomic; unroll > 1;
changed_flag=warp; push=chunked, prefix; relax=store; switch_on=edges; precheck=false;
variable_grid=false; worklists with chunk > 1, dynamic distribution or deferral; deferral,
dynamic distribution or the claimed variant in the temporal hybrid; the claimed variant in the
spatial hybrid.
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `measure` verb."""
    p = sub.add_parser(
        "measure", help="run one configuration's CUDA kernels on the GPU, beside the simulator",
        description="Run one configuration's real CUDA kernels on the GPU (CuPy), check the "
                    "answer against the functional run, and print kernel time, whole time "
                    "and the counters the simulator predicts beside its prediction.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--graph", required=True, metavar="SPEC", action=OneValue,
                   help="graph spec")
    p.add_argument("--algo", required=True, choices=ALGORITHMS)
    add_config(p, "strategy knobs, repeatable")
    p.add_argument("--variant", default=None,
                   help="how a push=atomic worklist pushes: plain (default; the compiler "
                        "aggregates), warp_aggregated (ballot, one atomic per warp), claimed "
                        "(BFS: atomicCAS first, no duplicates)")
    p.add_argument("--device-index", type=int, default=0, help="CUDA device (default 0)")
    p.add_argument("--reps", type=int, default=5,
                   help="timed runs of each kind: whole, per kernel (default 5)")
    p.add_argument("--source", type=int, default=None, help="BFS/SSSP source vertex")
    p.add_argument("--sim-device", default="h100",
                   help="the simulator's device for the prediction: a preset or a .toml "
                        "(e.g. bench/gpu/results/h100.toml); 'none' skips the prediction")
    add_json(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Refuse what cannot run (config, graph and source, then GPU), measure, predict, print."""
    from simulator.device import get_device
    from simulator.functional import checked_source
    from simulator.load import load_graph
    from simulator.simulate import check_fits_device
    from simulator.strategy import Strategy
    from tuner.measure.measure import PredictionBeside
    from tuner.measure.measure import Session
    from tuner.measure.measure import prepare
    from tuner.measure.measure import require_gpu
    from tuner.measure.plan import plan_for

    if args.reps < 1:
        print("warpsweep measure: --reps must be at least 1", file=sys.stderr)
        return 2
    if args.device_index < 0:
        print("warpsweep measure: --device-index must be 0 or more", file=sys.stderr)
        return 2
    strategy = Strategy.parse(config_text(args.config))
    plan = plan_for(args.algo, strategy, args.variant)
    if args.sim_device.lower() != "none":  # a prediction it cannot make, before the GPU
        check_fits_device(strategy, args.algo, get_device(args.sim_device))
    # what is wrong with the graph or the source is named before a missing GPU is
    t0 = time.perf_counter()
    graph = load_graph(args.graph)
    load_s = time.perf_counter() - t0
    checked_source(graph, args.algo, args.source)
    try:
        require_gpu(args.device_index)
    except NoGpu as exc:
        print(f"warpsweep measure: {exc}", file=sys.stderr)
        return 1
    predicting = (PredictionBeside(graph, args.algo, args.source, strategy, args.sim_device)
                  if args.sim_device.lower() != "none" else None)
    prepared = prepare(graph, args.graph, args.algo, args.source)
    prepared.seconds = {"load": load_s, **prepared.seconds}
    result = Session(args.device_index).measure(prepared, args.algo, plan, str(strategy),
                                                args.reps)
    if predicting is not None:
        predicting.add_to(result, prepared)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(result.to_text())
    return 0 if result.correct else 3


def main(argv: list[str] | None = None) -> int:
    """`python -m tuner.cli.measure ...`: the verb alone, for a GPU machine that has CuPy but
    not the tuner's other dependencies (Optuna, Ray, DuckDB)."""
    from simulator.errors import WarpsweepError

    parser = argparse.ArgumentParser(prog="warpsweep")
    register(parser.add_subparsers(dest="verb", required=True))
    args = parser.parse_args(["measure", *(sys.argv[1:] if argv is None else argv)])
    try:
        return args.run(args)
    except WarpsweepError as exc:
        print(f"warpsweep: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
