"""Calibration recovers known device figures from measured files whose times it can know."""

from __future__ import annotations

import dataclasses
import math
import os
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from simulator import get_device
from simulator import load_graph
from simulator import simulate
from simulator.errors import ConfigError
from simulator.functional import default_source
from tuner.calibration.calibrate import THETA_NAMES
from tuner.calibration.calibrate import Measured
from tuner.calibration.calibrate import calibrated_device
from tuner.calibration.calibrate import device_toml
from tuner.calibration.calibrate import fit
from tuner.calibration.calibrate import measured_host_us
from tuner.calibration.calibrate import predict
from tuner.calibration.heldout import PickFigures
from tuner.calibration.heldout import logo_calibration
from tuner.calibration.heldout import pick_figures
from tuner.calibration.measurements import load_launch_times
from tuner.calibration.measurements import load_measured
from tuner.calibration.parts import simulate_parts
from tuner.cli import main
from tuner.cli.calibrate import far_rows_lines
from tuner.cli.calibrate import fit_table
from tuner.cli.calibrate import held_out_lines
from tuner.cli.calibrate import launch_mismatch_lines
from tuner.env import SIMULATOR_DIR
from tuner.env import git_commit
from tuner.env import simulator_digest
from tuner.env import warpsweep_version

GRAPHS = {
    "rmat8": "rmat:scale=8,seed=1,weights=random",
    "grid16": "grid2d:rows=16,weights=random,seed=1",
    "rand512": "random:n=512,deg=8,weights=random,seed=1",
}
CONFIGS = (
    "mapping=thread",
    "mapping=vwarp,w=8",
    "mapping=vwarp,w=32",
    "mapping=thread,driven=data,push=atomic",
    "mapping=thread,defer_threshold=8",
)
# A small device on which every part binds somewhere on these small graphs: 2 SMs, one
# scheduler, no L2, slow DRAM and LSU, slow same-address atomics, short latencies.
SMALL = dataclasses.replace(
    get_device("h100-datasheet"), name="h100-small", sms=2, schedulers=1, l2_bytes=0,
    dram_bandwidth_gbs=40.0, lsu_sectors_per_cycle=1.0, atomic_cycles=100.0,
    dram_latency_cycles=5,
)
TRUTH = {"issue": 1.3, "lsu": 1.2, "latency": 1.6, "memory": 0.8, "atomics": 1.5,
         "overhead": 1.8, "host": 0.7}


def surrogate_cycles(parts, thetas) -> list[float]:
    """The surrogate of tuner/calibration/calibrate.py's docstring worked out here, launch by
    launch, apart from ``predict`` and ``_Stack`` (which the fit runs on): per launch the largest
    of its first five bounds, each scaled by its theta, plus its scaled overhead; then the
    scaled host round trips and the other cycles."""
    theta = [thetas.get(part, 1.0) for part in THETA_NAMES]
    out = []
    for p in parts:
        total = p.extra_cycles + theta[6] * p.host_cycles
        for launch in np.asarray(p.bounds).reshape(-1, 6).tolist():
            total += max(t * b for t, b in zip(theta[:5], launch[:5], strict=True))
            total += theta[5] * launch[5]
        out.append(total)
    return out


@pytest.fixture(scope="module")
def rows() -> list[Measured]:
    """Every (graph, algorithm, config) to measure, times not yet known."""
    out = []
    for name, spec in GRAPHS.items():
        source = default_source(load_graph(spec))
        for algorithm in ("bfs", "sssp"):
            out += [Measured(name, spec, algorithm, c, source, 1.0,
                             "plain" if "driven=data" in c else "default") for c in CONFIGS]
    return out


def write_measured(path, rows: list[Measured], times_us, device: str,
                   host: tuple[list[int], float] | None = None) -> None:
    """A measured file in the harness's format: per config the true time as its best correct
    variant (a topology sweep's one, a worklist's plain push), a worklist's beside a slower
    correct variant and (BFS) a faster incorrect one (both to be ignored).
    ``host``: each row's launches and the host's time per launch, which the kernel time then
    leaves out (else the kernel time is the whole time, as if nothing was spent outside)."""
    records = []
    launches = host[0] if host else [1] * len(rows)
    for r, t, n in zip(rows, times_us, launches, strict=True):
        kernel_us = t - n * host[1] if host else t
        g = load_graph(r.graph_spec)
        base = {"device": device, "gpu_name": f"test {device}", "graph": r.graph,
                "graph_spec": r.graph_spec, "n": g.n, "m": g.m, "algorithm": r.algorithm,
                "config": r.config, "source": r.source, "iterations": 1, "launches": n,
                "reps": 5, "cupy_version": "-", "cuda_version": "-", "commit": "-",
                "measured_at": "2026-01-01T00:00:00Z"}
        variants = [("default", t, True)]
        if "driven=data" in r.config:  # the variants its kernels implement
            variants = [("plain", t, True), ("warp_aggregated", 1.5 * t, True)]
            variants += [("claimed", 0.5 * t, False)] if r.algorithm == "bfs" else []
        for variant, time_us, correct in variants:
            records.append({**base, "variant": variant, "time_us": float(time_us),
                            "time_us_min": float(time_us),
                            "kernel_us": float(time_us - (t - kernel_us)),
                            "correct": correct})
    pq.write_table(pa.Table.from_pylist(records), path)


def write_measured_with_host(rows: list[Measured], tmp_path):
    """The rows as the surrogate with the true thetas times them, written with their kernel
    times and launches (the host taking ``TRUTH["host"]`` x the device's round trip a
    launch): the file, the times and each row's launches."""
    parts = simulate_parts(rows, SMALL, cache=tmp_path / "cache")
    times = [SMALL.us(c) for c in surrogate_cycles(parts, TRUTH)]
    launches = [round(p.host_cycles / SMALL.cycles(SMALL.host_roundtrip_us)) for p in parts]
    path = tmp_path / "measured.parquet"
    write_measured(path, rows, times, SMALL.name,
                   host=(launches, TRUTH["host"] * SMALL.host_roundtrip_us))
    return path, times, launches


def test_the_hand_surrogate_at_theta_one_is_the_simulated_time(rows):
    """What the fits below are given is the simulator's own time where every theta is 1."""
    parts = simulate_parts(rows[:10], SMALL, cache=None)
    for r, got in zip(rows[:10], surrogate_cycles(parts, {}), strict=True):
        want = simulate(load_graph(r.graph_spec), r.algorithm, r.config, SMALL, source=r.source)
        assert got == pytest.approx(want.cycles, rel=1e-12)


