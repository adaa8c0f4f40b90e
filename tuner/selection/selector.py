"""The adaptive selector: graph features -> best configuration, learnt from a results directory.

A group (algorithm, device) of a results directory becomes a matrix of simulated times, graphs x
candidate configurations, over the configurations evaluated on every graph of the group (a grid
sweep gives a full one); a graph whose study was measured on the GPU (``tune --verify K``)
takes its measured times instead (``measured_times``), so its best is the measured best.
A model predicts, for a new graph, each candidate's time relative to
the graph's best (the geometric mean over the training graphs it deems similar) and picks the
smallest: k nearest neighbours over standardised (log-scaled where heavy-tailed) features, or a
multi-output regression tree over the same inputs, with the kind, feature subset and
hyperparameters chosen by leave-one-graph-out cross-validation on the training graphs only.
:func:`evaluate` measures that choice by leave-one-graph-out against fixed rules;
:func:`compare_adaptive` puts the per-iteration ``adaptive`` mapping against the best constant
configuration per graph.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import numpy as np
import sklearn
from sklearn.linear_model import LinearRegression
from sklearn.neighbors import KNeighborsRegressor
from sklearn.neighbors import NearestNeighbors
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier
from sklearn.tree import DecisionTreeRegressor

from simulator.errors import ConfigError
from simulator.errors import WarpsweepError
from simulator.features import FEATURE_KEYS
from simulator.strategy import Strategy
from tuner.analysis.trials import workload_text
from tuner.results.configs import canonical_params
from tuner.results.configs import config_key
from tuner.results.query import graph_name
from tuner.seeds import MAX_SEED

# Features on a multiplicative scale (sizes, degrees, diameter): compared as signed log1p.
LOG_FEATURES = frozenset({
    "n", "m", "avg_degree", "median_degree", "max_degree", "degree_std", "degree_cv",
    "degree_skewness", "degree_p90", "degree_p99", "isolated", "est_diameter",
})
ALL_FEATURES = tuple(k for k in FEATURE_KEYS if k != "directed")
# Named feature subsets the cross-validation chooses from.
FEATURE_SUBSETS: dict[str, tuple[str, ...]] = {
    "degree": ("avg_degree", "degree_gini", "degree_cv", "max_degree", "degree_p90"),
    "shape": ("avg_degree", "degree_gini", "max_degree", "est_diameter", "locality"),
    "size+shape": ("n", "m", "avg_degree", "degree_gini", "max_degree", "est_diameter"),
    "all": ALL_FEATURES,
}
KNN_NEIGHBOURS = (0, 5, 3, 2, 1)  # 0: every training graph
KNN_WEIGHTS = ("uniform", "distance")
TREE_DEPTHS = (1, 2, 3)
TREE_MIN_LEAF = (2, 1)

POLICY_SELECTOR = "selector"
POLICY_THREAD = "always thread"
POLICY_W32 = "always vwarp w=32"
POLICY_POW2 = "w=pow2(avg degree)"
POLICY_BEST_SINGLE = "best single config"
POLICIES = (POLICY_SELECTOR, POLICY_THREAD, POLICY_W32, POLICY_POW2, POLICY_BEST_SINGLE)
MIN_GRAPHS = 3
MIN_FIT_GRAPHS = 4  # training graphs needed to fit the absolute-time estimate
TIE = 0.005  # adaptive "within 0.5%" of the best constant configuration


# -- configurations ---------------------------------------------------------------------------
def describe_config(config: dict[str, Any]) -> str:
    """Short text of a configuration: the mapping and the knobs away from their defaults
    (``vwarp w=8 chunk=16 distribution=dynamic``)."""
    mapping = config.get("mapping", "thread")
    try:
        defaults = Strategy(mapping=mapping, driven=config.get("driven", "topology")).to_params()
    except WarpsweepError:
        defaults = {}
    parts = [str(mapping)]
    if mapping == "vwarp" and "w" in config:
        parts.append(f"w={config['w']}")
    for knob, value in config.items():
        if knob in ("mapping", "w") or (defaults.get(knob, object()) == value
                                        and (knob != "driven" or value == "topology")):
            continue  # (driven's default is topology: the defaults above are of its value)
        parts.append(f"{knob}={value}")
    return " ".join(parts)


def reference_config(mapping: str, w: int | None = None) -> dict[str, Any]:
    """Canonical form of a fixed rule's configuration (``thread``, ``vwarp`` with W)."""
    return Strategy.from_params({"mapping": mapping, **({"w": w} if w else {})}).to_params()


def pow2_width(avg_degree: float) -> int:
    """The next power of two at or above the average degree, clamped to 1..32."""
    w = 1
    while w < avg_degree and w < 32:
        w *= 2
    return w


# -- the time matrix --------------------------------------------------------------------------
@dataclass
class GraphInfo:
    """A graph of a results group: its id, spec, features and short name."""

    graph_id: str
    graph_spec: str
    features: dict[str, float]
    name: str = ""


@dataclass
class TimeMatrix:
    """Simulated times of one (algorithm, device) group: graphs x candidate configurations.

    ``configs`` are the configurations with a complete row on every graph kept; ``times`` the
    mean time_us of their complete rows; ``all_times`` every configuration of each graph (for
    the best found and for rules outside the candidates); ``dropped`` graphs left out, and why.
    """

    algorithm: str
    device: str
    graphs: list[GraphInfo]
    configs: list[dict[str, Any]]
    times: np.ndarray
    all_times: list[dict[str, float]]
    all_configs: dict[str, dict[str, Any]]
    dropped: dict[str, str] = field(default_factory=dict)
    # per graph, whether its times are measured ones (``measured_times``): False throughout
    # where the results hold no GPU measurement
    measured: list[bool] = field(default_factory=list)
    measured_gpu: str | None = None  # the GPU those measurements are of
    # the fields of the device the rows were simulated with (``device_digest``; None in rows
    # written before it was recorded)
    device_digest: str | None = None
    other_gpus: list[str] = field(default_factory=list)  # measured, not the device: left out

    def best_time(self, i: int) -> float:
        """The best time found for graph ``i`` over every configuration evaluated on it."""
        return min(self.all_times[i].values())

    def best_config(self, i: int) -> dict[str, Any]:
        """The configuration of that best time."""
        times = self.all_times[i]
        return self.all_configs[min(times, key=times.__getitem__)]

    def time_of(self, i: int, config: dict[str, Any]) -> float | None:
        """Graph ``i``'s time under ``config`` (None if never evaluated on it)."""
        return self.all_times[i].get(config_key(config))

    def subset(self, rows: Sequence[int]) -> TimeMatrix:
        """The matrix restricted to some graphs (same candidates)."""
        rows = list(rows)
        return TimeMatrix(self.algorithm, self.device, [self.graphs[i] for i in rows],
                          self.configs, self.times[rows], [self.all_times[i] for i in rows],
                          self.all_configs, dict(self.dropped),
                          [self.measured[i] for i in rows] if self.measured else [])


