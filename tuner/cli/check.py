"""The ``check`` verb: verify every file of a results directory, and with ``--repair`` set right
what can be set right.

Checked: the manifest; every Parquet file read whole (footer, every page, page checksums) and
its columns' types; one row per (study, role, trial-or-label) key and per graph id; no
configuration evaluated twice by a study that counts its repeats (the `repeats` column: a
configuration the sampler proposes again is counted there, not run again; rows written before
it have a `duplicate` row per repeat instead, which is fine), and no negative count; each study
journal readable and agreeing with the study's rows (the rows are the record). ``--repair``
moves unreadable files and journals to ``RESULTS/quarantine/``, keeps the first of rows that
share a key (a conflicting later one is set aside in ``quarantine/``), writes the rows of trials
a journal recorded but whose rows were lost, and sets aside a journal that disagrees with the
rows: the study's next run rebuilds its journal from the rows.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import optuna
import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from optuna.storages import JournalStorage
from optuna.storages.journal import BaseJournalBackend

from simulator.errors import ConfigError
from simulator.errors import WarpsweepError
from tuner.cli.args import location_arg
from tuner.results.cut_short import OTHER_RUNS
from tuner.results.cut_short import cut_short_repair
from tuner.results.cut_short import mark_other_runs
from tuner.results.cut_short import marked_other_runs
from tuner.results.damaged import body_problem
from tuner.results.journal import journal_line_problem
from tuner.results.journal import lost_for_good_line
from tuner.results.journal import recorded_records
from tuner.results.journal import recorded_results
from tuner.results.journal import records_a_result
from tuner.results.journal import saved_mark_path
from tuner.results.journal import saved_rows
from tuner.results.location import Location
from tuner.results.measured import MEASURED_DIR
from tuner.results.measured import claimed_keys
from tuner.results.measured import claims_problem
from tuner.results.measured import fastest_correct
from tuner.results.measured import measured_files
from tuner.results.measured import read_measured_file
from tuner.results.measured import simulated_times
from tuner.results.records import TrialRecord
from tuner.results.records import check_journal_records
from tuner.results.records import told_otherwise
from tuner.results.schema import GRAPHS
from tuner.results.schema import PARAM_PREFIX
from tuner.results.schema import QUARANTINE
from tuner.results.schema import STUDIES
from tuner.results.schema import TRIALS
from tuner.results.schema import partition_problem
from tuner.results.schema import schema_problem
from tuner.results.schema import type_conflict
from tuner.results.schema import value_problem
from tuner.results.store import RESULTS_FILE_PREFIX
from tuner.results.store import ResultStore
from tuner.results.store import check_manifest
from tuner.results.store import check_readable
from tuner.results.store import record_fingerprint
from tuner.results.store import row_fingerprint
from tuner.results.store import stopped_trials_run_again

EXAMPLES = """examples:
  warpsweep check warpsweep-results
  warpsweep check --results quick-results     # as the other verbs name it
  warpsweep check s3://bucket/sweeps --repair

