"""The graph spec parser: canonical strings, defaults, options and every rejection."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simulator.errors import GraphError
from simulator.graph_spec import GraphSpec
from simulator.graph_spec import allowed_keys
from simulator.graph_spec import file_stem
from simulator.graph_spec import parse_spec


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("rmat:scale=12", "rmat:scale=12,ef=16,a=0.57,b=0.19,c=0.19,seed=0"),
        ("kron:scale=5,ef=4,seed=3", "rmat:scale=5,ef=4,a=0.57,b=0.19,c=0.19,seed=3"),
        (
            "rmat:scale=12,weights=random,seed=5",
            "rmat:scale=12,ef=16,a=0.57,b=0.19,c=0.19,weights=random,seed=5",
        ),
        ("RMAT: Scale = 3 , A=0.6", "rmat:scale=3,ef=16,a=0.6,b=0.19,c=0.19,seed=0"),
        ("random:n=100,m=50", "random:n=100,m=50,seed=0"),
        ("random:n=100", "random:n=100,deg=8.0,seed=0"),
        ("random:n=100,deg=4,directed=true", "random:n=100,deg=4.0,directed=true,seed=0"),
        ("grid2d:rows=4", "grid2d:rows=4,cols=4"),
        ("grid2d:rows=4,cols=7,seed=9", "grid2d:rows=4,cols=7"),
        ("grid2d:rows=4,order=random,seed=9", "grid2d:rows=4,cols=4,order=random,seed=9"),
        ("mesh2d:rows=3,cols=5,order=bfs", "mesh2d:rows=3,cols=5,order=bfs"),
        ("road:rows=5", "road:rows=5,cols=5,keep=0.65,seed=0"),
        ("file:g/x.mtx.gz", "file:g/x.mtx.gz"),
        ("file:path=g/x.txt,weights=file", "file:g/x.txt,weights=file"),
        ("file:x.dat,format=snap,directed=yes", "file:x.dat,format=snap,directed=true"),
        ("g/web.txt.gz", "file:g/web.txt.gz"),
        ("rmat:scale=4,directed=false,order=none,weights=none", "rmat:scale=4,ef=16,a=0.57,"
         "b=0.19,c=0.19,seed=0"),
    ],
)
def test_canonical_form(text: str, canonical: str) -> None:
    spec = parse_spec(text)
    assert spec.canonical() == canonical
    assert str(spec) == canonical
    assert parse_spec(canonical) == spec  # the canonical string is a fixed point


def test_options_are_typed() -> None:
    spec = parse_spec("rmat:scale=10,directed=true,weights=random,seed=7,order=degree")
    assert spec.kind == "rmat"
    assert spec.params == {"scale": 10, "ef": 16, "a": 0.57, "b": 0.19, "c": 0.19}
    assert spec.options.directed is True
    assert spec.options.weights == "random"
    assert spec.options.seed == 7
    assert spec.options.order == "degree"
    assert spec.uses_seed
    assert not parse_spec("grid2d:rows=3").uses_seed


def test_spec_is_frozen_and_hashable() -> None:
    spec = parse_spec("grid2d:rows=3")
    with pytest.raises(AttributeError):
        spec.kind = "rmat"  # type: ignore[misc]
    assert hash(spec) == hash(parse_spec("grid2d:rows=3,cols=3"))
    assert parse_spec(spec) is spec
    assert isinstance(spec, GraphSpec)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("rmat:scale=12,ef=8", "rmat12-ef8"),
        ("random:n=10,m=5", "random-n10-m5"),
        ("random:n=10,deg=2.5", "random-n10-deg2.5"),
        ("road:rows=3,cols=4", "road-3x4"),
        ("file:/a/b/USA-road-FLA.gr.gz", "USA-road-FLA"),
        ("file:/a/b/data.v2.csv", "data.v2"),
    ],
)
def test_short_name(text: str, name: str) -> None:
    assert parse_spec(text).short_name() == name


def test_file_stem_keeps_unknown_extensions() -> None:
    assert file_stem("dir/graph.bin") == "graph.bin"
    assert file_stem("dir/graph.mtx.gz") == "graph"


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("", ["empty graph spec"]),
        ("   ", ["empty graph spec"]),
        ("foo:x=1", ["'foo:x=1'", "unknown kind 'foo'", "rmat", "file"]),
        ("scale=3", ["expected KIND:key=value"]),
        ("rmat:", ["missing required key 'scale'", "allowed keys: scale, ef, a, b, c"]),
        ("rmat:scale=3,zz=1", ["unknown key 'zz'", "allowed keys:", "directed", "order"]),
        ("rmat:scale=3,ef", ["malformed field 'ef'", "allowed keys:"]),
        ("rmat:scale=3,=4", ["malformed field '=4'"]),
        ("rmat:scale=3,scale=4", ["key 'scale' given twice"]),
        ("rmat:scale=x", ["bad value for 'scale'", "expected an integer, got 'x'"]),
        ("rmat:scale=2.5", ["expected an integer"]),
        ("rmat:scale=0", ["scale=0 out of range", "1..30"]),
        ("rmat:scale=31", ["out of range"]),
        ("rmat:scale=3,a=nan", ["bad value for 'a'"]),
        ("rmat:scale=3,a=1.5", ["a=1.5 out of range"]),
        ("rmat:scale=3,a=0.9", ["a+b+c", "<= 1"]),
        ("rmat:scale=3,ef=", ["empty value for 'ef'"]),
        ("random:n=3,m=10", ["m=10 asks for more edges", "at most 3"]),
        ("random:n=10,m=5,deg=1", ["m= or deg=, not both"]),
        # deg / 2 x n overflowed to inf: an OverflowError traceback (probe GRAPHS)
        ("random:n=10,deg=1e308", ["deg=1e+308 asks for more edges", "at most 45"]),
        # through a float, the seed had named another graph, ...768 (probe GRAPHS)
        ("rmat:scale=4,seed=1.2345678901234567891e18", ["expected an integer, got"]),
        ("rmat:scale=4,seed=1e999999999", ["expected an integer of at most 31 digits"]),
        ("random:n=1", ["out of range"]),
        ("grid2d:rows=1", ["at least 2 vertices"]),
        ("road:rows=4,keep=0", ["keep=0 out of range"]),
        ("grid2d:rows=3,weights=file", ["weights=file needs a file: spec"]),
        ("rmat:scale=3,directed=maybe", ["bad value for 'directed'", "true or false"]),
        ("rmat:scale=3,weights=gaussian", ["bad value for 'weights'", "none|file|random"]),
        ("rmat:scale=3,order=zorder", ["bad value for 'order'", "none|degree|bfs|random"]),
        ("rmat:scale=3,seed=-1", ["seed=-1 out of range"]),
        ("file:", ["file: needs a path"]),
        ("file:x.mtx,format=xml", ["bad value for 'format'", "snap|csv|mtx"]),
        ("file:x.mtx,scale=3", ["unknown key 'scale' for file", "allowed keys: format"]),
    ],
)
def test_rejections_name_the_spec_and_the_problem(text: str, fragments: list[str]) -> None:
    with pytest.raises(GraphError) as info:
        parse_spec(text)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message
    if text.strip():
        assert repr(text) in message


def test_non_string_spec_is_rejected() -> None:
    with pytest.raises(GraphError, match="must be a string"):
        parse_spec(12)  # type: ignore[arg-type]


def test_allowed_keys_lists_params_then_options() -> None:
    assert allowed_keys("grid2d") == ["rows", "cols", "directed", "weights", "seed", "order"]


@given(
    scale=st.integers(1, 30),
    ef=st.integers(1, 64),
    a=st.floats(0, 0.5),
    seed=st.integers(0, 2**63 - 1),
    directed=st.booleans(),
)
def test_rmat_canonical_round_trip(
    scale: int, ef: int, a: float, seed: int, directed: bool
) -> None:
    text = f"rmat:scale={scale},ef={ef},a={a!r},seed={seed},directed={str(directed).lower()}"
    spec = parse_spec(text)
    assert spec.params["a"] == a
    assert spec.options.seed == seed
    assert parse_spec(spec.canonical()) == spec


def test_a_bare_path_holding_a_colon_or_equals_is_told_to_take_file(tmp_path) -> None:
    # refused as an unknown kind '/tmp/d', lower-cased, or by a message offering "a graph
    # file path" (probe GRAPHS)
    for name in ("d:x/g.txt", "a=b.txt"):
        path = tmp_path / name
        path.parent.mkdir(exist_ok=True)
        path.write_text("1 2\n")
        with pytest.raises(GraphError, match=f"is a file: write file:{re.escape(str(path))}"):
            parse_spec(str(path))
        assert parse_spec(f"file:{path}").params["path"] == str(path)
