"""Paper-trends benchmark: the papers' comparisons rerun on the simulator, claim by claim.

Each experiment runs the comparison one of the papers reports (Hong et al. PPoPP 2011, Fig. 7-8;
Cheng et al., Fig. 5-6; Nasre et al. IPDPS 2013, Fig. 5, 8, 9, 11, 12; the WER slides) on
graphs shaped like the paper's, and turns it into rows: the experiment, the paper's claim, the
simulator's figure, a verdict (``agree`` or ``disagree``) computed from the simulator's numbers
against the claim's direction, and a note. A disagreeing row's note names a plausible modelling
reason; nothing here tunes the simulator or fixes a verdict in advance.

Run ``python bench/paper_trends.py [--quick]`` or ``warpsweep bench trends [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import textwrap
import time
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import numpy as np

from simulator import functional_run
from simulator import load_graph
from simulator import simulate
from simulator.device import get_device
from simulator.errors import ConfigError

# The repository's sibling `shared/graphs` (real graphs); experiments skip them when absent.
SHARED_GRAPHS = Path(__file__).resolve().parents[2] / "shared" / "graphs"

# Each paper on a GPU of its era; --device overrides them all.
DEFAULT_DEVICES = {"hong": "gtx260", "cheng": "c2050", "nasre": "quadro6000", "wer": "h100"}

AGREE, DISAGREE = "agree", "disagree"
WARP_SIZES = (1, 2, 4, 8, 16, 32)
# Hong et al. give no threshold for Fig. 7(a); 128 (four warps' worth of edges, half a block)
# is fixed here up front and Fig. 8(a) sweeps it.
DEFER_THRESHOLD = 128


# ---------------------------------------------------------------------------------------------
# rows and the simulation cache


@dataclass
class Row:
    """One line of the table: a claim of a paper against the simulator's figure."""

    experiment: str
    claim: str
    figure: str
    verdict: str
    note: str = ""
    paper: str = ""
    device: str = ""
    graphs: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def judge(ok: bool, why_not: str, note: str = "") -> tuple[str, str]:
    """The verdict of a claim and its note: ``why_not`` (a modelling reason) when it fails."""
    if ok:
        return AGREE, note
    return DISAGREE, why_not if not note else f"{why_not} ({note})"


@dataclass(frozen=True)
class GraphCase:
    """A graph of an experiment: a short label, its spec, and the paper's class for it."""

    label: str
    spec: str
    kind: str = ""

    @property
    def is_file(self) -> bool:
        return self.spec.startswith("file:")


class Lab:
    """Loads each graph once, keeps one functional run per (graph, algorithm), memoises runs."""

    def __init__(self, log: Callable[[str], None]) -> None:
        self.log = log
        self._graphs: dict[str, Any] = {}
        self._functional: dict[tuple[str, str], Any] = {}
        self._results: dict[tuple[str, str, str, str], dict[str, float]] = {}
        self.simulations = 0

    def graph(self, spec: str):
        if spec not in self._graphs:
            start = time.perf_counter()
            self._graphs[spec] = load_graph(spec)
            g = self._graphs[spec]
            self.log(f"  loaded {spec}: n={g.n:,} m={g.m:,} ({time.perf_counter() - start:.1f} s)")
        return self._graphs[spec]

    def avg_degree(self, spec: str) -> float:
        g = self.graph(spec)
        return g.m / g.n if g.n else 0.0

    def functional(self, spec: str, algo: str):
        key = (spec, algo)
        if key not in self._functional:
            self._functional[key] = functional_run(self.graph(spec), algo)
        return self._functional[key]

    def run(self, spec: str, algo: str, strategy: str, device: str) -> dict[str, float]:
        """Metrics of one simulation (``Result.to_dict()``), computed once per key."""
        key = (spec, algo, strategy, device)
        if key not in self._results:
            graph = self.graph(spec)
            result = simulate(
                graph, algo, strategy, device, functional=self.functional(spec, algo),
                trace=True,
            )
            metrics = result.to_dict()
            # the largest launch's active tasks (worklist items for data-driven), / N
            metrics["peak_frontier"] = float(result.trace["frontier"].max()) / max(graph.n, 1)
            self._results[key] = metrics
            self.simulations += 1
        return self._results[key]

    def time(self, spec: str, algo: str, strategy: str, device: str) -> float:
        return self.run(spec, algo, strategy, device)["time_us"]


# ---------------------------------------------------------------------------------------------
# sizes


@dataclass(frozen=True)
class Sizes:
    """The graphs and sweeps of one benchmark size."""

    name: str
    hong: tuple[GraphCase, ...]
    cheng: tuple[GraphCase, ...]
    nasre: tuple[GraphCase, ...]
    wer: tuple[GraphCase, ...]
    defer_thresholds: tuple[int, ...]
    chunks: tuple[int, ...]
    switches: tuple[float, ...]
    partitions: tuple[int, ...]
    wer_algorithms: tuple[str, ...] = ("bfs", "sssp", "pagerank")


def _shared(name: str, options: str = "") -> str | None:
    path = SHARED_GRAPHS / name
    if not path.is_file():
        return None
    return f"file:{path}" + (f",{options}" if options else "")


def _cases(*cases: tuple[str, str | None, str]) -> tuple[GraphCase, ...]:
    return tuple(GraphCase(label, spec, kind) for label, spec, kind in cases if spec)


def sizes(quick: bool) -> Sizes:
    """The default size (minutes on two cores) or the quick one (under a minute)."""
    if quick:
        return Sizes(
            name="quick",
            hong=_cases(
                ("rmat", "rmat:scale=13,ef=6,seed=1", "rmat"),
                ("random", "random:n=8192,deg=12,seed=1", "random"),
                ("patents~", "random:n=8192,deg=5,seed=2", "patents"),
            ),
            cheng=_cases(
                ("mesh", "mesh2d:rows=64,cols=64", "low-degree"),
                ("road", "road:rows=64,cols=64,seed=1", "low-degree"),
                ("random3~", "random:n=8192,deg=12,seed=1", "random3"),
                ("random1~", "random:n=2048,deg=64,seed=3", "random1"),
                ("rmat1~", "rmat:scale=13,ef=6,seed=1", "rmat1"),
                ("kron~", "rmat:scale=11,ef=32,seed=4", "kron"),
            ),
            nasre=_cases(("road", "road:rows=64,cols=64,seed=1,weights=random", "road")),
            wer=_cases(
                ("rmat", "rmat:scale=12,ef=8,seed=5,weights=random", "synthetic"),
                ("Gnutella08", _shared("p2p-Gnutella08.txt.gz", "weights=random"), "real"),
            ),
            defer_thresholds=(8, 32, 128, 512, 2048),
            chunks=(1, 4, 16, 64, 256, 1024),
            switches=(0.1, 0.2, 0.4, 0.6, 0.8, 1.2),
            partitions=(1, 2, 4, 10),
        )
    return Sizes(
        name="default",
        hong=_cases(
            ("rmat", "rmat:scale=18,ef=6,seed=1", "rmat"),
            ("random", "random:n=262144,deg=12,seed=1", "random"),
            ("patents~", "random:n=262144,deg=5,seed=2", "patents"),
            ("NotreDame", _shared("web-NotreDame.txt.gz"), "livejournal"),
        ),
        cheng=_cases(
            ("mesh", "mesh2d:rows=512,cols=512", "low-degree"),
            ("road", "road:rows=512,cols=512,seed=1", "low-degree"),
            ("USA-road-NY", _shared("USA-road-NY.gr.gz"), "low-degree"),
            ("random3~", "random:n=262144,deg=12,seed=1", "random3"),
            ("random1~", "random:n=65536,deg=64,seed=3", "random1"),
            ("rmat1~", "rmat:scale=18,ef=6,seed=1", "rmat1"),
            ("kron~", "rmat:scale=16,ef=32,seed=4", "kron"),
        ),
        nasre=_cases(
            ("road", "road:rows=256,cols=256,seed=1,weights=random", "road"),
            ("USA-road-NY", _shared("USA-road-NY.gr.gz", "weights=random"), "road"),
        ),
        wer=_cases(
            ("rmat", "rmat:scale=16,ef=8,seed=5,weights=random", "synthetic"),
            ("deezer-HU", _shared("deezer_HU_edges.csv.gz", "weights=random"), "real"),
            ("coAuthorsDBLP", _shared("coAuthorsDBLP.mtx.gz", "weights=random"), "real"),
        ),
        defer_thresholds=(8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096),
        chunks=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048),
        switches=(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.2),
        partitions=(1, 2, 3, 4, 5, 6, 8, 10),
    )


