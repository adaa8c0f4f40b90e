"""What a GPU run is checked against, and how (numpy only: CI runs it without a GPU)."""

from __future__ import annotations

import numpy as np

from simulator.functional import FunctionalRun

# PageRank's kernels compute in float64 as the functional run does, in another order
PAGERANK_ROUNDING = 1e-6


def reference_output(fr: FunctionalRun, driven: str) -> np.ndarray:
    """The functional run's answer for a driven form: data-driven PageRank computes its own."""
    if fr.algorithm == "pagerank" and driven == "data" and fr.worklist_run is not None:
        return fr.worklist_run.output
    return fr.output


def reference_iterations(fr: FunctionalRun, driven: str) -> int:
    """The functional run's iterations for a driven form (PageRank's data form: its own)."""
    if fr.algorithm == "pagerank" and driven == "data" and fr.worklist_run is not None:
        return len(fr.worklist_run.iterations)
    return len(fr.iterations)


def pagerank_slack(fr: FunctionalRun, out_degree: np.ndarray, damping: float = 0.85,
                   tolerance: float = 1e-6) -> np.ndarray:
    """What data-driven PageRank's rank of each vertex may differ by between two runs whose
    roundings retire (stop updating) a vertex one iteration apart: each in-neighbour u's
    rank may be off by up to ``tolerance``, which moves v's by damping x that / out-degree(u)
    (hubs gather many such): a summation order that rounds one vertex across the tolerance."""
    deg = np.asarray(out_degree, dtype=np.float64)
    inv = np.divide(1.0, deg, out=np.zeros(deg.size), where=deg > 0)
    rows = np.repeat(np.arange(fr.n), np.diff(fr.indptr))
    gathered = np.bincount(rows, weights=inv[fr.indices], minlength=fr.n)
    return 2.0 * tolerance * damping * gathered


def check_output(algorithm: str, got: np.ndarray, reference: np.ndarray,
                 tolerance: float = 1e-6, slack: np.ndarray | None = None) -> str | None:
    """None when ``got`` is the reference's answer, else one line saying how it is not: BFS
    levels and CC labels equal exactly, SSSP's float32 distances within 1e-5 relative of the
    functional run's (float32 too, as the kernels sum them: both can stand 1e-4 or more from
    exact float64 distances on long paths, probe KERN), PageRank's ranks within
    2 x ``tolerance`` (+ rounding, + ``slack`` per vertex: ``pagerank_slack`` for the
    data-driven form)."""
    got = np.asarray(got)
    if got.shape != reference.shape:
        return f"{got.size} values for {reference.size} vertices"
    if algorithm in ("bfs", "cc"):
        bad = np.flatnonzero(got.astype(np.int64) != reference.astype(np.int64))
        if bad.size:
            v = int(bad[0])
            return (f"{bad.size} vertices differ (vertex {v}: {int(got[v])}, expected "
                    f"{int(reference[v])})")
        return None
    if algorithm == "sssp":
        finite = np.isfinite(reference)
        if not np.array_equal(finite, np.isfinite(got)):
            return f"{int((finite != np.isfinite(got)).sum())} vertices differ in reachability"
        close = np.isclose(got[finite], reference[finite], rtol=1e-5, atol=0.0)
        if not close.all():
            return f"{int((~close).sum())} distances differ beyond float32 rounding"
        return None
    if not np.isfinite(got).all():
        return "ranks that are not finite"
    limit = 2.0 * tolerance + PAGERANK_ROUNDING * float(np.abs(reference).max(initial=0.0))
    allowed = limit + (0.0 if slack is None else slack)
    excess = np.abs(got - reference) - allowed
    if excess.size and excess.max() > 0:
        v = int(np.argmax(excess))
        return (f"{int((excess > 0).sum())} ranks differ beyond what is allowed (vertex {v}: "
                f"{float(got[v]):.6g}, expected {float(reference[v]):.6g}, allowed "
                f"{float(np.broadcast_to(allowed, got.shape)[v]):.3g})")
    return None
