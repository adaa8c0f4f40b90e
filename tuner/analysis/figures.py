"""The report's figures, one function each: ``*_figure`` draws one figure from its data
(``tuner.analysis.report_data``) and returns it with the caption that says what it shows;
``plot_*`` writes it to a PNG and returns the caption.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib import patheffects
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import LogNorm
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.text import Text
from matplotlib.ticker import FixedLocator
from matplotlib.ticker import LogFormatter
from matplotlib.ticker import MaxNLocator
from matplotlib.ticker import NullLocator

from tuner.analysis.report_data import NO_DEFER
from tuner.analysis.report_data import VWARP_SIZES
from tuner.analysis.report_data import Curve
from tuner.analysis.report_data import Heatmap
from tuner.analysis.report_data import History
from tuner.analysis.report_data import SimdBar
from tuner.analysis.report_data import WCurve

DPI = 100
FIGURES_DIR = "figures"
TIME_LABEL = "time (µs)"
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
          "#17becf", "#7f7f7f", "#bcbd22")
ACTIVE, UA, UR = "#2a9d8f", "#e9c46a", "#adb5bd"


# -- figure plumbing -------------------------------------------------------------------------
def _new_figure(width: float = 7.5, height: float = 4.5,
                margins: tuple[float, float, float, float] = (0.9, 0.3, 0.7, 0.45)) -> Figure:
    """A figure on the Agg canvas, without pyplot's global state; margins (left, right,
    bottom, top) in inches, set by hand because automatic layouts triple the drawing time."""
    fig = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(fig)
    left, right, bottom, top = margins
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height,
                        top=1 - top / height)
    return fig


def save_png(fig: Figure, path: Path) -> None:
    """Write the PNG and release the figure's artists. Every text is drawn as written: a
    graph named with ``$`` (a file ``u$^$_{.txt``) had been parsed as math, and failed."""
    for text in fig.findobj(Text):
        text.set_parse_math(False)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, format="png")
    fig.clear()


def _log_if_wide(ax: Any, values: Sequence[float], axis: str = "y") -> bool:
    """Log scale when the values span more than 10x (times of different configurations
    often do), so the small ones stay readable."""
    positive = [v for v in values if v is not None and v > 0]
    if positive and max(positive) / min(positive) > 10:
        (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
        _plain_log_labels(ax.yaxis if axis == "y" else ax.xaxis)
        return True
    return False


class _PlainLogFormatter(LogFormatter):
    """Log-axis labels as plain numbers (400, not 4 x 10^2)."""

    def _num_to_string(self, x: float, vmin: float, vmax: float) -> str:
        return f"{x:.10g}"  # (``g`` had written a million as 1e+06)


def _plain_log_labels(axis: Any) -> None:
    axis.set_major_formatter(_PlainLogFormatter(labelOnlyBase=False))
    axis.set_minor_formatter(_PlainLogFormatter(labelOnlyBase=False,
                                                minor_thresholds=(2.1, 1.0)))


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _us(value: float) -> str:
    return f"{value:.3g} µs"


# -- the figures -----------------------------------------------------------------------------
def plot_time_over_w(curve: WCurve, title: str, path: Path) -> str:
    """The PNG of ``time_over_w_figure`` (the same figure, written); returns its caption."""
    fig, caption = time_over_w_figure(curve, title)
    save_png(fig, path)
    return caption


def time_over_w_figure(curve: WCurve, title: str) -> tuple[Figure, str]:
    """Hong et al. Fig. 7b: best time per virtual warp size W, thread baseline dashed."""
    fig = _new_figure()
    ax = fig.add_subplot()
    ws = [w for w, _ in curve.points]
    times = [t for _, t in curve.points]
    ax.plot(ws, times, "o-", color=COLORS[0], label="best vwarp time at W")
    best_t = dict(curve.points)[curve.best_w]
    ax.plot([curve.best_w], [best_t], marker="*", markersize=18, color=COLORS[1],
            linestyle="none", label=f"best W = {curve.best_w} ({_us(best_t)})")
    every = list(times)
    if curve.thread_us is not None:
        ax.axhline(curve.thread_us, color="black", linestyle="--",
                   label=f"thread per vertex ({_us(curve.thread_us)})")
        every.append(curve.thread_us)
    for i, (space, t, config) in enumerate(curve.study_best):
        ax.axhline(t, color=COLORS[(i + 2) % len(COLORS)], linestyle=":",
                   label=_short(f"best of {space} study: {_us(t)} ({config})", 70))
        every.append(t)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(VWARP_SIZES))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([str(w) for w in VWARP_SIZES])
    ax.set_xlim(0.8, 40)
    _log_if_wide(ax, every)
    ax.set_xlabel("virtual warp size W (lanes per vertex)")
    ax.set_ylabel(TIME_LABEL)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig, (
        "Best simulated time for each virtual warp size W over every complete vwarp run of "
        "this graph, whatever its other knobs (chunk, distribution, deferring, driven form); "
        "lower is better. The dashed line "
        "is the thread-per-vertex baseline, the star the best W, and each dotted line a "
        "study's best configuration of any mapping.")


def plot_w_chunk_heatmap(heat: Heatmap, title: str, path: Path) -> str:
    """The PNG of ``w_chunk_heatmap_figure`` (the same figure, written); returns its caption."""
    fig, caption = w_chunk_heatmap_figure(heat, title)
    save_png(fig, path)
    return caption


def w_chunk_heatmap_figure(heat: Heatmap, title: str) -> tuple[Figure, str]:
    """Best time per (W, chunk) cell, annotated; empty cells blank."""
    fig = _new_figure(max(6.0, 1.0 * len(heat.chunks) + 2.5), 4.8)
    ax = fig.add_subplot()
    grid = [[heat.cells.get((w, c), math.nan) for c in heat.chunks] for w in heat.ws]
    values = [v for row in grid for v in row if not math.isnan(v)]
    lo, hi = min(values), max(values)
    norm = LogNorm(lo, hi) if hi / lo > 10 else Normalize(lo, hi if hi > lo else lo * 1.01)
    cmap = matplotlib.colormaps["RdYlGn_r"].with_extremes(bad="white")
    image = ax.imshow(_masked(grid), cmap=cmap, norm=norm, aspect="auto", origin="lower")
    outline = [patheffects.withStroke(linewidth=2.5, foreground="white")]
    best = min(heat.cells, key=heat.cells.get)
    for i, w in enumerate(heat.ws):
        for j, c in enumerate(heat.chunks):
            v = heat.cells.get((w, c))
            if v is not None:
                ax.text(j, i, _cell(v), ha="center", va="center", fontsize=8,
                        path_effects=outline)
            if (w, c) == best:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, linewidth=2.5,
                                       edgecolor="black"))
    ax.set_xticks(range(len(heat.chunks)), [str(c) for c in heat.chunks])
    ax.set_yticks(range(len(heat.ws)), [str(w) for w in heat.ws])
    binned = ", binned to the nearest power of two" if heat.binned else ""
    ax.set_xlabel(f"chunk (vertices per grab{binned})")
    ax.set_ylabel("virtual warp size W (lanes per vertex)")
    ax.set_title(title)
    bar = fig.colorbar(image, ax=ax, label="best time (µs)")
    if isinstance(norm, LogNorm):  # its default labels are math text, drawn as written
        _plain_log_labels(bar.ax.yaxis)  # by save_png: "$\mathdefault{...}$" (probe OUT)
    return fig, (
        "Best simulated time of the vwarp runs in each (W, chunk) cell; greener is faster, "
        "the boxed cell is the best, and blank cells were never run.")


def _cell(value: float) -> str:
    return f"{value:,.0f}" if value >= 1000 else f"{value:.3g}"


def _masked(grid: list[list[float]]) -> Any:
    import numpy as np

    arr = np.array(grid, dtype=float)
    return np.ma.masked_invalid(arr)


def plot_defer_curves(curves: Sequence[Curve], title: str, path: Path) -> str:
    """The PNG of ``defer_curves_figure`` (the same figure, written); returns its caption."""
    fig, caption = defer_curves_figure(curves, title)
    save_png(fig, path)
    return caption


def defer_curves_figure(curves: Sequence[Curve], title: str) -> tuple[Figure, str]:
    """Best time per defer threshold, one line per graph, 'none' first."""
    keys = sorted({k for c in curves for k, _ in c.points},
                  key=lambda k: -1 if k == NO_DEFER else k)
    pos = {k: i for i, k in enumerate(keys)}
    fig = _new_figure()
    ax = fig.add_subplot()
    every = []
    for i, c in enumerate(curves):
        ax.plot([pos[k] for k, _ in c.points], [t for _, t in c.points], "o-",
                color=COLORS[i % len(COLORS)], label=c.label)
        every += [t for _, t in c.points]
    ax.set_xticks(range(len(keys)), ["no deferring" if k == NO_DEFER else str(k) for k in keys])
    _log_if_wide(ax, every)
    ax.set_xlabel("defer threshold (degree above which a block-per-vertex kernel expands it)")
    ax.set_ylabel(f"best {TIME_LABEL}")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, title="graph")
    return fig, (
        "Best time per defer threshold for each graph, over the mappings that were run with "
        "deferring; lower is better, and a line falling to the right of 'no deferring' "
        "means deferring high-degree outliers to a second kernel pays off.")


def plot_switch_curves(temporal: Sequence[Curve], spatial: Sequence[Curve], title: str,
                       path: Path) -> str:
    """The PNG of ``switch_curves_figure`` (the same figure, written); returns its caption."""
    fig, caption = switch_curves_figure(temporal, spatial, title)
    save_png(fig, path)
    return caption


def switch_curves_figure(temporal: Sequence[Curve], spatial: Sequence[Curve],
                         title: str) -> tuple[Figure, str]:
    """Best time of the temporal hybrid per switch point and of the spatial one per partition."""
    panels = [(c, lab) for c, lab in (
        (temporal, "switch_to_topology (worklist size / N, binned to powers of two)"),
        (spatial, "partition (vertices per representative, binned to powers of two)"),
    ) if c]
    fig = _new_figure(6.0 * len(panels) + 1.0, 4.8, (0.9, 0.3, 0.7, 0.8))
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    fig.subplots_adjust(wspace=0.3)
    names = {"switch_to_topology": "temporal hybrid", "partition": "spatial hybrid"}
    for ax, (curves, label) in zip(axes, panels, strict=True):
        every, xs = [], set()
        for i, c in enumerate(curves):
            ax.plot([x for x, _ in c.points], [t for _, t in c.points], "o-",
                    color=COLORS[i % len(COLORS)], label=c.label)
            every += [t for _, t in c.points]
            xs |= {x for x, _ in c.points}
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(FixedLocator(sorted(xs)))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([f"{x:.3g}" for x in sorted(xs)])
        if len(xs) == 1:
            x = next(iter(xs))
            ax.set_xlim(x / 2, x * 2)
        _log_if_wide(ax, every)
        ax.set_xlabel(label)
        ax.set_ylabel(f"best {TIME_LABEL}")
        ax.set_title(names[label.split(" ")[0]])
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, title="graph")
    fig.suptitle(title)
    return fig, (
        "Best time of the temporal hybrid for each switch point (it turns to a topology "
        "sweep when the worklist exceeds that fraction of N) and, where it was run, of the "
        "spatial hybrid for each partition size; lower is better, and the lowest point is "
        "the switch point to use.")


def plot_simd_breakdown(bars: Sequence[SimdBar], title: str, path: Path) -> str:
    """The PNG of ``simd_breakdown_figure`` (the same figure, written); returns its caption."""
    fig, caption = simd_breakdown_figure(bars, title)
    save_png(fig, path)
    return caption


def simd_breakdown_figure(bars: Sequence[SimdBar], title: str) -> tuple[Figure, str]:
    """Stacked active / U_A / U_R fractions per configuration (side by side if they do not
    partition the issued lane-steps)."""
    fig = _new_figure(max(6.5, 1.3 * len(bars) + 1.5), 5.0, (0.9, 0.3, 0.9, 0.45))
    ax = fig.add_subplot()
    xs = list(range(len(bars)))
    series = (("active (SIMD efficiency)", ACTIVE, [b.active for b in bars]),
              ("U_A (intra-group idle)", UA, [b.u_a for b in bars]),
              ("U_R (inter-group idle)", UR, [b.u_r for b in bars]))
    stacked = all(abs(b.total - 1.0) < 0.01 for b in bars)
    if stacked:
        bottom = [0.0] * len(bars)
        for label, color, vals in series:
            ax.bar(xs, vals, bottom=bottom, color=color, label=label, width=0.6)
            bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    else:
        width = 0.27
        for k, (label, color, vals) in enumerate(series):
            ax.bar([x + (k - 1) * width for x in xs], vals, width=width, color=color,
                   label=label)
    # names wrapped at their blanks: "best fixed vwarp w=32" had run into its neighbour
    ax.set_xticks(xs, [f"{textwrap.fill(b.name, 14)}\n{_us(b.time_us)}" for b in bars],
                  fontsize=8)
    top = max([b.total for b in bars] if stacked else [max(b.active, b.u_a, b.u_r)
                                                          for b in bars])
    ax.set_ylim(0, max(1.0, top) * 1.15)
    ax.set_ylabel("fraction of issued SIMD lane-steps")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper center", ncol=3)
    ax.grid(True, axis="y", alpha=0.3)
    how = ("stacked to 1" if stacked else
           "side by side, because here the three do not add up to 1")
    configs = "; ".join(f"{b.name}: {b.config}" for b in bars)
    return fig, (
        f"How each configuration's issued SIMD lane-steps of edge expansion split ({how}) "
        "into active lanes (the SIMD efficiency, higher is better), U_A (lanes of a group "
        "idle in its vertex's last, partial step) and U_R (lanes whose group is done while "
        "the warp's heaviest group still steps), after Cheng et al.; under each bar its "
        f"time. Configurations: {configs}.")


def plot_history(hist: History, title: str, path: Path) -> str:
    """Objective per trial number, the best-so-far step line and the reference lines: the
    PNG of ``history_figure``; returns its caption."""
    fig, caption = history_figure(hist, title)
    save_png(fig, path)
    return caption


def history_figure(hist: History, title: str) -> tuple[Figure, str]:
    """``plot_history``'s figure and caption."""
    fig = _new_figure()
    ax = fig.add_subplot()
    done = [(t, v) for t, v, s in hist.trials if s == "complete"]
    repeats = [(t, v) for t, v, s in hist.trials if s == "duplicate"]
    every = [v for _, v, _ in hist.trials]
    if done:
        ax.plot(*zip(*done, strict=True), "o", color=COLORS[0], markersize=5,
                label="trial (new configuration)")
    if repeats:
        ax.plot(*zip(*repeats, strict=True), "o", markerfacecolor="none", color="grey",
                markersize=5, label="repeat (answered from the study)")
    steps = hist.best_so_far()
    if steps:
        ax.step(*zip(*steps, strict=True), where="post", color=COLORS[1], label="best so far")
    if hist.thread is not None:
        ax.axhline(hist.thread, color="black", linestyle="--",
                   label=f"thread per vertex ({hist.thread:.4g})")
        every.append(hist.thread)
    if hist.best_vwarp is not None:
        label, value = hist.best_vwarp
        ax.axhline(value, color=COLORS[2], linestyle=":",
                   label=f"best fixed {label} ({value:.4g})")
        every.append(value)
    _log_if_wide(ax, every)
    if hist.failed:
        ax.plot(hist.failed, [0.97] * len(hist.failed), "x", color=COLORS[1], markersize=8,
                transform=ax.get_xaxis_transform(), linestyle="none",
                label="failed trial (no value)")
    unit = " (µs)" if hist.metric == "time_us" else ""
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("trial number")
    ax.set_ylabel(f"{hist.metric}{unit}")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    better = "higher" if hist.maximize else "lower"
    failed = (f" {len(hist.failed)} failed trial(s) are the x marks at the top."
              if hist.failed else " No trial failed.")
    return fig, (
        f"The {hist.metric} objective of each trial of the {hist.space} study in the "
                 f"order the sampler drew them, with the best so far as a step line; {better} "
                 "is better, and the dashed and dotted lines are the thread baseline and the "
                 f"best fixed virtual warp.{failed}")


def plot_selector(evaluation: Any, title: str, path: Path,
                  names: dict[str, str] | None = None) -> str:
    """Regret per held-out graph per policy (grouped bars, log y, 1.0 = the best); graphs
    labelled by ``names[graph_id]`` where given, else by their spec: the PNG of
    ``selector_figure``; returns its caption."""
    fig, caption = selector_figure(evaluation, title, names)
    save_png(fig, path)
    return caption


def selector_figure(evaluation: Any, title: str,
                    names: dict[str, str] | None = None) -> tuple[Figure, str]:
    """``plot_selector``'s figure and caption."""
    rows = list(evaluation.rows)
    names = names or {}
    policies = list(evaluation.policies)
    fig = _new_figure(max(7.0, 0.25 * len(rows) * max(1, len(policies)) + 3), 5.2,
                      (0.9, 0.3, 1.5, 0.45))
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(policies))
    for k, policy in enumerate(policies):
        vals = [float(r.regrets.get(policy, math.nan)) for r in rows]
        ax.bar([i + (k - (len(policies) - 1) / 2) * width for i in range(len(rows))], vals,
               width=width, color=COLORS[k % len(COLORS)], label=policy)
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1, label="1.0 = best found")
    ax.set_yscale("log")
    shown = [float(r.regrets.get(p, math.nan)) for r in rows for p in policies]
    shown = [v for v in shown if v > 0]
    ax.set_ylim(bottom=min([0.9, *(0.9 * v for v in shown)]))  # bars at 1.0 show as stubs
    _plain_log_labels(ax.yaxis)
    labels = [names.get(r.graph_id) or r.graph_spec for r in rows]
    ax.set_xticks(range(len(rows)), [_short(x, 24) for x in labels], rotation=30,
                  ha="right", fontsize=8)
    ax.set_xlabel("held-out graph")
    ax.set_ylabel("regret (policy's time / best time found)")
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, title="policy")
    def over(p: str) -> str:  # a mean over fewer graphs than the rest says so (SELECT2)
        held = sum(1 for r in rows if r.regrets.get(p) is not None
                   and not math.isnan(r.regrets[p]))
        return f" (over {held} of {len(rows)} graphs)" if 0 < held < len(rows) else ""

    geo = ", ".join(f"{p} {_ratio(evaluation.geomean[p])}{over(p)}" for p in policies
                    if p in evaluation.geomean)
    return fig, (
        "For each graph held out of the selector's training, the time of each "
                 "policy's choice over the best time found for that graph (log scale; 1.0 is "
                 f"the best, lower is better). Geometric means: {geo}.")


