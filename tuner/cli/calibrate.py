"""``warpsweep calibrate RESULTS.parquet --device h100 --out h100.toml``: fit a device file."""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from simulator.device import get_device
from simulator.errors import ConfigError
from simulator.errors import WarpsweepError
from simulator.temp_files import beside
from simulator.temp_files import rename_target
from simulator.temp_files import written_whole
from tuner.calibration.calibrate import EXACT
from tuner.calibration.calibrate import THETA_NAMES
from tuner.calibration.calibrate import THETA_RANGE
from tuner.calibration.calibrate import Calibration
from tuner.calibration.calibrate import Measured
from tuner.calibration.calibrate import Parts
from tuner.calibration.calibrate import at_bound
from tuner.calibration.calibrate import calibrated_device
from tuner.calibration.calibrate import calibration_base
from tuner.calibration.calibrate import device_toml
from tuner.calibration.calibrate import fit
from tuner.calibration.calibrate import predict
from tuner.calibration.calibrate import se_text
from tuner.calibration.heldout import PickFigures
from tuner.calibration.heldout import logo_calibration
from tuner.calibration.heldout import pick_figures
from tuner.calibration.measurements import is_results_dir
from tuner.calibration.measurements import load_launch_times
from tuner.calibration.measurements import load_measured
from tuner.calibration.measurements import load_measured_results
from tuner.calibration.parts import DEFAULT_CACHE
from tuner.calibration.parts import simulate_parts
from tuner.cli.args import OneValue
from tuner.cli.args import add_seed
from tuner.cli.args import check_writable
from tuner.cli.args import location_arg
from tuner.cli.args import path_arg
from tuner.results.location import home_of
from tuner.results.location import home_path
from tuner.results.location import shell_word
from tuner.seeds import MAX_SEED

