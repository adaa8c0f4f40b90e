"""The measured side of a calibration (``warpsweep calibrate``): GPU times read from a
measurements file (``bench/gpu``'s Parquet) or a results directory's ``tune --verify``
measurements, checked row by row, one ``Measured`` per (graph, algorithm, config), and the
per-launch kernel times of ``bench/gpu/launch_times.py``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from simulator.errors import ConfigError
from simulator.errors import WarpsweepError
from simulator.strategy import Strategy
from tuner.calibration.calibrate import Measured

REQUIRED_COLUMNS = (
    "device", "graph", "graph_spec", "algorithm", "config", "variant", "source", "time_us",
    "correct",
)
LAUNCH_COLUMNS = ("graph", "algorithm", "config", "variant", "launch", "kernel_us")
# the algorithms that start from a source vertex (simulator.functional); the others' rows
# record none (the harness writes -1), and are simulated without one
SOURCED = ("bfs", "sssp")


# ---------------------------------------------------------------------------------- measured


def load_measured(
    path: str | Path,
    *,
    device: str | None = None,
    algorithms: Iterable[str] | None = None,
    graphs: Iterable[str] | None = None,
    max_edges: int | None = None,
    left_out: list[str] | None = None,
) -> list[Measured]:
    """The measured rows of a results Parquet file, one per (graph, algorithm, config): the
    fastest correct variant (the user runs the best implementation of what was picked).

    ``device`` keeps that device's rows; ``algorithms`` and ``graphs`` (short names) filter;
    ``max_edges`` drops graphs with more stored edges (where the file has an ``m`` column).
    ``left_out`` gets a line saying what the device left out, where it left any.
    """
    path = Path(path)
    table = _read_parquet(path, "measured results", REQUIRED_COLUMNS)
    rows = table.to_pylist()
    if not rows:
        raise ConfigError(f"measured results {path}: the file holds no rows")
    unjudged = [r for r in rows if r["correct"] is None]
    if unjudged:  # neither kept nor dropped silently: whether the answer was right is unknown
        r = unjudged[0]
        raise ConfigError(
            f"measured results {path}: {len(unjudged)} row(s) with no `correct` value, e.g. "
            f"{r['graph']} {r['algorithm']} {r['config']!r}: each row must say whether its "
            "run's answer was checked right (true) or wrong (false)")
    if device is not None:
        found = sorted({str(r["device"]) for r in rows})
        others = [r for r in rows if r["device"] != device]
        rows = [r for r in rows if r["device"] == device]
        if not rows:
            raise ConfigError(
                f"measured results {path}: no rows for device {device!r} (it has: "
                f"{', '.join(found) or 'no rows'})"
            )
        if others and left_out is not None:
            left_out.append(_left_out_line(others, "device", device))
    gpus = sorted({str(r["gpu_name"]) for r in rows if r.get("gpu_name")})
    if len(gpus) > 1:
        raise ConfigError(
            f"measured results {path}: rows of {len(gpus)} GPUs ({', '.join(gpus)})"
            + ("" if device is None else f" under device {device!r}")
            + ": a calibration fits one GPU; write each GPU's rows to a file of its own")
    if device is not None and gpus:
        from tuner.results.measured import measured_on

        if measured_on(device, gpus[0]) is False:  # (a results directory's rows: the same)
            raise ConfigError(
                f"measured results {path}: its rows of device {device!r} were measured on "
                f"{gpus[0]}, no {device}: the fit would be written as one; "
                f"{way_on(gpus)}")
    if algorithms is not None:
        wanted = _known_algorithms(algorithms, {str(r["algorithm"]) for r in rows},
                                   f"measured results {path}")
        rows = [r for r in rows if r["algorithm"] in wanted]
    if graphs is not None:
        wanted = set(graphs)
        unknown = sorted(wanted - {str(r["graph"]) for r in rows})
        if unknown:
            raise ConfigError(
                f"measured results {path}: no graph named {', '.join(unknown)} (it has: "
                f"{', '.join(sorted({str(r['graph']) for r in rows}))})")
        rows = [r for r in rows if r["graph"] in wanted]
    if max_edges is not None:
        if "m" not in table.column_names:  # every row had been fitted, the option ignored
            raise ConfigError(f"measured results {path}: --max-edges needs the graphs' edge "
                              "counts, and the file has no `m` column")
        rows = _at_most_edges(rows, max_edges, f"measured results {path}")
    return measured_rows(rows, f"measured results {path}")


def _at_most_edges(rows: list[dict[str, Any]], max_edges: int, where: str
                   ) -> list[dict[str, Any]]:
    """The rows of graphs of at most ``max_edges`` edges (or of unknown size); none is a
    ConfigError naming the smallest graph (not "no correct rows among the 0 selected")."""
    kept = [r for r in rows if r["m"] is None or r["m"] <= max_edges]
    if rows and not kept:
        smallest = min(rows, key=lambda r: r["m"])
        raise ConfigError(f"{where}: --max-edges {max_edges} leaves no graph (the smallest, "
                          f"{smallest['graph']}, has {smallest['m']:,} edges)")
    return kept


def _known_algorithms(algorithms: Iterable[str], present: set[str], where: str) -> set[str]:
    """``algorithms`` as a set; one the measurements do not hold is an error naming those they
    do, not a fit over fewer algorithms than asked."""
    wanted = set(algorithms)
    unknown = sorted(wanted - present)
    if unknown:
        raise ConfigError(f"{where}: no algorithm named {', '.join(unknown)} (it has: "
                          f"{', '.join(sorted(present)) or 'no rows'})")
    return wanted


def is_results_dir(path: str | Path) -> bool:
    """Whether ``calibrate``'s input is a results directory (else a measured Parquet file)."""
    text = str(path)
    return "://" in text or Path(text).is_dir()


