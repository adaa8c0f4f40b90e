"""``warpsweep report``: every figure rendered as a valid PNG and linked from index.html, figures
without data listed as skipped, the figure data right on rows whose answer is known."""

from __future__ import annotations

import os
import re
import struct
import time
from pathlib import Path

import pytest

from simulator.errors import ConfigError
from tuner import api
from tuner.analysis.figures import history_figure
from tuner.analysis.figures import plot_history
from tuner.analysis.figures import plot_selector
from tuner.analysis.figures import selector_figure
from tuner.analysis.report import Entry
from tuner.analysis.report import build_report
from tuner.analysis.report_data import NO_DEFER
from tuner.analysis.report_data import Filters
from tuner.analysis.report_data import Group
from tuner.analysis.report_data import History
from tuner.analysis.report_data import Run
from tuner.analysis.report_data import defer_curves
from tuner.analysis.report_data import knob_curves
from tuner.analysis.report_data import simd_bars
from tuner.analysis.report_data import time_over_w
from tuner.analysis.report_data import w_chunk_cells
from tuner.cli import main
from tuner.env import warpsweep_version
from tuner.results.configs import canonical_params
from tuner.results.query import connect
from tuner.results.records import TrialRecord
from tuner.results.store import ResultStore
from tuner.selection.selector import Evaluation
from tuner.selection.selector import GraphRegret

GRAPHS = ("rmat:scale=8,seed=1", "grid2d:rows=16,cols=16")
VWARP_SPACE = """name: vwarpmini
params:
  mapping: {choices: [vwarp]}
  w: {choices: [1, 8, 32]}
  chunk: {choices: [1, 64]}
  defer_threshold: {choices: [null, 64]}
"""
HYBRID_SPACE = """name: hybrids
params:
  driven: {choices: [temporal, spatial]}
  switch_to_topology: {choices: [0.05, 0.3, 1.0], when: {driven: temporal}}
  partition: {choices: [4, 16], when: {driven: spatial}}
"""
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
KINDS = ("time-over-w", "w-chunk", "simd")


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (which must come first); raises if not a PNG."""
    head = path.read_bytes()[:24]
    assert head[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    length, kind = struct.unpack(">I4s", head[8:16])
    assert kind == b"IHDR" and length == 13, f"{path}: first chunk is {kind!r}"
    return struct.unpack(">II", head[16:24])


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """Two tiny graphs, BFS on the H100: a grid over a small vwarp space (with deferring) and
    over the temporal and spatial hybrids' switch points, one source each."""
    root = tmp_path_factory.mktemp("report")
    vwarp, hybrid = root / "vwarpmini.yaml", root / "hybrids.yaml"
    vwarp.write_text(VWARP_SPACE)
    hybrid.write_text(HYBRID_SPACE)
    for graph in GRAPHS:
        api.tune(graph, "bfs", "h100", str(vwarp), sampler="grid", sources=1,
                 results=root / "res", workers=0)
        api.tune(graph, "bfs", "h100", str(hybrid), sampler="grid", sources=1,
                 references=False, results=root / "res", workers=0)
    return root / "res"


@pytest.fixture(scope="module")
def report(results, tmp_path_factory):
    return build_report(results, tmp_path_factory.mktemp("out") / "report")


def test_report_renders_every_figure(report, results):
    out = report.index.parent
    names = {Path(e.file).name for e in report.figures}
    graph_ids = [gid for (gid,) in connect(results).execute(
        "SELECT DISTINCT graph_id FROM trials").fetchall()]
    assert len(graph_ids) == 2
    for gid in graph_ids:
        for kind in KINDS:
            assert f"{gid}-bfs-h100-{kind}.png" in names
    assert {"bfs-h100-defer.png", "bfs-h100-switch.png"} <= names
    assert sum(n.startswith("history-") for n in names) == 4  # one per study
    assert len(report.figures) == 2 * len(KINDS) + 2 + 4
    for entry in report.figures:
        width, height = png_size(out / entry.file)
        assert width > 0 and height > 0
    # every figure of a real run has its data; only the selector (2 graphs < 3) is left out
    assert [e.title for _, e in report.skipped] == ["selector regret per held-out graph"]


