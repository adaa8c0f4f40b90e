"""Fidelity of the simulator against measured GPU times (issue 11).

Per graph and algorithm, over that graph's measured configurations: the Spearman rho between
simulated and measured times, and the regret of the simulator's pick (the measured time of the
configuration it ranks first over the best measured time), for

  (a) base       the preset device (e.g. h100), as simulated;
  (b) LOGO       leave-one-graph-out calibration: the device fitted on the other graphs'
                 rows (both algorithms; their launches' kernel times from
                 h100_launches_*.parquet, or with --totals their runs' total times), this
                 graph predicted with the fitted surrogate;
  (c) in-sample  the device fitted on every row, written as a TOML device file and every
                 configuration simulated again with it (in-sample: fitted to what it is
                 judged on; --no-resim judges the fitted surrogate instead).

Then per algorithm the median rho and the fraction of graphs whose pick is within 5% of the
best, against the issue's targets (median rho >= 0.93 for BFS and for SSSP, pick within 5% on
>= 90% of graphs; judged on LOGO), and which configurations the model charges too much or too
little relative to each graph's best. The measured time of a configuration is its fastest
correct variant. The in-sample device file is written to bench/gpu/results/<device>.toml.

Run from anywhere: python bench/fidelity.py [RESULTS.parquet] [--device h100] [--jobs N]
[--max-edges N] [--totals [--fit absolute]] [--json OUT]. Simulations are cached
(~/.cache/warpsweep/calibrate, --cache): the first run simulates every configuration twice
(base and calibrated device).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simulator.device import get_device  # noqa: E402
from simulator.errors import WarpsweepError  # noqa: E402
from simulator.strategy import Strategy  # noqa: E402
from tuner.calibrate import DEFAULT_CACHE  # noqa: E402
from tuner.calibrate import THETA_NAMES  # noqa: E402
from tuner.calibrate import Measured  # noqa: E402
from tuner.calibrate import device_toml  # noqa: E402
from tuner.calibrate import fit  # noqa: E402
from tuner.calibrate import load_launch_times  # noqa: E402
from tuner.calibrate import load_measured  # noqa: E402
from tuner.calibrate import predict  # noqa: E402
from tuner.calibrate import simulate_parts  # noqa: E402
from tuner.cli_calibrate import fit_table  # noqa: E402

RESULTS = ROOT / "bench" / "gpu" / "results" / "h100.parquet"
LAUNCHES = sorted((ROOT / "bench" / "gpu" / "results").glob("h100_launches_*.parquet"))
TARGET_RHO = 0.93
TARGET_WITHIN = 0.90
WITHIN = 1.05
MODELS = ("base", "LOGO", "in-sample")


def short(config: str) -> str:
    """A compact name of a configuration: ``vw8 c16 dyn``, ``data thread``, ``thread d32``."""
    s = Strategy.parse(config)
    name = f"vw{s.w}" if s.mapping == "vwarp" else s.mapping
    words = [name]
    if s.driven != "topology":
        words.insert(0, s.driven)
    if s.mapping == "vwarp" and s.chunk not in (None, 1):
        words.append(f"c{s.chunk}")
    if s.distribution == "dynamic":
        words.append("dyn")
    if s.defer_threshold is not None:
        words.append(f"d{s.defer_threshold}")
    if s.driven != "topology" and s.push not in (None, "atomic"):
        words.append(s.push)
    return " ".join(words)


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho (scipy), NaN with fewer than 3 points or a constant side."""
    from scipy.stats import spearmanr

    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(spearmanr(x, y).statistic)


def regret(predicted: np.ndarray, measured: np.ndarray) -> tuple[float, int]:
    """Measured time of the predicted-fastest configuration over the best measured time, and
    that configuration's index; exact ties in the prediction count against it (the worst of
    the tied configurations is what a user may get)."""
    tied = np.flatnonzero(predicted == predicted.min())
    pick = int(tied[np.argmax(measured[tied])])
    return float(measured[pick] / measured.min()), pick


