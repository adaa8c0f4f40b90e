"""The strategy config rejects every impossible setting with a message naming it."""

import numpy as np
import pytest

from simulator import ConfigError
from simulator import Strategy
from simulator import simulate
from tests.conftest import random_graph


@pytest.mark.parametrize(
    "params, message",
    [
        ({"mapping": "vwarp", "w": 3}, r"w in \(1, 2, 4, 8, 16, 32\)"),
        ({"mapping": "vwarp", "w": 64}, "w in"),
        ({"mapping": "vwarp", "w": 8, "chunk": 0}, "chunk >= 1"),
        ({"mapping": "vwarp", "distribution": "guided"}, "distribution in"),
        ({"mapping": "thread", "w": 8}, "does not apply to mapping='thread'"),
        ({"mapping": "thread", "chunk": 4}, "does not apply"),
        ({"mapping": "wer", "w": 4}, "`w` does not apply to mapping='wer'"),
        ({"defer_threshold": -1}, "defer_threshold"),
        ({"block_size": 100}, "multiple of 32"),
        ({"mapping": "warp"}, "mapping in"),
        ({"chunk_size": 4}, "unknown knob"),
        ({"mapping": None}, "`mapping=none`: mapping has no 'unset' value"),
        ({"driven": None}, "`driven=none`: driven has no 'unset' value"),
        ({"block_size": None}, "`block_size=none`: block_size has no 'unset' value"),
        # adaptive policy
        ({"mapping": "vwarp", "adaptive_min_w": 2}, "does not apply to mapping='vwarp'"),
        ({"mapping": "adaptive", "adaptive_min_w": 3}, "adaptive_min_w in"),
        ({"mapping": "adaptive", "adaptive_min_w": 16, "adaptive_max_w": 4},
         "adaptive_min_w <= adaptive_max_w"),
        ({"mapping": "adaptive", "adaptive_stat": "mode"}, "adaptive_stat in"),
        # donation is a thread-mapping technique
        ({"mapping": "vwarp", "donate_threshold": 8}, "applies to mapping='thread'"),
        ({"donate_threshold": -2}, "donate_threshold"),
        # driven forms and the knobs that belong to them
        ({"driven": "worklist"}, "driven in"),
        ({"push": "atomic"}, "`push` does not apply to driven='topology'"),
        ({"driven": "data", "push": "scan"}, "push in"),
        ({"variable_grid": True}, "`variable_grid` does not apply to driven='topology'"),
        ({"driven": "data", "variable_grid": "yes"}, "true or false"),
        ({"driven": "data", "partition": 4}, "`partition` does not apply to driven='data'"),
        ({"driven": "spatial", "partition": 0}, "partition >= 1"),
        ({"driven": "spatial", "switch_to_topology": 0.1}, "applies to driven='temporal'"),
        ({"driven": "data", "switch_to_data": 0.1}, "does not apply to driven='data'"),
        ({"driven": "temporal", "switch_to_topology": 0}, "switch_to_topology > 0"),
        ({"driven": "temporal", "switch_to_topology": -0.5}, "switch_to_topology > 0"),
        ({"driven": "temporal", "switch_to_topology": 0.1, "switch_to_data": 0.3},
         "switch_to_data <= switch_to_topology"),
        ({"driven": "temporal", "switch_to_topology": "big"}, "switch_to_topology > 0"),
        ({"driven": "data", "unroll": 2}, "`unroll` does not apply to driven='data'"),
        ({"unroll": 0}, "unroll >= 1"),
        ({"unroll": 2, "defer_threshold": 64}, "defer_threshold does not apply with unroll=2"),
        ({"changed_flag": "vote"}, "changed_flag in"),
        ({"driven": "data", "changed_flag": "warp"},
         "`changed_flag` does not apply to driven='data'"),
        ({"driven": "temporal", "changed_flag": "step"},
         "`changed_flag` does not apply to driven='temporal'"),
        ({"precheck": "no"}, "`precheck` must be true or false"),
        ({"driven": "data", "relax": "store", "precheck": False},
         "precheck=false does not apply to relax='store'"),
    ],
)
def test_invalid_configurations(params, message):
    with pytest.raises(ConfigError, match=message):
        Strategy.from_params(params)