@pytest.mark.parametrize("thetas", [
    TRUTH,
    {"issue": 20.0, "lsu": 1 / 20, "latency": 20.0, "memory": 1 / 20, "atomics": 20.0},
    {"issue": 1 / 20, "lsu": 20.0, "latency": 1 / 20, "memory": 20.0, "overhead": 1 / 20},
])
def test_predict_is_the_surrogate_worked_by_hand(rows, thetas):
    """Also at the ends of the thetas' range, where _Stack's launches whose winner it took as
    fixed must still win."""
    parts = simulate_parts(rows, SMALL, cache=None)
    np.testing.assert_allclose(predict(parts, thetas), surrogate_cycles(parts, thetas),
                               rtol=1e-12)


def test_surrogate_times_give_back_their_thetas(rows, tmp_path):
    """(1) Times made by the surrogate (worked by hand) with known thetas: every constrained
    theta within 2%, and the file's rows reduce to the best correct variant per config."""
    parts = simulate_parts(rows, SMALL, cache=tmp_path / "cache")
    times = [SMALL.us(c) for c in surrogate_cycles(parts, TRUTH)]
    path = tmp_path / "measured.parquet"
    write_measured(path, rows, times, SMALL.name)
    measured = load_measured(path, device=SMALL.name)
    assert len(measured) == len(rows)
    assert {(m.variant, "driven=data" in m.config) for m in measured} == {
        ("default", False), ("plain", True)}
    cal = fit(simulate_parts(measured, SMALL, cache=tmp_path / "cache"), measured, SMALL)
    assert set(cal.unconstrained) <= {"issue", "lsu"}  # the rest bind on these graphs
    for part in THETA_NAMES:
        if part in cal.unconstrained:
            assert cal.thetas[part] == 1.0
        else:
            assert cal.thetas[part] == pytest.approx(TRUTH[part], rel=0.02), part
    assert cal.rms_after < 1e-3 < cal.rms_before


def test_a_row_far_from_the_fit_is_named_first(rows, tmp_path):
    """A time recorded a million times too long (a unit slip) bends the fit without a word
    unless named: the rows over 10x from the fitted prediction are listed, farthest first;
    times the surrogate makes exactly list none."""
    parts = simulate_parts(rows, SMALL, cache=tmp_path / "cache")
    times = [SMALL.us(c) for c in surrogate_cycles(parts, TRUTH)]
    clean = [dataclasses.replace(r, time_us=t) for r, t in zip(rows, times, strict=True)]
    assert far_rows_lines(fit(parts, clean, SMALL), clean) == []
    slipped = list(clean)
    slipped[7] = dataclasses.replace(clean[7], time_us=clean[7].time_us * 1e6)
    lines = far_rows_lines(fit(parts, slipped, SMALL), slipped)
    assert lines[0].startswith("1 measured row(s) more than 10x from the fit")
    r = slipped[7]
    assert lines[1].startswith(f"  {r.graph} {r.algorithm} {r.config!r} ({r.variant}): "
                               f"measured {r.time_us:g} us")


def test_a_row_whose_launches_are_not_its_simulations_is_named(rows, tmp_path):
    """A row measured with 10x the launches its simulation makes (another spec, source or
    configuration ran): named; launches as simulated, or a launch or two apart, are not."""
    parts = simulate_parts(rows, SMALL, cache=tmp_path / "cache")
    launches = [int(np.asarray(p.bounds).shape[0]) for p in parts]
    same = [dataclasses.replace(r, launches=n) for r, n in zip(rows, launches, strict=True)]
    assert launch_mismatch_lines(same, parts) == []
    near = [dataclasses.replace(r, launches=n + 2) for r, n in zip(rows, launches, strict=True)]
    assert launch_mismatch_lines(near, parts) == []
    off = list(same)
    off[4] = dataclasses.replace(same[4], launches=10 * launches[4] + 3)
    lines = launch_mismatch_lines(off, parts)
    r = off[4]
    assert len(lines) == 2 and lines[0].startswith("warning: 1 measured row(s) launched")
    assert lines[1] == (f"  {r.graph} {r.algorithm} {r.config!r} ({r.variant}): measured "
                        f"{r.launches} launches, simulated {launches[4]}")


def test_the_host_is_pinned_to_what_the_file_measured(rows, tmp_path):
    """A file that records kernel time and launches gives the host's round trip itself: the
    fit takes (total - kernel time) / launches as the host's figure (here 0.7x the device's,
    as the times were made) and fits the rest around it; with ``measured_host=False`` it fits
    the host too, and both give back the truth."""
    path, times, launches = write_measured_with_host(rows, tmp_path)
    measured = load_measured(path, device=SMALL.name)
    assert measured_host_us(measured) == pytest.approx(0.7 * SMALL.host_roundtrip_us)
    parts = simulate_parts(measured, SMALL, cache=tmp_path / "cache")  # in the file's order
    for pin in (True, False):
        cal = fit(parts, measured, SMALL, measured_host=pin)
        assert cal.pinned == (("host",) if pin else ())
        assert "host" not in cal.unconstrained
        for part in set(THETA_NAMES) - set(cal.unconstrained):
            assert cal.thetas[part] == pytest.approx(TRUTH[part], rel=0.02), (pin, part)
    # a host figure that disagrees with the times is kept as measured, and the fit shows it
    # (half the truth: twice it would leave some kernel times negative, which load_measured
    # refuses as impossible)
    write_measured(path, rows, times, SMALL.name,
                   host=(launches, 0.35 * SMALL.host_roundtrip_us))
    cal = fit(parts, load_measured(path, device=SMALL.name), SMALL)
    assert cal.thetas["host"] == pytest.approx(0.35) and cal.rms_after > 1e-2
    host_line = next(line for line in fit_table(cal).splitlines() if line.startswith("host"))
    assert "0.3500" in host_line and "measured: (total - kernel time) / launches" in host_line
    # the command line's --fit-host fits it instead, back to the times' 0.7
    base_file = tmp_path / "small.toml"
    base_file.write_text('base = "h100-datasheet"\nname = "h100-small"\nsms = 2\nschedulers = 1\n'
                         'l2_bytes = 0\ndram_bandwidth_gbs = 40.0\n'
                         'lsu_sectors_per_cycle = 1.0\natomic_cycles = 100.0\n'
                         'dram_latency_cycles = 5\n')
    assert get_device(str(base_file)) == SMALL
    out = tmp_path / "fitted.toml"
    argv = ["calibrate", str(path), "--device", str(base_file), "--out", str(out),
            "--cache", str(tmp_path / "cache"), "-q"]
    assert main(argv) == 0
    assert get_device(str(out)).host_roundtrip_us == pytest.approx(0.35 * SMALL.host_roundtrip_us)
    assert main([*argv, "--fit-host"]) == 0
    assert get_device(str(out)).host_roundtrip_us == pytest.approx(
        TRUTH["host"] * SMALL.host_roundtrip_us, rel=0.05)