@dataclass
class Context:
    lab: Lab
    sizes: Sizes
    devices: dict[str, str]
    log: Callable[[str], None]


# ---------------------------------------------------------------------------------------------
# helpers


def vwarp(w: int, **extra: Any) -> str:
    return ",".join([f"mapping=vwarp,w={w}", *(f"{k}={v}" for k, v in extra.items())])


def speedup(base: float, other: float) -> float:
    return base / other if other else math.inf


def geomean(values: Iterable[float]) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


def fmt_x(value: float) -> str:
    return f"{value:.2f}x"


def fmt_us(value: float) -> str:
    return f"{value:,.0f} us" if value >= 100 else f"{value:.1f} us"


def series(keys: Sequence[Any], values: Sequence[float], digits: int = 2) -> str:
    return " ".join(f"{k}:{v:.{digits}f}" for k, v in zip(keys, values, strict=True))


def argbest(keys: Sequence[Any], values: Sequence[float], *, largest: bool = False) -> Any:
    pick = max if largest else min
    return keys[values.index(pick(values))]


def monotone(values: Sequence[float], *, rising: bool, tol: float) -> bool:
    """Whether ``values`` never move against the direction by more than ``tol`` (absolute)."""
    steps = [b - a for a, b in zip(values, values[1:], strict=False)]
    return all(s >= -tol for s in steps) if rising else all(s <= tol for s in steps)


# A claim that one variant is faster (or slower) needs a margin of 2%: closer than that the
# simulator calls it a tie, which agrees with neither direction.
MARGIN = 0.02


def gain(ratio: float) -> bool:
    """``ratio`` (old time / new time, or the like) is a clear gain."""
    return ratio >= 1 + MARGIN


def loss(ratio: float) -> bool:
    """``ratio`` is a clear loss."""
    return ratio <= 1 - MARGIN


def within_one_doubling(w: int, degree: float) -> bool:
    return degree / 2 <= w <= degree * 2


# ---------------------------------------------------------------------------------------------
# Hong et al., PPoPP 2011: Fig. 7(a), 7(b), 8(a), 8(b) -- BFS


HONG = "Hong 2011"


def hong_7a_strategies() -> dict[str, str]:
    return {
        "baseline": "mapping=thread",
        "+defer": f"mapping=thread,defer_threshold={DEFER_THRESHOLD}",
        "warp32": vwarp(32),
        "warp32+defer": vwarp(32, defer_threshold=DEFER_THRESHOLD),
    }


def chunk_sweep(ctx: Context, spec: str, distribution: str) -> tuple[int, float, list[float]]:
    """warp32 over the chunk sweep: the best chunk, its time, and every time."""
    cs = ctx.sizes.chunks
    times = [ctx.lab.time(spec, "bfs", vwarp(32, distribution=distribution, chunk=c),
                          ctx.devices["hong"]) for c in cs]
    best = argbest(cs, times)
    return best, min(times), times


def sectors(ctx: Context, spec: str, strategy: str) -> float:
    return ctx.lab.run(spec, "bfs", strategy, ctx.devices["hong"])["transactions"]