def test_html_links_every_png_and_captions_each(report, results):
    out = report.index.parent
    page = report.index.read_text()
    srcs = re.findall(r'<img src="([^"]+)"', page)
    assert srcs and all((out / s).is_file() for s in srcs)
    assert all(not s.startswith("/") and not s.startswith("http") for s in srcs)
    on_disk = {p.relative_to(out).as_posix() for p in out.rglob("*.png")}
    assert set(srcs) == on_disk
    figures = re.findall(r"<figure>(.*?)</figure>", page, re.S)
    assert len(figures) == len(report.figures)
    for fig in figures:
        caption = re.search(r"<figcaption><b>(.+?)\.</b> (.+?)</figcaption>", fig, re.S)
        assert caption and len(caption.group(2)) > 40
    assert "Lower is better" in page or "lower is better" in page
    assert "thread-per-vertex baseline" in page
    assert f"warpsweep {warpsweep_version()}" in page
    assert str(results) in page
    assert "4 studies" in page
    # contents by graph, each link to a section of the page
    for anchor in re.findall(r'<a href="#([^"]+)"', page):
        assert f'id="{anchor}"' in page
    assert "rmat8-ef16-s1: <a href=" in page and "grid2d-16x16: <a href=" in page
    # the selector's absence is explained, not an empty plot
    assert re.search(r"Not drawn: selector regret per held-out graph: .+\.", page)


def test_summary_table_matches_a_direct_query(report, results):
    con = connect(results)
    best = dict(con.execute("SELECT study_key, min(time_us) FROM trials WHERE state = "
                            "'complete' GROUP BY study_key").fetchall())
    thread = dict(con.execute("SELECT study_key, time_us FROM trials WHERE label = 'thread' "
                              "AND state = 'complete'").fetchall())
    assert {s.study_key for s in report.studies} == set(best)
    for line in report.studies:
        assert line.best_time_us == pytest.approx(best[line.study_key])
        if line.space == "vwarpmini":
            # the whole grid, as tune and check count it: configurations equal to a
            # reference are tried (answered from its row) and counted as repeats
            assert line.trials == 12 and line.failed == 0
            assert line.repeats == 3  # vwarp w=1, 8, 32 at chunk 1 without deferring
            assert line.speedup == pytest.approx(thread[line.study_key] / best[line.study_key])
        else:
            assert line.trials == 5 and line.speedup is None  # no references run
    page = report.index.read_text()
    for line in report.studies:
        assert f"<td>{line.study_key}</td>" in page


def test_figures_without_data_are_skipped_with_the_reason(tmp_path):
    """Only thread runs: no W curve, heatmap, defer or switch figure, each listed with why."""
    res = tmp_path / "res"
    store = ResultStore.open(res, flush_every_s=60)
    common = dict(study_key="g.bfs.h100.t.x", graph_id="g-1", graph_spec="grid2d:rows=4,cols=4",
                  algorithm="bfs", device="h100", space="t", space_digest="d", sampler="tpe",
                  objective="time_us", seed=0)
    metrics = dict(time_us=10.0, simd_efficiency=0.25, u_a=0.0, u_r=0.75, me=0.25)
    store.add_trial(TrialRecord(role="reference", state="complete", label="thread",
                                params={"mapping": "thread"}, values=[10.0], metrics=metrics,
                                **common))
    store.add_trial(TrialRecord(role="trial", state="complete", trial=0, values=[8.0],
                                params={"mapping": "thread", "donate_threshold": 4},
                                metrics={**metrics, "time_us": 8.0}, **common))
    store.add_trial(TrialRecord(role="trial", state="failed", trial=1, error="boom",
                                params={"mapping": "thread", "block_size": 64}, **common))
    store.close()
    report = build_report(res, tmp_path / "out", selector=False)
    drawn = {Path(e.file).name for e in report.figures}
    assert drawn == {"g-1-bfs-h100-simd.png", "history-g.bfs.h100.t.x.png"}
    reasons = {e.title.split(": ")[-1]: e.caption for _, e in report.skipped}
    assert reasons == {
        "time over virtual warp size": "no complete vwarp run",
        "best time per W and chunk": "the vwarp runs cover fewer than two chunk values",
        "best time per defer threshold": "no run with a defer threshold",
        "hybrid switch points": "no temporal (driven=temporal) or spatial (driven=spatial) "
                                "hybrid run",
    }
    page = report.index.read_text()
    assert page.count('<p class="skip">Not drawn:') == 4
    assert "1 failed" in page


