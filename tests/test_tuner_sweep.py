"""Sweep files: cross product, overrides, errors with key and line, and a tiny sweep run."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest

from simulator.errors import ConfigError
from simulator.errors import GraphError
from simulator.yamldoc import parse_yaml
from tuner.cli import main
from tuner.results.store import read_trials
from tuner.tuning.evaluate import SimulatorBackend
from tuner.tuning.plan import check_spec
from tuner.tuning.plan import load_spaces
from tuner.tuning.plan import run_studies
from tuner.tuning.progress import sweep_table
from tuner.tuning.spec import StudySpec
from tuner.tuning.sweep import load_sweep
from tuner.tuning.sweep import parse_sweep

REPO = Path(__file__).resolve().parent.parent

TINY = """\
trials: 6
sources: 1
sampler: random
references: false
graphs:
  - rmat:scale=7,seed=1
algorithms: [bfs, {algorithm: cc, trials: 4}]
devices: [h100]
spaces: [vwarp]
"""


def parse(text: str):
    return parse_sweep(parse_yaml(text, "s.yaml"))


def test_cross_product_and_overrides():
    specs = parse("""\
trials: 10
seed: 3
graphs: [rmat:scale=7, {graph: "grid2d:rows=8", trials: 20, sources: 2}]
algorithms: [bfs, {algorithm: pagerank, trials: 5}]
devices: [h100, c2050]
spaces: [vwarp, {space: vwarp, sampler: grid}]
""")
    assert len(specs) == 2 * 2 * 2 * 2
    by = {(s.graph.split(":")[0], s.algorithm, s.device, s.sampler): s for s in specs}
    assert by[("rmat", "bfs", "h100", "tpe")].trials == 10
    assert by[("grid2d", "bfs", "h100", "tpe")].trials == 20  # graph entry
    assert by[("grid2d", "pagerank", "h100", "tpe")].trials == 5  # algorithm beats graph
    assert by[("grid2d", "bfs", "c2050", "grid")].sources == 2
    assert all(s.seed == 3 for s in specs)
    assert specs[0].graph == "rmat:scale=7,ef=16,a=0.57,b=0.19,c=0.19,seed=0"  # canonical


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("graph: [x]\n", "s.yaml:1: graph: unknown key 'graph'"),
        ("graphs: [rmat:scale=7]\nalgorithms: [bfs]\ndevices: [h100]\n",
         "s.yaml:1: missing `spaces`"),
        ("trials: many\n" + TINY.split("\n", 1)[1], "s.yaml:1: trials: `trials` must be an "
         "integer >= 1, got 'many'"),
        (TINY.replace("[bfs,", "[bfs, bc,"), "s.yaml:7: algorithms.1: unknown algorithm 'bc'"),
        (TINY.replace("[h100]", "[h100, gtx9]"), "s.yaml:8: devices.1: unknown device 'gtx9'"),
        (TINY.replace("rmat:scale=7,seed=1", "rmat:scale=x"), "s.yaml:6: graphs.0:"),
        (TINY.replace("[vwarp]", "[vwarp, warpzone]"),
         "s.yaml:9: spaces.1: unknown search space 'warpzone'"),
        (TINY.replace("sampler: random", "sampler: bayes"),
         "s.yaml:3: sampler: unknown sampler 'bayes'"),
        (TINY.replace("{algorithm: cc, trials: 4}", "{algo: cc}"),
         "s.yaml:7: algorithms.1.algo: unknown key 'algo'"),
        (TINY.replace("{algorithm: cc, trials: 4}", "{trials: 4}"),
         "a algorithm entry needs `algorithm:`"),
        (TINY.replace("references: false", "references: maybe"), "must be true or false"),
        (TINY.replace("sources: 1", "objective: speed"), "unknown objective metric 'speed'"),
        (TINY.replace("graphs:\n  - rmat:scale=7,seed=1", "graphs: []"), "non-empty list"),
        ("- a\n", "a sweep must be a mapping"),
        (TINY.replace("[bfs,", "[bfs, bfs,"),
         "s.yaml:7: algorithms.1: the same algorithm as algorithms.0 (line 7)"),
        ("description: [1, 2]\n" + TINY, "s.yaml:1: description: description is text"),
        ("description: true\n" + TINY,
         "description: description is text, not a bool ('True'): quote it"),
    ],
)
def test_bad_sweeps_name_key_and_line(text, expected):
    with pytest.raises(ConfigError) as info:
        parse(text)
    assert expected in str(info.value)


def test_shipped_sweeps_parse():
    for name in ("quick", "paper"):
        specs = load_sweep(REPO / "sweeps" / f"{name}.yaml")
        assert specs and all(s.trials for s in specs)
    paper = load_sweep(REPO / "sweeps" / "paper.yaml")
    files = {s.graph.split(":", 1)[1].split(",")[0] for s in paper if s.graph.startswith("file")}
    assert files and all(f.startswith("../shared/graphs/") for f in files)
    if (REPO.parent / "shared" / "graphs").is_dir():  # a checkout with shared/ beside it
        assert all((REPO / f).exists() for f in files)
    assert {s.device for s in paper} >= {"gtx260", "c2050", "quadro6000"}


def test_unreadable_sweep_file(tmp_path, capsys):
    assert main(["sweep", str(tmp_path / "none.yaml"), "--workers", "0"]) == 2
    assert "cannot read" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("graphs: [a\n")
    assert main(["sweep", str(bad), "--workers", "0"]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2:1: invalid YAML" in err and "unicode string" not in err


def test_sweep_of_two_tiny_studies_in_process_and_resumed(tmp_path, capsys):
    sweep = tmp_path / "tiny.yaml"
    sweep.write_text(TINY)
    results = tmp_path / "res"
    argv = ["sweep", str(sweep), "--workers", "0", "--results", str(results), "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "bfs" in out and "cc" in out and "6/6" in out and "4/4" in out
    table = read_trials(results).to_pylist()
    per_study = {}
    for r in table:
        per_study.setdefault((r["study_key"], r["algorithm"]), []).append(r["trial"])
    assert sorted(len(v) for v in per_study.values()) == [4, 6]
    assert all(len(v) == len(set(v)) for v in per_study.values())
    assert main(argv) == 0  # resumed: both studies already complete, nothing re-run
    assert read_trials(results).num_rows == len(table)
    assert "0 evaluations" in capsys.readouterr().out


def test_a_graph_file_that_does_not_parse_stops_the_sweep_before_any_study(tmp_path, capsys):
    """Every graph file of a sweep is read before its first study runs: a bad one is one
    line naming it, and the studies listed before it have not run (nothing written)."""
    bad = tmp_path / "bad.txt"
    bad.write_text("a b\n1 2\n")
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f'graphs: ["rmat:scale=6,seed=1", "file:{bad}"]\nalgorithms: [bfs]\n'
                     "devices: [h100]\nspaces: [vwarp]\ntrials: 3\n")
    results = tmp_path / "r"
    assert main(["sweep", str(sweep), "--workers", "0", "--results", str(results)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "line 1" in err and len(err.strip().splitlines()) == 1
    assert err.startswith(f"warpsweep: error: {sweep}:1: ")  # the entry's line (probe TUNE)
    assert not list(results.rglob("*.parquet"))


def test_a_generated_graph_too_large_stops_the_sweep_before_any_study(tmp_path, capsys,
                                                                      monkeypatch):
    """Its memory estimate needs only the spec: it had been refused as its own study began,
    after the studies before it, leaving a journal `best` asked to resume (probe SPACE)."""
    monkeypatch.setenv("WARPSWEEP_MAX_MEMORY", "20MB")
    sweep = tmp_path / "s.yaml"
    sweep.write_text('graphs: ["rmat:scale=6,seed=1", "rmat:scale=20,seed=1"]\n'
                     "algorithms: [bfs]\ndevices: [h100]\nspaces: [vwarp]\ntrials: 3\n")
    results = tmp_path / "r"
    assert main(["sweep", str(sweep), "--workers", "0", "--results", str(results)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"warpsweep: error: {sweep}:1: graph spec 'rmat:scale=20")
    assert "needs about" in err and not results.exists()
    assert main(["tune", "--graph", "rmat:scale=20,seed=1", "--trials", "2", "--workers", "0",
                 "--results", str(results)]) == 2
    assert not results.exists()
    # on a cluster the workers build it, and may hold more than the driver (review CR10)
    from tuner.api import _read_graph_files

    specs = [check_spec(StudySpec(graph="rmat:scale=20,seed=1", algorithm="bfs",
                                  device="h100", space="vwarp"))]
    _read_graph_files(specs, "auto", None)
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:9")
    _read_graph_files(specs, None, 2)
    with pytest.raises(GraphError, match="needs about"):  # in-process all the same
        _read_graph_files(specs, None, 0)


def test_sweep_refusals_found_when_studies_are_checked_name_the_entry(tmp_path, capsys):
    """SSSP on a graph without weights, and one study listed twice (a space under two
    names), had been refused naming neither the line nor the entries (probe TUNE)."""
    import shutil

    from search_spaces.loader import SPACES_DIR

    shutil.copy(SPACES_DIR / "vwarp.yaml", tmp_path / "copy.yaml")
    sweep = tmp_path / "s.yaml"
    sweep.write_text("graphs:\n  - rmat:scale=6,seed=1,weights=random\n  - rmat:scale=6\n"
                     "algorithms: [sssp]\ndevices: [h100]\nspaces: [vwarp]\ntrials: 3\n")
    argv = ["sweep", str(sweep), "--workers", "0", "--results", str(tmp_path / "r")]
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith(
        f"warpsweep: error: {sweep}:3: rmat:scale=6,ef=16,a=0.57,b=0.19,c=0.19,seed=0: SSSP "
        "needs edge weights")
    sweep.write_text("graphs:\n  - rmat:scale=6,seed=1\nalgorithms: [bfs]\ndevices: [h100]\n"
                     "spaces: [vwarp, copy.yaml]\ntrials: 3\n")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"warpsweep: error: {sweep}: the same study is listed twice: ")
    assert f", as spaces vwarp and {tmp_path / 'copy.yaml'} (two names of one)" in err


def test_tune_on_a_graph_file_that_does_not_parse_writes_nothing(tmp_path, capsys):
    """`tune` had made its study's journal before the file was read: the readers then named
    a study with a journal and no rows, to resume or repair (probe LD)."""
    bad = tmp_path / "trunc.gr"
    bad.write_text("p sp 4 6\na 1 2 1\n")
    results = tmp_path / "r"
    assert main(["tune", "--graph", f"file:{bad}", "--trials", "2", "--workers", "0",
                 "--results", str(results)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and len(err.strip().splitlines()) == 1
    assert not results.exists()


def test_a_finished_study_is_named_on_a_resume_as_on_its_first_run(tmp_path, capsys):
    """A study with nothing left to run had been summed up without its graph: the JSON gave
    its spec alone and the table its long spec instead of its name."""
    import json

    sweep = tmp_path / "s.yaml"
    sweep.write_text("graphs: ['rmat:scale=7,seed=4']\nalgorithms: [bfs]\ndevices: [h100]\n"
                     "spaces: [vwarp]\ntrials: 2\nsources: 1\n")
    graphs = []
    for _ in range(2):
        capsys.readouterr()
        assert main(["sweep", str(sweep), "--workers", "0", "--results",
                     str(tmp_path / "r"), "--json"]) == 0
        graphs.append(json.loads(capsys.readouterr().out)["studies"][0]["graph"])
    assert graphs[0] == graphs[1] and graphs[1]["name"] == "rmat7-ef16-s4"


class FailingW2Backend(SimulatorBackend):
    """The simulator, but every evaluation of W=2 fails (as a configuration may)."""

    def evaluate(self, graph, runs, algorithm, device, config):
        outcome = super().evaluate(graph, runs, algorithm, device, config)
        if config.get("w") == 2:
            return dataclasses.replace(outcome, metrics=None, spread={},
                                       error="ConfigError: made to fail")
        return outcome


def test_the_sweep_table_counts_failed_evaluations(tmp_path):
    # a failed reference had shown only in --json (probe BB): each study's line says so
    specs = [check_spec(StudySpec(graph=f"rmat:scale=7,seed={seed}", algorithm="bfs",
                                  device="h100", space="vwarp", trials=2, sources=1))
             for seed in (1, 2)]
    result = run_studies(specs, load_spaces(specs), tmp_path / "res", workers=0,
                         backend=FailingW2Backend())
    assert all(s.failed == 1 for s in result.summaries)
    out = io.StringIO()
    sweep_table(result.summaries, out)
    lines = [line for line in out.getvalue().splitlines() if line.startswith("rmat7")]
    assert len(lines) == 2 and all(" (1 failed)" in line for line in lines)


def test_a_sweep_stopped_at_its_timeout_names_the_studies_it_never_began(tmp_path, capsys):
    """The stop's line, the table and --json had named only the studies begun: "1 unfinished
    study" of 2, the other missing everywhere (probe SP)."""
    import json

    sweep = tmp_path / "s.yaml"
    sweep.write_text('graphs: ["rmat:scale=12,seed=1", "grid2d:rows=64"]\nalgorithms: [bfs]\n'
                     "devices: [h100]\nspaces: [vwarp]\ntrials: 40\n")
    code = main(["sweep", str(sweep), "--workers", "0", "--results", str(tmp_path / "r"),
                 "--timeout", "0.01", "--json"])
    assert code in (0, 1)  # 1 where no study was begun, so none found a best
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert len(doc["studies"]) + len(doc["not_begun"]) == 2
    assert doc["not_begun"] and "grid2d:rows=64,cols=64 bfs h100 vwarp" in doc["not_begun"]
    assert f"{len(doc['not_begun'])} stud" in captured.err and "not begun" in captured.err


