"""The immutable CSR graph every part of warpsweep works on, and the edge-list normalisation."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from dataclasses import field
from functools import cached_property

import numpy as np

from simulator.errors import GraphError


@dataclass(frozen=True, eq=False)
class Graph:
    """A validated CSR graph: vertex v's out-neighbours are ``indices[indptr[v]:indptr[v+1]]``.

    Undirected graphs store each edge in both directions. Arrays are made read-only so that a
    graph shared by many simulations (or put once into Ray's object store) cannot be changed.
    """

    indptr: np.ndarray
    indices: np.ndarray
    weights: np.ndarray | None = None
    name: str = "graph"
    spec: str = ""
    directed: bool = False
    # set by constructions that keep a checked graph's edges (``with_weights``, reordering):
    # an undirected graph's symmetry is then not checked again
    known_symmetric: bool = field(default=False, repr=False, kw_only=True)

    def __post_init__(self) -> None:
        label = self.spec or self.name
        _check_directed(self.directed, label)
        indptr = np.asarray(self.indptr)
        indices = np.asarray(self.indices)
        if indptr.ndim != 1 or indptr.size < 1:
            raise GraphError(f"{label}: indptr must be a 1-d array of length n+1 >= 1")
        for key, array in (("indptr", indptr), ("indices", indices)):
            if array.size and array.dtype.kind not in "iu":
                raise GraphError(f"{label}: {key} must hold integers, not {array.dtype}")
        if indptr.dtype not in (np.int32, np.int64):
            indptr = indptr.astype(np.int64)
        if indices.ndim != 1:
            raise GraphError(f"{label}: indices must be a 1-d array")
        if indices.dtype != np.int32:
            if indices.size and indices.min() < 0:
                raise GraphError(f"{label}: negative vertex id {int(indices.min())}")
            if indices.size and indices.max() > np.iinfo(np.int32).max:
                raise GraphError(f"{label}: vertex ids must fit in int32")
            indices = indices.astype(np.int32)
        n = indptr.size - 1
        if indptr[0] != 0 or indptr[-1] != indices.size:
            raise GraphError(
                f"{label}: indptr must start at 0 and end at len(indices)={indices.size}, "
                f"got {int(indptr[0])}..{int(indptr[-1])}"
            )
        if n and np.any(np.diff(indptr) < 0):
            raise GraphError(f"{label}: indptr must be non-decreasing")
        if indices.size and (indices.min() < 0 or indices.max() >= n):
            raise GraphError(
                f"{label}: vertex id out of range 0..{n - 1}: "
                f"{int(indices.min()) if indices.min() < 0 else int(indices.max())}"
            )
        weights = self.weights
        if weights is not None:
            weights = float32_weights(weights, label)
            if weights.shape != indices.shape:
                raise GraphError(
                    f"{label}: {weights.size} weights for {indices.size} edges"
                    + (f" (weights of shape {weights.shape}, not one per stored edge)"
                       if weights.ndim != 1 else "")
                )
        # the caller's arrays, which it could change under the graph (its checks and content
        # digest then stale), are copied: the graph keeps only what nobody can write
        indptr, indices = _sealed(_own(indptr)), _sealed(_own(indices))
        if weights is not None:
            weights = _sealed(_own(weights))
        if not self.directed and not self.known_symmetric and indices.size:
            _check_symmetric(indptr, indices, weights, label)
        object.__setattr__(self, "indptr", indptr)
        object.__setattr__(self, "indices", indices)
        object.__setattr__(self, "weights", weights)

    def __setstate__(self, state: dict) -> None:
        """A graph unpickled (or deep-copied) keeps its arrays read-only for good: pickle
        had given them back writeable, the graph's checks and content digest then open to an
        edit."""
        for key in ("indptr", "indices", "weights"):
            if state.get(key) is not None:
                state[key] = _sealed(state[key])
        self.__dict__.update(state)

    @property
    def n(self) -> int:
        """Number of vertices."""
        return self.indptr.size - 1

    @property
    def m(self) -> int:
        """Number of stored (directed) edges; twice the undirected edge count."""
        return int(self.indices.size)

    @cached_property
    def degrees(self) -> np.ndarray:
        """Out-degree of every vertex (int64)."""
        d = np.diff(self.indptr).astype(np.int64)
        d.flags.writeable = False
        return d

    @cached_property
    def sources(self) -> np.ndarray:
        """Source vertex of every stored edge (the COO row array), int32."""
        s = np.repeat(np.arange(self.n, dtype=np.int32), self.degrees)
        s.flags.writeable = False
        return s

    @cached_property
    def content_digest(self) -> str:
        """A digest of the edges, the weights and the direction: a functional run records
        its graph's, and ``simulate`` refuses one computed on another graph."""
        h = hashlib.blake2b(digest_size=16)
        h.update(b"directed" if self.directed else b"undirected")
        for array in (self.indptr.astype(np.int64, copy=False), self.indices, self.weights):
            h.update(b"|" if array is None else memoryview(np.ascontiguousarray(array)))
        return h.hexdigest()

    def with_weights(self, weights: np.ndarray, *, symmetric: bool = False) -> Graph:
        """The same graph carrying ``weights`` (one per stored edge); ``symmetric``: the caller
        gives both directions of each edge one weight by construction (else an undirected
        graph's weights are checked for it)."""
        return Graph(self.indptr, self.indices, weights, self.name, self.spec, self.directed,
                     known_symmetric=symmetric and not self.directed)

    def __repr__(self) -> str:
        w = ", weighted" if self.weights is not None else ""
        d = "directed" if self.directed else "undirected"
        return f"Graph({self.name!r}, n={self.n}, m={self.m}, {d}{w})"

    @classmethod
    def from_edges(
        cls,
        src: np.ndarray,
        dst: np.ndarray,
        n: int | None = None,
        weights: np.ndarray | None = None,
        *,
        directed: bool = False,
        name: str = "graph",
        spec: str = "",
    ) -> Graph:
        """Build a normalised graph from an edge list with ids in 0..n-1.

        Self loops and duplicate edges are dropped (for duplicates the smallest weight is
        kept); unless ``directed``, every edge is stored in both directions.
        """
        label = spec or name
        _check_directed(directed, label)
        src = np.asarray(src).ravel()
        dst = np.asarray(dst).ravel()
        for key, ids in (("sources", src), ("destinations", dst)):
            if ids.size and ids.dtype.kind not in "iu" and not (
                    ids.dtype.kind == "f" and np.all(np.isfinite(ids))
                    and np.all(ids == np.floor(ids))):
                if ids.dtype.kind != "f":
                    raise GraphError(f"{label}: {key} must be vertex ids, not {ids.dtype}")
                bad = float(ids[~np.isfinite(ids) | (ids != np.floor(ids))][0])
                raise GraphError(f"{label}: {key} must be whole vertex ids, not values such "
                                 f"as {bad:g}")
        if src.shape != dst.shape:
            raise GraphError(f"{label}: {src.size} sources but {dst.size} destinations")
        # the ids' range in their own type (a uint64 or float id past int64 had wrapped in
        # the cast, then been called out of range as some other number)
        low = min((int(ids.min()) for ids in (src, dst) if ids.size), default=0)
        high = max((int(ids.max()) for ids in (src, dst) if ids.size), default=-1)
        if n is None:
            n = high + 1
        elif isinstance(n, bool) or not isinstance(n, int | np.integer):
            raise GraphError(f"{label}: n must be a whole number of vertices, not {n!r}")
        elif n < 0:
            raise GraphError(f"{label}: n must be a number of vertices >= 0, not {n}")
        n = int(n)  # a numpy unsigned n had failed numpy's casting rules below
        if n > np.iinfo(np.int32).max:  # ids are int32, as on the GPU
            raise GraphError(f"{label}: {n} vertices; at most {np.iinfo(np.int32).max} "
                             "(vertex ids are int32)")
        if src.size and (low < 0 or high >= n):
            bad = low if low < 0 else high
            raise GraphError(f"{label}: vertex id {bad} is "
                             + ("negative" if bad < 0 else f"out of range 0..{n - 1}")
                             + " (ids are 0..n-1)")
        if src.dtype not in (np.int32, np.int64):
            src = src.astype(np.int64)
        if dst.dtype not in (np.int32, np.int64):
            dst = dst.astype(np.int64)
        w = None if weights is None else float32_weights(weights, label).ravel()
        if w is not None and w.shape != src.shape:
            raise GraphError(f"{label}: {w.size} weights for {src.size} edges")
        keep = src != dst
        if not keep.all():
            src, dst = src[keep], dst[keep]
            if w is not None:
                w = w[keep]
        del keep
        # Build the int64 keys row*n+col in one preallocated array (both directions unless
        # directed): large temporaries dominate the cost on graphs of tens of millions of edges.
        k = src.size
        key = np.empty(k if directed else 2 * k, dtype=np.int64)
        np.multiply(src, n, out=key[:k], dtype=np.int64)
        np.add(key[:k], dst, out=key[:k])
        if not directed:
            np.multiply(dst, n, out=key[k:], dtype=np.int64)
            np.add(key[k:], src, out=key[k:])
            if w is not None:
                w = np.concatenate([w, w])
        del src, dst
        # Sort + first-of-run mask: np.unique is far slower on tens of millions of keys.
        if w is None:
            key.sort()
        else:
            order = np.argsort(key)
            key, w = key[order], w[order]
            del order
        first = np.ones(key.size, dtype=bool)
        np.not_equal(key[1:], key[:-1], out=first[1:])
        if w is not None and w.size:
            w = np.minimum.reduceat(w, np.flatnonzero(first))
        key = key[first]
        del first
        rows, cols = np.divmod(key, n)
        del key
        indices = cols.astype(np.int32)
        del cols
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
        return cls(frozen(indptr), frozen(indices), None if w is None else frozen(w),
                   name=name, spec=spec, directed=directed,
                   known_symmetric=not directed)  # stored both ways above


FLOAT32_MAX = float(np.finfo(np.float32).max)


def float32_weight_problem(w: np.ndarray) -> tuple[int, str] | None:
    """The first weight of ``w`` (float64, or integers checked exactly) the simulator cannot
    take, and why: not finite, negative, beyond float32, or one float32 would change in kind:
    a whole number it rounds (16777219 -> 16777220: a wrong distance) or a positive one it
    rounds to 0. Weights and distances are float32 on the GPU, as in the measured kernels; a
    fraction's last bits round, as there. Integers are compared with their float32 round trip
    in integer arithmetic: through float64, 36028797018963971 had read as a float32."""
    exact_ints = w.dtype.kind in "iu"
    w64 = w.astype(np.float64, copy=False)
    with np.errstate(over="ignore", invalid="ignore"):
        w32 = w64.astype(np.float32)
    finite = np.isfinite(w64)
    bad = ~finite | (w64 < 0) | (np.abs(w64) > FLOAT32_MAX)
    if exact_ints:
        back = w32.astype(np.float64)
        fits = back < (2.0**63 if w.dtype.kind == "i" else 2.0**64)  # 2**63: past int64
        bad |= ~fits | (np.where(fits, back, 0).astype(w.dtype) != w)
    else:
        whole = finite & (w64 == np.floor(w64))
        bad |= whole & (w32 != w64)
    bad |= (w64 > 0) & (w32 == 0)
    if not bad.any():
        return None
    i = int(np.argmax(bad))
    v = float(w64[i])
    kind = ("NaN" if np.isnan(v) else "infinite" if np.isinf(v) else "negative" if v < 0
            else "too large" if v > FLOAT32_MAX else "")
    shown = str(int(w[i])) if exact_ints else f"{v:g}"
    if kind:
        return i, f"{kind} edge weight {shown}"
    read = float(w32[i])
    if exact_ints:
        return i, f"edge weight {shown} is not a float32 (it would read as {int(read)})"
    why = "below float32's least" if read == 0 else "not a float32"
    return i, f"edge weight {v:.10g} is {why} (it would read as {read:.10g})"


WEIGHT_RULE = ("weights must be finite, >= 0 and float32s: every whole number up to "
               "16777216 and larger ones float32 holds exactly, fractions rounded in their "
               "last bits")


def float32_weights(weights, label: str) -> np.ndarray:
    """``weights`` as float32, or a GraphError naming the first that float32 cannot hold
    (``float32_weight_problem``)."""
    w = np.asarray(weights)
    if w.dtype.kind == "O":  # Python numbers in a list of mixed types
        try:
            w = w.astype(np.float64)
        except (TypeError, ValueError):
            raise GraphError(f"{label}: edge weights must be numbers") from None
    if w.dtype.kind not in "iuf":
        raise GraphError(f"{label}: edge weights must be numbers, not {w.dtype}")
    # float32 already: only finiteness and sign to check, in one cheap pass
    unsure = w.dtype != np.float32 or not (np.isfinite(w).all() and w.min(initial=0) >= 0)
    problem = float32_weight_problem(w) if unsure and w.size else None
    if problem is not None:
        i, why = problem
        raise GraphError(f"{label}: weight {i}: {why} ({WEIGHT_RULE})")
    return w.astype(np.float32, copy=False)


def _check_directed(directed: object, label: str) -> None:
    """``directed`` is a bool: a string such as "false" had built a directed graph."""
    if not isinstance(directed, bool | np.bool_):
        raise GraphError(f"{label}: directed must be True or False, not {directed!r}")


def frozen(array: np.ndarray) -> np.ndarray:
    """An array made by its caller, handed to a Graph without a copy: read-only from now."""
    array.flags.writeable = False
    return array


def _sealed(array: np.ndarray) -> np.ndarray:
    """``array`` read-only for good: a view of it made read-only, whose flag numpy will not
    set back (``g.indices.setflags(write=True)`` had let an edit leave the graph's checks and
    content digest stale, and a functional run of the old edges pass as the new's)."""
    array.flags.writeable = False
    return array.view()


def _own(array: np.ndarray) -> np.ndarray:
    """``array`` where nothing can write it (read-only down to the memory it views: an array
    of its own, or bytes), else a copy of it (a memory-mapped file or a bytearray under a
    read-only view had changed the graph with them, its digest stale)."""
    view: object = array
    while isinstance(view, np.ndarray):
        if view.flags.writeable:
            return array.copy()
        view = view.base
    return array if view is None or isinstance(view, bytes) else array.copy()


def is_graph(obj: object) -> bool:
    """Whether ``obj`` is a Graph by its parts (another checkout's Graph class too, as
    bench/compare_revisions and bench/figures_unchanged pass one)."""
    return all(hasattr(obj, a) for a in ("indptr", "indices", "n", "spec", "name"))


_SYMMETRY_CHUNK = 1 << 22  # edges hashed at once: bounded memory on graphs of any size
_MIX = np.uint64(0x9E3779B97F4A7C15)


def _check_symmetric(indptr: np.ndarray, indices: np.ndarray, weights: np.ndarray | None,
                     label: str) -> None:
    """Raise GraphError unless every stored edge u -> v (with its weight) is matched by
    v -> u: an undirected graph built by hand from a one-way CSR had given BFS and CC
    answers of another graph."""
    if not stores_both_ways(indptr, indices, weights):
        raise GraphError(f"{label}: an undirected graph must store every edge both ways (with "
                         "its weight): this CSR holds an edge whose reverse it lacks; build "
                         "it with Graph.from_edges, or pass directed=True")


def stores_both_ways(indptr: np.ndarray, indices: np.ndarray,
                     weights: np.ndarray | None) -> bool:
    """Whether every stored edge u -> v (with its weight) is matched by v -> u, as an
    undirected CSR must be (a reader names its own remedy where not). Compares two
    order-free sums over the edges, of a[u] b[v] h(w) and of b[u] a[v] h(w) for random a, b
    (each vertex's edges summed, then times its own factor), in O(m) and bounded memory; a
    sum that matches by chance is about 1 in 2**64."""
    n = indptr.size - 1
    rng = np.random.default_rng(0x5EED)
    a = rng.integers(1, 2**63, size=n, dtype=np.uint64)
    b = rng.integers(1, 2**63, size=n, dtype=np.uint64)
    forward = backward = np.uint64(0)
    bits = None if weights is None else weights.view(np.uint32)
    start = 0
    with np.errstate(over="ignore"):
        while start < n:
            end = int(np.searchsorted(indptr, indptr[start] + _SYMMETRY_CHUNK, side="right"))
            end = min(max(end - 1, start + 1), n)
            lo, hi = int(indptr[start]), int(indptr[end])
            if hi > lo:
                dst = indices[lo:hi]
                to_b, to_a = b[dst], a[dst]
                if bits is not None:
                    w = bits[lo:hi].astype(np.uint64) * _MIX + np.uint64(1)
                    to_b *= w
                    to_a *= w
                ends = indptr[start + 1:end + 1] - lo
                held = np.flatnonzero(ends > np.concatenate([[0], ends[:-1]]))  # with edges
                own = start + held
                forward += np.sum(a[own] * _per_vertex_sums(to_b, ends[held]), dtype=np.uint64)
                backward += np.sum(b[own] * _per_vertex_sums(to_a, ends[held]), dtype=np.uint64)
            start = end
    return bool(forward == backward)


def _per_vertex_sums(edge_values: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Each vertex's edge values summed, vertices whose edges end at ``ends`` (ascending,
    none empty): differences of a running sum, exact mod 2**64 through its wrap-arounds."""
    at_end = np.cumsum(edge_values, dtype=np.uint64)[ends - 1]
    return at_end - np.concatenate([[np.uint64(0)], at_end[:-1]])