def test_a_part_that_never_binds_stays_at_one(rows):
    """Atomics never bind on the preset H100 here: their theta is 1 and unconstrained."""
    parts = simulate_parts(rows[:10], "h100-datasheet", cache=None)
    truth = {"latency": 1.4, "overhead": 2.0, "host": 0.5}
    measured = [dataclasses.replace(r, time_us=get_device("h100-datasheet").us(c))
                for r, c in zip(rows[:10], surrogate_cycles(parts, truth), strict=True)]
    cal = fit(parts, measured, "h100-datasheet")
    assert "atomics" in cal.unconstrained and cal.thetas["atomics"] == 1.0
    assert cal.thetas["host"] == pytest.approx(0.5, rel=0.02)


@pytest.fixture(scope="module")
def real_case(rows, tmp_path_factory):
    """(2) Times from really simulating a device whose host round trip, launch overhead and
    DRAM bandwidth differ from the base's; the base has no L2 and a small DRAM bandwidth, so
    DRAM carries every sector and memory binds in some launches."""
    tmp = tmp_path_factory.mktemp("real")
    base_file = tmp / "base.toml"
    base_file.write_text('base = "h100-datasheet"\nname = "h100-nol2"\nl2_bytes = 0\n'
                         'dram_bandwidth_gbs = 100.0\n')
    base = get_device(str(base_file))
    truth = dataclasses.replace(base, host_roundtrip_us=12.0, launch_overhead_us=2.1,
                                dram_bandwidth_gbs=base.dram_bandwidth_gbs / 4)
    times = []
    for r in rows:
        g = load_graph(r.graph_spec)
        times.append(simulate(g, r.algorithm, r.config, truth, source=r.source).time_us)
    path = tmp / "measured.parquet"
    write_measured(path, rows, times, base.name)
    return tmp, base_file, base, truth, path


def test_real_simulations_give_back_the_device(real_case):
    """(2) The device file from calibrate holds the true figures within 5%."""
    tmp, _, base, truth, path = real_case
    measured = load_measured(path, device=base.name)
    parts = simulate_parts(measured, base, cache=tmp / "cache")
    cal = fit(parts, measured, base)
    out = tmp / "fitted.toml"
    out.write_text(device_toml(cal, source=str(path)))
    fitted = get_device(str(out))
    for name in ("host_roundtrip_us", "launch_overhead_us", "dram_bandwidth_gbs"):
        assert getattr(fitted, name) == pytest.approx(getattr(truth, name), rel=0.05), name
    assert fitted.l2_bytes == 0  # a base that is not a preset is written whole
    for part in cal.unconstrained:
        assert cal.thetas[part] == 1.0