Exit status 0 when every file checks out (or, with --repair, was set right), 1 otherwise.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``check`` to the ``warpsweep`` parser."""
    from tuner.api import DEFAULT_RESULTS

    p = subparsers.add_parser(
        "check", help="verify a results directory (and repair it)",
        description="Verify every file of a results directory: each Parquet file read whole "
                    "with its schema, one row per key, each study journal agreeing with the "
                    "rows. One line per problem, naming the file.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("results", metavar="RESULTS", type=location_arg, nargs="?",
                   help=f"results directory or URI (default {DEFAULT_RESULTS}, or --results)")
    p.add_argument("--results", dest="results_option", metavar="DIR", type=location_arg,
                   help="the same, named as the other verbs name it")
    p.add_argument("--repair", action="store_true",
                   help="move unreadable files to RESULTS/quarantine/, drop doubled rows, "
                        "set aside journals behind the rows (rebuilt on the next run)")
    p.set_defaults(run=run_check)


def run_check(args: argparse.Namespace) -> int:
    """``warpsweep check``: print the problems (and repairs); 1 if any problem is left."""
    from tuner.api import DEFAULT_RESULTS

    if args.results and args.results_option and not _one_place(args.results,
                                                               args.results_option):
        raise ConfigError(f"two results directories given ({args.results!r} and --results "
                          f"{args.results_option!r}); check one at a time")
    args.results = args.results or args.results_option or DEFAULT_RESULTS
    report = check(args.results, repair=args.repair)
    for line in report.repaired:
        print(f"repaired: {line}")
    if report.repaired:  # judged on what the directory holds now (review CR30: a problem the
        # repair left, worded otherwise by the plain check, had become a note, exit 0)
        after = check(args.results)
        report.counts = after.counts
        if not after.problems:  # what the repair's pass found, it set right
            report.problems = []
        else:  # its own lines say why; what the plain check finds besides, after them
            report.problems += [f"after the repair: {p}" for p in after.problems
                                if p not in report.problems]
    for line in report.problems:
        print(line)
    if report.problems:
        return 1
    print(f"{args.results}: {report.files} file{'' if report.files == 1 else 's'} checked, "
          + ("all repaired" if report.repaired else "no problem")
          + (f"; {report.counts}" if report.counts else ""))
    return 0


def _one_place(first: str, second: str) -> bool:
    """Whether two spellings name one results location (``..``, links and trailing slashes
    aside: review CR30)."""
    a, b = Location.of(first), Location.of(second)
    if a.local and b.local:
        return Path(a.root).resolve() == Path(b.root).resolve()
    return (a.local, a.root.rstrip("/")) == (b.local, b.root.rstrip("/"))


@dataclass
class Report:
    """What ``check`` found: problems left, repairs made, files checked."""

    problems: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
    files: int = 0
    counts: str = ""  # configurations, evaluations and repeats the rows hold


@dataclass
class _Row:
    file: str
    index: int
    fp: Any
    timestamp: Any
    recorded: Any = None  # the fingerprint a journal's record of the key compares with
    model: Any = None  # the cost model the row was computed under (its model_digest)


def check(results: str, repair: bool = False) -> Report:
    """Verify (and with ``repair`` set right) a results directory."""
    loc = Location.of(results)
    check_readable(loc)
    if repair:  # rows a repair writes back are this schema's: refused before anything moves
        try:  # (an older directory's rows had been set aside, then their records refused)
            check_manifest(loc, create=False, writing=True)
        except ConfigError as exc:
            held = str(exc).split(", whose rows differ")[0]
            raise ConfigError(f"--repair: {held}, whose rows differ from those a repair "
                              "writes back: `warpsweep check` without --repair reads it; "
                              "repair it with the warpsweep that wrote it") from None
    report = Report()
    tables: dict[str, pa.Table] = {}
    for table in (TRIALS, GRAPHS):
        kept = []
        for f in loc.files(table, ".parquet"):
            report.files += 1
            if not f.rsplit("/", 1)[-1].startswith(RESULTS_FILE_PREFIX):
                # the readers and tune count part-*.parquet only: its rows count nowhere, and
                # a repair keeping its copy of a row over a counted one would lose that row
                _damaged(loc, f, f"not a results file: readers count "
                         f"{RESULTS_FILE_PREFIX}*.parquet only, so its rows count nowhere "
                         f"(name it {RESULTS_FILE_PREFIX}<anything>.parquet to count them, "
                         "once `check` has compared them with the rest)", report, repair)
                continue
            problem = body_problem(f, loc.fs) or _schema_problem(loc, table, f)
            if problem is None:
                read = pq.read_table(f, filesystem=loc.fs)
                problem = value_problem(read) if table == TRIALS else None
            if problem is None:
                tables[f] = read
                kept.append(f)
                continue
            _damaged(loc, f, problem, report, repair)
        # each file passed alone; one that types a column apart from the rest is not read
        while (conflict := type_conflict([tables[f].schema for f in kept])) is not None:
            f = kept.pop(conflict[0])
            del tables[f]
            _damaged(loc, f, conflict[1], report, repair)
    simulated = None
    measured = measured_files(loc)
    for f in measured:  # tune --verify's measurements (tuner.results.measured)
        report.files += 1
        contested = False
        if repair:
            f, contested = _measured_into_place(loc, f, measured, report)
        problem = body_problem(f, loc.fs)
        if problem is None:
            read, problem = read_measured_file(loc, f)
        if problem is None:  # and what it stands for is what its rows were simulated as
            if simulated is None:
                simulated = simulated_times(
                    row for path, t in tables.items()
                    if path.startswith(loc.path(TRIALS) + "/") for row in zip(
                        *(t.column(c).to_pylist() for c in ("study_key", "trial", "label",
                                                            "time_us")), strict=True))
                with_rows = {key[0] for key in simulated}
            problem = claims_problem(read.to_pylist(), simulated)
            study = f.rsplit("/", 1)[-1].removesuffix(".parquet")
            if (problem is None and study not in with_rows
                    and not _journal_records_results(loc, study)):
                # a study started over keeps no trial row; its measurements stand for
                # nothing the readers can join (probe MEASURED2: calibrate refused the whole
                # directory naming no file, the others skipped it, check was silent)
                # (one whose journal records results gets its rows back from it: the
                # journal's check says so, its repair writes them; review CR28)
                problem = ("its study has no trial rows nor a journal recording results "
                           "(started over, or its files set aside): these measurements stand "
                           "for no row")
            elif problem is None:
                problem = _claims_of_lost_results(loc, f, read.to_pylist(), simulated,
                                                  study, report, repair)
        if problem is not None and repair and not contested:
            report.repaired.append(f"{f}: {problem}; moved to {_quarantine(loc, f)}")
        elif problem is not None:
            report.problems.append(f"{f}: {problem}" + (
                "; its copies below measured/ differ and none lies in its place: move the "
                "one to keep there (--repair cannot choose)" if contested else ""))
    marked = marked_other_runs(loc)  # what a repair cut short had found (before this one's)
    # study -> files of another run; files of two runs' rows of a key the journal lacks
    other_runs, unsettled = _check_keys(loc, tables, report, repair)
    for key, files in marked.items():
        other_runs.setdefault(key, set()).update(files)
    _check_study_graphs(loc, tables, report)
    _check_partitions(loc, tables, report)
    _check_reference_rows(loc, tables, report)
    journal_models = _check_journals(loc, tables, report, repair, other_runs, unsettled)
    if repair and loc.kind(loc.path(OTHER_RUNS)) == pafs.FileType.File:
        loc.fs.delete_file(loc.path(OTHER_RUNS))  # the journals set right by them
    elif not repair:
        report.problems += [line for key in sorted(marked_other_runs(loc))
                            if (line := cut_short_repair(loc, key))]
    _check_repeats(loc, tables, report)  # after the journals' repair: what it left
    _check_study_models(loc, tables, report, journal_models)
    _check_device_meanings(loc, tables, report)
    _check_dangling_journals(loc, report)
    _check_graph_rows(loc, tables, report, repair)
    return report


def _claims_of_lost_results(loc: Location, path: str, rows: list[dict[str, Any]],
                            simulated: dict[tuple, float], study: str, report: Report,
                            repair: bool) -> str | None:
    """Measured rows standing for trials or references that neither the study's rows nor
    its journal hold (their rows lost): the next run numbers a new trial so, and the
    measurement had been joined to it, then refused as another configuration's, the whole
    directory with it (review CR29). With ``repair`` those rows are set aside; else the
    problem."""
    recorded: set[tuple[str, Any]] = set()
    journal = loc.journals().get(study)
    if journal is not None:
        try:
            data, cut = _journal_bytes(loc, journal)
            recorded = set(recorded_results(data[:cut].decode(errors="replace")))
        except OSError:
            pass
    lost = [i for i, r in enumerate(rows)
            if any(key not in simulated and (("trial", key[1]) if key[2] is None
                                             else ("reference", key[2])) not in recorded
                   for key in claimed_keys(r))]
    if not lost:
        return None
    what = (f"row(s) {', '.join(map(str, lost[:5]))}{', ...' if len(lost) > 5 else ''} stand "
            "for results the study holds no more (no row, no journal record): the next run "
            "would number a new trial so")
    if not repair:
        return f"{what}; --repair sets those rows aside"
    table = pq.read_table(path, filesystem=loc.fs)
    keep = pa.array([i not in lost for i in range(table.num_rows)])
    buf = pa.BufferOutputStream()
    pq.write_table(table.filter(pa.compute.invert(keep)), buf, write_page_checksum=True)
    aside = loc.path(QUARANTINE, f"{path[len(loc.root) + 1:]}.lost-{time.time_ns()}.parquet")
    loc.write_bytes(aside, buf.getvalue().to_pybytes())
    kept = table.filter(keep)
    if "winner" in kept.column_names:  # the flag goes where tune --verify would set it among
        # the rows left (its row set aside had left a file every reader refused: CR30)
        winner = set(fastest_correct(kept.select(["measured_us", "rank", "correct"]).to_pylist()))
        flags = pa.array([i in winner for i in range(kept.num_rows)], pa.bool_())
        kept = kept.set_column(kept.column_names.index("winner"), "winner", flags)
    buf = pa.BufferOutputStream()
    pq.write_table(kept, buf, write_page_checksum=True)
    loc.write_bytes(path, buf.getvalue().to_pybytes())
    report.repaired.append(f"{path}: {what}; moved them to {aside}")
    return None


def _measured_into_place(loc: Location, path: str, measured: list[str],
                         report: Report) -> tuple[str, bool]:
    """A study's measured file kept in a folder below ``measured/`` with none in its place,
    moved where the readers read it, where it is the study's one copy there or its copies
    are alike (review CR28, CR29: the repair had set the study's only measurements aside as
    copies); its path now, checked as any other, and whether its copies differ (none moved:
    the user chooses)."""
    name = path.rsplit("/", 1)[-1]
    place = loc.path(MEASURED_DIR, name)
    if path == place or loc.kind(place) != pafs.FileType.NotFound:
        return path, False
    copies = [other for other in measured if other.rsplit("/", 1)[-1] == name]
    if len({loc.fs.open_input_stream(other).read() for other in copies}) > 1:
        return path, True
    loc.fs.move(path, place)
    report.repaired.append(f"{path}: the study's measurements, in a folder below "
                           f"{MEASURED_DIR}/ with none in their place; moved to {place}, "
                           "where the readers read them")
    return place, False


def _journal_records_results(loc: Location, study: str) -> bool:
    """Whether a study's journal is there and records a result (which rows can be written
    from); an unreadable one records none that can."""
    path = loc.journals().get(study)
    if path is None:
        return False
    try:
        data, cut = _journal_bytes(loc, path)
    except OSError:
        return False
    return records_a_result(data[:cut].decode(errors="replace"))


def _damaged(loc: Location, path: str, problem: str, report: Report, repair: bool) -> None:
    """Report a file that is no readable results file (with ``repair``, set it aside)."""
    if repair:
        report.repaired.append(f"{path}: {problem}; moved to {_quarantine(loc, path)}")
    else:
        report.problems.append(f"{path}: {problem}")


def _check_study_graphs(loc: Location, tables: dict[str, pa.Table], report: Report) -> None:
    """One graph a study: rows of one study key naming two graphs (a row edited or copied
    from another study) would be read as that graph's results."""
    graphs: dict[str, dict[str, str]] = {}
    for f, t in tables.items():
        if f.startswith(loc.path(TRIALS) + "/") and "graph_id" in t.column_names:
            for study, graph in zip(t.column("study_key").to_pylist(),
                                    t.column("graph_id").to_pylist(), strict=True):
                graphs.setdefault(study, {}).setdefault(graph, f)
    for study, found in graphs.items():
        if len(found) > 1:
            named = ", ".join(f"{g} ({f})" for g, f in sorted(found.items(), key=str))
            report.problems.append(f"study {study}: its rows name {len(found)} graphs, "
                                   f"{named}: a study is of one graph")