def hong_fig7a(ctx: Context) -> list[Row]:
    device = ctx.devices["hong"]
    rows = []
    for case in ctx.sizes.hong:
        times = {name: ctx.lab.time(case.spec, "bfs", s, device)
                 for name, s in hong_7a_strategies().items()}
        # static and dynamic distribution each at its best chunk, so that the comparison is
        # of the distribution alone (a larger chunk also helps a static grid)
        chunk_s, static, _ = chunk_sweep(ctx, case.spec, "static")
        chunk, times["warp32+dynamic"], _ = chunk_sweep(ctx, case.spec, "dynamic")
        ctx.log(f"  [hong7a] {case.label}: "
                + ", ".join(f"{k} {v:,.0f}" for k, v in times.items())
                + f" (chunk {chunk}); warp32 static {static:,.0f} (chunk {chunk_s})")
        base, w32 = times["baseline"], times["warp32"]
        common = {"paper": HONG, "device": device, "graphs": [case.spec],
                  "data": {**times, "dynamic_chunk": chunk, "warp32_static_best": static,
                           "static_chunk": chunk_s}}
        irregular = case.kind in ("rmat", "livejournal")
        mega = {k: sectors(ctx, case.spec, s) / 1e6 for k, s in hong_7a_strategies().items()}

        s = speedup(base, w32)
        figure = f"{fmt_x(s)} ({fmt_us(base)} -> {fmt_us(w32)})"
        if irregular:
            claim = "warp32 beats the baseline by a large factor on a skewed graph (>= 2x)"
            ok = s >= 2
            why = "the modelled imbalance of the thread baseline is milder than on the GTX260"
        elif case.kind == "random":
            claim = "warp32 gains only a little over the baseline on a regular graph (1.02x-1.5x)"
            ok = gain(s) and s < 1.5
            why = (
                f"W=32 moves more DRAM sectors than the baseline ({mega['warp32']:.1f}M vs "
                f"{mega['baseline']:.1f}M) and the time follows them; with no caches modelled "
                "the coalescing gain the paper credits does not appear"
                if s < 1
                else "the model rewards the coalesced edge reads more than the GTX260 did"
            )
        else:
            claim = "warp32 is slower than the baseline on a regular low-degree graph (<= 0.98x)"
            ok = loss(s)
            why = "the modelled SISD/SIMD overhead of a 32-lane virtual warp is too small"
        verdict, note = judge(ok, why)
        rows.append(Row(f"Hong 7a {case.label}: warp32 vs baseline", claim, figure, verdict,
                        note, **common))

        s = speedup(base, times["+defer"])
        figure = f"{fmt_x(s)} ({fmt_us(base)} -> {fmt_us(times['+defer'])})"
        if case.kind == "rmat":
            claim = ("deferring outliers speeds the baseline up ~1.9x on RMAT "
                     f"(>= 1.3x; T={DEFER_THRESHOLD})")
            ok = s >= 1.3
            why = "deferred vertices pay a block per vertex plus a queue atomic in the model"
        else:
            claim = ("deferring outliers gives no significant speedup on this graph "
                     f"(< 1.3x; T={DEFER_THRESHOLD})")
            ok = s < 1.3
            g = ctx.lab.graph(case.spec)
            degree = g.indptr[1:] - g.indptr[:-1]
            why = (
                f"this graph's hubs are far heavier than LiveJournal's (max degree "
                f"{int(degree.max()):,} at average {g.m / g.n:.1f}): in the thread baseline a "
                "hub stalls its whole warp for thousands of steps, and deferring it pays off"
                if case.kind == "livejournal"
                else "outliers above the threshold stall whole warps in the model"
            )
        verdict, note = judge(ok, why)
        rows.append(Row(f"Hong 7a {case.label}: +defer vs baseline", claim, figure, verdict,
                        note, **common))

        s = speedup(w32, times["warp32+defer"])
        figure = f"{fmt_x(s)} ({fmt_us(w32)} -> {fmt_us(times['warp32+defer'])})"
        claim = "deferring on top of warp32 gives only a marginal change (0.95x-1.25x)"
        ok = 0.95 <= s <= 1.25
        why = (
            "the model charges the second kernel launch, one queue atomic per deferred vertex "
            "and a block-wide expansion; at this graph size that overhead is not amortised"
            if s < 0.95
            else "warp32 alone leaves more imbalance in the model than on the GTX260"
        )
        verdict, note = judge(ok, why)
        rows.append(Row(f"Hong 7a {case.label}: warp32+defer vs warp32", claim, figure, verdict,
                        note, **common))

        s = speedup(static, times["warp32+dynamic"])
        figure = (f"{fmt_x(s)} (static {fmt_us(static)} at chunk {chunk_s} -> dynamic "
                  f"{fmt_us(times['warp32+dynamic'])} at chunk {chunk})")
        if irregular:
            claim = ("dynamic distribution speeds warp32 up further on a skewed graph "
                     "(>= 1.02x; static and dynamic each at its best chunk)")
            ok = gain(s)
            why = (
                "the model serialises the queue atomics on one counter and launches only the "
                "resident warps, while the static grid's blocks are list-scheduled onto free "
                "slots, which already balances much of the skew"
            )
        else:
            claim = ("dynamic distribution costs more than it gains on a regular graph "
                     "(<= 0.98x; static and dynamic each at its best chunk)")
            ok = loss(s)
            why = (
                "at its best (large) chunk the model's queue atomics are few, and the dynamic "
                "grid of resident warps avoids the tail of the static grid's last blocks"
            )
        verdict, note = judge(ok, why)
        rows.append(Row(f"Hong 7a {case.label}: warp32+dynamic vs static", claim, figure,
                        verdict, note, **common))
    return rows


def hong_fig7b(ctx: Context) -> list[Row]:
    device = ctx.devices["hong"]
    rows = []
    best: dict[str, int] = {}
    beats_baseline: dict[str, float] = {}
    for case in ctx.sizes.hong:
        times = [ctx.lab.time(case.spec, "bfs", vwarp(w), device) for w in WARP_SIZES]
        base = ctx.lab.time(case.spec, "bfs", "mapping=thread", device)
        best_w = argbest(WARP_SIZES, times)
        best[case.label] = best_w
        beats_baseline[case.label] = speedup(base, min(times))
        rel = [t / min(times) for t in times]
        ctx.log(f"  [hong7b] {case.label}: best W={best_w}; t/t_best {series(WARP_SIZES, rel)}")
        degree = ctx.lab.avg_degree(case.spec)
        figure = f"best W={best_w}; t/t_best {series(WARP_SIZES, rel)}"
        common = {"paper": HONG, "device": device, "graphs": [case.spec],
                  "data": {"w": list(WARP_SIZES), "time_us": times, "avg_degree": degree}}
        if case.kind in ("random", "patents"):
            claim = (f"a regular graph peaks at W ~ its average degree ({degree:.1f}; "
                     "agree within one doubling)")
            ok = within_one_doubling(best_w, degree)
            mega = [sectors(ctx, case.spec, vwarp(w)) / 1e6 for w in WARP_SIZES]
            near = [w for w, r in zip(WARP_SIZES, rel, strict=True) if r <= 1.02]
            why = (
                f"the time follows the DRAM sectors moved (no caches modelled), fewest at "
                f"W={argbest(WARP_SIZES, mega)} ({min(mega):.1f}M); W={', '.join(map(str, near))}"
                " are within 2% of the best"
            )
        elif case.kind == "rmat":
            claim = "RMAT (severely skewed) peaks at W=32"
            ok = best_w == 32
            why = "the modelled idle-lane cost outweighs the divergence at W=32 on this graph"
        else:
            continue
        verdict, note = judge(ok, why)
        rows.append(Row(f"Hong 7b {case.label}: time over W", claim, figure, verdict, note,
                        **common))
    if not best:
        return rows
    regular = [best[c.label] for c in ctx.sizes.hong if c.kind in ("random", "patents")]
    skewed = [best[c.label] for c in ctx.sizes.hong if c.kind == "rmat"]
    figure = "best W: " + ", ".join(f"{k} {v}" for k, v in best.items())
    ok = len(set(best.values())) > 1 and (
        not regular or not skewed or max(regular) < min(skewed)
    )
    verdict, note = judge(
        ok,
        "the model's balance of divergence against idle lanes makes one W win everywhere",
    )
    rows.append(Row(
        "Hong 7b: best W across graphs",
        "the best W differs per graph; regular graphs prefer a smaller W than RMAT",
        figure, verdict, note, paper=HONG, device=device,
        graphs=[c.spec for c in ctx.sizes.hong], data={"best_w": best},
    ))
    figure = ", ".join(f"{k} {fmt_x(v)}" for k, v in beats_baseline.items())
    verdict, note = judge(
        all(gain(v) for v in beats_baseline.values()),
        "on a low-degree regular graph the modelled vwarp overhead exceeds the thread baseline "
        "for every W",
    )
    rows.append(Row(
        "Hong 7b: best W vs baseline",
        "with a properly selected W, vwarp beats the baseline on every graph (>= 1.02x)",
        figure, verdict, note, paper=HONG, device=device,
        graphs=[c.spec for c in ctx.sizes.hong], data={"speedup": beats_baseline},
    ))
    return rows


def _rmat_case(ctx: Context) -> GraphCase | None:
    return next((c for c in ctx.sizes.hong if c.kind == "rmat"), None)


