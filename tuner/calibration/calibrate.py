"""Fit a device's cost figures to measured GPU times (``warpsweep calibrate``).

Every simulated launch keeps the row of bounds its time is made of (``Result.bounds``, columns
``BOUND_NAMES``), and ``Result.cycles`` is exactly the sum over rows of max(first five) (or,
with ``Device.bounds_norm`` p, their p-norm) + overhead, plus ``host_cycles`` and
``extra_cycles``. So each measured (graph, algorithm, config)
is simulated once with the base device, and a scale theta per part (issue, lsu, latency,
memory, atomics, overhead, host) is fitted on the surrogate

    predicted(theta) = sum_rows max_i(theta_i * row_i, i < 5) + theta_overhead * row_overhead
                       + theta_host * host + extra

(max: the p-norm where the base device's ``bounds_norm`` says so, the bounds being the same
under any norm) by least squares on log(predicted / measured), over log theta, bounded to
1/20..20, from a few seeded starts, with a tiny pull towards theta = 1 so that a part whose
bound never binds stays at 1 (and is reported unconstrained) instead of drifting. By default
the fit is relative: each (graph, algorithm) has a free log offset (its mean error is
subtracted) and the same total weight, so only how a graph's configurations compare with each
other shapes the thetas (what a tuner's ranking needs; an error common to a whole graph, e.g.
its host loop, does not bend them), and one common factor on the free thetas then sets the
absolute level (``fit(relative=False)``: plain least squares).
Where the kernel time of every launch was measured (``bench/gpu/launch_times.py``), the kernel
parts can be fitted to those instead (``fit(launch_us=...)``, ``load_launch_times``): tens of
thousands of launches of every size set the parts apart better than a few hundred totals,
most of which is host round trips and launch overheads. Which of these fits (and which
norm) ranks configurations best on graphs left out is not restated here: ``python
bench/fidelity.py`` chooses them inside each held-out fold and prints the figures.
The thetas then map onto the device's own figures (``calibrated_device``): exactly for lsu,
memory, atomics, overhead and host; approximately for latency and issue (a warp's latency
bound holds both its round trips and its instruction time, and each theta scales only one of
them; in a dynamic launch it also holds the grabs' waits on the queue counter, resident warps
x atomic_cycles each, which the latency theta scales in the fit and the atomics theta in the
file).
"""

from __future__ import annotations

import dataclasses
import json
import math
import unicodedata
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field

import numpy as np

from simulator.costs import BOUND_NAMES
from simulator.device import DEVICES
from simulator.device import MAX_DEVICE_NAME
from simulator.device import Device
from simulator.device import datasheet_of
from simulator.device import get_device
from simulator.device import gpu_name
from simulator.errors import ConfigError
from tuner.env import git_commit
from tuner.env import simulator_digest
from tuner.env import warpsweep_version

THETA_NAMES = (*BOUND_NAMES, "host")
MAX_BOUNDS = len(BOUND_NAMES) - 1  # the first five bounds: a launch takes their maximum
THETA_RANGE = (1 / 20, 20.0)
RIDGE = 1e-3  # weight of the pull of log theta towards 0: negligible wherever data binds
SMOOTHING = (4.0, 16.0, 64.0)  # p-norms the fit passes through before the exact maximum
BINDS = 1e-3  # a part binds when it makes at least this share of some row's predicted time



@dataclass(frozen=True)
class Measured:
    """The measured time of one (graph, algorithm, config): its best correct variant's."""

    graph: str
    graph_spec: str
    algorithm: str
    config: str
    source: int | None  # None: PageRank and CC, which take none
    time_us: float
    variant: str
    m: int | None = None
    launches: int | None = None  # kernel launches the measured run made (where recorded)
    iterations: int | None = None
    kernel_us: float | None = None  # time inside kernels (where recorded)


@dataclass(frozen=True, eq=False)
class Parts:
    """One simulation's time split into parts: per-launch bounds (cycles, ``BOUND_NAMES``),
    host round trips and other cycles; ``cycles`` is the simulator's total (theta = 1)."""

    bounds: np.ndarray
    host_cycles: float
    extra_cycles: float
    cycles: float


