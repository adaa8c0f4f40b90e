"""bench/launch_rows.py: two simulators' launch counts judged row by row against measured ones."""

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "launch_rows.py"


def sims(path: Path, launches: dict[str, int]) -> Path:
    path.write_text("".join(
        json.dumps({"key": f"g|cc|-1|{config}|dev|code", "sim": [1.0, n]}) + "\n"
        for config, n in launches.items()))
    return path


def test_rows_closer_further_and_the_summed_error(tmp_path):
    # measured 10 (its faster variant; the slower one says 99), 20, 30; chunked rows only
    rows = [("mapping=vwarp,w=8,chunk=4", "a", 10, 1.0),
            ("mapping=vwarp,w=8,chunk=4", "b", 99, 2.0),
            ("mapping=wer,chunk=16", "a", 20, 1.0),
            ("mapping=vwarp,w=32,chunk=4", "a", 30, 1.0),
            ("mapping=thread", "a", 5, 1.0)]
    table = pa.table({"graph": ["G"] * 5, "graph_spec": ["g"] * 5, "algorithm": ["cc"] * 5,
                      "source": [-1] * 5, "config": [r[0] for r in rows],
                      "variant": [r[1] for r in rows], "launches": [r[2] for r in rows],
                      "time_us": [r[3] for r in rows], "correct": [True] * 5})
    pq.write_table(table, tmp_path / "r.parquet")
    old = sims(tmp_path / "old.jsonl", {"mapping=vwarp,w=8,chunk=4": 7,
                                        "mapping=wer,chunk=16": 20,
                                        "mapping=vwarp,w=32,chunk=4": 31})
    new = sims(tmp_path / "new.jsonl", {"mapping=vwarp,w=8,chunk=4": 10,
                                        "mapping=wer,chunk=16": 24,
                                        "mapping=vwarp,w=32,chunk=4": 29})
    out = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "r.parquet"), str(old),
                          str(new), "--configs", "chunk="], capture_output=True, text=True,
                         check=True).stdout
    # errors old 3, 0, 1 -> new 0, 4, 1
    assert "cc: 1 rows closer, 1 further, 1 as far; summed |simulated - measured| 4 -> 5" in out
    assert "mapping=wer,chunk=16" in out and "mapping=vwarp,w=32,chunk=4 " not in out
