"""``load_graph(spec)``: the one way to get a normalised Graph from a spec string.

Pipeline: parse the spec; generate or read the edges; normalise (drop self loops and duplicate
edges, symmetrise unless ``directed=true``); add ``weights=random``; relabel for ``order=``.
File specs (and big generated graphs) go through the on-disk cache of :mod:`graph_cache`.
"""

from __future__ import annotations

import numpy as np

from simulator import graph_cache
from simulator.edges import EdgeList
from simulator.errors import GraphError
from simulator.generators import ORDER_STREAM
from simulator.generators import generate
from simulator.generators import seeded_rng
from simulator.graph import Graph
from simulator.graph import frozen
from simulator.graph_spec import GraphSpec
from simulator.graph_spec import parse_spec
from simulator.loaders import read_edges
from simulator.sizes import check_spec

_GOLDEN = 0x9E3779B97F4A7C15
_MASK64 = (1 << 64) - 1


def load_graph(spec: str | GraphSpec, *, cache: bool = True) -> Graph:
    """The normalised graph of ``spec``, from the on-disk cache when ``cache`` allows (and
    ``$WARPSWEEP_CACHE_MAX`` is not 0: no entry written, none read)."""
    parsed = parse_spec(spec)
    check_spec(parsed)
    use_cache = (cache and graph_cache.should_cache(parsed)
                 and graph_cache.cache_limit() > 0)
    key = graph_cache.cache_key(parsed) if use_cache else None
    if key is not None:
        cached = graph_cache.load_cached(parsed, key)
        if cached is not None:
            return cached
    graph = build_graph(parsed)
    if key is not None:  # under the key of the file as it was before it was read
        graph_cache.store(parsed, graph, key)
    return graph


def build_graph(spec: GraphSpec) -> Graph:
    """Generate or read ``spec``'s graph and normalise it (no cache)."""
    canonical = spec.canonical()
    opts = spec.options
    if spec.is_file:
        edges = read_edges(
            spec.path,
            spec.params.get("format"),
            weights=opts.weights == "file",
            label=canonical,
            directed=opts.directed,
        )
    else:
        edges = generate(spec)
    graph = normalise(edges, directed=opts.directed, name=spec.unique_name(), spec=canonical,
                      source="file" if spec.is_file else spec.kind)
    if opts.weights == "random":
        graph = graph.with_weights(random_weights(graph, opts.seed), symmetric=True)
    if opts.order != "none":
        graph = relabel(graph, vertex_order(graph, opts.order, opts.seed))
    return graph


def normalise(edges: EdgeList, *, directed: bool, name: str, spec: str,
              source: str = "") -> Graph:
    """CSR from an edge list: no self loops or duplicates, symmetric unless ``directed``;
    ``source`` ("file" or the generator's kind) says where an empty edge list came from."""
    src, dst, w = edges.src, edges.dst, edges.weights
    if directed and edges.symmetric:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
        w = None if w is None else np.concatenate([w, w])
    if edges.n <= 0:
        raise GraphError(f"{spec}: empty graph: no vertices")
    graph = Graph.from_edges(src, dst, edges.n, w, directed=directed, name=name, spec=spec)
    if graph.m == 0:
        raise GraphError(f"{spec}: empty graph: {_why_no_edges(edges, source)} (a graph "
                         f"needs at least one edge; this one has {edges.n:,} vertices and none)")
    return graph


def _why_no_edges(edges: EdgeList, source: str) -> str:
    """Why ``edges`` normalised to no edge at all: none were read or generated (a road
    grid's ``keep`` dropping every one), or every one was a self loop: the message had
    blamed self loops where there were none."""
    if edges.src.size:
        return f"no edges (all {edges.src.size:,} are self loops, which are dropped)"
    if source == "file":
        return "no edges in the file"
    if source == "road":
        return "no edges were generated: keep= dropped every grid edge; raise keep"
    return "no edges were generated"


def random_weights(graph: Graph, seed: int) -> np.ndarray:
    """Uniform integer weights 1..100 (float32), one per stored edge, from ``seed``.

    Each weight is a splitmix64 hash of the seed and the edge's endpoints (unordered for an
    undirected graph), so both directions of an undirected edge share one weight and a
    relabelled graph keeps the weights of its edges.
    """
    u = graph.sources.astype(np.uint64)
    v = graph.indices.astype(np.uint64)
    if not graph.directed:
        u, v = np.minimum(u, v), np.maximum(u, v)
    z = u * np.uint64(graph.n) + v
    z += np.uint64((seed * _GOLDEN + _GOLDEN) & _MASK64)
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return (z % np.uint64(100) + np.uint64(1)).astype(np.float32)


def vertex_order(graph: Graph, order: str, seed: int = 0) -> np.ndarray:
    """The new id of every vertex for ``order`` = degree | bfs | random."""
    n = graph.n
    if order == "random":
        return seeded_rng(seed, ORDER_STREAM).permutation(n)
    if order == "degree":
        sequence = np.argsort(-graph.degrees, kind="stable")
    elif order == "bfs":
        sequence = bfs_sequence(graph)
    else:
        raise GraphError(f"{graph.spec or graph.name}: unknown vertex order {order!r}")
    new_id = np.empty(n, dtype=np.int64)
    new_id[sequence] = np.arange(n, dtype=np.int64)
    return new_id


def bfs_sequence(graph: Graph) -> np.ndarray:
    """All vertices in BFS order of the underlying undirected graph, component by component.

    Components come in order of their lowest vertex, each traversed from that vertex (one BFS
    from a virtual root joined to every component's root).
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import breadth_first_order
    from scipy.sparse.csgraph import connected_components

    n = graph.n
    adj = csr_matrix((np.ones(graph.m, dtype=np.int8), graph.indices, graph.indptr), (n, n))
    if graph.directed:
        adj = (adj + adj.T).tocsr()
        adj.sort_indices()
    _, labels = connected_components(adj, directed=False)
    first = np.ones(n, dtype=bool)
    by_label = np.argsort(labels, kind="stable")
    first[1:] = labels[by_label][1:] != labels[by_label][:-1]
    roots = np.sort(by_label[first])
    indptr = np.append(adj.indptr.astype(np.int64), adj.indptr[-1] + roots.size)
    indices = np.concatenate([adj.indices, roots]).astype(np.int32)
    aug = csr_matrix((np.ones(indices.size, dtype=np.int8), indices, indptr), (n + 1, n + 1))
    sequence = breadth_first_order(aug, n, directed=True, return_predecessors=False)[1:]
    rank = np.empty(labels.max() + 1, dtype=np.int64)
    rank[labels[roots]] = np.arange(roots.size)
    return sequence[np.argsort(rank[labels[sequence]], kind="stable")]


def relabel(graph: Graph, new_id: np.ndarray) -> Graph:
    """The same graph with vertex v renamed ``new_id[v]`` (a permutation of 0..n-1)."""
    n = graph.n
    src = np.asarray(new_id, dtype=np.int64)[graph.sources]
    dst = np.asarray(new_id, dtype=np.int64)[graph.indices]
    key = src * n + dst
    del src, dst
    weights = graph.weights
    if weights is None:
        key.sort()
    else:
        order = np.argsort(key)
        key, weights = key[order], weights[order]
    rows, cols = np.divmod(key, n)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return Graph(
        frozen(indptr), frozen(cols.astype(np.int32)),
        None if weights is None else frozen(weights), name=graph.name, spec=graph.spec,
        directed=graph.directed, known_symmetric=not graph.directed,  # relabelled: as it was
    )