@dataclass(frozen=True, eq=False)
class Calibration:
    """A fit of per-part scales to measured times, and how well it fits (log errors are
    natural logs of predicted / measured, one per measured row)."""

    base: Device
    thetas: dict[str, float]
    unconstrained: tuple[str, ...]
    log_se: dict[str, float]
    share: dict[str, float]
    rows: int
    graphs: tuple[str, ...]
    algorithms: tuple[str, ...]
    log_errors_before: np.ndarray = field(repr=False)
    log_errors_after: np.ndarray = field(repr=False)
    relative: bool = False  # fitted with a free offset per (graph, algorithm) (``fit``)
    pinned: tuple[str, ...] = ()  # parts set from the measurements rather than fitted
    # fitted parts whose bound binds no row at the fit (it binds at 1): any smaller scale fits
    # the rows as well, a larger one until it binds; the rows do not determine it
    upper_only: tuple[str, ...] = ()
    launches: int = 0  # launches whose kernel times the fit followed (0: the runs' totals)
    seed: int = 0  # of the fit's random starts
    starts: int = 4

    @property
    def rms_before(self) -> float:
        """RMS log error of the base device's simulation."""
        return _rms(self.log_errors_before)

    @property
    def rms_after(self) -> float:
        """RMS log error of the fitted surrogate."""
        return _rms(self.log_errors_after)


def _rms(values: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(values)))) if values.size else float("nan")


# ---------------------------------------------------------------------------------- surrogate


@dataclass(frozen=True, eq=False)
class _Stack:
    """Every run's launch rows, for vectorised predictions. A launch whose largest bound
    exceeds the others by more than the thetas' range can reorder (400x) binds the same way
    for every theta: those are summed per run and part once (``fixed``); only the others
    (``columns``) take their maximum at each evaluation."""

    columns: np.ndarray  # (5, launches whose winner depends on theta): a bound per row
    run: np.ndarray  # each of those launches' run index, ascending
    first: np.ndarray  # where each run with such launches starts in ``run``
    fixed: np.ndarray  # (runs, 5): cycles of the bound that binds in every other launch
    overhead: np.ndarray  # per run: launch overheads
    host: np.ndarray  # per run
    extra: np.ndarray  # per run
    norm: float = math.inf  # a launch takes this norm of its five bounds (``bounds_norm``)

    @classmethod
    def of(cls, parts: Sequence[Parts], norm: float = math.inf) -> _Stack:
        blocks = [np.asarray(p.bounds, dtype=np.float64).reshape(-1, len(BOUND_NAMES))
                  for p in parts]
        rows = np.concatenate(blocks) if blocks else np.zeros((0, len(BOUND_NAMES)))
        run = np.repeat(np.arange(len(parts)), [b.shape[0] for b in blocks])
        return cls.of_rows(rows, run, np.array([p.host_cycles for p in parts], dtype=np.float64),
                           np.array([p.extra_cycles for p in parts], dtype=np.float64), norm)

    @classmethod
    def of_rows(cls, rows: np.ndarray, run: np.ndarray, host: np.ndarray,
                extra: np.ndarray, norm: float = math.inf) -> _Stack:
        """From launch rows (bounds, ``BOUND_NAMES``) and each one's run index."""
        runs = host.size
        five = rows[:, :MAX_BOUNDS]
        ordered = np.sort(five, axis=1)
        reorder = THETA_RANGE[1] / THETA_RANGE[0]  # theta_i / theta_j spans at most this
        certain = ordered[:, -1] > ordered[:, -2] * reorder
        empty = ordered[:, -1] <= 0
        winner = np.argmax(five, axis=1)
        fixed = np.zeros((runs, MAX_BOUNDS))
        keep = certain & ~empty
        np.add.at(fixed, (run[keep], winner[keep]), ordered[keep, -1])
        loose = np.flatnonzero(~certain & ~empty)
        loose = loose[np.argsort(run[loose], kind="stable")]
        first = np.flatnonzero(np.diff(run[loose], prepend=-1))
        return cls(
            columns=np.ascontiguousarray(five[loose].T), run=run[loose], first=first,
            fixed=fixed,
            overhead=np.bincount(run, weights=rows[:, MAX_BOUNDS], minlength=runs),
            host=host, extra=extra, norm=norm,
        )

    @property
    def runs(self) -> int:
        return self.host.size

    def contributions(self, theta: np.ndarray, power: float | None = None) -> np.ndarray:
        """Cycles each part contributes to each run, shape (runs, 7): a max bound only in the
        launches where it binds. With ``power`` p the launch takes the p-norm of its five
        bounds instead of their maximum (each bound contributes its share of it): a smooth
        stand-in that lets a fit feel bounds that do not bind yet. Without it, the launch
        takes the stack's ``norm`` of them, as the simulator does."""
        # over (5, launches) columns: numpy reduces a short row (axis=1) many times slower
        scaled = self.columns * theta[:MAX_BOUNDS, None]
        top = scaled.max(axis=0)
        if power is None and not math.isinf(self.norm):
            power = self.norm
        if power is None:
            weights = np.where(scaled == top, scaled, 0.0)
            weights[1:] *= np.cumsum(weights > 0, axis=0)[:-1] == 0  # the first maximum only
        else:
            # the p-norm is top * norm^(1/p), norm = sum (bound / top)^p; bound i's share of
            # it is ratio_i / norm (every loose launch has a positive top)
            ratio = (scaled / top) ** power
            norm = ratio.sum(axis=0)
            weights = ratio * (top * norm ** (1 / power - 1))
        out = np.zeros((self.runs, len(THETA_NAMES)))
        out[:, :MAX_BOUNDS] = self.fixed * theta[:MAX_BOUNDS]
        if self.first.size:
            out[self.run[self.first], :MAX_BOUNDS] += np.add.reduceat(weights, self.first,
                                                                      axis=1).T
        out[:, MAX_BOUNDS] = self.overhead * theta[MAX_BOUNDS]
        out[:, MAX_BOUNDS + 1] = self.host * theta[MAX_BOUNDS + 1]
        return out

    def predict(self, theta: np.ndarray) -> np.ndarray:
        """Predicted cycles per run."""
        return self.contributions(theta).sum(axis=1) + self.extra


