"""The one-line errors of policy files (a schedule's policy_tN, a candidate written as a string,
malformed trees), of `measure` on a policy, and of calibrate's GPU matching (the preset that
fits another GPU's rows, rows that name no GPU)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from simulator import simulate
from simulator.errors import ConfigError
from simulator.policy import FEATURES
from simulator.policy import Policy
from tests.hand_counted import star_graph
from tuner.measure.plan import UnsupportedConfig
from tuner.measure.plan import plan_for

SHIPPED = Path(__file__).resolve().parents[1] / "policies" / "bfs-h100.json"
THREAD = {"mapping": "thread", "block_size": 256, "driven": "topology"}
W32 = {"mapping": "vwarp", "w": 32, "block_size": 256, "driven": "topology"}


def policy_doc(**changes) -> dict:
    """A valid two-candidate tree policy's content, with ``changes``."""
    doc = {"format": "warpsweep-policy", "schema_version": 1, "name": "t",
           "features": list(FEATURES), "candidates": [THREAD, W32],
           "tree": {"feature": "edge_frac", "threshold": 0.27, "le": {"choose": 0},
                    "gt": {"choose": 1}},
           "algorithm": "bfs"}
    doc.update(changes)
    return {k: v for k, v in doc.items() if v is not None}


def write(tmp_path, doc: dict, name: str = "p.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


# -- 1. policy_tN on a schedule policy -------------------------------------------------------
def test_policy_t_on_a_schedule_says_a_schedule_has_no_thresholds(tmp_path):
    path = write(tmp_path, policy_doc(tree=None, schedule=[0, 1, 1, 0]))
    simulate(star_graph(), "bfs", f"policy={path}", "h100", source=0)  # valid as it is
    with pytest.raises(ConfigError) as info:
        simulate(star_graph(), "bfs", f"policy={path},policy_t1=2", "h100", source=0)
    message = str(info.value)
    assert "policy_t1" in message and str(path) in message
    assert "schedule" in message and "no thresholds" in message
    assert "either a tree or a schedule" not in message and "\n" not in message


def test_tune_searching_policy_t1_over_a_schedule_stops_naming_it(tmp_path, capsys):
    from tuner.cli import main

    path = write(tmp_path, policy_doc(tree=None, schedule=[0, 1]))
    space = tmp_path / "sched.yaml"
    space.write_text(f"name: sched\nfixed:\n  policy: {path}\nparams:\n"
                     "  policy_t1: {float: [0.25, 4.0], log: true}\n")
    code = main(["tune", "--graph", "rmat:scale=6", "--algo", "bfs", "--space", str(space),
                 "--trials", "2", "--workers", "0", "--results", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and "policy_t1" in err and "no thresholds to scale" in err, err
    assert "either a tree or a schedule" not in err


# -- 2. measure names the policy -------------------------------------------------------------
@pytest.mark.parametrize("config", ["policy=policies/bfs-h100.json",
                                    "mapping=thread,policy=policies/bfs-h100.json"])
def test_measure_of_a_policy_names_the_policy_and_its_candidates(config):
    with pytest.raises(UnsupportedConfig) as info:
        plan_for("bfs", config)
    message = str(info.value)
    assert "policy=policies/bfs-h100.json" in message and "candidates" in message
    assert "one at a time" in message and "vwarp W" not in message and "\n" not in message


# -- 3. a candidate written as a string ------------------------------------------------------
def test_a_candidate_written_as_a_string_is_named_by_index():
    doc = policy_doc(candidates=[THREAD, "mapping=vwarp,w=32"])
    with pytest.raises(ConfigError) as info:
        Policy.from_json(doc)
    message = str(info.value)
    assert "candidate 1" in message and "object of knobs" in message
    assert "unknown knob" not in message and "damaged" not in message


def test_a_candidates_unknown_knob_names_the_candidate():
    with pytest.raises(ConfigError, match=r"^policy candidate 1: unknown knob\(s\) \['bogus'\]"):
        Policy.from_json(policy_doc(candidates=[THREAD, {**W32, "bogus": 1}]))


# -- 4. malformed trees and files ------------------------------------------------------------
@pytest.mark.parametrize(("tree", "words"), [
    # a leaf that also splits: the split had been dropped
    ({"feature": "edge_frac", "threshold": 0.27,
      "le": {"choose": 0, "feature": "edge_frac", "threshold": 0.1, "le": {"choose": 1},
             "gt": {"choose": 0}},
      "gt": {"choose": 1}}, "tree.le: a leaf (`choose`) with split key(s) feature"),
    # a key no node has
    ({"feature": "edge_frac", "threshold": 0.27, "le": {"choose": 0}, "gt": {"choose": 1},
      "extra": 1}, "tree: unknown key(s) 'extra'"),
    ({"feature": "edge_frac", "threshold": 0.27, "le": {"choose": 0},
      "gt": {"choose": 1, "weight": 2}}, "tree.gt: unknown key(s) 'weight'"),
])
def test_a_malformed_tree_node_is_refused_by_name(tree, words):
    with pytest.raises(ConfigError) as info:
        Policy.from_json(policy_doc(tree=tree))
    assert words in str(info.value)


def test_features_are_checked_and_other_top_level_keys_kept_as_metadata(tmp_path):
    """`features` (a key the format defines) lists known names; top-level keys the format does
    not define are metadata (kept and written back); a threshold that never matches is legal."""
    with pytest.raises(ConfigError, match=r"`features` lists 'bogus': not a feature"):
        Policy.from_json(policy_doc(features=["bogus"]))
    with pytest.raises(ConfigError, match=r"`features` .* is not a list of feature names"):
        Policy.from_json(policy_doc(features="edge_frac"))
    shipped = json.loads(SHIPPED.read_text())
    policy = Policy.from_json(shipped)
    assert policy.meta["trained_on"] == shipped["trained_on"]
    assert Policy.from_json(policy.to_json()).meta == policy.meta
    never = policy_doc(tree={"feature": "edge_frac", "threshold": 1e9, "le": {"choose": 0},
                             "gt": {"choose": 1}}, extra_note="kept")
    assert Policy.from_json(never).meta["extra_note"] == "kept"
    path = write(tmp_path, never)
    assert simulate(star_graph(), "bfs", f"policy={path}", "h100", source=0).time_us > 0


@pytest.mark.parametrize("version", ["1", True, 1.0])
def test_a_schema_version_that_is_not_the_integer_is_refused_by_its_repr(version):
    """"1" had been refused as "schema version 1; this warpsweep reads 1", and true
    (== 1) accepted."""
    with pytest.raises(ConfigError) as info:
        Policy.from_json(policy_doc(schema_version=version))
    assert f"policy schema version {version!r}; this warpsweep reads 1" in str(info.value)


@pytest.mark.parametrize(("schedule", "words"), [
    ([0, 5], "policy schedule entry 5 is not one of 0..1"),
    ([0, -1], "policy schedule entry -1 is not one of 0..1"),
    ([0, 1.5], "policy schedule entry 1.5 is not one of 0..1"),
    ([0, "1"], "policy schedule entry '1' is not one of 0..1"),
    (3, "policy `schedule` is 3: a list of candidate indices"),
])
def test_a_schedule_entry_that_is_no_candidate_is_named(schedule, words):
    """[0, 5] had been refused as "a policy schedule lists candidate indices, at least one",
    which it does."""
    with pytest.raises(ConfigError) as info:
        Policy.from_json(policy_doc(tree=None, schedule=schedule))
    assert words in str(info.value)


SPLIT = {"feature": "edge_frac", "threshold": 0.27, "le": {"choose": 0}, "gt": {"choose": 1}}


@pytest.mark.parametrize(("tree", "words"), [
    ({**SPLIT, "gt": None}, "policy tree.gt is None, not an object"),
    ({k: v for k, v in SPLIT.items() if k != "gt"},
     "policy tree (the split edge_frac <= 0.27) has no `gt`"),
    ({k: v for k, v in SPLIT.items() if k != "le"},
     "policy tree (the split edge_frac <= 0.27) has no `le`"),
    ({**SPLIT, "gt": {"feature": "iteration", "threshold": 2, "gt": {"choose": 1}}},
     "policy tree.gt (the split iteration <= 2) has no `le`"),
    ({**SPLIT, "le": 5}, "policy tree.le is 5, not an object"),
])
def test_a_split_missing_a_child_is_named_with_the_key(tree, words):
    """A missing `gt` had been "policy tree node None is not an object", with no place."""
    with pytest.raises(ConfigError) as info:
        Policy.from_json(policy_doc(tree=tree))
    assert words in str(info.value) and "node None" not in str(info.value)


def test_a_split_missing_a_child_is_one_line_from_the_cli(tmp_path, capsys):
    from tuner.cli import main

    path = write(tmp_path, policy_doc(tree={k: v for k, v in SPLIT.items() if k != "gt"}))
    code = main(["simulate", "--graph", "rmat:scale=6", "--algo", "bfs", "--config",
                 f"policy={path}"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "has no `gt`" in err, err


@pytest.mark.parametrize(("changes", "words"), [
    ({"features": ["frontier_frac"]}, "`features` leaves out edge_frac, which its tree splits"),
    ({"features": ["edge_frac"],
      "tree": {**SPLIT, "gt": {**SPLIT, "feature": "last_simd"}}},
     "`features` leaves out last_simd, which its tree splits"),
    ({"features": ["edge_frac"], "tree": None, "schedule": [0, 1]},
     "`features` leaves out iteration, which its schedule reads"),
])
def test_features_leaving_out_one_the_policy_reads_are_refused(changes, words):
    """`features` ["frontier_frac"] over a tree on edge_frac had been accepted, and run."""
    with pytest.raises(ConfigError) as info:
        Policy.from_json(policy_doc(**changes))
    assert words in str(info.value)
    Policy.from_json(policy_doc(**{**changes, "features": None}))  # unlisted: any feature


# -- 5. the preset that fits another GPU's rows ----------------------------------------------
def test_the_preset_of_a_gpu_is_found_by_its_name():
    from tuner.calibration.measurements import preset_of_gpu

    assert preset_of_gpu("NVIDIA A100-SXM4-80GB") == "a100"
    assert preset_of_gpu("NVIDIA H100 80GB HBM3") == "h100"
    assert preset_of_gpu("NVIDIA H200") == "h200"
    assert preset_of_gpu("Weird GPU 9000") is None and preset_of_gpu(None) is None


def test_left_out_rows_name_their_gpus_preset_or_say_there_is_none():
    from tuner.calibration.measurements import _left_out_line

    a100 = _left_out_line([{"gpu_name": "NVIDIA A100-SXM4-80GB"}] * 3, "GPU", "h100")
    assert a100.startswith("3 measured row(s) of GPU NVIDIA A100-SXM4-80GB left out: --device "
                           "h100 fits its own rows (their GPU's preset")
    assert "--device a100" in a100 and "h200" not in a100
    weird = _left_out_line([{"gpu_name": "Weird GPU 9000"}], "GPU", "h100")
    assert "no preset is of" in weird and "device file" in weird and "h200" not in weird


def write_measured(path: Path, gpu: str) -> Path:
    rows = [{"device": "h100", "graph": "star", "graph_spec": "rmat:scale=6",
             "algorithm": "bfs", "config": config, "variant": "default", "source": 0,
             "time_us": us, "correct": True, "gpu_name": gpu}
            for config, us in (("mapping=thread", 10.0), ("mapping=vwarp,w=8", 8.0))]
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


@pytest.mark.parametrize(("gpu", "words"), [
    ("NVIDIA A100-SXM4-80GB", "pass --device a100 (its preset)"),
    ("Weird GPU 9000", "which no preset is of, pass a device file of it with --device"),
])
def test_a_files_rows_of_another_gpu_name_its_preset(tmp_path, gpu, words):
    from tuner.calibration.measurements import load_measured

    path = write_measured(tmp_path / "m.parquet", gpu)
    with pytest.raises(ConfigError) as info:
        load_measured(path, device="h100")
    assert words in str(info.value) and "h200" not in str(info.value)


# -- 5 and 6 on a results directory's rows (its query stood in for) --------------------------
class FakeConnection:
    def __init__(self, rows):
        self.rows = rows

    def execute(self, sql):
        return self

    def fetchall(self):
        return self.rows


def results_rows(gpus) -> list[tuple]:
    """A results directory's measured rows (as load_measured_results selects them), one per
    configuration, each of the GPU given."""
    configs = ("mapping=thread", "mapping=vwarp,w=8", "mapping=vwarp,w=32")
    return [("study-1", "bfs", "g1", "rmat:scale=6", config, "default", True, 10.0 + i, None,
             gpu, "", 0, "rmat6", 100)
            for i, (config, gpu) in enumerate(zip(configs, gpus, strict=True))]


def test_results_rows_of_another_gpu_name_its_preset(monkeypatch):
    from tuner.calibration import measurements
    from tuner.results import query

    monkeypatch.setattr(query, "connect", lambda results: FakeConnection(results_rows(
        ["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3"])))
    left_out: list[str] = []
    assert len(measurements.load_measured_results("R", device="h100", left_out=left_out)) == 2
    assert len(left_out) == 1 and "--device a100" in left_out[0], left_out
    monkeypatch.setattr(query, "connect", lambda results: FakeConnection(results_rows(
        ["Weird GPU 9000"] * 3)))
    with pytest.raises(ConfigError) as info:
        measurements.load_measured_results("R", device="h100")
    assert "Weird GPU 9000, which no preset is of" in str(info.value)
    assert "e.g. --device h200" not in str(info.value)


def test_rows_that_name_no_gpu_are_fitted_as_the_devices_and_said_to_be(monkeypatch):
    from tuner.calibration import measurements
    from tuner.results import query

    monkeypatch.setattr(query, "connect", lambda results: FakeConnection(results_rows(
        [None] * 3)))
    left_out: list[str] = []
    assert len(measurements.load_measured_results("R", device="h100", left_out=left_out)) == 3
    assert left_out == ["3 measured row(s) name no GPU: fitted as h100's (nothing says another "
                        "GPU measured them)"]
    # a device file takes any GPU's rows: nothing to say
    left_out.clear()
    measurements.load_measured_results("R", device="my-gpu.toml", left_out=left_out)
    assert left_out == []
