"""The results store: declared schema, atomic files, partitions, version check, record checks."""

from __future__ import annotations

import json
import math
from datetime import UTC
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from simulator.errors import ConfigError
from tuner.results.records import TrialRecord
from tuner.results.schema import METRIC_NAMES
from tuner.results.schema import PARAM_TYPES
from tuner.results.schema import SCHEMA_VERSION
from tuner.results.schema import TRIAL_COLUMNS
from tuner.results.schema import TRIAL_PARTITIONS
from tuner.results.schema import markdown
from tuner.results.schema import param_column
from tuner.results.store import MemoryBackend
from tuner.results.store import ParquetDirBackend
from tuner.results.store import ResultStore
from tuner.results.store import read_trials


def record(trial=0, state="complete", **kw):
    base = dict(
        study_key="g.bfs.h100.vwarp.abc", role="trial", state=state, graph_id="g-1",
        graph_spec="rmat:scale=8", algorithm="bfs", device="h100", space="vwarp",
        space_digest="d", sampler="tpe", objective="time_us",
        params={"mapping": "vwarp", "w": 8, "chunk": 4, "defer_threshold": None}, seed=0,
        trial=trial, sources=[0, 5], n_sources=2, wall_s=0.01, worker="host",
    )
    if state == "complete":
        base.update(values=[10.0 + trial], values_std=[0.5],
                    metrics={"time_us": 10.0 + trial, "launches": 3, "meps": 1.5},
                    time_us_std=0.5, time_us_min=9.5, time_us_max=10.5)
    elif state == "failed":
        base.update(error="ValueError: boom")
    base.update(kw)
    return TrialRecord(**base)


@pytest.fixture(params=["memory", "parquet"])
def store(request, tmp_path):
    backend = MemoryBackend() if request.param == "memory" else ParquetDirBackend(tmp_path)
    return ResultStore(backend, flush_every_s=60)


def test_backend_contract_round_trip(store):
    store.add_trial(record(0))
    store.add_trial(record(1, state="failed"))
    store.add_trial(record(2, algorithm="sssp"))
    assert store.stored_trials()["g.bfs.h100.vwarp.abc"] == {("trial", 0), ("trial", 1),
                                                              ("trial", 2)}
    store.flush()
    table = store.backend.scan("trials")
    rows = sorted(table.to_pylist(), key=lambda r: r["trial"])
    assert [r["state"] for r in rows] == ["complete", "failed", "complete"]
    assert [r["algorithm"] for r in rows] == ["bfs", "bfs", "sssp"]
    assert rows[0]["param_w"] == 8 and rows[0]["param_defer_threshold"] is None
    assert rows[0]["time_us"] == 10.0 and rows[0]["launches"] == 3.0
    assert rows[1]["time_us"] is None and rows[1]["error"] == "ValueError: boom"
    assert rows[0]["values"] == [10.0] and rows[0]["sources"] == [0, 5]
    assert rows[0]["schema_version"] == SCHEMA_VERSION
    assert store.stored_trials()["g.bfs.h100.vwarp.abc"] == {("trial", 0), ("trial", 1),
                                                              ("trial", 2)}


def test_parquet_files_have_the_declared_schema(tmp_path):
    store = ResultStore.open(tmp_path, flush_every_s=60)
    store.add_trial(record(0))
    store.add_trial(record(1, params={"mapping": "thread", "future_knob": "x"}))
    store.close()
    files = [Path(f) for f in ParquetDirBackend(tmp_path).files("trials")]
    assert len(files) == 1
    assert files[0].parent.relative_to(tmp_path).as_posix() == "trials/algorithm=bfs/device=h100"
    schema = pq.read_schema(files[0])
    assert schema.metadata[b"warpsweep.schema_version"] == str(SCHEMA_VERSION).encode()
    for col in TRIAL_COLUMNS:
        assert schema.field(col.name).type == col.type, col.name
    for knob, typ in PARAM_TYPES.items():
        assert schema.field(param_column(knob)).type == typ
    for metric in METRIC_NAMES:
        assert schema.field(metric).type == pa.float64()
    assert schema.field("param_future_knob").type == pa.string()  # undeclared knob: own column
    table = read_trials(tmp_path)
    for col in TRIAL_PARTITIONS:
        assert table.schema.field(col.name).type == col.type
    assert table.num_rows == 2
    assert not list(tmp_path.rglob("*.tmp"))


