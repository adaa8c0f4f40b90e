"""Per-iteration policies: each iteration's configuration chosen among a few candidates by a
small decision tree over what the GPU knows when the iteration starts.

A policy file (JSON) holds the candidate configurations (each ``driven=topology`` or
``driven=data``) and either a decision tree (``tree``: nested ``{"feature", "threshold",
"le", "gt"}`` nodes ending in ``{"choose": i}``) or a fixed ``schedule`` (candidate per
iteration; the last repeats): the tree is plain rules a CUDA launcher evaluates on the host
between launches. :func:`policy_iteration_costs` runs one inside the simulator.

What a switch costs. A candidate's launches are those of its constant run; where the driven
form changes the run converts the frontier as the temporal hybrid does: a sweep's flags become
a worklist by the compaction kernel, a worklist becomes flags by the scatter kernel
(``simulator.auxiliary_kernels``). A change of mapping, W, chunk or grid within one form costs
nothing beyond its own launch (the next launch is a different kernel either way; the frontier
is the same status words or the same vertex list).

What the features cost. The launch that builds a frontier also counts it: its vertices, the
sum and the largest of their degrees (the row bounds of each new frontier vertex, one sector
each) and its issued and active lane-steps, each a warp-aggregated atomic on its own counter
word (``feature_counter_cost``); the host reads those words in the round trip it already makes.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import numpy as np

from simulator.auxiliary_kernels import idle_outlier_kernel
from simulator.auxiliary_kernels import to_sweeps_kernel
from simulator.auxiliary_kernels import to_worklist_kernel
from simulator.costs import COSTS
from simulator.costs import InstructionCosts
from simulator.costs import LaunchCost
from simulator.device import Device
from simulator.driver import MOST_VERIFY_SWEEPS
from simulator.driver import IterationCost
from simulator.driver import Launcher
from simulator.driver import asynchronous_run
from simulator.driver import asynchronous_sweep
from simulator.driver import asynchronous_worklist
from simulator.driver import check_applicable
from simulator.driver import data_launch
from simulator.driver import initial_worklist
from simulator.driver import verify_sweep
from simulator.engine import Launch
from simulator.errors import ConfigError
from simulator.functional import FunctionalRun
from simulator.knob_checks import is_int
from simulator.mappings import MAPPINGS
from simulator.sorted_runs import distinct
from simulator.sorted_runs import distinct_ids
from simulator.store_races import unrelaxed_sources
from simulator.strategy import Strategy
from simulator.timing import working_set_bytes
from simulator.yamldoc import loads_json

FORMAT = "warpsweep-policy"
POLICY_SCHEMA_VERSION = 1
POLICY_ALGORITHMS = ("bfs", "sssp", "cc")
# What the host knows when an iteration starts (the frontier's counters, the graph's sizes
# and the previous launch's SIMD efficiency): the tree's inputs.
FEATURES = (
    "frontier_frac",    # frontier vertices / n
    "edge_frac",        # frontier edges / m
    "frontier_degree",  # frontier edges / frontier vertices
    "degree_spread",    # largest frontier degree / frontier_degree
    "graph_degree",     # m / n
    "graph_spread",     # largest degree / graph_degree
    "iteration",        # 0, 1, ...
    "last_simd",        # the previous iteration's SIMD efficiency (1 before the first)
    "vertices",         # n
    "edges",            # m
)
# Features the host knows before the run starts: a tree that splits on these alone keeps one
# candidate for the whole run (a constant configuration chosen per graph) and needs no
# counters; ``iteration`` is the host's own count.
GRAPH_FEATURES = ("graph_degree", "graph_spread", "vertices", "edges")
HOST_FEATURES = (*GRAPH_FEATURES, "iteration")
# Knobs that scale the thresholds of the tree's first splits (pre-order): what `tune` searches.
THRESHOLD_KNOBS = ("policy_t1", "policy_t2", "policy_t3")


def frontier_features(frontier: np.ndarray, degree: np.ndarray, m: int, iteration: int,
                      last_simd: float) -> dict[str, float]:
    """The features of a frontier (distinct vertex ids) at the start of ``iteration``."""
    n = degree.size
    d = degree[frontier]
    f = int(frontier.size)
    edges = int(d.sum())
    avg = edges / f if f else 0.0
    graph_avg = m / n if n else 0.0
    return {
        "frontier_frac": f / n if n else 0.0,
        "edge_frac": edges / m if m else 0.0,
        "frontier_degree": avg,
        "degree_spread": float(d.max()) / avg if f and avg > 0 else 0.0,
        "graph_degree": graph_avg,
        "graph_spread": float(degree.max()) / graph_avg if n and graph_avg > 0 else 0.0,
        "iteration": float(iteration),
        "last_simd": float(last_simd),
        "vertices": float(n),
        "edges": float(m),
    }


def feature_counter_cost(frontier: int, tasks: int, device: Device) -> LaunchCost:
    """What counting an iteration's features adds to the launch that builds its frontier:
    one warp-aggregated atomic per 32 frontier vertices on each of three counter words
    (vertices, degree sum, largest degree) and per 32 of the launch's tasks on the lane-step
    counters; the words are distinct, so the rounds on each serialise at ``atomic_cycles``
    side by side: ceil(max(frontier, tasks) / 32) x atomic_cycles cycles. Reading each new
    frontier vertex's row bounds takes a sector, at DRAM bandwidth."""
    ws = device.warp_size
    rounds = -(-max(frontier, tasks) // ws)
    atomics = 3 * -(-frontier // ws) + 2 * -(-tasks // ws)
    sectors = float(frontier)
    cycles = rounds * device.atomic_cycles + sectors * device.sector_bytes / (
        device.dram_bytes_per_cycle)
    return LaunchCost(cycles=cycles, extra_cycles=cycles, atomics=float(atomics),
                      transactions=sectors, requests=sectors)


@dataclass(frozen=True)
class Policy:
    """Candidate configurations and the rule that picks one per iteration."""

    candidates: tuple[Strategy, ...]
    tree: dict[str, Any] | None = None
    schedule: tuple[int, ...] | None = None
    name: str = ""
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not self.candidates:
            raise ConfigError("a policy needs at least one candidate configuration")
        for i, s in enumerate(self.candidates):
            if s.driven not in ("topology", "data") or MAPPINGS[s.mapping].per_iteration or (
                    s.unroll or 1) > 1 or s.policy is not None:
                raise ConfigError(
                    f"policy candidate {i} ({s}) must be a plain topology or data-driven "
                    "configuration (no adaptive mapping, hybrid, unroll or nested policy)")
        if (self.tree is None) == (self.schedule is None):
            raise ConfigError("a policy has either a tree or a schedule, not both or neither")
        if self.tree is not None:
            _check_node(self.tree, len(self.candidates))
        else:
            _check_schedule(self.schedule, len(self.candidates))

    def choose(self, features: dict[str, float]) -> tuple[int, str]:
        """The candidate for an iteration and the rule that fired."""
        if self.schedule is not None:
            i = min(int(features["iteration"]), len(self.schedule) - 1)
            return self.schedule[i], f"schedule[{i}]"
        node, path = self.tree, []
        while "choose" not in node:
            value = features[node["feature"]]
            if value <= node["threshold"]:
                path.append(f"{node['feature']} <= {node['threshold']:.6g}")
                node = node["le"]
            else:
                path.append(f"{node['feature']} > {node['threshold']:.6g}")
                node = node["gt"]
        return int(node["choose"]), " and ".join(path) or "always"

    def needs_counters(self, graph: dict[str, float] | None = None) -> bool:
        """Whether the tree reads what only the GPU can count (the frontier's size, degrees
        or the last launch's SIMD efficiency): a tree over ``HOST_FEATURES`` or a schedule
        does not; with ``graph`` (graph-level features), only the part of the tree that
        graph reaches counts."""
        if self.tree is None:
            return False
        tree = self.tree if graph is None else self.residual(graph)
        if len(self.candidates) == 1 or len(_leaf_choices(tree)) == 1:
            return False  # whatever it counts, it keeps one candidate (probe CORRECT2)
        return any(node["feature"] not in HOST_FEATURES
                   for node in Policy(self.candidates, tree=tree).splits())

    def residual(self, graph: dict[str, float]) -> dict[str, Any]:
        """The tree with its splits on graph-level features decided for ``graph``: what the
        host evaluates per iteration on that graph (a leaf: one candidate the whole run)."""

        def walk(node: dict[str, Any]) -> dict[str, Any]:
            if "choose" in node:
                return node
            if node["feature"] in GRAPH_FEATURES:
                side = "le" if graph[node["feature"]] <= node["threshold"] else "gt"
                return walk(node[side])
            return {**node, "le": walk(node["le"]), "gt": walk(node["gt"])}

        if self.tree is None:
            raise ConfigError("a schedule policy has no tree")
        return walk(self.tree)

    def reads(self) -> set[str]:
        """The features the policy reads: its tree's splits, or a schedule's ``iteration``."""
        if self.tree is None:
            return {"iteration"}
        return {node["feature"] for node in self.splits()}

    def constant(self) -> bool:
        """Whether the policy keeps one candidate for a whole run (its tree splits on
        graph-level features only, or it has one candidate)."""
        if len(self.candidates) == 1:
            return True
        if self.tree is None:
            return len(set(self.schedule)) == 1
        return (len(_leaf_choices(self.tree)) == 1
                or all(node["feature"] in GRAPH_FEATURES for node in self.splits()))

    def rules(self) -> list[dict[str, Any]]:
        """The tree (or schedule) as flat rules, first match wins: conditions, candidate index,
        its knobs. A schedule's last entry holds for every later iteration, as it runs (a rule
        `iteration == k` for it had been the check's, refusing a file that said so)."""
        if self.tree is None:
            last = len(self.schedule) - 1
            return [{"when": f"iteration == {i}" if i < last else
                     f"iteration >= {i}" if i else "always", "choose": c}
                    for i, c in enumerate(self.schedule)]
        out: list[dict[str, Any]] = []

        def walk(node: dict[str, Any], conds: list[str]) -> None:
            if "choose" in node:
                c = int(node["choose"])
                out.append({"when": " and ".join(conds) or "always", "choose": c,
                            "config": str(self.candidates[c])})
                return
            walk(node["le"], [*conds, f"{node['feature']} <= {node['threshold']:.6g}"])
            walk(node["gt"], [*conds, f"{node['feature']} > {node['threshold']:.6g}"])

        walk(self.tree, [])
        return out

    def splits(self) -> list[dict[str, Any]]:
        """The tree's split nodes in pre-order (those ``THRESHOLD_KNOBS`` scale, first)."""
        out: list[dict[str, Any]] = []

        def walk(node: dict[str, Any]) -> None:
            if "choose" not in node:
                out.append(node)
                walk(node["le"])
                walk(node["gt"])

        if self.tree is not None:
            walk(self.tree)
        return out

    def scaled(self, factors: dict[int, float]) -> Policy:
        """The policy with split i's threshold (pre-order) multiplied by ``factors[i]``."""
        if not factors:
            return self
        if self.tree is None:  # (it had been read as a tree of no splits, and refused as
            # "either a tree or a schedule")
            knobs = ", ".join(THRESHOLD_KNOBS[i] if i < len(THRESHOLD_KNOBS)
                              else f"policy_t{i + 1}" for i in sorted(factors))
            raise ConfigError(f"{knobs}: the policy is a schedule (a candidate per iteration), "
                              "which has no thresholds to scale; policy_t1..policy_t3 scale "
                              "the splits of a policy with a tree")
        tree = json.loads(json.dumps(self.tree))
        nodes = Policy(self.candidates, tree=tree).splits()
        for i, f in factors.items():
            if i >= len(nodes):
                raise ConfigError(f"policy_t{i + 1}: the policy has only {len(nodes)} splits")
            nodes[i]["threshold"] = float(nodes[i]["threshold"]) * float(f)
        return Policy(self.candidates, tree=tree, name=self.name, meta=self.meta)

    def to_json(self) -> dict[str, Any]:
        """The policy file's content."""
        doc: dict[str, Any] = {
            "format": FORMAT, "schema_version": POLICY_SCHEMA_VERSION, "name": self.name,
            "features": list(FEATURES),
            "candidates": [s.to_params() for s in self.candidates],
        }
        if self.tree is not None:
            doc["tree"] = self.tree
            doc["rules"] = self.rules()
        else:
            doc["schedule"] = list(self.schedule)
        doc.update({k: v for k, v in self.meta.items() if k not in doc})
        return doc

    def save(self, path: str | Path) -> Path:
        """Write the policy file (JSON)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=1, allow_nan=False) + "\n")
        return path

    @classmethod
    def from_json(cls, doc: Any) -> Policy:
        """Build from a policy file's content; ConfigError for anything else."""
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise ConfigError(f"not a warpsweep policy (format {FORMAT!r} expected)")
        version = doc.get("schema_version")
        if type(version) is not int or version != POLICY_SCHEMA_VERSION:  # (true == 1)
            raise ConfigError(f"policy schema version {version!r}; this warpsweep reads "
                              f"{POLICY_SCHEMA_VERSION}")
        _check_features(doc.get("features"))
        if not isinstance(doc.get("candidates"), list):
            raise ConfigError(f"policy `candidates` is {doc.get('candidates')!r}: a list of "
                              'candidate configurations, each an object of knobs, e.g. '
                              '[{"mapping": "thread"}, {"mapping": "vwarp", "w": 8}]')
        try:
            candidates = tuple(_candidate(i, c) for i, c in enumerate(doc["candidates"]))
            schedule = doc.get("schedule")
            if schedule is not None and not isinstance(schedule, list):
                raise ConfigError(f"policy `schedule` is {schedule!r}: a list of candidate "
                                  "indices, one per iteration (the last repeats)")
            # any other top-level key is metadata (``algorithm``, ``device``, ``trained_on``
            # ...): kept, and written back
            meta = {k: v for k, v in doc.items() if k not in FILE_KEYS}
            policy = cls(candidates, tree=doc.get("tree"),
                         schedule=None if schedule is None else tuple(schedule),
                         name=str(doc.get("name", "")), meta=meta)
        except ConfigError:  # a check's own words, not "damaged policy (ConfigError: ...)"
            raise
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"damaged policy ({type(exc).__name__}: {exc})") from None
        if "rules" in doc and not _same_rules(doc["rules"], policy):
            # the rules are what a CUDA launcher runs: a file whose rules say otherwise
            # than the tree (or schedule) it is simulated by was edited apart
            what = "tree" if policy.tree is not None else "schedule"
            raise ConfigError(f"its `rules` are not its {what}'s (edited apart?): the {what} "
                              f"is what is simulated; write the file again from the {what}")
        _check_reads(doc.get("features"), policy)
        return policy


def _same_rules(rules: Any, policy: Policy) -> bool:
    """Whether a file's ``rules`` say what ``policy`` runs: a tree's as ``Policy.rules``
    writes them; a schedule's (which no file is written with) with or without each
    candidate's ``config``, its last entry's condition ``iteration >= k`` (``always`` for a
    schedule of one) (review CR16)."""
    if policy.tree is not None:
        return rules == policy.rules()
    if not isinstance(rules, list) or len(rules) != len(policy.schedule):
        return False
    for rule, want in zip(rules, policy.rules(), strict=True):
        if not isinstance(rule, dict) or set(rule) - {"when", "choose", "config"}:
            return False
        when, c = rule.get("when"), want["choose"]
        if when == "iteration >= 0":
            when = "always"
        if want["when"].startswith("iteration >=") and when == "always":
            when = want["when"]  # the last rule, first match winning: the same
        if type(rule.get("choose")) is not int or (when, rule["choose"]) != (want["when"], c) \
                or ("config" in rule and rule["config"] != str(policy.candidates[c])):
            return False  # (true, 1.0: refused by the schedule itself, review CR17)
    return True


# The top-level keys a policy file defines; any other is metadata (kept in ``Policy.meta``).
FILE_KEYS = ("format", "schema_version", "name", "features", "candidates", "tree", "schedule",
             "rules")
# The keys of a tree's nodes: a leaf's, a split's.
LEAF_KEYS = ("choose",)
SPLIT_KEYS = ("feature", "threshold", "le", "gt")


def _check_features(features: Any) -> None:
    """A file's ``features`` (what its tree may read), where it lists them: known names."""
    if features is None:
        return
    if not isinstance(features, list) or not all(isinstance(f, str) for f in features):
        raise ConfigError(f"policy `features` {features!r} is not a list of feature names")
    unknown = [f for f in features if f not in FEATURES]
    if unknown:
        raise ConfigError(f"policy `features` lists {', '.join(map(repr, unknown))}: not a "
                          f"feature (features are {', '.join(FEATURES)})")


def _candidate(i: int, params: Any) -> Strategy:
    """Candidate ``i`` of a file: an object of knobs (a string had been split into letters
    and refused as unknown knobs '=', 'a', ...)."""
    if not isinstance(params, dict):
        raise ConfigError(f"policy candidate {i} is {params!r}: a candidate is an object of "
                          'knobs, e.g. {"mapping": "thread"}')
    try:
        return Strategy.from_params(params)
    except ConfigError as exc:
        raise ConfigError(f"policy candidate {i}: {exc}") from None


def _check_reads(features: list[str] | None, policy: Policy) -> None:
    """Refuse a file whose ``features`` (where it lists them) leave out one its tree or
    schedule reads: a launcher that counts only the listed ones had been given a tree over
    others, and the file accepted."""
    if features is None:
        return
    missing = sorted(policy.reads() - set(features))
    if missing:
        what = "tree splits on" if policy.tree is not None else "schedule reads"
        raise ConfigError(f"policy `features` leaves out {', '.join(missing)}, which its "
                          f"{what}: list every feature the policy reads")


def _check_schedule(schedule: tuple[Any, ...], k: int) -> None:
    """Refuse an empty schedule, or an entry that is not a candidate's index (a whole number
    in 0..k-1; 1.7 had been read as 1, true as 1), naming the entry."""
    if not schedule:
        raise ConfigError("a policy schedule lists candidate indices, at least one")
    for c in schedule:
        # numpy's integers pass: a schedule built in Python from an argmin
        if not (is_int(c) or isinstance(c, np.integer)) or not 0 <= c < k:
            raise ConfigError(f"policy schedule entry {c!r} is not one of 0..{k - 1}")


def _check_node(node: Any, k: int, where: str = "tree") -> None:
    """Refuse a tree node (at ``where``: tree, tree.le, ...) that is neither a leaf
    ``{"choose": i}`` nor a split ``{"feature", "threshold", "le", "gt"}``, with every key
    it holds of one or the other (a leaf's split and a node's unknown keys had been dropped
    without a word)."""
    if not isinstance(node, dict):
        raise ConfigError(f"policy {where} is {node!r}, not an object: a node is a leaf "
                          '{"choose": i} or a split {"feature", "threshold", "le", "gt"}')
    unknown = [key for key in node if key not in LEAF_KEYS + SPLIT_KEYS]
    if unknown:
        raise ConfigError(f"policy {where}: unknown key(s) {', '.join(map(repr, unknown))}; a "
                          'node is a leaf {"choose": i} or a split {"feature", "threshold", '
                          '"le", "gt"}')
    if "choose" in node:
        split = [key for key in SPLIT_KEYS if key in node]
        if split:
            raise ConfigError(f"policy {where}: a leaf (`choose`) with split key(s) "
                              f"{', '.join(split)}: a node either chooses a candidate or "
                              "splits, not both")
        if not is_int(node["choose"]) or not 0 <= node["choose"] < k:
            raise ConfigError(f"policy leaf chooses {node['choose']!r}: not one of 0..{k - 1}")
        return
    if node.get("feature") not in FEATURES:
        raise ConfigError(f"policy split on {node.get('feature')!r}: features are {FEATURES}")
    t = node.get("threshold")
    if not isinstance(t, int | float) or isinstance(t, bool) or not math.isfinite(t):
        raise ConfigError(f"policy threshold {t!r} is not a finite number")
    for side in ("le", "gt"):
        if side not in node:  # (read as None: "node None is not an object", no place)
            raise ConfigError(f"policy {where} (the split {node['feature']} <= {t:.6g}) has no "
                              f"`{side}`: a split has both children, `le` and `gt`")
        _check_node(node[side], k, f"{where}.{side}")


_LOADED: dict[tuple[str, float], Policy] = {}
_DIGESTS: dict[tuple[str, float], str] = {}  # each loaded version's content digest


# the shipped policies (``policies/``, named relatively by search_spaces/policy.yaml)
SHIPPED_ROOT = Path(__file__).resolve().parents[1]


def policy_file(path: str | Path) -> Path:
    """The file a policy path names: a relative one under the working directory, else one
    shipped with warpsweep (``policies/...``: the `policy` space's files, from any
    directory)."""
    path = Path(path)
    if not path.is_absolute() and not path.exists() and (SHIPPED_ROOT / path).is_file():
        return SHIPPED_ROOT / path
    return path


def load_policy(path: str | Path) -> Policy:
    """The policy of a file (kept while the file is unchanged), found by ``policy_file``."""
    return _loaded(path)[0]


def policy_digest(path: str | Path) -> str:
    """The content digest (sha256, 16 hex digits) of the policy file ``path`` names, as
    ``load_policy`` reads it: a study's key names its policies by it."""
    return _loaded(path)[1]


def _loaded(path: str | Path) -> tuple[Policy, str]:
    """A policy file's policy and content digest, read once per version of the file."""
    path = policy_file(path)
    try:
        key = (str(path.resolve()), path.stat().st_mtime)
    except OSError:
        raise ConfigError(f"policy file {str(path)!r} does not exist") from None
    if key not in _LOADED:
        try:
            data = path.read_bytes()
            doc = loads_json(data)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"policy file {str(path)!r} is not readable JSON ({exc})"
                              ) from None
        except RecursionError:  # a tree nested thousands deep: no policy (a traceback)
            raise ConfigError(f"policy file {str(path)!r} is nested too deeply") from None
        _DIGESTS[key] = hashlib.sha256(data).hexdigest()[:16]
        try:
            _LOADED[key] = Policy.from_json(doc)
        except ConfigError as exc:
            raise ConfigError(f"policy file {str(path)!r}: {exc}") from None
        except RecursionError:
            raise ConfigError(f"policy file {str(path)!r} is nested too deeply") from None
    return _LOADED[key], _DIGESTS[key]


