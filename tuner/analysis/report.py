"""``warpsweep report``: PNG figures of a results directory and one HTML page tying them together.

``build_report`` picks the figures the results can fill (drawn by ``tuner.analysis.figures``),
lists the others as skipped with the reason, and writes ``index.html``.
"""

from __future__ import annotations

import glob
import html
import os
import re
import shutil
import time
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from datetime import UTC
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from simulator.errors import ConfigError
from simulator.errors import WarpsweepError
from simulator.strategy import Strategy
from simulator.temp_files import beside
from tuner.analysis.figures import FIGURES_DIR
from tuner.analysis.figures import adaptation_figure
from tuner.analysis.figures import defer_curves_figure
from tuner.analysis.figures import history_figure
from tuner.analysis.figures import save_png
from tuner.analysis.figures import selector_figure
from tuner.analysis.figures import simd_breakdown_figure
from tuner.analysis.figures import switch_curves_figure
from tuner.analysis.figures import time_over_w_figure
from tuner.analysis.figures import w_chunk_heatmap_figure
from tuner.analysis.report_data import Filters
from tuner.analysis.report_data import Group
from tuner.analysis.report_data import ResultsData
from tuner.analysis.report_data import StudyLine
from tuner.analysis.report_data import defer_curves
from tuner.analysis.report_data import describe
from tuner.analysis.report_data import histories
from tuner.analysis.report_data import knob_curves
from tuner.analysis.report_data import load_results
from tuner.analysis.report_data import repeats_of
from tuner.analysis.report_data import simd_bars
from tuner.analysis.report_data import study_lines
from tuner.analysis.report_data import time_over_w
from tuner.analysis.report_data import w_chunk_cells
from tuner.env import warpsweep_version
from tuner.results.configs import config_text
from tuner.results.location import Location
from tuner.results.location import home_path


# -- the report ------------------------------------------------------------------------------
@dataclass
class Entry:
    """One figure of the page (file relative to index.html), or a skipped one with why."""

    title: str
    caption: str
    file: str | None = None

    @property
    def skipped(self) -> bool:
        """Whether the figure was left out (caption holds the reason)."""
        return self.file is None


@dataclass
class Section:
    """A heading of the page and its figures."""

    anchor: str
    heading: str
    note: str = ""
    entries: list[Entry] = field(default_factory=list)


@dataclass
class Report:
    """What ``build_report`` wrote."""

    index: Path
    sections: list[Section]
    studies: list[StudyLine]
    selector_s: float = 0.0

    @property
    def figures(self) -> list[Entry]:
        """Figures rendered."""
        return [e for s in self.sections for e in s.entries if not e.skipped]

    @property
    def skipped(self) -> list[tuple[Section, Entry]]:
        """Figures left out, with their section."""
        return [(s, e) for s in self.sections for e in s.entries if e.skipped]


class _Names:
    """Unique slugged file names under the figures directory."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def __call__(self, *parts: str) -> str:
        stem = slug("-".join(parts))
        name, i = stem, 2
        while name in self.used:
            name, i = f"{stem}-{i}", i + 1
        self.used.add(name)
        return f"{FIGURES_DIR}/{name}.png"


def slug(text: str) -> str:
    """Lower-case letters, digits, dots and dashes only (a safe file name)."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.") or "figure"


# Where a drawn figure goes: (its file under the report, its title, the figure).
Sink = Callable[[str, str, Figure], None]


def _draw(section: Section, sink: Sink, names: _Names, title: str, name: tuple[str, ...],
          data: Any, missing: str, figure: Callable[..., tuple[Figure, str]],
          *args: Any) -> None:
    """Draw one figure (``figure(*args, title)``) into the section and hand it to ``sink``,
    or list it as skipped when its data is absent."""
    if not data:
        section.entries.append(Entry(title, missing))
        return
    file = names(*name)
    fig, caption = figure(*args, title)
    sink(file, title, fig)
    section.entries.append(Entry(title, caption, file))


def _sections(data: ResultsData, filters: Filters, sink: Sink,
              selector: bool, adaptation: bool = False) -> tuple[list[Section], float]:
    """Every section of the report, each figure handed to ``sink``; and the seconds the
    selector's section took."""
    names = _Names()
    sections = [_group_section(data, group, sink, names) for group in data.groups()]
    algo_devices = sorted({(g.algorithm, g.device) for g in data.groups()})
    for algo, device in algo_devices:
        sections.append(_across_section(data, algo, device, sink, names))
    start = time.perf_counter()
    if selector:
        sections.append(_selector_section(data, filters, sink, names))
    selector_s = time.perf_counter() - start
    if adaptation:
        sections.append(_adaptation_section(data, sink, names))
    return sections, selector_s


