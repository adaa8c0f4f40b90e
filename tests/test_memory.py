"""Freed large arrays are reused by the process rather than faulted in afresh."""

import os
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


HUGE_PAGE_ADVICE_AFTER = """
import sys

import numpy as np

from tuner.memory import keep_freed_memory

if sys.argv[1] == "keep":
    assert keep_freed_memory()
print(np._core.multiarray._set_madvise_hugepage(False))  # returns the setting it replaces
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_kept_memory_skips_numpys_huge_page_advice():
    """numpy advises huge pages for its big arrays (forced on here by its import-time
    variable); keeping freed memory turns that off, as the memory module says."""
    env = {**os.environ, "NUMPY_MADVISE_HUGEPAGE": "1"}
    outputs = {}
    for mode in ("default", "keep"):
        out = subprocess.run([sys.executable, "-c", HUGE_PAGE_ADVICE_AFTER, mode], env=env,
                             capture_output=True, text=True, check=True)
        outputs[mode] = out.stdout.strip()
    assert outputs == {"default": "True", "keep": "False"}