def hong_fig8a(ctx: Context) -> list[Row]:
    device = ctx.devices["hong"]
    case = _rmat_case(ctx)
    if case is None:
        return []
    ts = ctx.sizes.defer_thresholds
    base = [ctx.lab.time(case.spec, "bfs", f"mapping=thread,defer_threshold={t}", device)
            for t in ts]
    warp = [ctx.lab.time(case.spec, "bfs", vwarp(32, defer_threshold=t), device) for t in ts]
    ctx.log(f"  [hong8a] baseline {series(ts, base, 0)}; warp32 {series(ts, warp, 0)}")
    common = {"paper": HONG, "device": device, "graphs": [case.spec],
              "data": {"threshold": list(ts), "baseline_us": base, "warp32_us": warp}}
    rows = []
    spread = max(base) / min(base)
    best_t = argbest(ts, base)
    rel = [b / min(base) for b in base]
    figure = f"max/min {fmt_x(spread)}, best T={best_t}; t/t_best {series(ts, rel)}"
    verdict, note = judge(
        spread >= 1.5, "the model's deferred kernel is cheap enough that any threshold works"
    )
    rows.append(Row(f"Hong 8a {case.label}: baseline+defer over threshold",
                    "baseline+defer is highly sensitive to the threshold (max/min >= 1.5x)",
                    figure, verdict, note, **common))
    interior = base[0] > 1.1 * min(base) and base[-1] > 1.1 * min(base)
    figure = (f"T={ts[0]}: {fmt_x(base[0] / min(base))}, T={ts[-1]}: "
              f"{fmt_x(base[-1] / min(base))} of best (T={best_t})")
    verdict, note = judge(
        interior,
        "a small threshold defers many vertices, but the model charges the extra block-wide "
        "expansions less than the GTX260 paid for them"
        if base[0] <= 1.1 * min(base)
        else "a large threshold leaves few outliers on this scaled-down graph",
    )
    rows.append(Row(f"Hong 8a {case.label}: baseline+defer extremes",
                    "too small a threshold (extra deferred work) and too large a one (imbalance "
                    "persists) are both slower than the best (> 1.1x)",
                    figure, verdict, note, **common))
    spread_w = max(warp) / min(warp)
    figure = f"max/min {fmt_x(spread_w)}; t/t_best {series(ts, [w / min(warp) for w in warp])}"
    verdict, note = judge(
        spread_w <= 1.25,
        "the model charges every deferred vertex a queue atomic and a block-wide expansion "
        "even when warp32 already balanced it, so small thresholds still cost",
    )
    rows.append(Row(f"Hong 8a {case.label}: warp32+defer over threshold",
                    "with warp32 the time is insensitive to the threshold (max/min <= 1.25x)",
                    figure, verdict, note, **common))
    return rows


def hong_fig8b(ctx: Context) -> list[Row]:
    device = ctx.devices["hong"]
    case = _rmat_case(ctx)
    if case is None:
        return []
    cs = ctx.sizes.chunks
    times = [ctx.lab.time(case.spec, "bfs", vwarp(32, distribution="dynamic", chunk=c), device)
             for c in cs]
    ctx.log(f"  [hong8b] warp32+dynamic {series(cs, times, 0)}")
    best = min(times)
    rel = [t / best for t in times]
    common = {"paper": HONG, "device": device, "graphs": [case.spec],
              "data": {"chunk": list(cs), "time_us": times}}
    rows = []
    figure = (f"best chunk={argbest(cs, times)}; chunk {cs[0]}: {fmt_x(rel[0])}, "
              f"chunk {cs[-1]}: {fmt_x(rel[-1])} of best")
    small_bad, large_bad = rel[0] > 1.1, rel[-1] > 1.1
    verdict, note = judge(
        small_bad and large_bad,
        "the modelled queue atomic per chunk is cheap next to a chunk's expansion"
        if not small_bad
        else "few enough chunks remain on this scaled-down graph that the tail stays short",
    )
    rows.append(Row(f"Hong 8b {case.label}: chunk size trade-off",
                    "small chunks pay queue overhead, large chunks imbalance: both ends slower "
                    "than the best (> 1.1x)", figure, verdict, note, **common))
    run, longest = 0, 0
    for r in rel:
        run = run + 1 if r <= 1.2 else 0
        longest = max(longest, run)
    figure = f"{longest} consecutive sizes within 1.2x of best; t/t_best {series(cs, rel)}"
    verdict, note = judge(
        longest >= 4,
        "the model serialises the queue grabs on one counter, so the time halves with each "
        "doubling of the chunk until the tail of the last large chunks takes over, which "
        "leaves a narrow optimum",
    )
    rows.append(Row(f"Hong 8b {case.label}: chunk size plateau",
                    "time is relatively insensitive over a wide range of chunk sizes (paper: "
                    "256-2048; agree if >= 4 consecutive sizes, an 8x span, within 1.2x of best)",
                    figure, verdict, note, **common))
    return rows


# ---------------------------------------------------------------------------------------------
# Cheng et al.: Fig. 5 (MEPS over group size S) and Fig. 6 (U_A, U_R, ME over S) -- BFS


CHENG = "Cheng 2014"
# Cheng et al. expand a frontier queue (data-driven) and compact a bitmask into the next queue
# (no atomics): driven=data with the prefix-sum push.
CHENG_KERNEL = "driven=data,push=prefix"


def _cheng_sweep(ctx: Context, case: GraphCase) -> dict[str, list[float]]:
    device = ctx.devices["cheng"]
    runs = [ctx.lab.run(case.spec, "bfs", f"{CHENG_KERNEL},{vwarp(s)}", device)
            for s in WARP_SIZES]
    out = {k: [r[k] for r in runs] for k in ("meps", "u_a", "u_r", "me", "time_us")}
    out["peak"] = [r["peak_frontier"] for r in runs]
    ctx.log(f"  [cheng] {case.label}: MEPS {series(WARP_SIZES, out['meps'], 1)}; "
            f"ME {series(WARP_SIZES, out['me'])}")
    return out


