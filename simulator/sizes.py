"""The size guard: a graph's (and a simulation's) memory, estimated before anything is allocated.

A generator spec gives its vertex and edge counts outright (``rmat:scale=S,ef=E``: 2**S vertices,
E x 2**S edge records); a file gives them in its header where the format has one (DIMACS/PACE
``p sp N M``, the Matrix Market size line, the METIS and LG headers, the shapes of a ``.npz``'s
arrays), otherwise its size bounds them. The estimate is refused, in one line that states it,
when it exceeds the memory this machine has available (``MemAvailable`` of /proc/meminfo), or
instead the limit ``WARPSWEEP_MAX_MEMORY`` sets (``8G``, ``512M``, ``1.5GiB``, or bytes).

The figures per edge are measured peaks (``ru_maxrss``, rmat:scale=18 with 7.6M stored edges,
road and grid graphs of 1M vertices): building a CSR graph costs about 30 B per stored edge
plus about 40 B per vertex (random weights add about 20 B per edge, ``order=`` about 16, the
uniform ``random:`` generator about 10 more), and a simulation adds 14 B (BFS, thread per
vertex) to 110 B (SSSP on a WER+ or plain-store worklist, rmat:scale=18) per stored edge over
the loaded graph, plus its task slots, which grow with ``chunk`` and ``partition``. (It was
135 B before launches were laid out in pieces of 2^24 edges, ``edge_work._PIECE_LANES``: on
rmat:scale=20 the worst is now 77 B, and the W=8 worklist, 44 B, had taken about 200 B.)
"""

from __future__ import annotations

import gzip
import math
import os
import re
import resource
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from simulator.errors import ConfigError
from simulator.errors import GraphError
from simulator.graph_spec import GraphSpec
from simulator.graph_spec import random_edge_count

ENV_MAX_MEMORY = "WARPSWEEP_MAX_MEMORY"
MAX_VERTICES = 2**31 - 1  # vertex ids are int32 (graph.Graph)
# CSR construction (normalise: sort, dedupe, symmetrise), per stored edge and per vertex.
EDGE_BYTES = 32
VERTEX_BYTES = 40
WEIGHT_BYTES = 20
ORDER_BYTES = 16
RANDOM_GENERATOR_BYTES = 16
# Parsing a text file: its bytes several times over (raw, gunzipped, a working copy and the
# byte-class masks), each number as int64, each line's offsets and field count.
TEXT_BYTES_PER_BYTE = 5
TOKEN_BYTES = 8
LINE_BYTES = 24
# A simulation on top of the loaded graph: the worst measured per stored edge, and its task
# slots (every slot's id, vertex, degree and offsets, int64).
SIM_EDGE_BYTES = 112
SIM_SLOT_BYTES = 48
_HEAD_BYTES = 1 << 16
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([kmgtp]?)(i?b?)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Estimate:
    """Bytes a step needs and what they come from (for the message)."""

    bytes: int
    what: str


def parse_size(text: str, source: str = ENV_MAX_MEMORY, allow_zero: bool = False) -> int:
    """``8G``, ``512M``, ``1.5GiB``, ``100000`` (bytes) as bytes; ConfigError otherwise
    (and for a size of zero, unless ``allow_zero``: any spelling of it, ``0G`` as ``0``)."""
    match = _SIZE.match(str(text))
    if not match:
        raise ConfigError(f"{source}={text!r}: expected a size such as 8G, 512M or 1.5GiB")
    value = float(match.group(1)) * 1024 ** "BKMGTP".index(match.group(2).upper() or "B")
    if not math.isfinite(value):
        raise ConfigError(f"{source}={text!r}: not a finite size")
    if value == 0 and allow_zero:
        return 0
    if value < 1:
        raise ConfigError(f"{source}={text!r}: the size must be at least 1 byte")
    return int(value)


# --max-memory's text while its block runs: a refusal names the option, not the variable
# that carries it to the workers (the user never set that)
_max_memory_option: str | None = None