@pytest.mark.parametrize(
    "algorithm, knobs, message",
    [
        ("pagerank", "driven=temporal", "does not apply to pagerank"),
        ("pagerank", "driven=spatial,partition=4", "does not apply to pagerank"),
        ("pagerank", "unroll=2", "unroll=2 does not apply to pagerank"),
        ("pagerank", "changed_flag=warp", "changed_flag='warp' does not apply to pagerank"),
        ("bfs", "precheck=false", "precheck=false does not apply to bfs"),
        ("pagerank", "driven=data,precheck=false", "precheck=false does not apply to pagerank"),
    ],
)
def test_knobs_the_algorithm_lacks(algorithm, knobs, message):
    g = random_graph(50, 200, 1)
    with pytest.raises(ConfigError, match=message):
        simulate(g, algorithm, knobs)


def test_numpy_scalars_are_taken_as_python_scalars():
    assert str(Strategy(w=np.int64(8), mapping="vwarp")) == str(Strategy(w=8, mapping="vwarp"))
    s = Strategy(mapping=np.str_("vwarp"), w=np.int64(8), chunk=np.int32(4),
                 defer_threshold=np.uint16(64), block_size=np.int64(128))
    assert s == Strategy(mapping="vwarp", w=8, chunk=4, defer_threshold=64, block_size=128)
    assert type(s.w) is int and type(s.block_size) is int and type(s.mapping) is str
    t = Strategy(driven="temporal", switch_to_topology=np.float32(0.1), dedup=np.True_)
    assert str(t) == str(Strategy(driven="temporal", switch_to_topology=0.1, dedup=True))
    assert type(t.dedup) is bool
    with pytest.raises(ConfigError, match="got w=True"):  # a bool is still not a width
        Strategy(mapping="vwarp", w=np.True_)
    with pytest.raises(ConfigError, match="must be true or false, but got 1"):
        Strategy(driven="data", dedup=np.int64(1))
    # the CLI's text had been told a dict of knobs takes Python values (probe SPACES)
    with pytest.raises(ConfigError) as refused:
        Strategy.parse("driven=data,dedup=yes")
    assert "got 'yes'" in str(refused.value) and "dict" not in str(refused.value)


def test_defaults_and_round_trip():
    s = Strategy.from_params({"mapping": "vwarp"})
    assert (s.w, s.chunk, s.distribution) == (32, 1, "static")
    assert Strategy.from_params(s.to_params()) == s
    assert Strategy.parse("mapping=vwarp,w=8,chunk=16,defer_threshold=none") == Strategy(
        mapping="vwarp", w=8, chunk=16
    )
    assert Strategy().to_params() == {
        "mapping": "thread", "block_size": 256, "driven": "topology", "unroll": 1
    }
    temporal = Strategy(driven="temporal", switch_to_topology=0.2)
    assert (temporal.push, temporal.variable_grid, temporal.switch_to_data) == (
        "atomic", True, 0.2
    )
    adaptive = Strategy(mapping="adaptive", adaptive_max_w=8)
    assert (adaptive.adaptive_min_w, adaptive.adaptive_stat, adaptive.chunk) == (1, "mean", 1)
    assert adaptive.with_width(4) == Strategy(mapping="vwarp", w=4)
    for s in (temporal, adaptive, Strategy(driven="spatial"), Strategy(mapping="wer+")):
        assert Strategy.parse(str(s)) == s


def test_negative_zero_switch_is_written_as_zero() -> None:
    """`switch_to_data=-0.0` equals 0.0 and reads as it (probe HYB: it had kept its sign in
    the configuration's text, so one setting had two texts)."""
    s = Strategy.parse("driven=temporal,switch_to_topology=0.1,switch_to_data=-0.0")
    assert str(s) == str(Strategy.parse("driven=temporal,switch_to_topology=0.1,"
                                        "switch_to_data=0.0"))
    assert "-0" not in str(s)
