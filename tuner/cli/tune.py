"""The ``tune`` and ``sweep`` verbs of the ``warpsweep`` command."""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import sys

from search_spaces.loader import available_spaces
from simulator.errors import ConfigError
from tuner import api
from tuner.api import DEFAULT_RESULTS
from tuner.cli.args import OneValue
from tuner.cli.args import add_json
from tuner.cli.args import add_results
from tuner.cli.args import add_seed
from tuner.cli.args import positive_arg
from tuner.seeds import MAX_SEED
from tuner.tuning.progress import rate_text
from tuner.tuning.progress import study_table
from tuner.tuning.progress import sweep_table
from tuner.tuning.runner import OVERDUE_CANCEL_S
from tuner.tuning.samplers import SAMPLERS
from tuner.tuning.stopping import StoppedBeforeSaved
from tuner.tuning.stopping import sigterm_interrupts

TUNE_EXAMPLES = """examples:
  warpsweep tune --graph rmat:scale=14,seed=1 --algo bfs --trials 60
  warpsweep tune --graph road:rows=512,weights=random --algo sssp --space driven
  warpsweep tune --graph grid2d:rows=256,cols=256 --space vwarp --sampler grid --workers 0
  warpsweep tune --graph rmat:scale=12 --objective time_us,transactions --json > front.json
"""
SWEEP_EXAMPLES = """examples:
  warpsweep sweep sweeps/quick.yaml --results quick-results
  warpsweep sweep sweeps/paper.yaml --address auto --timeout 3600 --json > summary.json
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``tune`` and ``sweep`` to the ``warpsweep`` parser."""
    tune = subparsers.add_parser(
        "tune", help="tune one graph's load-balancing knobs with Optuna",
        description="Tune the load-balancing strategy of one (graph, algorithm, device) over a "
                    "search space; resumes the study if it exists in --results. The table "
                    "ranks every configuration evaluated, the baselines included.",
        epilog=TUNE_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    tune.add_argument("--graph", required=True, metavar="SPEC", action=OneValue,
                      help="graph spec, e.g. rmat:scale=14,seed=1 or file:PATH")
    tune.add_argument("--algo", default="bfs",
                      help="bfs, sssp, pagerank or cc (default bfs)")
    tune.add_argument("--device", default="h100",
                      help="device model (default h100)")
    tune.add_argument("--space", default="vwarp",
                      help=f"search space name ({', '.join(available_spaces())}) or a YAML "
                           "file (default vwarp); narrowed to the knobs the algorithm has")
    tune.add_argument("--trials", type=int, default=None,
                      help="distinct configurations to try (default 100; sampler grid: the "
                           "whole grid; never more than a finite space holds); a repeat the "
                           "sampler proposes is told its result and replaced by an untried "
                           "neighbour: never run again and not counted towards N (the "
                           "repeats column counts it)")
    tune.add_argument("--sampler", default="tpe",
                      help=f"{', '.join(SAMPLERS)} (default tpe)")
    tune.add_argument("--objective", default="time_us", metavar="M[:min|:max],...",
                      action=OneValue,
                      help="metric[:min|:max], or several comma-separated for a Pareto front "
                           "(default time_us)")
    tune.add_argument("--sources", type=int, default=4,
                      help="BFS/SSSP sources averaged per trial (default 4)")
    add_seed(tune, f"sampler and source seed, 0 to {MAX_SEED} (default 0)")
    tune.add_argument("--top", type=positive_arg, default=5,
                      help="rows in the final table, at least 1 (default 5)")
    tune.add_argument("--verify", type=positive_arg, default=None, metavar="K",
                      help="after the search, measure K of the best configurations (in "
                           "rank order, at most ceil(K/2) of one kernel family) and the "
                           "references on the GPU (warpsweep measure, the gpu extra): "
                           "RESULTS/measured/STUDY.parquet; without a GPU, one line says so")
    tune.add_argument("--no-references", dest="references", action="store_false",
                      help="skip the thread and fixed-vwarp baseline runs")
    _common(tune)
    tune.set_defaults(run=run_tune, verb="tune")

    sweep = subparsers.add_parser(
        "sweep", help="run a sweep file: one study per graph x algorithm x device x space",
        description="Run every study of a sweep file concurrently over the workers; resumes "
                    "finished and interrupted studies from --results.",
        epilog=SWEEP_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sweep.add_argument("sweep_file", metavar="SWEEP.yaml", help="the sweep file")
    _common(sweep)
    sweep.set_defaults(run=run_sweep, verb="sweep")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=int, default=None,
                   help="Ray tasks in flight (default: in this process, handing over to a "
                        "local Ray on every CPU once the work left exceeds 15 s; with "
                        "--address, every CPU of that cluster; 0: in this process, without "
                        "Ray)")
    p.add_argument("--deterministic", action="store_true",
                   help="with --workers N: tell the sampler each result in the order its trial "
                        "was asked, N in flight, so --seed gives the same trials on every run "
                        "(workers may wait on a slower earlier trial)")
    p.add_argument("--address", default=None,
                   help="Ray cluster to use: auto, HOST:PORT or ray://HOST:10001 "
                        "(default: start a local one)")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help=f"stop starting trials after S seconds; evaluations still running "
                        f"{OVERDUE_CANCEL_S:g} s later (or 10x the longest so far) are "
                        "cancelled and a resume runs them again")
    add_results(p)
    add_json(p, "print the summary as one JSON object instead of the tables")
    bar = p.add_mutually_exclusive_group()
    bar.add_argument("--progress", dest="progress", action="store_true", default=None,
                     help="show the progress bar (default: a bar when stderr is a terminal, "
                          "else a log line every few seconds)")
    bar.add_argument("--no-progress", dest="progress", action="store_false",
                     help="no bar and no log lines")
    talk = p.add_mutually_exclusive_group()
    talk.add_argument("-q", "--quiet", action="store_true",
                      help="no progress; print only each study's best configuration")
    talk.add_argument("-v", "--verbose", action="store_true",
                      help="also a line per finished run on stderr")