def load_measured_results(
    results: str | Path,
    *,
    gpu: str | None = None,
    device: str | None = None,
    algorithms: Iterable[str] | None = None,
    graphs: Iterable[str] | None = None,
    max_edges: int | None = None,
    left_out: list[str] | None = None,
) -> list[Measured]:
    """The GPU measurements of a results directory (``tune --verify K`` writes them to
    ``RESULTS/measured/``), one per (graph, algorithm, config) as ``load_measured`` gives a
    file's: its measured time, on the study's graph and the source it was measured from.

    They are of one GPU: ``gpu`` (a GPU name as measured, e.g. ``NVIDIA H100 80GB HBM3``)
    picks one where several measured; ``device`` (a preset) drops those of GPUs that are not
    it (``measured_on``: an H200's times had been fitted as an H100's). Graph names are the
    results' own (``warpsweep best``'s); ``left_out`` gets a line saying what ``device``
    left out, where it left any. A directory without measured rows is a one-line ConfigError.
    """
    from simulator.device import DEVICES
    from tuner.results.query import connect
    from tuner.results.query import graph_name

    con = connect(results)
    rows = con.execute("""
        SELECT m.study_key, m.algorithm, m.graph_id, m.graph_spec, m.config, m.variant, m.correct,
               m.measured_us AS time_us, m.kernel_us, m.gpu_name, m.note,
               coalesce(m.source, (SELECT any_value(t.sources[1]) FROM trials t
                                   WHERE t.study_key = m.study_key AND len(t.sources) > 0))
                   AS source,
               g.name, g.m
        FROM measured m LEFT JOIN (SELECT graph_id, any_value(name) AS name, any_value(m) AS m
                                   FROM graphs GROUP BY graph_id) g USING (graph_id)
        WHERE m.measured_us IS NOT NULL OR m.correct IS NOT NULL""").fetchall()
    where = f"results {results}"
    if not rows:
        # rows that were not measured keep why (refused by the kernels, no GPU ...): say it
        # rather than "holds none" (probe MEASURED2)
        notes = con.execute("SELECT note, count(*) FROM measured WHERE note IS NOT NULL AND "
                            "note <> '' GROUP BY note ORDER BY 2 DESC, 1").fetchall()
        held = (f"measured/ holds {sum(n for _, n in notes)} row(s), none measured: "
                + "; ".join(f"{note} ({n})" for note, n in notes[:3])
                + ("; ..." if len(notes) > 3 else "")) if notes else "measured/ holds none"
        raise ConfigError(f"{where}: no measured rows ({held}): measure on a GPU first, e.g. "
                          "warpsweep tune ... --verify 5")
    names = ("study_key", "algorithm", "graph_id", "graph_spec", "config", "variant",
             "correct", "time_us", "kernel_us", "gpu_name", "note", "source", "name", "m")
    found = [dict(zip(names, r, strict=True)) for r in rows]
    lost = sorted({r["study_key"] for r in found if r["graph_spec"] is None})
    if lost:
        raise ConfigError(
            f"{where}: the measured rows of {len(lost)} stud{'y' if len(lost) == 1 else 'ies'} "
            f"with no trial rows ({', '.join(f'measured/{k}.parquet' for k in lost[:3])}"
            f"{' ...' if len(lost) > 3 else ''}; their graph and algorithm are unknown): "
            f"`warpsweep check {results} --repair` sets them aside")
    named_here = {r["gpu_name"] for r in found if r["gpu_name"]}
    # beside named GPUs, rows naming none are no GPU to pick (review CR31)
    pickable = (named_here if device is not None and named_here
                else {r["gpu_name"] or "unknown GPU" for r in found})
    if gpu is not None and gpu not in pickable:
        gpus = sorted(pickable)
        raise ConfigError(f"{where}: nothing measured on {gpu!r} (measured on: "
                          f"{', '.join(gpus)})")
    if device is not None:
        kept = _of_the_device(found, device, gpu, where)
        if len(kept) < len(found) and left_out is not None:
            ids = {id(r) for r in kept}
            left_out.append(_left_out_line([r for r in found if id(r) not in ids], "GPU",
                                            device))
        found = kept
    # rows naming no GPU are the device's where a device is named (as select train and best
    # read them): pooled with the GPU of the device's named rows where they name one,
    # counted as no GPU apart (review CR28: calibrate had called them a second GPU, and
    # --gpu dropped them unsaid); beside two named GPUs they are a group of their own, as
    # best shows them (review CR29)
    named_gpus = {r["gpu_name"] for r in found if r["gpu_name"]}
    pooled = device is not None and len(named_gpus) == 1
    # beside named GPUs, rows naming none are no GPU to pick (review CR30: offered, then
    # refused as "no h100")
    gpus = sorted({r["gpu_name"] or "unknown GPU" for r in found
                   if r["gpu_name"] or not (pooled or (device is not None and named_gpus))})
    if gpu is not None:
        unnamed_apart = sum(not r["gpu_name"] for r in found) if not pooled else 0
        found = [r for r in found if (r["gpu_name"] or "unknown GPU") == gpu
                 or (pooled and not r["gpu_name"])]
        if not found:
            raise ConfigError(f"{where}: nothing measured on {gpu!r} (measured on: "
                              f"{', '.join(gpus)})")
        if unnamed_apart and gpu != "unknown GPU" and left_out is not None:
            left_out.append(f"{unnamed_apart} measured row(s) name no GPU: left out (the "
                            "device's rows name several GPUs: nothing says which measured "
                            "them)")
    elif len(gpus) > 1:
        unnamed = sum(not r["gpu_name"] for r in found)
        besides = (f", and {unnamed} row(s) name none (left out beside several GPUs)"
                   if unnamed and "unknown GPU" not in gpus else "")
        raise ConfigError(f"{where}: measured on {len(gpus)} GPUs ({', '.join(gpus)})"
                          f"{besides}; name one with --gpu")
    unnamed = sum(not r["gpu_name"] for r in found)
    if unnamed and (device in DEVICES or pooled) and left_out is not None:
        # kept (nothing says they are another GPU's), and said to be: they had been fitted
        # as the device's without a word
        named = sorted({r["gpu_name"] for r in found if r["gpu_name"]})
        left_out.append(f"{unnamed} measured row(s) name no GPU: fitted as {device}'s"
                        + (f", with the {named[0]}'s" if named else "")
                        + " (nothing says another GPU measured them)")
    for r in found:
        r["graph"] = graph_name(r["graph_spec"], r["name"]) or r["graph_id"]
        r["variant"] = r["variant"] or "default"
        if r["algorithm"] in SOURCED and r["source"] is None:
            raise ConfigError(f"{where}: {r['graph']} {r['algorithm']} {r['config']!r}: the "
                              "source it was measured from is unknown")
    if algorithms is not None:
        wanted = _known_algorithms(algorithms, {str(r["algorithm"]) for r in found}, where)
        found = [r for r in found if r["algorithm"] in wanted]
    if graphs is not None:
        wanted = set(graphs)
        unknown = sorted(wanted - {r["graph"] for r in found})
        if unknown:
            raise ConfigError(f"{where}: no measured graph named {', '.join(unknown)} (it has: "
                              f"{', '.join(sorted({r['graph'] for r in found}))})")
        found = [r for r in found if r["graph"] in wanted]
    if max_edges is not None:
        found = _at_most_edges(found, max_edges, where)
    return measured_rows(_merge_studies(found), f"measured rows of {where}")