def cheng(ctx: Context) -> list[Row]:
    device = ctx.devices["cheng"]
    sweeps = {c.label: _cheng_sweep(ctx, c) for c in ctx.sizes.cheng}
    rows = []
    all_specs = [c.spec for c in ctx.sizes.cheng]
    tol = 0.005
    ua_ok = {k: monotone(v["u_a"], rising=True, tol=tol) for k, v in sweeps.items()}
    ur_ok = {k: monotone(v["u_r"], rising=False, tol=tol) for k, v in sweeps.items()}
    ua_fail = [k for k, v in ua_ok.items() if not v]
    ur_fail = [k for k, v in ur_ok.items() if not v]
    figure = (f"U_A rises on {sum(ua_ok.values())}/{len(ua_ok)} graphs"
              + (f" (not: {', '.join(ua_fail)})" if ua_fail else "")
              + f"; U_R falls on {sum(ur_ok.values())}/{len(ur_ok)}"
              + (f" (not: {', '.join(ur_fail)})" if ur_fail else ""))
    verdict, note = judge(
        not ua_fail and not ur_fail,
        "u_a and u_r are fractions of issued lane-steps, and the issued total shrinks as the "
        "divergence goes, which can bend the fractions",
    )
    rows.append(Row(
        "Cheng 6: U_A and U_R over S",
        "U_A (intra-group waste) always rises with S and U_R (inter-group) falls (tolerance "
        f"{tol})", figure, verdict, note, paper=CHENG, device=device, graphs=all_specs,
        data={k: {"u_a": v["u_a"], "u_r": v["u_r"]} for k, v in sweeps.items()},
    ))
    ur32 = {k: v["u_r"][-1] for k, v in sweeps.items()}
    figure = "max U_R(32) = " + f"{max(ur32.values()):.3g}"
    verdict, note = judge(max(ur32.values()) <= 1e-9,
                          "the model counts chunk-position lockstep across a warp's one group")
    rows.append(Row("Cheng 6: U_R at S=32", "with one group per warp (S=32) U_R is 0",
                    figure, verdict, note, paper=CHENG, device=device, graphs=all_specs,
                    data={"u_r_32": ur32}))

    for case in ctx.sizes.cheng:
        sw = sweeps[case.label]
        meps, me = sw["meps"], sw["me"]
        best_s = argbest(WARP_SIZES, meps, largest=True)
        m = dict(zip(WARP_SIZES, meps, strict=True))
        e = dict(zip(WARP_SIZES, me, strict=True))
        common = {"paper": CHENG, "device": device, "graphs": [case.spec],
                  "data": {"s": list(WARP_SIZES), **sw}}
        meps_fig = f"best S={best_s}; MEPS {series(WARP_SIZES, meps, 1)}"
        me_fig = f"ME {series(WARP_SIZES, me)}"
        if case.kind == "low-degree":
            ok = gain(m[8] / m[16]) and gain(m[8] / m[32])
            flat = max(meps[2:]) / min(meps[2:])
            verdict, note = judge(
                ok,
                f"MEPS is flat from S=4 up (within {flat - 1:.0%}): this graph's frontiers are "
                f"so small (at most {sw['peak'][0]:.2%} of N) that each level's launch is bound "
                "by launch overhead and latency, not by SIMD lanes"
                if flat < 1.05
                else "the model's memory traffic per level falls with S faster than its idle "
                "lanes grow",
            )
            rows.append(Row(f"Cheng 5 {case.label}: MEPS over S",
                            "low-degree graph: sm-16 and sm-32 are slower than sm-8 (by >= 2%)",
                            meps_fig, verdict, note, **common))
            ok = monotone(me, rising=False, tol=0.02) and e[32] < e[1]
            peak_s = argbest(WARP_SIZES, me, largest=True)
            g = ctx.lab.graph(case.spec)
            common_degree = int(np.bincount(g.indptr[1:] - g.indptr[:-1]).argmax())
            verdict, note = judge(
                ok,
                f"ME rises from S=1 to S={peak_s} ({e[1]:.2f} -> {e[peak_s]:.2f}): while S "
                f"fits the common degree ({common_degree}), a larger group adds no "
                "intra-group waste and still trims the inter-group waste",
            )
            rows.append(Row(f"Cheng 6 {case.label}: ME over S",
                            "low-degree graph: larger S only adds intra-group waste, so ME falls "
                            "with S (tolerance 0.02)", me_fig, verdict, note, **common))
        elif case.kind == "random3":
            ok = 4 <= best_s <= 16
            verdict, note = judge(
                ok, "the model's balance of divergence and idle lanes puts the peak elsewhere")
            rows.append(Row(f"Cheng 5 {case.label}: MEPS over S",
                            "uniform random, average degree 12: best S is 8, sm-32 not the best "
                            "(agree if 4..16)", meps_fig, verdict, note, **common))
        elif case.kind == "random1":
            ok = best_s == 32 and monotone([x / max(meps) for x in meps], rising=True, tol=0.02)
            verdict, note = judge(
                ok,
                f"MEPS saturates at S={best_s} (S=32 within "
                f"{1 - m[32] / max(meps):.1%}): at degree 64 a group of 32 still idles lanes in "
                "its last step, and the model's time is bound by memory traffic, which S "
                "barely changes there",
            )
            rows.append(Row(f"Cheng 5 {case.label}: MEPS over S",
                            "dense uniform random (degree 64): MEPS rises with S, best S=32",
                            meps_fig, verdict, note, **common))
        elif case.kind == "rmat1":
            ok = gain(m[16] / m[32]) and e[32] < e[16]
            verdict, note = judge(
                ok,
                "this Graph500-style RMAT (a=0.57) is far more skewed than the paper's SNAP rmat1 "
                "whose degrees mostly fall in 10-14, so S=32 keeps winning on divergence",
            )
            rows.append(Row(f"Cheng 5/6 {case.label}: sm-16 vs sm-32",
                            "rmat1 (average degree 12): best S is 16; sm-32 is slower (by >= "
                            "2%) and its ME lower", f"{meps_fig}; {me_fig}", verdict, note,
                            **common))
        elif case.kind == "kron":
            ok = best_s == 32 and e[32] > e[1]
            verdict, note = judge(
                ok, "the modelled intra-group waste of S=32 outweighs the inter-group waste "
                "it removes on this scaled-down graph")
            rows.append(Row(f"Cheng 5/6 {case.label}: scaling with S",
                            "dense skewed (kron20/rmat2-like): MEPS scales with S (best S=32) "
                            "and ME improves with S", f"{meps_fig}; {me_fig}", verdict, note,
                            **common))
    return rows


# ---------------------------------------------------------------------------------------------
# Nasre et al., IPDPS 2013: Fig. 5 (data vs topology), 8, 9, 11 (temporal), 12 (spatial)


NASRE = "Nasre 2013"
DONATE_THRESHOLDS = (0, 1, 2, 4)
# Thresholds below the paper's 10%, to see whether any switch point helps on a smaller graph.
LOW_SWITCHES = (0.002, 0.005, 0.01, 0.02, 0.05)


def _queue_bound_note(ctx: Context, case: GraphCase, algo: str) -> str:
    """Why data-driven work is dear in the model: its serialised worklist pushes, in numbers."""
    device = ctx.devices["nasre"]
    data = ctx.lab.run(case.spec, algo, "driven=data", device)
    topo = ctx.lab.run(case.spec, algo, "driven=topology", device)
    return (
        "the model serialises every worklist push (an atomic on the queue tail), so "
        f"topology-driven {algo.upper()} is {fmt_x(data['time_us'] / topo['time_us'])} faster "
        "than data-driven here and any data-driven phase of the hybrid costs more than the "
        "topology-driven sweep it replaces"
    )


