"""`warpsweep tune --verify K`: after the simulated search, the top K configurations of each
study and its references measured on the GPU (`warpsweep measure`'s kernels), the measured
winner named. The measured rows go to ``RESULTS/measured/<study key>.parquet`` beside the
trials (``time_us`` simulated, ``measured_us`` on the GPU); without a GPU, one line says so
and the study stands as simulated. Importable without CuPy."""

from __future__ import annotations

import math
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from simulator.errors import WarpsweepError
from simulator.strategy import Strategy
from tuner.measure.measure import NoGpu
from tuner.measure.plan import plan_for
from tuner.results.location import Location
from tuner.results.measured import COLUMNS
from tuner.results.measured import MEASURED_DIR


@dataclass
class VerifiedRow:
    """One configuration of a study, simulated and (where it could be) measured."""

    study_key: str
    role: str  # trial | reference
    trial: int | None
    label: str | None
    config: str
    rank: int  # its rank in the simulated search (1: the pick)
    time_us: float  # simulated (the study's mean over its sources)
    measured_us: float | None = None
    kernel_us: float | None = None
    correct: bool | None = None
    note: str = ""  # why it was not measured, or how its answer was wrong
    gpu_name: str | None = None
    source: int | None = None  # the source vertex measured (BFS, SSSP)
    variant: str | None = None  # the kernels' variant measured
    # every trial number and reference label of the study with this configuration: the
    # trials view shows the measurement on each of their rows (tuner.results.measured)
    trials: list[int] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)


@dataclass
class Verification:
    """A study's measured candidates and what they say about its pick."""

    study_key: str
    graph: str
    algorithm: str
    rows: list[VerifiedRow]
    note: str = ""  # where fewer than K configurations were there to measure

    def measured(self) -> list[VerifiedRow]:
        """The rows measured with a correct answer."""
        return [r for r in self.rows if r.correct and r.measured_us is not None]

    def wrong(self) -> list[VerifiedRow]:
        """The rows whose kernels answered otherwise than the functional run."""
        return [r for r in self.rows if r.correct is False]

    def winner(self) -> VerifiedRow | None:
        """The fastest measured configuration (ties: the better simulated rank)."""
        rows = self.measured()
        return min(rows, key=lambda r: (r.measured_us, r.rank)) if rows else None

    def pick_regret(self) -> float | None:
        """The simulated pick's measured time over the measured winner's (None: the pick was
        not measured)."""
        best = self.winner()
        pick = next((r for r in self.measured() if r.rank == 1), None)
        if best is None or pick is None:
            return None
        return pick.measured_us / best.measured_us


MeasureFn = Callable[[str, str, str, int | None], dict[str, Any]]


def kernel_family(config: str | Strategy) -> tuple:
    """The kernel structure a configuration runs: its driven form, mapping, chunk walk,
    distribution, deferral, donation and worklist push. Configurations of one family share
    the model's errors about that structure; W, thresholds and switch points only scale
    them."""
    s = Strategy.parse(config) if isinstance(config, str) else config
    return (s.driven, s.mapping, (s.chunk or 1) > 1, s.distribution,
            s.defer_threshold is not None, s.donate_threshold is not None,
            s.push if s.driven != "topology" else None)