def groups(measured: list[Measured]) -> dict[tuple[str, str], np.ndarray]:
    """Row indices of each (algorithm, graph), graphs in increasing size."""
    out: dict[tuple[str, str], list[int]] = {}
    for i, m in enumerate(measured):
        out.setdefault((m.algorithm, m.graph), []).append(i)
    size = {m.graph: m.m or 0 for m in measured}
    return {k: np.array(v) for k, v in sorted(out.items(), key=lambda kv: (kv[0][0],
                                                                             size[kv[0][1]]))}


def relative_rms(log_errors: np.ndarray, rows: dict[tuple[str, str], np.ndarray]) -> float:
    """RMS log error once each (algorithm, graph)'s mean error is removed, every graph
    weighing the same: how far off a graph's configurations are relative to each other (the
    relative fit's criterion, what ranking them needs), not their level."""
    per_graph = [np.mean((log_errors[ix] - log_errors[ix].mean()) ** 2) for ix in rows.values()]
    return float(np.sqrt(np.mean(per_graph)))


def logo_predictions(parts, measured, base, progress, relative: bool = True,
                     launch_us=None) -> tuple[np.ndarray, dict]:
    """Surrogate cycles of every row from a fit on the other graphs' rows (``relative``: the
    relative fit; ``launch_us``: each row's per-launch kernel times, to fit those instead; see
    ``tuner.calibrate.fit``), and each fold's thetas."""
    graphs = sorted({m.graph for m in measured})
    pred = np.zeros(len(measured))
    folds = {}
    for g in graphs:
        test = np.array([m.graph == g for m in measured])
        train = np.flatnonzero(~test)
        cal = fit([parts[i] for i in train], [measured[i] for i in train], base, starts=3,
                  relative=relative,
                  launch_us=None if launch_us is None else [launch_us[i] for i in train])
        idx = np.flatnonzero(test)
        pred[idx] = predict([parts[i] for i in idx], cal.thetas, cal.base.bounds_norm)
        folds[g] = {"thetas": cal.thetas, "unconstrained": list(cal.unconstrained),
                    "rms_train": cal.rms_after}
        progress(f"LOGO fold without {g}: train RMS log error {cal.rms_after:.3f}")
    return pred, folds


def score(pred: np.ndarray, times: np.ndarray, idx: np.ndarray) -> dict:
    """Rho, regret and pick of one model on one (algorithm, graph)."""
    r, pick = regret(pred[idx], times[idx])
    return {"rho": spearman(pred[idx], times[idx]), "regret": r, "pick": int(idx[pick])}


def fmt_rho(x: float) -> str:
    return "  nan" if math.isnan(x) else f"{x:5.2f}"


def table(algorithm: str, graph_rows: dict, measured: list[Measured], scores: dict) -> list[str]:
    """The per-graph lines of one algorithm."""
    head = (f"{'graph':<22} {'n_cfg':>5} {'best measured':<15}"
            + "".join(f" | {m + ' rho':>13} {'regret':>6} {'pick':<13}" for m in MODELS))
    lines = [f"{algorithm.upper()}", head, "-" * len(head)]
    times = np.array([m.time_us for m in measured])
    for (algo, graph), idx in graph_rows.items():
        if algo != algorithm:
            continue
        best = short(measured[int(idx[np.argmin(times[idx])])].config)
        line = f"{graph[:22]:<22} {len(idx):>5} {best:<15}"
        for model in MODELS:
            s = scores[model][(algo, graph)]
            line += (f" | {fmt_rho(s['rho']):>13} {s['regret']:6.2f} "
                     f"{short(measured[s['pick']].config):<13}")
        lines.append(line)
    return lines


