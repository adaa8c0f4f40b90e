"""An on-disk cache of normalised CSR graphs, keyed by the spec, so a big file is parsed once.

Entries are uncompressed ``.npz`` files (the format of ``warpsweep graph convert``) in
``$WARPSWEEP_CACHE_DIR`` or ``~/.cache/warpsweep/graphs``. The key hashes the canonical spec
(with a file's resolved path), the file's size, times, device and inode, the cache, npz
and generator versions, the sources of the code that builds a graph (``BUILDERS``) and numpy's
version (its generators draw random graphs, weights and orders): an edited file, reader or
generator never serves a stale graph, a version left unbumped included. An
entry records its key and is served only under it (an entry copied over another's name had
been served as that file's graph). A file modified within ``RACY_S`` seconds is not cached
(nor its digest kept): on a filesystem of coarse timestamps (NFS, FAT, HFS+), a same-size
rewrite in the same second would look unchanged. Writes are atomic (temp file + os.replace),
so concurrent workers and crashes never leave a torn entry. A cache that cannot be read or
written is skipped, never an error. The entries are held to ``$WARPSWEEP_CACHE_MAX`` bytes
(20 GiB unless set; 0 caches nothing, and reads nothing cached): the least recently used go
first.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import re
import stat
import time
from pathlib import Path

import numpy as np

from simulator.errors import GraphError
from simulator.generators import GENERATOR_VERSION
from simulator.generators import generated_edge_count
from simulator.graph import Graph
from simulator.graph_spec import GraphSpec
from simulator.loaders import NPZ_VERSION
from simulator.loaders import read_npz
from simulator.loaders import read_npz_meta
from simulator.loaders import save_npz
from simulator.sizes import parse_size

CACHE_VERSION = 6  # 2: ids beyond int64 are refused, no longer read clamped (merged); 3: a
# tab-separated .csv keeps its first line, CR-only line endings part lines; 4: a .csv whose
# header does not start with the edges' ends is refused (pandas' index column had been read
# as the sources), as a METIS edge weighed otherwise at its two ends (the lower kept); 5: a
# .csv header naming the target first, or its weight column, is read as it says; 6: a
# METIS file without its extension is read as METIS (or refused), not as a SNAP edge list, and
# integer weights past 2**53 are checked exactly (probe LD)
CACHE_ENV = "WARPSWEEP_CACHE_DIR"
CACHE_MAX_ENV = "WARPSWEEP_CACHE_MAX"
DEFAULT_CACHE_MAX = 20 * 2**30
KEY_META = "cache_key"  # the key an entry was written under, in its metadata
# the simulator's modules whose code decides what graph a spec builds: the spec's reading,
# readers, generators, the edge list's normalisation, weights and relabelling, the CSR
BUILDERS = ("graph_spec.py", "loaders.py", "generators.py", "edges.py", "load.py", "graph.py")
# Generated graphs are cached from this many generated edges on (smaller ones are faster
# to regenerate than to read back).
MIN_GENERATED_EDGES = 1 << 20


def cache_dir() -> Path | None:
    """The cache directory: ``$WARPSWEEP_CACHE_DIR`` or ``~/.cache/warpsweep/graphs``; None
    where that names a home that cannot be found (``~nosuchuser/c``): no cache, no error."""
    env = os.environ.get(CACHE_ENV, "").strip()  # blank is unset (not a directory " ")
    try:
        return (Path(env).expanduser() if env
                else Path.home() / ".cache" / "warpsweep" / "graphs")
    except RuntimeError:
        return None


@functools.cache
def builders_digest() -> str:
    """A hash of the sources of the code that builds graphs (``BUILDERS``)."""
    h = hashlib.sha256()
    for name in BUILDERS:
        h.update((Path(__file__).parent / name).read_bytes())
    return h.hexdigest()[:16]


def cache_limit() -> int:
    """The bytes the cache's entries may take: ``$WARPSWEEP_CACHE_MAX`` (a size such as
    ``5G``; 0 caches nothing) or 20 GiB. Stale entries (an edited file's, an older
    generator's) are never served again, and one header can declare a graph of gigabytes."""
    text = os.environ.get(CACHE_MAX_ENV, "").strip()
    if not text:
        return DEFAULT_CACHE_MAX
    return parse_size(text, CACHE_MAX_ENV, allow_zero=True)


_DIGESTS: dict[tuple, str] = {}
# a file's version (size and times) is trusted to tell its content once it is this old
RACY_S = 2.0


def _settled(st: os.stat_result) -> bool:
    """Whether a file was last modified long enough ago that a rewrite would show in its
    times (git's "racily clean" rule)."""
    return time.time() - max(st.st_mtime, st.st_ctime) > RACY_S


def _file_version(st: os.stat_result) -> tuple[int, ...]:
    """What tells one version of a file from another without reading it: its size and
    modification time, which a copy or `touch -d` can carry over to new bytes, and its inode
    and change time, which no write leaves as they were (a file rewritten with its old time
    had been served from the cache as the old graph)."""
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_dev, st.st_ino


def content_digest(spec: GraphSpec) -> str:
    """What the graph is, independent of where it is read from: a hash of a file's bytes (so
    a regenerated file is a new graph, and one file reached by two paths the same graph), or of
    a generator's canonical spec and version. Files are hashed once per size and mtime."""
    h = hashlib.sha256()
    if spec.is_file:
        path = spec.path
        try:
            resolved = path.resolve()
            st = resolved.stat()
            if not stat.S_ISREG(st.st_mode):  # a device or FIFO would be read forever
                raise GraphError(f"graph file {str(path)!r}: not a regular file")
            memo = (str(resolved), *_file_version(st))
            digest = _DIGESTS.get(memo)
            if digest is None:
                with open(resolved, "rb") as f:
                    for block in iter(lambda: f.read(1 << 20), b""):
                        h.update(block)
                digest = h.hexdigest()[:16]
                if _settled(st):
                    _DIGESTS[memo] = digest
        except OSError as exc:
            raise GraphError(f"graph file {str(path)!r}: {exc.strerror or exc}") from None
        except RuntimeError as exc:  # Python 3.11's Path.resolve on a symlink loop
            raise GraphError(f"graph file {str(path)!r}: {exc}") from None
        options = dataclasses.replace(spec, params={**spec.params, "path": ""}).canonical()
        return hashlib.sha256(f"{digest}|{options}".encode()).hexdigest()[:16]
    h.update(f"{GENERATOR_VERSION}|{spec.canonical()}".encode())
    return h.hexdigest()[:16]


def should_cache(spec: GraphSpec) -> bool:
    """Whether loading ``spec`` goes through the cache: files always, big generators too."""
    return spec.is_file or generated_edge_count(spec) >= MIN_GENERATED_EDGES


def cache_key(spec: GraphSpec) -> str | None:
    """The hex key of ``spec``'s entry; None when its file cannot be stat'ed, or was modified
    too recently for its times to tell a rewrite (``RACY_S``)."""
    parts: dict[str, object] = {"cache": CACHE_VERSION, "npz": NPZ_VERSION,
                                "code": builders_digest(), "numpy": np.__version__}
    if spec.is_file:
        try:
            path = spec.path.resolve()
            st = path.stat()
        except (OSError, RuntimeError, GraphError):  # (RuntimeError: a symlink loop, 3.11)
            return None
        if not _settled(st):
            return None
        spec = dataclasses.replace(spec, params={**spec.params, "path": str(path)})
        parts["version"] = _file_version(st)
    else:
        parts["generator"] = GENERATOR_VERSION
    parts["spec"] = spec.canonical()
    blob = json.dumps(parts, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:32]


# an entry's file name (``cache_path``): what the cache may remove to make room
_ENTRY_NAME = re.compile(r"[A-Za-z0-9._-]*-[0-9a-f]{32}\.npz")


def cache_path(spec: GraphSpec, key: str | None = None) -> Path | None:
    """Where ``spec``'s entry lives (whether or not it exists); None if it has no key or
    there is no cache directory."""
    key = key or cache_key(spec)
    directory = cache_dir()
    if key is None or directory is None:
        return None
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", spec.short_name())[:60]
    return directory / f"{name}-{key}.npz"


def load_cached(spec: GraphSpec, key: str | None = None) -> Graph | None:
    """The cached graph of ``spec``, or None when there is no readable entry written under
    its key (``key``: ``cache_key(spec)``, where the caller took it)."""
    key = key or cache_key(spec)
    if key is None:
        return None
    path = cache_path(spec, key)
    if path is None or not path.is_file():
        return None
    try:
        if read_npz_meta(path).get(KEY_META) != key:
            return None
        graph = read_npz(path, f"cache entry {path}", written_by_us=True)
    except (GraphError, OSError):
        return None
    with contextlib.suppress(OSError):  # used now: the last to be evicted
        os.utime(path)
    if graph.spec != spec.canonical() and not spec.is_file:
        return None
    if graph.spec != spec.canonical() or graph.name != spec.unique_name():
        graph = Graph(
            graph.indptr, graph.indices, graph.weights, name=spec.unique_name(),
            spec=spec.canonical(), directed=graph.directed,
            known_symmetric=not graph.directed,  # read (and checked) just above
        )
    return graph


def store(spec: GraphSpec, graph: Graph, key: str | None = None) -> Path | None:
    """Write ``graph`` as ``spec``'s entry; None (and no error) if the cache is not writable.
    ``key``: ``cache_key(spec)`` taken before the graph was read; where the file has changed
    since (replaced while it was parsed), nothing is written: the entry would file the old
    graph under the new file's key, served for good."""
    now = cache_key(spec)
    if now is None or (key is not None and key != now):
        return None
    key = now
    path = cache_path(spec, key)
    if path is None:
        return None
    _remove_abandoned_writes(path.parent)
    size = sum(a.nbytes for a in (graph.indptr, graph.indices, graph.weights) if a is not None)
    if not _make_room(path.parent, size, cache_limit()):
        return None
    try:
        saved = save_npz(graph, path, {KEY_META: key}, make_parents=True)
    except OSError:
        return None
    # the file holds headers and metadata beyond the arrays (1.4 KB for a 10-vertex path):
    # the least recently used again, until the files keep to the bound, the new one last
    # (probe GRAPHS: 1604 bytes had stayed under a bound of 1024)
    _make_room(path.parent, 0, cache_limit())
    return saved if saved.exists() else None


def _make_room(directory: Path, size: int, limit: int) -> bool:
    """Remove the least recently used entries until one of ``size`` bytes fits under
    ``limit`` with the rest; False (nothing removed) where it never would."""
    if size > limit:
        return False
    try:
        entries, writing = [], 0
        for entry in directory.glob("*.npz"):
            if not _ENTRY_NAME.fullmatch(entry.name):
                continue  # a graph of the user's own (`graph convert` into this directory)
            with contextlib.suppress(OSError):  # removed meanwhile by another worker
                st = entry.stat()
                entries.append((st.st_mtime, st.st_size, entry))
        for tmp in directory.glob(".*.npz.*.tmp"):  # writes under way or killed: kept
            with contextlib.suppress(OSError):
                writing += tmp.stat().st_size
    except OSError:
        return True  # no directory yet: save_npz makes it
    if writing + size > limit:  # no entry's removal makes room: keep them, store nothing
        return False
    total = writing + sum(e[1] for e in entries)
    for _, bytes_, entry in sorted(entries):
        if total + size <= limit:
            break
        with contextlib.suppress(OSError):
            entry.unlink()
        total -= bytes_
    return True


def _remove_abandoned_writes(directory: Path, older_than_s: float = 3600.0) -> None:
    """Temp files of writes killed before their rename (a big graph's can be large), left
    alone while a writer might still be filling one."""
    try:
        for tmp in directory.glob(".*.npz.*.tmp"):
            if time.time() - tmp.stat().st_mtime > older_than_s:
                tmp.unlink(missing_ok=True)
    except OSError:
        pass
