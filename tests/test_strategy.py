"""The strategy config rejects every impossible setting with a message naming it."""

import pytest

from simulator import ConfigError
from simulator import Strategy


@pytest.mark.parametrize(
    "params, message",
    [
        ({"mapping": "vwarp", "w": 3}, r"w in \(1, 2, 4, 8, 16, 32\)"),
        ({"mapping": "vwarp", "w": 64}, "w in"),
        ({"mapping": "vwarp", "w": 8, "chunk": 0}, "chunk >= 1"),
        ({"mapping": "vwarp", "distribution": "guided"}, "distribution in"),
        ({"mapping": "thread", "w": 8}, "does not apply to mapping='thread'"),
        ({"mapping": "thread", "chunk": 4}, "does not apply"),
        ({"defer_threshold": -1}, "defer_threshold"),
        ({"block_size": 100}, "multiple of 32"),
        ({"mapping": "warp"}, "mapping in"),
        ({"chunk_size": 4}, "unknown knob"),
        ({"driven": "data"}, "not modelled"),
    ],
)
def test_invalid_configurations(params, message):
    with pytest.raises(ConfigError, match=message):
        Strategy.from_params(params)


def test_defaults_and_round_trip():
    s = Strategy.from_params({"mapping": "vwarp"})
    assert (s.w, s.chunk, s.distribution) == (32, 1, "static")
    assert Strategy.from_params(s.to_params()) == s
    assert Strategy.parse("mapping=vwarp,w=8,chunk=16,defer_threshold=none") == Strategy(
        mapping="vwarp", w=8, chunk=16
    )
    assert Strategy().to_params() == {"mapping": "thread", "block_size": 256}