def summary(algorithm: str, scores: dict) -> tuple[list[str], dict]:
    """Median rho and the fraction of picks within 5% per model, with PASS/FAIL."""
    lines = [f"{algorithm.upper()} summary ({'targets judged on LOGO'}): median rho >= "
             f"{TARGET_RHO}, pick within {100 * (WITHIN - 1):.0f}% of the best on >= "
             f"{100 * TARGET_WITHIN:.0f}% of graphs"]
    out = {}
    for model in MODELS:
        vals = [s for (a, _), s in scores[model].items() if a == algorithm]
        rhos = [s["rho"] for s in vals if not math.isnan(s["rho"])]
        med = float(np.median(rhos)) if rhos else float("nan")
        within = sum(s["regret"] <= WITHIN for s in vals)
        frac = within / len(vals) if vals else float("nan")
        geo = float(np.exp(np.mean(np.log([s["regret"] for s in vals])))) if vals else math.nan
        rho_ok = med >= TARGET_RHO
        within_ok = frac >= TARGET_WITHIN
        verdict = (f"rho {'PASS' if rho_ok else 'FAIL'}, within-5% "
                   f"{'PASS' if within_ok else 'FAIL'}")
        if model != "LOGO":
            verdict = f"({verdict}; for information)"
        lines.append(f"  {model:<10} median rho {fmt_rho(med)}  within 5%: {within}/{len(vals)}"
                     f" ({100 * frac:.0f}%)  geomean regret {geo:.3f}  {verdict}")
        out[model] = {"median_rho": med, "within": within, "graphs": len(vals),
                      "fraction_within": frac, "geomean_regret": geo,
                      "rho_pass": bool(rho_ok), "within_pass": bool(within_ok)}
    return lines, out


def charge_table(algorithm: str, graph_rows: dict, measured: list[Measured],
                 preds: dict[str, np.ndarray]) -> tuple[list[str], dict]:
    """Per configuration, the median over graphs of (simulated / graph's best simulated) over
    (measured / graph's best measured): > 1 the model charges it too much relative to the
    best, < 1 too little; and the median absolute simulated / measured."""
    times = np.array([m.time_us for m in measured])
    rel: dict[str, dict[str, list[float]]] = {}
    for (algo, _), idx in graph_rows.items():
        if algo != algorithm:
            continue
        for model, pred in preds.items():
            p = pred[idx] / pred[idx].min()
            t = times[idx] / times[idx].min()
            for i, a, b in zip(idx, p, t, strict=True):
                rel.setdefault(measured[i].config, {}).setdefault(model, []).append(a / b)
                rel[measured[i].config].setdefault(model + " abs", [])
        for i in idx:
            for model, pred in preds.items():
                rel[measured[i].config][model + " abs"].append(pred[i] / times[i])
    models = list(preds)
    head = (f"{'config':<16}" + "".join(f" {m + ' rel':>14}" for m in models)
            + "".join(f" {m + ' abs':>14}" for m in models))
    lines = [f"{algorithm.upper()} charge per configuration (median over graphs; rel: "
             "(sim / best sim) / (measured / best measured); abs: sim / measured)", head]
    out = {}
    order = sorted(rel, key=lambda c: -np.median(rel[c][models[0]]))
    for config in order:
        vals = {m: float(np.median(rel[config][m])) for m in models}
        absv = {m: float(np.median(rel[config][m + " abs"])) for m in models}
        lines.append(f"{short(config):<16}" + "".join(f" {vals[m]:14.2f}" for m in models)
                     + "".join(f" {absv[m]:14.2f}" for m in models))
        out[config] = {"rel": vals, "abs": absv}
    return lines, out


