"""What the ready answers take and give: the filters and objectives of a question, and the
dataclasses of the answers of ``best``, ``effect`` and ``pareto`` (each with its JSON form).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from simulator.errors import ConfigError
from tuner.results.configs import config_text
from tuner.results.measured import MeasuredWinner
from tuner.tuning.spec import MAXIMIZED

# Metrics where a larger value is better; every other metric is minimised.
THREAD_LABEL = "thread"
AT_BEST = "at best"
BEST_WITH_VALUE = "best with this value"


# -- inputs ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Filters:
    """Which studies to answer for: a graph (spec, id or name), an algorithm, a device."""

    graph: str | None = None
    algo: str | None = None
    device: str | None = None

    def given(self) -> bool:
        """Whether any filter is set."""
        return any(v is not None for v in (self.graph, self.algo, self.device))


@dataclass(frozen=True)
class Objective:
    """A metric and whether larger is better."""

    metric: str
    maximize: bool = False

    @classmethod
    def parse(cls, text: str) -> Objective:
        """``metric``, ``metric:max`` or ``metric:min``; the direction defaults by metric."""
        name, colon, direction = text.strip().partition(":")
        name, direction = name.strip(), direction.strip().lower()
        if not name:
            raise ConfigError(f"objective {text!r}: expected METRIC[:max|:min]")
        if colon and direction not in ("max", "min"):
            raise ConfigError(f"objective {text!r}: direction must be max or min, "
                              f"got {direction!r}")
        maximize = direction == "max" if colon else name in MAXIMIZED
        return cls(name, maximize)

    def __str__(self) -> str:
        return f"{self.metric}:{'max' if self.maximize else 'min'}"

    def gain(self, reference: float | None, value: float | None) -> float | None:
        """How many times better ``value`` is than ``reference`` (> 1: better)."""
        if reference is None or value is None:
            return None
        num, den = (value, reference) if self.maximize else (reference, value)
        return num / den if den > 0 and num >= 0 else None


def parse_objectives(text: str) -> list[Objective]:
    """Comma-separated objectives, e.g. ``time_us,transactions`` or ``meps:max,bytes``."""
    parts = text.split(",")
    if text.strip() and any(not part.strip() for part in parts):
        raise ConfigError(f"objectives {text!r}: an empty name between commas")
    objectives = [Objective.parse(part) for part in parts if part.strip()]
    if not objectives:
        raise ConfigError(f"objectives {text!r}: expected METRIC[:max|:min],...")
    names = [o.metric for o in objectives]
    if len(set(names)) != len(names):
        raise ConfigError(f"objectives {text!r}: a metric is named twice")
    return objectives


# -- outputs --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Study:
    """One study: its key, graph (name, spec, id), algorithm, device, space, objective and
    its complete evaluations (``complete``: `tune`'s evaluations count the failed too)."""

    key: str
    graph: str
    graph_spec: str
    graph_id: str
    algorithm: str
    device: str
    space: str
    objective: str
    complete: int


@dataclass(frozen=True)
class Config:
    """A configuration: its canonical key and knob values."""

    key: str
    params: dict[str, Any]

    @property
    def text(self) -> str:
        """The knobs a reader needs (those away from the default they would take)."""
        return config_text(self.params)


@dataclass(frozen=True)
class FixedConfig:
    """The best single configuration across the graphs of an (algorithm, device) group: among
    those evaluated on every graph, the lowest geometric mean of value relative to each
    graph's best (1.0: the best on every graph)."""

    algorithm: str
    device: str
    config: Config
    graphs: int
    geomean_ratio: float
    workloads: int = 0  # (graph, sources) pairs the mean is over: a graph timed from other
    # sources counts once each (0: as many as graphs)
    gpu: str | None = None  # under a measured metric, the GPU whose studies it compares


@dataclass(frozen=True)
class StudyBest:
    """A study's best row (its role, label or trial number say whether a reference won) and
    its speedups over the thread reference and the group's fixed configuration (> 1: the
    best is better)."""

    study: Study
    value: float
    config: Config
    role: str
    label: str | None
    trial: int | None
    thread_value: float | None
    vs_thread: float | None
    fixed: FixedConfig | None
    fixed_value: float | None
    vs_fixed: float | None
    # measured on the GPU (``tune --verify K``; None where the study was not measured): the
    # best row's configuration measured, and the study's measured winner
    measured_us: float | None = None
    measured: MeasuredWinner | None = None

    @property
    def measured_regret(self) -> float | None:
        """The simulator's pick's (the search's rank 1) measured time over the measured
        winner's (None: either was not measured), whatever metric ranks this table: ranked
        by ``measured_us`` its best is the winner, and the regret had read 1."""
        if self.measured is None or self.measured.pick_us is None:
            return None
        return self.measured.pick_us / self.measured.measured_us


@dataclass
class BestAnswer:
    """`best`: one row per study, and the fixed configuration of each group."""

    objective: Objective
    studies: list[StudyBest]
    fixed: list[FixedConfig]

    def to_json(self) -> dict[str, Any]:
        """JSON-able dict (non-finite numbers as null)."""
        return _clean({"objective": str(self.objective),
                       "studies": [_study_best_json(s) for s in self.studies],
                       "fixed": [_fixed_json(f) for f in self.fixed]})


@dataclass(frozen=True)
class EffectPoint:
    """The metric at one value of the knob (None: the knob does not apply), from the best row
    with every other knob as in the study's best configuration (``others`` AT_BEST) or, with
    no such row, the best row with this value (BEST_WITH_VALUE). ``vs_best``: how many times
    better the study's best is; ``configurations``: complete rows with this value."""

    value: Any
    metric: float
    vs_best: float | None
    others: str
    config: Config
    configurations: int


@dataclass(frozen=True)
class StudyEffect:
    """One study's metric as a function of the knob, the other knobs at the best."""

    study: Study
    best_value: Any
    best_metric: float
    best_config: Config
    points: list[EffectPoint]


@dataclass
class EffectAnswer:
    """`effect`: per study, the metric for each value of the knob."""

    knob: str
    objective: Objective
    studies: list[StudyEffect]

    def to_json(self) -> dict[str, Any]:
        """JSON-able dict (non-finite numbers as null)."""
        return _clean({
            "knob": self.knob, "objective": str(self.objective),
            "studies": [{"study": vars(s.study), "best_value": s.best_value,
                         "best_metric": s.best_metric, "best_config": _config_json(s.best_config),
                         "points": [{"value": p.value, "metric": p.metric, "vs_best": p.vs_best,
                                     "others": p.others, "configurations": p.configurations,
                                     "config": _config_json(p.config)} for p in s.points]}
                        for s in self.studies],
        })


@dataclass(frozen=True)
class ParetoPoint:
    """A non-dominated configuration and its objective values."""

    config: Config
    values: tuple[float, ...]


@dataclass(frozen=True)
class StudyFront:
    """One study's Pareto front over the configurations evaluated."""

    study: Study
    points: list[ParetoPoint]


@dataclass
class ParetoAnswer:
    """`pareto`: per study, the non-dominated configurations, best first objective first."""

    objectives: list[Objective]
    studies: list[StudyFront] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """JSON-able dict (non-finite numbers as null)."""
        names = [o.metric for o in self.objectives]
        return _clean({
            "objectives": [str(o) for o in self.objectives],
            "studies": [{"study": vars(s.study),
                         "front": [{**dict(zip(names, p.values, strict=True)),
                                    "config": _config_json(p.config)} for p in s.points]}
                        for s in self.studies],
        })


def value_sort_key(value: Any) -> tuple:
    """Sort key for knob values: None last, numbers numerically, the rest as text."""
    if value is None:
        return (2, 0, "")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, value, "")
    return (1, 0, str(value))