@contextmanager
def max_memory(text: str | None) -> Iterator[None]:
    """``--max-memory SIZE``: checked now, and WARPSWEEP_MAX_MEMORY for this process and the
    workers it starts while the block runs (then as it was)."""
    if text is None:
        yield
        return
    global _max_memory_option
    parse_size(text, "--max-memory")
    before, option_before = os.environ.get(ENV_MAX_MEMORY), _max_memory_option
    os.environ[ENV_MAX_MEMORY] = _max_memory_option = text
    try:
        yield
    finally:
        _max_memory_option = option_before
        if before is None:
            os.environ.pop(ENV_MAX_MEMORY, None)
        else:
            os.environ[ENV_MAX_MEMORY] = before


def format_bytes(value: float) -> str:
    """``12.3 GB`` (powers of 1024, as ``free -h``)."""
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(value) < 1024 or unit == "PB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} PB"  # pragma: no cover


def available_bytes() -> int | None:
    """Memory this machine can give a new allocation now: MemAvailable, else the free pages."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def process_headroom() -> list[tuple[int, str]]:
    """What this process may still allocate under its own limits, each with where it comes
    from: its address-space limit (``ulimit -v``) less what it maps now, and its memory
    cgroup's limit less what the cgroup holds (its reclaimable file pages aside). A limit
    this process cannot read is left out."""
    out = []
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            mapped = _status_kib("VmSize") * 1024
            out.append((max(soft - mapped, 0), "address-space limit (ulimit -v)"))
    except (OSError, ValueError):
        pass
    cgroup = _cgroup_headroom()
    if cgroup is not None:
        out.append((cgroup, "memory cgroup's limit"))
    return out


def _status_kib(field: str) -> int:
    """A ``/proc/self/status`` field, in KiB."""
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise ValueError(f"no {field} in /proc/self/status")


def _cgroup_headroom() -> int | None:
    """This process's memory cgroup's limit less its use (v2 ``memory.max`` / v1
    ``memory.limit_in_bytes``), or None where it has none or it cannot be read."""
    try:
        with open("/proc/self/cgroup", encoding="ascii") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    for line in lines:
        number, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if number == "0" and not controllers:  # v2: one hierarchy
            where = ("/sys/fs/cgroup" + path, "memory.max", "memory.current", "inactive_file")
        elif "memory" in controllers.split(","):
            where = ("/sys/fs/cgroup/memory" + path, "memory.limit_in_bytes",
                     "memory.usage_in_bytes", "total_inactive_file")
        else:
            continue
        root, limit_file, usage_file, reclaimable = where
        try:
            with open(f"{root}/{limit_file}", encoding="ascii") as fh:
                text = fh.read().strip()
            if text == "max" or int(text) >= 1 << 60:  # none set ("max", or v1's huge value)
                continue
            with open(f"{root}/{usage_file}", encoding="ascii") as fh:
                used = int(fh.read().strip())
            with open(f"{root}/memory.stat", encoding="ascii") as fh:
                stats = dict(line.split() for line in fh if line.strip())
            used -= int(stats.get(reclaimable, 0))
            return max(int(text) - used, 0)
        except (OSError, ValueError):
            continue
    return None


def memory_limit() -> tuple[int | None, str]:
    """The limit an estimate is held to and where it comes from: WARPSWEEP_MAX_MEMORY if set,
    else the least of the machine's available memory and what this process's own limits
    (``process_headroom``) leave it."""
    limit, source = None, ""
    avail = available_bytes()
    if avail is not None:
        limit, source = avail, f"the {format_bytes(avail)} available on this machine"
    for headroom, what in process_headroom():
        if limit is None or headroom < limit:
            limit, source = headroom, f"the {format_bytes(headroom)} this process's {what} leaves"
    text = os.environ.get(ENV_MAX_MEMORY, "").strip()
    if text:
        cap = parse_size(text)  # replaces the machine's figure (swap, a shared machine)
        named = (f"--max-memory {text}" if text == _max_memory_option
                 else f"{ENV_MAX_MEMORY}={text}")
        limit, source = cap, f"the limit {named} ({format_bytes(cap)})"
    return limit, source


def check(estimate: Estimate, label: str, error: type[Exception] = GraphError) -> None:
    """Refuse, in one line, an estimate above the memory limit."""
    limit, source = memory_limit()
    if limit is not None and estimate.bytes > limit:
        # "raise the limit with WARPSWEEP_MAX_MEMORY" is how a study's resume knows a trial
        # failed for the machine's sake (tuner.tuning.study.failed_by_environment): keep it
        raise error(
            f"{label}: needs about {format_bytes(estimate.bytes)} ({estimate.what}), more than "
            f"{source}; use a smaller graph or setting, or raise the limit with "
            f"{ENV_MAX_MEMORY}=SIZE (or --max-memory, where the verb takes it) if the "
            "estimate is wrong"
        )


# --------------------------------------------------------------------------- graphs


def _graph_bytes(n: int, stored: int, spec: GraphSpec, extra_per_edge: int = 0) -> int:
    per_edge = EDGE_BYTES + extra_per_edge
    if spec.options.weights != "none":
        per_edge += WEIGHT_BYTES
    if spec.options.order != "none":
        per_edge += ORDER_BYTES
    return stored * per_edge + (n + 1) * VERTEX_BYTES


def _counts(n: int, stored: int) -> str:
    return f"{n:,} vertices, up to {stored:,} stored edges"


def spec_estimate(spec: GraphSpec) -> Estimate:
    """The peak memory of building ``spec``'s graph, from its parameters or file header."""
    if spec.is_file:
        return file_estimate(spec)
    p = spec.params
    if spec.kind == "rmat":
        n, records = 1 << p["scale"], p["ef"] << p["scale"]
    elif spec.kind == "random":
        n, records = p["n"], random_edge_count(p, spec.options)
    else:
        n = p["rows"] * p["cols"]
        records = 3 * n if spec.kind == "mesh2d" else 2 * n
    _refuse_over_int32_ids(spec, n, "")
    stored = records if spec.options.directed and spec.kind in ("rmat", "random") else 2 * records
    extra = RANDOM_GENERATOR_BYTES if spec.kind == "random" else 0
    return Estimate(_graph_bytes(n, stored, spec, extra), _counts(n, stored))