def test_cli_report_and_its_errors(results, tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["report", "--results", str(results), "--out", str(out), "--no-selector",
                 "--graph", "grid2d:rows=16,cols=16"]) == 0
    printed = capsys.readouterr().out
    assert f"{out / 'index.html'} (7 figures, 0 skipped" in printed
    assert "rmat8" not in (out / "index.html").read_text()
    assert main(["report", "--results", str(tmp_path / "missing"), "--out", str(out)]) == 2
    assert "does not exist" in capsys.readouterr().err
    ResultStore.open(tmp_path / "empty").close()
    assert main(["report", "--results", str(tmp_path / "empty"), "--out", str(out)]) == 2
    assert "holds no trial rows" in capsys.readouterr().err
    assert main(["report", "--results", str(results), "--out", str(out), "--algo", "sssp"]) == 2
    assert "--algo sssp" in capsys.readouterr().err
    assert main(["report", "--results", str(results), "--graph", "nope:x=1"]) == 2
    assert "matches no graph" in capsys.readouterr().err


# -- figure data on runs whose answer is known -------------------------------------------------
def run(time_us: float | None, role: str = "trial", label: str | None = None,
        state: str = "complete", study: str = "s", graph: str = "g", trial: int | None = 0,
        simd: tuple[float, float, float] = (0.5, 0.25, 0.25), **params) -> Run:
    """A run of the given knobs, defaults filled in as the store writes them."""
    done = state == "complete"
    active, u_a, u_r = simd if done else (None, None, None)
    return Run(study, role, label, state, trial, graph, f"spec:{graph}", "bfs", "h100", "sp",
               "time_us", time_us if state != "failed" else None, None,
               canonical_params(params), time_us if done else None, active, u_a, u_r, active)


def test_time_over_w_takes_the_best_complete_vwarp_run_per_w():
    runs = [run(12.0, mapping="vwarp", w=8, chunk=4), run(10.0, mapping="vwarp", w=8),
            run(5.0, state="duplicate", mapping="vwarp", w=8),  # a repeat: not new data
            run(None, state="failed", mapping="vwarp", w=2),
            run(30.0, mapping="vwarp"),  # w left out: the default, 32
            run(50.0, role="reference", label="thread", trial=None, mapping="thread"),
            run(7.0, mapping="wer+")]
    curve = time_over_w(runs)
    assert curve.points == [(8, 10.0), (32, 30.0)]
    assert curve.best_w == 8 and curve.thread_us == 50.0
    assert curve.study_best == [("sp", 7.0, "mapping=wer+")]
    assert time_over_w([run(7.0, mapping="wer+")]) is None


def test_heatmap_bins_chunks_to_powers_of_two():
    runs = [run(10.0, mapping="vwarp", w=4, chunk=3), run(9.0, mapping="vwarp", w=4, chunk=5),
            run(20.0, mapping="vwarp", w=4, chunk=100), run(15.0, mapping="vwarp", w=1)]
    heat = w_chunk_cells(runs)
    assert heat.binned and heat.ws == [1, 4] and heat.chunks == [1, 4, 128]
    assert heat.cells == {(4, 4): 9.0, (4, 128): 20.0, (1, 1): 15.0}
    assert w_chunk_cells([run(10.0, mapping="vwarp", w=w) for w in (1, 2)]) is None


def test_defer_and_switch_curves():
    group = Group("g", "spec:g", "gname", 1, 1, "bfs", "h100")
    runs = [run(10.0, mapping="vwarp", w=8), run(8.0, mapping="vwarp", w=8, defer_threshold=64),
            run(12.0, mapping="vwarp", w=8, defer_threshold=16),
            run(1.0, mapping="wer+"),  # never deferred: not on the curve
            run(20.0, driven="temporal", switch_to_topology=0.05),
            run(18.0, driven="temporal", switch_to_topology=0.06),
            run(25.0, driven="temporal", switch_to_topology=0.3)]
    (curve,) = defer_curves([(group, runs)])
    assert curve.label == "gname"
    assert curve.points == [(NO_DEFER, 10.0), (16, 12.0), (64, 8.0)]
    assert defer_curves([(group, runs[3:])]) == []
    (temporal,) = knob_curves([(group, runs)], "temporal", "switch_to_topology")
    assert temporal.points == [(0.0625, 18.0), (0.25, 25.0)]
    assert knob_curves([(group, runs)], "spatial", "partition") == []


def test_canonical_params_make_null_defaults_the_same_configuration():
    assert canonical_params({"mapping": "vwarp"}) == canonical_params(
        {"mapping": "vwarp", "w": 32, "chunk": 1, "distribution": "static", "block_size": 256,
         "driven": "topology", "unroll": 1})
    assert "defer_threshold" not in canonical_params({"mapping": "thread"})


