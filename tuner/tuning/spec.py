"""What a study is: a (graph, algorithm, device, space, objective) (``StudySpec``), its key (the
name of its journal and of its rows' study, stable across versions so that older results
directories resume), its objective, budget and references, the jobs the driver hands out and
the summary a finished study gives.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from search_spaces.loader import MAX_GRID
from search_spaces.loader import SearchSpace
from simulator.device import Device
from simulator.device import device_digest
from simulator.errors import ConfigError
from simulator.errors import WarpsweepError
from tuner.results.records import TrialRecord
from tuner.tuning.evaluate import SOURCE_ALGORITHMS
from tuner.tuning.evaluate import GraphMeta
from tuner.tuning.evaluate import graph_slug
from tuner.tuning.samplers import sampler_info

MAXIMIZED = frozenset({"simd_efficiency", "lane_efficiency", "me", "work_efficiency", "meps"})
DEFAULT_TRIALS = 100


REFERENCE_WIDTHS = (1, 2, 4, 8, 16, 32)
# Each preset's device digest when presets were still code (before issue 42). A study of a
# preset whose fields still hash to this keeps its key (older results directories resume); any
# other device, a preset whose fields changed (``h100``, now the calibrated H100), or a device
# file, puts its digest in the key, so results simulated with other fields are never resumed
# as the same study.
LEGACY_PRESET_DIGESTS = {
    "gtx260": "d49c1358d7b5429b", "c2050": "0ca5405b1fbd453a",
    "quadro6000": "7bdd3633037cb1d7", "a100": "c587df0a7d766c24",
    "h100": "9a731a5c989842f1", "h200": "4f14017b63115f1b",
}


def policy_paths(space: SearchSpace) -> list[str]:
    """The policy files a space can set (``policy``: fixed, or among a param's choices)."""
    paths = [str(v) for k, v in space.fixed if k == "policy" and v is not None]
    paths += [str(v) for p in space.params if p.name == "policy" for v in p.choices
              if v is not None]
    return sorted(set(paths))


def policy_digests(space: SearchSpace) -> dict[str, str]:
    """The content digest of each policy file a space can set, by its path as written
    (``missing`` where the path names no file)."""
    from simulator.policy import policy_file

    out = {}
    for path in policy_paths(space):
        try:
            out[path] = hashlib.sha256(policy_file(path).read_bytes()).hexdigest()[:16]
        except OSError:
            out[path] = "missing"
    return out


def device_fields_digest(name: str, model: Device | None = None) -> str:
    """The digest of the fields a study simulates with: ``model`` (a device file's), else the
    preset ``name`` as this warpsweep defines it."""
    from simulator.device import get_device

    return device_digest(model if model is not None else get_device(name))


@dataclass(frozen=True)
class Objective:
    """Metric(s) to optimise and their directions (``time_us``, ``time_us,bytes``,
    ``simd_efficiency:max``)."""

    metrics: tuple[str, ...]
    directions: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> Objective:
        """Parse ``metric[:min|:max][,metric...]``; default direction by metric."""
        metrics, directions = [], []
        for part in (p.strip() for p in str(text).split(",")):
            name, colon, way = part.partition(":")
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ConfigError(f"objective {part!r} is not a metric name[:min|:max]")
            if way not in ("", "min", "max") or (colon and not way):
                raise ConfigError(f"objective {part!r}: direction must be min or max")
            if name in metrics:
                raise ConfigError(f"objective {text!r} names {name!r} twice")
            metrics.append(name)
            default = "max" if name in MAXIMIZED else "min"
            directions.append("maximize" if (way or default) == "max" else "minimize")
        return cls(tuple(metrics), tuple(directions))

    def __str__(self) -> str:
        # ":max" always (as study keys have it), ":min" where the metric's default is max: a
        # minimised simd_efficiency had been written bare, which parses back as max
        return ",".join(
            m + (":max" if d == "maximize" else ":min" if m in MAXIMIZED else "")
            for m, d in zip(self.metrics, self.directions, strict=True)
        )

    def values(self, metrics: dict[str, float]) -> list[float]:
        """Objective values from a metrics dict; a missing metric is a ConfigError."""
        missing = [m for m in self.metrics if m not in metrics]
        if missing:
            raise ConfigError(
                f"objective metric {missing[0]!r} is not reported by the simulator; "
                f"choose from {', '.join(sorted(metrics))}"
            )
        return [float(metrics[m]) for m in self.metrics]

    def sort_key(self, values: list[float]) -> float:
        """Key that sorts the first objective best-first."""
        return values[0] if self.directions[0] == "minimize" else -values[0]


def resume_seed(seed: int, trials: int) -> int:
    """The sampler's seed for a study resumed with ``trials`` trials: the same for the same
    (seed, trials), different from ``seed`` and from every other resume point."""
    digest = hashlib.sha256(f"warpsweep-resume|{seed}|{trials}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def used_sources(spec: StudySpec, meta: GraphMeta | None) -> int:
    """Simulations averaged per evaluation: the sources chosen on the graph (fewer than asked
    on a graph with fewer vertices that have edges), or the asked number before it is loaded."""
    if meta is not None and meta.sources:
        return len(meta.sources)
    return spec.n_sources()


@dataclass(frozen=True)
class StudySpec:
    """What to tune: one study of a tune run or of a sweep's cross product."""

    graph: str
    algorithm: str
    device: str
    space: str
    trials: int | None = None
    sampler: str = "tpe"
    objective: Objective = field(default_factory=lambda: Objective.parse("time_us"))
    sources: int = 1
    seed: int = 0
    references: bool = True
    origin: str = ""  # the sweep file a study comes from ("" for `tune`)
    graph_origin: str = ""  # its graph entry's FILE:LINE there, which graph refusals name
    graph_content: str = ""
    # the device's fields (``device`` is its name), read on the driver: what the workers
    # simulate with (a device file's, or a preset's as this warpsweep defines it)
    device_model: Device | None = None
    # the device as the entry gave it (a preset's name or a file's path), where refusals name
    # two entries whose devices read as one (probe SWEEP2); no part of the study's identity
    device_given: str = field(default="", compare=False)

    @property
    def space_ref(self) -> tuple[str, str]:
        """The space as this study searches it: named, and narrowed to the algorithm."""
        return (self.space, self.algorithm)

    def n_sources(self) -> int:
        """Sources actually used (1 for algorithms without one)."""
        return self.sources if self.algorithm in SOURCE_ALGORITHMS else 1

    def key(self, space: SearchSpace, policies: dict[str, str] | None = None) -> str:
        """Stable study key: readable parts plus a hash of everything that defines the study
        (``policies``: the space's ``policy_digests``, where the caller took them already)."""
        ident = {
            "graph": self.graph.strip(), "graph_content": self.graph_content,
            "algorithm": self.algorithm, "device": self.device,
            "space": space.name, "space_digest": space.digest, "objective": str(self.objective),
            "sources": self.n_sources(),
            "source_seed": self.seed if self.n_sources() > 1 else None,
        }
        if policies is None:
            policies = policy_digests(space)
        if policies:  # a policy file retrained or edited: another study, as a space file
            ident["policy_files"] = policies
        fields = self.device_digest
        if fields != LEGACY_PRESET_DIGESTS.get(self.device):
            ident["device_fields"] = fields  # other fields under one name: another study
        digest = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:10]
        return f"{graph_slug(self.graph)}.{self.algorithm}.{self.device}.{space.name}.{digest}"

    @property
    def device_digest(self) -> str:
        """The digest of the device fields this study simulates with."""
        return device_fields_digest(self.device, self.device_model)

    def prepare_key(self) -> tuple[str, str, str, int, int]:
        """Studies with equal prepare keys share a prepared graph and functional runs."""
        return (self.graph.strip(), self.graph_content, self.algorithm, self.n_sources(),
                self.seed)


@dataclass
class StudySummary:
    """What a finished (or stopped) study found."""

    key: str
    spec: StudySpec
    space: str
    budget: int
    done: int
    evaluations: int
    failed: int
    duplicates: int
    best: list[TrialRecord]
    references: dict[str, TrialRecord]
    graph: GraphMeta | None
    exhausted: bool = False
    stored_sources: int = 0  # the rows' n_sources, where the graph was not loaded (a resume
    # with nothing left to run)
    to_retry: int = 0  # configurations failed for the machine's sake, not answered since: a
    # resume tries them again (``study.failed_by_environment``)
    ranked: list[TrialRecord] = field(default_factory=list)  # every configuration evaluated,
    # best first (the Pareto front, for several objectives): ``best`` is its head
    # the reason most of its failed evaluations give, and how many give it (None: none failed)
    common_failure: tuple[str, int] | None = None

    @property
    def n_sources(self) -> int:
        """Sources each value is a mean over: those the graph had room for (``--sources``
        beyond its vertices with edges picks them all), as the rows recorded them where the
        graph was not loaded, else as asked."""
        if (self.graph is None or not self.graph.sources) and self.stored_sources:
            return self.stored_sources
        return used_sources(self.spec, self.graph)

    @property
    def total_evaluations(self) -> int:
        """Simulator runs the study holds: its configurations evaluated and its references."""
        return self.evaluations + len(self.references)

    @property
    def complete(self) -> bool:
        """Whether the study reached its budget, or its sampler ran out of new configurations."""
        return self.done >= self.budget or self.exhausted


def covers_space(budget: int, space: SearchSpace) -> bool:
    """Whether a sampler's ``budget`` is as many configurations as ``space`` holds, or more
    (counted only where the space draws few: a finite space of millions is never listed)."""
    return (space.finite and not _draws_more_than(space, max(budget, MAX_GRID))
            and budget >= distinct_configurations(space, drawable=True))


def budget_of(spec: StudySpec, space: SearchSpace) -> int:
    """Distinct configurations a study evaluates: ``trials`` (default 100; grid sampler: the
    whole grid), never more than a finite space holds."""
    if sampler_info(spec.sampler).exhaustive:
        space.grid_size()  # refused beyond MAX_GRID, before any is built
        distinct = distinct_configurations(space)
        return min(spec.trials or distinct, distinct)
    budget = spec.trials or DEFAULT_TRIALS
    # a space a sampler draws from finitely caps the budget (its repeats are answered from
    # the study, and would otherwise be asked for until 50 in a row ended it)
    if not space.finite or _draws_more_than(space, max(budget, MAX_GRID)):
        return budget
    return min(budget, distinct_configurations(space, drawable=True))


@functools.lru_cache(maxsize=64)
def _draws_more_than(space: SearchSpace, limit: int) -> bool:
    """Whether a sampler can draw more than ``limit`` configurations of ``space``: once per
    space (a sweep of thousands of studies over a few spaces had counted them for each, some
    minutes before its first study)."""
    return any(i >= limit for i, _ in enumerate(space.drawable_configs()))


@functools.lru_cache(maxsize=64)
def distinct_configurations(space: SearchSpace, drawable: bool = False) -> int:
    """Configurations of a space's grid (``drawable``: of all a sampler can draw) that differ
    once defaults are applied (each invalid combination counts once: it is tried once, then
    answered from the study)."""
    from simulator import Strategy

    keys = set()
    for config in (space.drawable_configs() if drawable else space.configs()):
        try:
            keys.add(Strategy.from_params(config))
        except WarpsweepError:
            keys.add(json.dumps(config, sort_keys=True, default=repr))
    return len(keys)


def planned_runs(spec: StudySpec, space: SearchSpace) -> int:
    """Runs a study makes when it runs to its end: its budget plus the references."""
    return budget_of(spec, space) + (len(reference_configs()) if spec.references else 0)


def reference_configs() -> dict[str, dict[str, Any]]:
    """Baselines every study is compared with: thread-per-vertex and fixed virtual warps."""
    refs: dict[str, dict[str, Any]] = {"thread": {"mapping": "thread"}}
    for w in REFERENCE_WIDTHS:
        refs[f"vwarp w={w}"] = {"mapping": "vwarp", "w": w}
    return refs