def groups(results: str | Path) -> list[tuple[str, str]]:
    """The (algorithm, device) pairs with complete trial rows in a results directory."""
    from tuner.results.query import connect

    con = connect(results)
    rows = con.execute("SELECT DISTINCT algorithm, device FROM trials WHERE state = 'complete' "
                       "ORDER BY algorithm, device").fetchall()
    return [(str(a), str(d)) for a, d in rows]


def pick_groups(results: str | Path, algorithm: str | None, device: str | None,
                required: bool = True) -> list[tuple[str, str]]:
    """The groups matching the optional filters; ConfigError if none (when ``required``)."""
    found = groups(results)
    chosen = [(a, d) for a, d in found
              if (algorithm is None or a == algorithm) and (device is None or d == device)]
    if not chosen and required:
        have = ", ".join(f"{a}/{d}" for a, d in found) or "none"
        raise ConfigError(f"no complete results for algorithm={algorithm or 'any'} "
                          f"device={device or 'any'} in {str(results)!r} (groups: {have})")
    return chosen


def load_matrix(results: str | Path, algorithm: str, device: str) -> TimeMatrix:
    """The time matrix of one group, from the complete rows (trials and references)."""
    from tuner.results.query import connect

    con = connect(results)
    cols = [d[0] for d in con.execute("SELECT * FROM trials LIMIT 0").description]
    params = [c for c in cols if c.startswith("param_")]
    select = ", ".join(["graph_id", "graph_spec", "time_us", "n_sources", "seed",
                        "model_digest", "timestamp", "study_key", *params])
    table = _rows(con, f"SELECT {select} FROM trials WHERE state = 'complete' AND time_us IS "
                  "NOT NULL AND algorithm = ? AND device = ?", [algorithm, device])
    feats, names = _graph_features(con)
    digest = _device_digest_of(con, algorithm, device)
    # per graph, per cost model and workload (the runs its studies timed: sources, and the
    # seed that drew them), each configuration's times; studies of other sources time other
    # runs, and another cost model other figures
    loads: dict[str, dict[str | None, dict[tuple, dict[str, list[float]]]]] = {}
    newest: dict[tuple[str, str | None], Any] = {}
    specs: dict[str, str] = {}
    configs: dict[str, dict[str, Any]] = {}
    by_study: dict[tuple, dict[str, list[float]]] = {}
    study_newest: dict[str, Any] = {}
    for row in table:
        config = canonical_params({c[len("param_"):]: row[c] for c in params})
        key = config_key(config)
        configs.setdefault(key, config)
        g, model = row["graph_id"], row["model_digest"]
        specs.setdefault(g, row["graph_spec"])
        n = row["n_sources"]
        work = (n, row["seed"] if n is not None and n > 1 else None)
        loads.setdefault(g, {}).setdefault(model, {}).setdefault(work, {}).setdefault(
            key, []).append(float(row["time_us"]))
        by_study.setdefault((g, model, work, key), {}).setdefault(
            row["study_key"], []).append(float(row["time_us"]))
        if row["timestamp"] is not None:
            newest[g, model] = max(newest.get((g, model), row["timestamp"]), row["timestamp"])
            study = row["study_key"]
            study_newest[study] = max(study_newest.get(study, row["timestamp"]),
                                      row["timestamp"])
    dropped = _newest_study_where_times_differ(loads, by_study, study_newest)
    # a graph none of whose evaluations completed: named, as best names its studies (it had
    # gone unsaid, review SELECT2)
    for g, spec in con.execute(
            "SELECT DISTINCT graph_id, graph_spec FROM trials WHERE algorithm = ? AND "
            "device = ? AND graph_id NOT IN (SELECT graph_id FROM trials WHERE state = "
            "'complete' AND time_us IS NOT NULL AND algorithm = ? AND device = ?)",
            [algorithm, device, algorithm, device]).fetchall():
        dropped.setdefault(g, f"every evaluation failed ({spec}): `warpsweep query` shows "
                              "their errors")
    loads, left = _newest_model_each(loads, newest)
    dropped.update(left)
    sums, left = _one_workload_each(loads)
    dropped.update(left)
    dropped.update({g: why for g in sums if (why := _unusable(feats.get(g))) is not None})
    ids: list[str] = []
    seen: dict[tuple, str] = {}
    for g in sorted(g for g in sums if g not in dropped):
        # the same graph under another spec (a moved file, other edge weights) would let
        # leave-one-graph-out see the held-out graph: keep one of them
        ident = tuple(sorted(feats[g].items()))
        if ident in seen:
            dropped[g] = f"same features as {seen[ident]} (the same graph under another spec)"
        else:
            seen[ident] = g
            ids.append(g)
    all_times = [{k: float(np.mean(v)) for k, v in sums[g].items()} for g in ids]
    gpu, gpu_name, other_gpus = _measured_sums(con, algorithm, device)
    all_times = [measured_times(t, gpu.get(g, {})) for g, t in zip(ids, all_times, strict=True)]
    common = set.intersection(*(set(t) for t in all_times)) if all_times else set()
    keys = candidate_order(common, configs)
    times = np.array([[t[k] for k in keys] for t in all_times], dtype=np.float64)
    times = times.reshape(len(ids), len(keys))
    graphs = [GraphInfo(g, specs[g], feats[g], graph_name(specs[g], names.get(g)) or "")
              for g in ids]
    return TimeMatrix(algorithm, device, graphs, [configs[k] for k in keys], times, all_times,
                      configs, dropped, [bool(gpu.get(g)) for g in ids],
                      measured_gpu=gpu_name, other_gpus=other_gpus, device_digest=digest)