def test_simd_bars_one_per_configuration_and_summing_to_one():
    runs = [run(50.0, role="reference", label="thread", trial=None, mapping="thread",
                simd=(0.1, 0.0, 0.9)),
            run(20.0, role="reference", label="vwarp w=8", trial=None, mapping="vwarp", w=8),
            run(20.0, mapping="vwarp", w=8),  # the same configuration as the reference
            run(9.0, mapping="wer+", simd=(0.9, 0.1, 0.0))]
    bars = simd_bars(runs)
    assert [b.name for b in bars] == ["thread", "best fixed vwarp w=8", "best overall"]
    assert [b.time_us for b in bars] == [50.0, 20.0, 9.0]
    assert all(b.total == pytest.approx(1.0) for b in bars)


# -- figure functions on hand-built data -----------------------------------------------------
def _xy(line) -> tuple[list[float], list[float]]:
    return [float(x) for x in line.get_xdata()], [float(y) for y in line.get_ydata()]


def test_history_figure_plots_trials_best_so_far_references_and_failures(tmp_path):
    hist = History("s", "vwarp", "time_us", False,
                   [(0, 30.0, "complete"), (1, 20.0, "complete"), (3, 25.0, "duplicate"),
                    (4, 12.0, "complete")],
                   [2, 5], 40.0, ("vwarp w=8", 25.0))
    fig, caption = history_figure(hist, "a history")
    (ax,) = fig.axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines) == ["trial (new configuration)", "repeat (answered from the study)",
                           "best so far", "thread per vertex (40)", "best fixed vwarp w=8 (25)",
                           "failed trial (no value)"]
    assert _xy(lines["trial (new configuration)"]) == ([0, 1, 4], [30, 20, 12])
    assert _xy(lines["repeat (answered from the study)"]) == ([3], [25])
    assert _xy(lines["best so far"]) == ([0, 1, 3, 4], [30, 20, 20, 12])
    assert lines["best so far"].get_drawstyle() == "steps-post"
    assert _xy(lines["thread per vertex (40)"])[1] == [40, 40]
    assert _xy(lines["best fixed vwarp w=8 (25)"])[1] == [25, 25]
    assert _xy(lines["failed trial (no value)"])[0] == [2, 5]  # no value: at the top
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == (
        "trial number", "time_us (µs)", "a history")
    assert ax.get_yscale() == "linear"  # 12..40: within 10x
    assert "lower is better" in caption and "2 failed trial(s)" in caption
    # the PNG is that figure
    assert plot_history(hist, "a history", tmp_path / "h.png") == caption
    assert png_size(tmp_path / "h.png") == (750, 450)


def test_history_over_a_wide_range_of_a_maximised_metric_is_on_a_log_axis():
    hist = History("s", "vwarp", "meps", True, [(0, 2.0, "complete"), (1, 50.0, "complete")],
                   [], None, None)
    fig, caption = history_figure(hist, "meps")
    (ax,) = fig.axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines) == ["trial (new configuration)", "best so far"]
    assert _xy(lines["best so far"]) == ([0, 1], [2, 50])
    assert ax.get_yscale() == "log" and ax.get_ylabel() == "meps"
    assert "higher is better" in caption and "No trial failed" in caption


def test_a_wide_heatmaps_colour_bar_reads_as_numbers(tmp_path):
    """Times spanning more than 10x put the heatmap on a log colour scale, whose labels had
    been drawn as raw math text, "$\\mathdefault{...}$" (probe OUT)."""
    from tuner.analysis.figures import save_png
    from tuner.analysis.figures import w_chunk_heatmap_figure
    from tuner.analysis.report_data import Heatmap

    heat = Heatmap([8, 32], [1, 4], {(8, 1): 20.0, (8, 4): 4e6, (32, 1): 60.0}, False)
    fig, _ = w_chunk_heatmap_figure(heat, "g")
    bar = fig.axes[-1]
    fig.canvas.draw()
    labels = [t.get_text() for t in (*bar.get_yticklabels(), *bar.get_yticklabels(minor=True))]
    assert any(labels) and not any("$" in text or "mathdefault" in text for text in labels)
    assert "1000000" in labels and not any("e+" in text for text in labels)  # (1e+06)
    save_png(fig, tmp_path / "h.png")