EPILOG = """examples:
  warpsweep calibrate bench/gpu/results/h100.parquet --device h100 --out h100.toml
  warpsweep calibrate warpsweep-results --device h100 --out my-gpu.toml   (after tune --verify K)
  warpsweep calibrate bench/gpu/results/h100.parquet --algorithms bfs --graphs rmat16-ef16 --verify
  warpsweep calibrate bench/gpu/results/h100_pr_cc.parquet --device h100 --held-out
  warpsweep simulate --graph rmat:scale=16 --algo bfs --device h100.toml --config mapping=vwarp,w=8
  warpsweep tune --graph rmat:scale=14,seed=1 --algo bfs --device h100.toml

--device h100 (the default) fits the file's h100 rows on the datasheet model h100-datasheet.
The preset h100 is such a fit, made on bench/gpu/results/h100.parquet with --bounds-norm 3
and --launches bench/gpu/results/h100_launches_*.parquet (the first example, without them,
fits the runs' totals under the maximum norm and gives another device).

The file holds one row per measured (graph, algorithm, config, variant) with the columns
device, graph, graph_spec, algorithm, config, variant, source, time_us, correct (as
bench/gpu/harness.py writes them); a config's time is its fastest correct variant. A results
directory gives the measured rows `tune --verify K` wrote (RESULTS/measured/), on the studies'
graphs, from the GPU they were measured on (--gpu where there are several): a preset --device
takes its own GPU's rows only (h100: an NVIDIA H100's), a device file any GPU's; --device then
names the model fitted to them. A configuration several studies measured (a graph tuned twice)
counts with the median of their times. A correct row with an impossible time (NaN, zero or
negative, a kernel time beyond the whole) is refused, every such row named. Each config is
simulated once with the base device (cached under --cache), then a scale per part of the
simulated time (issue, lsu, latency, memory, atomics, overhead, host) is fitted to the measured
times (least squares on log errors, each scale within 1/20..20); a part whose bound never binds
stays at 1; a fit with no more measured times than free parameters (those scales, and the
relative fit's offsets) is refused. The scales become the device file's figures (latency and
issue, as instruction_cycles, approximately). Rows whose measured launches are more than 1.5x
from their simulation's (another spec, source or configuration ran) are named on stderr and in
the file's comments. Rows more than 10x from the fitted prediction (a time in the wrong unit, a
disturbed run) bend every scale they share with the others: the fit is refused, no file
written, naming them; --drop-far fits again without them (named in the file's comments), and a
fit that leaves most rows that far is refused either way.

By default (--fit relative) the fit gives every (graph, algorithm) a free log offset and
the same total weight: an error common to all of a graph's configurations (its host loop,
its size) no longer bends the scales, which then rank a graph's configurations better; one
common scale on all of them then sets the absolute level. --fit absolute is the plain least
squares over the rows: the smallest error on the rows it was fitted to, not on other graphs.

--launches FILE ... fits the kernel parts to every launch's measured kernel time instead
(bench/gpu/launch_times.py's files: graph, algorithm, config, variant, launch, kernel_us), the
host's round trip measured as above: far more data, of launches of every size, that tells the
parts apart.

How well each choice ranks configurations on graphs it was not fitted to (the norm, the fit
mode and the device switches chosen inside each fold, on the other graphs alone) is what
`python bench/fidelity.py` prints; its committed output is bench/gpu/results/fidelity.txt.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``calibrate`` verb."""
    p = subparsers.add_parser(
        "calibrate",
        help="fit a device's cost figures to measured GPU times",
        description="Fit the device's cost figures to measured GPU times and write them as a "
                    "TOML device file (loadable wherever a device is named).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("results", type=location_arg,
                   help="measured results: a Parquet file (as bench/gpu/harness.py writes "
                        "it), or a results directory whose studies were measured with tune "
                        "--verify K")
    p.add_argument("--gpu", default=None, metavar="NAME",
                   help="of a results directory measured on several GPUs, the rows of this "
                        "one (its name as measured, e.g. 'NVIDIA H100 80GB HBM3')")
    p.add_argument("--device", default="h100",
                   help="the measured GPU: a preset (default h100: the file's rows of h100, "
                        "fitted on the datasheet model h100-datasheet, never on an earlier "
                        "fit) or a device file (the rows of its name, fitted on its fields)")
    p.add_argument("--out", type=path_arg, default=None,
                   help="device file to write (default ./<device>-calibrated.toml)")
    p.add_argument("--algorithms", default=None, metavar="A,B", action=OneValue,
                   help="only these algorithms (comma-separated, e.g. bfs,sssp)")
    p.add_argument("--graphs", default=None, metavar="NAME,...", action=OneValue,
                   help="only these graphs (the file's short names)")
    p.add_argument("--max-edges", type=int, default=None, metavar="N",
                   help="leave out graphs with more than N stored edges")
    p.add_argument("--cache", type=path_arg, default=DEFAULT_CACHE, metavar="DIR",
                   help=f"cache of simulated parts (default {DEFAULT_CACHE})")
    p.add_argument("--no-cache", action="store_true", help="simulate everything again")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="simulate in N processes (default 1)")
    p.add_argument("--fit", choices=("relative", "absolute"), default="relative",
                   help="relative (default): each (graph, algorithm) gets a free log offset "
                        "and the same total weight, so the scales follow how a graph's "
                        "configurations compare (what ranking them needs), then one common "
                        "scale sets the level; absolute: plain least squares on "
                        "log(predicted / measured) over the rows (smaller in-sample error)")
    p.add_argument("--launches", type=path_arg, nargs="+", default=None, metavar="FILE",
                   help="fit the kernel parts to these per-launch kernel times "
                        "(bench/gpu/launch_times.py's Parquet files) rather than to the runs' "
                        "totals; --fit then does not apply")
    p.add_argument("--fit-host", action="store_true",
                   help="fit the host's round trip like the other parts; by default it is "
                        "the measured (time_us - kernel_us) / launches where the file records "
                        "those columns")
    p.add_argument("--bounds-norm", type=float, default=None, metavar="P",
                   help="fit a device whose launches take the p-norm of their issue, lsu, "
                        "latency, memory and atomics bounds (bounds_norm in the file; "
                        "default: the base device's, the presets' maximum; the H100's "
                        "launches fit 3 best)")
    add_seed(p, f"seed of the fit's random starts, 0 to {MAX_SEED}")
    p.add_argument("--verify", action="store_true",
                   help="re-simulate every config with the written file and report how far "
                        "it is from the fitted surrogate")
    p.add_argument("--held-out", action="store_true",
                   help="also fit once without each graph and predict it: per algorithm, how "
                        "the fit and the base device unfitted pick among the configurations "
                        "of graphs they were not fitted to (picks within 5%% of the measured "
                        "best, geomean regret, median rho), and which algorithms the fit "
                        "picks worse for (fewer within 5%%, or a geomean regret over 1%% "
                        "higher)")
    p.add_argument("--drop-far", action="store_true",
                   help="fit again without the rows more than 10x from the first fit (else "
                        "such rows refuse the fit: one wrong-unit time bends every scale)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(run=run_calibrate)


def _names(text: str | None, option: str) -> list[str] | None:
    """A comma-separated option as a list (None when not given)."""
    if text is None:
        return None
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise ConfigError(f"{option} {text!r} names nothing: give names separated by commas, "
                          "or leave the option out")
    return names


def fit_table(calibration: Calibration) -> str:
    """The fitted thetas as a table: value, standard error, share of the fitted time."""
    lines = [f"{'part':<9} {'theta':>8}  {'s.e. (x/)':>9}  {'share':>6}  note"]
    for part in THETA_NAMES:
        theta = calibration.thetas[part]
        if part in calibration.unconstrained:
            lines.append(f"{part:<9} {theta:8.4f}  {'-':>9}  {'-':>6}  unconstrained: its bound "
                         "never binds, kept at 1")
            continue
        if part in calibration.pinned:
            lines.append(f"{part:<9} {theta:8.4f}  {'-':>9}  {100 * calibration.share[part]:5.1f}%"
                         "  measured: (total - kernel time) / launches, not fitted")
            continue
        if part in calibration.upper_only:
            lines.append(f"{part:<9} {theta:8.4f}  {'-':>9}  {100 * calibration.share[part]:5.1f}%"
                         "  not determined: its bound binds no row at the fit; a smaller "
                         "scale fits as well, a larger one until it binds")
            continue
        se = se_text(calibration.log_se.get(part, float("nan")))
        note = []
        if at_bound(theta):
            note.append(f"at the bound of the range {THETA_RANGE[0]:g}..{THETA_RANGE[1]:g}")
        if part not in EXACT:
            note.append("mapped approximately")
        lines.append(f"{part:<9} {theta:8.4f}  {se:>9}  {100 * calibration.share[part]:5.1f}%  "
                     + "; ".join(note))
    return "\n".join(lines)


FAR_FROM_FIT = 10.0  # a row this many times off its fitted prediction is named
FAR_SHOWN = 5


def far_rows(calibration: Calibration) -> np.ndarray:
    """The indexes of the measured rows more than ``FAR_FROM_FIT`` x off the fit."""
    return np.flatnonzero(np.abs(np.asarray(calibration.log_errors_after))
                          > math.log(FAR_FROM_FIT))


def far_rows_lines(calibration: Calibration, measured: Sequence[Measured]) -> list[str]:
    """The measured rows more than ``FAR_FROM_FIT`` x off the fitted prediction, farthest
    first (none: no lines): a time recorded in the wrong unit or a disturbed run bends every
    scale the fit shares with it, and nothing else would show it."""
    errors = np.asarray(calibration.log_errors_after)
    far = far_rows(calibration)
    if far.size == 0:
        return []
    far = far[np.argsort(-np.abs(errors[far]), kind="stable")]
    lines = [f"{far.size} measured row(s) more than {FAR_FROM_FIT:g}x from the fit "
             "(a time in the wrong unit, a disturbed run?); each bends the scales it shares "
             "with the other rows:"]
    for i in far[:FAR_SHOWN]:
        m = measured[i]
        factor = math.exp(-errors[i])
        lines.append(f"  {m.graph} {m.algorithm} {m.config!r} ({m.variant}): measured "
                     f"{m.time_us:g} us, {factor:.3g}x the fitted {m.time_us / factor:.4g} us")
    if far.size > FAR_SHOWN:
        lines.append(f"  and {far.size - FAR_SHOWN} more")
    return lines


LAUNCHES_APART = 1.5  # measured and simulated launches this many times apart are named


def launch_mismatch_lines(measured: Sequence[Measured], parts: Sequence[Parts]) -> list[str]:
    """The rows whose measured kernel launches are more than ``LAUNCHES_APART`` x (and 2
    launches) from the simulation's: the spec, source or configuration simulated is then not
    what ran (a row's time would be fitted to another run), or the kernel does what the model
    does not. The asynchronous SSSP runs differ by a launch or two, which passes."""
    apart = []
    for m, p in zip(measured, parts, strict=True):
        if m.launches is None:
            continue
        simulated = int(np.asarray(p.bounds).shape[0])
        low, high = sorted((m.launches, simulated))
        if high - low > 2 and high > LAUNCHES_APART * low:
            apart.append((m, simulated))
    if not apart:
        return []
    lines = [f"warning: {len(apart)} measured row(s) launched kernels more than "
             f"{LAUNCHES_APART:g}x as often as their simulation, or as seldom (a spec, source "
             "or configuration other than what ran?):"]
    lines += [f"  {m.graph} {m.algorithm} {m.config!r} ({m.variant}): measured {m.launches} "
              f"launches, simulated {simulated}" for m, simulated in apart[:FAR_SHOWN]]
    if len(apart) > FAR_SHOWN:
        lines.append(f"  and {len(apart) - FAR_SHOWN} more")
    return lines


WORSE_REGRET = 1.01  # a fit's geomean pick regret this far above the base's counts as worse


def held_out_lines(fitted: dict[str, PickFigures], unfitted: dict[str, PickFigures],
                   base_name: str) -> list[str]:
    """The held-out check's table, per algorithm the fit against the base device unfitted, and
    a line naming the algorithms whose picks the fit makes worse: fewer within 5%, or a
    geomean regret more than 1% above the base's (less is within the harness's noise)."""
    lines = ["held out (each graph predicted by the fit made without it; the base device "
             "is not fitted at all), per algorithm: picks within 5% of the measured best, "
             "geomean regret of the pick, median rho"]
    worse = []
    for algorithm, f in fitted.items():
        u = unfitted[algorithm]
        lines.append(f"  {algorithm:<9} fitted {f.picks_within:>3}/{f.graphs:<3} "
                     f"{f.geomean_regret:6.3f} {f.median_rho:5.2f}   {base_name} "
                     f"{u.picks_within:>3}/{u.graphs:<3} {u.geomean_regret:6.3f} "
                     f"{u.median_rho:5.2f}")
        if (f.picks_within < u.picks_within
                or f.geomean_regret > WORSE_REGRET * u.geomean_regret):
            worse.append(algorithm)
    if worse:
        lines.append(f"  the fit picks worse than {base_name} on graphs it was not fitted to "
                     f"for {', '.join(worse)}: for those simulate with {base_name}, or "
                     "calibrate them apart (--algorithms)")
    return lines


def _check_out(out: Path) -> None:
    """Refuse, before anything is fitted, an output that is no .toml, a directory, under a
    file, or an existing file that is no device file (``--out pyproject.toml`` would have
    been overwritten)."""
    if out.suffix != ".toml":
        raise ConfigError(f"--out {out}: a device file must end in .toml")
    target = rename_target(out)  # a link leading back to itself, or into nowhere: now
    if out.is_dir():
        raise ConfigError(f"--out {out}: is a directory")
    if out.is_symlink() and not target.parent.is_dir():
        raise ConfigError(f"--out {out}: a link to {target}, whose directory does not exist")
    parent = next(p for p in out.absolute().parents if p.exists())
    if not parent.is_dir():
        raise ConfigError(f"--out {out}: {parent} is not a directory")
    # found out after the whole fit, before
    missing = out.absolute().parent
    check_writable(beside(parent / out.name, f"probe-{os.getpid()}"),
                   f"--out {out}: cannot write in {parent}" if missing == parent else
                   f"--out {out}: cannot create {missing}: nothing can be written in {parent}")
    if out.exists():
        try:
            get_device(str(out))
        except WarpsweepError:
            raise ConfigError(f"--out {out}: the file exists and is no device file; it is "
                              "not overwritten (choose another path)") from None


def _refuse_undetermined(calibration: Calibration, measured: Sequence[Measured]) -> None:
    """Refuse a fit with no more measured times than free parameters (the scales whose bound
    binds, and a relative fit's offset per graph and algorithm): they fit any device, and
    two rows had written one as "fitted" with an RMS of 0.02."""
    scales = len(calibration.thetas) - len(set(calibration.unconstrained)
                                           | set(calibration.pinned))
    offsets = (len({(m.graph, m.algorithm) for m in measured}) if calibration.relative else 0)
    times = calibration.launches or calibration.rows
    if times <= scales + offsets:
        raise ConfigError(
            f"{times} measured time(s) for {scales + offsets} free parameter(s) ({scales} "
            f"scale(s)" + (f", {offsets} offset(s), one per graph and algorithm" if offsets
                           else "") + "): the fit is not determined by them; measure more "
            "configurations (or graphs) and calibrate again")


def _refuse_unexplained(calibration: Calibration) -> None:
    """Refuse a fit that leaves most rows ``FAR_FROM_FIT`` x from it: no scales within their
    range explain the times (milliseconds recorded as microseconds had been written as a
    device with every scale at its bound, exit 0, predicting 3.9 us for a 72-us BFS)."""
    errors = np.abs(np.asarray(calibration.log_errors_after))
    far = int(np.count_nonzero(errors > math.log(FAR_FROM_FIT)))
    if 2 * far > errors.size:
        raise ConfigError(
            f"{far} of {errors.size} measured rows are more than {FAR_FROM_FIT:g}x from the "
            f"best fit the scales allow (typical factor x{math.exp(calibration.rms_after):.3g}):"
            " the times are not this model's of any device within its range, most likely in "
            "another unit than microseconds (time_us) or of another GPU; no device file "
            "written")


def run_calibrate(args: argparse.Namespace) -> int:
    """Load, simulate, fit, write the device file and print the fit."""
    args.results = home_of(args.results, "RESULTS")  # ~ as --results reads it (review CR25)
    args.out = home_of(args.out, "--out")
    gpu, base = calibration_base(args.device)
    out = args.out or Path(f"{gpu}-calibrated.toml")
    _check_out(out)
    if args.jobs < 1:
        raise ConfigError(f"--jobs must be at least 1, got {args.jobs}")
    if args.bounds_norm is not None and not (
            1 <= args.bounds_norm <= 1e15 or args.bounds_norm == math.inf):  # NaN too
        raise ConfigError(f"--bounds-norm must be from 1 to 1e15, or inf (the maximum of the "
                          f"bounds), got {args.bounds_norm}")
    if args.max_edges is not None and args.max_edges < 1:
        raise ConfigError(f"--max-edges must be at least 1, got {args.max_edges}")
    if args.no_cache and args.jobs > 1:  # said before the rows are read (review CR30)
        raise ConfigError(f"--jobs {args.jobs} with --no-cache: the processes hand their "
                          "simulations back through the cache; drop --no-cache, or run with "
                          "--jobs 1")
    # (--no-cache reads no cache: its default under an unknown home is no refusal, CR29)
    cache_dir = None if args.no_cache else home_path(args.cache, "--cache")
    if cache_dir is not None and cache_dir.exists() and not cache_dir.is_dir():
        raise ConfigError(f"--cache {args.cache}: not a directory")
    left_out: list[str] = []
    if is_results_dir(args.results):  # the user's own GPU's measurements (tune --verify)
        if cache_dir is not None and cache_dir.resolve().is_relative_to(
                home_path(args.results).resolve()):  # (its entries had been made there)
            raise ConfigError(f"--cache {args.cache} is inside the results directory "
                              f"{args.results}; keep the cache elsewhere")
        measured = load_measured_results(
            args.results, gpu=args.gpu, device=args.device,
            algorithms=_names(args.algorithms, "--algorithms"),
            graphs=_names(args.graphs, "--graphs"), max_edges=args.max_edges, left_out=left_out)
    else:
        if args.gpu is not None:
            raise ConfigError("--gpu picks among a results directory's GPUs; a measured file's "
                              "rows are picked by --device")
        measured = load_measured(
            args.results, device=gpu, algorithms=_names(args.algorithms, "--algorithms"),
            graphs=_names(args.graphs, "--graphs"), max_edges=args.max_edges, left_out=left_out,
        )
    for line in left_out:  # a fit of part of the file: said, not silent (probe 01)
        print(f"calibrate: {line}", file=sys.stderr)
    if len(measured) < 2:
        raise ConfigError(f"{args.results}: {len(measured)} measured configuration: a fit "
                          "compares at least two (it had written a device 'fitted' with RMS 0)")
    graphs = sorted({m.graph for m in measured})
    if args.held_out and len(graphs) < 2:  # found out before the fit, not after it
        raise ConfigError(f"{args.results}: --held-out predicts each graph from a fit to the "
                          f"others, and the rows are of one graph ({graphs[0]})")
    algorithms = sorted({m.algorithm for m in measured})
    print(f"calibrate: {len(measured)} measured configs on {len(graphs)} "
          f"graph{'s' if len(graphs) != 1 else ''} "
          f"({', '.join(algorithms)}) from {args.results}, base device {base.name}")

    def progress(line: str) -> None:
        if not args.quiet:
            print(f"calibrate: {line}", file=sys.stderr, flush=True)

    # read and checked before the minutes of simulation: a bad file or norm fails at once
    launch_us = load_launch_times(args.launches, measured) if args.launches else None
    # the bounds are the same under any norm: simulated (and cached) with the base as given
    fit_base = (base if args.bounds_norm is None
                else dataclasses.replace(base, bounds_norm=args.bounds_norm))
    parts = simulate_parts(measured, base, cache=cache_dir, jobs=args.jobs, progress=progress)
    def fitted(parts, measured, launch_us) -> Calibration:
        """The fit to these rows, refused where undetermined, and its table printed."""
        calibration = fit(parts, measured, fit_base, seed=args.seed,
                          relative=args.fit == "relative", measured_host=not args.fit_host,
                          launch_us=launch_us)
        _refuse_undetermined(calibration, measured)
        print(fit_table(calibration))
        print(f"RMS log error on the rows fitted (in-sample): {calibration.rms_before:.3f} "
              f"with {base.name}, {calibration.rms_after:.3f} fitted "
              f"(x{math.exp(calibration.rms_before):.2f} -> "
              f"x{math.exp(calibration.rms_after):.2f} typical factor); on graphs left out "
              "of the fit: python bench/fidelity.py")
        return calibration

    calibration = fitted(parts, measured, launch_us)
    notes = launch_mismatch_lines(measured, parts) + far_rows_lines(calibration, measured)
    if notes:
        print("\n".join(notes), file=sys.stderr)
    _refuse_unexplained(calibration)
    far = far_rows(calibration)
    if far.size and not args.drop_far:
        raise ConfigError(
            f"{far.size} measured row(s) more than {FAR_FROM_FIT:g}x from the fit (named "
            "above) bend every scale they share with the other rows; no device file written: "
            "correct their times, leave their graphs out (--graphs), or fit without them "
            "(--drop-far)")
    if far.size:
        kept = np.setdiff1d(np.arange(len(measured)), far)
        measured = [measured[i] for i in kept]
        parts = [parts[i] for i in kept]
        launch_us = None if launch_us is None else [launch_us[i] for i in kept]
        dropped = (f"--drop-far: fitted again without those {far.size} row(s), on the "
                   f"{len(measured)} left")
        print(dropped, file=sys.stderr)
        calibration = fitted(parts, measured, launch_us)
        again = far_rows_lines(calibration, measured)
        if again:
            print("\n".join(again), file=sys.stderr)
            raise ConfigError(f"{far_rows(calibration).size} more row(s) are more than "
                              f"{FAR_FROM_FIT:g}x from the fit made without the first "
                              f"{far.size}; no device file written: check the measurements")
        notes.append(dropped)
    if args.held_out:
        held_out = logo_calibration(parts, measured, fit_base, launch_us=launch_us,
                                    progress=progress,
                                    seed=args.seed, relative=args.fit == "relative",
                                    measured_host=not args.fit_host)
        unfitted = np.array([base.us(p.cycles) for p in parts])
        lines = held_out_lines(pick_figures(held_out, measured), pick_figures(unfitted, measured),
                               base.name)
        print("\n".join(lines))
        notes += lines
    if args.verify:
        device = calibrated_device(fit_base, calibration.thetas)
        resim = simulate_parts(measured, device, cache=cache_dir, jobs=args.jobs,
                               progress=progress)
        surrogate = predict(parts, calibration.thetas, fit_base.bounds_norm)
        gap = np.log([p.cycles for p in resim]) - np.log(surrogate)
        line = (f"re-simulated with the file: RMS log gap to the surrogate "
                f"{float(np.sqrt(np.mean(gap ** 2))):.3f}, worst {float(np.max(np.abs(gap))):.3f}")
        print(line)
        notes.append(line)
    text = device_toml(calibration, source=str(args.results), notes=notes)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with written_whole(out, "tmp.toml") as tmp:
            tmp.write_text(text)
            if tmp != out:  # what was written loads, before it replaces a file at --out
                get_device(str(tmp))
    except OSError as exc:
        raise ConfigError(f"--out {out}: cannot write it ({exc.strerror or exc})") from None
    name = calibrated_device(fit_base, calibration.thetas).name
    print(f"wrote {out} (device {name}; tune, sweep or simulate with it: --device "
          f"{shell_word(out)})")
    return 0
