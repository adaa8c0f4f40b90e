"""``warpsweep bench trends``: the papers' load-balancing trends rerun on the simulator."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``bench`` verb and its ``trends`` subcommand."""
    from tuner import paper_trends

    bench = subparsers.add_parser(
        "bench",
        help="benchmarks of the simulator against the papers",
        description="Benchmarks that rerun the papers' experiments on the simulator.",
        epilog="examples:\n  warpsweep bench trends --quick\n"
               "  warpsweep bench trends --device c2050 --json trends.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = bench.add_subparsers(dest="bench_command", required=True, metavar="COMMAND")
    trends = sub.add_parser(
        "trends",
        help="rerun the papers' comparisons and print claim, figure and agree/disagree",
        description="Rerun the comparisons of Hong et al. (Fig. 7-8), Cheng et al. (Fig. 5-6), "
        "Nasre et al. (Fig. 5, 8, 9, 11, 12) and the WER slides on graphs shaped like the "
        "papers', and print each claim beside the simulator's figure and verdict.",
        epilog="examples:\n  warpsweep bench trends --quick\n"
               "  warpsweep bench trends --only hong --device gtx260",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    paper_trends.add_arguments(trends)
    trends.set_defaults(run=paper_trends.run_args)
