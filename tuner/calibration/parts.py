"""The simulated side of a calibration: each measured (graph, algorithm, config) simulated once
with the base device into its launches' rows of bounds (``Parts``), cached on disk by graph
content, configuration, device fields and the simulator's sources, in several processes where
asked.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from simulator.device import Device
from simulator.device import device_digest
from simulator.device import get_device
from simulator.errors import ConfigError
from simulator.errors import WarpsweepError
from simulator.functional import functional_run
from simulator.graph_cache import content_digest
from simulator.graph_spec import parse_spec
from simulator.load import load_graph
from simulator.simulate import simulate
from simulator.strategy import Strategy
from tuner.calibration.calibrate import Measured
from tuner.calibration.calibrate import Parts
from tuner.env import simulator_digest
from tuner.results.location import home_path

DEFAULT_CACHE = Path("~/.cache/warpsweep/calibrate")
CACHE_VERSION = 2  # 2: an entry records the edges of the graph simulated (``m``)


# ---------------------------------------------------------------------------------- simulate


def parts_key(measured: Measured, device: Device, graph_digest: str, code: str) -> str:
    """The cache key of one simulation: graph content, algorithm, source, canonical config,
    device (name and fields) and simulator sources."""
    config = Strategy.parse(measured.config).to_params()
    text = json.dumps({
        "version": CACHE_VERSION, "graph": graph_digest, "algorithm": measured.algorithm,
        "source": measured.source, "config": config, "device": device.name,
        "device_digest": device_digest(device), "simulator": code,
    }, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _save_parts(path: Path, parts: Parts, meta: dict) -> None:
    """Write one cache entry atomically (npz, no pickle)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        np.savez(f, bounds=parts.bounds,
                 scalars=np.array([parts.host_cycles, parts.extra_cycles, parts.cycles]),
                 meta=np.array(json.dumps(meta, sort_keys=True)))
    os.replace(tmp, path)


def _load_parts(path: Path) -> tuple[Parts, int | None] | None:
    """A cache entry and the edges of the graph it simulated, or None when it is absent or
    unreadable."""
    try:
        with np.load(path, allow_pickle=False) as z:
            host, extra, cycles = (float(v) for v in z["scalars"])
            m = json.loads(str(z["meta"])).get("m")
            return Parts(np.array(z["bounds"], dtype=np.float64), host, extra, cycles), m
    except (OSError, KeyError, ValueError):
        return None


def _refuse_other_edges(rows: Sequence[Measured], m: int | None) -> None:
    """ConfigError where measured rows record other edge counts than the graph their spec
    loads (``m``): they were measured on another graph, or another version of its file."""
    recorded = {r.m for r in rows if r.m is not None}
    if m is not None and recorded and recorded != {m}:
        first = rows[0]
        raise ConfigError(
            f"graph {first.graph}: its measured rows record {sorted(recorded)} edges, but "
            f"{first.graph_spec} loads a graph of {m}: the spec names another graph "
            "(or another version of its file) than the one measured")


def _graph_digest(spec: str, name: str) -> str:
    try:
        return content_digest(parse_spec(spec))
    except WarpsweepError as exc:
        raise ConfigError(f"graph {name} ({spec}) will not load: {exc}") from None


def _load(spec: str, name: str):
    try:
        return load_graph(spec)
    except (WarpsweepError, OSError, ValueError) as exc:
        raise ConfigError(f"graph {name} ({spec}) will not load: {exc}") from None


def _simulate_group(rows: Sequence[Measured], device: Device) -> tuple[list[Parts], int]:
    """Simulate measured configurations of one (graph, algorithm, source): one functional run
    shared by every configuration; and the edges of the graph simulated."""
    first = rows[0]
    graph = _load(first.graph_spec, first.graph)
    _refuse_other_edges(rows, graph.m)
    try:
        functional = functional_run(graph, first.algorithm, first.source)
    except WarpsweepError as exc:
        raise ConfigError(f"graph {first.graph}: {first.algorithm}: {exc}") from None
    out = []
    for r in rows:
        result = simulate(graph, r.algorithm, r.config, device, source=r.source,
                          functional=functional)
        out.append(Parts(np.asarray(result.bounds, dtype=np.float64), float(result.host_cycles),
                         float(result.extra_cycles), float(result.cycles)))
    return out, graph.m


def _group_worker(rows: list[Measured], device: Device, paths: list[str],
                  keys: list[dict]) -> None:
    """Process-pool task: simulate a group and write its cache entries."""
    parts, m = _simulate_group(rows, device)
    for one, path, meta in zip(parts, paths, keys, strict=True):
        _save_parts(Path(path), one, {**meta, "m": m})


def simulate_parts(
    measured: Sequence[Measured],
    device: str | Device,
    *,
    cache: str | Path | None = DEFAULT_CACHE,
    jobs: int = 1,
    progress: Callable[[str], None] | None = None,
) -> list[Parts]:
    """The simulated parts of every measured row (same order), from ``cache`` where present.

    One functional run per (graph, algorithm, source), shared by its configurations; ``jobs``
    > 1 simulates the groups in that many processes (they write the cache, which is needed).
    """
    device = get_device(device)
    cache_dir = home_path(cache, "--cache") if cache is not None else None
    if jobs > 1 and cache_dir is None:
        raise ConfigError("simulating in several processes needs a cache directory")
    code = simulator_digest()
    digests: dict[str, str] = {}
    out: list[Parts | None] = [None] * len(measured)
    todo: dict[tuple[str, str, int], list[int]] = {}
    paths: list[Path | None] = [None] * len(measured)
    for i, r in enumerate(measured):
        if r.graph_spec not in digests:
            digests[r.graph_spec] = _graph_digest(r.graph_spec, r.graph)
        if cache_dir is not None:
            key = parts_key(r, device, digests[r.graph_spec], code)
            paths[i] = cache_dir / key[:2] / f"{key}.npz"
            hit = _load_parts(paths[i])
            if hit is not None:  # the rows' edges checked against the graph simulated
                _refuse_other_edges([r], hit[1])
                out[i] = hit[0]
        if out[i] is None:
            todo.setdefault((r.graph_spec, r.algorithm, r.source), []).append(i)
    groups = sorted(todo.items(), key=lambda kv: -(measured[kv[1][0]].m or 0))

    def meta(i: int) -> dict:
        r = measured[i]
        return {"graph": r.graph, "graph_spec": r.graph_spec, "algorithm": r.algorithm,
                "config": r.config, "source": r.source, "device": device.name}

    if jobs > 1 and groups:
        # one task per configuration (each repeats its group's functional run, which costs
        # little beside the timing), largest graphs first, so that no process is left with a
        # whole big group
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = {
                pool.submit(_group_worker, [measured[i]], device, [str(paths[i])],
                            [meta(i)]): i
                for _, idx in groups for i in idx
            }
            for future, i in futures.items():
                future.result()
                written = _load_parts(paths[i])
                if written is None:
                    raise ConfigError(f"cache entry {paths[i]} was not written")
                out[i] = written[0]
                if progress:
                    r = measured[i]
                    progress(f"simulated {r.graph} {r.algorithm} {r.config}")
        return out  # type: ignore[return-value]
    for (_, algorithm, _), idx in groups:
        rows = [measured[i] for i in idx]
        simulated, m = _simulate_group(rows, device)
        for i, parts in zip(idx, simulated, strict=True):
            out[i] = parts
            if paths[i] is not None:
                _save_parts(paths[i], parts, {**meta(i), "m": m})
        if progress:
            progress(f"simulated {rows[0].graph} {algorithm}: {len(rows)} configs")
    return out  # type: ignore[return-value]