def progress_mode(args: argparse.Namespace) -> str:
    """bar, log or off, from --progress/--no-progress/--quiet and whether stderr is a tty."""
    if args.quiet:
        return "off"
    if args.progress is False:
        return "log" if args.verbose else "off"
    if args.progress:
        return "bar"
    return "bar" if sys.stderr.isatty() else "log"


# (option, attribute, default) of the options a resumed run repeats, in --help's order
TUNE_OPTIONS = (("--graph", "graph", None), ("--algo", "algo", "bfs"),
                ("--device", "device", "h100"), ("--space", "space", "vwarp"),
                ("--trials", "trials", None), ("--sampler", "sampler", "tpe"),
                ("--objective", "objective", "time_us"), ("--sources", "sources", 4),
                ("--seed", "seed", 0), ("--top", "top", 5), ("--verify", "verify", None))
COMMON_OPTIONS = (("--workers", "workers", None), ("--address", "address", None),
                  ("--timeout", "timeout", None), ("--results", "results", DEFAULT_RESULTS))
FLAGS = (("--no-references", "references", False), ("--deterministic", "deterministic", True),
         ("--json", "json", True), ("--progress", "progress", True),
         ("--no-progress", "progress", False), ("-q", "quiet", True), ("-v", "verbose", True))


def resume_command(args: argparse.Namespace) -> str:
    """The command that resumes an interrupted ``tune`` or ``sweep``: the same study, options
    as given (the results directory names where it is kept)."""
    words = ["warpsweep", args.verb]
    dashed = args.verb == "sweep" and args.sweep_file.startswith("-")
    if args.verb == "sweep" and not dashed:
        words.append(args.sweep_file)
    options = (TUNE_OPTIONS if args.verb == "tune" else ()) + COMMON_OPTIONS
    for flag, attr, default in options:
        value = getattr(args, attr, default)
        if value != default or flag in ("--graph", "--results"):
            # a value that begins with a dash is read as an option unless joined to its flag
            words += [f"{flag}={value}"] if str(value).startswith("-") else [flag, str(value)]
    for flag, attr, when in FLAGS:
        if getattr(args, attr, None) is when:
            words.append(flag)
    if dashed:  # after `--`, a name that begins with a dash is the sweep file's
        words += ["--", args.sweep_file]
    return shlex.join(words)


def _interrupted(args: argparse.Namespace, stop: KeyboardInterrupt) -> int:
    if isinstance(stop, StoppedBeforeSaved):
        print("warpsweep: interrupted again while saving; every finished evaluation is in the "
              "study journal, some perhaps not yet in the result rows (warpsweep check names "
              "them). The same command rebuilds them and resumes:\n  " + resume_command(args),
              file=sys.stderr)
    else:
        print("warpsweep: interrupted; every finished evaluation is saved. Resume with:\n  "
              + resume_command(args), file=sys.stderr)
    return 130


