"""`tune --verify K` on the CPU: which configurations it measures, the measured winner and the
pick's regret, the rows it writes beside the trials, and (no GPU) the one line while the study
still completes."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from tuner.cli import main
from tuner.measure import measure as measure_module
from tuner.measure.verify import candidates
from tuner.measure.verify import kernel_family
from tuner.measure.verify import read_verification
from tuner.measure.verify import spread_top_k
from tuner.measure.verify import verification_table
from tuner.measure.verify import verify_study
from tuner.measure.verify import verify_tune
from tuner.measure.verify import write_verification

GRAPH = "rmat:scale=8,seed=1"


def record(params, time_us, role="trial", trial=None, label=None, state="complete"):
    return SimpleNamespace(role=role, trial=trial, label=label, state=state, params=params,
                           values=[time_us], metrics={"time_us": time_us}, sources=[3])


def summary():
    """A study whose search ranked W=8, W=32 chunk 4, adaptive W, then the thread reference."""
    thread = record({"mapping": "thread"}, 40.0, role="reference", label="thread")
    vw32 = record({"mapping": "vwarp", "w": 32}, 35.0, role="reference", label="vwarp w=32")
    best = [record({"mapping": "vwarp", "w": 8, "chunk": None}, 10.0, trial=4),
            record({"mapping": "vwarp", "w": 32, "chunk": 4}, 12.0, trial=1),
            record({"mapping": "adaptive"}, 13.0, trial=2),
            thread,
            record({"mapping": "vwarp", "w": 2}, 50.0, trial=0, state="failed")]
    return SimpleNamespace(key="study-abc",
                           spec=SimpleNamespace(graph=GRAPH, algorithm="bfs",
                                                objective=SimpleNamespace(metrics=["time_us"])),
                           best=best[:2], ranked=best,
                           references={"thread": thread, "vwarp w=32": vw32})


def fake_measure(times: dict[str, float]):
    calls = []

    def measure(graph_spec, algorithm, config, source):
        calls.append((graph_spec, algorithm, config, source))
        return {"measured_us": times[config], "kernel_us": times[config] / 2,
                "correct": True, "note": "", "gpu_name": "Fake GPU"}

    measure.calls = calls
    return measure


W8 = "mapping=vwarp,w=8,chunk=1,distribution=static,block_size=256,driven=topology,unroll=1"
W32C4 = ("mapping=vwarp,w=32,chunk=4,distribution=static,block_size=256,driven=topology,"
         "unroll=1")
THREAD = "mapping=thread,block_size=256,driven=topology,unroll=1"
W32 = "mapping=vwarp,w=32,chunk=1,distribution=static,block_size=256,driven=topology,unroll=1"


def test_the_top_k_and_every_reference_are_candidates_once():
    rows = candidates(summary(), 2)
    assert [(r.config, r.rank, r.role) for r in rows] == [
        (W8, 1, "trial"), (W32C4, 2, "trial"), (THREAD, 4, "reference"),
        (W32, 6, "reference")]  # a reference the search did not rank comes last
    assert rows[0].time_us == 10.0 and rows[2].label == "thread"


def test_k_beyond_the_tables_rows_measures_the_ranking_and_says_where_it_ran_short():
    """K had been cut to the summary's 5 rows without a word, and a reference below them
    recorded as 6th whatever its place."""
    ranked = [record({"mapping": "vwarp", "w": w}, 10.0 + i, trial=i)
              for i, w in enumerate((1, 2, 4, 8, 16, 32))]
    thread = record({"mapping": "thread"}, 20.0, role="reference", label="thread")
    ranked.append(thread)
    big = SimpleNamespace(key="k", spec=SimpleNamespace(
        graph=GRAPH, algorithm="bfs", objective=SimpleNamespace(metrics=["time_us"])),
        best=ranked[:5], ranked=ranked, references={"thread": thread})
    rows = candidates(big, 7)
    assert [r.rank for r in rows] == [1, 2, 3, 4, 5, 6, 7] and rows[-1].label == "thread"
    times = {r.config: 5.0 for r in rows}
    assert verify_study(big, 6, fake_measure(times)).note == ""
    short = verify_study(big, 9, fake_measure(times))
    assert len(short.rows) == 7 and "ranks 7 configurations, fewer than the 9 asked" in short.note
    assert short.note in verification_table(short)


def test_the_measured_winner_and_the_picks_regret():
    measure = fake_measure({W8: 30.0, W32C4: 20.0, THREAD: 90.0, W32: 25.0})
    v = verify_study(summary(), 3, measure)
    adaptive = next(r for r in v.rows if r.config.startswith("mapping=adaptive"))
    assert adaptive.measured_us is None and "no GPU kernel" in adaptive.note  # refused
    assert all(c[3] == 3 for c in measure.calls) and len(measure.calls) == 4
    assert v.winner().config == W32C4 and v.pick_regret() == pytest.approx(1.5)
    text = verification_table(v)
    assert "<- measured winner" in text and "regret 1.500" in text and "reference: thread" in text


def test_the_rows_are_written_beside_the_trials(tmp_path):
    v = verify_study(summary(), 2, fake_measure({W8: 30.0, W32C4: 20.0, THREAD: 9.0, W32: 25.0}))
    path = write_verification(v, tmp_path)
    assert path == tmp_path / "measured" / "study-abc.parquet"
    rows = read_verification(tmp_path, "study-abc")
    assert [r["winner"] for r in rows] == [False, False, True, False]
    assert {r["time_us"] for r in rows} == {10.0, 12.0, 40.0, 35.0}
    assert rows[0]["measured_us"] == 30.0 and rows[0]["gpu_name"] == "Fake GPU"
    assert read_verification(tmp_path, "no-such-study") == []


def test_without_a_gpu_one_line_and_nothing_written(monkeypatch, tmp_path):
    monkeypatch.setattr(measure_module, "gpu_unavailable", lambda index=0: "CuPy is missing")
    out, note = verify_tune([summary()], 3, tmp_path)
    assert out == [] and "no GPU here (CuPy is missing)" in note and "\n" not in note
    assert not (tmp_path / "measured").exists()


def test_tune_verify_without_a_gpu_still_completes_the_study(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(measure_module, "gpu_unavailable", lambda index=0: "CuPy is missing")
    code = main(["tune", "--graph", GRAPH, "--algo", "bfs", "--trials", "3", "--sources", "1",
                 "--workers", "0", "--results", str(tmp_path), "--no-progress",
                 "--verify", "2"])
    out = capsys.readouterr().out
    assert code == 0 and "study " in out
    lines = [ln for ln in out.splitlines() if "--verify 2" in ln]
    assert len(lines) == 1 and "no GPU here" in lines[0] and "stands as simulated" in lines[0]
    assert list((tmp_path / "trials").rglob("*.parquet"))


def test_tune_verify_json_says_whether_anything_was_measured(monkeypatch, tmp_path, capsys):
    """--json had held no word of --verify: a skipped verification looked like none asked."""
    import json

    monkeypatch.setattr(measure_module, "gpu_unavailable", lambda index=0: "CuPy is missing")
    code = main(["tune", "--graph", GRAPH, "--algo", "bfs", "--trials", "3", "--sources", "1",
                 "--workers", "0", "--results", str(tmp_path), "--no-progress",
                 "--verify", "2", "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and "no GPU here" in err
    verify = json.loads(out)["verify"]
    assert verify["k"] == 2 and verify["measured"] is False and "no GPU here" in verify["note"]
    assert verify["studies"] == []


def test_tune_top_shows_more_than_five_rows(tmp_path, capsys):
    """--top above 5 had shown 5: the study's summary kept only its head."""
    code = main(["tune", "--graph", GRAPH, "--algo", "bfs", "--trials", "8", "--sources", "1",
                 "--workers", "0", "--results", str(tmp_path), "--no-progress",
                 "--no-references", "--top", "7"])
    out = capsys.readouterr().out
    ranks = [m.group(1) for m in re.finditer(r"^  (\d+) +[\d.e+]+ ", out, re.MULTILINE)]
    assert code == 0 and ranks == ["1", "2", "3", "4", "5", "6", "7"]