def strategy_policy(strategy: Strategy, algorithm: str | None = None,
                    device: Device | None = None) -> Policy:
    """The policy a ``policy=FILE`` strategy runs, its thresholds scaled by ``policy_t*``;
    ConfigError where the file says it is for another ``algorithm``, or for another GPU's
    preset than ``device``'s (a device file of its own name is taken at its word)."""
    policy = load_policy(strategy.policy)
    meant = policy.meta.get("algorithm")
    if algorithm is not None and meant is not None and meant != algorithm:
        raise ConfigError(f"policy file {strategy.policy!r} is for {meant}, not {algorithm}: "
                          "its features and thresholds were learnt on the other's runs")
    trained = policy.meta.get("device")
    if device is not None and isinstance(trained, str):
        from simulator.device import DEVICES
        from simulator.device import datasheet_of
        from simulator.device import gpu_name

        ours, theirs = (gpu_name(datasheet_of(d)) for d in (device.name, trained))
        if ours in DEVICES and theirs in DEVICES and ours != theirs:  # (probe ADP)
            raise ConfigError(
                f"policy file {strategy.policy!r} was trained on {trained}: its thresholds "
                f"follow that GPU's costs, not {device.name}'s; train one for {device.name} "
                "(bench/bench_adaptive.py --device ... --export), or simulate on "
                f"{trained}")
    factors = {i: getattr(strategy, k) for i, k in enumerate(THRESHOLD_KNOBS)
               if getattr(strategy, k) is not None}
    try:
        return policy.scaled(factors)
    except ConfigError as exc:  # which file's splits (or schedule) the knob does not fit
        raise ConfigError(f"policy file {strategy.policy!r}: {exc}") from None


