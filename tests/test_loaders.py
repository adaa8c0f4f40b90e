"""File loaders (every format, gzip, errors with line numbers), the CSR cache, real graphs."""

from __future__ import annotations

import gzip
import os
import re
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse

from simulator import graph_cache
from simulator import load as load_module
from simulator.errors import ConfigError
from simulator.errors import GraphError
from simulator.graph import Graph
from simulator.graph_cache import content_digest
from simulator.graph_spec import parse_spec
from simulator.load import load_graph
from simulator.loaders import detect_format
from simulator.loaders import read_edges
from simulator.loaders import read_npz
from simulator.loaders import save_npz

SHARED_GRAPHS = Path(__file__).resolve().parents[2] / "shared" / "graphs"

# One small graph in every format: 1-based 1-2, 1-3, 2-3, 3-4, 4-5 (weights 5, 2, 1, 7, 3);
# vertex 6 is isolated where the format declares n = 6.
EDGES = [(0, 1), (0, 2), (1, 2), (2, 3), (3, 4)]
WEIGHTS = [5.0, 2.0, 1.0, 7.0, 3.0]
FILES = {
    "snap.txt": "# SNAP-style\n# FromNodeId\tToNodeId\n1\t2\n1 3\n\n2\t3\n# mid\n3 4\n4 5\n",
    "snapw.txt": "1 2 5\n1 3 2\n2 3 1\n3 4 7\n4 5 3\n",
    "crlf.txt": "# windows\r\n1 2\r\n1 3\r\n2 3\r\n3 4\r\n4 5\r\n",
    "no_newline.txt": "1 2\n1 3\n2 3\n3 4\n4 5",
    "edges.csv": "node_1,node_2\n1,2\n1,3\n2,3\n3,4\n4,5\n",
    "weighted.csv": "src,dst,w\n1,2,5\n1,3,2\n2,3,1\n3,4,7\n4,5,3\n",
    "pattern.mtx": "%%MatrixMarket matrix coordinate pattern symmetric\n% comment\n6 6 5\n"
    "2 1\n3 1\n3 2\n4 3\n5 4\n",
    "real.mtx": "%%MatrixMarket matrix coordinate real general\n6 6 5\n"
    "1 2 5.0\n1 3 2e0\n2 3 1\n3 4 7.0\n4 5 3\n",
    "integer.mtx": "%%MatrixMarket matrix coordinate integer symmetric\n6 6 5\n"
    "2 1 5\n3 1 2\n3 2 1\n4 3 7\n5 4 3\n",
    "dimacs.gr": "c DIMACS9\np sp 6 10\nc arcs\na 1 2 5\na 2 1 5\na 1 3 2\na 3 1 2\na 2 3 1\n"
    "a 3 2 1\na 3 4 7\na 4 3 7\na 4 5 3\na 5 4 3\n",
    "pace.gr": "c PACE\np tw 6 5\n1 2\n1 3\n2 3\n3 4\n4 5\n",
    "plain.graph": "% METIS\n6 5\n2 3\n1 3\n1 2 4\n3 5\n4\n\n",
    "weighted.graph": "6 5 1\n2 5 3 2\n1 5 3 1\n1 2 2 1 4 7\n3 7 5 3\n4 3\n\n",
    "vwgt.graph": "6 5 11 2\n9 1 2 5 3 2\n9 1 1 5 3 1\n9 1 1 2 2 1 4 7\n"
    "9 1 3 7 5 3\n9 1 4 3\n9 1\n",
    "vsize.graph": "6 5 111\n4 9 2 5 3 2\n4 9 1 5 3 1\n4 9 1 2 2 1 4 7\n"
    "4 9 3 7 5 3\n4 9 4 3\n4 9\n",
    "graph.lg": "6,5,u,graph,2,Int64,simplegraph\n1,2\n1,3\n2,3\n3,4\n4,5\n",
    # a .csv parted by tabs (its first line had been dropped as a header), lines ended by CR
    # alone (old Mac editors; had read as one edge), DIMACS arcs indented
    "tabs.csv": "1\t2\n1\t3\n2\t3\n3\t4\n4\t5\n",
    "tabsw.csv": "1\t2\t5\n1\t3\t2\n2\t3\t1\n3\t4\t7\n4\t5\t3\n",
    "cr.txt": "# old mac\r1 2 5\r1 3 2\r2 3 1\r3 4 7\r4 5 3\r",
    "indented.gr": "c DIMACS9\np sp 6 10\n a 1 2 5\n\ta 2 1 5\na 1 3 2\na 3 1 2\na 2 3 1\n"
    "a 3 2 1\n  c an indented comment\na 3 4 7\na 4 3 7\na 4 5 3\na 5 4 3\n",
}
DECLARES_N = {"mtx", "gr", "graph", "lg", "npz"}
HAS_WEIGHTS = {"snapw.txt", "weighted.csv", "real.mtx", "integer.mtx", "dimacs.gr",
               "weighted.graph", "vwgt.graph", "vsize.graph", "tabsw.csv", "cr.txt",
               "indented.gr"}


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("WARPSWEEP_CACHE_DIR", str(tmp_path / "cache"))
    # the files here are written just before they are read: cache them at once (the rule
    # that a file modified within RACY_S is not cached has a test of its own)
    monkeypatch.setattr(graph_cache, "RACY_S", -1.0)


def write(tmp_path: Path, name: str, text: str | bytes, gz: bool = False) -> Path:
    """Write a test file (gzip-compressed with a .gz suffix when ``gz``)."""
    data = text.encode() if isinstance(text, str) else text
    path = tmp_path / (name + (".gz" if gz else ""))
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def edge_set(g: Graph) -> set[tuple[int, int]]:
    """Stored edges as a Python set."""
    return set(zip(g.sources.tolist(), g.indices.tolist(), strict=True))


def undirected(edges) -> set[tuple[int, int]]:
    """Both directions of every edge."""
    return {(u, v) for u, v in edges} | {(v, u) for u, v in edges}


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("name", sorted(FILES))
def test_every_format_loads_the_same_graph(tmp_path, name: str, gz: bool) -> None:
    path = write(tmp_path, name, FILES[name], gz)
    g = load_graph(f"file:{path}", cache=False)
    ext = name.rsplit(".", 1)[1]
    assert g.n == (6 if ext in DECLARES_N else 5)
    assert edge_set(g) == undirected(EDGES)
    assert not g.directed and g.weights is None
    assert g.spec == f"file:{path}"
    assert g.name == name.rsplit(".", 1)[0]


@pytest.mark.parametrize("name", sorted(HAS_WEIGHTS))
def test_weights_from_the_file(tmp_path, name: str) -> None:
    path = write(tmp_path, name, FILES[name])
    g = load_graph(f"file:{path},weights=file", cache=False)
    expected = {}
    for (u, v), w in zip(EDGES, WEIGHTS, strict=True):
        expected[(u, v)] = expected[(v, u)] = w
    got = dict(zip(zip(g.sources.tolist(), g.indices.tolist(), strict=True),
                   g.weights.tolist(), strict=True))
    assert got == expected


