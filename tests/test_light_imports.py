"""The verbs meant for a GPU machine (``measure``, ``calibrate``) and the calibration and
fidelity code load without Optuna, Ray and DuckDB: such a machine often has none of them."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

BLOCKER = """
import sys
class Refuse:
    def find_spec(self, name, path, target=None):
        if name.split('.')[0] in ('optuna', 'ray', 'duckdb'):
            raise ImportError('refused in this test: ' + name)
sys.meta_path.insert(0, Refuse())
sys.path[:0] = [{root!r}, {bench!r}]
import tuner.cli.measure, tuner.cli.calibrate, tuner.calibration.heldout
import fidelity, implementation_fidelity, catalog_fidelity
import argparse
parser = argparse.ArgumentParser()
tuner.cli.calibrate.register(parser.add_subparsers())
parser.parse_args(['calibrate', '--help'])
"""


def test_gpu_side_loads_without_optuna_ray_duckdb():
    code = BLOCKER.format(root=str(ROOT), bench=str(ROOT / "bench"))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert "refused in this test" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    assert "--seed" in done.stdout