def spread_top_k(configs: Sequence[str], k: int) -> list[int]:
    """The places, among ``configs`` (distinct, in simulated rank order), of the ``k`` to
    measure: in rank order, each whose kernel family holds fewer than ceil(k / 2) of those
    taken; then, if fewer than ``k``, the skipped ones in rank order. The model's bias is
    shared within a family, so k of one family would hedge it little."""
    cap = -(-k // 2)
    taken: list[int] = []
    skipped: list[int] = []
    held: dict[tuple, int] = {}
    for i, config in enumerate(configs):
        if len(taken) == k:
            break
        family = kernel_family(config)
        if held.get(family, 0) < cap:
            held[family] = held.get(family, 0) + 1
            taken.append(i)
        else:
            skipped.append(i)
    return sorted(taken + skipped[:k - len(taken)])


def candidates(summary, k: int) -> list[VerifiedRow]:
    """The study's ``k`` configurations to measure (``spread_top_k`` of its distinct
    complete ones by simulated rank) and every reference (ranked where the search ranked
    it), each once."""
    rows: dict[str, VerifiedRow] = {}
    ranked = list(summary.ranked or summary.best)
    ranks: dict[str, int] = {}  # by configuration: a reference alike to a trial is ranked
    for i, r in enumerate(ranked, 1):
        ranks.setdefault(_config(r), i)
    firsts = {}  # each complete configuration's best-ranked record
    for r in ranked:
        if r.state == "complete" and r.values:
            firsts.setdefault(_config(r), r)
    distinct = list(firsts.values())
    top = [distinct[i] for i in spread_top_k(list(firsts), k)]
    chosen = top + [r for r in summary.references.values() if r not in top]
    for record in chosen:
        if record.state != "complete" or not record.values:
            continue
        config = _config(record)
        if config in rows:
            continue
        rows[config] = VerifiedRow(
            study_key=summary.key, role=record.role, trial=record.trial, label=record.label,
            config=config, rank=ranks.get(config, len(ranked) + 1),
            time_us=float((record.metrics or {}).get("time_us", record.values[0])))
    everyone = ranked + [r for r in summary.references.values() if r not in ranked]
    for record in everyone:  # each row of the study that a measurement stands for
        row = rows.get(_config(record)) if record.state != "failed" and record.params else None
        if row is None:
            continue
        if record.role == "trial" and record.trial is not None and record.trial not in row.trials:
            row.trials.append(record.trial)
        elif record.role == "reference" and record.label and record.label not in row.labels:
            row.labels.append(record.label)
    return list(rows.values())


def _config(record) -> str:
    """A record's configuration as Strategy writes it."""
    return str(Strategy.from_params({n: v for n, v in record.params.items() if v is not None}))


def verify_study(summary, k: int, measure: MeasureFn) -> Verification:
    """Measure a study's candidates with ``measure(graph_spec, algorithm, config, source)``
    (a dict: measured_us, kernel_us, correct, note, gpu_name); a configuration the GPU
    module cannot run is kept with its one-line reason."""
    spec = summary.spec
    rows = candidates(summary, k)
    ranked = len(summary.ranked or summary.best)
    note = ""
    if ranked < k:
        note = (f"the study ranks {ranked} configuration{'s' if ranked != 1 else ''}"
                + (" (its Pareto front)" if len(spec.objective.metrics) > 1 else "")
                + f", fewer than the {k} asked: all of them measured")
    sources = next((r.sources for r in summary.best if r.sources), [])
    source = int(sources[0]) if sources else None
    for row in rows:
        try:
            row.variant = plan_for(spec.algorithm, row.config).variant
        except WarpsweepError as exc:
            row.note = str(exc)
            continue
        row.source = source if spec.algorithm in ("bfs", "sssp") else None
        try:
            measured = measure(spec.graph, spec.algorithm, row.config, source)
        except WarpsweepError as exc:  # (a worklist outgrowing its queue): this row alone
            if isinstance(exc, NoGpu):
                raise
            row.note = str(exc)
            continue
        for name, value in measured.items():
            setattr(row, name, value)
    return Verification(summary.key, spec.graph, spec.algorithm, rows, note)


def gpu_measure(device_index: int = 0, reps: int = 3) -> MeasureFn:
    """``measure`` on CUDA device ``device_index``: the graph loaded and uploaded once."""
    from simulator.load import load_graph
    from tuner.measure.measure import Session
    from tuner.measure.measure import prepare

    session = Session(device_index)
    prepared: dict[tuple[str, str, int | None], object] = {}

    def measure(graph_spec: str, algorithm: str, config: str, source: int | None) -> dict:
        key = (graph_spec, algorithm, source if algorithm in ("bfs", "sssp") else None)
        if key not in prepared:
            prepared.clear()
            prepared[key] = prepare(load_graph(graph_spec), graph_spec, algorithm, key[2])
        plan = plan_for(algorithm, config)
        r = session.measure(prepared[key], algorithm, plan, config, reps)
        return {"measured_us": r.time_us, "kernel_us": r.kernel_us, "correct": r.correct,
                "note": "" if r.correct else r.check, "gpu_name": r.gpu_name}

    return measure


def verify_tune(summaries, k: int, results: str | Path, device_index: int = 0,
                reps: int = 3, measure: MeasureFn | None = None
                ) -> tuple[list[Verification], str | None]:
    """Every study's verification, written beside its trials; (``[]``, one line) without a
    GPU, the studies left as simulated."""
    if measure is None:
        from tuner.measure.measure import gpu_unavailable

        reason = gpu_unavailable(device_index)
        if reason is not None:
            return [], (f"--verify {k}: not measured, no GPU here ({reason}); the study stands "
                        "as simulated")
        measure = gpu_measure(device_index, reps)
    out = [verify_study(s, k, measure) for s in summaries]
    for v in out:
        write_verification(v, results)
    return out, None


SCHEMA = COLUMNS  # one declaration, beside the reader (tuner.results.measured)


def write_verification(v: Verification, results: str | Path | Location) -> Path | str:
    """The study's measured rows as ``RESULTS/measured/<study key>.parquet``, the measured
    winner flagged: written whole (temp file and rename, or one PUT) with page checksums,
    replacing an earlier verification of the study, so a re-verify reconciles (the latest
    measurement stands) and never adds a second set of rows."""
    location = Location.of(results)
    path = location.path(MEASURED_DIR, f"{v.study_key}.parquet")
    winner = v.winner()
    rows = [{**asdict(r), "winner": r is winner} for r in v.rows]
    buffer = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist(rows, SCHEMA), buffer, write_page_checksum=True)
    location.write_bytes(path, buffer.getvalue().to_pybytes())
    return Path(path) if location.local else path