def test_duplicate_edges_keep_the_smallest_weight(tmp_path) -> None:
    path = write(tmp_path, "dup.txt", "0 1 9\n1 0 4\n0 1 6\n1 2 1\n2 2 3\n")
    g = load_graph(f"file:{path},weights=file", cache=False)
    assert g.m == 4
    assert g.weights[0] == 4 and g.weights[1] == 4  # 0->1 and 1->0


def test_directed_keeps_file_direction_and_symmetric_formats_stay_symmetric(tmp_path) -> None:
    snap = write(tmp_path, "d.txt", FILES["snap.txt"])
    g = load_graph(f"file:{snap},directed=true", cache=False)
    assert g.directed and edge_set(g) == set(EDGES)
    for name in ("pace.gr", "pattern.mtx", "plain.graph", "graph.lg"):
        path = write(tmp_path, name, FILES[name])
        g = load_graph(f"file:{path},directed=true", cache=False)
        assert g.directed and edge_set(g) == undirected(EDGES), name
    lg = write(tmp_path, "dir.lg", FILES["graph.lg"].replace(",u,", ",d,"))
    assert edge_set(load_graph(f"file:{lg},directed=true", cache=False)) == set(EDGES)
    general = write(tmp_path, "gen.mtx", FILES["real.mtx"])
    assert edge_set(load_graph(f"file:{general},directed=true", cache=False)) == set(EDGES)


def test_snap_ids_are_compacted_in_increasing_order(tmp_path) -> None:
    path = write(tmp_path, "sparse.txt", "100 7\n7 5000000000\n")
    g = load_graph(f"file:{path},directed=true", cache=False)
    assert g.n == 3
    assert edge_set(g) == {(1, 0), (0, 2)}


def test_option_order_applies_to_files(tmp_path) -> None:
    path = write(tmp_path, "p.gr", FILES["pace.gr"])
    g = load_graph(f"file:{path},order=degree", cache=False)
    assert g.degrees.tolist() == [3, 2, 2, 2, 1, 0]


@pytest.mark.parametrize(
    ("name", "text", "fmt"),
    [
        ("a.dat", FILES["pattern.mtx"], "mtx"),
        ("a.dat", FILES["dimacs.gr"], "dimacs"),
        ("a.dat", FILES["pace.gr"], "pace"),
        ("a.dat", FILES["graph.lg"], "lg"),
        ("a.dat", "1,2\n2,3\n", "csv"),
        ("a.dat", "# c\n1 2\n2 3\n", "snap"),
        ("a.gr", FILES["pace.gr"], "pace"),
        ("a.GRAPH", FILES["plain.graph"], "metis"),
        ("a.jlg", FILES["graph.lg"], "lg"),
    ],
)
def test_format_detection(tmp_path, name: str, text: str, fmt: str) -> None:
    path = write(tmp_path, name, text)
    assert detect_format(path, path.read_bytes()) == fmt
    expected = [(0, 1), (1, 2)] if fmt in ("csv", "snap") else EDGES
    assert edge_set(load_graph(f"file:{path}", cache=False)) == undirected(expected)


@pytest.mark.parametrize("name", sorted(FILES))
def test_a_utf8_bom_is_stripped_in_every_text_format(tmp_path, name: str) -> None:
    ext = name.rsplit(".", 1)[1]
    data = b"\xef\xbb\xbf" + FILES[name].encode()
    paths = [write(tmp_path, name, data)]
    if ext != "graph":  # METIS is told by its extension only; the rest by content too
        paths.append(write(tmp_path, "bom.dat", data))
    for path in paths:
        g = load_graph(f"file:{path}", cache=False)
        assert g.n == (6 if ext in DECLARES_N else 5), path
        assert edge_set(g) == undirected(EDGES), path


def test_a_numeric_first_csv_line_is_data_not_a_header(tmp_path) -> None:
    path = write(tmp_path, "f.csv", "1.0,2.0\n2.0,3.0\n3.0,4.0\n")
    assert edge_set(load_graph(f"file:{path}", cache=False)) == undirected(
        [(0, 1), (1, 2), (2, 3)])
    path = write(tmp_path, "w.csv", "0,1,5\n1,2,1\n")
    g = load_graph(f"file:{path},weights=file", cache=False)
    assert g.m == 4 and sorted(g.weights.tolist()) == [1, 1, 5, 5]


@pytest.mark.parametrize("header", [",source,target", "weight,src,dst", "w src dst"])
def test_a_csv_header_not_starting_with_the_edges_ends_is_refused(tmp_path, header) -> None:
    """Columns are read by position: pandas' index column had been read as the sources (4
    vertices loaded as 6, the targets as weights under weights=file)."""
    sep = " " if " " in header else ","
    rows = "".join(sep.join(map(str, r)) + "\n" for r in ((0, 1, 2), (1, 2, 3), (2, 3, 0)))
    path = write(tmp_path, "pd.csv", f"{header}\n{rows}")
    with pytest.raises(GraphError, match="does not start with the source and target"):
        load_graph(f"file:{path}", cache=False)


@pytest.mark.parametrize("header", ["node_1,node_2", '"src","dst",weight', "from,to"])
def test_a_csv_header_naming_the_ends_first_is_read(tmp_path, header) -> None:
    path = write(tmp_path, "ok.csv", f"{header}\n0,1,4\n1,2,5\n")
    assert edge_set(load_graph(f"file:{path}", cache=False)) == undirected([(0, 1), (1, 2)])


@pytest.mark.parametrize("sep", [" ", ","])
def test_ids_beyond_2_53_stay_exact_beside_float_weights(tmp_path, sep: str) -> None:
    big = 2**53
    text = f"{big} {big + 1} 1.5\n# c\n{big + 1} 5 2.5\n".replace(" ", sep)
    path = write(tmp_path, "big.csv" if sep == "," else "big.txt", text)
    g = load_graph(f"file:{path},weights=file,directed=true", cache=False)
    assert g.n == 3  # 5, 2**53, 2**53 + 1: float64 had merged the last two
    edges = zip(g.sources.tolist(), g.indices.tolist(), g.weights.tolist(), strict=True)
    assert sorted(edges) == [(1, 2, 1.5), (2, 0, 2.5)]
    path = write(tmp_path, "inexact.txt", f"1 2 0.5\n{big}.0 {big + 1} 2.5\n")
    with pytest.raises(GraphError, match=r"line 2: vertex id 9007199254740992 cannot be read "
                                         r"exactly"):
        load_graph(f"file:{path}", cache=False)



@pytest.mark.parametrize("name,text,line", [
    ("w.txt", "0 1 9007199254740993\n1 2 0.5\n", 1),
    ("w.gr", "p sp 3 2\na 1 2 0.5\na 2 3 36028797018963971\n", 3),
])
def test_a_whole_weight_past_2_53_beside_fractions_is_refused(tmp_path, name, text,
                                                              line) -> None:
    # float64, which a fraction elsewhere makes the table, had rounded it unseen: read as
    # ...992, a float32 (probe GRAPHS)
    path = write(tmp_path, name, text)
    with pytest.raises(GraphError, match=rf"line {line}: edge weight .* past 2\*\*53"):
        load_graph(f"file:{path},weights=file", cache=False)