def _ratio(value: Any) -> str:
    v = float(value)
    return "n/a" if math.isnan(v) else f"{v:.3f}"


def adaptation_figure(rows: Sequence[Any], title: str) -> tuple[Figure, str]:
    """Bars of oracle / best constant per (graph, algorithm), the 2% line marked."""
    fig = _new_figure(7.5, 1.2 + 0.3 * len(rows), margins=(3.0, 0.3, 0.7, 0.45))
    ax = fig.add_subplot()
    labels = [f"{r.graph} {r.algorithm} ({r.device})" for r in rows]
    ratios = [1 / r.gain for r in rows]
    ax.barh(range(len(rows)), ratios, color=["#4c72b0" if v < 0.98 else "#bbbbbb"
                                             for v in ratios])
    ax.axvline(0.98, color="#c44e52", linestyle="--", linewidth=1, label="2% saving")
    ax.set_yticks(range(len(rows)), labels, fontsize=7)
    ax.set_xlim(min(0.9, min(ratios) - 0.02), 1.01)
    ax.set_xlabel("oracle time / best constant time (lower: adaptation wins more)")
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=7)
    caption = ("Per graph, algorithm and device: " + "; ".join(
        f"{r.graph} {r.algorithm} ({r.device}): best constant {r.best_constant} "
        f"{_us(r.constant_us)}, "
        f"oracle {1 / r.gain:.3f}x, {r.verdict}" for r in rows) + ".")
    return fig, caption