def test_cli_writes_a_loadable_device(real_case, capsys):
    """(3) `warpsweep calibrate` end to end: the printed fit, the written file, the cache."""
    tmp, base_file, _, truth, path = real_case
    out = tmp / "cli.toml"
    cache = tmp / "cli-cache"
    argv = ["calibrate", str(path), "--device", str(base_file), "--out", str(out),
            "--cache", str(cache), "-q"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "RMS log error" in text and f"wrote {out}" in text and "host" in text
    fitted = get_device(str(out))
    assert fitted.name == "h100-nol2-calibrated"
    assert fitted.host_roundtrip_us == pytest.approx(truth.host_roundtrip_us, rel=0.05)
    entries = sorted(cache.rglob("*.npz"))
    assert len(entries) == 30
    stamp = [e.stat().st_mtime_ns for e in entries]
    assert main(argv) == 0  # answered from the cache: nothing written again
    assert [e.stat().st_mtime_ns for e in entries] == stamp
    assert "# relative fit" in out.read_text()  # the default
    # what made it, to make it again: version, commit, simulator and the fit's seed (probe FF)
    assert (f"# made by warpsweep {warpsweep_version()} (commit {git_commit() or 'unknown'}, "
            f"simulator {simulator_digest()}), the fit from 4 starts of --seed 0"
            in out.read_text())
    assert main([*argv, "--seed", "7"]) == 0 and "--seed 7" in out.read_text()
    assert main([*argv, "--fit", "absolute"]) == 0
    assert "# relative fit" not in out.read_text()
    assert get_device(str(out)).host_roundtrip_us == pytest.approx(truth.host_roundtrip_us,
                                                                   rel=0.05)


def test_cli_refuses_a_file_without_the_columns(tmp_path, capsys):
    """(3) A file without the needed columns: exit 2 and a message naming them."""
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"graph": ["g"], "time_us": [1.0]}), path)
    assert main(["calibrate", str(path), "--out", str(tmp_path / "x.toml"), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert "missing column(s)" in err and "graph_spec" in err and "correct" in err
    assert not (tmp_path / "x.toml").exists()


def test_cli_refuses_an_output_it_cannot_or_must_not_write_before_fitting(rows, tmp_path,
                                                                          capsys):
    """An --out that is an existing file other than a device file (a pyproject.toml) is not
    overwritten, and one under a file is named: both before anything is simulated (the fit
    had run, then overwritten the file or failed with a bare errno, exit 1)."""
    path = tmp_path / "m.parquet"
    write_measured(path, rows[:2], [5.0, 6.0], "h100")
    other = tmp_path / "pyproject.toml"
    other.write_text('[project]\nname = "x"\n')
    (tmp_path / "afile").write_text("x")
    for out, words in ((other, "is no device file"), (tmp_path / "afile" / "d.toml",
                                                      "is not a directory")):
        assert main(["calibrate", str(path), "--out", str(out), "--cache",
                     str(tmp_path / "c")]) == 2
        assert words in capsys.readouterr().err
    assert other.read_text() == '[project]\nname = "x"\n' and not (tmp_path / "c").exists()


def test_bad_inputs_are_config_errors(rows, tmp_path):
    """No correct rows, an unknown device, a graph that will not load: named errors."""
    path = tmp_path / "m.parquet"
    write_measured(path, rows[:2], [5.0, 6.0], "h100")
    with pytest.raises(ConfigError, match="no rows for device 'a100'"):
        load_measured(path, device="a100")
    with pytest.raises(ConfigError, match="unknown device"):
        get_device("h999")
    table = pq.read_table(path)
    pq.write_table(table.set_column(table.schema.get_field_index("correct"), "correct",
                                    pa.array([False] * table.num_rows)), path)
    with pytest.raises(ConfigError, match="no correct rows"):
        load_measured(path)
    missing = Measured("gone", "file:/nonexistent/g.gr", "bfs", "mapping=thread", 0, 1.0, "d")
    with pytest.raises(ConfigError, match="graph gone .* will not load"):
        simulate_parts([missing], "h100-datasheet", cache=tmp_path / "c")


def _rewritten(path, change) -> None:
    """The measured file at ``path`` with ``change(rows)`` applied to its rows."""
    records = pq.read_table(path).to_pylist()
    pq.write_table(pa.Table.from_pylist(change(records)), path)


def test_rows_that_would_be_fitted_wrong_are_refused(rows, tmp_path):
    """One configuration written two ways is one configuration; a measurement given twice
    with two times, rows of two GPUs under one device, and rows whose spec loads another
    graph than the one measured are refused, where the fit had taken them silently."""
    path = tmp_path / "m.parquet"
    write_measured(path, [rows[0], rows[3]], [5.0, 6.0], "h100")
    # the same knobs in another order and with a default spelled out: one configuration
    _rewritten(path, lambda rs: [r for r in rs if r["variant"] != "warp_aggregated"] + [
        {**rs[1], "config": "block_size=256,push=atomic,driven=data,mapping=thread",
         "time_us": 50.0, "time_us_min": 50.0, "kernel_us": 50.0,
         "variant": "warp_aggregated"}])
    measured = load_measured(path)
    assert len(measured) == 2 and [m.time_us for m in measured] == [5.0, 6.0]
    # a variant the kernels do not implement for it (no harness writes one): refused, not
    # taken as the fastest
    _rewritten(path, lambda rs: rs + [{**rs[0], "variant": "warp_aggregated", "time_us": 0.1,
                                       "time_us_min": 0.1, "kernel_us": 0.1}])
    with pytest.raises(ConfigError, match=r"variant 'warp_aggregated' does not apply"):
        load_measured(path)
    _rewritten(path, lambda rs: rs[:-1] + [{**rs[0], "variant": "nonsense"}])
    with pytest.raises(ConfigError, match=r"unknown variant 'nonsense'"):
        load_measured(path)
    # rows labelled h100 measured on another GPU: refused as a results directory's are
    write_measured(path, rows[:2], [5.0, 6.0], "h100")
    _rewritten(path, lambda rs: [{**r, "gpu_name": "NVIDIA H200"} for r in rs])
    with pytest.raises(ConfigError, match=r"measured on NVIDIA H200, no h100"):
        load_measured(path, device="h100")
    write_measured(path, rows[:2], [5.0, 6.0], "h100")
    _rewritten(path, lambda rs: rs + [{**rs[0], "time_us": 0.5, "time_us_min": 0.5,
                                       "kernel_us": 0.5}])
    with pytest.raises(ConfigError, match=r"variant 'default' is measured twice, 5 and 0.5"):
        load_measured(path)
    write_measured(path, rows[:2], [5.0, 6.0], "h100")
    _rewritten(path, lambda rs: [{**r, "gpu_name": "NVIDIA A100"} if i == 0 else r
                                 for i, r in enumerate(rs)])
    with pytest.raises(ConfigError, match=r"rows of 2 GPUs \(NVIDIA A100, test h100\) under "
                                          r"device 'h100'.*one GPU"):
        load_measured(path, device="h100")
    # rows of another device are left out, and said to be (probe 01)
    write_measured(path, rows[:3], [5.0, 6.0, 7.0], "h100")
    _rewritten(path, lambda rs: [{**r, "device": "h200"} if i == 0 else r
                                 for i, r in enumerate(rs)])
    left_out = []
    assert len(load_measured(path, device="h100", left_out=left_out)) == 2
    assert left_out == ["1 measured row(s) of device h200 left out: --device h100 fits its "
                        "own rows (--device h200 fits theirs)"]
    other = dataclasses.replace(rows[0], graph_spec=GRAPHS["grid16"], m=12345)
    with pytest.raises(ConfigError, match=r"record \[12345\] edges, but .* loads a graph "
                                          r"of \d+: the spec names another graph"):
        simulate_parts([other], "h100-datasheet", cache=tmp_path / "c")
    # the same verdict where the simulation comes from the cache (it had been fitted there
    # without a word: probe 01)
    simulate_parts([rows[0]], "h100-datasheet", cache=tmp_path / "c")
    with pytest.raises(ConfigError, match=r"record \[12345\] edges"):
        simulate_parts([dataclasses.replace(rows[0], m=12345)], "h100-datasheet",
                       cache=tmp_path / "c")


def test_text_from_the_input_stays_in_the_device_files_comments(real_case, monkeypatch,
                                                                capsys):
    """A newline in the measured file's path or a graph's name had ended its comment line and
    set the device's fields (`sms = 1`, exit 0); a file that did not load had been left in
    place of the device file at --out (probe MEASURE)."""
    import tuner.cli.calibrate as calibrate_cli

    tmp, _, base, _, path = real_case
    measured = load_measured(path, device=base.name)
    cal = fit(simulate_parts(measured, base, cache=tmp / "cache"), measured, base)
    out = tmp / "odd.toml"
    out.write_text(device_toml(cal, source="dir\nsms = 1 #/m.parquet",
                               notes=['g\rname = "evil"\x0b']))
    fitted = get_device(str(out))
    assert fitted.sms == base.sms and fitted.name != "evil"
    kept = out.read_text()
    monkeypatch.setattr(calibrate_cli, "device_toml", lambda *a, **k: "sms = = 1\n")
    assert main(["calibrate", str(path), "--device", str(tmp / "base.toml"), "--out",
                 str(out), "--cache", str(tmp / "cache")]) == 2
    assert "cannot parse" in capsys.readouterr().err
    assert out.read_text() == kept and [p.name for p in tmp.glob(".odd*")] == []


def test_rows_without_a_verdict_or_a_fit_of_one_row_are_refused(rows, tmp_path, capsys):
    """A row whose `correct` is null had been dropped silently; one measured configuration
    had been 'fitted' (RMS 0) and written as a device file."""
    path = tmp_path / "m.parquet"
    write_measured(path, rows[:2], [5.0, 6.0], "h100")
    _rewritten(path, lambda rs: [{**r, "correct": None} if i == 1 else r
                                 for i, r in enumerate(rs)])
    with pytest.raises(ConfigError, match=r"1 row\(s\) with no `correct` value"):
        load_measured(path)
    write_measured(path, rows[:1], [5.0], "h100")
    out = tmp_path / "one.toml"
    assert main(["calibrate", str(path), "--out", str(out), "--cache",
                 str(tmp_path / "c")]) == 2
    assert "1 measured configuration" in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize("column,values,words", [
    ("launches", ["5", "5"], "column 'launches' is string, expected numbers"),
    ("iterations", ["five", "5"], "column 'iterations' is string, expected numbers"),
    ("launches", [float("nan"), 5.0], "launches nan"),
    ("time_us", [1e308, 5.0], "time_us 1e+308, past 1e+15 us"),  # a scipy traceback
    ("launches", [7.5, 5.0], "launches 7.5"),  # had read as 7 (review CR16)
])
def test_an_optional_measured_column_of_another_kind_is_refused(rows, tmp_path, column,
                                                                values, words):
    # only the required columns had been type-checked: a TypeError or ValueError traceback
    # (probe MEASURE)
    path = tmp_path / "m.parquet"
    write_measured(path, rows[:2], [5.0, 6.0], "h100")
    table = pq.read_table(path)
    if column in table.column_names:
        table = table.drop_columns([column])
    pq.write_table(table.append_column(column, pa.array(values)), path)
    with pytest.raises(ConfigError, match=re.escape(words)):
        load_measured(path)


def test_an_optional_measured_column_left_empty_or_a_path_not_utf8_is_read_or_named(
        rows, tmp_path):
    # an all-null optional column (pandas' None) had been refused as "null, expected
    # numbers"; a path not UTF-8 had given pyarrow's UnicodeEncodeError (review CR16)
    path = tmp_path / "m.parquet"
    write_measured(path, rows[:2], [5.0, 6.0], "h100")
    table = pq.read_table(path)
    if "kernel_us" in table.column_names:
        table = table.drop_columns(["kernel_us"])
    pq.write_table(table.append_column("kernel_us", pa.nulls(table.num_rows)), path)
    assert len(load_measured(path)) == 2
    # an empty `m` is no column: --max-edges is refused, not ignored (review CR17)
    table = pq.read_table(path)
    if "m" in table.column_names:
        table = table.drop_columns(["m"])
    pq.write_table(table.append_column("m", pa.nulls(table.num_rows)), path)
    with pytest.raises(ConfigError, match="--max-edges needs the graphs' edge counts"):
        load_measured(path, max_edges=10)
    # of any type: pandas writes a column of NaN as a double's nulls (review CR18)
    table = pq.read_table(path).drop_columns(["m"])
    pq.write_table(table.append_column("m", pa.nulls(table.num_rows, pa.float64())), path)
    with pytest.raises(ConfigError, match="--max-edges needs the graphs' edge counts"):
        load_measured(path, max_edges=10)
    odd = Path(os.fsdecode(bytes(tmp_path) + b"/m\xff.parquet"))
    odd.write_bytes(path.read_bytes())
    with pytest.raises(ConfigError, match="not UTF-8 text"):
        load_measured(odd)


def test_device_mapping_is_exact_where_it_says(rows):
    """Scaling memory, atomics, overhead and host through the device fields gives the
    surrogate's cycles exactly (here on one graph's BFS rows)."""
    thetas = {"memory": 3.0, "overhead": 0.5, "host": 2.0, "atomics": 4.0}
    chosen = rows[:5]
    parts = simulate_parts(chosen, SMALL, cache=None)
    device = calibrated_device(SMALL, thetas)
    resim = simulate_parts(chosen, device, cache=None)
    np.testing.assert_allclose([p.cycles for p in resim], predict(parts, thetas), rtol=1e-9)


def test_relative_fit_ignores_per_graph_scale_errors(rows, tmp_path):
    """Times made by the surrogate with known thetas, then every (graph, algorithm) scaled by
    its own factor (geometric mean 1): the relative fit (the default), which gives each group
    a free offset, gives back every theta within 2%; the absolute fit, bent by the graph-wide
    errors, misses some by more than 10%."""
    parts = simulate_parts(rows, SMALL, cache=tmp_path / "cache")
    keys = sorted({(r.graph, r.algorithm) for r in rows})
    log_scale = dict(zip(keys, np.linspace(-0.6, 0.6, len(keys))[[3, 0, 5, 1, 4, 2]],
                         strict=True))
    times = [SMALL.us(c) * np.exp(log_scale[(r.graph, r.algorithm)])
             for r, c in zip(rows, surrogate_cycles(parts, TRUTH), strict=True)]
    measured = [dataclasses.replace(r, time_us=t) for r, t in zip(rows, times, strict=True)]
    relative = fit(parts, measured, SMALL)  # the default
    assert relative.relative
    plain = fit(parts, measured, SMALL, relative=False)
    checked = [p for p in THETA_NAMES if p not in relative.unconstrained]
    assert {"latency", "memory", "atomics", "overhead", "host"} <= set(checked)
    for part in checked:
        assert relative.thetas[part] == pytest.approx(TRUTH[part], rel=0.02), part
    assert max(abs(np.log(plain.thetas[p] / TRUTH[p])) for p in checked) > 0.1


def write_launch_times(path, rows: list[Measured], parts, thetas, *, drop_last=(),
                       decoys: bool = True) -> int:
    """Per-launch kernel times in bench/gpu/launch_times.py's format, made by the surrogate
    with ``thetas`` launch by launch; the runs in ``drop_last`` miss their last launch (a
    worklist run that converged a launch sooner). ``decoys``: rows the loader must pass over,
    another variant's and an L1 probe's, with wrong times. Returns the launches written."""
    theta = np.array([thetas[p] for p in THETA_NAMES])
    records = []
    for i, (r, p) in enumerate(zip(rows, parts, strict=True)):
        bounds = np.asarray(p.bounds).reshape(-1, 6)
        if i in drop_last:
            bounds = bounds[:-1]
        cycles = (bounds[:, :5] * theta[:5]).max(axis=1) + bounds[:, 5] * theta[5]
        for j, c in enumerate(cycles):
            row = {"graph": r.graph, "graph_spec": r.graph_spec, "algorithm": r.algorithm,
                   "config": r.config, "variant": r.variant, "source": r.source, "launch": j,
                   "runs": 5, "kernel_us": SMALL.us(c), "entries": -1, "l1": "cached"}
            records.append(row)
            if decoys:
                records.append({**row, "variant": "warp_aggregated" if r.variant == "plain"
                                else "plain", "kernel_us": 3 * SMALL.us(c)})
                records.append({**row, "l1": "bypass", "kernel_us": 5 * SMALL.us(c)})
    pq.write_table(pa.Table.from_pylist(records), path)
    return sum(r["variant"] in ("default", "plain") and r["l1"] == "cached"
               and ("driven=data" in r["config"]) == (r["variant"] == "plain")
               for r in records)


def test_per_launch_kernel_times_give_back_their_thetas(rows, tmp_path):
    """Kernel times of every launch made by the surrogate with known thetas (a few runs a
    launch short, as asynchronous ones may be), the host measured from the results file:
    the fit to the launches gives back every kernel part within 2%, skipping the decoy rows
    of another variant and of an L1 probe; its device file says what it was fitted to."""
    path, _, _ = write_measured_with_host(rows, tmp_path)
    measured = load_measured(path, device=SMALL.name)
    parts = simulate_parts(measured, SMALL, cache=tmp_path / "cache")
    launch_file = tmp_path / "launches.parquet"
    written = write_launch_times(launch_file, measured, parts, TRUTH, drop_last=(0, 5, 11))
    launch_us = load_launch_times([launch_file], measured)
    assert sum(t.size for t in launch_us) == written
    assert launch_us[0].size == np.asarray(parts[0].bounds).reshape(-1, 6).shape[0] - 1
    cal = fit(parts, measured, SMALL, launch_us=launch_us)
    assert cal.launches == written and cal.pinned == ("host",) and not cal.relative
    assert set(cal.unconstrained) <= {"issue", "lsu"}
    for part in set(THETA_NAMES) - set(cal.unconstrained):
        assert cal.thetas[part] == pytest.approx(TRUTH[part], rel=0.02), part
    assert f"measured kernel times of {written} launches" in device_toml(cal)
    # the command line: --launches fits them and writes the same device
    out = tmp_path / "fitted.toml"
    base_file = tmp_path / "small.toml"
    base_file.write_text('base = "h100-datasheet"\nname = "h100-small"\nsms = 2\nschedulers = 1\n'
                         'l2_bytes = 0\ndram_bandwidth_gbs = 40.0\n'
                         'lsu_sectors_per_cycle = 1.0\natomic_cycles = 100.0\n'
                         'dram_latency_cycles = 5\n')
    argv = ["calibrate", str(path), "--device", str(base_file), "--out", str(out),
            "--cache", str(tmp_path / "cache"), "-q", "--launches", str(launch_file)]
    assert main(argv) == 0
    assert get_device(str(out)).atomic_cycles == pytest.approx(
        TRUTH["atomics"] * SMALL.atomic_cycles, rel=0.02)
    # the host cannot be fitted from kernel times: --fit-host with --launches is refused
    with pytest.raises(ConfigError, match="host's round trip measured"):
        fit(parts, measured, SMALL, launch_us=launch_us, measured_host=False)


def test_per_launch_times_that_do_not_fit_are_config_errors(rows, tmp_path):
    """A missing file, one without the columns, or one that holds none of the measured runs
    is a clear error."""
    measured = rows[:2]
    with pytest.raises(ConfigError, match="do not exist"):
        load_launch_times([tmp_path / "nope.parquet"], measured)
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.Table.from_pylist([{"graph": "x", "kernel_us": 1.0}]), bad)
    with pytest.raises(ConfigError, match="missing column"):
        load_launch_times([bad], measured)
    other = tmp_path / "other.parquet"
    pq.write_table(pa.Table.from_pylist([{"graph": "elsewhere", "algorithm": "bfs",
                                          "config": "mapping=thread", "variant": "default",
                                          "launch": 0, "kernel_us": 1.0}]), other)
    with pytest.raises(ConfigError, match="hold none of the measured"):
        load_launch_times([other], measured)
    # a file given twice (sessions appended) had interleaved its launches, paired with the
    # wrong simulated ones; a kernel time of NaN, 0 or null had raised a traceback later, and
    # a gap been closed up (probe MEASURE)
    m = measured[0]
    launch = {"graph": m.graph, "algorithm": m.algorithm, "config": m.config,
              "variant": m.variant, "launch": 0, "kernel_us": 1.0}
    one = tmp_path / "one.parquet"
    pq.write_table(pa.Table.from_pylist([launch, {**launch, "launch": 1}]), one)
    assert load_launch_times([one], measured)[0].tolist() == [1.0, 1.0]
    with pytest.raises(ConfigError, match="launch 0 is given twice"):
        load_launch_times([one, one], measured)
    for edit, words in (({"kernel_us": 1e308}, r"kernel_us 1e\+308, which no kernel"),
                        ({"kernel_us": float("nan")}, "kernel_us nan, which no kernel"),
                        ({"kernel_us": 0.0}, "kernel_us 0.0, which no kernel"),
                        ({"kernel_us": None}, "kernel_us None, which no kernel"),
                        ({"launch": -1}, "numbered 0, 1"), ({"launch": 2}, "lacks launch 1")):
        pq.write_table(pa.Table.from_pylist([launch, {**launch, **edit}]), bad)
        with pytest.raises(ConfigError, match=words):
            load_launch_times([bad], measured)


def test_real_simulations_with_a_bounds_norm_give_back_the_device(real_case):
    """Times simulated by a device whose launches take the 3-norm of their bounds: fitted
    with that norm (bounds simulated once with the base's maximum, as the CLI caches them),
    the file holds the true figures and the norm; fitted with the maximum, it fits worse."""
    tmp, base_file, base, _, _ = real_case
    truth = dataclasses.replace(base, bounds_norm=3.0, launch_overhead_us=2.1,
                                dram_bandwidth_gbs=base.dram_bandwidth_gbs / 4)
    rows = []
    for name, spec in GRAPHS.items():
        g = load_graph(spec)
        source = default_source(g)
        for algorithm in ("bfs", "sssp"):
            rows += [Measured(name, spec, algorithm, c, source,
                              simulate(g, algorithm, c, truth, source=source).time_us,
                              "default") for c in CONFIGS]
    path = tmp / "measured-norm3.parquet"
    write_measured(path, rows, [r.time_us for r in rows], base.name)
    measured = load_measured(path, device=base.name)
    parts = simulate_parts(measured, base, cache=tmp / "cache")
    cal = fit(parts, measured, dataclasses.replace(base, bounds_norm=3.0))
    out = tmp / "fitted-norm3.toml"
    out.write_text(device_toml(cal, source=str(path)))
    fitted = get_device(str(out))
    assert fitted.bounds_norm == 3.0
    for name in ("launch_overhead_us", "dram_bandwidth_gbs"):
        assert getattr(fitted, name) == pytest.approx(getattr(truth, name), rel=0.05), name
    assert cal.rms_after < 0.01
    assert fit(parts, measured, base).rms_after > 2 * cal.rms_after


def test_bounds_norm_out_of_range_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="bounds_norm >= 1"):
        dataclasses.replace(get_device("h100-datasheet"), bounds_norm=0.5)
    bad = tmp_path / "bad.toml"
    bad.write_text('base = "h100-datasheet"\nbounds_norm = 0\n')
    with pytest.raises(ConfigError, match="bounds_norm >= 1"):
        get_device(str(bad))


