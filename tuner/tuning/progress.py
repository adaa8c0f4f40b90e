"""The live progress bar (stderr) and the final tables (stdout) of tune and sweep runs."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from tqdm import tqdm

from tuner.results.configs import config_text
from tuner.results.records import TrialRecord
from tuner.tuning.spec import StudySummary

PROGRESS_MODES = ("bar", "log", "off")
LOG_EVERY_S = 5.0


class Progress:
    """Configurations tried and baseline references run, out of those planned, the best value
    so far (references included), rate and ETA, on stderr: the words of the final table
    (configurations, references, evaluations, repeats).

    ``bar`` draws a tqdm bar (a terminal); ``log`` prints a line every few seconds (output
    that is not a terminal: CI logs, ``nohup``); ``off`` prints nothing. Work resumed from an
    earlier session counts as done but not towards the rate, so the ETA holds after a resume.
    With ``verbose``, every finished evaluation also gets its own line.
    """

    def __init__(self, total: int, mode: str = "off", desc: str = "tune",
                 verbose: bool = False, out: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 log_every_s: float = LOG_EVERY_S, references: int = 0) -> None:
        if mode not in PROGRESS_MODES:
            raise ValueError(f"progress mode must be one of {PROGRESS_MODES}, got {mode!r}")
        self.mode = mode
        self.desc = desc
        self.verbose = verbose
        self.total = total  # configurations and references planned
        self.planned_references = references
        self.done = 0
        self.resumed = 0
        self.references = 0
        self._out = out
        self._clock = clock
        self._log_every_s = log_every_s
        self._start = clock()
        self._last_log = self._start
        self._best: float | None = None
        self._studies = ""
        self._bar = tqdm(total=total, desc=desc, file=self.out, dynamic_ncols=True,
                         disable=mode != "bar", smoothing=0.1,
                         bar_format="{desc}: {percentage:3.0f}%|{bar}| {postfix} "
                                    "[{elapsed}<{remaining}]")

    @property
    def out(self) -> TextIO:
        """Where progress goes (stderr unless given)."""
        return self._out or sys.stderr

    # -- counting ----------------------------------------------------------------------
    def resume(self, n: int, references: int = 0) -> None:
        """Count configurations and references (``references`` of the ``n``) finished in an
        earlier session (not towards the rate)."""
        if n <= 0:
            return
        self.done += n
        self.resumed += n
        self.references += references
        if self.mode == "bar":  # tqdm's rate leaves out `initial`, so its ETA holds too
            self._bar.n += n
            self._bar.initial += n
            self._bar.last_print_n += n
            self._bar.refresh()

    def advance(self, n: int = 1, reference: bool = False) -> None:
        """Count configurations tried (``reference``: baseline references run)."""
        if n <= 0:
            return
        self.done += n
        if reference:
            self.references += n
        self._bar.update(n)
        self._refresh()

    def discount(self, n: int) -> None:
        """Take configurations off the total (a study that ended early: its space ran dry)."""
        if n <= 0:
            return
        self.total -= n
        self._bar.total = self.total
        self._refresh()

    def set_best(self, best: float | None) -> None:
        """Show ``best`` as the best value so far."""
        self._best = best
        self._refresh()

    def set_studies(self, done: int, total: int) -> None:
        """Show how many studies of a sweep are finished."""
        self._studies = f"{done}/{total}"
        self._refresh()

    def warn(self, text: str) -> None:
        """A line the user should see whatever the verbosity (unless progress is off)."""
        if self.mode == "off":
            return
        if self.mode == "bar":
            self._bar.write(f"{self.desc}: {text}", file=self.out)
        else:
            print(f"{self.desc}: {text}", file=self.out, flush=True)

    def note(self, text: str) -> None:
        """A line about one evaluation (printed with ``verbose`` only, above the bar)."""
        if self.verbose and self.mode != "off":
            if self.mode == "bar":
                self._bar.write(f"{self.desc}: {text}", file=self.out)
            else:
                print(f"{self.desc}: {text}", file=self.out, flush=True)

    # -- figures -----------------------------------------------------------------------
    def rate(self) -> float | None:
        """Configurations and references per second in this session (resumed ones left
        out)."""
        elapsed = self._clock() - self._start
        new = self.done - self.resumed
        return new / elapsed if new > 0 and elapsed > 0 else None

    def eta_s(self) -> float | None:
        """Seconds left at this session's rate."""
        rate = self.rate()
        return max(0, self.total - self.done) / rate if rate else None

    def counts(self) -> str:
        """``53/60 configurations, 7/7 references (50 resumed)``: what the bar and the log
        line say."""
        configs = self.done - self.references
        text = f"{configs}/{self.total - self.planned_references} configurations"
        if self.planned_references or self.references:
            text += f", {self.references}/{max(self.planned_references, self.references)} "
            text += "references"
        if self.resumed:
            text += f" ({self.resumed} resumed)"
        return text

    def status(self) -> str:
        """The one-line status of a log line."""
        parts = [self.counts()]
        if self._studies:
            parts.append(f"studies {self._studies}")
        if self._best is not None:
            parts.append(f"best {self._best:.6g}")
        rate, eta = self.rate(), self.eta_s()
        if rate is not None:
            parts.append(rate_text(rate))
        if eta is not None:
            parts.append(f"ETA {_clock_text(eta)}")
        return f"{self.desc}: " + ", ".join(parts)

    def _refresh(self) -> None:
        if self.mode == "bar":
            post = [self.counts()]
            if self._studies:
                post.append(f"studies {self._studies}")
            if self._best is not None:
                post.append(f"best {self._best:.6g}")
            self._bar.set_postfix_str(", ".join(post), refresh=False)
        elif self.mode == "log":
            now = self._clock()
            if now - self._last_log >= self._log_every_s:
                self._last_log = now
                print(self.status(), file=self.out, flush=True)

    def close(self) -> None:
        """Remove the bar, or print the last log line."""
        self._bar.close()
        if self.mode == "log" and self.done:
            print(self.status(), file=self.out, flush=True)