def _merge_studies(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per measurement where several studies measured it (a graph tuned twice, each
    ``--verify`` measuring the references again): the median of their times, correct only
    where every study's answer was, as ``bench/gpu/merge.py`` merges harness sessions (two
    copies had been refused as one measurement written twice, and the directory could not
    be calibrated)."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(_measurement(r), []).append(r)
    merged = []
    for copies in groups.values():
        if len(copies) == 1:
            merged.append(copies[0])
            continue
        row = dict(copies[0], correct=all(c["correct"] for c in copies))
        times = [c["time_us"] for c in copies if c["time_us"] is not None]
        kernels = [c["kernel_us"] for c in copies if c.get("kernel_us") is not None]
        row["time_us"] = statistics.median(times) if times else None
        if kernels and row["time_us"] is not None:
            row["kernel_us"] = min(statistics.median(kernels), row["time_us"])
        merged.append(row)
    return merged


def preset_of_gpu(gpu: str | None) -> str | None:
    """The preset a GPU (named as measured: ``NVIDIA A100-SXM4-80GB``) calibrates as
    (``a100``; ``measured_on``'s match, the calibrated name of a datasheet preset), None where
    no preset is of it."""
    from simulator.device import DEVICES
    from simulator.device import datasheet_of
    from simulator.device import gpu_name
    from tuner.results.measured import measured_on

    found = [gpu_name(datasheet_of(name)) for name in DEVICES if measured_on(name, gpu)]
    # the longest name where two match (a preset "h100" beside one "h100nvl")
    return max(found, key=len) if found else None