def report_figures(results: str | Path, filters: Filters | None = None,
                   selector: bool = False) -> dict[str, Figure]:
    """Every figure ``warpsweep report`` draws from ``results`` (``filters`` as its options),
    as matplotlib Figures by title, nothing written: for a notebook. ``selector`` adds the
    selector's regret figures (it trains models, so it is off by default)."""
    data = load_results(results, filters or Filters())
    drawn: dict[str, Figure] = {}

    def keep(file: str, title: str, fig: Figure) -> None:
        drawn[title if title not in drawn else f"{title} ({Path(file).stem})"] = fig

    _sections(data, filters or Filters(), keep, selector)
    return drawn


def build_report(results: str | Path, out: str | Path, filters: Filters | None = None,
                 selector: bool = True, adaptation: bool = False) -> Report:
    """Render every figure the results can fill into ``out/figures`` and write
    ``out/index.html``; figures without data are listed as skipped with the reason.
    ``adaptation`` adds the per-iteration oracle's gap per graph (it simulates the
    candidates, cached under ~/.cache/warpsweep/adaptive)."""
    # None had been a TypeError, or "results directory 'None' does not exist" (probe API)
    for name, value in (("results", results), ("out", out)):
        if not isinstance(value, str | os.PathLike):
            raise ConfigError(f"build_report's {name} is a directory's path, not {value!r}")
    filters = filters or Filters()
    if str(out).startswith("~"):  # as --results takes it (a literal ~ directory had been made)
        out = home_path(out, "--out")
    _check_out(out, results)
    data = load_results(results, filters)
    out = Path(out)
    # drawn beside it, then put in place: an interrupted run had left an earlier report's
    # index.html without its figures (deleted first), looking whole
    draft = beside(out, f"draft-{os.getpid()}")
    if out.is_dir() and _disk_of(out) != _disk_of(draft.parent):
        # a mount point, or a link to another disk: drawn inside it, so that the moves
        # into place stay on one disk (beside it, they had failed: probe FILESYS)
        draft = out / f".report.draft-{os.getpid()}"
    _remove_abandoned_drafts(draft)
    try:
        (draft / FIGURES_DIR).mkdir(parents=True)
        sections, selector_s = _sections(
            data, filters, lambda file, _, fig: save_png(fig, draft / file), selector,
            adaptation)
        lines = study_lines(data)
        # what this report drew: a later report knows its figures/ by it even where a stop
        # came between moving them in and moving index.html (probe R27)
        (draft / FIGURES_DIR / FIGURES_MANIFEST).write_text(
            "".join(f"{p.name}\n" for p in sorted((draft / FIGURES_DIR).glob("*.png"))),
            encoding="utf-8")
        (draft / "index.html").write_text(render_html(data, filters, sections, lines),
                                          encoding="utf-8")
        out.mkdir(parents=True, exist_ok=True)
        _put_in_place(draft, out)
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""  # which of the report's paths
        raise ConfigError(f"--out {str(out)!r}: cannot write the report there "
                          f"({exc.strerror or exc}{where})") from None
    finally:
        shutil.rmtree(draft, ignore_errors=True)
    return Report(out / "index.html", sections, lines, selector_s)


def _disk_of(path: Path) -> int | None:
    """The device a path (its link followed) lies on; None where it cannot be read."""
    try:
        return os.stat(path).st_dev
    except OSError:
        return None


def _put_in_place(draft: Path, out: Path) -> None:
    """Move a drawn report into ``out``; where the last move fails, the earlier report's
    figures go back (a failed rename of index.html had left the old page over the new
    figures)."""
    earlier = draft / f"{FIGURES_DIR}.earlier"
    if (out / FIGURES_DIR).exists():  # an earlier report's (the directory is its own)
        os.replace(out / FIGURES_DIR, earlier)
    try:
        os.replace(draft / FIGURES_DIR, out / FIGURES_DIR)
        os.replace(draft / "index.html", out / "index.html")
    except BaseException:  # Ctrl-C too: the draft, and the earlier figures in it, go next
        if (out / FIGURES_DIR).exists() and not (draft / FIGURES_DIR).exists():
            os.replace(out / FIGURES_DIR, draft / FIGURES_DIR)  # the draft's, removed with it
        if earlier.exists():
            os.replace(earlier, out / FIGURES_DIR)
        raise