@pytest.mark.parametrize("text", ["1;2\n2;3\n", "src;dst\n1;2\n", "1|2\n2|3\n"])
def test_a_csv_parted_by_another_separator_is_named_so(tmp_path, text) -> None:
    # its first line had been called a header missing its ends, with pandas' advice
    # (probe GRAPHS)
    path = write(tmp_path, "semi.csv", text)
    with pytest.raises(GraphError, match="is one field: a .csv is read separated by commas"):
        load_graph(f"file:{path}", cache=False)


def test_skew_symmetric_matrix_loads_its_pattern(tmp_path) -> None:
    path = write(tmp_path, "skew.mtx", FILES["integer.mtx"].replace(" symmetric", " skew"
                                                                     "-symmetric"))
    g = load_graph(f"file:{path}", cache=False)  # weights=file is refused (ERRORS)
    assert g.weights is None and edge_set(g) == undirected(EDGES)


def test_explicit_format_overrides_the_extension(tmp_path) -> None:
    path = write(tmp_path, "edges.bin", "1 2\n2 3\n")
    g = load_graph(f"file:{path},format=snap", cache=False)
    assert edge_set(g) == undirected([(0, 1), (1, 2)])


def test_npz_round_trip_and_scipy_npz(tmp_path) -> None:
    g = load_graph("random:n=50,m=120,weights=random,seed=3", cache=False)
    out = save_npz(g, tmp_path / "g.npz")
    back = load_graph(f"file:{out},weights=file", cache=False)
    np.testing.assert_array_equal(back.indptr, g.indptr)
    np.testing.assert_array_equal(back.indices, g.indices)
    np.testing.assert_array_equal(back.weights, g.weights)
    assert load_graph(f"file:{out}", cache=False).weights is None
    gz = write(tmp_path, "g2.npz", out.read_bytes(), gz=True)
    np.testing.assert_array_equal(load_graph(f"file:{gz}", cache=False).indices, g.indices)
    mat = scipy.sparse.csr_matrix(([1.0, 2.0], ([0, 2], [1, 0])), shape=(4, 4))
    scipy.sparse.save_npz(tmp_path / "sp.npz", mat, compressed=True)
    h = load_graph(f"file:{tmp_path / 'sp.npz'},directed=true,weights=file", cache=False)
    assert h.n == 4 and edge_set(h) == {(0, 1), (2, 0)} and h.weights.tolist() == [1.0, 2.0]


def test_read_edges_keeps_declared_isolated_vertices(tmp_path) -> None:
    e = read_edges(write(tmp_path, "p.mtx", FILES["pattern.mtx"]))
    assert e.n == 6 and e.symmetric and e.size == 5
    assert e.lines.tolist() == [4, 5, 6, 7, 8]


# --------------------------------------------------------------------------- errors

ERRORS = [
    ("bad.txt", "# h\n1 2\n\n3 x\n", "", ["line 4", "cannot read 'x'", "'3 x'"]),
    ("bad2.txt", "1 2\n3 4 5 6\n", "", ["line 2", "expected 2 fields", "found 4"]),
    ("bad3.txt", "1 2\n3 1.5\n", "", ["line 2", "vertex ids must be integers"]),
    ("neg.txt", "1 2\n-3 4\n", "", ["line 2", "negative vertex id -3"]),
    ("one.txt", "1\n2\n", "", ["line 1", "at least 2 fields"]),
    ("comments.txt", "# only\n# comments\n", "", ["empty graph"]),
    ("loops.txt", "1 1\n2 2\n", "", ["empty graph: no edges"]),
    ("empty.txt", "", "", ["empty graph"]),
    ("bad.csv", "a,b\n1,2\n1;3\n", "", ["line 3", "cannot read '1;3'"]),
    ("float.csv", "1.5,2\n2,3\n", "", ["line 1", "vertex ids must be integers"]),
    ("gap.csv", "1,,2\n2,3\n", "", ["line 1", "an empty field in '1,,2'"]),
    ("gapw.csv", "a,b,w\n1,2,1\n1,,2,7\n", ",weights=file", ["line 3", "an empty field"]),
    ("trail.csv", "1,2,\n2,3,\n", "", ["line 1", "an empty field in '1,2,'"]),
    ("space.csv", "1,2\n2 5,3\n", "", ["line 2", "a field of several numbers"]),
    ("gap.lg", "3,2,u\n1,2\n,3\n", "", ["line 3", "an empty field in ',3'"]),
    ("range.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n4 1\n", "",
     ["line 4", "vertex id 4 out of range 1..3"]),
    ("zero.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n0 1\n", "",
     ["line 4", "vertex id 0 out of range 1..3"]),
    ("nnz.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 3\n1 2\n2 1\n", "",
     ["declares 3 entries but the file has 2"]),
    ("rect.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 4 1\n1 2\n", "",
     ["must be square", "3 x 4"]),
    ("cplx.mtx", "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 2 1 0\n", "",
     ["unsupported field 'complex'"]),
    ("array.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", "",
     ["only 'matrix coordinate'"]),
    ("nohead.mtx", "1 2\n", "", ["line 1", "%%MatrixMarket"]),
    ("size.mtx", "%%MatrixMarket matrix coordinate pattern general\n% c\n3 3\n1 2\n", "",
     ["line 3", "size line"]),
    ("nan.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1.0\n2 3 nan\n",
     ",weights=file", ["line 4", "NaN edge weight"]),
    ("negw.gr", "p sp 3 2\na 1 2 4\na 2 3 -5\n", ",weights=file",
     ["line 3", "negative edge weight -5"]),
    ("inf.txt", "1 2 inf\n", ",weights=file", ["line 1", "infinite edge weight"]),
    ("big.txt", "1 2 3\n2 3 1e39\n", ",weights=file", ["line 2", "too large edge weight 1e+39"]),
    ("nop.gr", "c no problem line\n1 2\n", "", ["'p sp N M' or 'p tw N M'"]),
    ("stray.gr", "p sp 3 2\na 1 2 4\n2 3 5\n", "", ["line 3", "starting with 'a'"]),
    ("arcs.gr", "p sp 3 3\na 1 2 4\na 2 3 5\n", "", ["declares 3 arcs but the file has 2"]),
    ("wide.gr", "p tw 3 2\n1 2\n2 3 3\n", "", ["line 3", "expected 2 fields"]),
    ("range.gr", "p tw 3 2\n1 2\n2 4\n", "", ["line 3", "vertex id 4 out of range 1..3"]),
    ("fmt.gr", "p tw 3 1\n1 2\n", ",format=dimacs",
     ["format=dimacs but the problem line says pace"]),
    ("short.graph", "4 2\n2\n1 3\n", "", ["declares 4 vertices", "has 2 vertex lines"]),
    ("long.graph", "2 1\n2\n1\n1\n", "", ["line 4", "declares 2 vertices"]),
    ("odd.graph", "3 1 1\n2 5\n1\n\n", "", ["line 3", "do not fit the fmt 001"]),
    ("count.graph", "3 2\n2\n1\n\n", "", ["declares 2 edges (4 adjacency entries)", "lists 2"]),
    ("range.graph", "2 1\n3\n1\n", "", ["line 2", "vertex id 3 out of range 1..2"]),
    ("head.graph", "x y\n", "", ["line 1", "METIS header"]),
    ("head.lg", "3;2;u\n1,2\n", "", ["line 1", "LG header"]),
    ("count.lg", "3,2,u,g\n1,2\n", "", ["declares 2 edges but the file has 1"]),
    ("pattern_w.mtx", FILES["pattern.mtx"], ",weights=file", ["weights=file", "pattern"]),
    ("skew_w.mtx", FILES["integer.mtx"].replace(" symmetric", " skew-symmetric"),
     ",weights=file", ["weights=file", "skew-symmetric", "negative"]),
    ("pace_w.gr", FILES["pace.gr"], ",weights=file", ["weights=file", "no edge weights"]),
    ("lg_w.lg", FILES["graph.lg"], ",weights=file", ["weights=file", "no edge weights"]),
    ("snap_w.txt", "1 2\n", ",weights=file", ["weights=file", "no third (weight) column"]),
    ("metis_w.graph", FILES["plain.graph"], ",weights=file", ["weights=file", "fmt 000"]),
    ("junk.npz", "not a zip", "", ["not a readable .npz"]),
    # one line of many numbers: lines ended by something else than a newline
    ("oneline.txt", "1 2 1 3 2 3 3 4", "", ["line 1", "holds 8 numbers"]),
    # weights float32 would change: a whole number it rounds, a positive one it makes 0
    ("f32.gr", "p sp 3 2\na 1 2 16777219\na 2 3 1\n", ",weights=file",
     ["line 2", "16777219 is not a float32", "16777220"]),
    ("tiny.txt", "1 2 1e-50\n", ",weights=file", ["line 1", "below float32's least"]),
    ("onesided.graph", "3 2\n2 3\n3\n1\n", "",
     ["line 2", "vertex 1 lists 2", "both ends"]),
    ("nonl.mtx", "%%MatrixMarket matrix coordinate pattern general", "", ["size line"]),
    ("vector.mtx", "%%MatrixMarket vector coordinate real general\n2 2 1\n1 2 1\n", "",
     ["'vector coordinate'"]),
    ("joined.gr", "p sp 3 2\na1 2 4\na 2 3 1\n", "", ["line 2", "'a' and a blank"]),
    ("nbsp.txt", "1 2\n2\u00a03\n", "", ["line 2", "U+00A0"]),
    ("intfield.mtx", "%%MatrixMarket matrix coordinate integer general\n3 3 2\n1 2 1\n"
     "2 3 1.5\n", "", ["line 4", "integer values, not 1.5"]),
    ("mm.csv", FILES["pattern.mtx"], ",format=csv", ["MatrixMarket", "format=mtx"]),
]