def candidate_order(keys: set[str], configs: dict[str, dict[str, Any]]) -> list[str]:
    """The candidates in the order ties go by (the first of equal times is picked): fewer
    knobs first. A knob that no training graph's time tells apart from its absence (a
    deferral threshold no vertex reaches) has no evidence for it; sorted by key text, W = 32
    deferring at 64 had come before plain W = 32, and was picked on a skewed held-out graph
    where it loses 41% (probe SE)."""
    return sorted(keys, key=lambda k: (len(configs[k]), k))


def graph_label(graph: GraphInfo) -> str:
    """A graph's short name in a line of text (its spec's last part where it has none)."""
    return graph.name or graph.graph_spec.removeprefix("file:").split("/")[-1]


def few(names: Sequence[str], shown: int = 3, what: str = "graphs") -> str:
    """Some names, then how many more of ``what`` (``a, b, c and 4 more graphs``)."""
    more = f" and {len(names) - shown} more {what}" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def lacking(matrix: TimeMatrix, keys: set[str]) -> list[tuple[str, int]]:
    """The graphs (labels) lacking a complete row of some of ``keys``, with how many they
    lack, most first: those that narrow what every graph is compared over."""
    found = [(graph_label(g), len(keys - times.keys()))
             for g, times in zip(matrix.graphs, matrix.all_times, strict=True)]
    return sorted((f for f in found if f[1]), key=lambda f: -f[1])


def _newest_study_where_times_differ(loads: dict[str, dict], by_study: dict[tuple, dict],
                                     study_newest: dict[str, Any]) -> dict[str, str]:
    """Keep, where studies of one graph, cost model and workload time the same knobs apart,
    the newest study's times, and a note for each other study's. The simulator gives one
    configuration one time; two mean that something the knobs do not say differed (a policy
    file retrained under one path, a device file's fields under one name), and their mean
    had been learnt as a time no run gave (probe SELECT)."""
    left = {}
    for (g, model, work, key), times in by_study.items():
        every = [t for ts in times.values() for t in ts]
        if len(times) < 2 or math.isclose(min(every), max(every), rel_tol=1e-9):
            continue
        kept = max(times, key=lambda s: (study_newest.get(s) is not None,
                                         study_newest.get(s) or 0, s))
        loads[g][model][work][key] = times[kept]
        for other in sorted(times):
            if other != kept:
                left[f"{g} [{key} in study {other}]"] = (
                    f"timed otherwise than in the newer study {kept} (a policy file or a "
                    "device file changed under one name?): the newer study's times kept")
    return left


def _newest_model_each(loads: dict[str, dict[str | None, dict]],
                       newest: dict[tuple[str, str | None], Any]
                       ) -> tuple[dict[str, dict], dict[str, str]]:
    """Per graph, the rows of one cost model (``model_digest``): that of its newest row. A
    graph studied again after the simulator changed had had each configuration's time
    averaged over both models; a note for each older model's rows left out."""
    return _one_group_each(
        loads,
        lambda g, models: max(models, key=lambda m: (newest.get((g, m)) is not None,
                                                     newest.get((g, m)) or 0, m or "")),
        lambda model: f"cost model {model or 'unrecorded'}",
        lambda model: ("rows of an older cost model than the graph's newest "
                       f"({model or 'unrecorded'}), their times not mixed with its"))


def _one_workload_each(loads: dict[str, dict[tuple, dict[str, list[float]]]]
                       ) -> tuple[dict[str, dict[str, list[float]]], dict[str, str]]:
    """Per graph, the times of one workload ((sources, seed); the one of most
    configurations, then of most sources): a mean over studies of other sources had made a
    configuration timed by one study the graph's best while it lost in each; and a note for
    each other workload left out."""
    return _one_group_each(
        loads, lambda g, works: max(works, key=lambda w: (len(works[w]), w[0] or 0)),
        lambda work: workload_text(*work),
        lambda work: ("another workload of the graph, its times not mixed with the "
                      f"{workload_text(*work)} ones learnt"))


def _one_group_each(loads: dict[str, dict[Any, Any]], pick: Callable[[str, dict], Any],
                    name: Callable[[Any], str], why: Callable[[Any], str]
                    ) -> tuple[dict[str, Any], dict[str, str]]:
    """Per graph, one of its groups of rows (``pick``), and for each other a note keyed
    ``graph [name(other)]`` saying ``why(kept)`` it was left out."""
    kept, left = {}, {}
    for g, groups in loads.items():
        chosen = pick(g, groups)
        kept[g] = groups[chosen]
        for other in groups:
            if other != chosen:
                left[f"{g} [{name(other)}]"] = why(chosen)
    return kept, left


def _device_digest_of(con: Any, algorithm: str, device: str) -> str | None:
    """The digest of the device fields a group's rows were simulated with (None: rows older
    than it); two (a device file's fields changed under one name) are refused, as `tune`
    refuses to write them into one directory."""
    found = [d for (d,) in con.execute(
        "SELECT DISTINCT device_digest FROM trials WHERE algorithm = ? AND device = ? AND "
        "device_digest IS NOT NULL", [algorithm, device]).fetchall()]
    if len(found) > 1:
        raise ConfigError(f"the {algorithm} rows on {device} were simulated with "
                          f"{len(found)} devices of that name ({', '.join(sorted(found))}): "
                          "one model learns one device")
    return found[0] if found else None