def launch_table(algorithm: str, measured: list[Measured], parts) -> list[str]:
    """Kernel launches per configuration, measured against simulated (summed over graphs),
    where they differ: a launch the model leaves out (or adds) costs its overhead and, on the
    GPU, often a host round trip."""
    counts: dict[str, list[int]] = {}
    for m, p in zip(measured, parts, strict=True):
        if m.algorithm != algorithm or m.launches is None:
            continue
        c = counts.setdefault(m.config, [0, 0, 0])
        c[0] += m.launches
        c[1] += int(np.asarray(p.bounds).shape[0])
        c[2] += 1
    differ = {k: v for k, v in counts.items() if v[0] != v[1]}
    if not differ:
        return [f"{algorithm.upper()} launches: simulated = measured for every configuration"]
    lines = [f"{algorithm.upper()} launches where the simulation differs (summed over graphs)"]
    lines += [f"  {short(k):<16} measured {v[0]:>6}  simulated {v[1]:>6}  ({v[2]} graphs)"
              for k, v in differ.items()]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Spearman rho and pick regret of the simulator against measured GPU "
                    "times: base device, leave-one-graph-out calibration, in-sample "
                    "calibrated device file.",
        epilog="example:\n  python bench/fidelity.py bench/gpu/results/h100.parquet "
               "--device h100 --jobs 2",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("results", nargs="?", type=Path, default=RESULTS,
                        help=f"measured Parquet file (default {RESULTS.relative_to(ROOT)})")
    parser.add_argument("--device", default="h100", help="base device (default h100)")
    parser.add_argument("--out", type=Path, default=None,
                        help="calibrated device file to write (default: beside the results, "
                             "<device>.toml)")
    parser.add_argument("--algorithms", default=None, help="e.g. bfs,sssp (default: all)")
    parser.add_argument("--graphs", default=None, help="short graph names, comma-separated")
    parser.add_argument("--max-edges", type=int, default=None, metavar="N",
                        help="leave out graphs with more than N stored edges")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, metavar="DIR",
                        help=f"cache of simulations (default {DEFAULT_CACHE})")
    parser.add_argument("--jobs", type=int, default=1, help="simulation processes")
    parser.add_argument("--no-resim", action="store_true",
                        help="judge (c) with the in-sample fitted surrogate instead of "
                             "simulating every configuration again with the device file")
    parser.add_argument("--fit", choices=("relative", "absolute"), default="relative",
                        help="how calibration fits (as warpsweep calibrate --fit): relative "
                             "(default), a free offset and equal weight per (graph, "
                             "algorithm); absolute, plain least squares over the rows")
    parser.add_argument("--launches", type=Path, nargs="+", default=LAUNCHES, metavar="FILE",
                        help="per-launch kernel times to fit the kernel parts to (default: "
                             "bench/gpu/results/h100_launches_*.parquet)")
    parser.add_argument("--totals", action="store_true",
                        help="fit the runs' totals (as --fit says) rather than per-launch "
                             "kernel times")
    parser.add_argument("--bounds-norm", type=float, default=None, metavar="P",
                        help="fit a device whose launches take the p-norm of their bounds "
                             "(Device.bounds_norm; default: the base device's, the "
                             "presets' maximum)")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT",
                        help="also write every figure as JSON")
    args = parser.parse_args(argv)
    results = args.results.resolve()
    os.chdir(ROOT)  # the measured graph specs are relative to the repository root
    started = time.perf_counter()

    def progress(line: str) -> None:
        print(f"  [{time.perf_counter() - started:6.0f} s] {line}", file=sys.stderr, flush=True)

    try:
        base = get_device(args.device)
        measured = load_measured(
            results, device=base.name,
            algorithms=args.algorithms.split(",") if args.algorithms else None,
            graphs=args.graphs.split(",") if args.graphs else None, max_edges=args.max_edges,
        )
        parts = simulate_parts(measured, base, cache=args.cache, jobs=args.jobs,
                               progress=progress)
        times = np.array([m.time_us for m in measured])
        base_pred = np.array([base.us(p.cycles) for p in parts])
        relative = args.fit == "relative"
        launch_us = None if args.totals else load_launch_times(args.launches, measured)
        # the bounds are the same under any norm: simulated with the base as given (and
        # cached so), combined with the norm asked for in the fit and its predictions
        fit_base = (base if args.bounds_norm is None
                    else dataclasses.replace(base, bounds_norm=args.bounds_norm))
        logo, folds = logo_predictions(parts, measured, fit_base, progress, relative,
                                       launch_us)
        calibration = fit(parts, measured, fit_base, relative=relative, launch_us=launch_us)
        out = args.out or results.with_suffix(".toml")
        text = device_toml(calibration, source=os.path.relpath(results, ROOT))
        out.write_text(text)
        device = get_device(str(out))
        surrogate = np.array([base.us(c) for c in predict(parts, calibration.thetas,
                                                          fit_base.bounds_norm)])
        if args.no_resim:
            resim = surrogate
            notes = ["not re-simulated with this file (--no-resim): (c) is the fitted "
                     "surrogate"]
        else:
            resim_parts = simulate_parts(measured, device, cache=args.cache, jobs=args.jobs,
                                         progress=progress)
            resim = np.array([device.us(p.cycles) for p in resim_parts])
            gap = np.log(resim / surrogate)
            rms_gap = float(np.sqrt(np.mean(gap ** 2)))
            rms_resim = float(np.sqrt(np.mean(np.log(resim / times) ** 2)))
            notes = [f"re-simulated with this file: RMS log gap to the fitted surrogate "
                     f"{rms_gap:.3f} (worst {float(np.abs(gap).max()):.3f}); RMS log error vs "
                     f"measured {rms_resim:.3f}"]
        out.write_text(device_toml(calibration, source=os.path.relpath(results, ROOT),
                                   notes=notes))
    except WarpsweepError as exc:
        print(f"fidelity: error: {exc}", file=sys.stderr)
        return 2

    preds = {"base": base_pred, "LOGO": np.array([base.us(c) for c in logo]),
             "in-sample": resim}
    graph_rows = groups(measured)
    scores = {model: {key: score(pred, times, idx) for key, idx in graph_rows.items()}
              for model, pred in preds.items()}
    report: dict = {"results": str(results), "device": base.name, "rows": len(measured),
                    "graphs": sorted({m.graph for m in measured}), "algorithms": {}}
    print(f"fidelity: {len(measured)} measured configs on {len(report['graphs'])} graphs from "
          f"{results}, base device {base.name}; the measured time of a config is its fastest "
          "correct variant")
    for algorithm in sorted({m.algorithm for m in measured}):
        print()
        print("\n".join(table(algorithm, graph_rows, measured, scores)))
        print()
        lines, summ = summary(algorithm, scores)
        print("\n".join(lines))
        print()
        charge_lines, charges = charge_table(algorithm, graph_rows, measured, preds)
        print("\n".join(charge_lines))
        print()
        print("\n".join(launch_table(algorithm, measured, parts)))
        report["algorithms"][algorithm] = {
            "summary": summ, "charges": charges,
            "graphs": {g: {model: {**scores[model][(a, g)],
                                   "pick": measured[scores[model][(a, g)]["pick"]].config}
                           for model in MODELS}
                       for (a, g) in graph_rows if a == algorithm},
        }
    print()
    logo_us = preds["LOGO"]
    logo_rms, logo_rms_relative = {}, {}
    logo_errors = np.log(logo_us / times)
    for algorithm in ("all", *sorted({m.algorithm for m in measured})):
        ix = np.array([algorithm in ("all", m.algorithm) for m in measured])
        logo_rms[algorithm] = float(np.sqrt(np.mean(logo_errors[ix] ** 2)))
        logo_rms_relative[algorithm] = relative_rms(
            logo_errors, {k: v for k, v in graph_rows.items() if algorithm in ("all", k[0])})
    fit_name = args.fit if args.totals else "per-launch"
    print(f"{fit_name} fit; LOGO held-out RMS log error (absolute, vs measured) "
          + ", ".join(f"{a} {v:.3f}" for a, v in logo_rms.items()))
    print("  relative (each graph's mean error removed, graphs weighted alike) "
          + ", ".join(f"{a} {v:.3f}" for a, v in logo_rms_relative.items()))
    print(f"in-sample calibration ({calibration.rows} rows): RMS log error "
          f"{calibration.rms_before:.3f} with {base.name} -> {calibration.rms_after:.3f} fitted")
    print(fit_table(calibration))
    print(notes[0])
    spread = {p: (min(f["thetas"][p] for f in folds.values()),
                  max(f["thetas"][p] for f in folds.values())) for p in THETA_NAMES}
    print("LOGO folds' thetas (min..max): " + ", ".join(
        f"{p} {lo:.3g}..{hi:.3g}" for p, (lo, hi) in spread.items()))
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out} "
          f"({time.perf_counter() - started:.0f} s)")
    report.update({
        "thetas": calibration.thetas, "unconstrained": list(calibration.unconstrained),
        "log_se": calibration.log_se, "share": calibration.share,
        "rms_before": calibration.rms_before, "rms_after": calibration.rms_after,
        "fit": fit_name, "logo_rms": logo_rms, "logo_rms_relative": logo_rms_relative,
        "resim_note": notes[0], "logo_folds": folds, "device_file": str(out),
    })
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
