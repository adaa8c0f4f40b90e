"""bench/pair_ratios.py: two simulators' ratios of paired configurations against measured."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "pair_ratios.py"


def sims(path: Path, times: dict[tuple[str, str], float]) -> Path:
    path.write_text("".join(
        json.dumps({"key": f"{graph}|cc|-1|{config}|dev|code", "sim": [t, 3]}) + "\n"
        for (graph, config), t in times.items()))
    return path


def test_pairs_closer_further_and_the_summed_error(tmp_path):
    block, atomic = "mapping=vwarp,w=8,driven=data,push=block", "mapping=vwarp,w=8,driven=data"
    atomic += ",push=atomic"
    # measured block / atomic: g1 1.0 (its slower variant's 5.0 left out), g2 2.0; g3 has
    # no atomic row, so no pair; the thread row is no block push
    rows = [("g1", block, 10.0), ("g1", block, 50.0), ("g1", atomic, 10.0),
            ("g2", block, 20.0), ("g2", atomic, 10.0), ("g3", block, 1.0),
            ("g1", "mapping=thread", 7.0)]
    table = pa.table({"graph_spec": [r[0] for r in rows], "algorithm": ["cc"] * 7,
                      "source": [-1] * 7, "config": [r[1] for r in rows],
                      "time_us": [r[2] for r in rows], "correct": [True] * 7})
    pq.write_table(table, tmp_path / "r.parquet")
    # old ratios 2.0 and 2.0, new 1.0 and 4.0: g1 closer (log 2 -> 0), g2 further (0 -> log 2)
    old = sims(tmp_path / "old.jsonl", {("g1", block): 2.0, ("g1", atomic): 1.0,
                                        ("g2", block): 2.0, ("g2", atomic): 1.0})
    new = sims(tmp_path / "new.jsonl", {("g1", block): 1.0, ("g1", atomic): 1.0,
                                        ("g2", block): 4.0, ("g2", atomic): 1.0})
    out = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "r.parquet"), str(old),
                          str(new), "--knob", "push=block", "--against", "push=atomic"],
                         capture_output=True, text=True, check=True).stdout
    line = next(x for x in out.splitlines() if x.startswith("cc "))
    closer, further, same, before, after = line.split()[1:]
    assert (closer, further, same) == ("1", "1", "0")
    assert math.isclose(float(before), math.log(2), abs_tol=0.01)
    assert math.isclose(float(after), math.log(2), abs_tol=0.01)
    pairs = [x for x in out.splitlines() if x.startswith("  cc ")]
    assert len(pairs) == 2 and "g3" not in out