def test_periodic_flush_writes_new_files_atomically(tmp_path):
    store = ResultStore.open(tmp_path, flush_every_s=0.0)
    for i in range(3):
        store.add_trial(record(i))
        store.maybe_flush()
    assert len(ParquetDirBackend(tmp_path).files("trials")) == 3
    assert read_trials(tmp_path).num_rows == 3
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".")]


def test_failed_write_keeps_the_buffer(tmp_path, monkeypatch):
    store = ResultStore.open(tmp_path, flush_every_s=60)
    store.add_trial(record(0))

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", broken)
    with pytest.raises(OSError):
        store.flush()
    assert not list(tmp_path.rglob("*.tmp"))  # no torn or temp file left behind
    monkeypatch.undo()
    store.flush()
    assert read_trials(tmp_path).num_rows == 1


def test_amend_replaces_a_buffered_record(store):
    r = record(0)
    store.add_trial(r)
    store.amend_trial(r, record(0, state="failed", error="tell failed: x"))
    store.flush()
    (row,) = store.backend.scan("trials").to_pylist()
    assert row["state"] == "failed" and row["error"] == "tell failed: x"


def test_newer_schema_is_refused(tmp_path):
    ResultStore.open(tmp_path)
    manifest = tmp_path / "_warpsweep.json"
    assert json.loads(manifest.read_text())["schema_version"] == SCHEMA_VERSION
    manifest.write_text(json.dumps({"schema_version": SCHEMA_VERSION + 1,
                                    "warpsweep_version": "9.0"}))
    with pytest.raises(ConfigError, match=rf"schema version {SCHEMA_VERSION + 1} \(by "
                                          r"warpsweep 9.0\).*upgrade warpsweep"):
        ResultStore.open(tmp_path)
    with pytest.raises(ConfigError, match="schema version"):
        read_trials(tmp_path)


@pytest.mark.parametrize("text", ["{}", "[]", "null", "not json", '{"schema_version": true}',
                                  '{"schema_version": "2"}', '{"schema_version": 2.0}'])
def test_a_damaged_manifest_is_named_with_what_it_should_hold(tmp_path, text):
    """A manifest that holds no integer schema version (``true`` had read as version 1) is
    refused by writers and readers alike, naming the file and what it should read."""
    ResultStore.open(tmp_path)
    (tmp_path / "_warpsweep.json").write_text(text)
    for opening in (ResultStore.open, read_trials):
        with pytest.raises(ConfigError, match=r"_warpsweep.json: unreadable results manifest "
                                              rf'.*"schema_version": {SCHEMA_VERSION}'):
            opening(tmp_path)


def test_results_path_errors(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ConfigError, match="is a file"):
        ResultStore.open(f)
    with pytest.raises(ConfigError, match="does not exist"):
        read_trials(tmp_path / "nothing")
    with pytest.raises(ConfigError, match="not a warpsweep results directory"):
        read_trials(tmp_path)  # there, but no manifest


def test_graph_rows_written_once(tmp_path):
    store = ResultStore.open(tmp_path, flush_every_s=60)
    row = {"graph_id": "g-1", "graph_spec": "s", "name": "g", "kind": "rmat", "n": 4, "m": 6,
           "directed": False, "weighted": False, "timestamp": datetime.now(UTC),
           "warpsweep_version": "x", "schema_version": SCHEMA_VERSION, "max_degree": 3}
    store.add_graph(row)
    store.add_graph(dict(row))
    store.close()
    again = ResultStore.open(tmp_path, flush_every_s=60)
    again.add_graph(dict(row))
    again.close()
    table = ParquetDirBackend(tmp_path).scan("graphs")
    assert table.num_rows == 1 and table.column("kind").to_pylist() == ["rmat"]
    assert table.column("max_degree").to_pylist() == [3]


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"state": "complete", "error": None, "metrics": None, "values": [1.0]},
         "needs metrics"),
        ({"state": "complete", "error": None, "values": [math.nan],
          "metrics": {"time_us": 1.0}}, "finite values"),
        ({"state": "complete", "values": [1.0], "metrics": {"time_us": 1.0}}, "has no error"),
        ({"state": "failed", "error": None}, "needs its error text"),
        ({"state": "failed", "error": "x", "metrics": {"time_us": 1.0}}, "no metrics"),
        ({"state": "duplicate"}, "duplicate_of"),
        ({"state": "done"}, "`state in"),
        ({"role": "reference", "label": None}, "needs a label"),
        ({"trial": None}, "needs its trial number"),
    ],
)
def test_record_invariants(kw, message):
    base = {"state": "failed", "error": "e"}
    base.update(kw)
    with pytest.raises(ValueError, match=message):
        record(**base)


