"""Freed large arrays are reused by the process rather than faulted in afresh."""

import subprocess
import sys

import pytest

FAULTS_ON_REALLOCATION = """
import resource
import sys

import numpy as np

from tuner.memory import keep_freed_memory

if sys.argv[1] == "keep":
    assert keep_freed_memory() and keep_freed_memory()
words = 64 << 17  # 64 MB of float64
np.ones(words)  # touched, then freed at once
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
np.ones(words)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", FAULTS_ON_REALLOCATION, mode],
                         capture_output=True, text=True, check=True)
    return int(out.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_kept_memory_is_reused_without_page_faults():
    """By default a 64 MB array is mapped anew and every page of it faults (32 faults with
    2 MB huge pages, 16384 with 4 KB ones); kept, the second array reuses the first's pages."""
    fresh = _faults("default")
    kept = _faults("keep")
    assert fresh >= 32
    assert kept < fresh / 8
