"""Sweep files: graphs x algorithms x devices x spaces, one study each, with overrides.

::

    trials: 50                 # per study (default 100; the whole grid for sampler: grid)
    sampler: tpe               # optional: tpe, random, grid, gp
    sources: 4                 # optional: BFS/SSSP sources averaged per trial
    seed: 0                    # optional
    objective: time_us         # optional: metric[:min|:max][,metric...]
    references: true           # optional: thread and fixed-vwarp baselines per study
    graphs: [rmat:scale=12, {graph: "grid2d:rows=64,cols=64", trials: 20}]
    algorithms: [bfs, {algorithm: sssp, sources: 2}]
    devices: [h100]
    spaces: [vwarp, {space: my_space.yaml, sampler: random}]

An entry may be a mapping with its own value of any optional setting; for one study the
settings apply in the order top level, graph, algorithm, device, space (the last one wins).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from search_spaces.loader import load_space
from simulator.errors import WarpsweepError
from simulator.graph_spec import parse_spec
from simulator.yamldoc import YamlDoc
from simulator.yamldoc import load_yaml
from tuner.seeds import MAX_SEED
from tuner.tuning.plan import check_algorithm
from tuner.tuning.plan import check_device
from tuner.tuning.plan import check_objective
from tuner.tuning.samplers import sampler_info
from tuner.tuning.spec import Objective
from tuner.tuning.spec import StudySpec

AXES = (("graphs", "graph"), ("algorithms", "algorithm"), ("devices", "device"),
        ("spaces", "space"))
SETTINGS = ("trials", "sampler", "sources", "seed", "objective", "references")
TOP_KEYS = tuple(a for a, _ in AXES) + SETTINGS + ("description",)


def load_sweep(path: str | Path) -> list[StudySpec]:
    """Parse and check a sweep file into study specs; errors name the key and line."""
    doc = load_yaml(path)
    return parse_sweep(doc, base=Path(path).resolve().parent)


def parse_sweep(doc: YamlDoc, base: Path | None = None) -> list[StudySpec]:
    """Study specs of a loaded sweep document; errors name the key and line."""
    data = doc.data
    if not isinstance(data, dict):
        raise doc.error((), "a sweep must be a mapping with graphs, algorithms, devices, "
                        "spaces and trials")
    for key in data:
        if key not in TOP_KEYS:
            raise doc.error((key,), f"unknown key {key!r} (allowed: {', '.join(TOP_KEYS)})")
    if data.get("description") is not None and not isinstance(data["description"], str):
        given = data["description"]
        raise doc.error(("description",), f"description is text, not a "
                        f"{type(given).__name__} ({str(given)[:40]!r}): quote it")
    top = _settings(doc, (), data)
    axes: list[list[tuple[str, dict[str, Any]]]] = []
    graph_lines: list[str] = []  # each graph entry's file:line, where its study's errors point
    for plural, singular in AXES:
        if plural not in data:
            raise doc.error((), f"missing `{plural}` (a list of {singular}s)")
        items = data[plural]
        if isinstance(items, str):
            items = [items]
        if not isinstance(items, list) or not items:
            raise doc.error((plural,), f"`{plural}` must be a non-empty list, got {items!r}")
        entries = []
        for i, item in enumerate(items):
            path = (plural, i)
            if isinstance(item, dict):
                for key in item:
                    if key != singular and key not in SETTINGS:
                        raise doc.error((*path, key), f"unknown key {key!r} in a {singular} "
                                        f"entry (allowed: {singular}, {', '.join(SETTINGS)})")
                if singular not in item:
                    raise doc.error(path, f"a {singular} entry needs `{singular}:`")
                name, overrides = item[singular], _settings(doc, path, item)
            else:
                name, overrides = item, {}
            if not isinstance(name, str) or not name.strip():
                raise doc.error(path, f"a {singular} must be a non-empty string, got {name!r}")
            name = name.strip()
            if singular == "space":
                name = _space_ref(name, base)
            entry = (_checked(doc, path, singular, name), overrides)
            if entry in entries:
                first = entries.index(entry)
                raise doc.error(path, f"the same {singular} as {plural}.{first} (line "
                                f"{doc.line((plural, first))}): each study would run twice")
            entries.append(entry)
            if singular == "graph":
                line = doc.line(path)
                graph_lines.append(doc.source if line is None else f"{doc.source}:{line}")
        axes.append(entries)
    specs = []
    for g, origin in zip(axes[0], graph_lines, strict=True):
        for a in axes[1]:
            for d in axes[2]:
                for s in axes[3]:
                    settings = {**top, **g[1], **a[1], **d[1], **s[1]}
                    spec = StudySpec(graph=g[0], algorithm=a[0], device=d[0], space=s[0],
                                     origin=doc.source, graph_origin=origin)
                    specs.append(dataclasses.replace(spec, **settings))
    return specs


def _checked(doc: YamlDoc, path: tuple, axis: str, name: str) -> str:
    try:
        if axis == "graph":
            return parse_spec(name).canonical()  # files are read when the study is checked
        if axis == "algorithm":
            return check_algorithm(name)
        if axis == "device":
            return check_device(name)
        load_space(name).validate()
        return name
    except WarpsweepError as exc:
        raise doc.error(path, str(exc)) from None


def _space_ref(name: str, base: Path | None) -> str:
    if base is not None and (name.endswith((".yaml", ".yml")) or "/" in name):
        candidate = base / name
        if candidate.exists():
            return str(candidate)
    return name


def _settings(doc: YamlDoc, path: tuple, data: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in SETTINGS:
        if key not in data:
            continue
        value = data[key]
        at = (*path, key)
        if key in ("trials", "sources", "seed"):
            low = 0 if key == "seed" else 1
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise doc.error(at, f"`{key}` must be an integer >= {low}, got {value!r}")
            if key == "seed" and value > MAX_SEED:  # numpy and Optuna take 32-bit seeds
                raise doc.error(at, f"`seed` must be from 0 to {MAX_SEED}, got {value!r}")
        elif key == "references":
            if not isinstance(value, bool):
                raise doc.error(at, f"`references` must be true or false, got {value!r}")
        elif key == "objective":
            if not isinstance(value, str):
                raise doc.error(at, "`objective` must be a string such as time_us or "
                                f"'time_us,transactions', got {value!r}")
            try:
                value = check_objective(Objective.parse(value))
            except WarpsweepError as exc:
                raise doc.error(at, str(exc)) from None
        elif not isinstance(value, str):
            raise doc.error(at, f"`{key}` must be a string, got {value!r}")
        else:
            try:
                sampler_info(value)
            except WarpsweepError as exc:
                raise doc.error(at, str(exc)) from None
        out[key] = value
    return out