def _their_device(gpu: str) -> str:
    """What fits one GPU's rows: its preset, named, or (none is of it) a device file."""
    preset = preset_of_gpu(gpu)
    if preset is not None:
        return f"for {gpu} pass --device {preset} (its preset) or a device file of it"
    return (f"for {gpu}, which no preset is of, pass a device file of it with --device (e.g. "
            'base = "h100-datasheet" and its own figures)')


def way_on(gpus: Sequence[str]) -> str:
    """How to fit the rows of ``gpus`` (not the device's): each GPU's preset named where one
    is of it, else a device file, with --device (a preset takes only its own GPU's rows)."""
    return "; ".join(_their_device(g) for g in gpus)


def _left_out_line(rows: list[dict[str, Any]], by: str, device: str) -> str:
    """What a device's rows left out: how many, of which devices or GPUs, and what fits
    theirs (their GPU's preset by name; it had always said h200)."""
    key = "device" if by == "device" else "gpu_name"
    names = sorted({str(r[key] or "unknown GPU") for r in rows})
    line = (f"{len(rows)} measured row(s) of {by} {', '.join(names)} left out: --device "
            f"{device} fits its own rows")
    if by == "device":
        theirs = f"--device {names[0]}" if len(names) == 1 else "--device with its name"
        return f"{line} ({theirs} fits theirs)"
    presets = [preset_of_gpu(n) is not None for n in names]
    theirs = ("their GPU's preset" if all(presets) else
              "their GPU's preset or a device file" if any(presets) else
              "a device file of their GPU")
    return f"{line} ({theirs} fits theirs: {way_on(names)})"


