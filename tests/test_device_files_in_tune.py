"""A device file (what `warpsweep calibrate` writes) works wherever a device is named: tune,
sweep and the API simulate with its fields, the rows name it by its name, and two files of
one name are two studies."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from simulator import get_device
from simulator import load_graph
from simulator import simulate
from simulator.errors import ConfigError
from tuner import api
from tuner.cli import main
from tuner.results.store import read_trials

GRAPH = "rmat:scale=8,seed=1"
CALIBRATED = Path(__file__).resolve().parents[1] / "bench" / "gpu" / "results" / "h100.toml"


def slow_h100(tmp_path: Path, name: str = "h100-slow", factor: float = 4.0) -> Path:
    """A device file: the H100 with a launch overhead ``factor`` times the preset's."""
    base = get_device("h100")
    path = tmp_path / f"{name}.toml"
    path.write_text(f'base = "h100"\nname = "{name}"\n'
                    f"launch_overhead_us = {base.launch_overhead_us * factor}\n")
    return path


def test_tune_simulates_with_the_files_fields_and_names_the_device(tmp_path):
    results = tmp_path / "r"
    run = api.tune(GRAPH, "bfs", device=str(slow_h100(tmp_path)), trials=3, sources=1,
                   results=str(results))
    rows = read_trials(results).to_pylist()
    assert {r["device"] for r in rows} == {"h100-slow"}
    assert run.studies[0].spec.device == "h100-slow"
    # the stored thread reference is what the simulator gives on that device, not the preset
    thread = next(r for r in rows if r["label"] == "thread")
    graph = load_graph(GRAPH)
    source = thread["sources"][0]
    slow = simulate(graph, "bfs", {"mapping": "thread"}, device=get_device(
        str(tmp_path / "h100-slow.toml")), source=source)
    preset = simulate(graph, "bfs", {"mapping": "thread"}, device="h100", source=source)
    assert thread["time_us"] == pytest.approx(slow.time_us)
    assert slow.time_us > preset.time_us * 1.05


