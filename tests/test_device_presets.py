"""One device namespace (issue 42): the presets are the package's device files, `h100` is the
calibrated H100 fitted on `h100-datasheet`, `warpsweep calibrate` starts from the datasheet
model and its file tunes at once, and results simulated under another meaning of a device
name are never resumed or mixed with the new one."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tomllib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from simulator import load_graph
from simulator import simulate
from simulator.device import DATASHEETS
from simulator.device import DEVICES
from simulator.device import PRESET_DIR
from simulator.device import device_digest
from simulator.device import device_name
from simulator.device import get_device
from simulator.errors import ConfigError
from simulator.functional import default_source
from tuner import api
from tuner.calibration.calibrate import calibrated_device
from tuner.calibration.calibrate import calibration_base
from tuner.cli import main
from tuner.results.store import read_trials
from tuner.tuning.evaluate import graph_slug
from tuner.tuning.plan import check_spec
from tuner.tuning.plan import load_spaces
from tuner.tuning.spec import LEGACY_PRESET_DIGESTS
from tuner.tuning.spec import StudySpec

REPO = Path(__file__).resolve().parents[1]
BENCH_H100 = REPO / "bench" / "gpu" / "results" / "h100.toml"
GRAPH = "rmat:scale=7,seed=1"


def test_every_preset_is_a_package_file_named_as_its_file():
    stems = sorted(p.stem for p in PRESET_DIR.glob("*.toml"))
    assert list(DEVICES) == stems
    assert {"h100", "h100-datasheet", "h200", "a100", "c2050", "gtx260", "quadro6000"} <= set(
        stems)
    for name, device in DEVICES.items():
        assert device.name == name and get_device(name) is device
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "devices/*.toml" in pyproject["tool"]["setuptools"]["package-data"]["simulator"]


def test_presets_other_than_h100_kept_their_fields_and_h100_datasheet_is_the_old_h100():
    for name, digest in LEGACY_PRESET_DIGESTS.items():
        if name != "h100":
            assert device_digest(DEVICES[name]) == digest, name
    old_h100 = dataclasses.replace(DEVICES["h100-datasheet"], name="h100")
    assert device_digest(old_h100) == LEGACY_PRESET_DIGESTS["h100"]
    assert device_digest(DEVICES["h100"]) != LEGACY_PRESET_DIGESTS["h100"]


def test_h100_is_the_committed_calibration_on_the_datasheet_model():
    committed = get_device(str(BENCH_H100))
    assert committed.name == "h100-calibrated"
    assert DEVICES["h100"] == dataclasses.replace(committed, name="h100")
    # both files start from the datasheet preset: no calibration of a calibration
    for path in (BENCH_H100, PRESET_DIR / "h100.toml"):
        assert tomllib.loads(path.read_text())["base"] == "h100-datasheet"
    assert DATASHEETS == {"h100": "h100-datasheet"}
    assert DEVICES["h100"].bounds_norm == 3.0
    assert DEVICES["h100"].launch_overhead_us == pytest.approx(9.18587)
    assert DEVICES["h100-datasheet"].launch_overhead_us == 3.0


def test_calibration_starts_from_the_datasheet_model():
    datasheet = DEVICES["h100-datasheet"]
    assert calibration_base("h100") == ("h100", datasheet)
    assert calibration_base("h100-datasheet") == ("h100", datasheet)
    assert calibration_base("c2050") == ("c2050", DEVICES["c2050"])
    assert calibration_base(str(BENCH_H100)) == ("h100-calibrated", get_device(str(BENCH_H100)))
    assert calibrated_device(datasheet, {}).name == "h100-calibrated"


def test_a_device_file_names_its_rows_in_every_reader():
    assert device_name(str(BENCH_H100)) == "h100-calibrated"
    assert device_name("h100") == "h100"
    assert device_name("some-recorded-name") == "some-recorded-name"
    with pytest.raises(ConfigError, match="does not exist"):
        device_name("missing.toml")


def _measured_file(path: Path, truth) -> None:
    """Measured rows of the GPU `h100` whose times a known device gives."""
    configs = ("mapping=thread", "mapping=vwarp,w=4", "mapping=vwarp,w=32",
               "mapping=thread,driven=data,push=atomic", "mapping=vwarp,w=8,chunk=4")
    rows = []
    for name, spec in (("rmat7", "rmat:scale=7,seed=1"), ("rand256", "random:n=256,deg=6,seed=2"),
                       ("grid12", "grid2d:rows=12")):
        graph = load_graph(spec)
        source = default_source(graph)
        for config in configs:
            time_us = simulate(graph, "bfs", config, truth, source=source).time_us
            rows.append({"device": "h100", "graph": name, "graph_spec": spec, "algorithm": "bfs",
                         "config": config, "variant": "default", "source": source,
                         "time_us": time_us, "correct": True})
    pq.write_table(pa.Table.from_pylist(rows), path)


def test_calibrate_output_tunes_simulates_and_reads_at_once(tmp_path, capsys):
    """`warpsweep calibrate` (default --device h100) fits the h100 rows on h100-datasheet, and
    its file is usable at once: simulate, tune and best take it as --device FILE."""
    truth = dataclasses.replace(DEVICES["h100-datasheet"], launch_overhead_us=9.0,
                                host_roundtrip_us=16.0)
    measured = tmp_path / "m.parquet"
    _measured_file(measured, truth)
    out = tmp_path / "mine.toml"
    assert main(["calibrate", str(measured), "--out", str(out), "--no-cache", "-q",
                 "--fit-host", "--fit", "absolute"]) == 0
    printed = capsys.readouterr().out
    assert "base device h100-datasheet" in printed and f"--device {out}" in printed
    assert tomllib.loads(out.read_text())["base"] == "h100-datasheet"
    fitted = get_device(str(out))
    assert fitted.name == "h100-calibrated"
    graph = load_graph(GRAPH)
    for config in ("mapping=thread", "mapping=vwarp,w=32"):  # the fit gives the GPU's times
        assert simulate(graph, "bfs", config, fitted).time_us == pytest.approx(
            simulate(graph, "bfs", config, truth).time_us, rel=0.1)
    assert simulate(graph, "bfs", "mapping=thread", "h100-datasheet").time_us < 0.8 * simulate(
        graph, "bfs", "mapping=thread", truth).time_us
    assert main(["simulate", "--graph", GRAPH, "--algo", "bfs", "--device", str(out),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["device"] == "h100-calibrated"
    results = tmp_path / "r"
    api.tune(GRAPH, "bfs", device=str(out), trials=2, sources=1, results=str(results))
    rows = read_trials(results).to_pylist()
    assert {r["device"] for r in rows} == {"h100-calibrated"}
    assert {r["device_digest"] for r in rows} == {device_digest(fitted)}
    assert main(["best", "--results", str(results), "--device", str(out), "--json"]) == 0
    best = json.loads(capsys.readouterr().out)
    assert best["studies"]
    assert all(s["study"]["device"] == "h100-calibrated" for s in best["studies"])


def _legacy_key(spec: StudySpec, space) -> str:
    """The study key as warpsweep computed it before device fields entered it (issue 42)."""
    ident = {
        "graph": spec.graph.strip(), "graph_content": spec.graph_content,
        "algorithm": spec.algorithm, "device": spec.device,
        "space": space.name, "space_digest": space.digest, "objective": str(spec.objective),
        "sources": spec.n_sources(),
        "source_seed": spec.seed if spec.n_sources() > 1 else None,
    }
    digest = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:10]
    return f"{graph_slug(spec.graph)}.{spec.algorithm}.{spec.device}.{space.name}.{digest}"


def test_unchanged_presets_keep_their_study_keys_and_h100s_changed():
    for device in ("gtx260", "c2050", "a100", "h200"):
        spec = check_spec(StudySpec(graph=GRAPH, algorithm="bfs", device=device, space="vwarp"))
        space = load_spaces([spec])[spec.space_ref]
        assert spec.key(space) == _legacy_key(spec, space), device
    spec = check_spec(StudySpec(graph=GRAPH, algorithm="bfs", device="h100", space="vwarp"))
    space = load_spaces([spec])[spec.space_ref]
    assert spec.key(space) != _legacy_key(spec, space)
    assert spec.key(space).startswith(f"{graph_slug(GRAPH)}.bfs.h100.vwarp.")


def _strip_device_digest(results: Path) -> None:
    """Make every trial file look as a warpsweep before issue 42 wrote it (no digest column)."""
    for path in (results / "trials").rglob("part-*.parquet"):
        table = pq.read_table(path, partitioning=None)
        pq.write_table(table.drop_columns(["device_digest"]), path)


def test_a_directory_of_the_old_h100_is_never_resumed_or_mixed_with_the_new(tmp_path):
    """Rows an older warpsweep wrote for `h100` (the datasheet model, no digest recorded):
    tuning the calibrated `h100` into that directory is refused with the reason, not resumed
    and not added beside them; the datasheet model, by its new name or by the old one, goes
    on there."""
    results = tmp_path / "r"
    old = tmp_path / "old" / "h100.toml"
    old.parent.mkdir()
    old.write_text('base = "h100-datasheet"\nname = "h100"\n')  # the old preset's fields
    first = api.tune(GRAPH, "bfs", device=str(old), trials=3, sources=1, results=str(results))
    old_spec = first.studies[0].spec
    space = load_spaces([old_spec])[old_spec.space_ref]
    assert first.studies[0].key == _legacy_key(old_spec, space)  # an old warpsweep's key
    _strip_device_digest(results)
    before = read_trials(results).to_pylist()
    assert {r["device"] for r in before} == {"h100"}
    assert all("device_digest" not in r for r in before)
    with pytest.raises(ConfigError, match="h100 rows simulated with other device fields.*"
                                          "model now named h100-datasheet"):
        api.tune(GRAPH, "bfs", device="h100", trials=3, sources=1, results=str(results))
    assert main(["tune", "--graph", GRAPH, "--algo", "bfs", "--trials", "3", "--sources", "1",
                 "--workers", "0", "--results", str(results), "-q"]) == 2
    assert len(read_trials(results)) == len(before)  # nothing added
    # the old study resumes as it was (same key, nothing repeated) ...
    again = api.tune(GRAPH, "bfs", device=str(old), trials=3, sources=1, results=str(results))
    assert again.studies[0].key == first.studies[0].key and again.evaluations == 0
    # ... and the datasheet model under its new name is a study of its own beside it
    new = api.tune(GRAPH, "bfs", device="h100-datasheet", trials=3, sources=1,
                   results=str(results))
    assert new.studies[0].key != first.studies[0].key
    thread = {r["device"]: r["time_us"] for r in read_trials(results).to_pylist()
              if r["label"] == "thread"}
    assert thread["h100"] == pytest.approx(thread["h100-datasheet"])


def test_a_directory_written_under_other_device_fields_is_not_resumed(tmp_path):
    """Two device files of one name with other fields: other study keys, and the second is
    refused in the first one's directory (the readers group rows by the device's name)."""
    results = tmp_path / "r"
    files = []
    for sub, overhead in (("a", 6.0), ("b", 9.0)):
        (tmp_path / sub).mkdir()
        path = tmp_path / sub / "mine.toml"
        path.write_text(f'base = "h100"\nname = "mine"\nlaunch_overhead_us = {overhead}\n')
        files.append(path)
    keys = []
    for path in files:
        spec = check_spec(StudySpec(graph=GRAPH, algorithm="bfs", device=str(path),
                                    space="vwarp"))
        keys.append(spec.key(load_spaces([spec])[spec.space_ref]))
    assert keys[0] != keys[1]
    api.tune(GRAPH, "bfs", device=str(files[0]), trials=2, sources=1, results=str(results))
    rows = len(read_trials(results))
    with pytest.raises(ConfigError, match="holds mine rows simulated with other device fields"):
        api.tune(GRAPH, "bfs", device=str(files[1]), trials=2, sources=1, results=str(results))
    assert len(read_trials(results)) == rows
    again = api.tune(GRAPH, "bfs", device=str(files[0]), trials=2, sources=1,
                     results=str(results))
    assert again.evaluations == 0 and again.studies[0].key == keys[0]