def study_sort_key(study: Study) -> tuple:
    return (study.algorithm, study.device, study.graph, study.space, study.key)


# -- JSON -----------------------------------------------------------------------------------
def _config_json(config: Config) -> dict[str, Any]:
    return {"text": config.text, "params": config.params}


def _fixed_json(f: FixedConfig) -> dict[str, Any]:
    return {"algorithm": f.algorithm, "device": f.device, "config": _config_json(f.config),
            "graphs": f.graphs, "workloads": f.workloads or f.graphs,
            "geomean_ratio": f.geomean_ratio, "gpu": f.gpu}


def _study_best_json(s: StudyBest) -> dict[str, Any]:
    return {"study": vars(s.study), "value": s.value, "config": _config_json(s.config),
            "role": s.role, "label": s.label, "trial": s.trial, "thread_value": s.thread_value,
            "vs_thread": s.vs_thread,
            "fixed_config": _config_json(s.fixed.config) if s.fixed else None,
            "fixed_value": s.fixed_value, "vs_fixed": s.vs_fixed,
            "measured_us": s.measured_us, "measured_regret": s.measured_regret,
            "measured_winner": vars(s.measured) if s.measured is not None else None}


def _clean(value: Any) -> Any:
    """Non-finite floats to None, recursively (strict JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value