def test_selector_figure_has_a_bar_per_graph_and_policy_at_its_regret(tmp_path):
    policies = ["selector", "thread", "w=32"]
    rows = [GraphRegret(f"g{i}", f"rmat:scale={i}", 10.0, {"mapping": "thread"},
                        {"selector": 1.0 + i / 10, "thread": 3.0, "w=32": 1.5}, {})
            for i in range(4)]
    ev = Evaluation("bfs", "h100", policies, rows,
                    {"selector": 1.14, "thread": 3.0, "w=32": float("nan")})
    fig, caption = selector_figure(ev, "regret", names={"g1": "one"})
    (ax,) = fig.axes
    bars = {c.get_label(): list(c) for c in ax.containers}
    assert list(bars) == policies
    assert [b.get_height() for b in bars["selector"]] == pytest.approx([1.0, 1.1, 1.2, 1.3])
    assert [b.get_height() for b in bars["thread"]] == [3.0] * 4
    assert [b.get_height() for b in bars["w=32"]] == [1.5] * 4
    for k, policy in enumerate(policies):  # policies side by side about each graph's tick
        centres = [b.get_x() + b.get_width() / 2 for b in bars[policy]]
        assert centres == pytest.approx([i + (k - 1) * 0.8 / 3 for i in range(4)])
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "rmat:scale=0", "one", "rmat:scale=2", "rmat:scale=3"]
    (best,) = ax.get_lines()
    assert best.get_label() == "1.0 = best found" and _xy(best)[1] == [1, 1]
    assert ax.get_yscale() == "log"
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == (
        "held-out graph", "regret (policy's time / best time found)", "regret")
    assert "selector 1.140" in caption and "thread 3.000" in caption and "w=32 n/a" in caption
    assert plot_selector(ev, "regret", tmp_path / "sel.png", {"g1": "one"}) == caption
    assert png_size(tmp_path / "sel.png")[0] > 0


def test_entry_without_a_file_is_skipped():
    assert Entry("t", "why").skipped and not Entry("t", "c", "figures/x.png").skipped
    assert Filters().graphs == ()


def test_a_graph_named_with_dollars_is_drawn_as_written(tmp_path, capsys):
    """A graph file named `u$^$_{.txt` had made matplotlib parse its title as math and fail:
    a traceback, and a half-written report the next run refused to replace."""
    from tuner.cli import main as cli_main

    graph = tmp_path / "u$^$_{.txt"
    graph.write_text("0 1\n1 2\n2 3\n3 0\n")
    results = tmp_path / "r"
    api.tune(f"file:{graph}", trials=3, sources=1, results=str(results), sampler="random")
    assert cli_main(["report", "--results", str(results), "--out", str(tmp_path / "rep"),
                     "--no-selector"]) == 0
    assert (tmp_path / "rep" / "index.html").is_file()


def test_a_report_interrupted_leaves_the_earlier_one_whole(results, tmp_path, monkeypatch):
    """A rerun deleted the earlier report's figures first and wrote index.html last: stopped
    between, it left the old page without its figures, looking whole (and a first run
    stopped so left PNGs that the next run refused as no report's)."""
    from tuner.analysis import report as report_module

    out = tmp_path / "report"
    first = build_report(results, out)
    before = {p.name: p.read_bytes() for p in (out / "figures").glob("*.png")}
    index = (out / "index.html").read_text()
    drawn = []

    def stopped(fig, path):
        drawn.append(path)
        if len(drawn) == 3:
            raise KeyboardInterrupt
        return real(fig, path)

    real = report_module.save_png
    monkeypatch.setattr(report_module, "save_png", stopped)
    with pytest.raises(KeyboardInterrupt):
        build_report(results, out)
    assert (out / "index.html").read_text() == index
    assert {p.name: p.read_bytes() for p in (out / "figures").glob("*.png")} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]  # no draft left

    drawn.clear()
    fresh = tmp_path / "fresh"
    with pytest.raises(KeyboardInterrupt):
        build_report(results, fresh)
    monkeypatch.setattr(report_module, "save_png", real)
    assert not fresh.exists() or not any(fresh.iterdir())
    again = build_report(results, fresh)  # not refused as a directory of stray PNGs
    assert len(again.figures) == len(first.figures)

    # the page's own rename refused, the figures already in place: the earlier ones go back
    real_replace = os.replace

    def refused(src, dst):
        if str(dst).endswith("index.html"):
            raise PermissionError(13, "Permission denied", str(dst))
        return real_replace(src, dst)

    def drawn_anew(fig, path):
        real(fig, path)
        path.write_bytes(path.read_bytes() + b"anew")

    monkeypatch.setattr(report_module, "save_png", drawn_anew)
    monkeypatch.setattr(report_module.os, "replace", refused)
    with pytest.raises(ConfigError, match=r"cannot write the report there \(Permission "
                       r"denied: .*index\.html\)"):  # the path named (review CR23)
        build_report(results, out)
    monkeypatch.setattr(report_module.os, "replace", real_replace)
    assert (out / "index.html").read_text() == index
    assert {p.name: p.read_bytes() for p in (out / "figures").glob("*.png")} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh", "report"]


