"""One notion of "the same configuration" for the tuner, queries, report and selector."""

from __future__ import annotations

import math

from tuner.results.configs import canonical_params
from tuner.results.configs import config_key
from tuner.results.configs import config_text


def test_null_defaults_and_written_defaults_are_one_configuration():
    sparse = {"mapping": "vwarp", "w": 8, "chunk": None, "defer_threshold": math.nan}
    full = {"mapping": "vwarp", "w": 8, "chunk": 1, "distribution": "static",
            "block_size": 256, "driven": "topology", "unroll": 1}
    assert canonical_params(sparse) == full == canonical_params(full)
    assert config_key(sparse) == config_key(full)
    assert config_key({"mapping": "vwarp", "w": 16}) != config_key(full)


def test_a_refused_configuration_is_kept_without_its_nulls():
    assert canonical_params({"mapping": "vwarp", "w": 3, "chunk": None}) == {
        "mapping": "vwarp", "w": 3}


def test_text_shows_only_knobs_away_from_their_defaults():
    assert config_text(canonical_params({"mapping": "vwarp", "w": 32})) == "mapping=vwarp w=32"
    text = config_text(canonical_params({"mapping": "vwarp", "w": 8, "chunk": 64,
                                         "driven": "data", "push": "chunked"}))
    assert text == "mapping=vwarp w=8 chunk=64 driven=data push=chunked"
    assert config_text({"mapping": "thread"}) == "mapping=thread"


def test_a_configuration_reads_the_same_whatever_order_its_knobs_came_in():
    # the report read a row's knobs sorted by name, `best` as stored: "chunk=4
    # defer_threshold=1024 mapping=vwarp w=32" beside "mapping=vwarp w=32 chunk=4 ..." (probe REP)
    stored = {"mapping": "vwarp", "w": 32, "chunk": 4, "defer_threshold": 1024}
    assert config_text(dict(sorted(stored.items()))) == config_text(stored) == (
        "mapping=vwarp w=32 chunk=4 defer_threshold=1024")