@pytest.mark.parametrize(("name", "text", "opts", "fragments"), ERRORS,
                         ids=[e[0] for e in ERRORS])
def test_bad_files_raise_graph_errors_naming_the_spec(
    tmp_path, name: str, text: str, opts: str, fragments: list[str]
) -> None:
    path = write(tmp_path, name, text)
    spec = f"file:{path}{opts}"
    with pytest.raises(GraphError) as info:
        load_graph(spec, cache=False)
    message = str(info.value)
    assert str(path) in message
    for fragment in fragments:
        assert fragment in message


def test_errors_in_gzip_files_keep_their_line_numbers(tmp_path) -> None:
    path = write(tmp_path, "bad.txt", "# a\n# b\n1 2\n2 3\n3 oops\n", gz=True)
    with pytest.raises(GraphError, match=r"line 5: cannot read 'oops'"):
        load_graph(f"file:{path}", cache=False)


def test_missing_file_directory_and_corrupt_gzip(tmp_path) -> None:
    with pytest.raises(GraphError, match="file not found"):
        load_graph(f"file:{tmp_path / 'nope.mtx'}", cache=False)
    with pytest.raises(GraphError, match="file not found"):
        load_graph(f"file:{tmp_path / 'nope.mtx'}")  # through the cache path too
    with pytest.raises(GraphError, match="not a regular file"):
        load_graph(f"file:{tmp_path}", cache=False)
    bad = write(tmp_path, "bad.txt.gz", b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(GraphError, match="corrupt gzip"):
        load_graph(f"file:{bad}", cache=False)


def test_wrong_npz_metadata_is_rejected(tmp_path) -> None:
    np.savez(tmp_path / "other.npz", x=np.arange(3))
    with pytest.raises(GraphError, match="neither a warpsweep CSR graph nor a scipy CSR"):
        load_graph(f"file:{tmp_path / 'other.npz'}", cache=False)
    np.savez(tmp_path / "bad.npz", indptr=np.array([0, 1]), indices=np.array([5]),
             meta=np.array('{"format": "warpsweep-csr", "version": 1}'))
    with pytest.raises(GraphError, match="out of range"):
        load_graph(f"file:{tmp_path / 'bad.npz'}", cache=False)
    np.savez(tmp_path / "str.npz", indptr=np.array([0, 1, 1]), indices=np.array([1]),
             meta=np.array('{"format": "warpsweep-csr", "version": 1, "directed": "false"}'))
    with pytest.raises(GraphError, match="field 'directed' must be true or false, not 'false'"):
        load_graph(f"file:{tmp_path / 'str.npz'}", cache=False)


def test_scipy_npz_whose_shape_disagrees_with_indptr_is_refused(tmp_path) -> None:
    m = scipy.sparse.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]]))
    scipy.sparse.save_npz(tmp_path / "ok.npz", m, compressed=False)
    arrays = dict(np.load(tmp_path / "ok.npz"))
    assert load_graph(f"file:{tmp_path / 'ok.npz'}", cache=False).n == 3
    np.savez(tmp_path / "shape.npz", **{**arrays, "shape": np.array([5, 5])})
    with pytest.raises(GraphError, match=r"'shape' \(5, 5\) does not match its 'indptr' "
                                         r"\(3 rows\)"):
        load_graph(f"file:{tmp_path / 'shape.npz'}", cache=False)


# --------------------------------------------------------------------------- cache


def test_cache_hit_skips_parsing(tmp_path, monkeypatch) -> None:
    path = write(tmp_path, "c.gr", FILES["pace.gr"])
    first = load_graph(f"file:{path}")
    entries = list((tmp_path / "cache").glob("*.npz"))
    assert len(entries) == 1 and entries[0].name.startswith("c-")

    def boom(*args, **kwargs):
        raise AssertionError("parsed again despite the cache")

    monkeypatch.setattr(load_module, "read_edges", boom)
    again = load_graph(f"file:{path}")
    np.testing.assert_array_equal(again.indices, first.indices)
    assert again.spec == first.spec and again.name == first.name
    # Another spelling of the same path shares the entry but keeps its own spec string.
    monkeypatch.chdir(tmp_path)
    relative = load_graph("file:./c.gr")
    assert relative.spec == "file:./c.gr"
    with pytest.raises(AssertionError, match="parsed again"):
        load_graph(f"file:{path},weights=none,order=degree")  # a different graph: new entry
    with pytest.raises(AssertionError, match="parsed again"):
        load_graph(f"file:{path}", cache=False)