def test_a_held_out_graph_is_predicted_by_a_fit_that_never_saw_it(rows):
    """``logo_calibration``: surrogate times with known thetas are predicted on each graph by a
    fit of the other two (nearly exact, where the unfitted base is far off); changing one
    graph's times moves the other graphs' predictions, never its own."""
    parts = simulate_parts(rows, SMALL, cache=None)
    times = np.array([SMALL.us(c) for c in surrogate_cycles(parts, TRUTH)])
    measured = [dataclasses.replace(r, time_us=float(t)) for r, t in zip(rows, times,
                                                                         strict=True)]
    pred = logo_calibration(parts, measured, SMALL, relative=False, measured_host=False)
    base = np.array([SMALL.us(p.cycles) for p in parts])
    assert np.sqrt(np.mean(np.log(pred / times) ** 2)) < 0.01
    assert np.sqrt(np.mean(np.log(base / times) ** 2)) > 0.1
    held = np.array([m.graph == "rand512" for m in measured])
    changed = [dataclasses.replace(m, time_us=m.time_us * (3.0 if m.config.endswith("8")
                                                            else 0.5)) if h else m
               for m, h in zip(measured, held, strict=True)]
    pred2 = logo_calibration(parts, changed, SMALL, relative=False, measured_host=False)
    assert np.array_equal(pred[held], pred2[held])
    assert not np.allclose(pred[~held], pred2[~held])
    with pytest.raises(ConfigError, match="2 graphs"):
        logo_calibration(parts[:5], measured[:5], SMALL)


