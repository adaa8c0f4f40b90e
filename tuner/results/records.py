"""One evaluation's record, checked on construction, and its Parquet row / journal JSON forms."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field
from dataclasses import fields
from datetime import UTC
from datetime import datetime
from typing import Any

from tuner.env import git_commit
from tuner.env import warpsweep_version
from tuner.results.schema import ROLES
from tuner.results.schema import SCHEMA_VERSION
from tuner.results.schema import STATES
from tuner.results.schema import metric_column
from tuner.results.schema import param_column

# TrialRecord's fields that hold a dict or a list (of plain values)
_CONTAINERS = ("params", "values", "values_std", "metrics", "sources")


@dataclass
class TrialRecord:
    """An evaluation (or an answer from the study) of one configuration in one study.

    Invariants: ``complete`` has metrics and finite objective values and no error; ``failed``
    has error text and no metrics or values; ``duplicate`` names the trial it reused;
    a ``trial`` has a trial number, a ``reference`` a label.
    """

    study_key: str
    role: str
    state: str
    graph_id: str
    graph_spec: str
    algorithm: str
    device: str
    space: str
    space_digest: str
    sampler: str
    objective: str
    params: dict[str, Any]
    seed: int
    trial: int | None = None
    label: str | None = None
    values: list[float] | None = None
    values_std: list[float] | None = None
    metrics: dict[str, float] | None = None
    sources: list[int] = field(default_factory=list)
    n_sources: int = 0
    time_us_std: float | None = None
    time_us_min: float | None = None
    time_us_max: float | None = None
    error: str | None = None
    duplicate_of: int | None = None
    wall_s: float = 0.0
    worker: str | None = None
    node_id: str | None = None
    device_digest: str | None = None
    model_digest: str | None = None  # the cost model's (None in records older than it)
    timestamp: datetime = field(default_factory=lambda: datetime.now(UTC))
    # proposals of configurations already tried that the sampler made for this trial before
    # it proposed this untried one instead (None in records written before it counted them,
    # when each repeat got a `duplicate` record of its own)
    repeats: int | None = None
    # the code that made the record (None in records older than them: the writer's then):
    # a row rebuilt from the journal by a later run or `check --repair` keeps its own
    warpsweep_version: str | None = field(default_factory=warpsweep_version)
    git_commit: str | None = field(default_factory=git_commit)

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"`role in {ROLES}` must hold, but got role={self.role!r}")
        if self.state not in STATES:
            raise ValueError(f"`state in {STATES}` must hold, but got state={self.state!r}")
        if self.role == "trial" and self.trial is None:
            raise ValueError("a trial record needs its trial number")
        if self.role == "reference" and not self.label:
            raise ValueError("a reference record needs a label")
        if self.state == "complete":
            if not self.metrics:
                raise ValueError(f"a complete record needs metrics (trial={self.trial})")
            if self.error is not None:
                raise ValueError(f"a complete record has no error, got {self.error!r}")
            if self.values is None or not all(math.isfinite(v) for v in self.values):
                raise ValueError(f"a complete record needs finite values, got {self.values!r}")
        elif self.state == "failed":
            if not self.error:
                raise ValueError(f"a failed record needs its error text (trial={self.trial})")
            if self.metrics or self.values:
                raise ValueError("a failed record carries no metrics or values")
        elif self.duplicate_of is None:
            raise ValueError("a duplicate record names the trial it reused (duplicate_of)")

    def _fields(self) -> dict[str, Any]:
        """``dataclasses.asdict(self)``: every field, its dicts and lists copied (they hold
        plain values only), at a tenth of asdict's cost, which recurses into every value
        (two calls a trial on the driver; issue 44)."""
        d = {name: getattr(self, name) for name in _FIELD_NAMES}
        for name in _CONTAINERS:
            value = d[name]
            if value is not None:
                d[name] = value.copy()
        return d

    def to_json(self) -> dict[str, Any]:
        """JSON-able dict (kept in the Optuna journal so a lost row can be rewritten)."""
        d = self._fields()
        d["timestamp"] = self.timestamp.isoformat()
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TrialRecord:
        """Inverse of :meth:`to_json`."""
        d = dict(d)
        d["timestamp"] = datetime.fromisoformat(d["timestamp"])
        d.setdefault("warpsweep_version", None)  # written before the record kept them
        d.setdefault("git_commit", None)
        return cls(**d)

    def to_row(self) -> dict[str, Any]:
        """The flat Parquet row: declared columns, ``param_<knob>`` and one column per metric."""
        row = self._fields()
        params = row.pop("params")
        metrics = row.pop("metrics") or {}
        row["timestamp"] = self.timestamp
        row["schema_version"] = SCHEMA_VERSION
        for knob, value in params.items():
            row[param_column(knob)] = value
        for name, value in metrics.items():
            row[metric_column(name)] = value
        return row


_FIELD_NAMES = tuple(f.name for f in fields(TrialRecord))


def told_other_values(trial: Any, record: TrialRecord) -> bool:
    """Whether a finished Optuna ``trial`` holds other values than its ``record`` (what was
    told for it): the sampler, ``optuna.load_study`` and the dashboard read the former, the
    rows and ``check`` the latter, so an edited journal would mislead only those."""
    if not trial.state.is_finished():
        return False
    if record.values is None:
        return trial.values is not None
    return trial.values is None or [float(v) for v in trial.values] != [
        float(v) for v in record.values]


def told_otherwise(trials: dict[int, Any]) -> list[int]:
    """The numbers of finished Optuna ``trials`` (number -> FrozenTrial) whose values are not
    what their ``record`` attribute says was told for them (``told_other_values``)."""
    return [n for n, t in trials.items() if "record" in t.user_attrs
            and told_other_values(t, TrialRecord.from_json(t.user_attrs["record"]))]


def check_journal_records(trials: Iterable[Any], attrs: dict[str, Any], key: str) -> None:
    """ValueError naming the first record a study journal holds (its Optuna ``trials``'
    ``record`` attributes, its ``ref:`` study attributes) that is no record of the study ``key``:
    one that does not parse (a failed record still carrying metrics), another study's copied
    in, or one naming another trial than the one it is attached to (an edit: review CR31,
    CR32)."""
    held = [(f"trial {t.number}", t.number, t.user_attrs["record"]) for t in trials
            if "record" in t.user_attrs]
    held += [(f"reference {name[4:]!r}", None, value) for name, value in attrs.items()
             if name.startswith("ref:")]
    for name, number, value in held:
        try:
            record = TrialRecord.from_json(value)
        except Exception as exc:  # noqa: BLE001 - whatever a damaged record raises
            raise ValueError(f"{name}'s record is damaged ({type(exc).__name__}: {exc})"
                             ) from None
        if record.study_key != key:
            raise ValueError(f"{name}'s record is of study {record.study_key}")
        if number is not None and record.trial != number:
            raise ValueError(f"{name}'s record names trial {record.trial}")
