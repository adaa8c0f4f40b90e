"""GPU measurements where users look (issue 43): `tune --verify K` on a results directory, then
`query`'s ``trials.measured_us`` and ``measured`` view, `best`, the report, `calibrate RESULTS`
and `select train` reading them. The GPU is the one thing stood in for: a deterministic
``measure`` that prefers virtual warps of 8 (the simulator prefers wider ones on these graphs);
the tunes, the files, the views and the verbs are the real ones, run through the CLI."""

from __future__ import annotations

import json
import math
import re
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from simulator.errors import ConfigError
from tuner.cli import main
from tuner.measure import measure as measure_module
from tuner.measure import verify as verify_module
from tuner.results.measured import measured_keys
from tuner.results.query import connect
from tuner.selection import selector as sel
from tuner.selection.selector import measured_times

GRAPHS = ("rmat:scale=8,seed=1", "rmat:scale=8,seed=2", "random:n=300,deg=6,seed=3")
W8 = "mapping=vwarp,w=8,chunk=1,distribution=static,block_size=256,driven=topology,unroll=1"


def gpu_time(config: str, slow: float = 1.0) -> float:
    """The stand-in GPU: W = 8 fastest, then the other virtual warps, thread slowest."""
    if "w=8," in config:
        return 80.0 * slow
    return (100.0 if "w=32" in config else 150.0 if "vwarp" in config else 300.0) * slow


def fake_gpu(slow: float = 1.0):
    def factory(device_index: int = 0, reps: int = 3):
        def measure(graph_spec, algorithm, config, source):
            us = gpu_time(config, slow)
            return {"measured_us": us, "kernel_us": 0.6 * us, "correct": True, "note": "",
                    "gpu_name": "Stand-in H100 GPU"}
        return measure
    return factory


def tune(results, graph: str, trials: int = 6, verify: int | None = 3, slow: float = 1.0,
         capsys=None, extra: tuple[str, ...] = ()) -> str:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(measure_module, "gpu_unavailable", lambda index=0: None)
        mp.setattr(verify_module, "gpu_measure", fake_gpu(slow))
        args = ["tune", "--graph", graph, "--algo", "bfs", "--trials", str(trials),
                "--sources", "1", "--workers", "0", "--results", str(results), "--no-progress",
                *extra]
        assert main(args + (["--verify", str(verify)] if verify else [])) == 0
    return capsys.readouterr().out if capsys is not None else ""


@pytest.fixture(scope="module")
def measured_results(tmp_path_factory):
    root = tmp_path_factory.mktemp("measured") / "results"
    for graph in GRAPHS:
        tune(root, graph)
    return root


@pytest.fixture
def results(measured_results, tmp_path):
    """A copy each test may change."""
    copy = tmp_path / "results"
    shutil.copytree(measured_results, copy)
    return copy


def cli(capsys, *args) -> tuple[int, str, str]:
    try:
        code = main(list(args))
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def raw_trial_rows(results) -> int:
    return sum(pq.read_metadata(f).num_rows for f in (results / "trials").rglob("part-*.parquet"))


# -- the views --------------------------------------------------------------------------------
def test_trials_show_measured_us_beside_time_us_on_the_measured_rows(results):
    con = connect(results)
    rows = con.execute("SELECT study_key, role, trial, label, time_us, measured_us, "
                       "measured_kernel_us FROM trials").fetchall()
    assert len(rows) == raw_trial_rows(results)  # the join never doubles a trial row
    files = {f.stem: pq.read_table(f).to_pylist()
             for f in (results / "measured").glob("*.parquet")}
    assert len(files) == len(GRAPHS)
    measured = [r for r in rows if r[5] is not None]
    # every reference was measured (thread and vwarp w=1..32 have kernels), on every study
    assert {r[3] for r in measured if r[1] == "reference"} == {
        "thread", "vwarp w=1", "vwarp w=2", "vwarp w=4", "vwarp w=8", "vwarp w=16",
        "vwarp w=32"}
    for key, trial, label, us in [(r[0], r[2], r[3], r[5]) for r in measured]:
        row = next(m for m in files[key] if (trial in m["trials"] or label in m["labels"]))
        assert us == row["measured_us"] and math.isclose(us, gpu_time(row["config"]))
    assert all(r[6] == pytest.approx(0.6 * r[5]) for r in measured)
    # the measured view: the study's graph, algorithm and device beside each measured row
    view = con.execute("SELECT DISTINCT algorithm, device, graph_spec FROM measured").fetchall()
    assert len(view) == len(GRAPHS) and {v[0] for v in view} == {"bfs"}


def test_a_reverify_replaces_the_studys_measurements(results, capsys):
    before = raw_trial_rows(results)
    tune(results, GRAPHS[0], verify=3, slow=1.01)  # resumes the study, measures it again
    capsys.readouterr()
    assert raw_trial_rows(results) == before  # nothing run twice, no conflicting row
    assert len(list((results / "measured").glob("*.parquet"))) == len(GRAPHS)
    con = connect(results)
    again = "measured_us IS NOT NULL AND measured_us NOT IN (80, 100, 150, 300)"
    (n,) = con.execute(f"SELECT count(*) FROM trials WHERE {again}").fetchone()
    specs = con.execute(f"SELECT DISTINCT graph_spec FROM trials WHERE {again}").fetchall()
    old = con.execute("SELECT count(*) FROM trials WHERE measured_us IS NOT NULL AND "
                      "graph_spec = ? AND NOT " + f"({again})", [specs[0][0]]).fetchone()[0]
    # the latest measurement stands, on that study alone, none of the first left beside it
    assert n >= 7 and len(specs) == 1 and "seed=1" in specs[0][0] and old == 0
    assert cli(capsys, "check", str(results))[0] == 0