def run_tune(args: argparse.Namespace) -> int:
    """``warpsweep tune``: one study, with its table of best configurations (Ctrl-C or
    SIGTERM: the command that resumes it)."""
    try:
        with sigterm_interrupts():
            return _run_tune(args)
    except KeyboardInterrupt as stop:
        return _interrupted(args, stop)


def _refuse_in_process_on_a_cluster(args: argparse.Namespace) -> None:
    """``--workers 0`` with ``--address``: the API takes 0 for "uncapped" there (its default),
    so the pair had run on the cluster on every CPU (probe CLI)."""
    if args.workers == 0 and args.address is not None:
        raise ConfigError("--workers 0 runs in this process, without Ray; it cannot be "
                          "combined with --address (leave --workers out to use every CPU of "
                          "the cluster)")


def _run_tune(args: argparse.Namespace) -> int:
    _refuse_in_process_on_a_cluster(args)
    with _ray_lines_to_stderr():
        result = api.tune(
            args.graph, args.algo, args.device, args.space, trials=args.trials,
            sampler=args.sampler, objective=args.objective, sources=args.sources,
            seed=args.seed, references=args.references, results=args.results,
            workers=args.workers, address=args.address, timeout=args.timeout,
            progress=progress_mode(args), verbose=args.verbose,
            deterministic=args.deterministic,
        )
    verified, verify_doc = None, None
    if args.verify:  # (before the table keeps only --top rows)
        verified, verify_doc = _verify(args, result)
        wrong = sum(s["wrong"] for s in verify_doc["studies"])
    for summary in result.studies:
        summary.best = (summary.ranked or summary.best)[: args.top]
    _report(args, result, lambda: [study_table(s) for s in result.studies], verify_doc)
    if verified:
        print(verified, file=sys.stderr if args.json else sys.stdout)
    code = _exit_code(args, result)
    if args.verify and wrong and code == 0:  # every row saved; a kernel disagrees, as measure
        print(f"warpsweep: --verify {args.verify}: {wrong} configuration(s) answered wrong "
              "on the GPU (exit 3, as warpsweep measure's)", file=sys.stderr)
        return 3
    return code


def _verify(args: argparse.Namespace, result: api.TuneResult) -> tuple[str, dict]:
    """``--verify K``: the text after the tables, and what --json says of it (whether
    anything was measured: a skipped verification had looked like none asked for)."""
    from tuner.measure.verify import verification_table
    from tuner.measure.verify import verify_tune

    verifications, note = verify_tune(result.studies, args.verify, args.results)
    doc: dict = {"k": args.verify, "measured": note is None, "note": note, "studies": []}
    for v in verifications:
        winner, regret = v.winner(), v.pick_regret()
        doc["studies"].append({
            "study_key": v.study_key, "measured": len(v.measured()),
            "winner": winner.config if winner else None,
            "winner_measured_us": winner.measured_us if winner else None,
            "pick_regret": regret, "gpu_name": winner.gpu_name if winner else None,
            "wrong": len(v.wrong()), "note": v.note or None})
    text = note if note is not None else "\n".join(verification_table(v) for v in verifications)
    return text, doc


def run_sweep(args: argparse.Namespace) -> int:
    """``warpsweep sweep``: every study of the file, then a summary line per study (Ctrl-C:
    the command that resumes it)."""
    if not args.sweep_file.strip():  # Path("") is the working directory: "cannot read '.'"
        raise ConfigError("no sweep file given; e.g. warpsweep sweep sweeps/quick.yaml")
    try:
        with sigterm_interrupts():
            return _run_sweep(args)
    except KeyboardInterrupt as stop:
        return _interrupted(args, stop)


def _run_sweep(args: argparse.Namespace) -> int:
    _refuse_in_process_on_a_cluster(args)
    with _ray_lines_to_stderr():
        result = api.sweep(args.sweep_file, results=args.results, workers=args.workers,
                           address=args.address, timeout=args.timeout,
                           progress=progress_mode(args), verbose=args.verbose,
                           deterministic=args.deterministic)
    _report(args, result, lambda: sweep_table(result.studies))
    return _exit_code(args, result)