def test_record_json_round_trip():
    r = record(3)
    assert TrialRecord.from_json(json.loads(json.dumps(r.to_json()))) == r


def test_schema_markdown_lists_every_declared_column():
    text = markdown()
    for col in TRIAL_COLUMNS + TRIAL_PARTITIONS:
        assert f"`{col.name}`" in text


def test_the_docs_schema_section_is_what_the_declaration_generates():
    """docs/results-store.md says its schema is generated; two columns' text had been edited
    there alone (probe DOCS)."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "results-store.md").read_text()
    assert markdown().strip() in doc


# The knobs' column types as schema version 2 wrote them before they were derived from
# Strategy's annotations, in their column order: a results directory written then must open,
# and resume, with the same types.
PARAM_TYPES_WRITTEN = {
    "mapping": pa.string(),
    "w": pa.int64(),
    "chunk": pa.int64(),
    "distribution": pa.string(),
    "defer_threshold": pa.int64(),
    "block_size": pa.int64(),
    "driven": pa.string(),
    "push": pa.string(),
    "dedup": pa.bool_(),
    "donate_threshold": pa.int64(),
    "variable_grid": pa.bool_(),
    "switch_to_topology": pa.float64(),
    "switch_to_data": pa.float64(),
    "switch_on": pa.string(),
    "relax": pa.string(),
    "partition": pa.int64(),
    "unroll": pa.int64(),
    "adaptive_min_w": pa.int64(),
    "adaptive_max_w": pa.int64(),
    "adaptive_stat": pa.string(),
}


# Knobs Strategy gained since: their columns come after the written ones, in field order.
PARAM_TYPES_GAINED = {"changed_flag": pa.string(), "precheck": pa.bool_()}


def test_param_types_derived_from_strategy_are_the_ones_written():
    assert SCHEMA_VERSION == 2
    assert list(PARAM_TYPES.items()) == [*PARAM_TYPES_WRITTEN.items(),
                                         *PARAM_TYPES_GAINED.items()]


def test_knob_types_follow_the_annotations():
    from tuner.results.schema import knob_arrow_type

    assert knob_arrow_type(int | None) == pa.int64()
    assert knob_arrow_type(str | None) == pa.string()
    assert knob_arrow_type(bool | None) == pa.bool_()
    assert knob_arrow_type(float | None) == pa.float64()
    assert knob_arrow_type(int) == pa.int64()
    with pytest.raises(TypeError):
        knob_arrow_type(int | str | None)


def test_a_column_typed_from_its_values_reads_across_files_as_numbers(tmp_path):
    """An undeclared knob's column is typed from each batch's values: int64 where a batch
    held whole numbers only, double elsewhere. Those files read together (as double), and
    only a column of another kind (text beside numbers) names a file."""
    from tuner.results.schema import type_conflict

    store = ResultStore(ParquetDirBackend(tmp_path), flush_every_s=60)
    for trial, t1 in ((0, 1), (1, 1.5)):
        store.add_trial(record(trial, params={"mapping": "vwarp", "w": 8, "policy_t1": t1}))
        store.flush()
    files = sorted((tmp_path / "trials").rglob("part-*.parquet"))
    types = {str(pq.read_schema(f).field("param_policy_t1").type) for f in files}
    assert types == {"int64", "double"}
    rows = ParquetDirBackend(tmp_path).scan("trials").to_pylist()
    assert sorted(r["param_policy_t1"] for r in rows) == [1.0, 1.5]
    schemas = [pq.read_schema(f) for f in files]
    assert type_conflict(schemas) is None
    text = pa.schema([("study_key", pa.string()), ("param_policy_t1", pa.string())])
    index, why = type_conflict([*schemas, text])
    assert index == 2 and "param_policy_t1 is string, number in the other files" in why