def _measured_sums(con: Any, algorithm: str, device: str
                   ) -> tuple[dict[str, dict[str, float]], str | None, list[str]]:
    """Per graph id, each configuration's measured time on the device's GPU (``tune --verify
    K``; the fastest where several studies measured it); the GPU, and the GPUs whose
    measurements are left out as not the device's (``measured_on``: an H100's times had
    been learnt as an A100's). Measurements of two GPUs either of which may be the device
    (a device file's name says no GPU) are refused: which one it stands for is unknown."""
    from tuner.results.measured import measured_on

    rows = _rows(con, "SELECT graph_id, config, measured_us, gpu_name FROM measured WHERE "
                 "correct AND measured_us > 0 AND isfinite(measured_us) AND algorithm = ? AND "
                 "device = ?", [algorithm, device])
    names = {r["gpu_name"] or "" for r in rows}
    # a row naming no GPU may be the device's: used, as calibrate fits it (probe MEASURED2:
    # its placeholder name had been judged another GPU's)
    others = sorted(g for g in names if g and measured_on(device, g) is False)
    used = sorted(g for g in names - set(others) if g)
    if len(used) > 1:
        raise ConfigError(
            f"the {algorithm} studies on {device} were measured on {len(used)} GPUs "
            f"({', '.join(used)}), any of which may be {device}: a model learns one GPU's "
            "times; set the other GPUs' files aside (RESULTS/measured/) or train from a copy")
    out: dict[str, dict[str, float]] = {}
    for r in rows:
        if (r["gpu_name"] or "") in others:
            continue
        try:
            key = config_key(canonical_params(Strategy.parse(r["config"]).to_params()))
        except WarpsweepError as exc:
            raise ConfigError(f"a measured row of {r['graph_id']} holds no configuration "
                              f"({exc}): run `warpsweep check`") from None
        times = out.setdefault(r["graph_id"], {})
        times[key] = min(times.get(key, math.inf), float(r["measured_us"]))
    return out, (used[0] if used else "an unnamed GPU" if "" in names else None), others


def measured_times(simulated: dict[str, float], measured: dict[str, float]
                   ) -> dict[str, float]:
    """A graph's times with its GPU measurements where it has any (``select train`` learns
    the measured best configuration, not the simulated one): each measured configuration its
    measured time; each other one its simulated time brought to the measured level (times the
    geometric mean of measured / simulated over the configurations measured), but never
    below the measured winner's (``tune --verify K`` measured the simulator's top K, so the
    simulator ranked it below those: nothing measured says it is faster). Without
    measurements, the simulated times as they are."""
    both = [k for k in measured if k in simulated and simulated[k] > 0 and measured[k] > 0]
    if not both:
        return dict(simulated)
    level = math.exp(sum(math.log(measured[k] / simulated[k]) for k in both) / len(both))
    floor = min(measured[k] for k in both)
    out = {k: max(v * level, math.nextafter(floor, math.inf)) for k, v in simulated.items()}
    out.update({k: measured[k] for k in both})
    return out