def test_study_lines_count_the_repeats_the_rows_count(tmp_path):
    """Only repeats stored as rows of their own had counted: a TPE study's counted repeats
    (the `repeats` column) showed as 0 where sweep, check and query said 8-13."""
    from tuner.analysis.report_data import load_results
    from tuner.analysis.report_data import study_lines
    from tuner.cli import main

    results = tmp_path / "r"
    assert main(["tune", "--graph", "rmat:scale=6", "--trials", "20", "--sources", "1",
                 "--workers", "0", "--results", str(results), "-q"]) == 0
    con = connect(results)
    counted, rows = con.execute(
        "SELECT coalesce(sum(repeats), 0), count(*) FILTER (WHERE state = 'duplicate') "
        "FROM trials WHERE role = 'trial'").fetchone()
    (line,) = study_lines(load_results(results))
    assert counted > 0 and line.repeats == counted + rows


def test_a_graph_timed_on_two_workloads_is_two_groups_each_its_own_baseline(tmp_path):
    """Studies of one graph over other sources had been pooled into one curve: the thread
    line of one study's sources, the W points the least over both."""
    from tuner.analysis.report_data import load_results
    from tuner.analysis.report_data import thread_baseline

    res = tmp_path / "res"
    for sources in (1, 2):
        api.tune("rmat:scale=7,seed=1", "bfs", trials=3, sources=sources, results=str(res))
    data = load_results(res)
    groups = data.groups()
    assert sorted(g.graph_name.split(" ", 1)[1] for g in groups) == [
        "(1 source)", "(2 sources, seed 0)"]
    for g in groups:
        runs = data.runs_of(g)
        assert len({r.study_key for r in runs}) == 1
        study = [r for r in data.runs if r.study_key == runs[0].study_key]
        assert thread_baseline(runs).time_us == thread_baseline(study).time_us
    page = build_report(str(res), tmp_path / "out", selector=False).index.read_text()
    assert "(1 source)" in page and "(2 sources, seed 0)" in page
    # each study's summary line names its own workload (the last group's had named both:
    # probe AN)
    from tuner.analysis.report_data import study_lines

    named = {line.graph.split(" ", 1)[1] for line in study_lines(data)}
    assert named == {"(1 source)", "(2 sources, seed 0)"}


def test_a_report_keeps_files_of_the_users_beside_its_figures(results, tmp_path):
    """The report replaces figures/ whole: a user's own file there had been deleted with it,
    exit 0 (probe API). Refused, naming it, and nothing of the directory touched."""
    out = tmp_path / "report"
    build_report(results, out)
    mine = out / "figures" / "thesis.pdf"
    mine.write_bytes(b"%PDF my thesis")
    (out / "figures" / "plots").mkdir()
    before = sorted(p.name for p in (out / "figures").iterdir())
    with pytest.raises(ConfigError, match=r"figures/ holds 'plots' and 1 more, which no "
                                          r"report writes"):
        build_report(results, out)
    assert mine.read_bytes() == b"%PDF my thesis"
    assert sorted(p.name for p in (out / "figures").iterdir()) == before
    # a PNG of one's own there too (probe CR): the earlier page links every PNG it wrote
    mine.unlink()
    (out / "figures" / "plots").rmdir()
    own = out / "figures" / "my-plot.png"
    own.write_bytes(b"\x89PNG mine")
    with pytest.raises(ConfigError, match=r"figures/ holds 'my-plot.png', which no report"):
        build_report(results, out)
    own.unlink()
    build_report(results, out)  # its own PNGs alone: replaced


def test_a_graph_filtered_report_says_the_selector_holds_out_every_graph(results, tmp_path):
    # `report --graph G` had drawn every graph's selector regret without a word (probe REPORT)
    name = connect(results).execute("SELECT name FROM graphs ORDER BY name").fetchone()[0]
    page = build_report(results, tmp_path / "out", Filters(graphs=(name,))).index.read_text()
    assert "not only those --graph names" in page
    page = build_report(results, tmp_path / "all").index.read_text()
    assert "not only those --graph names" not in page


