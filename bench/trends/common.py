"""What every paper-trends experiment shares: the table's Row and its rendering, the verdict,
the simulation cache (``Lab``), the graphs and sweeps of each size, and small helpers.

The experiments live one paper to a module beside this one; ``bench/paper_trends.py`` runs them.
"""

from __future__ import annotations

import math
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

from simulator import functional_run
from simulator import load_graph
from simulator import simulate

# The repository's sibling `shared/graphs` (real graphs); experiments skip them when absent.
SHARED_GRAPHS = Path(__file__).resolve().parents[3] / "shared" / "graphs"

# Each paper on a GPU of its era; --device overrides them all.
DEFAULT_DEVICES = {"hong": "gtx260", "cheng": "c2050", "nasre": "quadro6000", "wer": "h100"}

AGREE, DISAGREE = "agree", "disagree"
# a claim whose compared runs are one simulation here (the variant never ran in another form:
# a switch point the worklist never reaches, a threshold no vertex passes): it could not fail
UNTESTED = "untested"
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


def vacuous(reason: str) -> tuple[str, str]:
    """The verdict of a claim that cannot fail on this graph, and why (``UNTESTED``)."""
    return UNTESTED, f"not tested here: {reason}"


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


# the real graphs a size names that are absent here (said in the log, not dropped unsaid)
MISSING: set[str] = set()


def _shared(name: str, options: str = "") -> str | None:
    path = SHARED_GRAPHS / name
    if not path.is_file():
        MISSING.add(name)
        return None
    return f"file:{path}" + (f",{options}" if options else "")


def _cases(*cases: tuple[str, str | None, str]) -> tuple[GraphCase, ...]:
    return tuple(GraphCase(label, spec, kind) for label, spec, kind in cases if spec)


def sizes(quick: bool) -> Sizes:
    """The default size (minutes on two cores) or the quick one (under a minute)."""
    MISSING.clear()
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
    """A ratio; four decimals near 1, where the claims' bounds (0.95, 1.02, 1.05) lie and two
    had printed 1.0545 as the bound it fails (three, 1.0503)."""
    return f"{value:.4f}x" if 0.9 <= value <= 1.1 else f"{value:.2f}x"


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
