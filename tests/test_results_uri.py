"""Results in object storage: a tune writes its Parquet rows, manifest and journals to an S3
bucket (a real S3 protocol server, moto's, on loopback), and a second machine with no local
journal resumes the study from the bucket without repeating a trial."""

from __future__ import annotations

import pytest

from tuner import api
from tuner.cli import main
from tuner.results.location import Location
from tuner.results.store import read_graphs
from tuner.results.store import read_trials


@pytest.mark.parametrize(("results", "message"), [
    ("foo://bar/x", "not a location pyarrow can open"),
    ("s3://", "give a bucket or directory after the scheme"),
    ("s3://nobucket/x?endpoint_override=http://127.0.0.1:9&scheme=http",
     "cannot reach it"),
])
def test_a_bad_results_location_is_a_clear_error(results, message, capsys, monkeypatch):
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    assert main(["query", "SELECT 1", "--results", results]) == 2
    assert message in capsys.readouterr().err




def test_tune_into_a_bucket_and_resume_elsewhere(bucket_uri, tmp_path, monkeypatch):
    monkeypatch.setenv("WARPSWEEP_JOURNAL_DIR", str(tmp_path / "machine-a"))
    first = api.tune("rmat:scale=8,seed=1", trials=6, sources=1, results=bucket_uri)
    loc = Location.of(bucket_uri)
    assert not loc.local and not (tmp_path / "results").exists()
    trials = read_trials(bucket_uri).to_pylist()
    assert sum(r["role"] == "trial" for r in trials) >= 6
    assert all(r["graph_spec"] for r in trials) and read_graphs(bucket_uri).num_rows == 1
    key = first.studies[0].key
    assert loc.files("studies", ".journal") == [loc.path("studies", f"{key}.journal")]
    # another machine: no local journal; the study resumes from the bucket's copy
    monkeypatch.setenv("WARPSWEEP_JOURNAL_DIR", str(tmp_path / "machine-b"))
    again = api.tune("rmat:scale=8,seed=1", trials=6, sources=1, results=bucket_uri)
    assert again.studies[0].key == key and again.evaluations == 0
    assert again.studies[0].done == 6
    assert read_trials(bucket_uri).num_rows == len(trials)  # no row written twice
    more = api.tune("rmat:scale=8,seed=1", trials=8, sources=1, results=bucket_uri)
    assert more.studies[0].key == key and more.studies[0].done == 8 and more.evaluations <= 2
