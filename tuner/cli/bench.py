"""``warpsweep bench trends``: the papers' load-balancing trends rerun on the simulator.

The experiments are benchmarks, not part of the tuner: they live in the source checkout's
``bench/`` (``bench/paper_trends.py`` and ``bench/trends/``), which this verb runs by path. An
installed wheel has no ``bench/``; there the verb says so in one line and exits non-zero.
"""

from __future__ import annotations

import argparse
import runpy
from pathlib import Path

from simulator.errors import ConfigError

# the checkout's entry point: <repo>/bench/paper_trends.py beside <repo>/tuner/cli/bench.py
TRENDS_SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "paper_trends.py"


def _trends_module() -> dict | None:
    """The globals of ``bench/paper_trends.py`` (its ``add_arguments`` and ``run_args``), or
    None when this is no source checkout."""
    if not TRENDS_SCRIPT.is_file():
        return None
    return runpy.run_path(str(TRENDS_SCRIPT), run_name="warpsweep_bench_trends")


class _NoCheckout(argparse.ArgumentParser):
    """The ``trends`` parser where ``bench/`` is absent: takes any arguments, so that every use
    of the verb gets the one-line reason rather than a complaint about its options."""

    def parse_known_args(self, args=None, namespace=None):
        return argparse.Namespace(run=_no_checkout), []


def _no_checkout(args: argparse.Namespace) -> int:
    raise ConfigError(f"`bench trends` runs the source checkout's bench/paper_trends.py, and "
                      f"{TRENDS_SCRIPT} is absent (an installed package has no bench/)")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``bench`` verb and its ``trends`` subcommand."""
    bench = subparsers.add_parser(
        "bench",
        help="benchmarks of the simulator against the papers",
        description="Benchmarks that rerun the papers' experiments on the simulator.",
        epilog="examples:\n  warpsweep bench trends --quick\n"
               "  warpsweep bench trends --device c2050 --json trends.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    module = _trends_module()
    sub = bench.add_subparsers(dest="bench_command", required=True, metavar="COMMAND",
                               parser_class=argparse.ArgumentParser if module else _NoCheckout)
    trends = sub.add_parser(
        "trends",
        help="rerun the papers' comparisons and print claim, figure and agree, disagree or "
             "untested",
        description="Rerun the comparisons of Hong et al. (Fig. 7-8), Cheng et al. (Fig. 5-6), "
        "Nasre et al. (Fig. 5, 8, 9, 11, 12) and the WER slides on graphs shaped like the "
        "papers', and print each claim beside the simulator's figure and verdict.",
        epilog="examples:\n  warpsweep bench trends --quick\n"
               "  warpsweep bench trends --only hong --device gtx260",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    if module is None:
        return
    module["add_arguments"](trends)
    trends.set_defaults(run=module["run_args"])
