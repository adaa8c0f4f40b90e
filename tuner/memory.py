"""How this process hands memory back: the simulator allocates and frees arrays of hundreds of
megabytes per launch, and glibc by default maps each anew and unmaps it when freed, so every
page of every such array faults in fresh (on a VM with transparent huge pages, about as long
as the work done on it). Keeping freed memory for reuse halves a large graph's simulation."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import cache

import numpy as np

# mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# blocks up to this size come from the heap and stay there when freed; this much free memory
# at the heap's top is kept rather than returned (mallopt takes a C int)
KEPT_BYTES = 1 << 30


@cache
def keep_freed_memory() -> bool:
    """Ask glibc to serve blocks up to ``KEPT_BYTES`` from its heap and keep them when freed,
    for this process and the ones it forks, and (where glibc keeps them) stop numpy asking
    for huge pages under them (``skip_huge_page_advice``). Once per process; False where the
    C library is not glibc (the defaults then stay) or refuses."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    kept = bool(mallopt(_M_MMAP_THRESHOLD, KEPT_BYTES)) and bool(
        mallopt(_M_TRIM_THRESHOLD, KEPT_BYTES))
    if kept:
        skip_huge_page_advice()
    return kept


def skip_huge_page_advice() -> bool:
    """Stop numpy asking the kernel for huge pages under its arrays of 4 MB and more (its
    default on Linux). With transparent huge pages in ``madvise`` mode the kernel may then
    compact memory for a huge page at the fault, which, when free memory was fragmented,
    made growing the kept heap twice as slow as faulting 4 KB pages in (rmat:scale=20 BFS:
    the first simulation in a process 1.6-1.7 s against 0.8 s, the functional run up to
    1.7 s against 0.8 s; with unfragmented memory both 0.8 s; later simulations the same
    either way). numpy reads ``NUMPY_MADVISE_HUGEPAGE`` only at import; its switch at run
    time is private, so where it is missing this changes nothing and says False."""
    switch = getattr(getattr(np, "_core", None), "multiarray", None)
    switch = getattr(switch, "_set_madvise_hugepage", None)
    if switch is None:
        return False
    switch(False)
    return True
