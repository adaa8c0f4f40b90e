"""Synthetic graph generators: RMAT/Kronecker, uniform random, 2D grid and mesh, road-like.

Each returns an :class:`EdgeList`; :func:`simulator.load.load_graph` normalises it (self loops
and duplicates dropped, symmetrised unless directed). All randomness comes from
``np.random.default_rng`` seeded by the spec's ``seed``; generation is whole-array numpy.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from typing import Any

import numpy as np

from simulator.edges import EdgeList
from simulator.graph_spec import GraphSpec
from simulator.graph_spec import random_edge_count

# Bump when a generator's output for a given spec changes (it keys the on-disk cache).
GENERATOR_VERSION = 1
# Streams of one seed, so that e.g. the weights do not change the structure.
STRUCTURE_STREAM = 0
ORDER_STREAM = 2
# RMAT draws 16-bit uniforms (four per 64-bit draw); probabilities resolve to 1/65536.
_RMAT_BITS = 16
_RMAT_CHUNK = 1 << 20


def seeded_rng(seed: int, stream: int) -> np.random.Generator:
    """The generator for one purpose (``stream``) of a spec's ``seed``."""
    return np.random.default_rng([seed, stream])


def rmat_edges(
    scale: int,
    ef: int = 16,
    a: float = 0.57,
    b: float = 0.19,
    c: float = 0.19,
    *,
    seed: int = 0,
    permute: bool = True,
) -> EdgeList:
    """RMAT (Graph500 Kronecker) edges: ``ef * 2**scale`` directed edges on ``2**scale`` vertices.

    Every edge picks one quadrant per bit of the scale (a: top-left, b: top-right, c:
    bottom-left, d = 1-a-b-c: bottom-right), for all edges at once; vertex labels are then
    randomly permuted as Graph500 does, so that id order carries no degree information.
    """
    n = 1 << scale
    m = ef * n
    rng = seeded_rng(seed, STRUCTURE_STREAM)
    full = 1 << _RMAT_BITS
    t_a = round(a * full)
    t_ab = round((a + b) * full)
    t_abc = round((a + b + c) * full)
    per_draw = 64 // _RMAT_BITS
    draws = -(-scale // per_draw)
    src = np.empty(m, dtype=np.int32)
    dst = np.empty(m, dtype=np.int32)
    # Chunks of edges keep the per-bit temporaries in cache; every bit is one array pass.
    for lo in range(0, m, _RMAT_CHUNK):
        hi = min(lo + _RMAT_CHUNK, m)
        i = np.zeros(hi - lo, dtype=np.int32)
        j = np.zeros(hi - lo, dtype=np.int32)
        raw = rng.bit_generator.random_raw(draws * (hi - lo)).view(np.uint16)
        uniforms = raw.reshape(draws, hi - lo, per_draw)
        for bit in range(scale):
            x = uniforms[bit // per_draw, :, bit % per_draw]
            ge_a = x >= t_a
            ge_ab = x >= t_ab
            ge_abc = x >= t_abc
            np.left_shift(i, 1, out=i)
            np.bitwise_or(i, ge_ab, out=i)
            np.bitwise_xor(ge_a, ge_ab, out=ge_a)
            np.bitwise_xor(ge_a, ge_abc, out=ge_a)
            np.left_shift(j, 1, out=j)
            np.bitwise_or(j, ge_a, out=j)
        src[lo:hi] = i
        dst[lo:hi] = j
    if permute:
        perm = rng.permutation(n).astype(np.int32)
        np.take(perm, src, out=src)
        np.take(perm, dst, out=dst)
    return EdgeList(src, dst, n)


def random_edges(n: int, m: int, *, directed: bool = False, seed: int = 0) -> EdgeList:
    """Uniform G(n, m): ``m`` distinct edges (unordered pairs unless directed), no self loops."""
    rng = seeded_rng(seed, STRUCTURE_STREAM)
    if directed:
        ids = rng.choice(n * (n - 1), size=m, replace=False, shuffle=False).astype(np.int64)
        u, r = np.divmod(ids, n - 1)
        v = r + (r >= u)
        return EdgeList(u, v, n)
    pairs = n * (n - 1) // 2
    ids = rng.choice(pairs, size=m, replace=False, shuffle=False).astype(np.int64)
    # Pair ids run row by row over (u, v), u < v; row u holds w = n-1-u pairs. Counted from
    # the end (t), rows hold 1, 2, 3, ... pairs, so w is a triangular root of t: a float root
    # without cancellation, then fixed exactly in integers.
    t = pairs - 1 - ids
    w = ((1.0 + np.sqrt(1.0 + 8.0 * t)) // 2).astype(np.int64)
    w -= w * (w - 1) // 2 > t
    w += w * (w + 1) // 2 <= t
    u = n - 1 - w
    v = u + w - (t - w * (w - 1) // 2)
    return EdgeList(u, v, n, symmetric=True)


def _grid_pairs(rows: int, cols: int, diagonal: bool) -> tuple[np.ndarray, np.ndarray]:
    """Right and down neighbours (and down-right if ``diagonal``) of a row-major grid."""
    ids = np.arange(rows * cols, dtype=np.int64).reshape(rows, cols)
    parts = [(ids[:, :-1], ids[:, 1:]), (ids[:-1, :], ids[1:, :])]
    if diagonal:
        parts.append((ids[:-1, :-1], ids[1:, 1:]))
    src = np.concatenate([p[0].ravel() for p in parts])
    dst = np.concatenate([p[1].ravel() for p in parts])
    return src, dst


def grid2d_edges(rows: int, cols: int) -> EdgeList:
    """4-point grid: vertex ``r*cols + c`` joined to its left, right, up and down neighbours."""
    src, dst = _grid_pairs(rows, cols, diagonal=False)
    return EdgeList(src, dst, rows * cols, symmetric=True)


def mesh2d_edges(rows: int, cols: int) -> EdgeList:
    """6-point triangular mesh: the 4-point grid plus the down-right diagonal of every cell."""
    src, dst = _grid_pairs(rows, cols, diagonal=True)
    return EdgeList(src, dst, rows * cols, symmetric=True)


def road_edges(rows: int, cols: int, keep: float = 0.65, *, seed: int = 0) -> EdgeList:
    """Road-network-like: a 4-point grid keeping each edge with probability ``keep``.

    With the default 0.65 the average degree is about 2.6 (real road networks: 2.4-2.8),
    the maximum 4, and most vertices lie in one large component with a long diameter.
    """
    src, dst = _grid_pairs(rows, cols, diagonal=False)
    kept = seeded_rng(seed, STRUCTURE_STREAM).random(src.size) < keep
    return EdgeList(src[kept], dst[kept], rows * cols, symmetric=True)


def _rmat(p: Mapping[str, Any], spec: GraphSpec) -> EdgeList:
    """rmat: from spec parameters."""
    return rmat_edges(p["scale"], p["ef"], p["a"], p["b"], p["c"], seed=spec.options.seed)


def _random(p: Mapping[str, Any], spec: GraphSpec) -> EdgeList:
    """random: from spec parameters."""
    m = random_edge_count(p, spec.options)
    return random_edges(p["n"], m, directed=spec.options.directed, seed=spec.options.seed)


def _road(p: Mapping[str, Any], spec: GraphSpec) -> EdgeList:
    """road: from spec parameters."""
    return road_edges(p["rows"], p["cols"], p["keep"], seed=spec.options.seed)


GENERATORS: dict[str, Callable[[Mapping[str, Any], GraphSpec], EdgeList]] = {
    "rmat": _rmat,
    "random": _random,
    "grid2d": lambda p, spec: grid2d_edges(p["rows"], p["cols"]),
    "mesh2d": lambda p, spec: mesh2d_edges(p["rows"], p["cols"]),
    "road": _road,
}


def generate(spec: GraphSpec) -> EdgeList:
    """The edge list of a generator spec."""
    return GENERATORS[spec.kind](spec.params, spec)


def generated_edge_count(spec: GraphSpec) -> int:
    """How many edge records the generator of ``spec`` produces (sizes the cache decision)."""
    p = spec.params
    if spec.kind == "rmat":
        return p["ef"] << p["scale"]
    if spec.kind == "random":
        return random_edge_count(p, spec.options)
    return 3 * p["rows"] * p["cols"]