def rate_text(per_second: float) -> str:
    """Evaluations per second as a reader wants it: ``12.3/s``, or below one a second the
    seconds each takes (``0.0/s`` says nothing of a study of 70-second trials)."""
    if per_second >= 0.95:
        return f"{per_second:.1f}/s"
    if per_second <= 0:
        return "0/s"
    return f"{1 / per_second:.3g} s each"


def _clock_text(seconds: float) -> str:
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
    return f"{s // 60}:{s % 60:02d}"


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
    status = "" if summary.complete else (
        f" (stopped at {summary.done}/{summary.budget} configurations)")
    print(f"\nstudy {summary.key}{status}", file=out)
    print(f"  {graph}, {spec.algorithm} on {spec.device}, space {summary.space}, sampler "
          f"{spec.sampler}, objective {obj}", file=out)
    print(f"  {counts_text(summary)}"
          + (" (the sampler proposed only repeats: study ended early)"
             if summary.exhausted and summary.done < summary.budget else ""), file=out)
    if summary.common_failure is not None:  # the reason had been in the rows' error alone
        reason, count = summary.common_failure
        print(f"  {count} of the {summary.failed} failures read like this one: {reason}",
              file=out)
    n = summary.n_sources
    ranked = len(summary.ranked) or len(summary.best)
    # (a run without references had been told "references included", probe TUNE)
    with_references = ", references included" if summary.references else ""
    if len(obj.metrics) > 1:  # (the table had called the front a ranking of every one)
        what = (f"the Pareto front over {', '.join(obj.metrics)} ({ranked} configuration"
                f"{'s' if ranked != 1 else ''}{with_references}), by {obj.metrics[0]}")
    else:
        what = f"every configuration evaluated is ranked{with_references}"
    if len(summary.best) < ranked:
        what += f"; the first {len(summary.best)} of {ranked} shown"
    if n > 1 or spec.algorithm in ("bfs", "sssp"):
        what += f"; values are means over {n} source{'s' if n != 1 else ''}"
    print(f"  {what}", file=out)
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
                     _speedup(obj, fixed_v, r.values[0]), config_text(r.params) + extra + origin))
    if thread is not None:
        rows.append(("thread", _value(thread), "1.00x" if base else "-", "", "mapping=thread"))
    if fixed is not None:
        rows.append(("vwarp", f"{fixed_v:.6g}", _speedup(obj, base, fixed_v),
                     "1.00x" if fixed_v else "-", f"{fixed.label} (best fixed virtual warp)"))
    if len(rows) == 1:
        print("  no successful evaluation", file=out)
        return
    # the "vs" columns only where there is a reference to compare with (--no-references)
    shown = [0, 1, 2, 3] if thread is not None or fixed is not None else [0, 1]
    widths = {i: max(len(r[i]) for r in rows) for i in shown}
    for r in rows:
        cells = [r[i].rjust(widths[i]) if i else r[i].ljust(widths[i]) for i in shown]
        print("  " + "  ".join(cells) + "  " + r[4], file=out)