def test_the_sweep_table_names_each_best_values_metric(tmp_path, capsys):
    """Studies tuned for transactions and for time had shown their best values side by side
    in one unnamed column (probe SP)."""
    sweep = tmp_path / "s.yaml"
    sweep.write_text('graphs: ["rmat:scale=7,seed=1"]\nalgorithms: [bfs, {algorithm: cc, '
                     'objective: "transactions"}]\ndevices: [h100]\nspaces: [vwarp]\n'
                     "trials: 2\n")
    assert main(["sweep", str(sweep), "--workers", "0", "--results", str(tmp_path / "r"),
                 "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    bfs = next(t for t in lines if " bfs " in t)
    cc = next(t for t in lines if " cc " in t)
    assert " time_us " in bfs and " transactions " in cc


def test_a_sweep_whose_study_runs_nothing_exits_1_naming_it(tmp_path, capsys):
    """Probe DEV: a device whose blocks hold fewer threads than the space's block size runs
    none of its configurations; the sweep had exited 0 because the other study found a
    best."""
    tiny = tmp_path / "tiny.toml"
    tiny.write_text('base = "h100"\nname = "tiny-blocks"\nmax_threads_per_block = 32\n')
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f'graphs: ["rmat:scale=6,seed=1"]\nalgorithms: [bfs]\n'
                     f'devices: [h100, "{tiny}"]\nspaces: [vwarp]\ntrials: 3\nsources: 1\n'
                     "references: false\n")
    argv = ["sweep", str(sweep), "--workers", "0", "--results", str(tmp_path / "r"),
            "--no-progress"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "1 of 2 studies ran no configuration successfully" in err and "tiny-blocks" in err


def test_a_tune_whose_timeout_comes_before_its_study_opened_names_it(tmp_path, capsys):
    # it had exited 1 without a word, its --json listing the study nowhere (probe CLI)
    argv = ["tune", "--graph", "rmat:scale=9,seed=21", "--trials", "5", "--workers", "0",
            "--timeout", "1e-9", "--results", str(tmp_path / "r"), "--no-progress", "--json"]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["not_begun"] == [
        "rmat:scale=9,ef=16,a=0.57,b=0.19,c=0.19,seed=21 bfs h100 vwarp"]
    assert "stopped at --timeout 1e-09 s with 1 study not begun" in captured.err


def test_two_entries_differing_only_in_a_setting_are_refused_saying_so(tmp_path, capsys):
    # "the same study is listed twice" had not said why two samplers are one study
    sweep = tmp_path / "s.yaml"
    sweep.write_text('graphs: ["rmat:scale=6,seed=1"]\nalgorithms: [bfs]\ndevices: [h100]\n'
                     "spaces: [vwarp, {space: vwarp, sampler: random}]\ntrials: 2\n")
    assert main(["sweep", str(sweep), "--workers", "0", "--results", str(tmp_path / "r")]) == 2
    assert ("the entries differ only in sampler, which is not part of a study's identity"
            in capsys.readouterr().err)


def test_a_preset_and_a_device_file_of_its_fields_are_named_as_the_clash(tmp_path, capsys):
    """`devices: [h100, FILE]` where the file, named by its stem, is the h100's fields: one
    study, and the refusal names the two devices (probe SWEEP2: it had named neither)."""
    device = tmp_path / "h100.toml"
    device.write_text('base = "h100"\n')
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f'graphs: ["rmat:scale=6,seed=1"]\nalgorithms: [bfs]\n'
                     f"devices: [h100, {device}]\nspaces: [vwarp]\ntrials: 2\n")
    assert main(["sweep", str(sweep), "--workers", "0", "--results", str(tmp_path / "r")]) == 2
    assert f"as devices h100 and {device} (two names of one)" in capsys.readouterr().err


def test_the_sweep_table_tells_apart_two_graphs_of_one_name(tmp_path, capsys):
    """Files of one stem in two directories: the table's rows carry the graphs' ids, as the
    readers show them (probe SWEEP2: two identical rows)."""
    for folder, edges in (("a", "0 1\n1 2\n2 3\n"), ("b", "0 1\n0 2\n0 3\n1 2\n")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "tiny.el").write_text(edges)
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f"graphs: [file:{tmp_path / 'a' / 'tiny.el'}, "
                     f"file:{tmp_path / 'b' / 'tiny.el'}]\nalgorithms: [bfs]\n"
                     "devices: [h100]\nspaces: [vwarp]\ntrials: 2\n")
    assert main(["sweep", str(sweep), "--workers", "0", "--results", str(tmp_path / "r"),
                 "--no-progress"]) == 0
    rows = [line.split()[:2] for line in capsys.readouterr().out.splitlines()
            if line.startswith("tiny")]
    assert len(rows) == 2 and rows[0][1] != rows[1][1]
    assert all(r[1].startswith("(tiny-") for r in rows)


def test_a_grid_sampler_a_space_cannot_list_names_the_sweep_and_the_sampler(tmp_path, capsys):
    # the line had named only the space file, not the entry that asked for the grid
    space = tmp_path / "f.yaml"
    space.write_text("name: f\nparams:\n  driven: [temporal]\n"
                     "  switch_to_topology: {float: [0.1, 0.5]}\n")
    sweep = tmp_path / "s.yaml"
    sweep.write_text('graphs: [{graph: "rmat:scale=6,seed=1", sampler: grid}]\n'
                     f"algorithms: [bfs]\ndevices: [h100]\nspaces: [{space}]\ntrials: 2\n")
    assert main(["sweep", str(sweep), "--workers", "0", "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"warpsweep: error: {sweep}") and "sampler grid: " in err
    assert "is a float range" in err