def _of_the_device(found: list[dict[str, Any]], device: str, gpu: str | None,
                   where: str) -> list[dict[str, Any]]:
    """The rows measured on GPUs that may be ``device``; none is a ConfigError naming the
    GPUs measured and the way on."""
    from tuner.results.measured import measured_on

    if gpu is not None and measured_on(device, gpu) is False:
        raise ConfigError(f"{where}: --gpu {gpu!r} is no {device}: the fit would be written "
                          f"as one; {way_on([gpu])}")
    kept = [r for r in found if measured_on(device, r["gpu_name"]) is not False]
    if not kept:
        gpus = sorted({str(r["gpu_name"]) for r in found})
        raise ConfigError(f"{where}: measured on {', '.join(gpus)}, no {device}: "
                          f"{way_on(gpus)}")
    return kept


def impossible(r: Mapping[str, Any]) -> str | None:
    """What is impossible about a correct row's times (None: nothing): a time that is not a
    positive number, a kernel time that is not one or exceeds the whole time (of which it is
    a part), fewer than one launch."""
    time_us, kernel, launches = r["time_us"], r.get("kernel_us"), r.get("launches")
    if time_us is None or not math.isfinite(time_us) or time_us <= 0:
        return f"time_us {time_us}"
    if time_us > MAX_TIME_US:  # 1e308 had overflowed the fit's cycles: a scipy traceback
        return f"time_us {time_us:g}, past {MAX_TIME_US:g} us (30 years)"
    if kernel is not None and not (math.isfinite(kernel) and 0 <= kernel <= time_us):
        return (f"kernel_us {kernel} exceeds time_us {time_us}" if math.isfinite(kernel)
                and kernel > time_us else f"kernel_us {kernel}")
    if launches is not None and not (math.isfinite(launches) and launches >= 1):
        return f"launches {launches} (a run launches at least once)"
    for name in ("launches", "m", "iterations"):  # counts: 7.5 launches had read as 7
        count = r.get(name)
        if count is not None and not (math.isfinite(count) and count >= 0
                                      and count == int(count)):
            return f"{name} {count}"
    return None


def measured_rows(rows: Sequence[Mapping[str, Any]], what: str) -> list[Measured]:
    """One Measured per (graph, algorithm, config) of the rows (dicts with the columns of
    ``REQUIRED_COLUMNS``, optionally m, launches, iterations, kernel_us): the fastest correct
    variant. Correct rows with impossible times (NaN, zero or negative, kernel time beyond
    the whole) are refused, all of them named in one ConfigError, never silently dropped."""
    correct = [r for r in rows if r["correct"]]
    bad = [(r, why) for r in correct if (why := impossible(r)) is not None]
    if bad:
        shown = "; ".join(f"{r['graph']} {r['algorithm']} {r['config']!r} ({why})"
                          for r, why in bad[:5])
        more = f"; and {len(bad) - 5} more" if len(bad) > 5 else ""
        raise ConfigError(f"{what}: {len(bad)} correct row(s) with impossible times, refused: "
                          f"{shown}{more}")
    if not correct:
        raise ConfigError(f"{what}: no correct rows among the {len(rows)} selected")
    _check_rows(correct, what)
    _refuse_conflicting_copies(correct, what)
    best: dict[tuple[str, str, str], Mapping[str, Any]] = {}
    for r in correct:
        # one configuration however its knobs are written (order, defaults spelled out)
        key = (r["graph"], r["algorithm"], str(Strategy.parse(str(r["config"]))))
        if key not in best or r["time_us"] < best[key]["time_us"]:
            best[key] = r
    out = []
    # in the order of the rows' own texts (as before configurations written two ways merged)
    for r in sorted(best.values(), key=lambda r: (r["graph"], r["algorithm"], r["config"])):
        out.append(Measured(
            graph=str(r["graph"]), graph_spec=str(r["graph_spec"]),
            algorithm=str(r["algorithm"]), config=str(r["config"]),
            source=_optional(r["source"], int) if r["algorithm"] in SOURCED else None,
            time_us=float(r["time_us"]), variant=str(r["variant"]),
            m=_optional(r.get("m"), int), launches=_optional(r.get("launches"), int),
            iterations=_optional(r.get("iterations"), int),
            kernel_us=_optional(r.get("kernel_us"), float),
        ))
    return out


def _measurement(r: Mapping[str, Any]) -> tuple:
    """What one measurement is of: (graph, algorithm, configuration however its knobs are
    written, variant, source where the algorithm has one)."""
    return (r["graph"], r["algorithm"], str(Strategy.parse(str(r["config"]))), r["variant"],
            r["source"] if r["algorithm"] in SOURCED else None)


