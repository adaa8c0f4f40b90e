"""How this process hands memory back: the simulator allocates and frees arrays of hundreds of
megabytes per launch, and glibc by default maps each anew and unmaps it when freed, so every
page of every such array faults in fresh (on a VM with transparent huge pages, about as long
as the work done on it). Keeping freed memory for reuse halves a large graph's simulation."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import cache

# mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# blocks up to this size come from the heap and stay there when freed; this much free memory
# at the heap's top is kept rather than returned (mallopt takes a C int)
KEPT_BYTES = 1 << 30


@cache
def keep_freed_memory() -> bool:
    """Ask glibc to serve blocks up to ``KEPT_BYTES`` from its heap and keep them when freed,
    for this process and the ones it forks. Once per process; False where the C library is
    not glibc (the default then stays) or refuses."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, KEPT_BYTES)) and bool(
        mallopt(_M_TRIM_THRESHOLD, KEPT_BYTES))
