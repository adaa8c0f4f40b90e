"""``warpsweep graph info`` and ``graph convert``: output, round trip, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from simulator.load import load_graph
from tuner.cli import main

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("WARPSWEEP_CACHE_DIR", str(tmp_path / "cache"))


def test_info_json(capsys) -> None:
    assert main(["graph", "info", "grid2d:rows=3,cols=4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["spec"] == "grid2d:rows=3,cols=4"
    assert out["name"] == "grid2d-3x4"
    assert out["n"] == 12 and out["m"] == 34
    assert out["max_degree"] == 4 and out["est_diameter"] == 5


def test_info_table(capsys) -> None:
    assert main(["graph", "info", "rmat:scale=8,seed=1", "--no-cache"]) == 0
    lines = capsys.readouterr().out.splitlines()
    table = dict(line.split(None, 1) for line in lines)
    assert table["spec"] == "rmat:scale=8,ef=16,a=0.57,b=0.19,c=0.19,seed=1"
    assert table["n"] == "256"
    assert "degree_gini" in table and "est_diameter" in table
    assert table["load"].startswith("time")


def test_convert_round_trip(tmp_path, capsys) -> None:
    out = tmp_path / "g.npz"
    spec = "road:rows=20,cols=30,weights=random,seed=4"
    assert main(["graph", "convert", spec, str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    original = load_graph(spec, cache=False)
    back = load_graph(f"file:{out},weights=file", cache=False)
    np.testing.assert_array_equal(back.indptr, original.indptr)
    np.testing.assert_array_equal(back.indices, original.indices)
    np.testing.assert_array_equal(back.weights, original.weights)
    assert main(["graph", "info", f"file:{out}", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 600


def test_convert_names_the_spec_that_reads_a_directed_graph_back(tmp_path, capsys) -> None:
    """A file spec is undirected unless it says directed=true, whatever the file records:
    convert names the spec that reads a directed graph back as it was."""
    out = tmp_path / "d.npz"
    spec = "rmat:scale=8,directed=true,seed=2"
    assert main(["graph", "convert", spec, str(out)]) == 0
    assert f"read it as file:{out},directed=true" in capsys.readouterr().out
    original = load_graph(spec, cache=False)
    back = load_graph(f"file:{out},directed=true", cache=False)
    assert back.directed and back.m == original.m
    np.testing.assert_array_equal(back.indices, original.indices)
    assert not load_graph(f"file:{out}", cache=False).directed


@pytest.mark.parametrize("spec", ["rmat:scale=7,directed=true,weights=random",
                                  "rmat:scale=7,weights=random"])
def test_convert_names_the_spec_that_reads_the_weights_back(tmp_path, capsys, spec) -> None:
    """The spec it named (directed=true alone) read a weighted graph back without weights."""
    out = tmp_path / "w.npz"
    assert main(["graph", "convert", spec, str(out)]) == 0
    named = capsys.readouterr().out.split("read it as ")[1].rstrip(")\n")
    back, original = load_graph(named, cache=False), load_graph(spec, cache=False)
    assert back.directed == original.directed
    np.testing.assert_array_equal(back.weights, original.weights)


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("nonsense:x=1", "unknown kind 'nonsense'"),
        ("rmat:scale=3,bogus=1", "unknown key 'bogus'"),
        ("file:/no/such/file.mtx", "file not found"),
    ],
)
def test_bad_specs_give_one_line_and_exit_2(capsys, spec: str, fragment: str) -> None:
    assert main(["graph", "info", spec]) == 2
    err = capsys.readouterr().err
    assert err.startswith("warpsweep: error: ")
    assert fragment in err
    assert len(err.strip().splitlines()) == 1


def test_malformed_file_reports_its_line(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.mtx"
    bad.write_text("%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n9 1\n")
    assert main(["graph", "convert", f"file:{bad}", str(tmp_path / "o.npz")]) == 2
    err = capsys.readouterr().err
    assert "line 4" in err and "vertex id 9 out of range 1..3" in err and str(bad) in err
    assert not (tmp_path / "o.npz").exists()


def one_error_line(capsys) -> str:
    """The single stderr line of a failed command."""
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("warpsweep: error: "), lines
    return lines[0]


def test_convert_output_errors_name_the_output(tmp_path, capsys, monkeypatch) -> None:
    (tmp_path / "base.txt").write_text("")
    out = tmp_path / "base.txt" / "x.npz"
    assert main(["graph", "convert", "rmat:scale=5", str(out)]) == 2
    line = one_error_line(capsys)
    assert f"cannot write {str(out)!r}" in line and "is not a directory" in line

    def full_disk(graph, path):
        raise OSError(28, "No space left on device", str(tmp_path / ".o.npz.x1y2.tmp"))

    monkeypatch.setattr("tuner.cli.graph.save_npz", full_disk)
    out = tmp_path / "o.npz"
    assert main(["graph", "convert", "rmat:scale=5", str(out)]) == 2
    assert one_error_line(capsys).endswith(f"cannot write {str(out)!r}: No space left on device")


def test_convert_refuses_to_overwrite_its_input(tmp_path, capsys, monkeypatch) -> None:
    path = tmp_path / "w.npz"
    assert main(["graph", "convert", "rmat:scale=5", str(path)]) == 0
    before = path.read_bytes()
    monkeypatch.chdir(tmp_path)
    assert main(["graph", "convert", "file:w.npz,directed=true", str(tmp_path / "w.npz")]) == 2
    assert "is the input file itself" in one_error_line(capsys)
    assert path.read_bytes() == before


def test_convert_refuses_to_replace_a_file_unless_forced(tmp_path, capsys) -> None:
    # a user's own .npz (or a text file so named) had been replaced without a word (probe OUT)
    path = tmp_path / "mine.npz"
    path.write_bytes(b"not a graph")
    assert main(["graph", "convert", "rmat:scale=5", str(path)]) == 2
    assert f"output {str(path)!r} exists; pass --force" in one_error_line(capsys)
    assert path.read_bytes() == b"not a graph"
    assert main(["graph", "convert", "rmat:scale=5", str(path), "--force"]) == 0
    capsys.readouterr()
    assert load_graph(f"file:{path}", cache=False).n == 32


def test_graph_info_says_directed_as_a_boolean(capsys) -> None:
    assert main(["graph", "info", "rmat:scale=5,directed=true", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["directed"] is True
    assert main(["graph", "info", "rmat:scale=5"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("directed"))
    assert line.split() == ["directed", "false"]


def test_console_entry_point_exit_code(tmp_path) -> None:
    env = {"WARPSWEEP_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(REPO), "PATH": ""}
    done = subprocess.run(
        [sys.executable, "-m", "tuner.cli", "graph", "info", "road:rows=4,keep=2"],
        capture_output=True, text=True, cwd=REPO, env=env, check=False,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "keep=2 out of range" in done.stderr


@pytest.mark.parametrize("blank", ["", " ", "\t"])
def test_a_blank_cache_variable_is_unset(monkeypatch, tmp_path, blank):
    """A blank WARPSWEEP_CACHE_DIR or WARPSWEEP_VERIFIED_CACHE had made a directory named
    " " in the working directory."""
    from pathlib import Path

    from simulator.graph_cache import cache_dir
    from tuner.results.damaged import _verified_path

    monkeypatch.setenv("WARPSWEEP_CACHE_DIR", blank)
    monkeypatch.setenv("WARPSWEEP_VERIFIED_CACHE", blank)
    assert cache_dir() == Path.home() / ".cache" / "warpsweep" / "graphs"
    assert _verified_path(str(tmp_path), "trials").parent == (
        Path.home() / ".cache" / "warpsweep" / "verified")