def _check_dangling_journals(loc: Location, report: Report) -> None:
    """A study journal that is a link to nothing (a disk not mounted): `tune` refuses the
    study, and `check` had said "no problem" (review CR25)."""
    studies = Path(loc.path(STUDIES)) if loc.local else None
    if studies is None or not studies.is_dir():
        return
    for link in sorted(studies.glob("*.journal")):
        if link.is_symlink() and not link.exists():
            report.problems.append(f"{link}: a link to {os.readlink(link)}, which is not "
                                   "there (a disk not mounted?): mount it, or move the link "
                                   "aside (the next run rebuilds the journal from the rows)")


def _check_study_models(loc: Location, tables: dict[str, pa.Table], report: Report,
                        journal_models: dict[str, str]) -> None:
    """One cost model a study: rows computed under two (a journal lost and rebuilt by
    another version, a file copied in), or under another than its journal records, would be
    ranked as one study's."""
    models: dict[str, dict[str, str]] = {}
    unrecorded: dict[str, str] = {}  # a study's rows older than the digest: a file of them
    for f, t in tables.items():
        if f.startswith(loc.path(TRIALS) + "/"):
            studies = t.column("study_key").to_pylist() if "study_key" in t.column_names else []
            digests = (t.column("model_digest").to_pylist() if "model_digest" in t.column_names
                       else [None] * len(studies))
            for study, model in zip(studies, digests, strict=True):
                if model is not None:
                    models.setdefault(study, {}).setdefault(model, f)
                else:
                    unrecorded.setdefault(study, f)
    for study in sorted(set(models) | set(unrecorded)):
        found = models.get(study, {})
        recorded = journal_models.get(study)
        others = {m: f for m, f in found.items() if recorded is not None and m != recorded}
        if study in unrecorded:  # an older warpsweep's rows (resumed by a newer one, or
            # its journal stamped by one: review CR24)
            found = {**found, "unrecorded (rows older than the model digest)":
                     unrecorded[study]}
            if recorded is not None:
                others = found
        if len(found) > 1 or others:
            named = ", ".join(f"{m} ({f})" for m, f in sorted(found.items()))
            journal = f"; its journal records {recorded}" if recorded else ""
            report.problems.append(
                f"study {study}: its rows were computed under {len(found)} cost model(s), "
                f"{named}{journal}: a study is of one model (set the other model's files "
                "aside, or tune it into another --results)")


def _check_device_meanings(loc: Location, tables: dict[str, pa.Table],
                           report: Report) -> None:
    """One meaning a device name: two device files of one name with other fields (runs side
    by side, or one killed before its rows were written) would be ranked as one device's."""
    from tuner.tuning.spec import LEGACY_PRESET_DIGESTS

    digests: dict[str, dict[str, str]] = {}
    for f, t in tables.items():
        if f.startswith(loc.path(TRIALS) + "/") and "study_key" in t.column_names:
            device = f.partition("/device=")[2].split("/", 1)[0]  # the name is the partition's
            studies = t.column("study_key").to_pylist()
            found = (t.column("device_digest").to_pylist() if "device_digest" in t.column_names
                     else [None] * len(studies))
            for digest, study in zip(found, studies, strict=True):
                # a row written before rows recorded it: its preset's fields then (as tune
                # reads it; an older warpsweep's h100 rows copied in had passed, probe COMPAT)
                digest = digest if digest is not None else LEGACY_PRESET_DIGESTS.get(device)
                if digest is not None:
                    digests.setdefault(device, {}).setdefault(digest, study)
    for device, found in sorted(digests.items()):
        if len(found) > 1:
            named = ", ".join(f"{d} (study {k})" for d, k in sorted(found.items()))
            report.problems.append(
                f"device {device!r}: rows simulated with {len(found)} sets of device fields, "
                f"{named}: one name is one device in a results directory (move one set's "
                "studies to another --results, or name its device file otherwise)")


def _check_partitions(loc: Location, tables: dict[str, pa.Table], report: Report) -> None:
    """A trial file lies under its studies' ``algorithm=``/``device=`` directory (the study
    key names both): one moved elsewhere would be read as that algorithm's or device's."""
    for f, t in tables.items():
        if not f.startswith(loc.path(TRIALS) + "/") or "study_key" not in t.column_names:
            continue
        parts = dict(p.split("=", 1) for p in f[len(loc.path(TRIALS)) + 1:].split("/")
                     if "=" in p)
        infix = f".{parts.get('algorithm')}.{parts.get('device')}."
        strays = sorted({k for k in t.column("study_key").to_pylist() if infix not in str(k)})
        if strays:
            report.problems.append(
                f"{f}: rows of study {strays[0]}"
                + (f" (and {len(strays) - 1} more)" if len(strays) > 1 else "")
                + f" lie under algorithm={parts.get('algorithm')}/device="
                f"{parts.get('device')}, not their study's algorithm and device (moved or "
                "copied there; move the file back)")


