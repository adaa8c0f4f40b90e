"""Graph input at its edges: a METIS file without its extension, integer weights past 2**53,
an undirected .npz that stores edges one way, convert's output directory, and the messages
for empty generated graphs, undecodable bytes, NUL lines and string bool knobs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from simulator.errors import ConfigError
from simulator.errors import GraphError
from simulator.graph import Graph
from simulator.graph_spec import parse_spec
from simulator.load import load_graph
from simulator.loaders import detect_format
from simulator.loaders import read_edges
from simulator.loaders import save_npz
from simulator.strategy import Strategy
from tuner.cli import main

METIS_CYCLE = b"4 4\n2 4\n1 3\n2 4\n1 3\n"  # the 4-cycle 1-2-3-4: every line 2 numbers
# 5 vertices, 7 edges (1-2 1-3 1-4 2-3 3-4 3-5 4-5): lines of 2 to 4 numbers, no edge list
METIS_MIXED = b"5 7\n2 3 4\n1 3\n1 2 4 5\n1 3 5\n3 4\n"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("WARPSWEEP_CACHE_DIR", str(tmp_path / "cache"))


def _load(path: Path, opts: str = "") -> Graph:
    return load_graph(f"file:{path}{opts}", cache=False)


# ----------------------------------------------------------------- 1. METIS or SNAP


@pytest.mark.parametrize("name", ["metis_graph", "graph.txt", "graph.dat"])
def test_metis_content_without_its_extension_reads_as_metis(tmp_path, name) -> None:
    path = tmp_path / name
    path.write_bytes(METIS_MIXED)
    assert detect_format(path, METIS_MIXED) == "metis"
    g = _load(path)
    assert (g.n, g.m) == (5, 14)  # as SNAP it had been refused: a line of 3 numbers, then 4
    assert _load(path, ",format=metis").m == 14


def test_metis_with_isolated_trailing_vertex_and_comments_reads_as_metis(tmp_path) -> None:
    path = tmp_path / "g"
    path.write_bytes(b"% a METIS file\n6 7\n2 3 4\n1 3\n1 2 4 5\n1 3 5\n3 4\n\n")
    assert (_load(path).n, _load(path).m) == (6, 14)


def test_content_that_reads_both_as_metis_and_as_an_edge_list_is_refused(tmp_path) -> None:
    """The 4-cycle in METIS is also an edge list of 5 edges (probe LD had it read as SNAP,
    silently): no one can tell, so the user's word is asked for."""
    for text in (METIS_CYCLE, b"4 3\n2 3\n1 3\n1 2\n\n"):  # (probe CR: a K3 and a vertex)
        path = tmp_path / "g"
        path.write_bytes(text)
        with pytest.raises(GraphError, match="reads as a METIS graph .* and as an edge list"):
            _load(path)
    assert _load(path, ",format=snap").m == 8 and _load(path, ",format=metis").m == 6


def test_metis_like_content_that_is_no_consistent_metis_reads_as_snap(tmp_path) -> None:
    """A header's M that the lines do not bear out, or ids past N: no METIS graph, an edge
    list as before (every such list had been refused: probe CR)."""
    for text, n, m in ((b"4 5\n2 4\n1 3\n2 4\n1 3\n", 5, 6),
                       (b"3 1\n1 2\n2 3\n3 1\n", 3, 6),
                       (b"5 4 1\n1 2 3\n2 3 4\n3 4 5\n4 5 6\n1 5 1\n", 5, 10)):
        path = tmp_path / "g"
        path.write_bytes(text)
        g = _load(path)
        assert (g.n, g.m) == (n, m), text


@pytest.mark.parametrize(("text", "n", "m"), [
    (b"5 3\n1 2\n2 3\n", 4, 6),  # 2 lines after '5 3': no METIS line count
    (b"1 1\n2 3\n", 3, 2),  # ids past N=1: no METIS graph
    (b"3 2\n4 5\n6 7\n1 2\n", 7, 8),  # 3 lines after '3 2' but ids past 3
])
def test_snap_lists_whose_first_line_looks_like_a_header_read_as_before(tmp_path, text, n,
                                                                        m) -> None:
    path = tmp_path / "edges.txt"
    path.write_bytes(text)
    assert detect_format(path, text) == "snap"
    g = _load(path)
    assert (g.n, g.m) == (n, m)


# ----------------------------------------------------------------- 2. weights past 2**53


def test_dimacs_integer_weight_past_2_53_is_refused_not_rounded(tmp_path) -> None:
    path = tmp_path / "w.gr"
    path.write_bytes(b"p sp 3 2\na 1 2 36028797018963971\na 2 3 4\n")
    with pytest.raises(GraphError, match=r"line 2: edge weight 36028797018963971 is not a "
                                         r"float32 \(it would read as 36028797018963968\)"):
        _load(path, ",weights=file")


def test_mtx_integer_weight_past_2_53_is_refused(tmp_path) -> None:
    path = tmp_path / "w.mtx"
    path.write_bytes(b"%%MatrixMarket matrix coordinate integer general\n3 3 2\n"
                     b"1 2 36028797018963971\n2 3 4\n")
    with pytest.raises(GraphError, match="line 3: edge weight 36028797018963971 is not"):
        _load(path, ",weights=file")


def test_exact_float32_integers_past_2_53_are_kept(tmp_path) -> None:
    path = tmp_path / "w.gr"  # 2**55 is a float32
    path.write_bytes(b"p sp 3 2\na 1 2 36028797018963968\na 2 3 4\n")
    edges = read_edges(path, weights=True)
    assert edges.weights.tolist() == [2.0**55, 4.0]