def test_pick_figures_by_hand():
    """Two graphs of three configurations per algorithm: the picks, their regrets and the
    rhos worked out by hand."""
    def row(algorithm, graph, config, time_us):
        return Measured(graph, graph, algorithm, config, 0, time_us, "default")

    measured = [row("bfs", "g1", "a", 10.0), row("bfs", "g1", "b", 20.0),
                row("bfs", "g1", "c", 30.0), row("bfs", "g2", "a", 10.0),
                row("bfs", "g2", "b", 12.0), row("bfs", "g2", "c", 30.0),
                row("cc", "g1", "a", 5.0), row("cc", "g1", "b", 6.0), row("cc", "g1", "c", 7.0)]
    # bfs g1: ranked right (pick a, rho 1); g2: picks b (12/10), order b a c (rho 0.5);
    # cc g1: picks c (7/5), order reversed (rho -1)
    pred = np.array([1.0, 2.0, 3.0, 2.0, 1.0, 3.0, 3.0, 2.0, 1.0])
    figures = pick_figures(pred, measured)
    assert figures["bfs"] == PickFigures("bfs", 2, 1, pytest.approx(math.sqrt(1.2)),
                                         pytest.approx(0.75))
    assert figures["cc"] == PickFigures("cc", 1, 0, pytest.approx(1.4), pytest.approx(-1.0))