def test_cache_notices_a_changed_file(tmp_path) -> None:
    path = write(tmp_path, "c.txt", "1 2\n")
    assert load_graph(f"file:{path}").m == 2
    path.write_text("1 2\n2 3\n3 4\n")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    assert load_graph(f"file:{path}").m == 6


def test_cache_notices_new_bytes_under_the_old_size_and_time(tmp_path) -> None:
    """A file rewritten with bytes of the same length and its old modification time put back
    (`cp -p`, `rsync -a`, `touch -d`) is a new graph, in the cache and in its digest."""
    path = write(tmp_path, "c.txt", "0 1\n1 2\n2 3\n")
    old = path.stat()
    first = load_graph(f"file:{path}")
    assert first.degrees.max() == 2
    digest = content_digest(parse_spec(f"file:{path}"))
    path.write_text("0 1\n0 2\n0 3\n")
    os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (old.st_size, old.st_mtime_ns)
    assert load_graph(f"file:{path}").degrees.max() == 3
    assert content_digest(parse_spec(f"file:{path}")) != digest


def test_cache_is_keyed_by_the_code_that_builds_graphs_and_max_0_reads_nothing(
        tmp_path, monkeypatch) -> None:
    """A reader edited without a version bump had been served the graph the old reader
    built (half the edges apart, same commit and study), and `WARPSWEEP_CACHE_MAX=0`, which
    caches nothing, had still served it (probe REPRO)."""
    path = write(tmp_path, "c.txt", "1 2\n2 3\n")
    spec = parse_spec(f"file:{path}")
    generated = parse_spec("rmat:scale=6,seed=1")
    keys = graph_cache.cache_key(spec), graph_cache.cache_key(generated)
    with monkeypatch.context() as m:
        m.setattr(graph_cache, "builders_digest", lambda: "another reader")
        assert graph_cache.cache_key(spec) != keys[0]
        assert graph_cache.cache_key(generated) != keys[1]
    with monkeypatch.context() as m:
        m.setattr(graph_cache.np, "__version__", "0.0.1")
        assert graph_cache.cache_key(spec) != keys[0]  # (order=random draws from it too)
        assert graph_cache.cache_key(generated) != keys[1]
    assert {"load.py", "graph_spec.py"} <= set(graph_cache.BUILDERS)  # weights, relabelling
    built = []
    real = load_module.build_graph
    monkeypatch.setattr(load_module, "build_graph",
                        lambda parsed: built.append(parsed) or real(parsed))
    load_graph(spec)
    load_graph(spec)
    assert len(built) == 1  # the second from the cache
    monkeypatch.setenv("WARPSWEEP_CACHE_MAX", "0")
    load_graph(spec)
    assert len(built) == 2 and graph_cache.cache_path(spec).exists()


def test_cache_survives_corrupt_entries_and_unwritable_dirs(tmp_path, monkeypatch) -> None:
    path = write(tmp_path, "c.txt", "1 2\n2 3\n")
    spec = parse_spec(f"file:{path}")
    entry = graph_cache.cache_path(spec)
    entry.parent.mkdir(parents=True)
    entry.write_bytes(b"torn")
    assert load_graph(f"file:{path}").m == 4
    assert graph_cache.load_cached(spec) is not None  # rewritten
    assert not [p for p in entry.parent.iterdir() if p.suffix == ".tmp"]
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    monkeypatch.setenv("WARPSWEEP_CACHE_DIR", str(blocker / "sub"))
    assert load_graph(f"file:{path}").m == 4