def test_graph_from_edges_refuses_int64_weights_float32_rounds() -> None:
    with pytest.raises(GraphError, match="36028797018963971 is not a float32"):
        Graph.from_edges([0], [1], 2, np.array([36028797018963971], dtype=np.int64))


# ----------------------------------------------------------------- 3. .npz direction


def _one_way_npz(path: Path) -> Path:
    meta = {"format": "warpsweep-csr", "version": 1, "name": "x", "spec": "x",
            "directed": False}
    np.savez(path, indptr=np.array([0, 1, 2, 2]), indices=np.array([1, 2]),
             meta=np.array(json.dumps(meta)))
    return path


def test_directed_true_reads_an_undirected_npz_by_its_arcs(tmp_path) -> None:
    path = _one_way_npz(tmp_path / "x.npz")
    g = _load(path, ",directed=true")
    assert g.directed and g.m == 2
    assert sorted(zip(g.sources.tolist(), g.indices.tolist(), strict=True)) == [(0, 1), (1, 2)]


def test_one_way_undirected_npz_names_the_metadata_and_the_spec_option(tmp_path) -> None:
    path = _one_way_npz(tmp_path / "x.npz")
    with pytest.raises(GraphError) as info:
        _load(path)
    message = str(info.value)
    assert '"directed": false' in message and "directed=true" in message
    assert "Graph.from_edges" not in message  # no Python advice for a CLI user


# ----------------------------------------------------------------- 4. convert's output


def test_convert_into_a_missing_directory_is_refused_by_name(tmp_path, capsys) -> None:
    src = tmp_path / "g.gr"
    src.write_bytes(b"p sp 3 2\na 1 2 3\na 2 3 4\n")
    out = tmp_path / "nowhere" / "x.npz"
    assert main(["graph", "convert", f"file:{src}", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "nowhere") in err and "does not exist" in err
    assert len(err.strip().splitlines()) == 1
    assert not out.parent.exists()


def test_save_npz_still_makes_the_graph_caches_directory(tmp_path) -> None:
    out = tmp_path / "a" / "b" / "x.npz"
    save_npz(Graph.from_edges([0], [1], 2), out, {"key": "k"})
    assert out.is_file()


# ----------------------------------------------------------------- 5. messages


@pytest.mark.parametrize(("spec", "what"), [
    ("random:n=2,m=0", "m=0 out of range"),
    ("random:n=100,deg=0", "deg=0 out of range"),
    ("random:n=100,deg=0.001", "draws no edges"),
])
def test_random_specs_without_edges_are_refused_at_parsing(spec, what) -> None:
    with pytest.raises(GraphError, match=what):
        parse_spec(spec)


def test_road_with_every_edge_dropped_says_so_not_self_loops() -> None:
    with pytest.raises(GraphError) as info:
        load_graph("road:rows=4,keep=0.01,seed=1", cache=False)
    assert "no edges were generated" in str(info.value)
    assert "self loop" not in str(info.value)


def test_self_loops_only_still_named(tmp_path) -> None:
    path = tmp_path / "loops.el"
    path.write_bytes(b"1 1\n2 2\n")
    with pytest.raises(GraphError, match=r"empty graph: no edges \(all 2 are self loops"):
        _load(path)


def test_a_non_utf8_byte_is_named_by_its_value(tmp_path) -> None:
    path = tmp_path / "bad.el"
    path.write_bytes(b"1 2\n2 \xe9\n")
    with pytest.raises(GraphError) as info:
        _load(path)
    message = str(info.value)
    assert "line 2: unexpected byte 0xe9" in message and r"'2 \xe9'" in message
    assert "\ufffd" not in message and "U+FFFD" not in message


@pytest.mark.parametrize("text", [
    b"p sp 3 2\na 1 2 3\n\x00\x00\x00\na 2 3 4\n",  # a line of NULs among the arcs
    b"\x00\x00\x00\np sp 3 2\na 1 2 3\na 2 3 4\n",  # where the problem line should be
])
def test_a_dimacs_line_of_nuls_names_the_nul(tmp_path, text) -> None:
    path = tmp_path / "nul.gr"
    path.write_bytes(text)
    with pytest.raises(GraphError, match=r"unexpected character '\\x00' \(U\+0000\)"):
        _load(path)


def test_a_string_for_a_bool_knob_is_named_as_a_string() -> None:
    with pytest.raises(ConfigError, match="got the string 'true'.*the bool \\(True\\)"):
        Strategy(driven="data", dedup="true")
    assert Strategy.parse("driven=data,dedup=true").dedup is True  # the CLI's text


@pytest.mark.parametrize(("src", "dst", "n", "said"), [
    ([0, -1], [1, 2], None, "vertex id -1 is negative"),
    ([0, 1], [1, 5], 3, "vertex id 5 is out of range 0..2"),
    # past int64, in the ids' own type: the cast had wrapped it to another number
    (np.array([0, 1], dtype=np.uint64), np.array([1, 2**64 - 1], dtype=np.uint64), 3,
     "vertex id 18446744073709551615 is out of range 0..2"),
])
def test_an_edge_lists_bad_id_is_named(src, dst, n, said) -> None:
    """``Graph.from_edges`` had said "vertex id out of range 0..2" without the id, and a
    huge uint64 or float id read as the number its int64 cast wrapped to (probe API)."""
    with pytest.raises(GraphError, match=said):
        Graph.from_edges(np.asarray(src), np.asarray(dst), n)