def _remove_abandoned_drafts(draft: Path) -> None:
    """Drafts beside the report of runs killed before they cleaned up (SIGKILL: their PNGs
    had piled up, probe REPORT): those a day old, holding only what a draft holds, whose
    process no longer runs here (a run on another machine sharing the disk writes its own
    draft for minutes; a directory of the user's by that name is left alone, review CR17)."""
    prefix = draft.name[:draft.name.rindex("draft-") + len("draft-")]
    for other in draft.parent.glob(f"{glob.escape(prefix)}*"):
        pid = other.name[len(prefix):]
        if other == draft or not re.fullmatch(r"[0-9]{1,9}", pid):
            continue
        try:
            old = time.time() - other.stat().st_mtime > ABANDONED_DRAFT_S
            held = {p.name for p in other.iterdir()}
        except OSError:
            continue
        if not old or not held <= DRAFT_ENTRIES:
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(other, ignore_errors=True)
        except OSError:  # another user's process
            continue


ABANDONED_DRAFT_S = 24 * 3600
DRAFT_ENTRIES = {FIGURES_DIR, f"{FIGURES_DIR}.earlier", "index.html"}


REPORT_TITLE = "<title>warpsweep report</title>"
FIGURES_MANIFEST = ".warpsweep-figures"  # in figures/: the PNGs the report that drew it wrote


def _check_out(out: str | Path, results: str | Path) -> None:
    """The report directory is the report's own: its figures/*.png are replaced and its
    index.html overwritten, so it must not be the results, a file, or a page of another."""
    text = str(out)
    if not text.strip():
        raise ConfigError("--out is empty; give the report's directory")
    if text.strip() == "-":  # had made a directory named '-'
        raise ConfigError("--out -: a report is a directory (index.html and figures/), not a "
                          "stream; give the report's directory")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {text!r} is a file; give the report's directory")
    if out.is_symlink() and not out.exists():  # (found after every figure was drawn)
        raise ConfigError(f"--out {text!r} is a link to {os.readlink(out)}, which is not "
                          "there (a disk not mounted?): mount it, or give another directory")
    location = Location.of(results)
    if location.local:
        root = Path(location.root).resolve()
        if out.resolve().is_relative_to(root):
            raise ConfigError(f"--out {text!r} is inside the results directory "
                              f"{str(results)!r}; write the report elsewhere")
    index = out / "index.html"
    ours = False
    if index.is_file():
        with open(index, "rb") as f:
            head = f.read(4096).decode("utf-8", "replace")
        if REPORT_TITLE not in head:
            raise ConfigError(f"--out {text!r} holds an index.html that is not a warpsweep "
                              "report (it would be overwritten); choose another directory")
        ours = True
    figures = out / FIGURES_DIR
    if figures.exists() and not figures.is_dir():
        raise ConfigError(f"--out {text!r} holds a file named {FIGURES_DIR}, where a report "
                          "writes its figures; choose another directory")
    manifest = figures / FIGURES_MANIFEST
    drawn = (set(manifest.read_text("utf-8", "replace").split())
             if manifest.is_file() else set())
    if not ours and not drawn and any(figures.glob("*.png")):
        raise ConfigError(f"--out {text!r} holds {FIGURES_DIR}/*.png but no warpsweep "
                          "report (a report replaces the PNGs there); choose another directory")
    if figures.is_dir():
        # the directory is replaced whole: anything in it the earlier report did not write
        # would be deleted with it (a thesis.pdf, then a PNG of one's own, had gone without a
        # word, exit 0: probes API and CR); its PNGs are those its page links
        linked = set(re.findall(rf'{FIGURES_DIR}/([^"\'<>]+?\.png)',
                                index.read_text("utf-8", "replace"))) if ours else set()
        foreign = sorted(p.name for p in figures.iterdir()
                         if not (p.is_file() and (p.name == FIGURES_MANIFEST or (
                             p.suffix == ".png" and p.name in linked | drawn))))
        if foreign:
            raise ConfigError(f"--out {text!r}: {FIGURES_DIR}/ holds {foreign[0]!r}"
                              + (f" and {len(foreign) - 1} more" if len(foreign) > 1 else "")
                              + f", which no report writes (a report replaces {FIGURES_DIR}/ "
                              "whole); move it, or choose another directory")


def _group_anchor(group: Group) -> str:
    return slug("-".join(p for p in (group.graph_id, group.algorithm, group.device,
                                      group.workload) if p))


