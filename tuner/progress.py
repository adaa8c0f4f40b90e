"""The live progress bar (stderr) and the final tables (stdout) of tune and sweep runs."""

from __future__ import annotations

import sys
from typing import TextIO

from tqdm import tqdm

from tuner.records import TrialRecord
from tuner.study import StudySummary


class Progress:
    """Trials done, best so far and trials/s, on stderr (silent when disabled)."""

    def __init__(self, total: int, enabled: bool, desc: str = "tune") -> None:
        self.enabled = enabled
        self._bar = tqdm(total=total, desc=desc, unit="trial", file=sys.stderr,
                         dynamic_ncols=True, disable=not enabled, smoothing=0.1)
        self._best: float | None = None
        self._studies = ""

    def advance(self, n: int = 1, best: float | None = None, better=min) -> None:
        """Count finished trials and show the best value so far."""
        if best is not None:
            self._best = best if self._best is None else better(self._best, best)
        self._bar.update(n)
        self._refresh()

    def set_best(self, best: float | None) -> None:
        """Show ``best`` as the best value so far."""
        self._best = best
        self._refresh()

    def set_studies(self, done: int, total: int) -> None:
        """Show how many studies of a sweep are finished."""
        self._studies = f"{done}/{total}"
        self._refresh()

    def _refresh(self) -> None:
        if not self.enabled:
            return
        post = {}
        if self._best is not None:
            post["best"] = f"{self._best:.6g}"
        if self._studies:
            post["studies"] = self._studies
        self._bar.set_postfix(post, refresh=False)

    def close(self) -> None:
        """Remove the bar."""
        self._bar.close()


def _config_text(params: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())


def _ratio(base: float | None, value: float) -> str:
    if base is None or not value:
        return "-"
    return f"{base / value:.2f}x"


def best_fixed_vwarp(summary: StudySummary) -> TrialRecord | None:
    """The best of the fixed virtual-warp references (first objective)."""
    obj = summary.spec.objective
    refs = [r for label, r in summary.references.items()
            if label.startswith("vwarp") and r.state == "complete"]
    return min(refs, key=lambda r: obj.sort_key(r.values)) if refs else None


def study_table(summary: StudySummary, out: TextIO | None = None) -> None:
    """Best configurations of one study against the thread baseline and the best fixed vwarp."""
    out = out or sys.stdout
    spec = summary.spec
    obj = spec.objective
    g = summary.graph
    graph = f"{g.spec} (n={g.n}, m={g.m})" if g else spec.graph
    status = "" if summary.complete else f" (stopped at {summary.done}/{summary.budget})"
    print(f"\nstudy {summary.key}{status}", file=out)
    print(f"  {graph}, {spec.algorithm} on {spec.device}, space {summary.space}, sampler "
          f"{spec.sampler}, objective {obj}", file=out)
    print(f"  {summary.done} configurations tried: {summary.evaluations} evaluated, "
          f"{summary.failed} failed; {summary.duplicates} repeats answered from the study"
          + (" (the sampler proposed only repeats: study ended early)"
             if summary.exhausted and summary.done < summary.budget else ""), file=out)
    n = spec.n_sources()
    print(f"  every configuration evaluated is ranked, references included; values are means "
          f"over {n} source{'s' if n != 1 else ''}" if n > 1 or spec.algorithm in ("bfs", "sssp")
          else "  every configuration evaluated is ranked, references included", file=out)
    thread = summary.references.get("thread")
    base = thread.values[0] if thread is not None and thread.state == "complete" else None
    fixed = best_fixed_vwarp(summary)
    fixed_v = fixed.values[0] if fixed is not None else None
    name = obj.metrics[0]
    rows = [("rank", name, "vs thread", "vs best vwarp", "configuration")]
    for i, r in enumerate(summary.best, 1):
        extra = "".join(f" {m}={v:.6g}" for m, v in zip(obj.metrics[1:], r.values[1:],
                                                         strict=True))
        origin = f"  [reference: {r.label}]" if r.role == "reference" else ""
        rows.append((str(i), f"{r.values[0]:.6g}", _speedup(obj, base, r.values[0]),
                     _speedup(obj, fixed_v, r.values[0]), _config_text(r.params) + extra + origin))
    if thread is not None:
        rows.append(("thread", _value(thread), "1.00x" if base else "-", "", "mapping=thread"))
    if fixed is not None:
        rows.append(("vwarp", f"{fixed_v:.6g}", _speedup(obj, base, fixed_v), "1.00x",
                     f"{fixed.label} (best fixed virtual warp)"))
    if len(rows) == 1:
        print("  no successful evaluation", file=out)
        return
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        cells = [r[i].rjust(widths[i]) if i else r[i].ljust(widths[i]) for i in range(4)]
        print("  " + "  ".join(cells) + "  " + r[4], file=out)


def _value(r: TrialRecord) -> str:
    return f"{r.values[0]:.6g}" if r.state == "complete" else f"failed: {r.error}"


def _speedup(obj, base: float | None, value: float) -> str:
    """How much better ``value`` is than ``base`` (>1 is better) for the first objective."""
    if base is None or value is None:
        return "-"
    if obj.directions[0] == "minimize":
        return _ratio(base, value)
    return _ratio(value, base) if base else "-"


def sweep_table(summaries: list[StudySummary], out: TextIO | None = None) -> None:
    """One line per study: best value and speedups."""
    out = out or sys.stdout
    rows = [("graph", "algo", "device", "space", "trials", "best", "vs thread", "vs vwarp",
             "best configuration")]
    for s in summaries:
        obj = s.spec.objective
        thread = s.references.get("thread")
        base = thread.values[0] if thread is not None and thread.state == "complete" else None
        fixed = best_fixed_vwarp(s)
        best = s.best[0] if s.best else None
        bv = best.values[0] if best else None
        rows.append((
            s.graph.name if s.graph is not None and s.graph.name else s.spec.graph,
            s.spec.algorithm, s.spec.device, s.space, f"{s.done}/{s.budget}",
            f"{bv:.6g}" if bv is not None else "-",
            _speedup(obj, base, bv) if bv is not None else "-",
            _speedup(obj, fixed.values[0] if fixed else None, bv) if bv is not None else "-",
            _config_text(best.params) if best else "-",
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(8)]
    print("", file=out)
    for r in rows:
        print("  ".join(r[i].ljust(widths[i]) for i in range(8)) + "  " + r[8], file=out)