def test_two_graphs_of_one_name_are_told_apart_by_their_ids(tmp_path):
    # files of one stem in two directories: two sections both headed `g: bfs on h100`
    # (probe REPORT)
    for d, edges in (("a", "0 1\n1 2\n2 3\n"), ("b", "0 1\n1 2\n2 0\n0 3\n")):
        (tmp_path / d).mkdir()
        (tmp_path / d / "g.txt").write_text(edges)
        api.tune(f"file:{tmp_path / d / 'g.txt'}", "bfs", trials=2, sources=1, workers=0,
                 results=tmp_path / "res")
    page = build_report(tmp_path / "res", tmp_path / "out", selector=False).index.read_text()
    ids = [gid for (gid,) in connect(tmp_path / "res").execute(
        "SELECT graph_id FROM graphs ORDER BY graph_id").fetchall()]
    assert len(ids) == 2 and all(f"g ({gid}): bfs on h100" in page for gid in ids)


def test_a_selector_group_left_out_beside_one_drawn_is_listed_skipped(tmp_path):
    # SSSP's one graph beside BFS's three: its selector figure had been neither drawn nor
    # listed among the skipped; one graph of two workloads was counted "2 graph(s)" (probe
    # REPORT)
    res = tmp_path / "res"
    for spec in ("rmat:scale=7,seed=1", "grid2d:rows=8,cols=8", "random:n=128,deg=4,seed=1"):
        api.tune(spec, "bfs", trials=2, sources=1, workers=0, results=res)
    api.tune("rmat:scale=7,seed=1,weights=random", "sssp", trials=2, sources=1, workers=0,
             results=res)
    api.tune("rmat:scale=7,seed=1,weights=random", "sssp", trials=2, sources=2, workers=0,
             results=res)
    report = build_report(res, tmp_path / "out")
    skipped = {e.title: e.caption for _, e in report.skipped}
    assert "needs 3" in skipped["sssp on h100: selector regret per held-out graph"]
    assert "1 graph(s), 2 workloads" in report.index.read_text()
    # a --graph page's selector figure names the other graphs too, not by cut-off specs
    # (review CR17)
    from tuner.analysis.report_data import load_results as report_results

    labels = report_results(str(res), Filters(graphs=("rmat7-ef16-s1",))).graph_labels()
    assert {"grid2d-8x8", "random-n128-deg4-s1"} <= set(labels.values())



def test_a_killed_reports_draft_is_removed_by_the_next(results, tmp_path):
    # SIGKILL leaves `.OUT.draft-PID/` full of PNGs, which nothing had removed (probe REPORT);
    # a running report's draft is left alone
    out = tmp_path / "rep"
    day_ago = time.time() - 2 * 24 * 3600
    drafts = {}
    for kind, pid in (("stale", 2**22 + 7), ("alive", os.getppid()), ("fresh", 2**22 + 8),
                      ("user's", 2**22 + 9)):  # past Linux's largest pid: none runs
        d = drafts[kind] = tmp_path / f".rep.draft-{pid}"
        (d / "figures").mkdir(parents=True)
        (d / "figures" / "x.png").write_bytes(b"png")
        if kind == "user's":  # not what a draft holds
            (d / "notes.txt").write_text("mine")
        if kind != "fresh":  # a run on another machine may be writing a fresh one
            os.utime(d, (day_ago, day_ago))
    build_report(results, out, selector=False)
    assert [k for k, d in drafts.items() if not d.exists()] == ["stale"]


def _disk(path) -> int:
    return os.stat(path).st_dev


@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="no /dev/shm here")
def test_a_report_into_a_link_to_another_disk_is_written(results, tmp_path):
    """An --out on another disk than its parent (a link to it, or a mount point) had failed
    after drawing every figure: "Invalid cross-device link", the draft drawn beside the path
    given and moved across (probe FILESYS)."""
    import shutil
    import tempfile

    other = Path(tempfile.mkdtemp(dir="/dev/shm"))
    try:
        if _disk(other) == _disk(tmp_path):
            pytest.skip("/dev/shm is on the same disk as the test's directory here")
        link = tmp_path / "link"
        link.symlink_to(other)
        for _ in range(2):  # a fresh report, then one over it
            report = build_report(results, link, selector=False)
            assert (other / "index.html").is_file() and report.index == link / "index.html"
            assert any((other / "figures").glob("*.png"))
        assert sorted(p.name for p in other.iterdir()) == ["figures", "index.html"]
        assert sorted(p.name for p in tmp_path.iterdir()) == ["link"]
    finally:
        shutil.rmtree(other, ignore_errors=True)