def test_the_k_measured_spread_over_kernel_families():
    """Six virtual-warp widths of one sweep rank first: K = 4 measures two of them (ceil(4/2)),
    then the best of the other families, not four widths of one kernel."""
    widths = [record({"mapping": "vwarp", "w": w}, 10.0 + i, trial=i)
              for i, w in enumerate((8, 16, 32, 4, 2, 1))]
    chunked = record({"mapping": "vwarp", "w": 32, "chunk": 4}, 17.0, trial=6)
    deferred = record({"mapping": "thread", "defer_threshold": 32}, 18.0, trial=7)
    worklist = record({"mapping": "vwarp", "w": 8, "driven": "data"}, 19.0, trial=8)
    ranked = [*widths, chunked, deferred, worklist]
    study = SimpleNamespace(key="k", spec=SimpleNamespace(
        graph=GRAPH, algorithm="bfs", objective=SimpleNamespace(metrics=["time_us"])),
        best=ranked[:5], ranked=ranked, references={})
    assert [r.rank for r in candidates(study, 4)] == [1, 2, 7, 8]
    assert [r.rank for r in candidates(study, 5)] == [1, 2, 3, 7, 8]  # ceil(5/2) = 3
    # where the families run short, the skipped fill the K in rank order
    assert [r.rank for r in candidates(study, 8)] == [1, 2, 3, 4, 5, 7, 8, 9]


def test_a_kernel_family_is_its_structure_not_its_numbers():
    def family(text):
        return kernel_family(text)
    assert family("mapping=vwarp,w=8") == family("mapping=vwarp,w=32")
    assert family("mapping=thread,defer_threshold=8") == family(
        "mapping=thread,defer_threshold=64")
    assert family("driven=temporal,switch_to_topology=0.1") == family(
        "driven=temporal,switch_to_topology=0.5")
    assert len({family(c) for c in (
        "mapping=vwarp,w=8", "mapping=vwarp,w=8,chunk=4", "mapping=thread",
        "mapping=thread,defer_threshold=32", "mapping=thread,donate_threshold=4",
        "mapping=vwarp,w=8,driven=data", "mapping=vwarp,w=8,driven=data,push=block",
        "mapping=vwarp,w=8,chunk=64,distribution=dynamic")}) == 8
    assert spread_top_k([], 3) == [] and spread_top_k(["mapping=thread"], 3) == [0]
