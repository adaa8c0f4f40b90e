"""bench/catalog_fidelity.py keeps every current simulation in its --sims file, also those of
the algorithms a run leaves out, and drops another simulator's."""

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "catalog_fidelity.py"
sys.path.insert(0, str(ROOT / "bench"))

from catalog_fidelity import sim_key  # noqa: E402


def test_a_run_of_one_algorithm_keeps_the_others_simulations(tmp_path):
    spec = "rmat:scale=6,ef=4,seed=1"
    configs = ["mapping=thread", "mapping=vwarp,w=8", "mapping=vwarp,w=32"]
    rows = [{"graph": "g", "graph_spec": spec, "algorithm": algorithm, "source": -1,
             "config": config, "variant": "", "time_us": 10.0 + i, "correct": True,
             "m": 512, "gpu_name": "GPU", "launches": 3}
            for algorithm in ("cc", "pagerank") for i, config in enumerate(configs)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "r.parquet")
    device = str(ROOT / "bench" / "gpu" / "results" / "h100.toml")
    current = [json.dumps({"key": sim_key(r, device), "sim": [1.0 + i, 3]})
               for i, r in enumerate(rows)]
    stale = json.dumps({"key": sim_key(rows[0], device).rsplit("|", 1)[0] + "|0123456789abcdef",
                        "sim": [5.0, 3]})
    sims = tmp_path / "s.jsonl"
    sims.write_text("\n".join([*current, stale]) + "\n")
    out = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "r.parquet"),
                          "--sims", str(sims), "--device", device, "--algorithms", "cc"],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert "cc summary" in out and "pagerank summary" not in out
    kept = sims.read_text().splitlines()
    assert sorted(kept) == sorted(current)  # nothing simulated, nothing of pagerank lost