def _calibrate_argv(rows: list[dict], tmp, base_file, name: str):
    """`calibrate`'s argv for ``rows`` written as the measured file NAME.parquet beside the
    real case's, and the device file it would write."""
    path, out = tmp / f"{name}.parquet", tmp / f"{name}.toml"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return (["calibrate", str(path), "--device", str(base_file), "--out", str(out), "--cache",
             str(tmp / "cli-cache"), "-q"], out)


def test_cli_refuses_a_fit_that_leaves_most_rows_far_from_it(real_case, rows, capsys):
    """Milliseconds recorded as microseconds: every scale at its bound and every row over
    10x off, and the device had still been written, exit 0 (probe 01). One graph and
    --held-out: refused before the fit, where it had failed after it."""
    tmp, base_file, _, _, path = real_case
    table = pq.read_table(path).to_pylist()
    for r in table:
        r["time_us"] /= 1000
        r["time_us_min"] /= 1000
        r["kernel_us"] /= 1000
    argv, out = _calibrate_argv(table, tmp, base_file, "milliseconds")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert re.search(r"error: \d+ of \d+ measured rows are more than 10x from the best fit", err)
    assert "another unit than microseconds" in err and not out.exists()
    one = tmp / "one-graph.parquet"
    graph = table[0]["graph"]
    pq.write_table(pa.Table.from_pylist([r for r in pq.read_table(path).to_pylist()
                                         if r["graph"] == graph]), one)
    assert main(["calibrate", str(one), "--device", str(base_file), "--out", str(out),
                 "--cache", str(tmp / "cli-cache"), "--held-out", "-q"]) == 2
    captured = capsys.readouterr()
    assert f"the rows are of one graph ({graph})" in captured.err
    assert "RMS log error" not in captured.out and not out.exists()


def test_cli_refuses_one_row_far_from_the_fit_unless_told_to_drop_it(real_case, capsys):
    """One time in 30 recorded in milliseconds' stead had bent every scale and was written
    anyway, exit 0 with a warning (probe MS: memory at its bound, x1.09 -> x6.64): refused,
    no file; --drop-far fits the rest and says so in the file."""
    tmp, base_file, _, truth, path = real_case
    table = pq.read_table(path).to_pylist()
    slipped = [dict(r) for r in table]
    first = next(r for r in slipped if r["variant"] == "default")
    for column in ("time_us", "time_us_min", "kernel_us"):
        first[column] *= 1000
    argv, out = _calibrate_argv(slipped, tmp, base_file, "one-far")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "error: 1 measured row(s) more than 10x from the fit" in err
    assert f"{first['graph']} {first['algorithm']} {first['config']!r}" in err
    assert "--drop-far" in err and not out.exists()
    assert main([*argv, "--drop-far"]) == 0
    assert "--drop-far: fitted again without those 1 row(s), on the 29 left" in out.read_text()
    assert get_device(str(out)).host_roundtrip_us == pytest.approx(truth.host_roundtrip_us,
                                                                   rel=0.05)