def theta_vector(thetas: Mapping[str, float] | Sequence[float] | None) -> np.ndarray:
    """Thetas as an array in ``THETA_NAMES`` order (a mapping may leave parts out: 1)."""
    if thetas is None:
        return np.ones(len(THETA_NAMES))
    if isinstance(thetas, Mapping):
        unknown = sorted(set(thetas) - set(THETA_NAMES))
        if unknown:
            raise ConfigError(f"unknown theta(s) {unknown}; known: {list(THETA_NAMES)}")
        return np.array([float(thetas.get(n, 1.0)) for n in THETA_NAMES])
    vector = np.asarray(thetas, dtype=np.float64)
    if vector.shape != (len(THETA_NAMES),):
        raise ConfigError(f"expected {len(THETA_NAMES)} thetas ({THETA_NAMES})")
    return vector


def predict(parts: Sequence[Parts], thetas: Mapping[str, float] | Sequence[float] | None,
            norm: float = math.inf) -> np.ndarray:
    """Surrogate cycles of each simulation with every part scaled by its theta, its
    launches taking the ``norm`` of their bounds (``Device.bounds_norm``)."""
    return _Stack.of(parts, norm).predict(theta_vector(thetas))


# ---------------------------------------------------------------------------------- fit


def _group_index(keys: Sequence[object]) -> np.ndarray:
    """Each key's group number (0, 1, ... in order of first appearance)."""
    seen: dict[object, int] = {}
    return np.array([seen.setdefault(k, len(seen)) for k in keys], dtype=np.int64)