@dataclass
class PolicyIteration(IterationCost):
    """An iteration of a policy run: which candidate ran it, why, on what features, and
    (``record``) what converting its frontier to the other form would have cost."""

    choice: int = 0
    rule: str = ""
    features: dict[str, float] = field(default_factory=dict)
    switch_cycles: float = 0.0     # the conversion kernel this iteration paid, cycles
    feature_cycles: float = 0.0    # counting its features
    convert_out_cycles: float = 0.0  # (record) converting the frontier it built


class _PolicyLauncher(Launcher):
    """A launcher whose strategy is the candidate the policy chose for the iteration."""

    def __init__(self, functional: FunctionalRun, policy: Policy, device: Device,
                 costs: InstructionCosts):
        super().__init__(functional, policy.candidates[0], device, costs)
        self.current = policy.candidates[0]
        self.max_degree = int(self.degree.max()) if self.degree.size else 0
        # a launch's working set holds the worklist where the launch expands one
        self.hit_rates = {
            form: device.l2_hit_rate(working_set_bytes(
                functional.n, functional.indices.size, reads_weights=functional.reads_weights,
                worklist=form == "data"))
            for form in ("topology", "data")
        }

    def use(self, strategy: Strategy) -> None:
        """Run the next launches under ``strategy``."""
        self.settle()
        self.current = strategy
        self.hit_rate = self.hit_rates[strategy.driven]

    def strategy_for(self, active: np.ndarray) -> Strategy:
        return self.current

    def _with_idle_outliers(self, cost: LaunchCost, launch: Launch,
                            strategy: Strategy) -> LaunchCost:
        t = strategy.defer_threshold
        if t is not None and self.max_degree > t and not (self.degree[launch.active] > t).any():
            cost = cost + idle_outlier_kernel(self.device, self.hit_rate)
        return cost