def test_a_resume_with_more_trials_keeps_the_measurements(results, capsys):
    before = connect(results).execute(
        "SELECT count(*) FROM trials WHERE measured_us IS NOT NULL").fetchone()[0]
    tune(results, GRAPHS[1], trials=9, verify=None)
    capsys.readouterr()
    con = connect(results)
    assert con.execute("SELECT count(*) FROM trials WHERE measured_us IS NOT NULL"
                       ).fetchone()[0] == before
    assert con.execute("SELECT count(*) FROM trials").fetchone()[0] == raw_trial_rows(results)
    assert cli(capsys, "check", str(results))[0] == 0


def test_a_measured_file_of_the_first_layout_still_reads(results):
    """Files written before trials, labels, source and variant were recorded: each row
    stands for its own trial or reference."""
    path = next((results / "measured").glob("*.parquet"))
    table = pq.read_table(path)
    old = table.select(["study_key", "role", "trial", "label", "config", "rank", "time_us",
                        "measured_us", "kernel_us", "correct", "note", "gpu_name", "winner"])
    pq.write_table(old, path)
    labels = {r["label"] for r in old.to_pylist() if r["role"] == "reference"}
    con = connect(results)
    got = {r[0] for r in con.execute(
        "SELECT label FROM trials WHERE study_key = ? AND measured_us IS NOT NULL "
        "AND role = 'reference'", [path.stem]).fetchall()}
    assert got == labels


def test_two_rows_claiming_one_key_never_double_a_trial_row():
    rows = pa.Table.from_pylist([
        {"study_key": "s", "role": "trial", "trial": 3, "label": None, "measured_us": 9.0,
         "kernel_us": 1.0, "correct": True, "trials": [3], "labels": []},
        {"study_key": "s", "role": "trial", "trial": 3, "label": None, "measured_us": 7.0,
         "kernel_us": 1.0, "correct": True, "trials": [3], "labels": ["thread"]},
        {"study_key": "s", "role": "trial", "trial": 4, "label": None, "measured_us": 5.0,
         "kernel_us": 1.0, "correct": False, "trials": [4], "labels": []},
    ])
    keys = measured_keys(rows).to_pylist()
    assert [(k["trial"], k["label"], k["measured_us"]) for k in keys] == [
        (3, None, 7.0), (None, "thread", 7.0)]  # the faster stands; a wrong answer never