def _demean(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """``values`` (rows first) less each group's mean: what is left once every group has a
    free offset of its own (the offsets profiled out)."""
    count = np.bincount(groups).astype(np.float64)
    flat = values.reshape(values.shape[0], -1)
    sums = np.zeros((count.size, flat.shape[1]))
    np.add.at(sums, groups, flat)
    return (flat - (sums / count[:, None])[groups]).reshape(values.shape)


def _solve(stack: _Stack, target: np.ndarray, free: np.ndarray, starts: int, seed: int,
           groups: np.ndarray | None = None, weights: np.ndarray | None = None,
           fixed: np.ndarray | None = None) -> np.ndarray:
    """Least squares on log errors over the free parts' log thetas (the others stay at
    ``fixed``, default 1), from ``starts`` seeded starting points (the first at theta = 1);
    the best solution. ``groups`` (a group number per run) gives every group a free log
    offset, profiled out by subtracting each group's mean error; ``weights`` scale each
    run's error."""
    from scipy.optimize import least_squares

    base_theta = np.ones(len(THETA_NAMES)) if fixed is None else fixed
    k = int(free.sum())
    if k == 0:
        return base_theta.copy()
    lo, hi = math.log(THETA_RANGE[0]), math.log(THETA_RANGE[1])
    w = np.ones(stack.runs) if weights is None else weights

    def full(x: np.ndarray) -> np.ndarray:
        theta = base_theta.copy()
        theta[free] = np.exp(x)
        return theta

    last: list = [None, None]  # (x, power), contributions: the solver asks for the
    # residuals and then the Jacobian at one point

    def contributions(x: np.ndarray, power: float | None) -> np.ndarray:
        key = (x.tobytes(), power)
        if last[0] != key:
            last[:] = key, stack.contributions(full(x), power)
        return last[1]

    def residuals(x: np.ndarray, power: float | None) -> np.ndarray:
        pred = contributions(x, power).sum(axis=1) + stack.extra
        r = np.log(pred) - target
        if groups is not None:
            r = _demean(r, groups)
        return np.concatenate([w * r, RIDGE * x])

    def jacobian(x: np.ndarray, power: float | None) -> np.ndarray:
        contrib = contributions(x, power)
        pred = contrib.sum(axis=1) + stack.extra
        jac = contrib[:, free] / pred[:, None]
        if groups is not None:
            jac = _demean(jac, groups)
        return np.vstack([w[:, None] * jac, RIDGE * np.eye(k)])

    rng = np.random.default_rng(seed)
    x0s = [np.zeros(k)] + [rng.uniform(-1.5, 1.5, k) for _ in range(max(starts, 1) - 1)]
    best = None
    smoothing = tuple(p for p in SMOOTHING if p > stack.norm)
    for x in x0s:
        for power in (*smoothing, None):  # from smooth p-norms to the stack's own norm
            x = least_squares(residuals, x, jac=jacobian, bounds=(lo, hi), method="trf",
                              xtol=1e-12, ftol=1e-12, gtol=1e-12, max_nfev=300,
                              args=(power,)).x
        cost = float(np.sum(residuals(x, None) ** 2))
        if best is None or cost < best[0] - 1e-15:
            best = (cost, x)
    return full(best[1])


def _level(stack: _Stack, target: np.ndarray, theta: np.ndarray, free: np.ndarray) -> np.ndarray:
    """``theta`` with its free parts scaled by one common factor that minimises the squared
    log error of the total time: a relative fit leaves the absolute level (nearly) free."""
    from scipy.optimize import minimize_scalar

    def cost(c: float) -> float:
        t = theta.copy()
        t[free] *= math.exp(c)
        return float(np.sum((np.log(stack.predict(t)) - target) ** 2))

    c = minimize_scalar(cost, bounds=(-math.log(400), math.log(400)), method="bounded",
                        options={"xatol": 1e-10}).x
    out = theta.copy()
    out[free] = np.clip(theta[free] * math.exp(c), *THETA_RANGE)
    return out


def _max_share(stack: _Stack, theta: np.ndarray) -> np.ndarray:
    """Each part's largest share of a run's predicted time."""
    contrib = stack.contributions(theta)
    pred = contrib.sum(axis=1) + stack.extra
    return (contrib / np.maximum(pred, 1e-300)[:, None]).max(axis=0, initial=0.0)


def _never_binds(stack: _Stack, theta: np.ndarray) -> np.ndarray:
    """Parts that make (almost) none of any run's time, at ``theta`` and with their own theta
    put back to 1: nothing in the data says what their scale is."""
    idle = _max_share(stack, theta) < BINDS
    for i in np.flatnonzero(idle):
        at_one = theta.copy()
        at_one[i] = 1.0
        idle[i] = _max_share(stack, at_one)[i] < BINDS
    return idle


def _fits_as_well_lower(stack: _Stack, target: np.ndarray, theta: np.ndarray,
                        free: np.ndarray, groups: np.ndarray | None,
                        weights: np.ndarray | None) -> np.ndarray:
    """The free parts whose scale at the bottom of ``THETA_RANGE`` fits the rows within one
    residual variance of the fit (profile criterion, the others held): their bound binds
    little or nothing at the fit, the rows bound them from above only, and the Jacobian's
    standard error (near 0 where a column vanishes: "x/ 1.000") means nothing."""
    w = np.ones(stack.runs) if weights is None else weights
    offsets = 0 if groups is None else int(groups.max()) + 1

    def cost(t: np.ndarray) -> float:
        r = np.log(stack.predict(t)) - target
        if groups is not None:
            r = _demean(r, groups)
        return float(np.sum((w * r) ** 2))

    best = cost(theta)
    variance = best / max(stack.runs - int(free.sum()) - offsets, 1)
    out = np.zeros(free.size, dtype=bool)
    for i in np.flatnonzero(free):
        low = theta.copy()
        low[i] = THETA_RANGE[0]
        out[i] = cost(low) - best <= max(variance, 1e-12 * max(best, 1e-300))
    return out


def _standard_errors(jac: np.ndarray, residuals: np.ndarray, extra_dof: int = 0
                     ) -> np.ndarray:
    """Approximate standard errors of log theta from the Jacobian at the solution
    (``extra_dof``: parameters profiled out, such as a relative fit's offsets)."""
    k = jac.shape[1]
    if k == 0:
        return np.zeros(0)
    s2 = float(residuals @ residuals) / max(residuals.size - k - extra_dof, 1)
    cov = s2 * np.linalg.pinv(jac.T @ jac)
    return np.sqrt(np.maximum(np.diag(cov), 0.0))


def _launch_rows(parts: Sequence[Parts], measured: Sequence[Measured],
                 launch_us: Sequence[np.ndarray | None], base: Device
                 ) -> tuple[_Stack, np.ndarray, np.ndarray]:
    """The runs' launches as rows of their own for a fit to measured kernel times: launch j
    of a run against its simulated launch j (where the counts differ, as asynchronous worklist
    runs' may by a few, the first of the longer run's), its log kernel time in cycles, and
    weights that give every (graph, algorithm) the same total weight and each of its runs the
    same share of it."""
    runs_of = _group_index([(m.graph, m.algorithm) for m in measured])
    runs_in_group = np.bincount(runs_of)
    rows, target, weights = [], [], []
    for i, times in enumerate(launch_us):
        if times is None:
            continue
        bounds = np.asarray(parts[i].bounds, dtype=np.float64).reshape(-1, len(BOUND_NAMES))
        k = min(times.size, bounds.shape[0])
        rows.append(bounds[:k])
        target.append(np.log(base.cycles(times[:k])))
        weights.append(np.full(k, 1 / math.sqrt(k * runs_in_group[runs_of[i]])))
    if not rows:
        raise ConfigError("no measured run has per-launch times to fit")
    launches = sum(r.shape[0] for r in rows)
    none = np.zeros(launches)  # a launch row has no host round trip or other cycles
    stack = _Stack.of_rows(np.concatenate(rows), np.arange(launches), none, none,
                           base.bounds_norm)
    return stack, np.concatenate(target), np.concatenate(weights)


def fit(
    parts: Sequence[Parts],
    measured: Sequence[Measured],
    base_device: str | Device,
    *,
    starts: int = 4,
    seed: int = 0,
    relative: bool = True,
    measured_host: bool = True,
    launch_us: Sequence[np.ndarray | None] | None = None,
) -> Calibration:
    """Per-part scales minimising the squared log error of the surrogate against the measured
    times (converted to cycles at the base device's clock); parts whose bound never binds stay
    at 1 and are reported unconstrained.

    ``relative`` (the default): every (graph, algorithm) gets a free log offset (profiled
    out) and weighs the same in total, so the thetas follow the times of a graph's
    configurations relative to each other (what ranking them needs), an error common to a
    whole graph (its host loop, say) does not bend them, and an algorithm measured in fewer
    configurations is not outweighed; then one common scale on the free thetas sets the
    absolute level. Otherwise (absolute) plain least squares over the rows.

    ``measured_host``: where the rows record their kernel time and launches, the host's
    round trip per launch is what they measured (``measured_host_us``), not a fitted part:
    from total times alone it trades off against the launch overhead (both come once a
    launch), and the kernel parts then have to make up for its error.

    ``launch_us`` (``load_launch_times``): fit the kernel parts to each launch's measured
    kernel time rather than to the runs' totals (``_launch_rows``): thousands of launches,
    small and large, tell the parts apart where a few hundred totals, most of them host round
    trips and launch overheads, barely do; kernel times need no offset per graph, so
    ``relative`` does not apply. The host's round trip stays as ``measured_host`` says."""
    base = get_device(base_device)
    if len(parts) != len(measured):
        raise ConfigError(f"{len(parts)} simulations for {len(measured)} measured rows")
    if not measured:
        raise ConfigError("nothing to fit: no measured rows")
    stack = _Stack.of(parts, base.bounds_norm)
    target = np.log([base.cycles(m.time_us) for m in measured])
    groups = weights = None
    if relative:
        groups = _group_index([(m.graph, m.algorithm) for m in measured])
        count = np.bincount(groups).astype(np.float64)
        weights = np.sqrt(len(measured) / (count.size * count[groups]))  # equal per group
    free = np.ones(len(THETA_NAMES), dtype=bool)
    fixed = np.ones(len(THETA_NAMES))
    pinned: tuple[str, ...] = ()
    host_us = measured_host_us(measured) if measured_host else None
    if host_us is not None:
        at = THETA_NAMES.index("host")
        fixed[at] = float(np.clip(host_us / base.host_roundtrip_us, *THETA_RANGE))
        free[at] = False
        pinned = ("host",)
    fit_stack, fit_target, fit_groups, fit_weights = stack, target, groups, weights
    if launch_us is not None:
        if host_us is None:
            raise ConfigError("a fit to per-launch kernel times needs the host's round trip "
                              "measured: the results file's kernel_us and launches columns "
                              "(not --fit-host)")
        relative = False
        fit_stack, fit_target, fit_weights = _launch_rows(parts, measured, launch_us, base)
        fit_groups = None
    theta = _solve(fit_stack, fit_target, free, starts, seed, fit_groups, fit_weights, fixed)
    for _ in range(3):  # fix what never binds at 1, fit the rest again, until nothing changes
        idle = _never_binds(fit_stack, theta) & free
        if not idle.any():
            break
        free &= ~idle
        fixed[idle] = 1.0
        theta = _solve(fit_stack, fit_target, free, starts, seed, fit_groups, fit_weights,
                       fixed)
    solved = theta
    if relative:
        theta = _level(stack, target, theta, free)
    contrib = stack.contributions(theta)
    pred = contrib.sum(axis=1) + stack.extra
    after = np.log(pred) - target
    before = np.log(stack.predict(np.ones(len(THETA_NAMES)))) - target
    jac = contrib[:, free] / pred[:, None]
    if launch_us is not None:
        launch_contrib = fit_stack.contributions(theta)
        launch_pred = launch_contrib.sum(axis=1) + fit_stack.extra
        log_se = _standard_errors(
            fit_weights[:, None] * launch_contrib[:, free] / launch_pred[:, None],
            fit_weights * (np.log(launch_pred) - fit_target))
    elif relative:
        # the ratios from the demeaned errors, the level from one row: the mean error
        level = np.sqrt(len(measured)) * jac.mean(axis=0, keepdims=True)
        log_se = _standard_errors(np.vstack([_demean(jac, groups), level]),
                                  _demean(after, groups), extra_dof=int(groups.max()) + 1)
    else:
        log_se = _standard_errors(jac, after)
    names = [n for n, f in zip(THETA_NAMES, free, strict=True) if f]
    idle = _fits_as_well_lower(fit_stack, fit_target, solved, free, fit_groups, fit_weights)
    upper_only = tuple(n for n, i in zip(THETA_NAMES, idle, strict=True) if i)
    log_se = np.where(idle[free], np.inf, log_se)
    return Calibration(
        base=base,
        thetas={n: float(t) for n, t in zip(THETA_NAMES, theta, strict=True)},
        unconstrained=tuple(n for n, f in zip(THETA_NAMES, free, strict=True)
                            if not f and n not in pinned),
        log_se={n: float(s) for n, s in zip(names, log_se, strict=True)},
        share={n: float(s) for n, s in
               zip(THETA_NAMES, contrib.sum(axis=0) / pred.sum(), strict=True)},
        rows=len(measured),
        graphs=tuple(sorted({m.graph for m in measured})),
        algorithms=tuple(sorted({m.algorithm for m in measured})),
        log_errors_before=before,
        log_errors_after=after,
        relative=relative,
        pinned=pinned,
        upper_only=upper_only,
        launches=0 if launch_us is None else fit_stack.runs,
        seed=seed,
        starts=starts,
    )


def measured_host_us(measured: Sequence[Measured]) -> float | None:
    """The host's time per launch outside kernels, (total - kernel time) / launches, median
    over the rows that record both (None where none does)."""
    gaps = [(m.time_us - m.kernel_us) / m.launches for m in measured
            if m.kernel_us is not None and m.launches and m.kernel_us < m.time_us]
    return float(np.median(gaps)) if gaps else None


# ---------------------------------------------------------------------------------- device

# Device fields each theta scales, and how: "x" multiplies (a time), "/" divides (a rate).
FIELD_MAP: dict[str, tuple[tuple[str, str], ...]] = {
    "issue": (("instruction_cycles", "x"),),
    "lsu": (("lsu_sectors_per_cycle", "/"),),
    "latency": (("dram_latency_cycles", "x"), ("l2_latency_cycles", "x")),
    "memory": (("dram_bandwidth_gbs", "/"), ("l2_bandwidth_gbs", "/")),
    "atomics": (("atomic_cycles", "x"),),
    "overhead": (("launch_overhead_us", "x"),),
    "host": (("host_roundtrip_us", "x"),),
}
EXACT = ("lsu", "memory", "atomics", "overhead", "host")


def calibrated_device(base: str | Device, thetas: Mapping[str, float] | Sequence[float],
                      name: str | None = None) -> Device:
    """``base`` with its figures scaled by the thetas."""
    base = get_device(base)
    theta = dict(zip(THETA_NAMES, theta_vector(thetas), strict=True))
    changes: dict[str, float] = {}
    for part, fields in FIELD_MAP.items():
        for name_, how in fields:
            value = float(getattr(base, name_))
            changes[name_] = value * theta[part] if how == "x" else value / theta[part]
    return dataclasses.replace(base, name=name or calibrated_name(base.name), **changes)


def calibrated_name(base: str) -> str:
    """``<gpu>-calibrated``, the GPU's name shortened where the whole would pass the names'
    limit (a device of 54-64 characters had been fitted, then refused its file's name)."""
    suffix = "-calibrated"
    return f"{gpu_name(base)[:MAX_DEVICE_NAME - len(suffix)]}{suffix}"


def calibration_base(device: str) -> tuple[str, Device]:
    """What ``calibrate --device NAME`` fits: the measured rows' device name and the model the
    fit starts from. A preset fits its GPU's rows on its datasheet model (``h100`` and
    ``h100-datasheet``: the rows of ``h100``, on ``h100-datasheet``), so a calibration never
    scales an earlier fit; a device file fits the rows of its name on its own fields."""
    if device in DEVICES:
        return gpu_name(datasheet_of(device)), get_device(datasheet_of(device))
    base = get_device(device)
    return base.name, base


def se_text(log_se: float) -> str:
    """A multiplicative standard error for people: ``1.053``, or ``>100`` where the data
    barely constrain the scale (near-flat, e.g. at a bound)."""
    if not math.isfinite(log_se) or log_se > math.log(100):
        return ">100"
    return f"{math.exp(log_se):.3f}"


def at_bound(theta: float) -> bool:
    """Whether a fitted scale sits at an end of ``THETA_RANGE``."""
    return any(abs(theta - b) <= 1e-6 * b for b in THETA_RANGE)


def _toml_value(value: object) -> str:
    """A TOML literal for a device field's value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = f"{value:.6g}"
        return text if any(c in text for c in ".en") else f"{text}.0"
    # TOML's basic string is JSON's, but for escapes of characters past U+FFFF (surrogates)
    return json.dumps(str(value), ensure_ascii=False)


def _comment(text: object) -> str:
    """``text`` as one TOML comment line: a control character (a newline in a path or a graph
    name) had ended the comment and put what followed into the device's fields (probe
    MEASURE)."""
    return "# " + "".join(" " if unicodedata.category(c) == "Cc" and c != "\t" else c
                          for c in str(text))


def device_toml(calibration: Calibration, *, source: str | None = None,
                notes: Sequence[str] = ()) -> str:
    """The calibrated device as a TOML device file (``get_device`` loads it), with the fit's
    figures as comments at the top; ``source`` names the measured file, ``notes`` are added as
    comment lines."""
    base = calibration.base
    device = calibrated_device(base, calibration.thetas)
    preset = DEVICES.get(base.name)
    lines = [
        _comment(f"{device.name}: device {base.name} calibrated by `warpsweep calibrate`"
                 + (f" on {source}" if source else "")),
        f"# fit: {calibration.rows} measured (graph, algorithm, config) rows on "
        f"{len(calibration.graphs)} graph{'s' if len(calibration.graphs) != 1 else ''} "
        f"({', '.join(calibration.algorithms)}); RMS log error "
        f"{calibration.rms_before:.3f} with {base.name}, {calibration.rms_after:.3f} fitted",
        "# theta: scale on the cycles of each part of the simulated time (1 = unchanged):",
    ]
    lines.insert(1, f"# made by warpsweep {warpsweep_version()} (commit "
                    f"{git_commit() or 'unknown'}, simulator {simulator_digest()}), the fit "
                    f"from {calibration.starts} starts of --seed {calibration.seed}")
    if calibration.relative:
        lines.insert(2, "# relative fit: a free log offset per (graph, algorithm), then one "
                        "common scale for the level")
    if calibration.launches:
        lines.insert(2, f"# kernel parts fitted to the measured kernel times of "
                        f"{calibration.launches} launches (graphs weighted alike)")
    for part in THETA_NAMES:
        theta = calibration.thetas[part]
        if part in calibration.unconstrained:
            what = "unconstrained (its bound never binds in these rows): kept at 1"
        elif part in calibration.pinned:
            what = "measured: (total - kernel time) / launches, not fitted"
        elif part in calibration.upper_only:
            what = (f"not determined: its bound binds no row at the fit; a smaller scale "
                    f"fits as well, a larger one until it binds "
                    f"({100 * calibration.share[part]:.1f}% of time)")
        else:
            what = (f"x/ {se_text(calibration.log_se.get(part, float('nan')))} (1 s.e.), "
                    f"{100 * calibration.share[part]:.1f}% of time")
            if at_bound(theta):
                what += f", at the bound of the range {THETA_RANGE[0]:g}..{THETA_RANGE[1]:g}"
        lines.append(f"#   {part:<9} {theta:8.4f}  {what}")
    lines += [
        "# fields: lsu, memory (dram and l2 bandwidth), atomics, launch overhead and host round",
        "# trip scale exactly; latency (dram and l2 latency) and issue (instruction_cycles)",
        "# approximately: a warp's latency bound holds both its round trips and its",
        "# instructions (and, dynamic, its grabs' waits on the queue counter, which scale",
        "# with atomic_cycles), and each theta scales only one of them.",
        *(_comment(note) for note in notes),
    ]
    if preset is not None:
        lines.append(f"base = {_toml_value(base.name)}")
    lines.append(f"name = {_toml_value(device.name)}")
    reference = preset if preset is not None else Device(name=device.name)
    for f in dataclasses.fields(Device):
        if f.name == "name":
            continue
        value = getattr(device, f.name)
        mapped = any(f.name == n for fields in FIELD_MAP.values() for n, _ in fields)
        if preset is None or mapped or value != getattr(reference, f.name):
            lines.append(f"{f.name} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"