def _refuse_conflicting_copies(rows: Sequence[Mapping[str, Any]], what: str) -> None:
    """Refuse two rows of one (graph, algorithm, configuration, variant, source) with
    different times: copies of one measurement (two sessions appended, a row edited) of
    which the fit would silently keep the fastest; merge sessions first
    (``bench/gpu/merge.py``: their minimum or median)."""
    seen: dict[tuple, Mapping[str, Any]] = {}
    for r in rows:
        other = seen.setdefault(_measurement(r), r)
        if other is not r and other["time_us"] != r["time_us"]:
            raise ConfigError(
                f"{what}: {r['graph']} {r['algorithm']} {other['config']!r} variant "
                f"{r['variant']!r} is measured twice, {other['time_us']:g} and "
                f"{r['time_us']:g} us: one row per measurement (merge sessions first, e.g. "
                "bench/gpu/merge.py)")


def _check_rows(rows: Sequence[Mapping[str, Any]], what: str) -> None:
    """Refuse, naming the row, what the simulator cannot run (an unknown algorithm, a graph
    spec or configuration that does not parse, a source that is no vertex id) and a graph
    name given two specs (the fit would take two graphs for one, with one offset), before
    anything is simulated."""
    from simulator import ALGORITHMS
    from simulator.graph_spec import parse_spec

    specs: dict[str, str] = {}
    for r in rows:
        row = f"{what}: row {r['graph']} {r['algorithm']} {r['config']!r}"
        try:
            if r["algorithm"] not in ALGORITHMS:
                raise ConfigError(f"unknown algorithm {r['algorithm']!r} (one of "
                                  f"{', '.join(ALGORITHMS)})")
            parse_spec(str(r["graph_spec"]))
            strategy = Strategy.parse(str(r["config"]))
            if r["variant"] not in (None, "default"):  # one the kernels implement for it
                from tuner.measure.plan import plan_for

                plan_for(str(r["algorithm"]), strategy, str(r["variant"]))
            if r["algorithm"] in SOURCED and not _is_vertex_id(r["source"]):
                raise ConfigError(f"source {r['source']!r} is no vertex id")
        except WarpsweepError as exc:
            raise type(exc)(f"{row}: {exc}") from None
        spec = specs.setdefault(str(r["graph"]), str(r["graph_spec"]))
        if spec != str(r["graph_spec"]):
            raise ConfigError(f"{what}: graph {r['graph']} is given two specs, {spec!r} and "
                              f"{r['graph_spec']!r}: one name per graph (the fit takes a "
                              "graph's rows as one)")


def _is_vertex_id(value: Any) -> bool:
    """A whole number from 0 (Parquet may hold it as a float), not a bool."""
    return (isinstance(value, int | float | np.integer | np.floating)
            and not isinstance(value, bool) and float(value).is_integer() and value >= 0)