def test_a_report_out_under_home_is_written_there(results, tmp_path, monkeypatch):
    """`--out '~/rep'` had made a directory named `~` here, where `--results '~/res'` reads
    from the home directory (probe FILESYS)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "home").mkdir()
    build_report(results, "~/rep", selector=False)
    assert (tmp_path / "home" / "rep" / "index.html").is_file()
    assert not (tmp_path / "~").exists()


def test_a_report_stopped_between_its_moves_is_replaced_by_the_next(results, tmp_path):
    """A stop (SIGKILL) after the new figures/ moved in but before index.html did leaves an
    older page over figures it does not link: every later report into that --out had been
    refused, calling the report's own PNGs foreign (probe R27). The figures' manifest tells
    them the report's."""
    import shutil

    out, other = tmp_path / "out", tmp_path / "other"
    build_report(results, out, selector=False, filters=Filters(graphs=(GRAPHS[0],)))
    build_report(results, other, selector=False)
    assert set(os.listdir(other / "figures")) - set(os.listdir(out / "figures"))
    shutil.rmtree(out / "figures")
    os.replace(other / "figures", out / "figures")  # the first move of a report into out
    report = build_report(results, out, selector=False)
    linked = set(re.findall(r'figures/([^"]+?\.png)', report.index.read_text()))
    assert linked == {p.name for p in (out / "figures").glob("*.png")}
    (out / "figures" / "mine.png").write_bytes(PNG_SIGNATURE)  # not the report's: refused
    with pytest.raises(ConfigError, match="'mine.png', which no report writes"):
        build_report(results, out, selector=False)


def test_a_report_interrupted_while_moving_in_keeps_the_earlier_one(results, tmp_path,
                                                                   monkeypatch):
    """Ctrl-C between the two moves: the earlier report's figures go back beside its page
    (they had been deleted with the draft, the new figures left under the old page)."""
    from tuner.analysis import report as report_module

    out = tmp_path / "out"
    build_report(results, out, selector=False, filters=Filters(graphs=(GRAPHS[0],)))
    before = sorted(os.listdir(out / "figures"))
    page = (out / "index.html").read_text()
    replace = os.replace

    def interrupted(src, dst):
        if Path(dst).name == "index.html":
            raise KeyboardInterrupt
        replace(src, dst)

    monkeypatch.setattr(report_module.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build_report(results, out, selector=False)
    monkeypatch.setattr(report_module.os, "replace", replace)
    assert sorted(os.listdir(out / "figures")) == before
    assert (out / "index.html").read_text() == page


def test_the_selector_caption_says_which_means_are_over_fewer_graphs():
    """The report's caption had set a mean over one graph beside means over five, unsaid,
    where `select evaluate` names it (review SELECT2)."""
    import math

    from tuner.analysis.figures import selector_figure
    from tuner.selection.selector import Evaluation
    from tuner.selection.selector import GraphRegret

    rows = [GraphRegret(f"g{i}", f"rmat:scale={i}", 10.0, {}, {
        "selector": 1.1, "always thread": 2.0 if i == 0 else math.nan}, {}) for i in range(5)]
    ev = Evaluation("bfs", "h100", ["selector", "always thread"], rows,
                    {"selector": 1.1, "always thread": 2.0})
    _, caption = selector_figure(ev, "t")
    assert "always thread 2.000 (over 1 of 5 graphs)" in caption
    assert "selector 1.100," in caption


def test_the_selector_section_names_the_graphs_the_evaluation_left_out(tmp_path):
    """Graphs `select evaluate` leaves out (one graph under two specs) had simply been
    missing from the report's figure (review SELECT2)."""
    from tuner.cli import main

    space = tmp_path / "small.yaml"
    space.write_text("name: small\ndescription: tiny\nparams:\n  mapping: {choices: [thread, "
                     "vwarp]}\n  w:\n    choices: [2, 32]\n    when: {mapping: vwarp}\n")
    results = tmp_path / "r"
    for graph in ("grid2d:rows=1,cols=2", "rmat:scale=1", "rmat:scale=6,seed=1",
                  "grid2d:rows=8,cols=8", "random:n=64,deg=4,seed=1", "road:rows=8,seed=1"):
        assert main(["tune", "--graph", graph, "--algo", "bfs", "--space", str(space),
                     "--sampler", "grid", "--trials", "3", "--workers", "0", "--sources", "1",
                     "--results", str(results), "-q"]) == 0
    assert main(["report", "--results", str(results), "--out", str(tmp_path / "page")]) == 0
    page = (tmp_path / "page" / "index.html").read_text()
    assert "left out rmat1" in page and "same features as grid2d-1x2" in page