def _rows(con: Any, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    cur = con.execute(sql, params or [])
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _graph_features(con: Any) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    """Per graph id, its features (graphs with every feature only) and its name."""
    cols = [d[0] for d in con.execute("SELECT * FROM graphs LIMIT 0").description]
    present = [c for c in ALL_FEATURES if c in cols]
    if not present:
        return {}, {}
    select = ", ".join(["graph_id", "name", *present])
    feats: dict[str, dict[str, float]] = {}
    names: dict[str, str] = {}
    for row in _rows(con, f"SELECT {select} FROM graphs"):
        names[row["graph_id"]] = row["name"]
        if all(row[c] is not None for c in present):
            feats[row["graph_id"]] = {c: float(row[c]) for c in present}
    return feats, names


def _unusable(features: dict[str, float] | None) -> str | None:
    """Why a graph's features cannot place it (None: they can): none recorded, or a value
    NaN or infinite (no loader computes one; the models' scalers fail on it)."""
    if features is None:
        return "no features in the graphs table"
    bad = sorted(k for k, v in features.items() if not math.isfinite(v))
    if bad:
        return (f"feature {bad[0]} is {features[bad[0]]} in the graphs table, which no "
                "loader writes (an edited row?)")
    return None


# -- the model --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Hyper:
    """One model setting: kind (knn or tree), feature subset and the kind's hyperparameters."""

    model: str
    features: str
    k: int = 0
    weights: str = "uniform"
    max_depth: int = 0
    min_samples_leaf: int = 1

    def describe(self) -> str:
        """Short text, e.g. ``knn k=3 distance on degree``."""
        if self.model == "knn":
            k = "all" if self.k == 0 else str(self.k)
            return f"knn k={k} {self.weights} on {self.features}"
        return (f"tree depth={self.max_depth} min_leaf={self.min_samples_leaf} "
                f"on {self.features}")

    def to_json(self) -> dict[str, Any]:
        """JSON form (the model file)."""
        return {"model": self.model, "features": self.features, "k": self.k,
                "weights": self.weights, "max_depth": self.max_depth,
                "min_samples_leaf": self.min_samples_leaf}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Hyper:
        """Inverse of :meth:`to_json`; ValueError for a value of another type than the
        field's (an edited file: `k: true` had reached scikit-learn's predict, review
        SELECT2)."""
        if not isinstance(d, dict):
            raise ValueError(f"hyperparameters are {type(d).__name__}, not a mapping")
        hyper = cls(**d)
        for name, kind in (("model", str), ("features", str), ("weights", str),
                           ("k", int), ("max_depth", int), ("min_samples_leaf", int)):
            value = getattr(hyper, name)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise ValueError(f"hyperparameter {name} is {value!r}, not "
                                 f"{'an integer' if kind is int else 'text'}")
        if hyper.max_depth < 0 or hyper.min_samples_leaf < 1:
            raise ValueError(f"hyperparameters max_depth {hyper.max_depth}, min_samples_leaf "
                             f"{hyper.min_samples_leaf}: at least 0 and 1")
        return hyper


def hyper_grid(n_train: int, subsets: Sequence[str] | None = None) -> list[Hyper]:
    """The settings cross-validation chooses from, most global first (ties go to the first):
    k nearest neighbours (k = every graph, 5, 3, 2, 1; uniform or distance weights) and
    regression trees (depth 1-3) on each feature subset."""
    out: list[Hyper] = []
    names = list(subsets or FEATURE_SUBSETS)
    for k in KNN_NEIGHBOURS:
        if k >= n_train:
            continue
        for weights in KNN_WEIGHTS[:1] if k == 1 else KNN_WEIGHTS:
            for name in names:
                if k == 0 and weights == "uniform":
                    name = names[0]  # every graph, equal weights: the features do not matter
                h = Hyper("knn", name, k=k, weights=weights)
                if h not in out:
                    out.append(h)
    for depth in TREE_DEPTHS:
        for leaf in TREE_MIN_LEAF:
            if 2 * leaf > n_train:
                continue
            out.extend(Hyper("tree", name, max_depth=depth, min_samples_leaf=leaf)
                       for name in names)
    return out


def feature_vector(features: dict[str, float], names: Sequence[str]) -> np.ndarray:
    """Features in model order, heavy-tailed ones as signed log1p."""
    missing = [n for n in names if n not in features]
    if missing:
        raise ConfigError(f"graph features missing: {', '.join(missing)}")
    vals = [float(features[n]) for n in names]
    return np.array([math.copysign(math.log1p(abs(v)), v) if n in LOG_FEATURES else v
                     for n, v in zip(names, vals, strict=True)], dtype=np.float64)


def relative_log_times(times: np.ndarray) -> np.ndarray:
    """log(time / the row's best): what the models learn (0 for each graph's best)."""
    return np.log(times / times.min(axis=1, keepdims=True))


@dataclass
class Neighbour:
    """A training graph behind a choice: a nearest neighbour, or a graph of the same leaf."""

    index: int
    graph_id: str
    graph_spec: str
    distance: float
    weight: float


@dataclass
class Choice:
    """A model's answer for one graph: the configuration, predicted relative times, the
    training graphs behind it (knn: the neighbours; tree: the leaf's graphs, nearest first)
    and, for a tree, the decision path."""

    index: int
    config: dict[str, Any]
    relative: np.ndarray
    neighbours: list[Neighbour]
    path: list[str]

    @property
    def predicted_relative(self) -> float:
        """Predicted time of the choice over the graph's best (>= 1)."""
        return float(self.relative[self.index])


# a feature this far beyond the training graphs' range (a fraction of the range, in the
# model's scaled units) makes a pick extrapolated
RANGE_MARGIN = 0.1


@dataclass
class Coverage:
    """Where a graph lies against a model's training graphs (``Selector.coverage``)."""

    nearest: float  # distance to the nearest training graph, in the model's scaled features
    spread: float  # the largest distance of a training graph to its nearest other one
    beyond: list[str]  # the model's features beyond the training graphs' range (a margin)

    @property
    def extrapolated(self) -> bool:
        """Whether the graph is farther from every training graph than any of them is from
        its nearest, or outside their range in some feature the model reads."""
        return self.nearest > self.spread or bool(self.beyond)


@dataclass
class Selector:
    """A fitted selector over one group's training matrix."""

    hyper: Hyper
    matrix: TimeMatrix
    scaler: StandardScaler
    model: KNeighborsRegressor | DecisionTreeRegressor
    seed: int = 0

    @property
    def feature_names(self) -> tuple[str, ...]:
        """The features the model reads, in order."""
        return FEATURE_SUBSETS[self.hyper.features]

    def scaled(self, features: dict[str, float]) -> np.ndarray:
        """A graph's standardised feature row."""
        return self.scaler.transform(feature_vector(features, self.feature_names)[None, :])

    def pick(self, features: dict[str, float]) -> int:
        """Index of the candidate with the smallest predicted relative time."""
        return int(np.argmin(self.model.predict(self.scaled(features))[0]))

    def choose(self, features: dict[str, float]) -> Choice:
        """The configuration with the smallest predicted time relative to the graph's best."""
        x = self.scaled(features)
        relative = np.exp(self.model.predict(x)[0])
        index = int(np.argmin(relative))
        neighbours: list[Neighbour] = []
        path: list[str] = []
        if isinstance(self.model, KNeighborsRegressor):
            dist, idx = self.model.kneighbors(x)
            members, dists = idx[0], dist[0]
            weights = _neighbour_weights(dists, self.hyper.weights)
        else:
            path = self._path(x)
            train = self.scaler.transform(self._train_x())
            members = np.flatnonzero(self.model.apply(train) == self.model.apply(x)[0])
            dists = np.linalg.norm(train[members] - x[0], axis=1)
            order = np.argsort(dists, kind="stable")
            members, dists = members[order], dists[order]
            weights = np.full(members.size, 1.0 / members.size)
        neighbours = [Neighbour(int(j), self.matrix.graphs[j].graph_id,
                                self.matrix.graphs[j].graph_spec, float(d), float(wt))
                      for j, d, wt in zip(members, dists, weights, strict=True)]
        return Choice(index, self.matrix.configs[index], relative, neighbours, path)

    def coverage(self, features: dict[str, float]) -> Coverage:
        """How far a graph lies from the training graphs in the model's scaled features,
        against how far each training graph lies from its nearest other one, and which
        features fall outside the training graphs' range: beyond both, the pick is
        extrapolated (a grid of 4096 vertices, 51 away from RMATs 1-4 apart from each
        other, had been shown "1.000x this graph's best", 91% off)."""
        train = self.scaler.transform(self._train_x())
        x = self.scaled(features)[0]
        nearest = float(np.linalg.norm(train - x, axis=1).min())
        pairwise = np.linalg.norm(train[:, None, :] - train[None, :, :], axis=2)
        np.fill_diagonal(pairwise, np.inf)
        spread = float(pairwise.min(axis=1).max()) if len(train) > 1 else 0.0
        low, high = train.min(axis=0), train.max(axis=0)
        margin = RANGE_MARGIN * (high - low)
        beyond = [name for j, name in enumerate(self.feature_names)
                  if not low[j] - margin[j] <= x[j] <= high[j] + margin[j]]
        return Coverage(nearest, spread, beyond)

    def _train_x(self) -> np.ndarray:
        return np.stack([feature_vector(g.features, self.feature_names)
                         for g in self.matrix.graphs])

    def _path(self, x: np.ndarray) -> list[str]:
        """The tree's decisions for a scaled row, thresholds in the features' own units."""
        tree = self.model.tree_
        node, steps = 0, []
        while tree.children_left[node] != tree.children_right[node]:
            f, thr = int(tree.feature[node]), float(tree.threshold[node])
            name = self.feature_names[f]
            raw = thr * self.scaler.scale_[f] + self.scaler.mean_[f]
            if name in LOG_FEATURES:
                raw = math.copysign(math.expm1(abs(raw)), raw)
            if x[0, f] <= thr:
                steps.append(f"{name} <= {raw:.4g}")
                node = tree.children_left[node]
            else:
                steps.append(f"{name} > {raw:.4g}")
                node = tree.children_right[node]
        steps.append(f"leaf of {int(tree.n_node_samples[node])} training graph(s)")
        return steps

    @property
    def time_basis(self) -> str:
        """How :meth:`predicted_time_us` estimates an absolute time, in words."""
        if len(self.matrix.graphs) >= MIN_FIT_GRAPHS:
            return (f"log time fitted on log edges and log diameter over the "
                    f"{len(self.matrix.graphs)} training graphs")
        return "the graphs above: time per edge x this graph's edges"

    def predicted_time_us(self, choice: Choice, features: dict[str, float]) -> float:
        """A rough absolute time for the choice: a least-squares fit of log time under that
        configuration on log edges and log diameter over the training graphs (with fewer
        than 4 of them: the supporting graphs' time per edge times this graph's edges)."""
        times = self.matrix.times[:, choice.index]
        if len(self.matrix.graphs) >= MIN_FIT_GRAPHS:
            x = np.array([time_drivers(g.features) for g in self.matrix.graphs])
            reg = LinearRegression().fit(x, np.log(times))
            return float(np.exp(reg.predict(np.array([time_drivers(features)]))[0]))
        logs = [n.weight * math.log(times[n.index]
                                    / max(self.matrix.graphs[n.index].features["m"], 1.0))
                for n in choice.neighbours]
        return math.exp(sum(logs)) * max(features["m"], 1.0)


def time_drivers(features: dict[str, float]) -> list[float]:
    """What a BFS-like time scales with: log stored edges and log estimated diameter."""
    return [math.log1p(features["m"]), math.log1p(features["est_diameter"])]


def _neighbour_weights(dist: np.ndarray, weights: str) -> np.ndarray:
    """Weights as sklearn applies them (distance: 1/d, exact matches take all the weight)."""
    if weights == "uniform":
        w = np.ones_like(dist)
    elif np.any(dist == 0):
        w = (dist == 0).astype(np.float64)
    else:
        w = 1.0 / dist
    return w / w.sum()


def fit(matrix: TimeMatrix, hyper: Hyper, seed: int = 0) -> Selector:
    """Fit one setting on a training matrix (deterministic for given data and seed)."""
    names = FEATURE_SUBSETS[hyper.features]
    x = np.stack([feature_vector(g.features, names) for g in matrix.graphs])
    scaler = StandardScaler().fit(x)
    xs = scaler.transform(x)
    y = relative_log_times(matrix.times)
    model: KNeighborsRegressor | DecisionTreeRegressor
    if hyper.model == "knn":
        k = len(matrix.graphs) if hyper.k == 0 else min(hyper.k, len(matrix.graphs))
        # a k-d tree: exact, and on a few dozen points far quicker than the brute-force path
        model = KNeighborsRegressor(n_neighbors=k, weights=hyper.weights, algorithm="kd_tree")
    elif hyper.model == "tree":
        model = DecisionTreeRegressor(max_depth=hyper.max_depth,
                                      min_samples_leaf=hyper.min_samples_leaf,
                                      random_state=seed)
    else:
        raise ConfigError(f"unknown selector model {hyper.model!r} (knn or tree)")
    model.fit(xs, y)
    return Selector(hyper, matrix, scaler, model, seed)


@dataclass
class CvScore:
    """A setting's inner leave-one-graph-out score: geometric-mean regret."""

    hyper: Hyper
    geomean_regret: float


def cross_validate(matrix: TimeMatrix, seed: int = 0,
                   grid: Sequence[Hyper] | None = None) -> list[CvScore]:
    """Leave-one-graph-out regret of every setting on the matrix's graphs (the candidates'
    times relative to the best candidate of the held-out graph), best first; ties keep the
    grid's order, most global first."""
    n = len(matrix.graphs)
    if n < 2:
        raise ConfigError(f"cross-validation needs at least 2 graphs, got {n}")
    grid = list(grid) if grid is not None else hyper_grid(n - 1)
    picks = cv_picks(matrix, grid, seed)
    rel = matrix.times / matrix.times.min(axis=1, keepdims=True)
    scores = [CvScore(h, math.exp(float(np.mean([math.log(rel[i, c])
                                                   for i, c in enumerate(picks[h])]))))
              for h in grid]
    order = sorted(range(len(scores)), key=lambda j: (round(scores[j].geomean_regret, 12), j))
    return [scores[j] for j in order]


def cv_picks(matrix: TimeMatrix, grid: Sequence[Hyper], seed: int = 0) -> dict[Hyper, list[int]]:
    """Per setting, the candidate it picks for each graph when trained on the others.

    The same picks as :func:`fit` then :meth:`Selector.pick` on each fold, computed with one
    scaler per (fold, feature subset) and, for the neighbour settings, one neighbour query
    (the k nearest are a prefix of it; weights as scikit-learn applies them).
    """
    n = len(matrix.graphs)
    picks: dict[Hyper, list[int]] = {h: [] for h in grid}
    subsets = sorted({h.features for h in grid})
    x_all = {name: np.stack([feature_vector(g.features, FEATURE_SUBSETS[name])
                             for g in matrix.graphs]) for name in subsets}
    with sklearn.config_context(assume_finite=True):
        for i in range(n):
            train = [j for j in range(n) if j != i]
            y = relative_log_times(matrix.times[train])
            for name in subsets:
                scaler = StandardScaler().fit(x_all[name][train])
                xs, xq = scaler.transform(x_all[name][train]), scaler.transform(
                    x_all[name][i:i + 1])
                knn = [h for h in grid if h.model == "knn" and h.features == name]
                if knn:
                    nn = NearestNeighbors(n_neighbors=len(train), algorithm="kd_tree").fit(xs)
                    dist, idx = nn.kneighbors(xq)
                    for h in knn:
                        k = len(train) if h.k == 0 else min(h.k, len(train))
                        w = _neighbour_weights(dist[0, :k], h.weights)
                        picks[h].append(int(np.argmin(w @ y[idx[0, :k]])))
                for h in grid:
                    if h.model == "tree" and h.features == name:
                        tree = DecisionTreeRegressor(max_depth=h.max_depth,
                                                     min_samples_leaf=h.min_samples_leaf,
                                                     random_state=seed).fit(xs, y)
                        picks[h].append(int(np.argmin(tree.predict(xq)[0])))
    return picks


@dataclass
class Trained:
    """A selector chosen by cross-validation, with the scores of every setting tried."""

    selector: Selector
    scores: list[CvScore]


def _dropped_note(dropped: dict[str, str]) -> str:
    """What a too-few-graphs error adds about the graphs left out (none: nothing)."""
    if not dropped:
        return ""
    shown = "; ".join(f"{g}: {why}" for g, why in list(dropped.items())[:3])
    more = f"; and {len(dropped) - 3} more" if len(dropped) > 3 else ""
    return f" ({len(dropped)} left out: {shown}{more})"


def train(matrix: TimeMatrix, seed: int = 0) -> Trained:
    """Choose the setting by leave-one-graph-out CV on the matrix and fit it on all of it."""
    if not matrix.configs:
        raise ConfigError(f"{matrix.algorithm}/{matrix.device}: no configuration was evaluated "
                          "on every graph; run the same grid space on each graph")
    if len(matrix.graphs) < 2:
        raise ConfigError(f"{matrix.algorithm}/{matrix.device}: training needs at least 2 "
                          f"graphs with features, got {len(matrix.graphs)}"
                          + _dropped_note(matrix.dropped))
    scores = cross_validate(matrix, seed)
    return Trained(fit(matrix, scores[0].hyper, seed), scores)


# -- evaluation -------------------------------------------------------------------------------
@dataclass
class GraphRegret:
    """One held-out graph: its best time and each policy's regret (time / best) and choice;
    ``predicted_time_us`` is the selector's rough absolute estimate for its own choice."""

    graph_id: str
    graph_spec: str
    best_time_us: float
    best_config: dict[str, Any]
    regrets: dict[str, float]
    selected: dict[str, dict[str, Any]]
    selector_setting: str = ""
    graph_name: str = ""
    predicted_time_us: float = math.nan
    measured: bool = False  # its times GPU-measured (tune --verify) where measured


@dataclass
class Evaluation:
    """Leave-one-graph-out evaluation of one (algorithm, device) group."""

    algorithm: str
    device: str
    policies: list[str]
    rows: list[GraphRegret]
    geomean: dict[str, float]
    candidates: int = 0
    dropped: dict[str, str] = field(default_factory=dict)
    measured_gpu: str | None = None  # the GPU of the measured graphs' times, if any


def geomean(values: Sequence[float]) -> float:
    """Geometric mean of positive values (nan when there are none)."""
    vals = [v for v in values if v is not None and not math.isnan(v)]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else math.nan


def best_single(matrix: TimeMatrix) -> int:
    """The candidate with the smallest geometric-mean relative time over the matrix's graphs."""
    rel = relative_log_times(matrix.times)
    return int(np.argmin(rel.mean(axis=0)))


def evaluate_matrix(matrix: TimeMatrix, seed: int = 0) -> Evaluation:
    """Leave-one-graph-out: per held-out graph, the selector trained (and cross-validated) on
    the other graphs against the fixed rules, as time over the best found for that graph."""
    n = len(matrix.graphs)
    if n < MIN_GRAPHS:
        raise ConfigError(f"{matrix.algorithm}/{matrix.device}: leave-one-graph-out needs at "
                          f"least {MIN_GRAPHS} graphs with features, got {n}"
                          + _dropped_note(matrix.dropped))
    if not matrix.configs:
        raise ConfigError(f"{matrix.algorithm}/{matrix.device}: no configuration was evaluated "
                          "on every graph; run the same grid space on each graph")
    rows = []
    for i, g in enumerate(matrix.graphs):
        train_m = matrix.subset([j for j in range(n) if j != i])
        trained = train(train_m, seed)
        choice = trained.selector.choose(g.features)
        picks = {
            POLICY_SELECTOR: choice.config,
            POLICY_THREAD: reference_config("thread"),
            POLICY_W32: reference_config("vwarp", 32),
            POLICY_POW2: reference_config("vwarp", pow2_width(g.features["avg_degree"])),
            POLICY_BEST_SINGLE: train_m.configs[best_single(train_m)],
        }
        best = matrix.best_time(i)
        regrets = {}
        for policy, config in picks.items():
            t = matrix.time_of(i, config)
            regrets[policy] = t / best if t is not None else math.nan
        rows.append(GraphRegret(g.graph_id, g.graph_spec, best, matrix.best_config(i), regrets,
                                picks, trained.selector.hyper.describe(), g.name,
                                trained.selector.predicted_time_us(choice, g.features),
                                bool(matrix.measured[i]) if matrix.measured else False))
    means = {p: geomean([r.regrets[p] for r in rows]) for p in POLICIES}
    return Evaluation(matrix.algorithm, matrix.device, list(POLICIES), rows, means,
                      len(matrix.configs), dict(matrix.dropped),
                      matrix.measured_gpu if any(r.measured for r in rows) else None)


def evaluate(results: str | Path, algorithm: str | None = None, device: str | None = None,
             seed: int = 0) -> list[Evaluation]:
    """Leave-one-graph-out evaluation of every (algorithm, device) group of a results
    directory with at least 3 graphs (optionally one algorithm / device); none: []."""
    return evaluate_groups(results, algorithm, device, seed)[0]


def evaluate_groups(results: str | Path, algorithm: str | None = None,
                    device: str | None = None, seed: int = 0
                    ) -> tuple[list[Evaluation], list[tuple[str, str, str]]]:
    """:func:`evaluate`'s evaluations, and the groups it leaves out as (algorithm, device,
    why): a group of too few graphs had been passed over without a word. An algorithm or
    device named that no group has is refused (``"BFS"`` had given [] without a word)."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ConfigError(f"seed must be an integer, not {seed!r}")
    if not 0 <= seed <= MAX_SEED:  # sklearn's traceback, or taken unused (probe API)
        raise ConfigError(f"seed must be from 0 to {MAX_SEED}, got {seed}")
    out, left = [], []
    named = algorithm is not None or device is not None
    for algo, dev in pick_groups(results, algorithm, device, required=named):
        matrix = load_matrix(results, algo, dev)
        why = unevaluable(matrix)
        if why is None:
            out.append(evaluate_matrix(matrix, seed))
        else:
            left.append((algo, dev, why))
    return out, left


def unevaluable(matrix: TimeMatrix) -> str | None:
    """Why leave-one-graph-out cannot evaluate a group (None: it can)."""
    if len(matrix.graphs) < MIN_GRAPHS:
        return (f"{len(matrix.graphs)} graph(s) with features, needs {MIN_GRAPHS}"
                + _dropped_note(matrix.dropped))
    if not matrix.configs:
        return "no configuration was evaluated on every graph"
    return None


# -- per-iteration selection: adaptive against the best constant configuration -----------------
@dataclass
class AdaptiveRow:
    """One graph: the best ``adaptive`` configuration against the best constant one."""

    graph_id: str
    graph_spec: str
    adaptive_time_us: float
    adaptive_config: dict[str, Any]
    constant_time_us: float
    constant_config: dict[str, Any]
    features: dict[str, float]
    graph_name: str = ""

    @property
    def ratio(self) -> float:
        """Adaptive time over constant time (< 1: adaptive wins)."""
        return self.adaptive_time_us / self.constant_time_us

    @property
    def wins(self) -> bool:
        """Whether the adaptive policy is strictly faster."""
        return self.adaptive_time_us < self.constant_time_us


@dataclass
class AdaptiveComparison:
    """Per-iteration W selection against the best constant configuration, for one group."""

    algorithm: str
    device: str
    rows: list[AdaptiveRow]
    geomean_ratio: float
    where: str
    constants: int = 0  # the constant configurations complete on every graph: each row's pool
    most_constants: int = 0  # the most constant configurations a graph has of its own
    narrowed_by: list[str] = field(default_factory=list)  # graphs lacking some of those
    left_out: dict[str, str] = field(default_factory=dict)  # graphs (or their rows), and why

    def constants_line(self) -> str:
        """What each graph's best constant is the best of, and which graphs narrowed it."""
        line = (f"constant side: the {self.constants} constant configuration(s) complete on "
                "every graph")
        if self.narrowed_by:
            line += (f", of up to {self.most_constants} on one graph: narrowed by "
                     f"{few(self.narrowed_by)}, lacking the rest")
        return line


def _is_adaptive(config: dict[str, Any]) -> bool:
    return config.get("mapping") == "adaptive"


def compare_matrix(matrix: TimeMatrix) -> AdaptiveComparison:
    """Per graph, the best adaptive configuration against the best of the constant ones
    complete on every graph (the candidates ``select train`` narrows to): a graph tuned over
    fewer constants (the `policy` space's references) had been compared with those alone
    while the others had every one; ``where`` says where adaptive wins (a one-split tree)."""
    common = {config_key(c) for c in matrix.configs if not _is_adaptive(c)}
    own = [{k for k in times if not _is_adaptive(matrix.all_configs[k])}
           for times in matrix.all_times]
    rows = []
    left_out = dict(matrix.dropped)
    for i, g in enumerate(matrix.graphs):
        times = matrix.all_times[i]
        adaptive = {k: t for k, t in times.items() if _is_adaptive(matrix.all_configs[k])}
        constant = {k: t for k, t in times.items() if k in common}
        if not adaptive or not constant:
            left_out[g.graph_id] = ("no complete adaptive configuration" if not adaptive else
                                    "no constant configuration complete on every graph")
            continue
        a, c = min(adaptive, key=adaptive.__getitem__), min(constant, key=constant.__getitem__)
        rows.append(AdaptiveRow(g.graph_id, g.graph_spec, adaptive[a], matrix.all_configs[a],
                                constant[c], matrix.all_configs[c], g.features, g.name))
    where = where_adaptive_wins(rows) if common or not matrix.graphs else (
        "no constant configuration is complete on every graph: nothing to compare with")
    return AdaptiveComparison(matrix.algorithm, matrix.device, rows,
                              geomean([r.ratio for r in rows]), where, len(common),
                              max(map(len, own), default=0),
                              [name for name, _ in lacking(matrix, set().union(*own))],
                              left_out)


def where_adaptive_wins(rows: Sequence[AdaptiveRow], tie: float = TIE) -> str:
    """One line: which graphs adaptive wins on, on how many more it is within ``tie``
    (relative) of the best constant configuration, and the single feature split that best
    separates the wins (a depth-1 decision tree over the raw features)."""
    if not rows:
        return "no graph has both adaptive and constant configurations"
    won = [r for r in rows if r.wins]
    close = sum(1 for r in rows if not r.wins and r.ratio <= 1 + tie)
    near = f"; within {100 * tie:g}% of the best constant configuration on {close} other(s)"
    if not won:
        return f"adaptive wins on none of the {len(rows)} graphs{near}"
    listed = ", ".join(_short(r) for r in won)
    names = f"adaptive wins on {len(won)} of {len(rows)} graphs ({listed}){near}"
    if len(won) == len(rows):
        return names
    feats = [f for f in ALL_FEATURES if all(f in r.features for r in rows)]
    x = np.array([[r.features[f] for f in feats] for r in rows])
    y = np.array([r.wins for r in rows])
    stump = DecisionTreeClassifier(max_depth=1, random_state=0).fit(x, y)
    t = stump.tree_
    if t.children_left[0] == t.children_right[0]:
        return names
    f, thr = feats[int(t.feature[0])], float(t.threshold[0])
    left = y[x[:, int(t.feature[0])] <= thr]
    right = y[x[:, int(t.feature[0])] > thr]
    side, part = ("<=", left) if left.mean() > right.mean() else (">", right)
    return (f"{names}; best single split: {f} {side} {thr:.4g} "
            f"(adaptive wins on {int(part.sum())} of the {part.size} graphs there, "
            f"{int(y.sum() - part.sum())} of {y.size - part.size} elsewhere)")


def _short(row: AdaptiveRow) -> str:
    return row.graph_name or row.graph_spec.split("/")[-1]


def compare_adaptive(results: str | Path, algorithm: str | None = None,
                     device: str | None = None) -> list[AdaptiveComparison]:
    """The adaptive-vs-constant comparison of every (algorithm, device) group."""
    return [compare_matrix(load_matrix(results, a, d))
            for a, d in pick_groups(results, algorithm, device)]