def _check_reference_rows(loc: Location, tables: dict[str, pa.Table], report: Report) -> None:
    """A reference row's knobs are its label's baseline (``vwarp w=32`` ran w=32): one
    whose knobs are another's (an edited row) would be shown as that baseline. Labels no
    longer among the baselines (older versions') are left alone."""
    from simulator.strategy import Strategy
    from tuner.tuning.spec import reference_configs

    baselines = {label: str(Strategy.from_params(config))
                 for label, config in reference_configs().items()}
    for f, t in tables.items():
        if not f.startswith(loc.path(TRIALS) + "/"):
            continue
        for row in t.to_pylist():
            if row["role"] != "reference" or row.get("label") not in baselines:
                continue
            params = {k[len(PARAM_PREFIX):]: v for k, v in row.items()
                      if k.startswith(PARAM_PREFIX) and v is not None}
            try:
                ran = str(Strategy.from_params(params))
            except WarpsweepError as exc:
                ran = f"no strategy ({exc})"
            if ran != baselines[row["label"]]:
                report.problems.append(
                    f"{f}: study {row['study_key']} reference {row['label']!r} holds the "
                    f"knobs {ran}, not its baseline's {baselines[row['label']]}")


def _check_repeats(loc: Location, tables: dict[str, pa.Table], report: Report) -> None:
    """Repeats counted, not run: no configuration evaluated twice in a study whose rows count
    their repeats (``repeats`` set), no negative count; and the totals for the summary."""
    evaluated: dict[tuple, list[tuple[str, Any, Any]]] = {}
    sampled: set[tuple[str, str]] = set()  # every configuration a trial ran, failed ones too
    counted = duplicates = evaluations = 0
    seen: set[tuple] = set()  # a row held twice (a copied file) is _check_keys' problem
    for f, t in tables.items():
        if not f.startswith(loc.path(TRIALS) + "/"):
            continue
        for row in t.to_pylist():
            key = (row["study_key"], row["role"], row["trial"], row["label"])
            if key in seen:
                continue
            seen.add(key)
            repeats = row.get("repeats")
            if repeats is not None and repeats < 0:
                report.problems.append(f"{f}: study {row['study_key']} trial {row['trial']}: "
                                       f"repeats {repeats} is negative")
            counted += repeats or 0
            if row["role"] == "trial":  # one answered from a reference's row counts too
                config = json.dumps(row_fingerprint(row)[1], default=str)
                sampled.add((row["study_key"], config))
                if row["state"] == "complete":
                    evaluated.setdefault((row["study_key"], config), []).append(
                        (f, row["trial"], repeats))
            if row["state"] == "duplicate":
                duplicates += 1
            else:
                evaluations += 1
    configurations = len(sampled)
    for (study, _), found in evaluated.items():
        if len(found) > 1 and any(r is not None for _, _, r in found):
            numbers = ", ".join(str(n) for _, n, _ in sorted(found, key=lambda x: x[1]))
            report.problems.append(f"{found[-1][0]}: study {study}: one configuration "
                                   f"evaluated by trials {numbers}; a repeat is counted, "
                                   "not run again")
    if evaluations:
        report.counts = (f"{configurations} configurations sampled, {evaluations} evaluations "
                         f"(references included), {counted + duplicates} repeats"
                         + (f" ({duplicates} as rows of their own)" if duplicates else ""))


def _check_graph_rows(loc: Location, tables: dict[str, pa.Table], report: Report,
                      repair: bool = False) -> None:
    """Every graph the trials name has a ``graphs`` row (a join drops trials without one);
    with ``repair``, one written where the graph's spec still builds the graph its study's
    journal records (a run killed before its graph row, or rows written back from the
    journal, had left it to a next tune, which an edited file never runs: probe RESUME2)."""
    graphs: set[str] = set()
    studies: dict[str, set[str]] = {}
    specs: dict[str, str] = {}
    if repair:  # the trial rows as the repair left them, those it wrote back included (a
        # killed run's rows, written from its journal, name a graph whose row it never wrote)
        tables = {**tables, **{f: pq.read_table(f, filesystem=loc.fs, columns=[
            "study_key", "graph_id", "graph_spec"]) for f in loc.files(TRIALS, ".parquet")
            if f.rsplit("/", 1)[-1].startswith(RESULTS_FILE_PREFIX) and f not in tables}}
    for f, t in tables.items():
        if f.startswith(loc.path(TRIALS) + "/"):
            if "graph_id" in t.column_names:
                for study, graph, spec in zip(t.column("study_key").to_pylist(),
                                              t.column("graph_id").to_pylist(),
                                              t.column("graph_spec").to_pylist(), strict=True):
                    studies.setdefault(graph, set()).add(study)
                    specs.setdefault(graph, spec)
        else:
            graphs.update(t.column("graph_id").to_pylist())
    for graph in sorted(set(studies) - graphs - {None, ""}):
        line = (f"{loc.path(GRAPHS)}: no row for graph {graph}, which the trials of "
                f"{', '.join(sorted(studies[graph]))} name")
        # the same line with or without --repair where the repair cannot write it (a plain
        # check after it had repeated the problem promising the repair: review CR31)
        problem = _graph_row_again(loc, graph, specs[graph], studies[graph], write=repair)
        if problem is None and not repair:
            report.problems.append(f"{line} (`--repair` writes it: its spec builds the graph "
                                   "its study's journal records)")
        elif problem is None:
            report.repaired.append(f"{line}; wrote it, the graph built again from its spec "
                                   "(its edges those its study's journal records)")
        else:
            report.problems.append(f"{line}: {problem}")


def _graph_row_again(loc: Location, graph: str, spec: str, studies: set[str],
                     write: bool = True) -> str | None:
    """Write (with ``write``) the ``graphs`` row of ``graph`` from its spec, built again and
    checked against the edges and sources its studies' journals record; else why not."""
    from simulator import load_graph
    from simulator.graph_spec import parse_spec
    from tuner.tuning.evaluate import GraphMeta
    from tuner.tuning.evaluate import graph_kind
    from tuner.tuning.evaluate import selector_features
    from tuner.tuning.runner import graph_row

    paths = loc.journals()
    recorded: dict[str, Any] = {}
    for study in sorted(studies & set(paths)):
        try:
            data, cut = _journal_bytes(loc, paths[study])
            recorded = _load_journal_lines(study, data[:cut])[1].get("graph") or {}
        except Exception:  # noqa: BLE001 - an unreadable journal is its own problem
            continue
        if recorded.get("edges"):
            break
    if not recorded.get("edges"):
        return ("no journal of its studies records the graph's edges to check a build "
                "against; the next tune of such a study writes it")
    # a file spec's relative path is read from where the study was tuned (review CR29)
    relative = ""
    try:
        parsed = parse_spec(spec)
        if parsed.is_file and not parsed.path.is_absolute():
            relative = (f" (its path is relative, read here from {os.getcwd()}: run the "
                        "repair from the directory the study was tuned in)")
    except WarpsweepError:
        pass
    try:
        built = load_graph(spec)
    except WarpsweepError as exc:
        return f"its spec {spec!r} does not build here ({exc}){relative}"
    if built.content_digest != recorded["edges"]:
        why = relative or " (its file edited or replaced?)"
        return (f"its spec {spec!r} builds another graph now{why}: put back the file it was "
                "built from and run `warpsweep check --repair` again")
    if not write:
        return None
    meta = GraphMeta(graph_id=graph, spec=built.spec or spec, name=built.name,
                     kind=graph_kind(spec), n=built.n, m=built.m, directed=built.directed,
                     weighted=built.weights is not None,
                     sources=tuple(recorded.get("sources") or ()),
                     features=selector_features(built), edges=built.content_digest)
    store = ResultStore.open(loc, flush_every_s=3600)
    store.add_graph(graph_row(meta))
    store.flush()
    return None