def test_a_scale_the_rows_do_not_bound_from_below_is_not_determined(rows):
    """A scale whose bound binds next to nothing at the fit has a vanishing Jacobian column,
    which the pseudo-inverse had turned into an error of x/ 1.000, "exact" (probe MS:
    atomics written as fitted, 1.4 -> 1.006). Here the LSU's bound: the true times with it
    at 1.2 and at 0.05 are all but the same, so the rows cannot tell them apart; it is named
    not determined, with no error, in the table and the file. The overhead, which the times
    follow, stays determined."""
    parts = simulate_parts(rows[:10], SMALL, cache=None)

    def times(thetas):
        return np.array([SMALL.us(c) for c in surrogate_cycles(parts, thetas)])

    true = times(TRUTH)
    assert np.abs(times(dict(TRUTH, lsu=0.05)) / true - 1).max() < 1e-3
    assert np.abs(times(dict(TRUTH, overhead=0.05)) / true - 1).max() > 0.1
    measured = [dataclasses.replace(r, time_us=t) for r, t in zip(rows[:10], true, strict=True)]
    cal = fit(parts, measured, SMALL)
    assert cal.upper_only == ("lsu",) and cal.log_se["lsu"] == math.inf
    assert math.isfinite(cal.log_se["overhead"])
    row = next(t for t in fit_table(cal).splitlines() if t.startswith("lsu"))
    assert "not determined" in row
    line = next(t for t in device_toml(cal, source="x").splitlines()
                if t.startswith("#   lsu"))
    assert "not determined" in line and "x/" not in line


def test_cli_held_out_check_compares_the_fit_with_the_base(real_case, capsys):
    """`calibrate --held-out`: per algorithm the fit's and the unfitted base's held-out
    picks, in the output and in the file's comments."""
    tmp, base_file, _, _, path = real_case
    out = tmp / "held-out.toml"
    assert main(["calibrate", str(path), "--device", str(base_file), "--out", str(out),
                 "--cache", str(tmp / "cli-cache"), "--held-out", "-q"]) == 0
    text = capsys.readouterr().out
    assert "held out (each graph predicted by the fit made without it" in text
    for algorithm in ("bfs", "sssp"):
        line = next(x for x in text.splitlines() if x.startswith(f"  {algorithm} "))
        assert re.search(r"fitted +\d/3 .* h100-nol2 +\d/3 ", line), line
    assert "# held out (each graph" in out.read_text()


def test_a_sourceless_algorithms_recorded_source_is_dropped(tmp_path):
    """The harness records source -1 for PageRank and CC, which take none: their rows load
    without a source (and simulate), where a BFS row keeps its own."""
    spec = GRAPHS["rand512"]
    rows = [Measured("rand512", spec, "cc", "mapping=thread", -1, 1.0, "default"),
            Measured("rand512", spec, "pagerank", "mapping=vwarp,w=8", -1, 1.0, "default"),
            Measured("rand512", spec, "bfs", "mapping=thread", 7, 1.0, "default")]
    path = tmp_path / "measured.parquet"
    write_measured(path, rows, [10.0, 20.0, 30.0], "h100")
    measured = load_measured(path, device="h100")
    assert {m.algorithm: m.source for m in measured} == {"cc": None, "pagerank": None,
                                                         "bfs": 7}
    parts = simulate_parts([m for m in measured if m.algorithm != "bfs"], "h100-datasheet",
                           cache=None)
    assert all(p.cycles > 0 for p in parts)


def test_the_held_out_check_names_only_the_algorithms_a_fit_makes_worse():
    """Fewer picks within 5%, or a geomean regret more than 1% higher: worse; a 0.1% higher
    geomean with as many picks (BFS on the H100's file) is not."""
    base = {"bfs": PickFigures("bfs", 17, 16, 1.007, 0.96),
            "cc": PickFigures("cc", 17, 10, 1.128, 0.91),
            "pagerank": PickFigures("pagerank", 17, 8, 1.100, 0.88)}
    fitted = {"bfs": PickFigures("bfs", 17, 16, 1.008, 0.95),
              "cc": PickFigures("cc", 17, 9, 1.100, 0.92),
              "pagerank": PickFigures("pagerank", 17, 9, 1.120, 0.90)}
    lines = held_out_lines(fitted, base, "h100-datasheet")
    assert len(lines) == 5
    assert lines[-1].startswith("  the fit picks worse than h100-datasheet")
    assert "for cc, pagerank:" in lines[-1]
    fitted["cc"] = PickFigures("cc", 17, 10, 1.128, 0.91)
    fitted["pagerank"] = PickFigures("pagerank", 17, 8, 1.110, 0.88)
    assert len(held_out_lines(fitted, base, "h100-datasheet")) == 4  # nothing worse


def test_the_simulator_digest_covers_its_subpackages(tmp_path):
    """Cached simulations are keyed by the simulator's sources: an edit to a mapping (a
    subpackage) must make them stale as an edit to a top-level module does; files that are
    not Python source (device presets, keyed by their fields) leave the digest alone."""
    (tmp_path / "mappings").mkdir()
    (tmp_path / "engine.py").write_text("STEPS = 1\n")
    (tmp_path / "mappings" / "_vwarp.py").write_text("LANES = 8\n")
    (tmp_path / "preset.toml").write_text("x = 1\n")
    first = simulator_digest(tmp_path)
    (tmp_path / "mappings" / "_vwarp.py").write_text("LANES = 4\n")
    second = simulator_digest(tmp_path)
    assert second != first
    (tmp_path / "engine.py").write_text("STEPS = 2\n")
    assert simulator_digest(tmp_path) not in (first, second)
    (tmp_path / "engine.py").write_text("STEPS = 1\n")
    (tmp_path / "mappings" / "_vwarp.py").write_text("LANES = 8\n")
    (tmp_path / "preset.toml").write_text("x = 2\n")
    assert simulator_digest(tmp_path) == first
    # a module moved into a subpackage is another source
    (tmp_path / "mappings" / "engine.py").write_bytes((tmp_path / "engine.py").read_bytes())
    (tmp_path / "engine.py").unlink()
    assert simulator_digest(tmp_path) != first
    assert any(SIMULATOR_DIR.glob("mappings/*.py"))  # the real simulator has a subpackage


def test_a_long_device_names_calibration_is_named_within_the_limit():
    # a device of 54-64 characters had been fitted, then refused its `-calibrated` name
    from simulator.device import MAX_DEVICE_NAME
    from tuner.calibration.calibrate import calibrated_name

    assert calibrated_name("h100") == "h100-calibrated"
    long = calibrated_name("g" * 60)
    assert len(long) == MAX_DEVICE_NAME and long.endswith("-calibrated")


def test_modules_no_figure_follows_from_leave_the_simulator_digest_alone(tmp_path):
    # an edited message in the YAML reader had made every study "another model" (review CR10)
    from tuner.env import NOT_THE_MODEL

    (tmp_path / "engine.py").write_text("STEPS = 1\n")
    (tmp_path / "yamldoc.py").write_text("MESSAGE = 'a'\n")
    first = simulator_digest(tmp_path)
    (tmp_path / "yamldoc.py").write_text("MESSAGE = 'b'\n")
    assert simulator_digest(tmp_path) == first
    assert all((SIMULATOR_DIR / name).exists() for name in NOT_THE_MODEL)  # names kept true