def counts_text(summary: StudySummary) -> str:
    """``60 configurations tried and 7 references: 67 evaluations, 0 failed; 43 repeats
    (tried configurations the sampler proposed again: counted, not run)``: the words the
    progress line, the footer, ``--json`` and the journal use."""
    n = summary.done
    text = f"{n} configuration{'s' if n != 1 else ''} tried"
    refs = len(summary.references)
    if refs:
        text += f" and {refs} reference{'s' if refs != 1 else ''}"
    e = summary.total_evaluations
    text += f": {e} evaluation{'s' if e != 1 else ''}, {summary.failed} failed"
    answered = summary.done - summary.evaluations
    if answered > 0:
        text += (f" ({answered} configuration{'s' if answered != 1 else ''} answered from "
                 "a reference or an earlier trial)")
    r = summary.duplicates
    return text + f"; {r} repeat{'s' if r != 1 else ''} (tried configurations the sampler " \
        "proposed again: counted, not run)"


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
    # the best column's metric: in the header where every study has one, else per value
    metrics = {s.spec.objective.metrics[0] for s in summaries}
    one = next(iter(metrics)) if len(metrics) == 1 else None
    rows = [("graph", "algo", "device", "space", "configurations",
             f"best {one}" if one else "best", "vs thread", "vs vwarp", "best configuration")]
    def shown(s) -> str:
        return s.graph.name if s.graph is not None and s.graph.name else s.spec.graph

    # two graphs of one name (files of one stem in two directories) carry their ids, as the
    # readers show them (probe SWEEP2: identical rows)
    ids_of: dict[str, set[str]] = {}
    for s in summaries:
        if s.graph is not None:
            ids_of.setdefault(shown(s), set()).add(s.graph.graph_id)
    for s in summaries:
        obj = s.spec.objective
        thread = s.references.get("thread")
        base = thread.values[0] if thread is not None and thread.state == "complete" else None
        fixed = best_fixed_vwarp(s)
        best = s.best[0] if s.best else None
        bv = best.values[0] if best else None
        rows.append((
            f"{shown(s)} ({s.graph.graph_id})" if s.graph is not None
            and len(ids_of.get(shown(s), ())) > 1 else shown(s),
            s.spec.algorithm, s.spec.device, s.space,
            f"{s.done}/{s.budget}" + (f" ({s.failed} failed)" if s.failed else ""),
            (f"{bv:.6g}" + ("" if one else f" {obj.metrics[0]}")) if bv is not None else "-",
            _speedup(obj, base, bv) if bv is not None else "-",
            _speedup(obj, fixed.values[0] if fixed else None, bv) if bv is not None else "-",
            config_text(best.params) if best else "-",
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(8)]
    print("", file=out)
    for r in rows:
        print("  ".join(r[i].ljust(widths[i]) for i in range(8)) + "  " + r[8], file=out)