def _simd(cost: LaunchCost) -> float:
    return float(cost.simd_active / cost.simd_issued) if cost.simd_issued else 1.0


def policy_iteration_costs(
    functional: FunctionalRun,
    policy: Policy,
    device: Device,
    costs: InstructionCosts = COSTS,
    *,
    count_features: bool = True,
    record: bool = False,
) -> list[PolicyIteration]:
    """Every iteration of a run whose configuration ``policy`` picks per iteration, host
    round trips, conversions between forms and (``count_features``) the feature counters
    included; the counters are paid only where the policy reads them on this graph
    (``Policy.needs_counters``: the part of the tree the graph's own features reach; a tree
    over graph-level features and the iteration count, or a schedule, reads none).
    ``record``: also cost, for each iteration, converting the frontier it built
    to the other form (the oracle's switch costs). SSSP's and CC's launches of either form run
    asynchronously, as their constant runs do, until one lowers nothing."""
    fr = functional
    if fr.algorithm not in POLICY_ALGORITHMS:
        raise ConfigError(f"a policy runs {', '.join(POLICY_ALGORITHMS)}, not {fr.algorithm}")
    for s in policy.candidates:
        check_applicable(s, fr.algorithm)
    launcher = _PolicyLauncher(fr, policy, device, costs)
    degree, n, m = launcher.degree, fr.n, int(fr.indices.size)
    if count_features and policy.tree is not None:
        graph = frontier_features(np.zeros(0, dtype=np.int64), degree, m, 0, 1.0)
        count_features = policy.needs_counters(graph)
    else:
        count_features = False
    run = asynchronous_run(launcher) if launcher.atomic_updates else None
    synchronous = iter(fr.iterations)
    pending = initial_worklist(fr)  # the next worklist, or the next sweep's active vertices
    held = None  # the form ``pending`` is held in: "data" (a worklist) or "topology" (flags)
    ranks = None
    last_simd = 1.0
    out: list[PolicyIteration] = []
    lost_stores = False  # a plain-store launch ran since the last verify sweep
    verify_sweeps = choice = 0
    while True:
        work = None
        if run is None:
            work = next(synchronous, None)
            if work is None:
                break
            frontier = work.active
        elif pending.size == 0 and lost_stores:
            # the constant run's repair (``driver._asynchronous_data``), under the candidate
            # that ran last; its pushes are the next worklist
            if verify_sweeps == MOST_VERIFY_SWEEPS:
                raise RuntimeError(f"plain-store relaxation still lost updates after "
                                   f"{MOST_VERIFY_SWEEPS} verify sweeps")
            verify_sweeps += 1
            pending = unrelaxed_sources(fr.indptr, fr.indices, run.values, fr.edge_values)
            iteration = verify_sweep(launcher, pending)
            launcher.settle()
            cost = iteration.cost
            last_simd = _simd(cost)
            out.append(PolicyIteration(cost, iteration.form, iteration.w, choice=choice,
                                       rule="verify sweep (relax=store)"))
            held, lost_stores, ranks = "data", False, None
            continue
        elif pending.size == 0:
            break
        else:
            frontier = pending if held == "topology" else distinct(pending)
        features = frontier_features(frontier, degree, m, len(out), last_simd)
        choice, rule = policy.choose(features)
        s = policy.candidates[choice]
        launcher.use(s)
        switch = None
        if held is not None and held != s.driven:
            if s.driven == "data":  # the sweep's flags become a worklist
                switch = to_worklist_kernel(fr.algorithm, n,
                                            np.asarray(frontier, dtype=np.int64), s, device,
                                            costs, launcher.hit_rate)
                pending = np.asarray(frontier, dtype=np.int64)
            else:  # the worklist's entries set their flags (none for BFS)
                switch = to_sweeps_kernel(fr.algorithm, pending.size, s, device, costs,
                                          launcher.hit_rate)
                pending = distinct(pending)
            ranks = None
        if s.driven == "data":
            store_lanes = None
            lost_stores |= run is not None and s.relax == "store"
            if run is not None:
                work, _, store_lanes = asynchronous_worklist(launcher, run, pending)
                cost, pending, _ = data_launch(launcher, work, pending,
                                               store_lanes=store_lanes)
            else:
                cost, pending, ranks = data_launch(launcher, work, pending, ranks=ranks)
        else:
            store_lanes = None
            if run is None:
                pending = distinct_ids(fr.indices[work.writes], n).astype(np.int64, copy=False)
            else:
                work, _, store_lanes, pending = asynchronous_sweep(launcher, run, pending)
            cost = launcher.launch(Launch.sweep(work, store_lanes=store_lanes), s)
        held = s.driven
        launcher.host(cost)
        settled = launcher.iteration(cost, held, s.lanes_per_vertex)
        launcher.settle()  # the next choice reads this launch's SIMD efficiency
        cost = settled.cost
        last_simd = _simd(cost)
        iteration = PolicyIteration(cost, held, s.lanes_per_vertex, choice=choice, rule=rule,
                                    features=features)
        if switch is not None:
            cost = cost + switch
            iteration.switch_cycles = switch.cycles
        if count_features:
            counters = feature_counter_cost(int(frontier.size), int(cost.active_tasks), device)
            cost = cost + counters
            iteration.feature_cycles = counters.cycles
        iteration.cost = cost
        if record:
            iteration.convert_out_cycles = _convert_out(pending, held, s, launcher)
        out.append(iteration)
    return out


def _convert_out(pending: np.ndarray, held: str, strategy: Strategy,
                 launcher: _PolicyLauncher) -> float:
    """Cycles to convert the frontier an iteration built (``pending``, held as ``held``) to
    the other form: compaction of a sweep's flags, scatter of a worklist."""
    fr, device = launcher.fr, launcher.device
    if held == "topology":
        other = launcher.hit_rates["data"]
        return to_worklist_kernel(fr.algorithm, fr.n, np.asarray(pending, dtype=np.int64),
                                  strategy, device, launcher.costs, other).cycles
    other = launcher.hit_rates["topology"]
    scatter = to_sweeps_kernel(fr.algorithm, int(pending.size), strategy, device,
                               launcher.costs, other)
    return 0.0 if scatter is None else scatter.cycles


def _leaf_choices(tree: dict[str, Any]) -> set[int]:
    """The candidates a tree's leaves choose."""
    if "choose" in tree:
        return {int(tree["choose"])}
    return _leaf_choices(tree["le"]) | _leaf_choices(tree["gt"])
