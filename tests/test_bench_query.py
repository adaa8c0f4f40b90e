"""bench/bench_query.py runs against the current schema: its synthetic rows are written through
the store's schema, so a column the schema gains must not break it (it had, on
device_digest)."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_bench_query_runs_on_a_small_synthetic_results_directory(tmp_path):
    done = subprocess.run(
        [sys.executable, "bench/bench_query.py", "--rows", "3000", "--graphs", "3",
         "--repeat", "1", "--dir", str(tmp_path / "results")],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "rows counted: 3000" in done.stdout
    assert "every query answered in under" in done.stdout
