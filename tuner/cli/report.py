"""The ``report`` verb: PNG figures of a results directory and an index.html tying them."""

from __future__ import annotations

import argparse
import time

from tuner.analysis.report_data import Filters
from tuner.cli.args import add_filters
from tuner.cli.args import add_results
from tuner.results.damaged import scanning

DEFAULT_OUT = "./warpsweep-report"
EXAMPLES = """examples:
  warpsweep report --results quick-results --out quick-report
  warpsweep report --algo bfs --device h100 --graph rmat14-ef16-s1 --no-selector
  warpsweep report --results res --graph rmat:scale=14,seed=1 --graph road:rows=128,seed=1

Open OUT/index.html in a browser; the figures are PNGs under OUT/figures (replaced on each run).
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``report`` to the ``warpsweep`` parser."""
    p = subparsers.add_parser(
        "report", help="render figures of a results directory and an HTML page",
        description="Render the results as PNG figures (time over W, W x chunk heatmaps, defer "
                    "and hybrid switch-point curves, SIMD efficiency breakdown, each study's "
                    "optimisation history, the selector's evaluation) and one index.html that "
                    "ties them together with a summary table.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_results(p)
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                   help=f"report directory (default {DEFAULT_OUT})")
    add_filters(p, graph=None, algo="only this algorithm (default: all)",
                device="only this device: a preset's name or a device file (default: all)")
    p.add_argument("--graph", action="append", default=[], metavar="GRAPH",
                   help="only this graph: its name, id or spec (repeatable; default: all)")
    p.add_argument("--no-selector", dest="selector", action="store_false",
                   help="leave out the selector's evaluation (it trains models)")
    p.add_argument("--adaptation", action="store_true",
                   help="add per graph the per-iteration oracle's gap over the best constant "
                        "configuration (BFS, SSSP, CC; simulates the policy's candidate "
                        "configurations on each graph, cached)")
    p.set_defaults(run=run_report)


def run_report(args: argparse.Namespace) -> int:
    """``warpsweep report``: render and print where the page is."""
    from tuner.analysis.report import build_report

    start = time.perf_counter()
    from tuner.tuning.plan import filter_device

    with scanning(args.results):  # (a damaged file the device's check reads: named so)
        filters = Filters(args.algo, filter_device(args.device, args.results),
                          tuple(args.graph))
        report = build_report(args.results, args.out, filters, selector=args.selector,
                              adaptation=args.adaptation)
    skipped = len(report.skipped)
    took = time.perf_counter() - start
    selector = (f", of which {report.selector_s:.0f} s the selector's evaluation "
                "(--no-selector leaves it out)" if report.selector_s > 5 else "")
    print(f"{report.index} ({len(report.figures)} figures, {skipped} skipped, "
          f"{took:.1f} s{selector})")
    return 0
