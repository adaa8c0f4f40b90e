"""Tuner benchmarks: framework overhead per trial, worker scaling, TPE efficiency vs the grid.

Floors (issue 5):
- overhead: ask + dispatch + tell + Parquet row < 5 ms per trial with a trivial objective
  (issue 11: TPE under 5 ms a trial at 300 trials);
- scaling: 2 Ray workers >= 1.7x the throughput of 1 on rmat:scale=16 (busy fraction reported);
- efficiency: on the vwarp space, TPE gets within 2% of the grid optimum in <= 10% of the
  grid's evaluations (median over 6 graphs of different shapes).
- repeats (issue 42): on 60-trial vwarp TPE studies, proposals of tried configurations at
  most 10%, with a best at least as good as answering them from the study (the behaviour
  before), against the grid optimum, over several graphs and seeds.
- startup (issue 42): a default `warpsweep tune --graph rmat:scale=10 --trials 10` at most 2x
  the same run with `--workers 0` (median of the pairs, run alternately in one process).

Run from the repository root:
python bench/bench_tuner.py [overhead|scaling|efficiency|repeats|startup|all]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import optuna  # noqa: E402

from search_spaces.loader import load_space  # noqa: E402
from tuner.results.store import read_trials  # noqa: E402
from tuner.tuning.evaluate import GraphMeta  # noqa: E402
from tuner.tuning.evaluate import Outcome  # noqa: E402
from tuner.tuning.plan import check_spec  # noqa: E402
from tuner.tuning.plan import load_spaces  # noqa: E402
from tuner.tuning.plan import run_studies  # noqa: E402
from tuner.tuning.spec import StudySpec  # noqa: E402
from tuner.tuning.spec import planned_runs  # noqa: E402
from tuner.tuning.study import journal_storage  # noqa: E402

EFFICIENCY_GRAPHS = (
    "rmat:scale=12,seed=1",                          # power-law, skewed
    "random:n=4096,deg=16,seed=1",                   # uniform degrees
    "grid2d:rows=64",                                # 2D mesh, degree <= 4
    "road:rows=64,seed=1",                           # road-like, long diameter
    "file:../shared/graphs/p2p-Gnutella08.txt.gz",   # sparse peer-to-peer
    "file:../shared/graphs/ca-AstroPh.txt.gz",       # collaboration, dense and skewed
)


class TrivialBackend:
    """A backend whose evaluation costs nothing: measures the framework alone."""

    def prepare(self, spec, algorithm, n_sources, seed, want_features):
        meta = GraphMeta("trivial-0", spec, "trivial", "trivial", 1, 0, False, False, (0,))
        return None, {None: None}, meta

    def evaluate(self, graph, runs, algorithm, device, config):
        w = config.get("w", 1)
        chunk = config.get("chunk", 1)
        value = 100.0 + abs(math.log2(w) - 3) + abs(math.log2(chunk) - 6)
        return Outcome({"time_us": value}, {"time_us": (0.0, value, value)}, None, 0.0, "x")


def _spec(graph: str, trials: int, sampler: str, sources: int = 1, seed: int = 0,
          references: bool = False, space: str = "vwarp") -> StudySpec:
    return check_spec(StudySpec(graph=graph, algorithm="bfs", device="h100", space=space,
                                trials=trials, sampler=sampler, sources=sources, seed=seed,
                                references=references))


def overhead(trials: int, repeat: int) -> dict:
    """ms per Optuna trial (ask + dispatch + tell + Parquet row, repeats included: each is
    a sampler call) with a trivial objective, in-process and on Ray, on the vwarp space and
    the largest shipped one: over the whole study, and over its first ``trials`` trials
    (TPE's cost per trial grows with the trials before it). Each study runs ``repeat`` times
    and the fastest counts (this VM's speed drifts by tens of percent between runs). The
    vwarp space holds 725 configurations: TPE converges on the objective's optimum and asks
    for repeats, and the study may end on them before ``trials`` distinct ones."""
    out = {}
    runs = [(space, sampler, workers) for space in ("vwarp", "all")
            for sampler in ("random", "tpe") for workers in (0, 2)
            if space == "vwarp" or workers == 0]
    for space, sampler, workers in runs:
        whole, first = [], []
        for _ in range(repeat):
            with tempfile.TemporaryDirectory() as tmp:
                specs = [_spec("rmat:scale=4", trials, sampler, space=space)]
                spaces = load_spaces(specs)
                planned_runs(specs[0], spaces[specs[0].space_ref])  # the study's set-up, once
                result = run_studies(specs, spaces, tmp, workers=workers,
                                     backend=TrivialBackend())
                summary = result.summaries[0]
                asked = read_trials(tmp).num_rows  # one a trial (repeats are not trials)
                whole.append(1000 * result.stats.elapsed_s / asked)
                assert asked >= summary.done and (summary.done == trials or summary.exhausted)
                first.append(_first_trials_ms(Path(tmp), trials))
        key = f"{space}, {sampler}, {'in-process' if workers == 0 else 'Ray 2 workers'}"
        out[key] = {"ms_per_trial": round(min(whole), 2),
                    f"first_{trials}_ms": round(min(first), 2),
                    f"first_{trials}_ms_runs": [round(x, 2) for x in first]}
        ended = " (ended on repeats)" if summary.exhausted else ""
        print(f"overhead  {key:35s} {min(whole):6.2f} ms/trial  ({asked} trials asked, "
              f"{summary.done} distinct, {summary.duplicates} repeats{ended}); the first "
              f"{trials}: {min(first):6.2f} "
              f"ms/trial (best of {', '.join(f'{x:.2f}' for x in first)})", flush=True)
    return out


def _first_trials_ms(results: Path, count: int) -> float:
    """ms per Optuna trial over a study's first ``count`` trials (repeats included), from
    the start and completion times Optuna recorded in its journal."""
    (path,) = (results / "studies").glob("*.journal")
    storage, journal = journal_storage(path)
    try:
        study = optuna.load_study(study_name=path.stem, storage=storage)
        first = sorted(study.get_trials(deepcopy=False), key=lambda t: t.number)[:count]
    finally:
        journal.close()
    span = max(t.datetime_complete for t in first) - first[0].datetime_start
    return 1000 * span.total_seconds() / len(first)


def scaling(trials: int, sources: int, spec: str, sampler: str, repeat: int) -> dict:
    """Evaluations per second with 1 and 2 Ray workers on the same study definition.

    The rate is taken from the first evaluation started to the last one finished; the
    one-time preparation (graph load and functional runs, on a worker) is reported apart.
    The pair of runs is repeated (this VM's timings vary by several percent) and the median
    speedup reported.
    """
    runs: list[dict] = []
    for rep in range(repeat):
        pair = {}
        for workers in (1, 2):
            with tempfile.TemporaryDirectory() as tmp:
                specs = [_spec(spec, trials, sampler, sources=sources)]
                result = run_studies(specs, load_spaces(specs), tmp, workers=workers)
                st = result.stats
                rate = st.evaluations / st.eval_s
                pair[workers] = {"evals_per_s": round(rate, 3),
                                 "busy": round(st.eval_busy_fraction, 3),
                                 "busy_whole_run": round(st.busy_fraction, 3),
                                 "elapsed_s": round(st.elapsed_s, 1),
                                 "eval_s": round(st.eval_s, 1), "evaluations": st.evaluations}
                print(f"scaling   run {rep + 1}, {workers} worker(s): {st.evaluations} "
                      f"evaluations in {st.eval_s:.1f} s = {rate:.2f}/s, workers busy "
                      f"{100 * st.eval_busy_fraction:.0f}% (whole run {st.elapsed_s:.1f} s "
                      f"incl. preparation, busy {100 * st.busy_fraction:.0f}%)", flush=True)
        pair["speedup"] = round(pair[2]["evals_per_s"] / pair[1]["evals_per_s"], 2)
        runs.append(pair)
    speedups = sorted(r["speedup"] for r in runs)
    median = statistics.median(speedups)
    print(f"scaling   speedup 2 vs 1 workers: median {median:.2f}x over {repeat} runs "
          f"({', '.join(f'{x:.2f}' for x in speedups)}; floor 1.7x)", flush=True)
    return {"runs": runs, "speedup_median": median}


def _evaluations_to_target(results: Path, target: float) -> dict[str, int | None]:
    """Per graph, the number of evaluations (in trial order) until the best <= target."""
    rows = [r for r in read_trials(results).to_pylist()
            if r["role"] == "trial" and r["state"] in ("complete", "failed")]
    out: dict[str, int | None] = {}
    for graph in {r["graph_spec"] for r in rows}:
        mine = sorted((r for r in rows if r["graph_spec"] == graph), key=lambda r: r["trial"])
        out[graph] = next((i for i, r in enumerate(mine, 1)
                           if r["values"] is not None and r["values"][0] <= target[graph]), None)
    return out


def efficiency(seeds: int, workers: int | None) -> dict:
    """Grid optimum per graph, then TPE studies: evaluations needed to get within 2%."""
    space = load_space("vwarp")
    grid = space.grid_size()
    budget = grid // 10
    with tempfile.TemporaryDirectory() as tmp:
        specs = [_spec(g, None, "grid") for g in EFFICIENCY_GRAPHS]
        t0 = time.perf_counter()
        run_studies(specs, load_spaces(specs), Path(tmp) / "grid", workers=workers)
        grid_s = time.perf_counter() - t0
        table = [r for r in read_trials(Path(tmp) / "grid").to_pylist()
                 if r["role"] == "trial" and r["state"] == "complete"]
        optimum = {g: min(r["values"][0] for r in table if r["graph_spec"] == g)
                   for g in {r["graph_spec"] for r in table}}
        target = {g: v * 1.02 for g, v in optimum.items()}
        print(f"efficiency grid: {grid} configurations x {len(specs)} graphs in {grid_s:.0f} s; "
              f"TPE budget {budget} evaluations (10%)", flush=True)
        needed: dict[str, list[int | None]] = {g: [] for g in optimum}
        for seed in range(seeds):
            tpe = [_spec(g, 3 * budget, "tpe", seed=seed) for g in EFFICIENCY_GRAPHS]
            results = Path(tmp) / f"tpe{seed}"
            run_studies(tpe, load_spaces(tpe), results, workers=workers)
            for g, n in _evaluations_to_target(results, target).items():
                needed[g].append(n)
    per_graph = {}
    for g, ns in needed.items():
        capped = [n if n is not None else math.inf for n in ns]
        med = statistics.median(capped)
        per_graph[g] = {"optimum_us": round(optimum[g], 3), "evaluations": ns,
                        "median": med if med != math.inf else None,
                        "success": sum(n is not None and n <= budget for n in ns)}
        shown = ", ".join("-" if n is None else str(n) for n in ns)
        print(f"efficiency {g:48s} optimum {optimum[g]:9.3f} us; TPE evaluations to "
              f"within 2%: {shown} (median {med})", flush=True)
    medians = [statistics.median([n if n is not None else math.inf for n in ns])
               for ns in needed.values()]
    overall = statistics.median(medians)
    print(f"efficiency median over graphs: {overall} evaluations = "
          f"{100 * overall / grid:.1f}% of the grid's {grid} (floor <= 10%)", flush=True)
    return {"grid": grid, "budget": budget, "graphs": per_graph, "median": overall}


REPEAT_GRAPHS = EFFICIENCY_GRAPHS[:4]  # the generated ones: no file needed


def repeats(seeds: int, trials: int, graphs: tuple[str, ...]) -> dict:
    """Per graph: the grid optimum, then TPE studies of ``trials`` distinct configurations
    per seed, with repeated proposals replaced by untried neighbours (now) and answered from
    the study (before, ``REPLACE_REPEATS`` off), in-process. Reported: each best's gap to
    the grid optimum, the repeats among the study's proposals (answered from the study), and
    how often the wrapped TPE itself proposed a tried configuration."""
    from tuner.tuning import samplers

    out: dict[str, dict] = {}
    gaps: dict[str, list[float]] = {"now": [], "before": []}
    shares: dict[str, list[float]] = {"now": [], "before": [], "tpe_now": []}
    with tempfile.TemporaryDirectory() as tmp:
        for gi, graph in enumerate(graphs):
            grid = [_spec(graph, None, "grid")]
            run_studies(grid, load_spaces(grid), Path(tmp) / f"grid{gi}", workers=0)
            optimum = min(r["values"][0] for r in read_trials(Path(tmp) / f"grid{gi}").to_pylist()
                          if r["state"] == "complete")
            row: dict[str, list] = {"now": [], "before": []}
            for seed in range(seeds):
                for variant in ("before", "now"):
                    samplers.REPLACE_REPEATS = variant == "now"
                    try:
                        specs = [_spec(graph, trials, "tpe", seed=seed)]
                        result = run_studies(specs, load_spaces(specs),
                                             Path(tmp) / f"{variant}{gi}-{seed}", workers=0)
                    finally:
                        samplers.REPLACE_REPEATS = True
                    summary = result.summaries[0]
                    rows = read_trials(Path(tmp) / f"{variant}{gi}-{seed}").to_pylist()
                    answered = sum(r["state"] == "duplicate" for r in rows)
                    replaced = sum(r["repeats"] or 0 for r in rows)
                    best = min(r["values"][0] for r in rows if r["state"] == "complete")
                    gap = 100 * (best / optimum - 1)
                    proposals = len(rows) - answered
                    row[variant].append({"best": best, "gap_pct": round(gap, 3),
                                         "rows": len(rows), "answered": answered,
                                         "replaced": replaced, "done": summary.done})
                    gaps[variant].append(gap)
                    shares[variant].append(100 * answered / len(rows))
                    if variant == "now":
                        shares["tpe_now"].append(100 * replaced / (proposals + replaced))
                    print(f"repeats   {graph:28s} seed {seed} {variant:6s}: best {best:9.3f} us "
                          f"({gap:5.2f}% over the grid's {optimum:.3f}); {len(rows)} rows for "
                          f"{summary.done} configurations, {answered} answered from the "
                          f"study, {replaced} replaced by an untried neighbour", flush=True)
            out[graph] = {"optimum_us": optimum, **row}
    med = {k: statistics.median(v) for k, v in gaps.items()}
    share = {k: statistics.median(v) for k, v in shares.items()}
    wins = sum(n <= b + 1e-9 for n, b in zip(gaps["now"], gaps["before"], strict=True))
    print(f"repeats   {len(gaps['now'])} studies: repeats among the study's proposals median "
          f"{share['now']:.1f}% now, {share['before']:.1f}% before (target <= 10%); the wrapped "
          f"TPE proposed a tried configuration {share['tpe_now']:.1f}% of the time (replaced); "
          f"gap to the grid optimum median {med['now']:.2f}% now, {med['before']:.2f}% before, "
          f"now as good or better in {wins}/{len(gaps['now'])}", flush=True)
    return {"graphs": out, "gap_median_pct": med, "repeat_share_median_pct": share,
            "now_as_good": wins}


def _cli_seconds(args: list[str]) -> float:
    """Wall time of one ``warpsweep`` command run as a user runs it (a fresh process)."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "tuner.cli", *args], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def startup(repeat: int, graph: str, trials: int) -> dict:
    """Wall time of a small default tune, of the same with ``--workers 0``, and of a resume
    with nothing left to run, each in a fresh process and results directory; the variants
    alternate within each repeat (this machine's load drifts) and the medians are compared."""
    times: dict[str, list[float]] = {"default": [], "workers0": [], "resume": []}
    for rep in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            base = ["tune", "--graph", graph, "--trials", str(trials), "-q"]
            order = ("default", "workers0") if rep % 2 == 0 else ("workers0", "default")
            for variant in order:
                extra = ["--workers", "0"] if variant == "workers0" else []
                times[variant].append(_cli_seconds(
                    [*base, *extra, "--results", f"{tmp}/{variant}"]))
            times["resume"].append(_cli_seconds([*base, "--results", f"{tmp}/default"]))
        print(f"startup   run {rep + 1}: default {times['default'][-1]:.2f} s, --workers 0 "
              f"{times['workers0'][-1]:.2f} s, default resume with nothing left "
              f"{times['resume'][-1]:.2f} s", flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["default"] / med["workers0"]
    print(f"startup   resume with nothing left: median {med['resume']:.2f} s", flush=True)
    print(f"startup   `tune --graph {graph} --trials {trials}` median of {repeat}: default "
          f"{med['default']:.2f} s, --workers 0 {med['workers0']:.2f} s, ratio {ratio:.2f} "
          "(target <= 2)", flush=True)
    return {"runs": times, "median_s": med, "ratio": round(ratio, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", nargs="?", default="all",
                        choices=["overhead", "scaling", "efficiency", "repeats", "startup",
                                 "all"])
    parser.add_argument("--overhead-trials", type=int, default=300)
    parser.add_argument("--overhead-repeat", type=int, default=3,
                        help="runs of each overhead study; the fastest counts")
    parser.add_argument("--scaling-trials", type=int, default=120)
    parser.add_argument("--scaling-sampler", default="random")
    parser.add_argument("--scaling-repeat", type=int, default=3)
    parser.add_argument("--scaling-sources", type=int, default=4)
    parser.add_argument("--scaling-spec", default="rmat:scale=16,seed=1")
    parser.add_argument("--seeds", type=int, default=3, help="TPE seeds per graph")
    parser.add_argument("--workers", type=int, default=None,
                        help="workers for the efficiency runs (default: every CPU)")
    parser.add_argument("--repeat-seeds", type=int, default=5)
    parser.add_argument("--repeat-trials", type=int, default=60)
    parser.add_argument("--startup-repeat", type=int, default=5)
    parser.add_argument("--startup-graph", default="rmat:scale=10")
    parser.add_argument("--startup-trials", type=int, default=10)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    os.chdir(Path(__file__).resolve().parent.parent)  # graph paths are relative to the repo
    figures = {}
    if args.what in ("overhead", "all"):
        figures["overhead_ms_per_trial"] = overhead(args.overhead_trials, args.overhead_repeat)
    if args.what in ("scaling", "all"):
        figures["scaling"] = scaling(args.scaling_trials, args.scaling_sources,
                                     args.scaling_spec, args.scaling_sampler,
                                     args.scaling_repeat)
    if args.what in ("efficiency", "all"):
        figures["efficiency"] = efficiency(args.seeds, args.workers)
    if args.what in ("repeats", "all"):
        figures["repeats"] = repeats(args.repeat_seeds, args.repeat_trials, REPEAT_GRAPHS)
    if args.what in ("startup", "all"):  # last: its last line states both times and the ratio
        figures["startup"] = startup(args.startup_repeat, args.startup_graph,
                                     args.startup_trials)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