def nasre_fig5(ctx: Context) -> list[Row]:
    device = ctx.devices["nasre"]
    rows = []
    for case in ctx.sizes.nasre:
        for algo in ("bfs", "sssp"):
            topo = ctx.lab.run(case.spec, algo, "driven=topology", device)
            data = ctx.lab.run(case.spec, algo, "driven=data", device)
            ctx.log(f"  [nasre5] {case.label} {algo}: topology {topo['time_us']:,.0f} us, "
                    f"data {data['time_us']:,.0f} us")
            s = speedup(data["time_us"], topo["time_us"])
            figure = (f"topology {fmt_x(s)} vs data ({fmt_us(data['time_us'])} -> "
                      f"{fmt_us(topo['time_us'])})")
            verdict, note = judge(
                gain(s),
                f"both run {data['iterations']} level-synchronous launches of a tiny frontier "
                "(at most "
                f"{data['peak_frontier']:.1%} of N), so launch overhead dominates; the "
                "topology-driven scan of all N vertices per level costs as much as the "
                "atomics it avoids",
            )
            rows.append(Row(f"Nasre 5 {case.label}: {algo.upper()} topology vs data",
                            f"{algo.upper()}: topology-driven beats data-driven (avoids atomics; "
                            ">= 1.02x)", figure, verdict, note, paper=NASRE, device=device,
                            graphs=[case.spec],
                            data={"topology_us": topo["time_us"], "data_us": data["time_us"]}))
    return rows


def nasre_fig8_9(ctx: Context) -> list[Row]:
    device = ctx.devices["nasre"]
    rows = []
    base_cfg = "driven=data,push=atomic,variable_grid=false"
    variants = {
        "chunked push": "driven=data,push=chunked,variable_grid=false",
        "atomic-free push": "driven=data,push=prefix,variable_grid=false",
        "variable grid": "driven=data,push=atomic,variable_grid=true",
    }
    for case in ctx.sizes.nasre:
        base = ctx.lab.time(case.spec, "sssp", base_cfg, device)
        speed = {k: speedup(base, ctx.lab.time(case.spec, "sssp", v, device))
                 for k, v in variants.items()}
        # Nasre et al. give no donation threshold; road degrees are <= 4, so take the best of
        # a few small ones (the paper's bars are each optimisation at its best).
        donated = {d: ctx.lab.time(case.spec, "sssp", f"{base_cfg},donate_threshold={d}", device)
                   for d in DONATE_THRESHOLDS}
        best_d = min(donated, key=donated.get)
        speed["work donation"] = speedup(base, donated[best_d])
        ctx.log(f"  [nasre8] {case.label} SSSP data-driven: "
                + ", ".join(f"{k} {v:.2f}x" for k, v in speed.items()))
        common = {"paper": NASRE, "device": device, "graphs": [case.spec],
                  "data": {"baseline_us": base, "speedup": speed, "donate_threshold": best_d}}
        thresholds = ", ".join(map(str, DONATE_THRESHOLDS))
        claims = [
            ("chunked push", "work chunking does not improve SSSP (<= 1.05x)",
             speed["chunked push"] <= 1.05,
             "the model serialises every push on the queue tail, and a chunked push replaces a "
             "warp's pushes by one atomic, so it removes most of the dominant cost"),
            ("atomic-free push", "the atomic-free (prefix-sum) push improves SSSP (>= 1.02x)",
             gain(speed["atomic-free push"]),
             "the prefix-sum pass costs more in the model than the atomics it removes"),
            ("work donation", "work donation improves SSSP on the road network (>= 1.02x; best "
             f"threshold of {thresholds})", gain(speed["work donation"]),
             "road degrees (<= 4) leave almost nothing above the block mean to donate"),
            ("variable grid", "variable kernel configuration gives the largest benefit of the "
             "four (and >= 1.02x)",
             speed["variable grid"] >= max(speed.values()) and gain(speed["variable grid"]),
             "the model has no contention among threads on shared worklist data for a smaller "
             "grid to relieve; resident warps striding over a short worklist cost it little"),
        ]
        for name, claim, ok, why in claims:
            verdict, note = judge(ok, why)
            rows.append(Row(f"Nasre 8 {case.label}: SSSP {name}", claim,
                            f"{fmt_x(speed[name])} vs unoptimised data-driven", verdict, note,
                            **common))
        topo = ctx.lab.time(case.spec, "sssp", "driven=topology", device)
        unrolled = {u: ctx.lab.time(case.spec, "sssp", f"driven=topology,unroll={u}", device)
                    for u in (2, 4)}
        best_u = min(unrolled, key=unrolled.get)
        s = speedup(topo, unrolled[best_u])
        verdict, note = judge(
            gain(s),
            "the level-synchronous functional run gives unrolling no faster propagation to "
            "exploit; only launch overhead is saved",
        )
        rows.append(Row(f"Nasre 9 {case.label}: SSSP kernel unrolling",
                        "kernel unrolling is very effective for topology-driven SSSP (>= 1.02x)",
                        f"{fmt_x(s)} at unroll={best_u} ({fmt_us(topo)} -> "
                        f"{fmt_us(unrolled[best_u])})", verdict, note, paper=NASRE,
                        device=device, graphs=[case.spec],
                        data={"topology_us": topo, "unrolled_us": unrolled}))
    return rows