def _read_parquet(path: Path, what: str, columns: Sequence[str]):
    """The Parquet table at ``path``, with a clear error where it is missing, unreadable or
    lacks one of ``columns`` (``what`` names the file in the messages)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not path.is_file():
        raise ConfigError(f"{what} {path} do not exist")
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise ConfigError(f"{what} {path}: cannot read Parquet: {exc}") from None
    except UnicodeEncodeError:  # pyarrow takes paths as UTF-8 (review CR16: a traceback)
        raise ConfigError(f"{what} {str(path)!r}: a path that is not UTF-8 text, which "
                          "Parquet's reader cannot open; rename it") from None
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise ConfigError(f"{what} {path}: missing column(s) {', '.join(missing)} "
                          f"(needed: {', '.join(columns)})")
    kinds = _kinds()
    # "yes" in `correct`, "1" in `time_us`, "5" in an optional `launches`: refused, not
    # guessed at (an optional column had raised its TypeError, probe MEASURE)
    for name in [*columns, *(c for c in table.column_names if c in kinds and c not in columns)]:
        kind, wanted = table.schema.field(name).type, kinds.get(name)
        if name not in columns and table.column(name).null_count == table.num_rows:
            # an optional column left empty (of any type: pandas writes NaN as a double's
            # nulls) is no column (--max-edges: refused so)
            table = table.drop_columns([name])
            continue
        if wanted is not None and not wanted[0](kind):
            raise ConfigError(f"{what} {path}: column {name!r} is {kind}, expected {wanted[1]}")
    for name in NOT_NULL & set(columns):
        nulls = table.column(name).null_count
        if nulls:
            raise ConfigError(f"{what} {path}: column {name!r} has {nulls} null value(s)")
    return table


def _kinds() -> dict[str, tuple[Callable[[Any], bool], str]]:
    import pyarrow as pa

    def number(t: Any) -> bool:
        return pa.types.is_integer(t) or pa.types.is_floating(t)

    def text(t: Any) -> bool:
        return pa.types.is_string(t) or pa.types.is_large_string(t)

    return {
        **{c: (text, "text") for c in ("device", "graph", "graph_spec", "algorithm",
                                        "config", "variant")},
        "source": (pa.types.is_integer, "integers"), "launch": (pa.types.is_integer, "integers"),
        "time_us": (number, "numbers"), "kernel_us": (number, "numbers"),
        "correct": (pa.types.is_boolean, "true/false"),
        **{c: (number, "numbers") for c in ("m", "n", "launches", "iterations")},
    }


MAX_TIME_US = 1e15  # no measured run takes longer: a time past it is a unit or a typo
NOT_NULL = {"graph", "graph_spec", "algorithm", "config", "source"}


def _optional(value, kind):
    """An optional column's value converted, None when absent."""
    return None if value is None else kind(value)


def load_launch_times(paths: Iterable[str | Path], measured: Sequence[Measured]
                      ) -> list[np.ndarray | None]:
    """Each measured row's kernel time per launch (us, in launch order), in the row's own
    variant, from Parquet files of per-launch times (``bench/gpu/launch_times.py``: columns
    ``LAUNCH_COLUMNS``; of a file with an ``l1`` column, its ``cached`` rows); None for a row
    the files do not hold."""
    launches: dict[tuple[str, str, str, str], list[tuple[int, float]]] = {}
    seen: dict[tuple, Path] = {}
    for path in map(Path, paths):
        for r in _read_parquet(path, "per-launch times", LAUNCH_COLUMNS).to_pylist():
            if r.get("l1", "cached") != "cached":
                continue
            key = (r["graph"], r["algorithm"], r["config"], r["variant"])
            what = (f"per-launch times {path}: {r['graph']} {r['algorithm']} {r['config']!r} "
                    f"({r['variant']}) launch {r['launch']}")
            us = r["kernel_us"]
            if r["launch"] is None or r["launch"] < 0:
                raise ConfigError(f"{what}: a launch is numbered 0, 1, ... in its run")
            if us is None or not math.isfinite(us) or not 0 < us <= MAX_TIME_US:
                raise ConfigError(f"{what}: kernel_us {us}, which no kernel takes")
            if (*key, r["launch"]) in seen:  # sessions appended, or a file given twice: its
                # launches had interleaved and been paired with the wrong simulated ones
                raise ConfigError(f"{what} is given twice (also in "
                                  f"{seen[(*key, r['launch'])]}): merge sessions first, "
                                  "one row a launch")
            seen[(*key, r["launch"])] = path
            launches.setdefault(key, []).append((int(r["launch"]), float(us)))
    for key, rows in launches.items():
        numbers = sorted(n for n, _ in rows)
        if numbers != list(range(len(numbers))):
            missing = sorted(set(range(numbers[-1] + 1)) - set(numbers))[:3]
            raise ConfigError(f"per-launch times: {key[0]} {key[1]} {key[2]!r} ({key[3]}) "
                              f"lacks launch {', '.join(map(str, missing))} of its "
                              f"{numbers[-1] + 1}: its kernel times would be paired with "
                              "other launches")
    out: list[np.ndarray | None] = []
    for m in measured:
        rows = sorted(launches.get((m.graph, m.algorithm, m.config, m.variant), ()))
        out.append(np.array([us for _, us in rows]) if rows else None)
    if all(times is None for times in out):
        raise ConfigError("the per-launch times hold none of the measured (graph, algorithm, "
                          "config, variant) rows")
    return out
