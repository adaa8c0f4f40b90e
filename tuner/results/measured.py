"""Measured GPU times in a results directory, shown beside the simulated ones.

``tune --verify K`` writes each study's measured configurations to
``RESULTS/measured/<study key>.parquet`` (``tuner.measure.verify``), one file per study that a
re-verify replaces whole. They stay out of the trial files on purpose: a trial row is written
once and a resume refuses rows that disagree with it, so a measurement (which comes after the
search, may be redone on another GPU, or never happen) would otherwise have to rewrite trial
files. Readers join them instead: ``tuner.results.query.connect`` gives the ``trials`` view a
``measured_us`` column (null where the row's configuration was not measured correctly) and adds
a ``measured`` view of the measured rows with their study's graph, algorithm and device. The
files are small (K configurations and the references per study), so they are read here whole,
their page checksums verified, and handed to DuckDB as Arrow tables.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from tuner.results.location import Location
from tuner.results.schema import MEASURED

MEASURED_DIR = MEASURED
# The columns of a measured file as the view shows them (files written before a column was
# added read it as null; ``trials`` and ``labels`` then default to the row's own key).
COLUMNS = pa.schema([
    ("study_key", pa.string()), ("role", pa.string()), ("trial", pa.int64()),
    ("label", pa.string()), ("config", pa.string()), ("rank", pa.int64()),
    ("time_us", pa.float64()), ("measured_us", pa.float64()), ("kernel_us", pa.float64()),
    ("correct", pa.bool_()), ("note", pa.string()), ("gpu_name", pa.string()),
    ("winner", pa.bool_()), ("source", pa.int64()), ("variant", pa.string()),
    ("trials", pa.list_(pa.int64())), ("labels", pa.list_(pa.string())),
])
# The columns the ``trials`` view adds beside the simulated metrics.
MEASURED_COLUMNS = ("measured_us", "measured_kernel_us")
KEYS = pa.schema([("study_key", pa.string()), ("trial", pa.int64()), ("label", pa.string()),
                  ("measured_us", pa.float64()), ("measured_kernel_us", pa.float64())])


def measured_files(location: Location) -> list[str]:
    """The measured files of a results location (``measured/*.parquet``)."""
    return location.files(MEASURED_DIR, ".parquet")


# The columns every measured file has held since the first (others read as null where absent).
REQUIRED = ("study_key", "role", "config", "rank", "time_us", "measured_us", "correct")


def read_measured_rows(location: Location) -> pa.Table:
    """Every measured row of the location, in ``COLUMNS`` (missing columns null), each file
    read whole with its page checksums verified; a file that cannot be read, or whose rows
    are not what ``tune --verify`` writes (``measured_problem``), raises DamagedResults."""
    from tuner.results.damaged import DamagedResults  # (DuckDB's: not on a GPU machine without it)

    tables = []
    for path in measured_files(location):
        table, problem = read_measured_file(location, path)
        if problem is not None:
            raise DamagedResults(path, problem, location.text)
        tables.append(table)
    return pa.concat_tables(tables) if tables else COLUMNS.empty_table()


def read_measured_file(location: Location, path: str) -> tuple[pa.Table | None, str | None]:
    """One measured file in ``COLUMNS``, or why it is damaged: unreadable, a column of
    another type, or rows ``tune --verify`` cannot have written (``measured_problem``)."""
    fs = None if location.local else location.fs
    folder, name = path.rstrip("/").rsplit("/", 1)
    if folder != location.path(MEASURED_DIR).rstrip("/"):
        # a second file of a study (an earlier verification kept in a subfolder) would be
        # joined beside the current one: counts doubled, the faster copy taken (probe
        # MEASURED2)
        if location.kind(location.path(MEASURED_DIR, name)) != pafs.FileType.File:
            return None, (f"a measured file lies at {MEASURED_DIR}/<study key>.parquet, this "
                          f"one in a folder below it, and none lies at {MEASURED_DIR}/{name}: "
                          "move it there to read it (`warpsweep check --repair` does where "
                          f"its copies below {MEASURED_DIR}/ are alike), or out of "
                          f"{MEASURED_DIR}/ to leave it out")
        return None, (f"a measured file lies at {MEASURED_DIR}/<study key>.parquet, this one "
                      "in a folder below it: another copy of the measurements of study "
                      f"{name.removesuffix('.parquet')}, which a re-verify replaces whole")
    try:
        table = pq.ParquetFile(path, filesystem=fs, page_checksum_verification=True).read()
    except (OSError, pa.ArrowException, ValueError) as exc:
        return None, str(exc)
    missing = [name for name in REQUIRED if name not in table.column_names]
    if missing:
        return None, f"no column {', '.join(missing)} (a measured file has {', '.join(REQUIRED)})"
    columns = {}
    for field in COLUMNS:
        if field.name in table.column_names:
            try:
                columns[field.name] = table.column(field.name).cast(field.type)
            except (pa.ArrowException, ValueError) as exc:
                return None, f"column {field.name}: {exc}"
        else:
            columns[field.name] = pa.nulls(table.num_rows, field.type)
    table = pa.table(columns, schema=COLUMNS)
    stem = path.rstrip("/").rsplit("/", 1)[-1].removesuffix(".parquet")
    return table, measured_problem(table.to_pylist(), stem)


def measured_problem(rows: list[dict[str, Any]], study_key: str) -> str | None:
    """What in one study's measured rows ``tune --verify`` cannot have written (None:
    nothing): a row of another study or with no configuration, rank or role; a configuration
    measured twice; a measured time that is no positive number, or a kernel time beyond it;
    a time with no word on its answer's correctness, or a correct answer with no time; a
    winner flag on other than the fastest correct row. Readers would otherwise drop such a
    row, take the faster copy, or fit an impossible time without a word."""
    from simulator.errors import WarpsweepError
    from simulator.strategy import Strategy

    seen: dict[str, int] = {}
    for i, r in enumerate(rows):
        row = f"row {i} ({r['config']!r})"
        if r["study_key"] != study_key:
            return f"{row} is of study {r['study_key']!r}, not the file's {study_key!r}"
        if not r["config"] or r["rank"] is None or r["rank"] < 1 or r["role"] not in (
                "trial", "reference"):
            return (f"row {i}: rank {r['rank']!r}, role {r['role']!r}, config "
                    f"{(r['config'] or '')[:40]!r}: each row names its configuration, its "
                    "rank from 1 and its role")
        try:
            config = str(Strategy.parse(r["config"]))
        except WarpsweepError as exc:
            return f"{row}: {exc}"
        if config in seen:
            return (f"{row} and row {seen[config]} measure one configuration: one row a "
                    "configuration")
        seen[config] = i
        us, kernel, correct = r["measured_us"], r["kernel_us"], r["correct"]
        if us is not None and not (math.isfinite(us) and us > 0):
            return f"{row}: measured_us {us} (a time is a positive number)"
        if kernel is not None and not (math.isfinite(kernel) and 0 <= kernel
                                       <= (us if us is not None else math.inf)):
            return f"{row}: kernel_us {kernel} (a part of measured_us {us})"
        if (us is None) != (correct is None):
            return (f"{row}: measured_us {us} with correct {correct}: a measured row says "
                    "whether its answer was correct, an unmeasured one neither")
    flagged = [i for i, r in enumerate(rows) if r["winner"]]
    fastest = fastest_correct(rows)
    if any(r["winner"] is not None for r in rows) and flagged != fastest:
        return (f"the winner flag is on row(s) {flagged}, the fastest correct measurement is "
                f"row(s) {fastest}: a row edited after it was measured")
    return None


def fastest_correct(rows: list[dict[str, Any]]) -> list[int]:
    """The row the winner flag belongs on, as ``tune --verify`` sets it: the fastest correct
    measurement (ties: the better rank); none where nothing measured correct."""
    measured = [(r["measured_us"], r["rank"], i) for i, r in enumerate(rows)
                if r["correct"] and r["measured_us"] is not None]
    return [min(measured)[2]] if measured else []


def measured_keys(rows: pa.Table) -> pa.Table:
    """One row per (study, trial number or reference label) a correct measurement stands for:
    its trial numbers and reference labels (``trials``, ``labels``; the row's own in files
    written before they were recorded). Should two rows claim one key, the faster stands, so
    that joining it never doubles a trial row."""
    found: dict[tuple[str, int | None, str | None], tuple[float, float | None]] = {}
    for r in rows.to_pylist():
        us = r["measured_us"]
        if not r["correct"] or us is None or not math.isfinite(us) or us <= 0:
            continue
        for key in claimed_keys(r):
            if key not in found or us < found[key][0]:
                found[key] = (us, r["kernel_us"])
    return pa.Table.from_pylist(
        [{"study_key": k[0], "trial": k[1], "label": k[2], "measured_us": v[0],
          "measured_kernel_us": v[1]} for k, v in sorted(found.items(), key=_key_order)],
        schema=KEYS)


def claimed_keys(r: dict[str, Any]) -> list[tuple[str, int | None, str | None]]:
    """The (study, trial number, reference label) keys a measured row stands for."""
    trials = r["trials"] if r["trials"] is not None else (
        [r["trial"]] if r["role"] == "trial" and r["trial"] is not None else [])
    labels = r["labels"] if r["labels"] is not None else (
        [r["label"]] if r["role"] == "reference" and r["label"] else [])
    return [(r["study_key"], t, None) for t in trials] + [
        (r["study_key"], None, label) for label in labels]


def claims_problem(rows: list[dict[str, Any]],
                   simulated: dict[tuple[str, int | None, str | None], float]) -> str | None:
    """A measured row standing for a trial or reference whose row was simulated at another
    time than the measured row records (``simulated``: each trial row's ``time_us`` by
    (study, trial, label)): its measurement would be joined to another configuration (one
    configuration of a study has one simulated time). None where every claim holds."""
    for i, r in enumerate(rows):
        for key in claimed_keys(r):
            held = simulated.get(key)
            if held is not None and r["time_us"] is not None and held != r["time_us"]:
                who = f"trial {key[1]}" if key[2] is None else f"reference {key[2]!r}"
                return (f"row {i} (simulated {r['time_us']:g} us) stands for {who}, simulated "
                        f"at {held:g} us: another configuration's (a row edited or copied)")
    return None


def simulated_times(rows: Any) -> dict[tuple[str, int | None, str | None], float]:
    """Each trial row's ``time_us`` by (study, trial number, reference label), from rows of
    ``study_key``, ``trial``, ``label``, ``time_us``."""
    return {(k, t, label): us for k, t, label, us in rows if us is not None}


def _key_order(item: tuple) -> tuple:
    (study, trial, label), _ = item
    return (study, trial is None, trial or 0, label or "")


def add_views(con: Any, location: Location, trials_source: str) -> str:
    """Register the measured rows and the ``measured`` view on ``con``; the SQL the
    ``trials`` view selects from ``trials_source`` (its rows with ``measured_us`` and
    ``measured_kernel_us`` beside the simulated metrics)."""
    rows = read_measured_rows(location)
    con.register("_measured_rows", rows)
    studies = (f"SELECT study_key, any_value(algorithm) AS algorithm, any_value(device) AS "
               f"device, any_value(graph_id) AS graph_id, any_value(graph_spec) AS graph_spec "
               f"FROM {trials_source} GROUP BY study_key") if rows.num_rows else (
        "SELECT NULL::VARCHAR AS study_key, NULL::VARCHAR AS algorithm, NULL::VARCHAR AS "
        "device, NULL::VARCHAR AS graph_id, NULL::VARCHAR AS graph_spec WHERE false")
    con.execute(f"CREATE VIEW {MEASURED_DIR} AS SELECT s.algorithm, s.device, s.graph_id, "
                f"s.graph_spec, m.* FROM _measured_rows m LEFT JOIN ({studies}) s "
                "USING (study_key)")
    if not rows.num_rows:
        return (f"SELECT *, CAST(NULL AS DOUBLE) AS measured_us, CAST(NULL AS DOUBLE) AS "
                f"measured_kernel_us FROM {trials_source}")
    from tuner.results.damaged import DamagedResults

    simulated = simulated_times(con.execute(
        f"SELECT study_key, trial, label, time_us FROM {trials_source} WHERE study_key IN "
        "(SELECT DISTINCT study_key FROM _measured_rows)").fetchall())
    by_study: dict[str, list[dict[str, Any]]] = {}
    for r in rows.to_pylist():
        by_study.setdefault(r["study_key"], []).append(r)
    for key, study_rows in by_study.items():  # (a file's rows are its study's: its name)
        problem = claims_problem(study_rows, simulated)
        if problem is not None:
            raise DamagedResults(location.path(MEASURED_DIR, f"{key}.parquet"), problem,
                                 location.text)
    con.register("_measured_keys", measured_keys(rows))
    return (f"SELECT t.*, k.measured_us, k.measured_kernel_us FROM {trials_source} t "
            "LEFT JOIN _measured_keys k ON k.study_key = t.study_key "
            "AND k.trial IS NOT DISTINCT FROM t.trial AND k.label IS NOT DISTINCT FROM t.label")


def measured_on(device: str, gpu_name: str | None) -> bool | None:
    """Whether measurements on the GPU named ``gpu_name`` (as CuPy names it: ``NVIDIA H100
    80GB HBM3``) are of the device ``device``: a preset's GPU by its name in the GPU's
    (``h100`` and ``h100-datasheet`` in ``NVIDIA H100 ...``); None where that cannot be
    told (a device file's own name, a GPU not named)."""
    from simulator.device import DEVICES
    from simulator.device import datasheet_of
    from simulator.device import gpu_name as calibrated_name

    if device not in DEVICES or not gpu_name:
        return None
    token = re.sub(r"[^a-z0-9]", "", calibrated_name(datasheet_of(device)).lower())
    return token in re.sub(r"[^a-z0-9]", "", gpu_name.lower())


@dataclass(frozen=True)
class MeasuredWinner:
    """A study's fastest correctly measured configuration, and how many were measured."""

    study_key: str
    config: str
    measured_us: float
    time_us: float  # its simulated time
    rank: int  # its rank in the simulated search (1: the simulator's pick)
    role: str
    label: str | None
    measured: int  # configurations measured correctly
    gpu_name: str | None
    pick_us: float | None = None  # the measured time of the simulator's pick (rank 1), if
    # measured correctly


def winners(con: Any) -> dict[str, MeasuredWinner]:
    """Per study with a correct measurement, its measured winner (ties: the better simulated
    rank)."""
    rows = con.execute("""
        SELECT study_key, arg_min(struct_pack(config := config, measured_us := measured_us,
                                              time_us := time_us, rank := rank, role := role,
                                              label := label, gpu_name := gpu_name),
                                  (measured_us, rank)) AS w, count(*) AS n,
               min(measured_us) FILTER (WHERE rank = 1) AS pick_us
        FROM measured WHERE correct AND measured_us > 0 AND isfinite(measured_us)
        GROUP BY study_key""").fetchall()
    return {key: MeasuredWinner(key, w["config"], w["measured_us"], w["time_us"], w["rank"],
                                w["role"], w["label"], n, w["gpu_name"], pick)
            for key, w, n, pick in rows}