def damage(path) -> None:
    """Flip the first byte from a third of the file on whose flip its rows read otherwise
    (unchecked): a byte of a page header's statistics, which no read uses, damages nothing."""
    data = path.read_bytes()
    clean = pq.read_table(path)
    for i in range(len(data) // 3, len(data)):
        flipped = bytearray(data)
        flipped[i] ^= 0xFF
        path.write_bytes(bytes(flipped))
        try:
            if not pq.read_table(path).equals(clean):
                return
        except Exception:  # noqa: BLE001 - unreadable is damaged too
            return
    raise AssertionError(f"no byte of {path} changes its rows")


def test_a_damaged_measured_file_is_named(results, capsys):
    path = next((results / "measured").glob("*.parquet"))
    damage(path)
    code, out, err = cli(capsys, "query", "SELECT count(*) FROM trials", "--results",
                         str(results))
    assert code != 0 and str(path) in err and "damaged" in err
    code, out, _ = cli(capsys, "check", str(results))
    assert code == 1 and str(path) in out
    assert cli(capsys, "check", str(results), "--repair")[0] == 0
    assert not path.exists() and list((results / "quarantine").rglob(path.name + ".*"))
    code, out, _ = cli(capsys, "best", "--results", str(results), "--json")
    winners = [s["measured_winner"] for s in json.loads(out)["studies"]]
    assert code == 0 and winners.count(None) == 1  # that study's measurements set aside


def _edit_rows(path, edit) -> None:
    rows = pq.read_table(path).to_pylist()
    pq.write_table(pa.Table.from_pylist(edit(rows)), path)


def _set(index: int, **values):
    def edit(rows):
        rows[index].update(values)
        return rows
    return edit


def _drop_column(name: str):
    return lambda rows: [{k: v for k, v in r.items() if k != name} for r in rows]


def _swap_claims(rows):
    """Two rows of other simulated times stand for each other's trials and references: each
    measurement joined to the other's configuration (probe MEAS)."""
    i, j = [k for k, r in enumerate(rows) if r["labels"]][:2]
    assert rows[i]["time_us"] != rows[j]["time_us"]
    for key in ("trials", "labels"):
        rows[i][key], rows[j][key] = rows[j][key], rows[i][key]
    return rows


def _fastest(rows) -> int:
    return min((r["measured_us"], r["rank"], i) for i, r in enumerate(rows)
               if r["correct"])[2]


@pytest.mark.parametrize("edit, said", [
    (_set(0, measured_us=-100.0), "measured_us -100.0"),
    (_set(0, measured_us=float("nan")), "measured_us nan"),
    (_set(0, measured_us=0.0), "measured_us 0.0"),
    (_set(0, kernel_us=1e9), "kernel_us 1000000000.0"),
    (_set(0, correct=None), "measured_us"),
    (lambda rows: rows + [dict(rows[0], measured_us=rows[0]["measured_us"] * 3,
                               winner=False)], "measure one configuration"),
    (_set(1, study_key="another-study"), "of study 'another-study'"),
    (_set(0, config=None), "each row names its configuration"),
    (_set(0, rank=None), "each row names its configuration"),
    (_drop_column("study_key"), "no column study_key"),
    (_drop_column("correct"), "no column correct"),
    (lambda rows: _set(_fastest(rows), measured_us=1e6)(rows), "the winner flag"),
    (_swap_claims, "another configuration's"),
])
def test_a_measured_file_tune_verify_cannot_have_written_is_refused_by_every_reader(
        results, capsys, edit, said):
    """Such a row had been fitted (an impossible time, a copy's mean), dropped silently, or
    taken as the faster copy, or had crashed the readers, while `check` passed it."""
    path = next((results / "measured").glob("*.parquet"))
    _edit_rows(path, edit)
    for verb in (["best", "--results", str(results)],
                 ["query", "SELECT count(*) FROM measured", "--results", str(results)],
                 ["calibrate", str(results), "--out", str(results / "x.toml")]):
        code, out, err = cli(capsys, *verb)
        assert code == 2 and str(path) in err and said in err, (verb, err)
        assert "Traceback" not in err and not (results / "x.toml").exists()
    code, out, _ = cli(capsys, "check", str(results))
    assert code == 1 and str(path) in out and said in out
    assert cli(capsys, "check", str(results), "--repair")[0] == 0
    assert not path.exists() and cli(capsys, "best", "--results", str(results))[0] == 0


def test_a_second_measured_file_of_a_study_in_a_subfolder_is_refused_not_joined(results,
                                                                                 capsys):
    """An earlier verification kept beside the current one (``measured/old/<key>.parquet``)
    had been read as well: every configuration counted twice, the faster (stale) time
    taken, two winners, and `check` said "no problem" (probe MEASURED2, high). Every reader
    now refuses it in one line naming the file; `check` names it and `--repair` sets it
    aside, after which the study's own measurements read as before."""
    path = next((results / "measured").glob("*.parquet"))
    before = cli(capsys, "best", "--results", str(results))[1]
    kept = results / "measured" / "old" / path.name
    kept.parent.mkdir()
    _edit_rows(path, lambda rows: rows)  # the same rows, written again
    shutil.copy(path, kept)
    _edit_rows(kept, lambda rows: [dict(r, measured_us=r["measured_us"] / 10)
                                   if r["measured_us"] else r for r in rows])
    for verb in (["best", "--results", str(results)],
                 ["query", "SELECT count(*) FROM measured", "--results", str(results)],
                 ["calibrate", str(results), "--out", str(results / "x.toml")]):
        code, out, err = cli(capsys, *verb)
        assert code == 2 and str(kept) in err and "in a folder below it" in err, (verb, err)
    code, out, _ = cli(capsys, "check", str(results))
    assert code == 1 and str(kept) in out
    assert cli(capsys, "check", str(results), "--repair")[0] == 0
    assert not kept.exists() and path.exists()
    assert cli(capsys, "best", "--results", str(results))[1] == before


def test_measurements_of_a_study_started_over_are_named_by_check_and_calibrate(results,
                                                                               capsys):
    """A study started over keeps no trial row, but its measured file stayed: `check` said
    "no problem", and calibrate refused the whole directory naming neither file nor study
    (probe MEASURED2). Now check names the file, --repair sets it aside, calibrate's line
    names it too; after the repair calibrate fits the other studies."""
    path = next((results / "measured").glob("*.parquet"))
    study = path.name.removesuffix(".parquet")
    for part in (results / "trials").rglob("*.parquet"):
        keys = set(pq.read_table(part, columns=["study_key"]).column(0).to_pylist())
        assert keys == {study} or study not in keys  # one study a file here
        if keys == {study}:
            part.unlink()
    for journal in (results / "studies").glob(f"{study}*"):
        journal.unlink()
    code, out, _ = cli(capsys, "check", str(results))
    assert code == 1 and f"{path}: its study has no trial rows" in out
    code, out, err = cli(capsys, "calibrate", str(results), "--out", str(results / "x.toml"))
    assert code == 2 and f"measured/{path.name}" in err and "check" in err
    assert cli(capsys, "check", str(results), "--repair")[0] == 0 and not path.exists()
    code, out, err = cli(capsys, "calibrate", str(results), "--out", str(results / "x.toml"))
    assert code == 0, err


def test_a_repair_that_writes_a_studys_rows_back_keeps_its_measurements(results, capsys):
    """A damaged trial file: `check --repair` sets it aside and writes the study's rows
    again from its journal; it had also set the study's measured file aside as standing for
    no row (judged before the journal's repair), and the measurements were gone from every
    reader (review CR28)."""
    path = next((results / "measured").glob("*.parquet"))
    study = path.name.removesuffix(".parquet")
    parts = [part for part in (results / "trials").rglob("*.parquet")
             if study in pq.read_table(part, columns=["study_key"]).column(0).to_pylist()]
    before = sum(pq.read_table(part).num_rows for part in parts)
    for part in parts:
        part.write_bytes(b"PAR1 not a parquet file PAR1")
    code, out, _ = cli(capsys, "check", str(results))
    assert code == 1 and str(path) not in out
    code, out, _ = cli(capsys, "check", str(results), "--repair")
    assert code == 0 and str(path) not in out and path.exists()
    assert cli(capsys, "check", str(results))[0] == 0
    code, out, _ = cli(capsys, "query", f"SELECT count(*), count(measured_us) FROM trials "
                       f"WHERE study_key = '{study}'", "--results", str(results), "--format",
                       "csv")
    counts = [int(x) for x in out.strip().splitlines()[-1].split(",")]
    assert code == 0 and counts[0] == before and counts[1] > 0


def test_a_studys_only_measured_file_below_measured_is_put_in_place_by_the_repair(results,
                                                                                  capsys):
    """The study's one measured file moved into measured/archive/ (none left in its place)
    is no copy: the readers say to move it back, and `check --repair` does, where it had set
    the study's only measurements aside as a copy (review CR28)."""
    path = next((results / "measured").glob("*.parquet"))
    code, before, _ = cli(capsys, "best", "--results", str(results))
    kept = results / "measured" / "archive" / path.name
    kept.parent.mkdir()
    path.rename(kept)
    code, out, err = cli(capsys, "best", "--results", str(results))
    assert code == 2 and f"none lies at measured/{path.name}: move it there" in err
    assert err.count("\n") == 1
    code, out, _ = cli(capsys, "check", str(results), "--repair")
    assert code == 0 and f"moved to {path}" in out
    assert path.exists() and not kept.exists()
    assert cli(capsys, "best", "--results", str(results))[1] == before


@pytest.mark.parametrize("alike", [True, False])
def test_two_copies_below_measured_with_none_in_place(results, capsys, alike):
    """Two copies of a study's measured file below measured/, none in its place: the repair
    had set both aside, the study's only measurements, and called it repaired (review CR29).
    Alike, one is put in place and the other set aside; different, the repair changes
    nothing and says to choose."""
    path = next((results / "measured").glob("*.parquet"))
    code, before, _ = cli(capsys, "best", "--results", str(results))
    a, b = (results / "measured" / "a" / path.name, results / "measured" / "b" / path.name)
    a.parent.mkdir()
    b.parent.mkdir()
    shutil.copy(path, a)
    path.rename(b)
    if not alike:
        _edit_rows(b, lambda rows: [dict(r, measured_us=r["measured_us"] * 2)
                                    if r["measured_us"] else r for r in rows])
    code, out, _ = cli(capsys, "check", str(results), "--repair")
    if alike:
        assert code == 0 and path.exists() and not a.exists() and not b.exists()
        assert cli(capsys, "best", "--results", str(results))[1] == before
    else:
        assert code == 1 and "--repair cannot choose" in out
        assert a.exists() and b.exists() and not path.exists()
        # and so when the repair sets something else right (review CR30: its line had
        # become a note after "all repaired", exit 0)
        (results / "trials" / "part-junk.parquet").write_text("x")
        code, out, _ = cli(capsys, "check", str(results), "--repair")
        assert code == 1 and "--repair cannot choose" in out and "all repaired" not in out


@pytest.mark.parametrize("which", ["a trial", "the winner"])
def test_measured_rows_of_results_lost_for_good_are_set_aside(results, capsys, which):
    """A measured configuration whose row is lost and whose journal is gone: check had
    passed the measured file, the next tune numbered a new trial so, and every reader then
    refused the directory as damaged (review CR29). Check names those rows; the repair sets
    them aside and keeps the rest, the winner flag on the fastest left (review CR30: it had
    left a file with no winner, which every reader refused); a resume then runs clean."""
    import pyarrow.compute as pc

    path = sorted((results / "measured").glob("*.parquet"))[0]
    study = path.name.removesuffix(".parquet")
    measured = pq.read_table(path).to_pylist()
    lost = next(r for r in measured if (r["winner"] if which == "the winner" else
                                        r["role"] == "trial" and not r["winner"]))
    for journal in (results / "studies").glob(f"{study}*"):
        journal.unlink()
    for part in (results / "trials").rglob("part-*.parquet"):
        t = pq.read_table(part)
        same = (pc.equal(t["trial"], lost["trial"]) if lost["role"] == "trial"
                else pc.equal(t["label"], lost["label"]))
        gone = pc.and_(pc.equal(t["study_key"], study), same)
        pq.write_table(t.filter(pc.invert(pc.fill_null(gone, False))), part,
                       write_page_checksum=True)
    code, out, _ = cli(capsys, "check", str(results))
    assert code == 1 and "stand for results the study holds no more" in out
    assert cli(capsys, "check", str(results), "--repair")[0] == 0
    left = pq.read_table(path).to_pylist()
    assert len(left) == len(measured) - 1 and lost["config"] not in [r["config"] for r in left]
    assert sum(bool(r["winner"]) for r in left) == 1
    assert cli(capsys, "check", str(results))[0] == 0
    assert cli(capsys, "best", "--results", str(results))[0] == 0


def test_calibrate_for_a_gpu_the_results_never_measured_says_so_first(results, capsys):
    """--gpu naming a GPU the results hold no row of: "nothing measured on it", with the GPUs
    measured, before any advice on --device (which had sent the user to a preset that failed
    the same way; probe MEASURED2)."""
    code, out, err = cli(capsys, "calibrate", str(results), "--gpu", "NVIDIA H200", "--out",
                         str(results / "x.toml"))
    assert code == 2
    assert "nothing measured on 'NVIDIA H200' (measured on: Stand-in H100 GPU)" in err


# -- best and the report ----------------------------------------------------------------------
def test_best_shows_measured_us_and_names_the_measured_winner(results, capsys):
    code, out, _ = cli(capsys, "best", "--results", str(results))
    assert code == 0
    head = out.splitlines()[0].split()
    assert head[4:6] == ["time_us", "measured_us"]
    lines = [ln for ln in out.splitlines() if "Stand-in H100 GPU" in ln]
    assert len(lines) == len(GRAPHS)
    assert all("mapping=vwarp w=8 80 us measured" in ln for ln in lines)
    code, out, _ = cli(capsys, "best", "--results", str(results), "--json")
    studies = json.loads(out)["studies"]
    for s in studies:
        w = s["measured_winner"]
        assert w["config"] == W8 and w["measured_us"] == 80.0 and w["measured"] >= 7
        assert s["measured_us"] == gpu_time(",".join(
            f"{k}={v}" for k, v in s["config"]["params"].items()) + ",")
        assert s["measured_regret"] == pytest.approx(s["measured_us"] / 80.0)
    # ranked by the measured times: the measured winner is the best, and the regret is
    # still the simulated pick's (it had read 1)
    code, out, _ = cli(capsys, "best", "--results", str(results), "--metric", "measured_us",
                       "--json")
    ranked = json.loads(out)["studies"]
    assert {s["config"]["text"] for s in ranked} == {"mapping=vwarp w=8"}
    assert [s["measured_regret"] for s in ranked] == [s["measured_regret"] for s in studies]
    assert any(s["measured_regret"] > 1 for s in ranked)


def test_best_without_measurements_is_as_before(results, capsys):
    shutil.rmtree(results / "measured")
    code, out, _ = cli(capsys, "best", "--results", str(results))
    assert code == 0 and "measured" not in out
    studies = json.loads(cli(capsys, "best", "--results", str(results), "--json")[1])["studies"]
    assert all(s["measured_winner"] is None and s["measured_us"] is None for s in studies)


def test_best_by_a_measured_metric_compares_one_gpus_studies(results, capsys):
    """Studies measured on two GPUs: under --metric measured_us each GPU's studies get their
    own fixed configuration, named by the GPU (probe MEASURED2: they had been pooled into
    one "best on h100"); simulated metrics keep one per device."""
    paths = sorted((results / "measured").glob("*.parquet"))
    _edit_rows(paths[0], lambda rows: [dict(r, gpu_name="Stand-in A100 GPU") for r in rows])
    code, out, _ = cli(capsys, "best", "--results", str(results), "--metric", "measured_us",
                       "--json")
    assert code == 0
    fixed = json.loads(out)["fixed"]
    assert sorted(f["gpu"] for f in fixed) == ["Stand-in A100 GPU", "Stand-in H100 GPU"]
    assert sorted(f["graphs"] for f in fixed) == [1, len(GRAPHS) - 1]
    code, out, _ = cli(capsys, "best", "--results", str(results), "--metric", "measured_us")
    assert "bfs on h100 measured on Stand-in A100 GPU:" in out
    code, out, _ = cli(capsys, "best", "--results", str(results), "--json")
    assert [f["gpu"] for f in json.loads(out)["fixed"]] == [None]


def test_the_report_shows_the_measured_winner(results, tmp_path, capsys):
    out_dir = tmp_path / "report"
    code, _, err = cli(capsys, "report", "--results", str(results), "--out", str(out_dir),
                       "--no-selector")
    assert code == 0, err
    page = (out_dir / "index.html").read_text()
    assert "best, measured (µs)" in page and "measured winner" in page
    assert page.count("<code>mapping=vwarp w=8</code>: 80 µs measured") == len(GRAPHS)


def test_the_reports_selector_section_says_its_times_are_measured(results, tmp_path,
                                                                    capsys):
    """The report's selector regrets use the measured times where they exist, and its note
    says so (probe MEASURED2)."""
    out_dir = tmp_path / "report"
    code, _, err = cli(capsys, "report", "--results", str(results), "--out", str(out_dir))
    assert code == 0, err
    page = (out_dir / "index.html").read_text()
    assert (f"the times of {len(GRAPHS)} of {len(GRAPHS)} graphs are measured on the GPU "
            "(tune --verify, Stand-in H100 GPU)") in page


# -- calibrate RESULTS ------------------------------------------------------------------------
def test_calibrate_fits_a_results_directorys_measurements(results, tmp_path, capsys):
    out = tmp_path / "mine.toml"
    code, text, err = cli(capsys, "calibrate", str(results), "--device", "h100", "--out",
                          str(out), "--cache", str(tmp_path / "cache"), "-q")
    assert code == 0, err
    n = len(GRAPHS)
    # the 7 references and, of the top 3 spread over kernel families (two of plain virtual
    # warps, references all), one configuration of another family
    assert f"{8 * n} measured configs on {n} graphs (bfs) from {results}" in text
    assert out.is_file() and "RMS log error" in text


def test_calibrate_says_so_when_nothing_was_measured(results, tmp_path, capsys):
    shutil.rmtree(results / "measured")
    code, _, err = cli(capsys, "calibrate", str(results), "--out", str(tmp_path / "x.toml"))
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "no measured rows" in lines[0]
    assert "--verify" in lines[0] and not (tmp_path / "x.toml").exists()


def test_calibrate_gives_the_reasons_rows_were_left_unmeasured(results, tmp_path, capsys):
    """Every row kept unmeasured with its reason: the refusal says how many and why, not
    that measured/ holds none (probe MEASURED2)."""
    def unmeasured(rows):
        return [dict(r, measured_us=None, kernel_us=None, correct=None, winner=None,
                     note="not measured: refused by the kernels") for r in rows]
    for path in (results / "measured").glob("*.parquet"):
        _edit_rows(path, unmeasured)
    code, _, err = cli(capsys, "calibrate", str(results), "--out", str(tmp_path / "x.toml"))
    assert code == 2 and "none measured: not measured: refused by the kernels (" in err
    assert "holds none" not in err


def test_calibrate_refuses_a_cache_inside_the_results(results, tmp_path, capsys):
    """Its hash-named cache directories had been made inside the results directory (probe
    FILESYS)."""
    before = sorted(p.name for p in results.iterdir())
    code, _, err = cli(capsys, "calibrate", str(results), "--out", str(tmp_path / "x.toml"),
                       "--cache", str(results / "cache"))
    assert code == 2 and "inside the results directory" in err
    assert sorted(p.name for p in results.iterdir()) == before


def test_calibrate_refuses_impossible_times_naming_each(tmp_path, capsys):
    base = {"device": "h100", "graph": "g", "graph_spec": "rmat:scale=8,seed=1",
            "algorithm": "bfs", "variant": "default", "source": 1, "correct": True}
    rows = [{**base, "config": "mapping=thread", "time_us": 10.0, "kernel_us": 5.0},
            {**base, "config": "mapping=vwarp,w=8", "time_us": float("nan"), "kernel_us": 1.0},
            {**base, "config": "mapping=vwarp,w=4", "time_us": -3.0, "kernel_us": 1.0},
            {**base, "config": "mapping=vwarp,w=2", "time_us": 10.0, "kernel_us": 12.0},
            {**base, "config": "mapping=vwarp,w=16", "time_us": float("nan"),
             "kernel_us": 1.0, "correct": False}]  # a wrong answer's time is not read
    path = tmp_path / "m.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    code, _, err = cli(capsys, "calibrate", str(path), "--out", str(tmp_path / "x.toml"))
    assert code == 2 and "3 correct row(s) with impossible times" in err
    for what in ("'mapping=vwarp,w=8' (time_us nan)", "'mapping=vwarp,w=4' (time_us -3.0)",
                 "'mapping=vwarp,w=2' (kernel_us 12.0 exceeds time_us 10.0)"):
        assert what in err
    assert "w=16" not in err


# -- select train -----------------------------------------------------------------------------
def test_select_learns_the_measured_best(results, tmp_path, capsys):
    matrix = sel.load_matrix(results, "bfs", "h100")
    assert matrix.measured == [True] * len(GRAPHS)
    assert all(matrix.best_config(i) == {"mapping": "vwarp", "w": 8, "chunk": 1,
                                         "distribution": "static", "block_size": 256,
                                         "driven": "topology", "unroll": 1}
               for i in range(len(GRAPHS)))
    code, out, err = cli(capsys, "select", "train", "--results", str(results), "--model",
                         str(tmp_path / "m.json"))
    assert code == 0, err
    assert (f"measured on the GPU (tune --verify, Stand-in H100 GPU): {len(GRAPHS)} of "
            f"{len(GRAPHS)} graphs") in out
    shutil.rmtree(results / "measured")  # the simulator alone prefers other widths here
    simulated = sel.load_matrix(results, "bfs", "h100")
    assert simulated.measured == [False] * len(GRAPHS)
    assert any(simulated.best_config(i).get("w") != 8 for i in range(len(GRAPHS)))


def test_select_uses_measured_rows_that_name_no_gpu_as_calibrate_does(results, tmp_path,
                                                                       capsys):
    """Rows that name no GPU may be the device's: calibrate fits them as its rows, and
    select train learns them (probe MEASURED2: they had been left out as "measurements on an
    unnamed GPU, not h100's GPU")."""
    for path in (results / "measured").glob("*.parquet"):
        _edit_rows(path, _drop_column("gpu_name"))
    matrix = sel.load_matrix(results, "bfs", "h100")
    assert matrix.measured == [True] * len(GRAPHS) and not matrix.other_gpus
    code, out, err = cli(capsys, "select", "train", "--results", str(results), "--model",
                         str(tmp_path / "m.json"))
    assert code == 0, err
    assert f"(tune --verify, an unnamed GPU): {len(GRAPHS)} of {len(GRAPHS)} graphs" in out
    assert "not h100's GPU" not in out


def test_rows_naming_no_gpu_beside_named_ones_are_the_devices_for_every_reader(results,
                                                                              tmp_path,
                                                                              capsys):
    """One study's rows name no GPU, the others' the device's GPU: calibrate had called
    them a second GPU (and with --gpu dropped them unsaid), best had given them a fixed
    line of their own naming nothing, select train pooled them (review CR28). All three now
    read them as the device's, pooled with its GPU's rows, and say so."""
    path = sorted((results / "measured").glob("*.parquet"))[0]
    _edit_rows(path, lambda rows: [dict(r, gpu_name=None) for r in rows])
    for gpu in ([], ["--gpu", "Stand-in H100 GPU"]):
        code, out, err = cli(capsys, "calibrate", str(results), "--device", "h100", *gpu,
                             "--out", str(tmp_path / "x.toml"))
        assert code == 0, err
        assert (f"on {len(GRAPHS)} graphs" in out and "name no GPU: fitted as h100's, with "
                "the Stand-in H100 GPU's" in out + err), out + err
    code, out, err = cli(capsys, "best", "--results", str(results), "--metric", "measured_us")
    fixed = [line for line in out.splitlines() if line.startswith("  bfs on h100")]
    assert code == 0 and len(fixed) == 1 and "measured on Stand-in H100 GPU" in fixed[0], out
    code, out, err = cli(capsys, "select", "train", "--results", str(results), "--model",
                         str(tmp_path / "m.json"))
    assert code == 0 and f"{len(GRAPHS)} of {len(GRAPHS)} graphs" in out, out + err


def test_rows_naming_no_gpu_beside_two_named_gpus_are_fitted_with_neither(results, tmp_path,
                                                                          capsys):
    """Beside rows of two named GPUs, rows naming none are a group of their own (as best
    shows them): `calibrate --gpu X` had fitted them with X's (review CR29); it leaves them
    out and says so."""
    first, second = sorted((results / "measured").glob("*.parquet"))[:2]
    _edit_rows(first, lambda rows: [dict(r, gpu_name=None) for r in rows])
    _edit_rows(second, lambda rows: [dict(r, gpu_name="NVIDIA H100 PCIe") for r in rows])
    code, out, err = cli(capsys, "calibrate", str(results), "--device", "h100", "--gpu",
                         "NVIDIA H100 PCIe", "--out", str(tmp_path / "x.toml"))
    assert code == 0, err
    assert "on 1 graph" in out and "name no GPU: left out" in out + err, out + err
    code, out, err = cli(capsys, "calibrate", str(results), "--device", "h100", "--out",
                         str(tmp_path / "x.toml"))  # they are no GPU to pick (review CR30)
    assert code == 2 and "measured on 2 GPUs (NVIDIA H100 PCIe, Stand-in H100 GPU)" in err
    assert "row(s) name none" in err and "unknown GPU" not in err
    code, out, err = cli(capsys, "calibrate", str(results), "--device", "h100", "--gpu",
                         "unknown GPU", "--out", str(tmp_path / "x.toml"))
    assert code == 2 and "nothing measured on 'unknown GPU'" in err
    assert "(measured on: NVIDIA H100 PCIe, Stand-in H100 GPU)" in err


def test_select_evaluate_says_which_graphs_times_are_measured(results, capsys):
    """select evaluate's best times and regrets use the measured times where they exist; it
    says so, naming the measured graphs when only some are (probe MEASURED2)."""
    path = sorted((results / "measured").glob("*.parquet"))[0]
    path.unlink()
    code, out, err = cli(capsys, "select", "evaluate", "--results", str(results))
    assert code == 0, err
    assert (f"measured on the GPU (tune --verify, Stand-in H100 GPU): {len(GRAPHS) - 1} of "
            f"{len(GRAPHS)} graphs") in out
    code, out, _ = cli(capsys, "select", "evaluate", "--results", str(results), "--json")
    rows = json.loads(out)["evaluations"][0]["rows"]
    assert sorted(r["measured"] for r in rows) == [False] + [True] * (len(GRAPHS) - 1)


def test_measured_times_put_the_measured_winner_first():
    simulated = {"a": 10.0, "b": 20.0, "c": 30.0, "d": 5.0}
    got = measured_times(simulated, {"a": 40.0, "b": 30.0})
    level = math.sqrt(4.0 * 1.5)  # geometric mean of measured / simulated over a and b
    assert got["a"] == 40.0 and got["b"] == 30.0
    assert got["c"] == pytest.approx(30.0 * level)
    assert 30.0 < got["d"] < 30.0 + 1e-9  # never below the measured winner's
    assert min(got, key=got.__getitem__) == "b"
    assert measured_times(simulated, {}) == simulated


def test_a_results_dir_with_two_gpus_needs_gpu(results, tmp_path, capsys):
    path = next((results / "measured").glob("*.parquet"))
    table = pq.read_table(path)
    names = pa.array(["Other H100 GPU"] * table.num_rows)
    pq.write_table(table.set_column(table.column_names.index("gpu_name"), "gpu_name", names),
                   path)
    code, _, err = cli(capsys, "calibrate", str(results), "--out", str(tmp_path / "x.toml"))
    assert code == 2 and "measured on 2 GPUs (Other H100 GPU, Stand-in H100 GPU)" in err
    with pytest.raises(ConfigError, match="nothing measured on 'Third GPU'"):
        from tuner.calibration.measurements import load_measured_results

        load_measured_results(results, gpu="Third GPU")


def _rename_gpu(results, name: str, files: int | None = None) -> None:
    for path in sorted((results / "measured").glob("*.parquet"))[:files]:
        table = pq.read_table(path)
        names = pa.array([name] * table.num_rows)
        pq.write_table(table.set_column(table.column_names.index("gpu_name"), "gpu_name",
                                        names), path)


def test_select_learns_only_the_devices_gpu(results, tmp_path, capsys):
    """An H200's measurements had been learnt as the h100 group's (and the fastest of two
    GPUs kept): measurements of a GPU that is not the device's are left out, named."""
    _rename_gpu(results, "NVIDIA H200")
    matrix = sel.load_matrix(results, "bfs", "h100")
    assert matrix.measured == [False] * len(GRAPHS) and matrix.other_gpus == ["NVIDIA H200"]
    code, out, err = cli(capsys, "select", "train", "--results", str(results), "--model",
                         str(tmp_path / "m.json"))
    assert code == 0, err
    assert "not used: measurements on NVIDIA H200, not h100's GPU" in out
    assert "measured on the GPU" not in out


def test_calibrate_refuses_another_gpus_measurements_as_the_device(results, tmp_path, capsys):
    _rename_gpu(results, "NVIDIA H200")
    code, _, err = cli(capsys, "calibrate", str(results), "--device", "h100", "--out",
                       str(tmp_path / "x.toml"))
    assert code == 2 and "measured on NVIDIA H200, no h100" in err
    assert "--device h200" in err and not (tmp_path / "x.toml").exists()
    code, _, err = cli(capsys, "calibrate", str(results), "--gpu", "NVIDIA H200", "--out",
                       str(tmp_path / "x.toml"))
    assert code == 2 and "--gpu 'NVIDIA H200' is no h100" in err


def test_calibrate_says_which_gpus_rows_it_left_out(results, tmp_path, capsys):
    """An H200's rows beside an H100's: --device h100 fits the H100's, and says so; a third
    of the data had been left out without a word (probe 01)."""
    files = len(list((results / "measured").glob("*.parquet")))
    assert files > 1
    _rename_gpu(results, "NVIDIA H200", files=1)
    code, text, err = cli(capsys, "calibrate", str(results), "--device", "h100", "--out",
                          str(tmp_path / "x.toml"), "--cache", str(tmp_path / "cache"), "-q")
    assert code == 0, err
    assert re.search(r"calibrate: \d+ measured row\(s\) of GPU NVIDIA H200 left out: --device "
                     r"h100 fits its own rows \(their GPU's preset", err), err


def test_calibrate_takes_the_median_of_a_configuration_two_studies_measured(results, tmp_path):
    """Every --verify measures the references: a graph tuned twice (another space) had
    left its directory uncalibratable ("measured twice")."""
    from tuner.calibration.measurements import load_measured_results

    # two more studies of the first graph (other objectives), on a slower day of the GPU
    tune(results, GRAPHS[0], trials=4, slow=1.5, extra=("--objective", "transactions"))
    tune(results, GRAPHS[0], trials=4, slow=1.2, extra=("--objective", "atomics"))
    measured = load_measured_results(results, device="h100")
    thread = [m for m in measured if m.config.startswith("mapping=thread")]
    assert len(thread) == len(GRAPHS)
    assert sorted(m.time_us for m in thread) == [300.0, 300.0, 360.0]  # of 300, 450, 360


def _two_rows(tmp_path) -> str:
    """A measured file of two configurations of one graph, without edge counts."""
    rows = [{"device": "h100", "graph": "g", "graph_spec": "rmat:scale=8,seed=1",
             "algorithm": "bfs", "variant": "default", "source": 1, "correct": True,
             "config": c, "time_us": t} for c, t in (("mapping=thread", 90.0),
                                                     ("mapping=vwarp,w=8", 50.0))]
    path = tmp_path / "m.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return str(path)


def test_max_edges_needs_edge_counts(tmp_path, capsys):
    path = _two_rows(tmp_path)
    code, _, err = cli(capsys, "calibrate", path, "--max-edges", "10", "--out",
                       str(tmp_path / "x.toml"))
    assert code == 2 and "--max-edges needs the graphs' edge counts" in err


def test_tune_verify_json_names_the_measured_winner(tmp_path, capsys):
    out = tune(tmp_path / "r", GRAPHS[1], trials=4, capsys=capsys, extra=("--json",))
    verify = json.loads(out)["verify"]
    assert verify["measured"] is True and verify["note"] is None
    (study,) = verify["studies"]
    assert "w=8," in study["winner"] and study["winner_measured_us"] == 80.0
    assert study["gpu_name"] == "Stand-in H100 GPU" and study["pick_regret"] >= 1.0


def test_a_fit_with_no_more_times_than_free_parameters_is_refused(tmp_path, capsys):
    """Two measured rows had been written as a "fitted" device (RMS 0.020): the scales that
    bind and the graph's offset fit any two times."""
    path = _two_rows(tmp_path)
    code, _, err = cli(capsys, "calibrate", path, "--out", str(tmp_path / "x.toml"),
                       "--cache", str(tmp_path / "cache"), "-q")
    assert code == 2 and "the fit is not determined by them" in err
    assert not (tmp_path / "x.toml").exists()


def _verify_with(gpu, results, capsys, *extra) -> tuple[int, str, str]:
    """``tune --verify 2`` of a small BFS study on the stand-in GPU ``gpu`` (a
    ``gpu_measure``-like factory)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(measure_module, "gpu_unavailable", lambda index=0: None)
        mp.setattr(verify_module, "gpu_measure", gpu)
        return cli(capsys, "tune", "--graph", GRAPHS[0], "--algo", "bfs", "--trials", "4",
                   "--sources", "1", "--workers", "0", "--results", str(results),
                   "--no-progress", "--verify", "2", *extra)


def test_verify_where_the_gpu_answers_wrong_says_so_and_exits_3(tmp_path, capsys):
    """Every configuration answering wrong on the GPU had exited 0 with no line and
    ``"measured": true`` (probe MEAS): a kernel that disagrees with the functional run is
    named, as `warpsweep measure` exits 3 on it; the study's rows stand, unmeasured."""
    def wrong_gpu(device_index: int = 0, reps: int = 3):
        def measure(graph_spec, algorithm, config, source):
            return {"measured_us": 50.0, "kernel_us": 30.0, "correct": False,
                    "note": "3 vertices differ", "gpu_name": "Stand-in H100 GPU"}
        return measure

    code, out, err = _verify_with(wrong_gpu, tmp_path / "r", capsys, "--json")
    doc = json.loads(out)
    (study,) = doc["verify"]["studies"]
    assert code == 3 and study["measured"] == 0 and study["winner"] is None
    assert study["wrong"] >= 2
    assert "answered otherwise than the functional run" in err and "no winner" in err
    assert "exit 3" in err
    con = connect(tmp_path / "r")
    assert con.execute("SELECT count(*) FROM trials WHERE measured_us IS NOT NULL"
                       ).fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM trials").fetchone()[0] >= 4


def test_best_by_measured_us_names_the_studies_it_leaves_out(results, capsys):
    """A study never verified on a GPU had been left out of `best --metric measured_us`'s
    table without a word (probe MEAS)."""
    tune(results, "grid2d:rows=8,cols=8", verify=None, capsys=capsys)
    code, out, err = cli(capsys, "best", "--results", str(results), "--metric", "measured_us")
    assert code == 0 and "grid2d" not in out
    assert "1 study with no complete row holding measured_us" in err
    code, out, err = cli(capsys, "best", "--results", str(results))
    assert code == 0 and "grid2d" in out and "no complete row holding" not in err


def test_a_configuration_the_gpu_cannot_measure_is_kept_with_its_reason(tmp_path, capsys):
    """A worklist outgrowing its queue (QueueOverflow) had ended the whole verification,
    exit 2, no study's measurements written (probe CR6): it is that row's reason alone."""
    from simulator.errors import WarpsweepError

    def overflowing_gpu(device_index: int = 0, reps: int = 3):
        def measure(graph_spec, algorithm, config, source):
            if "w=32" in config:
                raise WarpsweepError("a worklist launch pushed 9 items, more than the "
                                     "queue's 8: not measured")
            us = gpu_time(config)
            return {"measured_us": us, "kernel_us": 0.6 * us, "correct": True, "note": "",
                    "gpu_name": "Stand-in H100 GPU"}
        return measure

    code, out, err = _verify_with(overflowing_gpu, tmp_path / "r", capsys)
    assert code == 0, err
    (path,) = (tmp_path / "r" / "measured").glob("*.parquet")
    rows = pq.read_table(path).to_pylist()
    w32 = [r for r in rows if "w=32" in r["config"]]
    assert w32 and all(r["measured_us"] is None and "not measured" in r["note"] for r in w32)
    assert any(r["measured_us"] for r in rows)  # the others measured