def test_cache_dir_default_and_env(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("WARPSWEEP_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert graph_cache.cache_dir() == tmp_path / ".cache" / "warpsweep" / "graphs"
    monkeypatch.setenv("WARPSWEEP_CACHE_DIR", str(tmp_path / "x"))
    assert graph_cache.cache_dir() == tmp_path / "x"


def test_big_generated_graphs_are_cached(tmp_path, monkeypatch) -> None:
    assert not graph_cache.should_cache(parse_spec("grid2d:rows=10"))
    assert graph_cache.should_cache(parse_spec("rmat:scale=16"))
    monkeypatch.setattr(graph_cache, "MIN_GENERATED_EDGES", 1)
    g = load_graph("rmat:scale=8,seed=2")
    assert len(list((tmp_path / "cache").glob("rmat8-ef16-*.npz"))) == 1
    np.testing.assert_array_equal(load_graph("rmat:scale=8,seed=2").indices, g.indices)
    load_graph("rmat:scale=8,seed=3")
    assert len(list((tmp_path / "cache").glob("rmat8-ef16-*.npz"))) == 2


def test_the_cache_keeps_to_its_size_bound_dropping_the_least_recently_used(
        tmp_path, monkeypatch) -> None:
    """Entries had piled up without bound: every edited file and generator version leaves
    one that is never served again, and one 33-byte header wrote 1.2 GB (probe LL)."""
    monkeypatch.setattr(graph_cache, "MIN_GENERATED_EDGES", 1)
    cache = tmp_path / "cache"
    specs = [f"rmat:scale=8,seed={s}" for s in range(4)]
    load_graph(specs[0])
    (entry,) = cache.glob("*.npz")
    # three entries' files (another seed's has a few edges more), not four
    monkeypatch.setenv("WARPSWEEP_CACHE_MAX", str(3 * entry.stat().st_size + 3 * 4096))
    clock = iter(range(10**6, 2 * 10**6, 100))

    def age_all():  # one mtime each, ascending as used (the filesystem's may tie)
        for path in sorted(cache.glob("*.npz"), key=lambda p: p.stat().st_mtime_ns):
            t = next(clock)
            os.utime(path, (t, t))

    for spec in specs[1:3]:
        load_graph(spec)
        age_all()
    assert len(list(cache.glob("*.npz"))) == 3
    load_graph(specs[0])  # a hit: used now, so kept over the other two
    age_all()
    oldest = min(cache.glob("*.npz"), key=lambda p: p.stat().st_mtime)
    load_graph(specs[3])  # a fourth entry: the least recently used goes
    assert len(list(cache.glob("*.npz"))) == 3 and not oldest.exists()
    names = {graph_cache.cache_path(parse_spec(s)).name for s in specs}
    assert {p.name for p in cache.glob("*.npz")} <= names
    assert graph_cache.cache_path(parse_spec(specs[0])).exists()
    monkeypatch.setenv("WARPSWEEP_CACHE_MAX", str(entry.stat().st_size // 2))
    load_graph("rmat:scale=8,seed=9")  # larger than the bound: not cached, nothing evicted
    assert len(list(cache.glob("*.npz"))) == 3
    monkeypatch.setenv("WARPSWEEP_CACHE_MAX", "0")
    load_graph("rmat:scale=8,seed=10")
    assert len(list(cache.glob("*.npz"))) == 3
    monkeypatch.setenv("WARPSWEEP_CACHE_MAX", "lots")
    with pytest.raises(ConfigError, match="WARPSWEEP_CACHE_MAX='lots': expected a size"):
        load_graph("rmat:scale=8,seed=11")


def test_the_cache_counts_its_entries_files_not_their_arrays(tmp_path, monkeypatch) -> None:
    # room had been made for the arrays' bytes; the file, headers and metadata included, is
    # 1.4 KB more: a 1604-byte entry had stayed under a bound of 1024 (probe GRAPHS)
    monkeypatch.setattr(graph_cache, "MIN_GENERATED_EDGES", 1)
    cache = tmp_path / "cache"
    g = load_graph("rmat:scale=4,seed=0")
    (entry,) = cache.glob("*.npz")
    arrays = g.indptr.nbytes + g.indices.nbytes
    assert entry.stat().st_size > arrays
    entry.unlink()
    monkeypatch.setenv("WARPSWEEP_CACHE_MAX", str(arrays + 1))
    load_graph("rmat:scale=4,seed=0")
    assert sum(p.stat().st_size for p in cache.glob("*.npz")) <= arrays + 1


def test_making_room_removes_cache_entries_alone_and_counts_writes_under_way(
        tmp_path, monkeypatch) -> None:
    """Making room had removed any *.npz of the cache directory by age: a graph the user had
    converted into it went without a word (probe CACHE); and temp files of writes (killed
    ones linger an hour) had not counted toward the bound."""
    monkeypatch.setattr(graph_cache, "MIN_GENERATED_EDGES", 1)
    cache = tmp_path / "cache"
    load_graph("rmat:scale=8,seed=0")
    (entry,) = cache.glob("*.npz")
    size = entry.stat().st_size
    mine = cache / "astro.npz"
    mine.write_bytes(b"x" * size)
    os.utime(mine, (1, 1))  # older than any entry
    monkeypatch.setenv("WARPSWEEP_CACHE_MAX", str(2 * size + size // 2))
    load_graph("rmat:scale=8,seed=1")
    assert mine.exists() and len(list(cache.glob("*.npz"))) == 3
    (cache / ".rmat8.npz.123.tmp").write_bytes(b"x" * size)  # a write under way
    load_graph("rmat:scale=8,seed=2")  # room for it means dropping both older entries
    assert mine.exists() and (cache / ".rmat8.npz.123.tmp").exists()
    assert {p.name for p in cache.glob("*.npz")} == {
        "astro.npz", graph_cache.cache_path(parse_spec("rmat:scale=8,seed=2")).name}
    # writes alone leaving no room: nothing removed, nothing stored (probe CR3: every entry
    # had gone, and the new one was stored past the bound)
    (cache / ".big.npz.9.tmp").write_bytes(b"x" * 2 * size)
    load_graph("rmat:scale=8,seed=3")
    assert {p.name for p in cache.glob("*.npz")} == {
        "astro.npz", graph_cache.cache_path(parse_spec("rmat:scale=8,seed=2")).name}


# --------------------------------------------------------------------------- real graphs


def _shared(name: str) -> Path:
    path = SHARED_GRAPHS / name
    if not path.exists():
        pytest.skip(f"shared graph {path} not present (needs the project's shared/ folder)")
    return path


def test_real_snap_graph_against_an_independent_parse() -> None:
    path = _shared("p2p-Gnutella08.txt.gz")
    with gzip.open(path, "rt") as fh:
        pairs = np.loadtxt(fh, comments="#", dtype=np.int64)
    directed = load_graph(f"file:{path},directed=true", cache=False)
    assert directed.n == 6301 and directed.m == 20777 == len(pairs)
    np.testing.assert_array_equal(directed.degrees, np.bincount(pairs[:, 0], minlength=6301))
    g = load_graph(f"file:{path}", cache=False)
    lo, hi = pairs.min(axis=1), pairs.max(axis=1)
    unique = np.unique(lo[lo != hi] * 6301 + hi[lo != hi])
    assert g.m == 2 * unique.size
    np.testing.assert_array_equal(
        g.degrees, np.bincount(np.concatenate([unique // 6301, unique % 6301]), minlength=6301)
    )


def _sources_table() -> dict[str, int]:
    """file name -> node count, from the summary table of shared/graphs/SOURCES.md."""
    text = (_shared("SOURCES.md")).read_text()
    rows = re.findall(r"^\| `([^`]+)` \| [^|]+ \| ([\d,]+)", text, flags=re.M)
    return {name: int(nodes.replace(",", "")) for name, nodes in rows}


# Undirected edge counts stated in SOURCES.md (distinct non-loop pairs).
KNOWN_PAIRS = {
    "email-Enron.txt.gz": 183_831,
    "ca-AstroPh.txt.gz": 198_050,
    "USA-road-FLA.gr.gz": 1_343_951,
    "USA-road-NY.gr.gz": 365_050,
}


@pytest.mark.slow
def test_every_shared_graph_loads_with_its_documented_node_count() -> None:
    table = _sources_table()
    files = sorted(p.name for p in SHARED_GRAPHS.iterdir() if p.name != "SOURCES.md")
    assert files and set(files) == set(table), "SOURCES.md and the folder disagree"
    for name in files:
        g = load_graph(f"file:{SHARED_GRAPHS / name}", cache=False)
        assert g.n == table[name], name
        if name in KNOWN_PAIRS:
            assert g.m == 2 * KNOWN_PAIRS[name], name


def test_npz_weights_are_read_only_when_asked_for(tmp_path) -> None:
    """A scipy matrix's values serve BFS whatever they are (a boolean adjacency, signed
    entries); with weights=file they must be weights."""
    adjacency = scipy.sparse.csr_matrix(np.array([[0, 1, 1], [0, 0, 1], [0, 0, 0]],
                                                 dtype=bool))
    scipy.sparse.save_npz(tmp_path / "bool.npz", adjacency)
    g = load_graph(f"file:{tmp_path / 'bool.npz'},directed=true", cache=False)
    assert g.weights is None and edge_set(g) == {(0, 1), (0, 2), (1, 2)}
    with pytest.raises(GraphError, match="has no weights"):
        load_graph(f"file:{tmp_path / 'bool.npz'},weights=file", cache=False)
    scipy.sparse.save_npz(tmp_path / "signed.npz", scipy.sparse.csr_matrix(
        np.array([[0, -2.0], [3.0, 0]])))
    g = load_graph(f"file:{tmp_path / 'signed.npz'},directed=true", cache=False)
    assert g.weights is None and g.m == 2
    with pytest.raises(GraphError, match="negative edge weight -2"):
        load_graph(f"file:{tmp_path / 'signed.npz'},directed=true,weights=file", cache=False)


def test_a_cache_entry_is_served_only_under_the_key_it_was_written_for(tmp_path) -> None:
    """An entry copied over another file's entry name had been served as that file's graph
    (exit 0; tune wrote it into the results)."""
    a = write(tmp_path, "A.txt", "0 1\n1 2\n2 3\n")
    b = write(tmp_path, "B.txt", "0 1\n0 2\n0 3\n0 4\n1 4\n")
    assert load_graph(f"file:{a}").m == 6 and load_graph(f"file:{b}").m == 10
    entry_a = graph_cache.cache_path(parse_spec(f"file:{a}"))
    entry_b = graph_cache.cache_path(parse_spec(f"file:{b}"))
    entry_a.write_bytes(entry_b.read_bytes())
    assert load_graph(f"file:{a}").m == 6  # B's entry refused, A parsed again


def test_a_file_modified_within_the_racy_window_is_not_cached(tmp_path, monkeypatch) -> None:
    """On a filesystem of one-second timestamps a same-size rewrite within the second after a
    load left the file's size and times as they were: its old graph had been served for
    good. A file that recent is parsed, not cached, nor its content digest kept."""
    monkeypatch.setattr(graph_cache, "RACY_S", 3600.0)
    path = write(tmp_path, "T.txt", "0 1\n1 2\n")
    spec = parse_spec(f"file:{path}")
    load_graph(f"file:{path}")
    assert graph_cache.cache_path(spec) is None
    assert not any((tmp_path / "cache").glob("*.npz"))
    before = graph_cache.content_digest(spec)
    stat = path.stat()
    path.write_text("0 2\n1 2\n")  # same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # a coarse clock: the same time
    assert graph_cache.content_digest(spec) != before
    assert edge_set(load_graph(f"file:{path}")) == undirected([(0, 2), (1, 2)])


def test_a_write_killed_before_its_rename_is_cleared_by_a_later_one(tmp_path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    old = cache / ".g.npz.abc123.tmp"
    old.write_bytes(b"x" * 100)
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    fresh = cache / ".h.npz.def456.tmp"  # a writer may still be filling it
    fresh.write_bytes(b"y")
    path = write(tmp_path, "g.txt", "0 1\n1 2\n")
    load_graph(f"file:{path}")
    assert not old.exists() and fresh.exists()


@pytest.mark.parametrize("compress, kind", [("bz2", "bzip2"), ("lzma", "xz")])
def test_a_file_compressed_other_than_by_gzip_is_named(tmp_path, compress, kind) -> None:
    """It had been parsed as text: an 'unexpected character' error printing raw bytes."""
    import importlib

    module = importlib.import_module(compress)
    path = tmp_path / f"g.txt.{compress}"
    path.write_bytes(module.compress(b"0 1\n1 2\n"))
    with pytest.raises(GraphError, match=f"is {kind}-compressed; graph files are read plain"):
        load_graph(f"file:{path}", cache=False)


@pytest.mark.parametrize("name, comment, data", [
    ("long.dat", "# note", "0 1\n1 2\n"),  # format from the first data line
    ("long.gr", "c note", "p sp 3 2\na 1 2 1\na 2 3 1\n"),  # the problem line
])
def test_a_long_comment_block_does_not_hide_the_data(tmp_path, name, comment, data) -> None:
    """Only the first 1,000 (10,000 for .gr) lines had been searched: a valid file with a
    longer comment block was refused as empty, or as a .gr without a problem line."""
    path = write(tmp_path, name, f"{comment}\n" * 12_000 + data)
    assert edge_set(load_graph(f"file:{path}", cache=False)) == undirected([(0, 1), (1, 2)])


def test_a_token_numpy_cannot_read_is_named_with_its_line(tmp_path) -> None:
    """float() takes 1_0, so the search for the bad token found none: no line, no token."""
    path = write(tmp_path, "u.txt", "1 2\n2 3\n3 1_0\n")
    with pytest.raises(GraphError, match=r"line 3: cannot read '1_0' as a number"):
        load_graph(f"file:{path}", cache=False)


def test_a_symlink_that_leads_nowhere_is_named_as_such(tmp_path) -> None:
    (tmp_path / "a.txt").symlink_to("b.txt")
    (tmp_path / "b.txt").symlink_to("a.txt")
    (tmp_path / "d.txt").symlink_to("nowhere.txt")
    with pytest.raises(GraphError, match="symlink loop"):
        load_graph(f"file:{tmp_path / 'a.txt'}", cache=False)
    with pytest.raises(GraphError, match="broken symlink: .* -> nowhere.txt"):
        load_graph(f"file:{tmp_path / 'd.txt'}", cache=False)


def test_a_metis_edge_weighed_otherwise_at_its_two_ends_is_refused(tmp_path) -> None:
    """The lower of the two weights had been kept without a word."""
    path = write(tmp_path, "w.graph", "3 2 1\n2 5\n1 4 3 7\n2 7\n")
    with pytest.raises(GraphError, match="vertex 1 gives its edge to 2 weight 5, vertex 2 "
                                         r"\(line 3\) weight 4"):
        load_graph(f"file:{path},weights=file", cache=False)
    path = write(tmp_path, "ok.graph", "3 2 1\n2 5\n1 5 3 7\n2 7\n")
    g = load_graph(f"file:{path},weights=file", cache=False)
    assert sorted(g.weights.tolist()) == [5, 5, 7, 7]


def test_a_header_declaring_more_vertices_than_int32_ids_is_refused_as_such(tmp_path) -> None:
    """It had been refused as a memory problem, pointing at a limit no raise would help."""
    path = write(tmp_path, "huge.gr", "p sp 3000000000 1\na 1 2 4\n")
    with pytest.raises(GraphError, match="declares 3,000,000,000 vertices; at most "
                                         "2,147,483,647 .vertex ids are int32"):
        load_graph(f"file:{path}", cache=False)


def test_a_csv_header_says_which_end_is_the_source_and_which_column_the_weight(tmp_path):
    """Read by position, `to,from` had loaded a directed graph reversed and
    `source,target,count,weight` had taken `count` for the weights."""
    def load(name: str, text: str, options: str = "") -> Graph:
        path = tmp_path / name
        path.write_text(text)
        return load_graph(f"file:{path},directed=true{options}")

    reverse = load("r.csv", "to,from\n1,0\n2,1\n")
    assert reverse.indices.tolist() == [1, 2] and reverse.indptr.tolist() == [0, 1, 2, 2]
    named = load("w.csv", "source,target,count,weight\n0,1,9,5\n1,2,8,7\n", ",weights=file")
    assert named.weights.tolist() == [5.0, 7.0]
    third = load("v.csv", "source,target,value\n0,1,3\n1,2,4\n", ",weights=file")
    assert third.weights.tolist() == [3.0, 4.0]
    with pytest.raises(GraphError, match="names no weight column among 2 beside the ends"):
        load("x.csv", "source,target,count,extra\n0,1,9,5\n1,2,8,7\n", ",weights=file")
    assert load("x.csv", "source,target,count,extra\n0,1,9,5\n1,2,8,7\n").m == 2
    # two weight-like names: `weight` before `length` (`length` had been taken, first in
    # the file), and two of one rank are refused rather than one taken
    both = load("l.csv", "source,target,length,weight\n0,1,1,100\n1,2,1,100\n",
                ",weights=file")
    assert both.weights.tolist() == [100.0, 100.0]
    with pytest.raises(GraphError, match=r"names 2 weight columns \(cost, length\)"):
        load("c.csv", "source,target,cost,length\n0,1,1,100\n1,2,1,100\n", ",weights=file")
    assert load("c.csv", "source,target,cost,length\n0,1,1,100\n1,2,1,100\n").m == 2


def _with_member(path: Path, name: str, shape: tuple, dtype=np.int64, replace: bool = False):
    """``path`` (an .npz) with a member ``name`` whose header declares ``shape`` and that
    holds no data (``replace``: in place of the member of that name)."""
    import io
    import zipfile

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": np.dtype(dtype).str, "fortran_order": False, "shape": shape})
    out = path.with_name(path.stem + f"-{name}.npz")
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            if not (replace and info.filename == name + ".npy"):
                dst.writestr(info, src.read(info))
        dst.writestr(name + ".npy", header.getvalue())
    return out


def test_an_npz_member_header_is_held_to_the_bytes_it_holds(tmp_path):
    # numpy allocates a member's declared shape before reading it: an unused member or a
    # damaged header had cost GBs (a MemoryError traceback, or a cache entry breaking every
    # verb of its graph; probe LL)
    path = tmp_path / "g.npz"
    save_npz(Graph.from_edges([0, 1], [1, 2], 3), path)
    extra = _with_member(path, "junk", (10**9,))  # not one of a CSR's arrays: left unread
    assert read_npz(extra).n == 3
    lying = _with_member(path, "indices", (10**12,), np.int32, replace=True)
    with pytest.raises(GraphError, match="'indices' declares shape \\(1000000000000,\\)"):
        read_npz(lying)


def test_a_gzip_file_is_held_to_the_limit_as_it_decompresses(tmp_path, monkeypatch):
    # a gzip trailer gives the size modulo 4 GiB: one past it passed the size check and was
    # inflated whole (probe LL: 4.5 GB of zeros read as 404 MB). A trailer that lies does
    # the same in small; the read stops once the text outgrows the limit.
    path = tmp_path / "bomb.txt.gz"
    packed = bytearray(gzip.compress(b"0 1\n" + b"\n" * (60 << 20)))
    packed[-4:] = (1000).to_bytes(4, "little")  # ISIZE: 1000 bytes
    path.write_bytes(bytes(packed))
    monkeypatch.setenv("WARPSWEEP_MAX_MEMORY", "100M")
    with pytest.raises(GraphError, match="decompresses to more than 20.0 MB"):
        load_graph(f"file:{path}", cache=False)
    # several members, and zero padding after the last, read as gzip reads them
    many = tmp_path / "many.txt.gz"
    many.write_bytes(gzip.compress(b"0 1\n1 2\n") + gzip.compress(b"2 3\n") + b"\0" * 8)
    assert load_graph(f"file:{many}", cache=False).n == 4
    many.write_bytes(gzip.compress(b"0 1\n") + b"junk")
    with pytest.raises(GraphError, match="corrupt gzip file"):
        load_graph(f"file:{many}", cache=False)


# probe G27: an indented % comment, content in a .txt file, a ~user with no home


def test_an_indented_metis_comment_counts_as_a_comment_in_the_sniffing(tmp_path) -> None:
    """The readers skip an indented ``%`` line; the sniffer had counted it a vertex line, so
    an ambiguous 4-cycle read as another edge list and a plain METIS star was refused."""
    both = "4 4\n2 4\n1 3\n{}2 4\n1 3\n"
    for comment in ("% note\n", "  % note\n", "\t% note\n"):
        with pytest.raises(GraphError, match="cannot tell the format"):
            name = f"cyc{len(comment)}"
            load_graph(f"file:{write(tmp_path, name, both.format(comment))}")
    star = write(tmp_path, "star", "4 3\n2 3 4\n  % note\n1\n1\n1\n")
    assert detect_format(star, star.read_bytes()) == "metis"
    graph = load_graph(f"file:{star}")
    assert (graph.n, graph.m) == (4, 6)


@pytest.mark.parametrize("text", ["0,1\n1,2\n", "p sp 3 2\na 1 2 1\na 2 3 1\n",
                                  "%%MatrixMarket matrix coordinate pattern general\n"
                                  "3 3 2\n1 2\n2 3\n"])
def test_a_txt_file_is_read_by_its_content_as_one_without_an_extension(tmp_path,
                                                                       text) -> None:
    plain = load_graph(f"file:{write(tmp_path, 'noext', text)}")
    named = load_graph(f"file:{write(tmp_path, 'named.txt', text)}")
    assert (named.n, named.m) == (plain.n, plain.m) == (3, 4 if "," in text else 2 * 2)
    assert np.array_equal(named.indices, plain.indices)


def _no_such_user() -> str:
    name = "~warpsweep_no_such_user_27"
    try:
        Path(name).expanduser()
    except RuntimeError:
        return name
    pytest.skip(f"{name} names a user here")


def test_a_file_spec_under_a_user_with_no_home_is_refused_in_one_line(tmp_path) -> None:
    user = _no_such_user()
    with pytest.raises(GraphError, match=f"cannot expand '{user}': no such user"):
        load_graph(f"file:{user}/g.txt")
    from tuner.cli import main

    assert main(["graph", "info", f"file:{user}/g.txt"]) == 2


def test_a_cache_dir_under_a_user_with_no_home_caches_nothing(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("WARPSWEEP_CACHE_DIR", f"{_no_such_user()}/cache")
    assert graph_cache.cache_dir() is None
    path = write(tmp_path, "g.txt", "0 1\n1 2\n")
    assert load_graph(f"file:{path}").m == 4
    assert graph_cache.store(parse_spec(f"file:{path}"), load_graph(f"file:{path}")) is None


@pytest.mark.parametrize("zero", ["0", "0B", "0G", "00", "0.0"])
def test_any_spelling_of_zero_caches_nothing(monkeypatch, zero) -> None:
    monkeypatch.setenv("WARPSWEEP_CACHE_MAX", zero)
    assert graph_cache.cache_limit() == 0


def test_the_adaptive_cache_under_a_user_with_no_home_is_refused_in_one_line(monkeypatch):
    from tuner.selection import adaptive

    monkeypatch.setenv("WARPSWEEP_CACHE", _no_such_user())
    with pytest.raises(ConfigError, match="WARPSWEEP_CACHE '.*': no such user"):
        adaptive.cache_dir()


def test_a_small_gzip_file_is_sized_by_its_content_not_ten_times_its_bytes(tmp_path) -> None:
    from simulator.sizes import _head

    plain = b"0 1\n1 2\n2 0\n"
    path = write(tmp_path, "tiny.txt", plain, gz=True)
    assert path.stat().st_size > len(plain)  # gzip's header makes it the larger
    assert _head(path) == (plain, len(plain))