def read_verification(results: str | Path, study_key: str) -> list[dict]:
    """The measured rows of a study (empty if it was never verified)."""
    path = Path(results) / MEASURED_DIR / f"{study_key}.parquet"
    return pq.read_table(path).to_pylist() if path.is_file() else []


def verification_table(v: Verification) -> str:
    """Simulated rank and time beside the measured, the measured winner and the pick's
    regret against it."""
    lines = [f"\nmeasured on the GPU ({v.algorithm} on {v.graph}, study {v.study_key}):",
             *([f"  ({v.note})"] if v.note else []),
             f"  {'rank':>4} {'time_us':>12} {'measured_us':>12}  configuration"]
    winner = v.winner()
    for r in sorted(v.rows, key=lambda r: r.rank):
        got = f"{r.measured_us:12.1f}" if r.measured_us is not None and r.correct else (
            f"{'wrong':>12}" if r.correct is False else f"{'-':>12}")
        origin = f"  [reference: {r.label}]" if r.role == "reference" else ""
        mark = "  <- measured winner" if r is winner else ""
        note = f"  ({r.note})" if r.note else ""
        lines.append(f"  {r.rank:>4} {r.time_us:12.1f} {got}  {r.config}{origin}{mark}{note}")
    regret = v.pick_regret()
    if winner is not None:
        lines.append(f"  measured winner: {winner.config}"
                     + (f"; the simulated pick's regret {regret:.3f}"
                        if regret is not None and not math.isnan(regret) else ""))
    if v.wrong():
        lines.append(f"  {wrong_line(v)}")
    return "\n".join(lines)


def wrong_line(v: Verification) -> str:
    """What the configurations that answered wrong on the GPU mean."""
    n = len(v.wrong())
    return (f"{n} configuration{'s' if n != 1 else ''} answered otherwise than the "
            "functional run on the GPU (a kernel's bug, not a time: `warpsweep measure` of one "
            "shows how)" + ("; none measured correctly, no winner" if not v.measured() else ""))
