"""The ``tune`` and ``sweep`` verbs of the ``warpsweep`` command."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from search_spaces.loader import available_spaces
from tuner.plan import RunResult
from tuner.plan import check_spec
from tuner.plan import load_spaces
from tuner.plan import run_studies
from tuner.progress import study_table
from tuner.progress import sweep_table
from tuner.samplers import SAMPLERS
from tuner.study import Objective
from tuner.study import StudySpec
from tuner.sweep import load_sweep

DEFAULT_RESULTS = "./warpsweep-results"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``tune`` and ``sweep`` to the ``warpsweep`` parser."""
    tune = subparsers.add_parser(
        "tune", help="tune one graph's load-balancing knobs with Optuna",
        description="Tune the load-balancing strategy of one (graph, algorithm, device) over a "
                    "search space; resumes the study if it exists in --results.",
    )
    tune.add_argument("--graph", required=True, metavar="SPEC",
                      help="graph spec, e.g. rmat:scale=14,seed=1 or file:PATH")
    tune.add_argument("--algo", default="bfs", help="bfs, sssp, pagerank or cc (default bfs)")
    tune.add_argument("--device", default="h100", help="device model (default h100)")
    tune.add_argument("--space", default="vwarp",
                      help=f"search space name ({', '.join(available_spaces())}) or a YAML "
                           "file (default vwarp)")
    tune.add_argument("--trials", type=int, default=None,
                      help="trials in the study (default 100; sampler grid: the whole grid)")
    tune.add_argument("--sampler", default="tpe",
                      help=f"{', '.join(SAMPLERS)} (default tpe)")
    tune.add_argument("--objective", default="time_us",
                      help="metric[:min|:max], or several comma-separated for a Pareto front "
                           "(default time_us)")
    tune.add_argument("--sources", type=int, default=4,
                      help="BFS/SSSP sources averaged per trial (default 4)")
    tune.add_argument("--seed", type=int, default=0, help="sampler and source seed (default 0)")
    tune.add_argument("--top", type=int, default=5, help="rows in the final table (default 5)")
    tune.add_argument("--no-references", dest="references", action="store_false",
                      help="skip the thread and fixed-vwarp baseline runs")
    _common(tune)
    tune.set_defaults(run=run_tune)

    sweep = subparsers.add_parser(
        "sweep", help="run a sweep file: one study per graph x algorithm x device x space",
        description="Run every study of a sweep file concurrently over the workers; resumes "
                    "finished and interrupted studies from --results.",
    )
    sweep.add_argument("sweep_file", metavar="SWEEP.yaml", help="the sweep file")
    _common(sweep)
    sweep.set_defaults(run=run_sweep)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=int, default=None,
                   help="evaluations in flight (default: every CPU of the Ray cluster; "
                        "0: in this process, without Ray)")
    p.add_argument("--address", default=None,
                   help="Ray cluster to use: auto, HOST:PORT or ray://HOST:10001 "
                        "(default: start a local one)")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="stop starting trials after S seconds")
    p.add_argument("--results", default=DEFAULT_RESULTS, metavar="DIR",
                   help=f"results directory (default {DEFAULT_RESULTS})")
    bar = p.add_mutually_exclusive_group()
    bar.add_argument("--progress", dest="progress", action="store_true", default=None,
                     help="show the progress bar (default: when stderr is a terminal)")
    bar.add_argument("--no-progress", dest="progress", action="store_false")


def _progress(args: argparse.Namespace) -> bool:
    return sys.stderr.isatty() if args.progress is None else args.progress


def run_tune(args: argparse.Namespace) -> int:
    """``warpsweep tune``: one study, with its table of best configurations."""
    spec = check_spec(StudySpec(
        graph=args.graph, algorithm=args.algo, device=args.device, space=args.space,
        trials=args.trials, sampler=args.sampler, objective=Objective.parse(args.objective),
        sources=args.sources, seed=args.seed, references=args.references,
    ))
    spaces = load_spaces([spec])
    result = run_studies([spec], spaces, args.results, workers=args.workers,
                         address=args.address, timeout=args.timeout,
                         progress=_progress(args), desc="tune")
    for summary in result.summaries:
        summary.best = summary.best[: max(args.top, 0)]
        study_table(summary)
    _footer(result, args.results)
    return 0 if any(s.best for s in result.summaries) else 1


def run_sweep(args: argparse.Namespace) -> int:
    """``warpsweep sweep``: every study of the file, then a summary line per study."""
    specs = [check_spec(s) for s in load_sweep(args.sweep_file)]
    spaces = load_spaces(specs)
    result = run_studies(specs, spaces, args.results, workers=args.workers,
                         address=args.address, timeout=args.timeout,
                         progress=_progress(args), desc=Path(args.sweep_file).stem)
    sweep_table(result.summaries)
    _footer(result, args.results)
    return 0 if any(s.best for s in result.summaries) else 1


def _footer(result: RunResult, results: str) -> None:
    st = result.stats
    rate = st.evaluations / st.elapsed_s if st.elapsed_s else 0.0
    print(f"\n{st.evaluations} evaluations in {st.elapsed_s:.1f} s ({rate:.1f}/s, "
          f"{result.executor}, workers busy {100 * st.busy_fraction:.0f}%); results in "
          f"{results}/trials and {results}/graphs")