def test_two_files_of_one_name_are_two_studies(tmp_path):
    """Each in its own results directory: one directory keeps one meaning per device name
    (the second file in the first's directory is refused: test_device_presets.py)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = slow_h100(tmp_path / "a", factor=2.0)
    second = slow_h100(tmp_path / "b", factor=3.0)
    keys = set()
    for path, results in ((first, "ra"), (second, "rb"), (first, "ra")):  # the third resumes
        run = api.tune(GRAPH, "bfs", device=str(path), trials=2, sources=1,
                       results=str(tmp_path / results))
        keys.add(run.studies[0].key)
    assert len(keys) == 2 and all(".h100-slow." in k for k in keys)


def test_sweep_names_a_device_file(tmp_path, capsys):
    path = slow_h100(tmp_path)
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f"graphs: ['{GRAPH}']\nalgorithms: [bfs]\ndevices: [h100, '{path}']\n"
                     "spaces: [vwarp]\ntrials: 2\nsources: 1\n")
    assert main(["sweep", str(sweep), "--workers", "0", "--results", str(tmp_path / "r"),
                 "-q"]) == 0
    devices = {r["device"] for r in read_trials(tmp_path / "r").to_pylist()}
    assert devices == {"h100", "h100-slow"}


def test_the_committed_calibrated_file_tunes(tmp_path):
    run = api.tune(GRAPH, "bfs", device=str(CALIBRATED), trials=2, sources=1,
                   results=str(tmp_path / "r"))
    assert run.studies[0].spec.device == get_device(str(CALIBRATED)).name


@pytest.mark.parametrize(("device", "message"), [
    ("h1000", "unknown device 'h1000'"),
    ("missing.toml", "device file 'missing.toml' not found"),
])
def test_bad_devices_are_refused_before_anything_runs(tmp_path, device, message):
    with pytest.raises(ConfigError, match=message):
        api.tune(GRAPH, "bfs", device=device, trials=2, results=str(tmp_path / "r"))
    assert not (tmp_path / "r").exists()


def test_a_bad_device_file_names_its_field(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('base = "h100"\nsms = 1.5\n')
    with pytest.raises(ConfigError, match="sms"):
        api.tune(GRAPH, "bfs", device=str(path), trials=2, results=str(tmp_path / "r"))


@pytest.mark.parametrize("sector", [4, 12])
def test_a_sector_that_splits_pagerank_doubles_is_refused(sector):
    """4-byte sectors had been taken: PageRank's 8-byte values came out 0 a sector (a
    division by zero in the outlier kernel; fewer transactions than with 8-byte sectors,
    exit 0; probe NUMERIC)."""
    with pytest.raises(ConfigError, match="sector_bytes must be a multiple of 8"):
        dataclasses.replace(get_device("h100"), sector_bytes=sector)


def test_the_device_travels_as_fields_not_as_a_path(tmp_path):
    """The driver reads the file; what the workers get is the Device (a cluster's workers need
    not hold the file)."""
    from tuner.tuning.plan import check_spec
    from tuner.tuning.spec import StudySpec

    path = slow_h100(tmp_path)
    spec = check_spec(StudySpec(graph=GRAPH, algorithm="bfs", device=str(path),
                                space="vwarp"))
    assert spec.device == "h100-slow"
    assert spec.device_model == dataclasses.replace(
        get_device("h100"), name="h100-slow",
        launch_overhead_us=get_device("h100").launch_overhead_us * 4.0)


def test_check_names_one_device_name_with_two_sets_of_fields(tmp_path, capsys):
    """Two runs side by side (or one killed before its rows were written) passed the guard,
    which reads the rows on disk once: `best` then ranked two models as one device."""
    import shutil

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for sub, factor in (("a", 2.0), ("b", 3.0)):
        api.tune(GRAPH, "bfs", device=str(slow_h100(tmp_path / sub, factor=factor)),
                 trials=2, sources=1, results=str(tmp_path / f"r{sub}"))
    assert main(["check", str(tmp_path / "ra")]) == 0
    for f in (tmp_path / "rb" / "trials").rglob("*.parquet"):  # as the race leaves them
        target = tmp_path / "ra" / f.relative_to(tmp_path / "rb")
        shutil.copy(f, target.with_name(f"part-b{target.name.removeprefix('part-')}"))
    capsys.readouterr()
    assert main(["check", str(tmp_path / "ra")]) == 1
    out = capsys.readouterr().out
    assert "device 'h100-slow': rows simulated with 2 sets of device fields" in out


def test_a_sweep_naming_one_device_with_two_sets_of_fields_is_refused(tmp_path, capsys):
    """It ran with exit 0 and left a directory check fails and the same sweep refuses."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = slow_h100(tmp_path / "a", factor=2.0)
    second = slow_h100(tmp_path / "b", factor=3.0)
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f"graphs: ['{GRAPH}']\nalgorithms: [bfs]\n"
                     f"devices: ['{first}', '{second}']\nspaces: [vwarp]\ntrials: 2\n"
                     "sources: 1\n")
    assert main(["sweep", str(sweep), "--workers", "0", "--results", str(tmp_path / "r"),
                 "-q"]) == 2
    err = capsys.readouterr().err
    assert "this run names 2 devices 'h100-slow' with other fields" in err
    assert not (tmp_path / "r" / "trials").exists()


def test_a_missing_base_file_is_named_from_the_file_that_names_it(tmp_path):
    """Probe DEV: `base = "./nothere.toml"` had been refused as "device file nothere.toml
    does not exist", naming neither the file nor its field."""
    f = tmp_path / "mine.toml"
    f.write_text('base = "./nothere.toml"\nname = "mine"\n')
    with pytest.raises(ConfigError, match=r"mine\.toml: field `base` './nothere\.toml' is no "
                                          r"preset, and no file .*nothere\.toml exists"):
        get_device(str(f))


@pytest.mark.parametrize("verb", [["best"], ["effect", "w"], ["pareto"], ["report"]])
def test_a_reader_given_a_file_of_a_stored_name_with_other_fields_refuses_it(tmp_path, capsys,
                                                                            verb):
    """`best --device B.toml` had shown the rows another file of B's name had made as B's,
    exit 0, where `select` refuses them (probe DEVICE); the file they came from, or the
    name, reads them."""
    results = tmp_path / "r"
    made = slow_h100(tmp_path, "mygpu", factor=4.0)
    api.tune(GRAPH, "bfs", device=str(made), trials=3, sources=1, results=str(results))
    (tmp_path / "other").mkdir()
    other = slow_h100(tmp_path / "other", "mygpu", factor=2.0)
    out = ["--out", str(tmp_path / "page")] if verb == ["report"] else []
    extra = ["--no-selector"] if verb == ["report"] else []
    assert main([*verb, "--results", str(results), "--device", str(other), *out, *extra]) == 2
    err = capsys.readouterr().err
    assert f"--device {other} has other fields than the mygpu of the results' rows" in err
    for device in (str(made), "mygpu"):
        assert main([*verb, "--results", str(results), "--device", device, *out, *extra]) == 0