def _group_section(data: ResultsData, group: Group, sink: Sink, names: _Names) -> Section:
    runs = data.runs_of(group)
    size = f"n = {group.n:,}, m = {group.m:,}; " if group.n is not None else ""
    section = Section(_group_anchor(group),
                      f"{group.graph_name}: {group.algorithm} on {group.device}",
                      f"{size}graph spec {group.graph_spec}")
    head = f"{group.graph_name}, {group.algorithm} on {group.device}"
    stem = tuple(p for p in (group.graph_id, group.algorithm, group.device, group.workload)
                 if p)
    curve = time_over_w(runs)
    _draw(section, sink, names, f"{head}: time over virtual warp size", (*stem, "time-over-w"),
          curve, "no complete vwarp run", time_over_w_figure, curve)
    heat = w_chunk_cells(runs)
    _draw(section, sink, names, f"{head}: best time per W and chunk", (*stem, "w-chunk"),
          heat, "the vwarp runs cover fewer than two chunk values", w_chunk_heatmap_figure, heat)
    bars = simd_bars(runs)
    _draw(section, sink, names, f"{head}: SIMD efficiency breakdown", (*stem, "simd"),
          bars, "no complete run with SIMD metrics", simd_breakdown_figure, bars)
    for hist in histories(runs):
        title = f"{head}: optimisation history of the {hist.space} study"
        # failed trials alone leave the time axis empty: a figure of crosses and no times
        failed = f" ({len(hist.failed)} failed)" if hist.failed else ""
        _draw(section, sink, names, title, ("history", hist.study_key),
              hist.trials, f"the study has no complete trial{failed}", history_figure, hist)
    return section


def _across_section(data: ResultsData, algo: str, device: str, sink: Sink,
                    names: _Names) -> Section:
    groups = [(g, data.runs_of(g)) for g in data.groups()
              if (g.algorithm, g.device) == (algo, device)]
    graphs = len({g.graph_id for g, _ in groups})  # a graph of two workloads is one
    note = f"{graphs} graph(s)" + (f", {len(groups)} workloads" if len(groups) > graphs else "")
    section = Section(slug(f"across-{algo}-{device}"), f"Across graphs: {algo} on {device}",
                      note)
    defer = defer_curves(groups)
    _draw(section, sink, names, f"{algo} on {device}: best time per defer threshold",
          (algo, device, "defer"), defer, "no run with a defer threshold", defer_curves_figure,
          defer)
    temporal = knob_curves(groups, "temporal", "switch_to_topology")
    spatial = knob_curves(groups, "spatial", "partition")
    _draw(section, sink, names, f"{algo} on {device}: hybrid switch points",
          (algo, device, "switch"), temporal or spatial,
          "no temporal (driven=temporal) or spatial (driven=spatial) hybrid run",
          switch_curves_figure, temporal, spatial)
    return section


def _selector_section(data: ResultsData, filters: Filters, sink: Sink,
                      names: _Names) -> Section:
    note = "Graphs held out one at a time; see tuner/selection/selector.py."
    if filters.graphs:  # it had drawn every graph's regret beside the rest of a --graph page
        note += (" Every graph of the results is held out in turn, not only those --graph "
                 "names: each is judged by a selector trained on the others.")
    title = "selector regret per held-out graph"
    evaluations, why, left = selector_evaluations(data.results, filters)
    for ev in evaluations:  # graphs the evaluation left out, as `select evaluate` names them
        for gid, reason in (getattr(ev, "dropped", None) or {}).items():  # (SELECT2)
            note += f" {ev.algorithm} on {ev.device}: left out {gid}: {reason}."
    for ev in evaluations:  # GPU times stand for simulated ones there (probe MEASURED2)
        measured = [r for r in getattr(ev, "rows", []) or [] if r.measured]
        if measured:
            note += (f" {ev.algorithm} on {ev.device}: the times of {len(measured)} of "
                     f"{len(ev.rows)} graphs are measured on the GPU (tune --verify, "
                     f"{ev.measured_gpu}) where measured.")
    section = Section("selector", "The selector's evaluation", note)
    graph_names = data.graph_labels()
    if not evaluations:
        section.entries.append(Entry(title, why))
        return section
    for algo, dev, reason in left:  # beside a group drawn, one left out had gone unsaid
        section.entries.append(Entry(f"{algo} on {dev}: {title}", reason))
    for ev in evaluations:
        name = f"{ev.algorithm} on {ev.device}: {title}"
        rows = list(getattr(ev, "rows", []) or [])
        _draw(section, sink, names, name, (ev.algorithm, ev.device, "selector"),
              len(rows) >= 3, f"fewer than 3 graphs to hold out ({len(rows)})",
              partial(selector_figure, names=graph_names), ev)
    return section