def _refuse_over_int32_ids(spec: GraphSpec, vertices: int, how: str) -> None:
    """A GraphError where ``spec`` holds more vertices than int32 ids name: no memory limit
    would help."""
    if vertices > MAX_VERTICES:
        raise GraphError(f"graph spec {spec.canonical()!r}: {how}{vertices:,} vertices; at "
                         f"most {MAX_VERTICES:,} (vertex ids are int32, as on the GPU)")


def _head(path: Path) -> tuple[bytes, int]:
    """The file's first bytes (gunzipped) and its (uncompressed, where known) size."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        magic = fh.read(2)
    if magic != b"\x1f\x8b":
        with open(path, "rb") as fh:
            return fh.read(_HEAD_BYTES), size
    with open(path, "rb") as fh:  # ISIZE: the size mod 2**32; a ratio beyond it
        fh.seek(max(size - 4, 0))
        isize = int.from_bytes(fh.read(4), "little")
    # deflate packs at most about 1032 bytes into one; past 4 GB ISIZE has wrapped
    # (a file of a few KB may gzip larger than it is: its ISIZE is below its size)
    full = (isize if size < (1 << 28) and (size <= isize or size < (1 << 16))
            and isize <= 1032 * size else 10 * size)
    try:
        with gzip.open(path, "rb") as fh:
            return fh.read(_HEAD_BYTES), full
    except (OSError, EOFError, zlib.error):
        return b"", 0  # corrupt: the reader says so


def _header_words(head: bytes, comments: tuple[bytes, ...]) -> list[bytes]:
    for line in head.split(b"\n")[:10_000]:
        stripped = line.strip()
        if stripped and not stripped.startswith(comments):
            return stripped.replace(b",", b" ").split()
    return []


def _declared(head: bytes, fmt: str) -> tuple[int, int] | None:
    """(n, edge records) a header declares, or None."""
    try:
        if fmt in ("dimacs", "pace"):
            w = _header_words(head, (b"c",))
            return (int(w[2]), int(w[3])) if len(w) == 4 and w[0] == b"p" else None
        if fmt == "mtx":
            w = _header_words(head, (b"%",))
            return (max(int(w[0]), int(w[1])), int(w[2])) if len(w) == 3 else None
        if fmt in ("metis", "lg"):
            w = _header_words(head, (b"%", b"#"))
            return (int(w[0]), int(w[1])) if len(w) >= 2 else None
    except ValueError:
        return None
    return None


def _npz_counts(path: Path) -> tuple[int, int, int] | None:
    """(n, stored edges, array bytes) from a .npz's array headers, without reading them."""
    import numpy as np

    shapes: dict[str, tuple[tuple[int, ...], int]] = {}
    try:
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                name = info.filename.removesuffix(".npy")
                with z.open(info) as fh:
                    version = np.lib.format.read_magic(fh)
                    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                                   else np.lib.format.read_array_header_2_0)
                    shape, _, dtype = read_header(fh)
                shapes[name] = (shape, int(np.prod(shape, dtype=np.float64)) * dtype.itemsize)
    except Exception:  # noqa: BLE001 - a damaged file: the reader names the problem
        return None
    indptr, indices = shapes.get("indptr"), shapes.get("indices")
    if indptr is None or indices is None or len(indptr[0]) != 1 or len(indices[0]) != 1:
        return None
    total = sum(b for _, b in shapes.values())
    return max(indptr[0][0] - 1, 0), indices[0][0], total