def _ray_lines_to_stderr() -> contextlib.AbstractContextManager:
    """While the studies run, what is printed to stdout goes to stderr: Ray's lines about its
    workers ("(raylet) A worker died ...") had broken --json's output and led the tables.
    stdout carries the answer alone, written after the run."""
    return contextlib.redirect_stdout(sys.stderr)


def _under(results: str, name: str) -> str:
    """``results``' table ``name`` as a location one can give: before a URI's query
    (``s3://b/r?endpoint_override=...`` had been printed with ``/trials`` after it)."""
    head, query, tail = results.partition("?") if "://" in results else (results, "", "")
    return f"{head.rstrip('/')}/{name}{query}{tail}"


def _exit_code(args: argparse.Namespace, result: api.TuneResult) -> int:
    """0 where every finished study found a best configuration; 1 where one did not (probe
    DEV: a sweep's device that runs none of its space had exited 0 beside the others), or
    where trials failed for the machine's sake (a worker died, memory ran out): named, with
    the command that tries them again."""
    stopped = [s for s in result.studies if not s.complete]
    waiting = result.not_begun  # a sweep's studies the stop came before
    if args.timeout is not None and (stopped or waiting):  # (the table says where; this, why)
        done, budget = sum(s.done for s in stopped), sum(s.budget for s in stopped)
        begun = (f"{done} of {budget} configurations of {len(stopped)} unfinished stud"
                 f"{'y' if len(stopped) == 1 else 'ies'}" if stopped else "")
        later = (f"{len(waiting)} stud{'y' if len(waiting) == 1 else 'ies'} not begun ("
                 + "; ".join(waiting[:3]) + ("; ..." if len(waiting) > 3 else "") + ")"
                 if waiting else "")
        print(f"warpsweep: stopped at --timeout {args.timeout:g} s with "
              f"{', and '.join(t for t in (begun, later) if t)}; every finished evaluation "
              f"is saved. Go on with:\n  {resume_command(args)}", file=sys.stderr)
    retry = sum(s.to_retry for s in result.studies)
    if retry:
        print(f"warpsweep: {retry} configuration{'s' if retry != 1 else ''} failed for the "
              "machine's sake, not their own (a worker died or hung past --timeout, or "
              "memory ran out: see their rows' error); every other finished evaluation is "
              "saved. Try them again with:"
              f"\n  {resume_command(args)}", file=sys.stderr)
        return 1
    failed = [s for s in result.studies if s.complete and not s.best]
    if failed and len(result.studies) > 1:  # a sweep: the others' success had hidden them
        print(f"warpsweep: {len(failed)} of {len(result.studies)} studies ran no configuration "
              f"successfully ({'; '.join(s.key for s in failed[:3])}"
              f"{'; ...' if len(failed) > 3 else ''}): their rows' error says why",
              file=sys.stderr)
        return 1
    return 0 if any(s.best for s in result.studies) else 1


def _report(args: argparse.Namespace, result: api.TuneResult, tables,
            verify: dict | None = None) -> None:
    if args.json:
        doc = result.to_json()
        if verify is not None:
            doc["verify"] = verify
        json.dump(doc, sys.stdout, indent=1, allow_nan=False, default=str)
        print()
    elif args.quiet:
        for s in result.studies:
            best = s.best[0] if s.best else None
            text = (f"{best.values[0]:.6g} " + " ".join(f"{k}={v}" for k, v in best.params.items())
                    if best else "no successful evaluation")
            stopped = "" if s.complete else f"  (stopped at {s.done}/{s.budget} configurations)"
            print(f"{s.key}: {text}{stopped}")
    else:
        tables()
        _footer(result)


def _footer(result: api.TuneResult) -> None:
    rate = result.evaluations / result.elapsed_s if result.elapsed_s else 0.0
    # simulated in this run: a configuration the simulator refuses, or one answered from the
    # study, counts as an evaluation of the study above but is not simulated
    n = result.evaluations
    print(f"\n{n} evaluation{'s' if n != 1 else ''} simulated in this run, "
          f"{result.elapsed_s:.1f} s "
          f"({rate_text(rate)}, {result.executor}, workers busy "
          f"{100 * result.busy_fraction:.0f}%); results in {_under(result.results, 'trials')} "
          f"and {_under(result.results, 'graphs')}")