def _adaptation_section(data: ResultsData, sink: Sink, names: _Names) -> Section:
    """Per graph: the per-iteration oracle's time over the best constant candidate's
    (``tuner.selection.adaptive``); under 2% the constant is kept."""
    from tuner.selection.adaptive import CANDIDATES
    from tuner.selection.adaptive import adaptation_rows

    section = Section("adaptation", "Per-iteration adaptation: the oracle's gap",
                      "The best configuration chosen independently per iteration among "
                      f"{len(CANDIDATES)} candidates, switches paid "
                      "(tuner/selection/adaptive.py), over the best constant candidate; where it "
                      "saves under 2% the constant is kept.")
    title = "oracle over best constant per graph"
    groups = sorted({(g.graph_spec, g.algorithm, g.device) for g in data.groups()})
    rows, skipped = adaptation_rows(groups)
    why = "; ".join(skipped) or "no BFS, SSSP or CC group"
    _draw(section, sink, names, title, ("adaptation",), rows, why, adaptation_figure, rows)
    return section


def selector_evaluations(results: str, filters: Filters
                         ) -> tuple[list[Any], str, list[tuple[str, str, str]]]:
    """The selector's evaluations (``tuner.selection.selector.evaluate_groups``), or none and
    why not, and the groups it left out with why."""
    try:
        from tuner.selection import selector
    except ImportError as exc:
        return [], f"tuner.selection.selector is not available ({exc})", []
    try:
        evaluations, left = selector.evaluate_groups(results, algorithm=filters.algorithm,
                                                     device=filters.device, seed=0)
    except (WarpsweepError, ValueError) as exc:
        return [], f"the selector could not be evaluated: {exc}", []
    except Exception as exc:  # noqa: BLE001 - a broken optional section must not sink the rest
        return [], f"the selector failed ({type(exc).__name__}: {exc})", []
    if not evaluations:  # each group's own reason ("at least 3 graphs" had been said of 3)
        why = "; ".join(f"{a} on {d}: {reason}" for a, d, reason in left)
        return [], f"the selector had nothing to evaluate ({why or 'no group'})", left
    return list(evaluations), "", left


# -- the page --------------------------------------------------------------------------------
STYLE = """
body { font-family: sans-serif; max-width: 1100px; margin: 2em auto; color: #222; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
td.num { text-align: right; } .meta { color: #555; } .skip { color: #8a6d3b; }
figure { margin: 1.5em 0; } img { max-width: 100%; border: 1px solid #eee; }
figcaption { max-width: 900px; color: #333; } code { font-size: 0.9em; }
"""