def file_estimate(spec: GraphSpec) -> Estimate:
    """The peak memory of reading and building a file spec's graph (0 for a file that cannot
    be read: the reader names the problem)."""
    from simulator.loaders import detect_format
    from simulator.loaders import strip_bom

    path = spec.path
    try:
        if not path.is_file():
            return Estimate(0, "")
        head, size = _head(path)
    except OSError:
        return Estimate(0, "")
    head = strip_bom(head)
    if not head:
        return Estimate(0, "")
    fmt = spec.params.get("format")
    if fmt is None:
        try:
            fmt = detect_format(path, head)
        except GraphError:
            return Estimate(0, "")
    if fmt == "npz":
        counts = _npz_counts(path)
        if counts is None:
            return Estimate(0, "")
        n, stored, arrays = counts
        if not spec.options.directed:
            stored *= 2
        total = 2 * arrays + _graph_bytes(n, stored, spec)
        return Estimate(total, _counts(n, stored))
    # Text: at most one edge record per 4 bytes ("1 2\n"); a header's figures where given.
    records = size // 4
    n = records * 2
    declared = _declared(head, fmt)
    if declared is not None:
        _refuse_over_int32_ids(spec, declared[0], "its header declares ")
    if declared is not None:
        n, records = max(declared[0], 0), min(max(declared[1], 0), records)
        if fmt == "metis":
            records *= 2
    else:  # no header: estimate the records from the first lines' length
        lines = [ln for ln in head.split(b"\n")[:-1] if ln.strip()[:1].isdigit()]
        if lines:
            records = min(records, size // max(1, sum(map(len, lines)) // len(lines) + 1) + 1)
        n = 2 * records
    stored = 2 * records
    parse = size * TEXT_BYTES_PER_BYTE + records * (3 * TOKEN_BYTES + LINE_BYTES)
    what = f"a {format_bytes(size)} {fmt} file; " + _counts(n, stored)
    return Estimate(parse + _graph_bytes(n, stored, spec), what)


def check_spec(spec: GraphSpec) -> None:
    """GraphError, before anything is allocated, when ``spec``'s graph would not fit."""
    estimate = spec_estimate(spec)
    if estimate.bytes:
        check(estimate, f"graph spec {spec.canonical()!r}")


# --------------------------------------------------------------------------- simulations


def simulation_estimate(n: int, m: int, strategy) -> Estimate:
    """Working memory of one simulation beyond the loaded graph: per stored edge, and per task
    slot (a warp's K x chunk slots are padded whole, K = 32 / W virtual warps; a spatial
    launch lists whole partitions)."""
    per_warp = max(1, 32 // strategy.lanes_per_vertex)
    slots = n + per_warp * (strategy.chunk or 1) + (strategy.partition or 0)
    total = m * SIM_EDGE_BYTES + slots * SIM_SLOT_BYTES
    return Estimate(total, f"{m:,} stored edges, {slots:,} task slots")


def check_simulation(n: int, m: int, strategy, label: str) -> None:
    """ConfigError when a simulation's working memory would exceed the limit."""
    check(simulation_estimate(n, m, strategy), label, ConfigError)