def test_the_python_readers_refuse_a_file_of_a_stored_name_with_other_fields(tmp_path):
    """`figures(device=FILE)` and the answers given a connection had read a device file by
    its name alone, answering another file's rows as its own, where `report --device` and
    the answers given a path refuse (review CR28)."""
    from tuner.analysis import answers
    from tuner.results.query import connect

    results = tmp_path / "r"
    made = slow_h100(tmp_path, "mygpu", factor=4.0)
    api.tune(GRAPH, "bfs", device=str(made), trials=3, sources=1, results=str(results))
    (tmp_path / "other").mkdir()
    other = slow_h100(tmp_path / "other", "mygpu", factor=2.0)
    refused = r"has other fields than the mygpu of the results' rows"
    con = connect(str(results))
    for read in (lambda d: api.figures(str(results), device=d),
                 lambda d: answers.best(con, {"device": d}),
                 lambda d: answers.effect(con, "w", {"device": d}),
                 lambda d: answers.pareto(con, ["time_us", "bytes"], {"device": d})):
        with pytest.raises(ConfigError, match=refused):
            read(str(other))
        read(str(made))
    assert [s.study.device for s in answers.best(con, {"device": str(made)}).studies] == [
        "mygpu"]


def test_select_evaluate_refuses_a_file_of_a_stored_name_with_other_fields(tmp_path, capsys):
    """`select evaluate` had read another file's rows of the name as this file's, exit 0,
    where `select train` refuses them (review CR19)."""
    results = tmp_path / "r"
    made = slow_h100(tmp_path, "mygpu", factor=4.0)
    api.tune(GRAPH, "bfs", device=str(made), trials=3, sources=1, results=str(results))
    (tmp_path / "other").mkdir()
    other = slow_h100(tmp_path / "other", "mygpu", factor=2.0)
    for verb in (["select", "evaluate"], ["select", "adaptive"]):
        assert main([*verb, "--results", str(results), "--device", str(other)]) == 2
        assert "has other fields than the mygpu of the results' rows" in capsys.readouterr().err


def test_report_with_a_device_file_names_a_damaged_results_file_in_one_line(tmp_path, capsys):
    """The device's check read the damaged file before the report's reading named it: a
    pyarrow traceback (review CR19)."""
    results = tmp_path / "r"
    made = slow_h100(tmp_path, "mygpu")
    api.tune(GRAPH, "bfs", device=str(made), trials=3, sources=1, results=str(results))
    good = next((results / "trials").rglob("part-*.parquet"))
    good.with_name("part-torn.parquet").write_bytes(good.read_bytes()[:200])
    assert main(["report", "--results", str(results), "--device", str(made), "--out",
                 str(tmp_path / "page")]) == 2
    assert "damaged results file" in capsys.readouterr().err


def test_a_reader_counts_rows_without_a_digest_as_their_presets_fields_then(tmp_path, capsys):
    """Rows written before rows recorded the device's digest are the preset's fields of the
    time, for the readers as for tune: `best --device` with the calibrated h100's file had
    shown the old h100 rows as its own (review CR19)."""
    import pyarrow.parquet as pq

    results = tmp_path / "r"
    api.tune(GRAPH, "bfs", device="h100", trials=3, sources=1, results=str(results))
    for f in (results / "trials").rglob("part-*.parquet"):
        pq.write_table(pq.read_table(f).drop_columns(["device_digest"]), f)
    preset = Path(__file__).resolve().parents[1] / "simulator" / "devices" / "h100.toml"
    assert main(["best", "--results", str(results), "--device", str(preset)]) == 2
    assert "has other fields than the h100 of the results' rows" in capsys.readouterr().err