def render_html(data: ResultsData, filters: Filters, sections: Sequence[Section],
                lines: Sequence[StudyLine]) -> str:
    """The report page: header, contents by graph, summary table, figures, skipped list."""
    e = html.escape
    drawn = [r for r in data.runs if r.role == "trial"]
    failed = sum(1 for r in data.runs if r.state == "failed")
    trials = (f"{sum(s.trials for s in lines)} configurations tried and "
              f"{repeats_of(drawn)} repeats, {len(data.runs) - len(drawn)} baseline runs; "
              f"{failed} evaluation{'s' if failed != 1 else ''} failed")
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           REPORT_TITLE, f"<style>{STYLE}</style></head><body>",
           "<h1>warpsweep report</h1>",
           f'<p class="meta">Results <code>{e(str(data.results))}</code> ({e(describe(filters))})'
           f"; generated {e(now)} by warpsweep {e(warpsweep_version())}; "
           f"{len(data.studies())} studies: {trials}.</p>",
           "<p>Times are simulated microseconds (mean over the sources of each run); every "
           "figure says under it what it shows.</p>"]
    out += _contents(data, sections)
    out += _summary(lines)
    for s in sections:
        out.append(f'<h2 id="{e(s.anchor)}">{e(s.heading)}</h2>')
        if s.note:
            out.append(f'<p class="meta">{e(s.note)}</p>')
        for entry in s.entries:
            if entry.skipped:
                out.append(f'<p class="skip">Not drawn: {e(entry.title)}: {e(entry.caption)}.</p>')
                continue
            out += ["<figure>", f'<img src="{e(entry.file)}" alt="{e(entry.title)}">',
                    f"<figcaption><b>{e(entry.title)}.</b> {e(entry.caption)}</figcaption>",
                    "</figure>"]
    skipped = [(s, x) for s in sections for x in s.entries if x.skipped]
    out.append('<h2 id="skipped">Skipped figures</h2>')
    if skipped:
        out.append("<ul>")
        out += [f'<li><a href="#{e(s.anchor)}">{e(x.title)}</a>: {e(x.caption)}</li>'
                for s, x in skipped]
        out.append("</ul>")
    else:
        out.append("<p>None: the results had data for every figure.</p>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _contents(data: ResultsData, sections: Sequence[Section]) -> list[str]:
    e = html.escape
    by_anchor = {s.anchor: s for s in sections}
    out = ['<h2 id="contents">Contents</h2>', "<ul>", '<li><a href="#summary">Summary</a></li>']
    graphs: dict[str, list[Group]] = {}
    for g in data.groups():
        graphs.setdefault(g.graph_name, []).append(g)
    for name, groups in graphs.items():
        links = ", ".join(f'<a href="#{e(_group_anchor(g))}">{e(g.algorithm)} on '
                          f"{e(g.device)}</a>" for g in groups if _group_anchor(g) in by_anchor)
        out.append(f"<li>{e(name)}: {links}</li>")
    for s in sections:
        if s.anchor.startswith("across-") or s.anchor in ("selector", "adaptation"):
            out.append(f'<li><a href="#{e(s.anchor)}">{e(s.heading)}</a></li>')
    out += ['<li><a href="#skipped">Skipped figures</a></li>', "</ul>"]
    return out


def _times(value: float | None) -> str:
    return f"{value:.2f}x" if value is not None else "-"


def _summary(lines: Sequence[StudyLine]) -> list[str]:
    e = html.escape
    measured = any(s.measured is not None or s.best_measured_us is not None for s in lines)
    out = ['<h2 id="summary">Summary</h2>',
           "<p>Per study: configurations tried (as tune and check count them: those "
           "answered from a baseline's run too), proposals answered from the study "
           "(repeats), failures, the fastest configuration evaluated (trials and baselines "
           "alike) and its speedup over the thread-per-vertex baseline and over the best fixed "
           "virtual warp (above 1 is faster)"
           + ("; where the study was measured on the GPU (<code>tune --verify K</code>), the "
              "best configuration's measured time and the fastest configuration measured"
              if measured else "") + ".</p>",
           "<table><tr><th>study</th><th>graph</th><th>algorithm</th><th>device</th>"
           "<th>space</th><th>objective</th><th>configurations</th><th>repeats</th><th>failed</th>"
           "<th>best time (µs)</th><th>best configuration</th><th>vs thread</th>"
           "<th>vs best fixed vwarp</th>"
           + ("<th>best, measured (µs)</th><th>measured winner</th>" if measured else "")
           + "</tr>"]
    for s in lines:
        best = f"{s.best_time_us:.4g}" if s.best_time_us is not None else "-"
        config = s.best_config + (f" [reference {s.best_label}]" if s.best_label else "")
        cells = [s.study_key, s.graph, s.algorithm, s.device, s.space, s.objective]
        nums = [str(s.trials), str(s.repeats), str(s.failed), best]
        out.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in cells)
                   + "".join(f'<td class="num">{e(c)}</td>' for c in nums)
                   + f"<td><code>{e(config)}</code></td>"
                   + "".join(f'<td class="num">{_times(v)}</td>'
                             for v in (s.speedup, s.speedup_vwarp))
                   + (_measured_cells(s) if measured else "") + "</tr>")
    out.append("</table>")
    return out


def _measured_cells(line: StudyLine) -> str:
    """The best configuration's measured time and the study's measured winner (its measured
    and simulated times, its rank in the search), or dashes where not measured."""
    e = html.escape
    best = f"{line.best_measured_us:.4g}" if line.best_measured_us is not None else "-"
    w = line.measured
    if w is None:
        return f'<td class="num">{best}</td><td>-</td>'
    config = config_text(Strategy.parse(w.config).to_params())
    return (f'<td class="num">{best}</td><td><code>{e(config)}</code>: {w.measured_us:.4g} µs '
            f"measured, {w.time_us:.4g} simulated, rank {w.rank} of the search when measured "
            f"({w.measured} measured on {e(w.gpu_name or 'the GPU')})</td>")