def nasre_fig11(ctx: Context) -> list[Row]:
    device = ctx.devices["nasre"]
    sw = ctx.sizes.switches
    rows = []
    for case in ctx.sizes.nasre:
        for algo in ("sssp", "bfs"):
            data_run = ctx.lab.run(case.spec, algo, "driven=data", device)
            data = data_run["time_us"]
            topo = ctx.lab.time(case.spec, algo, "driven=topology", device)
            peak = data_run["peak_frontier"]
            hyb = [ctx.lab.time(case.spec, algo, f"driven=temporal,switch_to_topology={s}",
                                device) for s in sw]
            rel = [h / data for h in hyb]
            ctx.log(f"  [nasre11] {case.label} {algo}: worklist peak {peak:.2%} of N; "
                    f"topology/data {topo / data:.2f}; temporal/data {series(sw, rel)}")
            common = {"paper": NASRE, "device": device, "graphs": [case.spec],
                      "data": {"switch": list(sw), "temporal_us": hyb, "data_us": data,
                               "topology_us": topo, "worklist_peak": peak}}

            def never(threshold: float, peak: float = peak) -> str:
                return (f"the data-driven worklist peaks at {peak:.1%} of N here, so the hybrid "
                        f"never switches at {threshold:.0%} of N or above")

            curve = f"t/t_data {series(sw, rel)}; topology {topo / data:.2f}"
            if algo == "sssp":
                verdict, note = judge(
                    peak >= 0.4,
                    "the simulator's SSSP relaxes in synchronous Bellman-Ford rounds, so a "
                    "worklist holds one round's updated vertices (plus racing duplicates); the "
                    "paper's asynchronous worklist on a 23M-node road network re-pushes nodes "
                    "many times",
                )
                rows.append(Row(f"Nasre 11 {case.label}: SSSP worklist size",
                                "the SSSP worklist grows large in the middle iterations "
                                "(the paper's switch points, 40-70% of N, are reached)",
                                f"peak {peak:.1%} of N", verdict, note, **common))
                mid = [h for s, h in zip(sw, hyb, strict=True) if 0.4 <= s <= 0.7]
                best_mid = min(mid) if mid else math.inf
                solo = min(data, topo)
                figure = f"best in 40-70%: {fmt_x(speedup(solo, best_mid))} vs best solo; {curve}"
                verdict, note = judge(
                    gain(solo / best_mid),
                    never(0.4) if peak < 0.4 else _queue_bound_note(ctx, case, algo),
                )
                rows.append(Row(f"Nasre 11 {case.label}: SSSP temporal hybrid",
                                "switching to topology-driven at 40-70% of N beats both solo "
                                "approaches (peak near 60%)", figure, verdict, note, **common))
                low = [ctx.lab.time(case.spec, algo,
                                    f"driven=temporal,switch_to_topology={s}", device)
                       for s in LOW_SWITCHES]
                all_sw, all_t = (*LOW_SWITCHES, *sw), [*low, *hyb]
                best_s = argbest(all_sw, all_t)
                figure = (f"best at {best_s:.1%}: {fmt_x(speedup(solo, min(all_t)))} vs best "
                          f"solo; t/t_data {series(LOW_SWITCHES, [t / data for t in low])}")
                verdict, note = judge(gain(solo / min(all_t)), _queue_bound_note(ctx, case, algo))
                rows.append(Row(f"Nasre 11 {case.label}: SSSP hybrid, any threshold",
                                "some switch threshold (here also 0.2%-5% of N, for a smaller "
                                "graph) makes the temporal hybrid beat both solo approaches",
                                figure, verdict, note, **common))
                last = rel[-1]
                verdict, note = judge(
                    abs(last - 1) <= 0.1,
                    "the worklist reaches this threshold in the model, so the hybrid still "
                    "switches",
                )
                rows.append(Row(f"Nasre 11 {case.label}: SSSP high threshold",
                                "as the threshold grows the hybrid approaches data-driven "
                                "(within 10% at the largest)",
                                f"at {sw[-1]:.0%}: {last:.2f} of data-driven", verdict, note,
                                **common))
            else:
                first = hyb[0]
                figure = (f"at {sw[0]:.0%}: {first / data:.2f} of data, {first / topo:.2f} of "
                          "topology")
                verdict, note = judge(
                    gain(first / max(data, topo)),
                    never(sw[0]) if peak < sw[0]
                    else "the model's worklist rebuild on switching back costs less than the "
                    "paper saw",
                )
                rows.append(Row(f"Nasre 11 {case.label}: BFS switch at {sw[0]:.0%}",
                                f"BFS hybrid at a {sw[0]:.0%} threshold costs more than either "
                                "solo approach", figure, verdict, note, **common))
                later = [r for s, r in zip(sw, rel, strict=True) if s >= 0.2]
                figure = f"t/t_data for >= 20%: {min(later):.2f}..{max(later):.2f}"
                verdict, note = judge(
                    all(0.85 <= r <= 1.15 for r in later),
                    "the model's worklist rebuild on switching back is costlier than the "
                    "paper saw",
                )
                rows.append(Row(f"Nasre 11 {case.label}: BFS above 20%",
                                "above 20% the BFS hybrid performs like data-driven (within "
                                "15%)", figure, verdict, note, **common))
    return rows


def nasre_fig12(ctx: Context) -> list[Row]:
    device = ctx.devices["nasre"]
    ps = ctx.sizes.partitions
    rows = []
    for case in ctx.sizes.nasre:
        for algo in ("bfs", "sssp"):
            runs = [ctx.lab.run(case.spec, algo, f"driven=spatial,partition={p}", device)
                    for p in ps]
            times = [r["time_us"] for r in runs]
            rel = [t / times[0] for t in times]
            ctx.log(f"  [nasre12] {case.label} {algo}: t/t(P=1) {series(ps, rel)}")
            ok = all(gain(r) for r in rel[1:]) and gain(rel[-1] / rel[1])
            tie = all(not gain(r) and not loss(r) for r in rel)
            verdict, note = judge(
                ok,
                "every partition size is within 2% of P=1: visiting a partition's inactive "
                "members costs the model little on a road graph whose ids are spatially "
                "ordered, and one push per partition replaces pushes per vertex"
                if tie
                else "the model serialises worklist pushes on the queue tail and a partition is "
                "pushed once by its first store, so larger partitions cut the dominant cost; "
                "the extra inactive members cost only reads on a road graph whose ids are "
                "spatially ordered",
            )
            rows.append(Row(f"Nasre 12 {case.label}: {algo.upper()} spatial hybrid",
                            f"{algo.upper()}: partitions > 1 are slower than P=1 (pure "
                            f"data-driven) and get slower as P grows (to P={ps[-1]})",
                            f"t/t(P=1) {series(ps, rel)}", verdict, note, paper=NASRE,
                            device=device, graphs=[case.spec],
                            data={"partition": list(ps), "time_us": times}))
    return rows


# ---------------------------------------------------------------------------------------------
# WER (Huang et al., slides): wer and wer+ against the baseline and the best virtual warp


WER = "WER slides"


def wer(ctx: Context) -> list[Row]:
    device = ctx.devices["wer"]
    per: dict[str, dict[str, float]] = {}
    for case in ctx.sizes.wer:
        for algo in ctx.sizes.wer_algorithms:
            base = ctx.lab.time(case.spec, algo, "mapping=thread", device)
            vw = {w: ctx.lab.time(case.spec, algo, vwarp(w), device) for w in WARP_SIZES[1:]}
            t_wer = ctx.lab.time(case.spec, algo, "mapping=wer", device)
            t_werp = ctx.lab.time(case.spec, algo, "mapping=wer+", device)
            best_w = min(vw, key=vw.get)
            key = f"{case.label}/{algo}"
            per[key] = {"thread": base, "best_vwarp": vw[best_w], "best_w": best_w,
                        "wer": t_wer, "wer+": t_werp}
            ctx.log(f"  [wer] {key}: thread {base:,.0f}, vwarp W={best_w} {vw[best_w]:,.0f}, "
                    f"wer {t_wer:,.0f}, wer+ {t_werp:,.0f} us")
    if not per:
        return []
    common = {"paper": WER, "device": device, "graphs": [c.spec for c in ctx.sizes.wer],
              "data": per}
    rows = []

    def by_algo(num: str, den: str) -> str:
        parts = []
        for algo in ctx.sizes.wer_algorithms:
            vals = [speedup(v[den], v[num]) for k, v in per.items() if k.endswith("/" + algo)]
            parts.append(f"{algo} {geomean(vals):.2f}")
        return ", ".join(parts)

    for mapping in ("wer", "wer+"):
        for ref, paper_x, label in (
            ("thread", 2.52, "baseline"), ("best_vwarp", 1.47, "best vwarp"),
        ):
            g = geomean(speedup(v[ref], v[mapping]) for v in per.values())
            figure = f"geomean {fmt_x(g)} ({by_algo(mapping, ref)})"
            why = (
                "here the virtual warp is the best W per graph and algorithm (the paper's WC "
                "baseline had one W); a wide virtual warp already spreads each edge list over "
                "its lanes, and the model charges WER's push_job/pop_job bookkeeping on top"
                + ("; plain wer also recruits only the warp's active lanes, few in a "
                   "topology-driven BFS/SSSP level" if mapping == "wer" else "")
                if ref == "best_vwarp"
                else "redistribution overhead in the model exceeds the imbalance it removes"
            )
            verdict, note = judge(gain(g), why)
            rows.append(Row(f"WER: {mapping} vs {label}",
                            f"{mapping} beats the {label} (paper: {paper_x}x geomean over graphs "
                            "and algorithms; agree if >= 1.02x)", figure, verdict, note, **common))
    inactive = [a for a in ctx.sizes.wer_algorithms if a != "pagerank"]
    g_inactive = geomean(
        speedup(v["wer"], v["wer+"]) for k, v in per.items() if k.split("/")[1] in inactive
    )
    figure = f"geomean {fmt_x(g_inactive)} over {', '.join(inactive)}"
    verdict, note = judge(
        gain(g_inactive),
        "the simulator's frontier kernels launch only active vertices, so few threads sit "
        "idle outside the loop for wer+ to recruit",
    )
    rows.append(Row("WER: wer+ vs wer, inactive threads",
                    "where threads are inactive (BFS, SSSP) wer+ beats wer (paper: 1.7x)",
                    figure, verdict, note, **common))
    if "pagerank" in ctx.sizes.wer_algorithms:
        g_pr = geomean(
            speedup(v["wer"], v["wer+"]) for k, v in per.items() if k.endswith("/pagerank")
        )
        verdict, note = judge(
            0.95 <= g_pr <= 1.05,
            "the model's wer+ also recruits lanes past the end of the vertex range",
        )
        rows.append(Row("WER: wer+ vs wer, PageRank",
                        "without inactive threads (PageRank) wer+ and wer perform alike "
                        "(0.95x-1.05x)", f"geomean {fmt_x(g_pr)}", verdict, note, **common))
    return rows