def _schema_problem(loc: Location, table: str, path: str) -> str | None:
    return (schema_problem(pq.read_schema(path, filesystem=loc.fs), table)
            or partition_problem(loc.path(table), path, table))


def _quarantine(loc: Location, path: str, later: list[tuple[str, str]] | None = None) -> str:
    """Move ``path`` to the quarantine (with ``later``, only name where: the move is left
    to the caller, in that list) and say where."""
    rel = path[len(loc.root) + 1:]
    dest = loc.path(QUARANTINE, f"{rel}.{time.time_ns()}")
    if later is not None:
        later.append((path, dest))
        return dest
    loc.fs.create_dir(dest.rsplit("/", 1)[0], recursive=True)
    loc.fs.move(path, dest)
    return dest


def _check_keys(loc: Location, tables: dict[str, pa.Table], report: Report,
                repair: bool) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Rows of one key written twice (with ``repair``, one kept); per study, the files that
    held a row of other content than the journal's, which was kept (another run's file
    copied in), and the files of rows of one key the journal does not record, which differ
    (one of them another run's)."""
    rows: dict[tuple, list[_Row]] = {}
    other_runs: dict[str, set[str]] = {}
    unsettled: dict[str, set[str]] = {}
    for f, t in tables.items():
        kind = TRIALS if f.startswith(loc.path(TRIALS) + "/") else GRAPHS
        for i, row in enumerate(t.to_pylist()):
            if kind == TRIALS:
                ident = row["trial"] if row["role"] == "trial" else row["label"]
                key = (TRIALS, row["study_key"], row["role"], ident)
                # every column: two rows of one key that differ only in a metric (the
                # fingerprint's values aside) are not "the same content"
                fp = json.dumps({k: v for k, v in row.items() if v is not None},
                                sort_keys=True, default=str)
                recorded = row_fingerprint(row)
            else:
                key, fp, recorded = (GRAPHS, row["graph_id"]), None, None
            rows.setdefault(key, []).append(_Row(f, i, fp, row.get("timestamp"), recorded,
                                                 row.get("model_digest")))
    drop: dict[str, set[int]] = {}
    journals: dict[str, Any] = {}  # per study, its journal's trials and attributes, once
    paths = loc.journals()
    # a study with no journal whose rows hold a key twice with other results, or were drawn
    # under two samplers or seeds, holds two runs' rows (directories merged by hand):
    # keeping the first written of each key had mixed their draws into one study (probe
    # RESUME2), and rows of two seeds that share no key had passed (review CR29); named,
    # with or without --repair, and left for the user to part
    mixed: dict[str, set[str]] = {}
    for key, found in rows.items():
        if (key[0] == TRIALS and key[1] not in paths
                and len({r.recorded for r in found}) > 1):
            mixed.setdefault(key[1], set()).update(r.file for r in found)
    for study, files in _drawn_twice(tables, set(paths)).items():
        mixed.setdefault(study, set()).update(files)
    for study, files in sorted(mixed.items()):
        report.problems.append(
            f"study {study}: rows of two runs and no journal to tell which is the study's, "
            f"in {_runs_of(tables, study, files)}; --repair cannot choose: move one run's "
            "files out of trials/")
    for key, found in rows.items():
        if len(found) < 2 or (key[0] == TRIALS and key[1] in mixed):
            continue
        files = sorted({r.file for r in found})
        what = (f"graph {key[1]}" if key[0] == GRAPHS
                else f"study {key[1]} {key[2]} {key[3]}")
        same = len({json.dumps(r.fp, default=str) for r in found}) == 1
        problem = (f"{files[0]}: {what} has {len(found)} rows"
                   + (" (same content)" if same else " with different content")
                   + (f", also in {', '.join(files[1:])}" if len(files) > 1 else ""))
        if not repair:
            report.problems.append(problem)
            continue
        ordered = sorted(found, key=lambda r: (str(r.timestamp), r.file, r.index))
        journal = (None if same or key[0] == GRAPHS
                   else _journal_fingerprint(loc, paths, journals, key[1], key[2], key[3]))
        # a row of the journal's cost model first: two runs under two models can record
        # the same draws and times (a change that moves no figure; the fingerprint leaves
        # the model out), and the study's own rows are its model's (probe R27)
        model = None if journal is None else _journal_model(journals, key[1])
        matching = [r for r in ordered if r.recorded == journal]
        keep = next((r for r in matching if r.model == model), None) or next(iter(matching),
                                                                            None)
        how = "kept the one its study's journal records"
        if keep is None:
            keep, how = ordered[0], "kept the first written"
            if key[0] == TRIALS and not same:  # two runs' rows the journal cannot tell
                # apart: each file may be the other run's (review CR20)
                unsettled.setdefault(key[1], set()).update(r.file for r in found)
        else:
            other_runs.setdefault(key[1], set()).update(
                r.file for r in found
                if r.recorded != journal or (r is not keep and r.model != keep.model))
        for r in found:
            if r is not keep:
                drop.setdefault(r.file, set()).add(r.index)
        report.repaired.append(f"{problem}; {how}")
    if other_runs or unsettled:  # the rows dropped here are what tells another run's files:
        # a repair killed before the journals' step would have left them unknown to the next
        mark_other_runs(loc, {k: other_runs.get(k, set()) | unsettled.get(k, set())
                              for k in {*other_runs, *unsettled}})
    _drop_rows(loc, tables, drop)
    return other_runs, unsettled


def _drawn_twice(tables: dict[str, pa.Table], journaled: set[str]) -> dict[str, set[str]]:
    """Per study with no journal whose trial rows were drawn under two samplers or seeds,
    the files of its rows (as ``tune`` refuses to rebuild such a study's journal)."""
    drawn: dict[str, dict[tuple[str, Any], set[str]]] = {}
    for f, t in tables.items():
        if "sampler" not in t.column_names or "seed" not in t.column_names:
            continue
        for row in t.select(["study_key", "role", "sampler", "seed"]).to_pylist():
            if row["role"] == "trial" and row["seed"] is not None and (
                    row["study_key"] not in journaled):
                drawn.setdefault(row["study_key"], {}).setdefault(
                    (str(row["sampler"]), row["seed"]), set()).add(f)
    return {study: set().union(*runs.values()) for study, runs in drawn.items()
            if len(runs) > 1}


def _runs_of(tables: dict[str, pa.Table], study: str, files: set[str]) -> str:
    """The files of a study's two runs, each with the sampler and seed its rows of the
    study were drawn under: what tells the runs apart."""
    described = []
    for f in sorted(files):
        t = tables[f]
        drawn = sorted({(str(row.get("sampler")), str(row.get("seed")))
                        for row in t.to_pylist() if row["study_key"] == study})
        described.append(f"{f} ({', '.join(f'{s} seed {d}' for s, d in drawn)})")
    return ", ".join(described)


def _drop_rows(loc: Location, tables: dict[str, pa.Table], drop: dict[str, set[int]]) -> None:
    """Move the rows ``drop`` names (per file, their indexes) to the quarantine; a file left
    with no row is removed."""
    for f, indexes in drop.items():
        t = tables[f]
        keep_mask = pa.array([i not in indexes for i in range(t.num_rows)])
        dropped = t.filter(pa.compute.invert(keep_mask))
        buf = pa.BufferOutputStream()
        pq.write_table(dropped, buf, write_page_checksum=True)
        rel = f[len(loc.root) + 1:]
        loc.write_bytes(loc.path(QUARANTINE, f"{rel}.dropped-{time.time_ns()}.parquet"),
                        buf.getvalue().to_pybytes())
        kept = t.filter(keep_mask)
        if kept.num_rows:
            buf = pa.BufferOutputStream()
            pq.write_table(kept, buf, write_page_checksum=True)
            loc.write_bytes(f, buf.getvalue().to_pybytes())
            tables[f] = kept
        else:
            loc.fs.delete_file(f)
            del tables[f]


class _Logs(BaseJournalBackend):
    def __init__(self, logs: list[dict[str, Any]]) -> None:
        self.logs = logs

    def read_logs(self, log_number_from: int) -> list[dict[str, Any]]:
        return self.logs[log_number_from:]

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        raise OSError("read only")


def _journal_bytes(loc: Location, path: str) -> tuple[bytes, int]:
    """A journal's bytes and where its last whole line ends."""
    with loc.fs.open_input_stream(path) as stream:
        data = stream.read()
    return data, data.rfind(b"\n") + 1


def _set_aside_after_its_results(loc: Location, key: str, path: str, data: bytes,
                                 problem: str, rows: dict[tuple, Any], report: Report,
                                 repair: bool, moves: list[tuple[str, str]]
                                 ) -> list[TrialRecord]:
    """A journal no reading of which can be trusted: the problem named, and with ``repair``
    set aside (moved last, in ``moves``) once the results its lines validly record that the
    rows lack are written; those results, for the caller to write."""
    unsaved = _unsaved_from_lines(key, data.decode(errors="replace"), rows)
    if unsaved:
        problem += (f"; its lines record {len(unsaved)} result(s) the rows lack, which "
                    "--repair writes before setting it aside")
    if not repair:
        report.problems.append(f"{path}: {problem}")
        return []
    done = f"wrote {len(unsaved)} row(s) from its lines; " if unsaved else ""
    report.repaired.append(f"{path}: {problem}; {done}moved to {_quarantine(loc, path, moves)} "
                           "(the next run rebuilds it from the rows)")
    return unsaved


def _unsaved_from_lines(key: str, text: str, rows: dict[tuple, Any]) -> list[TrialRecord]:
    """The results a journal's lines record that the rows lack, read from the lines
    themselves (the last valid record of each trial or reference: a damaged or another
    study's record after a valid one had hidden it, review CR31)."""
    found: dict[tuple[str, Any], TrialRecord] = {}
    for ident, value in recorded_records(text):
        try:
            record = TrialRecord.from_json(value)
        except Exception:  # noqa: BLE001 - a record damaged itself: nothing to write
            continue
        if record.study_key == key:
            found[ident] = record
    return [record for ident, record in found.items() if ident not in rows]


def _load_journal_lines(key: str, data: bytes
                        ) -> tuple[dict[int, Any], dict[str, Any], bytes, str | None]:
    """``_load_journal`` of a journal's whole lines, and those lines; else, where some lines
    are no journal operation (a garbage line appended or inserted, a line of another
    program), of the others (else of the lines before the first such), the bytes that
    loaded and which lines were left out. Raises where none of these loads: the first bad
    line's problem where there is one, else why the whole does not load."""
    recorded = {ident for ident, _ in recorded_records(data.decode(errors="replace"))}
    try:
        trials, attrs = _load_journal(key, data)
        _check_replay(key, trials, attrs, recorded)
        return trials, attrs, data, None
    except Exception as exc:  # noqa: BLE001 - the lines' problem below, if any, says more
        failed = exc
    lines = data.splitlines(keepends=True)
    bad = [(number, reason) for number, line in enumerate(lines, 1)
           if (reason := journal_line_problem(line)) is not None]
    if not bad:
        raise failed
    numbers = {number for number, _ in bad}
    named = (f"line {bad[0][0]}: {bad[0][1]}, no journal operation" if len(bad) == 1 else
             f"lines {', '.join(str(n) for n, _ in bad[:5])}{', ...' if len(bad) > 5 else ''}"
             f" (line {bad[0][0]}: {bad[0][1]}), no journal operations")
    # a stray line among whole operations: the others are the journal (probe CR29: the
    # results after it had been dropped, and a stray first line had set all aside)
    others = b"".join(line for number, line in enumerate(lines, 1) if number not in numbers)
    before = b"".join(lines[:bad[0][0] - 1])
    for kept, what in ((others, named), (before, f"{named}, and what follows it")):
        if not kept:
            continue
        try:
            trials, attrs = _load_journal(key, kept)
            _check_replay(key, trials, attrs, recorded)
        except Exception:  # noqa: BLE001 - the next reading, or the first line's problem
            continue
        return trials, attrs, kept, what
    raise ValueError(f"line {bad[0][0]}: {bad[0][1]}") from None


def _check_replay(key: str, trials: dict[int, Any], attrs: dict[str, Any],
                  recorded: set[tuple[str, Any]]) -> None:
    """ValueError where a journal's replay is no reading of it: results its lines record
    that the replay does not hold (a line damaged in place, the trials after it numbered
    otherwise: review CR30, CR31), or a record that is no record."""
    replayed = {("trial", t.number) for t in trials.values() if "record" in t.user_attrs}
    replayed |= {("reference", k[len("ref:"):]) for k in attrs if k.startswith("ref:")}
    if not recorded <= replayed:
        missing = sorted(recorded - replayed, key=str)
        raise ValueError(f"its replay lacks {len(missing)} result(s) its lines record "
                         f"({', '.join(f'{r} {i}' for r, i in missing[:3])}): trials "
                         "numbered otherwise than their records")
    check_journal_records(trials.values(), attrs, key)


def _load_journal(key: str, data: bytes) -> tuple[dict[int, Any], dict[str, Any]]:
    """A study journal's trials by number and its user attributes (raises where it does not
    load)."""
    logs = [json.loads(line) for line in data.splitlines() if line.strip()]
    named = sorted({str(log.get("study_name")) for log in logs
                    if isinstance(log, dict) and "study_name" in log})
    if named and key not in named:  # copied over this study's: a study of its own
        raise ValueError(f"it is the journal of study {', '.join(named)}, not of {key}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study = optuna.load_study(study_name=key, storage=JournalStorage(_Logs(logs)))
    return {t.number: t for t in study.get_trials(deepcopy=False)}, study.user_attrs


def _journal_model(cache: dict[str, Any], study: str) -> str | None:
    """The cost model a study's journal (loaded into ``cache`` by ``_journal_fingerprint``)
    records, or None."""
    if cache.get(study) is None:
        return None
    model = cache[study][1].get("model")
    return model.get("digest") if isinstance(model, dict) else None


def _journal_fingerprint(loc: Location, paths: dict[str, str], cache: dict[str, Any],
                         study: str, role: str, ident: Any) -> tuple | None:
    """The fingerprint of what a study's journal (``paths``: ``loc.journals()``) records for
    a trial (or a reference's label); None where it records nothing or does not load
    (``cache``: per study, its journal once)."""
    if study not in cache:
        cache[study] = None
        path = paths.get(study)
        if path is not None:
            try:
                data, cut = _journal_bytes(loc, path)
                cache[study] = _load_journal_lines(study, data[:cut])[:2]
            except Exception:  # noqa: BLE001 - an unreadable journal is its own problem
                pass
    if cache[study] is None:
        return None
    trials, attrs = cache[study]
    if role == "reference":
        record = attrs.get(f"ref:{ident}")
    else:
        trial = trials.get(ident)
        record = trial.user_attrs.get("record") if trial is not None else None
    return None if record is None else record_fingerprint(TrialRecord.from_json(record))


def _check_orphan_marks(loc: Location, by_study: dict[str, Any], report: Report,
                        repair: bool) -> None:
    """A study whose journal is gone but whose saved mark counted more rows than it holds:
    rows deleted with the journal, which nothing can write again (readers and `check` had
    said nothing, probe CONC). A repair moves the mark to the quarantine, so the loss is
    reported once and the next run starts from the rows left."""
    journals = loc.journals()
    marks = {k: p for k, p in loc.saved_marks().items() if k not in journals}
    for key, count in saved_rows(marks).items():
        left = len(by_study.get(key, {}))
        if not left or left >= count:  # none left at all: the study started over
            continue
        lost = count - left
        mark = str(saved_mark_path(Path(marks[key])))
        problem = f"{mark}: {lost_for_good_line(key, lost, count)}"
        if repair:
            report.repaired.append(f"{problem}; moved the mark to {_quarantine(loc, mark)}")
        else:
            report.problems.append(problem)


def _check_journals(loc: Location, tables: dict[str, pa.Table], report: Report,
                    repair: bool, other_runs: dict[str, set[str]] | None = None,
                    unsettled: dict[str, set[str]] | None = None) -> dict[str, str]:
    """Each journal against its study's rows (with ``repair``, set right; ``other_runs``:
    per study, files of another run's rows ``_check_keys`` set aside for the journal's;
    ``unsettled``: files of two runs' rows of a key the journal lacks); the cost model each
    readable journal records, by study key."""
    other_runs, unsettled = other_runs or {}, unsettled or {}
    found: dict[str, set[str]] = {}  # per study, the other runs' files this repair acts on
    models: dict[str, str] = {}
    by_study: dict[str, dict[tuple, tuple]] = {}
    where: dict[tuple, tuple[str, int]] = {}  # (study, role, ident) -> (file, row index)
    drawn_by: dict[tuple, dict[str, Any]] = {}  # (study, role, ident) -> its run's sampler, seed
    row_models: dict[str, set[str | None]] = {}  # per study, the cost models its rows record
    for f, t in tables.items():
        if f.startswith(loc.path(TRIALS) + "/"):
            for i, row in enumerate(t.to_pylist()):
                row_models.setdefault(row["study_key"], set()).add(row.get("model_digest"))
                ident = row["trial"] if row["role"] == "trial" else row["label"]
                by_study.setdefault(row["study_key"], {})[(row["role"], ident)] = (
                    row_fingerprint(row))
                where[(row["study_key"], row["role"], ident)] = (f, i)
                drawn_by[(row["study_key"], row["role"], ident)] = {
                    k: row.get(k) for k in ("sampler", "seed")}
    # rows to set aside and records to write, for every journal at once: a trial file holds
    # rows of several studies (a sweep's flush), whose indexes a first drop would shift, and
    # a store opened before a drop would take the dropped row for a conflict
    drop: dict[str, set[int]] = {}
    restore: list[TrialRecord] = []
    moves: list[tuple[str, str]] = []  # journals and marks to the quarantine, last
    for key, path in loc.journals().items():
        report.files += 1
        data, cut = _journal_bytes(loc, path)
        try:
            trials, attrs, kept, bad_line = _load_journal_lines(key, data[:cut])
        except Exception as exc:  # noqa: BLE001 - any reason it does not load is the problem
            reason = " ".join(str(exc).split())[:150]
            problem = f"unreadable journal ({type(exc).__name__}: {reason})"
            # the results its lines record that the rows lack, read from the lines
            # themselves: written before it is set aside (review CR30: a line that breaks
            # the replay, or one damaged in place, had set them aside with it)
            restore += _set_aside_after_its_results(
                loc, key, path, data[:cut], problem, by_study.get(key, {}), report, repair,
                moves)
            continue
        model = attrs.get("model")
        if isinstance(model, dict) and model.get("digest"):
            models[key] = model["digest"]
        rows = by_study.get(key, {})
        behind, disagree = [], {}  # disagree: (role, ident) -> the journal's record
        behind_keys: list[tuple[str, Any]] = []
        redrawn: set[str] = set()  # files of rows the journal records another configuration for
        agreeing: set[str] = set()  # files of rows the journal records as they are
        stale = stopped_trials_run_again(trials, rows)
        for (role, ident), fp in rows.items():
            if role == "trial" and ident in stale:
                continue
            if role == "reference":
                rec = attrs.get(f"ref:{ident}")
                name = f"reference {ident!r}"
            else:
                t = trials.get(ident)
                rec = t.user_attrs.get("record") if t is not None else None
                name = f"trial {ident}"
            if rec is None:
                behind.append(name)
                behind_keys.append((role, ident))
                continue
            record = TrialRecord.from_json(rec)
            recorded = record_fingerprint(record)
            if recorded != fp:
                disagree[(role, ident)] = (name, record)
                if recorded[1] != fp[1]:
                    redrawn.add(where[(key, role, ident)][0])
            else:
                agreeing.add(where[(key, role, ident)][0])
        misread = [f"trial {n}" for n in told_otherwise(trials)]
        if misread:
            problem = (f"Optuna's values for {len(misread)} trial(s) ({', '.join(misread[:5])}"
                       f"{', ...' if len(misread) > 5 else ''}) are not what their records "
                       "say was told (the journal edited): the sampler would read them")
            restore += _set_aside_after_its_results(
                loc, key, path, data[:cut], problem, by_study.get(key, {}), report, repair,
                moves)
            continue
        # a trial recorded and still running was killed before its state: a resume tells
        # it from the record and writes its row, as the repair does (probe CR28)
        lost = [TrialRecord.from_json(t.user_attrs["record"]) for n, t in trials.items()
                if "record" in t.user_attrs
                and (t.state.is_finished() or t.state == optuna.trial.TrialState.RUNNING)
                and ("trial", n) not in rows]
        lost += [TrialRecord.from_json(v) for k, v in attrs.items()
                 if k.startswith("ref:") and ("reference", k[4:]) not in rows]
        torn = cut < len(data)
        notes = []
        if disagree:
            names = [name for name, _ in disagree.values()]
            notes.append(f"records other results than the rows ({len(names)}: "
                         f"{', '.join(names[:5])}{', ...' if len(names) > 5 else ''}: rows "
                         "edited or copied; --repair puts back what the journal records)")
        if behind:
            behind.sort(key=lambda name: (name.startswith("trial"), len(name), name))
            notes.append(f"behind the rows ({len(behind)}: {', '.join(behind[:5])}"
                         + (", ..." if len(behind) > 5 else "") + ")")
        if stale:
            notes.append(f"records trial(s) {', '.join(map(str, stale[:5]))}"
                         f"{', ...' if len(stale) > 5 else ''} as stopped and run again later, "
                         "yet the rows hold a result for them (rows copied in from another "
                         "run of the study: counted, one configuration would be evaluated "
                         "twice)")
        if lost:
            notes.append(f"{len(lost)} recorded result(s) missing from the rows")
        # results its saved mark counted that neither the rows nor this journal hold (an
        # older copy of it put back, a rows file deleted since): the readers warn of them,
        # and nothing can write them again (review CR22)
        counted, missing = saved_rows({key: path}).get(key, 0), len(lost)
        gone = counted - len(rows) - missing
        if gone > 0:
            notes.append(f"{gone} result(s) its saved mark counted are in neither the rows "
                         "nor the journal (an older copy of it put back, and rows deleted "
                         "since?): nothing is left to write them from; the next tune runs "
                         "new trials in their place")
        # results recorded, no cost model, and rows that each record one: a run cut short as
        # it rebuilt the journal (references first, before a fix); every run refuses the
        # study as an older warpsweep's (probe RESUME2)
        modelless = (attrs.get("model") is None and bool(row_models.get(key))
                     and None not in row_models[key]
                     and (any("record" in t.user_attrs for t in trials.values())
                          or any(k.startswith("ref:") for k in attrs)))
        if modelless:
            notes.append("records results but not the cost model they were simulated with, "
                          "which the rows record (a run cut short as it rebuilt the journal?): "
                          "every run refuses the study as an older warpsweep's")
        if bad_line:
            notes.append(f"{bad_line} (what the other lines hold counts; --repair writes the "
                         "journal without it, the whole kept in the quarantine)")
        elif torn:
            notes.append("ends in a torn line")
        if not notes:
            continue
        problem = f"{path}: journal {'; '.join(notes)}"
        if not repair:
            report.problems.append(problem)
            continue
        # another run's files (copied in): those holding rows of keys another file holds too
        # (``other_runs``), a row the journal records another configuration for, or a row
        # past the journal drawn under another sampler or seed than the journal's study (a
        # row whose results alone differ, its key in no other file, is an edit: put back). A
        # file holds one run's rows: those past the journal of a file that also holds rows
        # the journal records are this run's (the journal lags), those of another run's file
        # are that run's; a file of rows past the journal alone may be either where another
        # run was copied in (a later flush or resume of it): set aside, the journal kept,
        # never a study of two runs' draws
        ran = attrs.get("spec") if isinstance(attrs.get("spec"), dict) else {}
        other_draws = {where[(key, *k)][0] for k in behind_keys
                       if any(k2 in ran and drawn_by[(key, *k)][k2] not in (None, ran[k2])
                              for k2 in ("sampler", "seed"))}
        # (of two files of one key the journal lacks, one holding rows it records is its own)
        foreign = (other_runs.get(key, set()) | redrawn | other_draws
                   | (unsettled.get(key, set()) - agreeing))
        own = agreeing - foreign
        theirs = [k for k in behind_keys if where[(key, *k)][0] not in own] if foreign else []
        done = []
        for role, ident in [*disagree, *(("trial", n) for n in stale)]:
            f, i = where[(key, role, ident)]
            drop.setdefault(f, set()).add(i)
        if stale:
            done.append(f"moved the rows of trial(s) {', '.join(map(str, stale[:5]))}"
                        f"{', ...' if len(stale) > 5 else ''} to the quarantine")
        lost += [record for _, record in disagree.values()]
        if lost:
            restore += lost
            done.append(f"wrote {len(lost)} row(s) from it")
        # (the journal had been set aside for another run's rows past it, and the study kept
        # a configuration past its budget, then been called clean: probe RESUME)
        if theirs:
            found[key] = foreign
            for role, ident in theirs:
                f, i = where[(key, role, ident)]
                drop.setdefault(f, set()).add(i)
            names = sorted((f"trial {ident}" if role == "trial" else f"reference {ident!r}"
                            for role, ident in theirs),
                           key=lambda name: (name.startswith("trial"), len(name), name))
            done.append(f"moved the rows it lacks ({', '.join(names[:5])}"
                        f"{', ...' if len(names) > 5 else ''}) to the quarantine: rows of "
                        f"another run (or edited to other configurations) are in "
                        f"{', '.join(sorted(foreign)[:3])}{', ...' if len(foreign) > 3 else ''}"
                        ", whose these may be")
            behind = [n for n in behind if n not in names]
        # the rows left once the repair is done (missing ones written back from the journal):
        # a mark that counted more, rows gone or set aside, would have readers ask for a
        # repair that restores nothing
        if not behind and counted > len(rows) - len(stale) - len(theirs) + missing:
            mark = str(saved_mark_path(Path(path)))
            done.append(f"moved its saved mark to {_quarantine(loc, mark, moves)}")
        if behind or modelless:
            # moved once the rows are set aside: a repair cut short before then leaves the
            # journal, and what tells another run's rows, for the next (review CR20)
            done.append(f"moved to {_quarantine(loc, path, moves)} (the next run rebuilds it "
                        "from the rows)")
        elif bad_line:  # (review RESUME2: the whole had been set aside, and the results
            # it held that the rows lack with it)
            copy = _quarantine(loc, path, later=[])
            loc.fs.create_dir(copy.rsplit("/", 1)[0], recursive=True)
            loc.fs.copy_file(path, copy)
            loc.write_bytes(path, kept)
            which = bad_line.split(" (")[0].split(":")[0]  # "line 4", "lines 4, 9"
            done.append(f"wrote it without {which} (the whole copied to {copy})")
        elif torn:
            loc.write_bytes(path, data[:cut])
            done.append("cut the torn line")
        report.repaired.append(f"{problem}; {'; '.join(done)}")
    if found:  # what tells them (rows the journal records otherwise) may be dropped first:
        mark_other_runs(loc, found)  # a repair cut short in between leaves it for the next
    _drop_rows(loc, tables, drop)
    if restore:
        store = ResultStore.open(loc, flush_every_s=3600)
        for r in restore:
            store.add_trial(r)
        store.flush()
    for path, dest in moves:
        loc.fs.create_dir(dest.rsplit("/", 1)[0], recursive=True)
        loc.fs.move(path, dest)
    # the rows as the repair left them: those it set aside gone, those it wrote back there
    # (a row written back had been called lost for good in the same run: review CR29)
    left: dict[str, set[tuple]] = {}
    for f, t in tables.items():
        if f.startswith(loc.path(TRIALS) + "/"):
            for row in t.select(["study_key", "role", "trial", "label"]).to_pylist():
                left.setdefault(row["study_key"], set()).add(
                    (row["role"], row["trial"] if row["role"] == "trial" else row["label"]))
    for r in restore:
        left.setdefault(r.study_key, set()).add(
            (r.role, r.trial if r.role == "trial" else r.label))
    _check_orphan_marks(loc, left, report, repair)  # (the journals moved away first)
    return models