# ---------------------------------------------------------------------------------------------
# driver


EXPERIMENTS: dict[str, Callable[[Context], list[Row]]] = {
    "hong7a": hong_fig7a,
    "hong7b": hong_fig7b,
    "hong8a": hong_fig8a,
    "hong8b": hong_fig8b,
    "cheng": cheng,
    "nasre5": nasre_fig5,
    "nasre8": nasre_fig8_9,
    "nasre11": nasre_fig11,
    "nasre12": nasre_fig12,
    "wer": wer,
}


def select(only: str | None) -> list[str]:
    """Experiment names chosen by ``--only`` (comma separated; a prefix such as ``hong`` picks
    every experiment starting with it)."""
    if only is None:
        return list(EXPERIMENTS)
    wanted = [w.strip().lower() for w in only.split(",") if w.strip()]
    if not wanted:  # --only '' is a mistake, not "everything" (the full run takes minutes)
        raise ConfigError(f"--only {only!r} names no experiment; choose from "
                          f"{list(EXPERIMENTS)} or a prefix")
    unknown = [w for w in wanted if not any(name.startswith(w) for name in EXPERIMENTS)]
    if unknown:
        raise ConfigError(
            f"unknown experiment(s) {unknown}; choose from {list(EXPERIMENTS)} or a prefix"
        )
    return [name for name in EXPERIMENTS if any(name.startswith(w) for w in wanted)]


@dataclass
class Report:
    rows: list[Row]
    skipped: dict[str, str]
    wall_s: float
    simulations: int


def run_trends(
    *,
    quick: bool = False,
    device: str | None = None,
    only: str | None = None,
    log: Callable[[str], None] | None = None,
) -> Report:
    """Run the selected experiments and return their rows (and those skipped, with why)."""
    log = log or (lambda line: print(line, file=sys.stderr, flush=True))
    names = select(only)
    size = sizes(quick)
    if device:
        get_device(device)  # an unknown device is the user's error, not a skipped experiment
    devices = {k: device or v for k, v in DEFAULT_DEVICES.items()}
    lab = Lab(log)
    ctx = Context(lab, size, devices, log)
    rows: list[Row] = []
    skipped: dict[str, str] = {}
    start = time.perf_counter()
    log(f"paper trends ({size.name} size): {', '.join(names)}")
    for name in names:
        t0 = time.perf_counter()
        log(f"[{name}] ...")
        try:
            new = EXPERIMENTS[name](ctx)
        except ConfigError as exc:
            # a knob the simulator does not model yet: the experiment cannot run at all
            skipped[name] = str(exc)
            log(f"[{name}] skipped: {exc}")
            continue
        rows.extend(new)
        log(f"[{name}] {len(new)} rows, {time.perf_counter() - t0:.1f} s")
    return Report(rows, skipped, time.perf_counter() - start, lab.simulations)


COLUMNS = (("experiment", 30), ("claim", 46), ("figure", 44), ("verdict", 8), ("note", 46))


def render(rows: Sequence[Row]) -> str:
    """A fixed-width table, long cells wrapped within their column."""
    lines = ["  ".join(f"{title:<{width}}" for title, width in COLUMNS)]
    lines.append("  ".join("-" * width for _, width in COLUMNS))
    for row in rows:
        cells = [textwrap.wrap(str(getattr(row, title)), width) or [""]
                 for title, width in COLUMNS]
        for i in range(max(len(c) for c in cells)):
            lines.append("  ".join(
                f"{(c[i] if i < len(c) else ''):<{width}}"
                for c, (_, width) in zip(cells, COLUMNS, strict=True)
            ).rstrip())
    return "\n".join(lines)


def summary(report: Report) -> str:
    agree = sum(r.verdict == AGREE for r in report.rows)
    text = (f"{agree}/{len(report.rows)} claims agree (a faster/slower claim needs a "
            f"{MARGIN:.0%} margin); {report.simulations} simulations in {report.wall_s:.1f} s")
    if report.skipped:
        text += f"; skipped: {', '.join(report.skipped)} (knobs not modelled yet)"
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options shared by ``bench/paper_trends.py`` and ``warpsweep bench trends``."""
    parser.add_argument("--quick", action="store_true",
                        help="small graphs and short sweeps (under a minute)")
    parser.add_argument("--device", default=None,
                        help="one device for every experiment (default: each paper's era: "
                        + ", ".join(f"{k} {v}" for k, v in DEFAULT_DEVICES.items()) + ")")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH",
                        help="also write the rows as a JSON list of objects")
    parser.add_argument("--only", default=None, metavar="NAMES",
                        help=f"comma-separated experiments or prefixes: {', '.join(EXPERIMENTS)}")


def run_args(args: argparse.Namespace) -> int:
    """Run from parsed options: table on stdout, progress on stderr, rows to --json."""
    if args.json is not None and (not str(args.json).strip() or args.json.is_dir()
                                  or args.json.name in ("", ".", "..")):
        # checked before the run, not found out after it
        raise ConfigError(f"--json {str(args.json)!r}: give a file name")
    report = run_trends(quick=args.quick, device=args.device, only=args.only)
    print(render(report.rows))
    print()
    print(summary(report))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        rows = [_finite(r.to_dict()) for r in report.rows]
        args.json.write_text(json.dumps(rows, indent=2, default=_jsonable) + "\n")
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float (a speedup over zero time) as None: strict JSON."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    return str(value)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="paper_trends",
        description="Rerun the papers' load-balancing comparisons on the simulator and say "
        "where it agrees with each claim.",
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run_args(args)
    except ConfigError as exc:
        print(f"paper_trends: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
