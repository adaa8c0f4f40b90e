"""Checking studies before anything runs, and running them: names, spaces, graphs, samplers.

Every bad input found here raises ConfigError (or GraphError) with a one-line reason, so the
CLI exits with status 2 before Ray starts or a results directory is touched.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna

from search_spaces.loader import SearchSpace
from search_spaces.loader import load_space
from simulator.device import Device
from simulator.errors import ConfigError
from simulator.errors import GraphError
from simulator.errors import WarpsweepError
from tuner.results.location import home_path
from tuner.results.store import ResultStore
from tuner.results.store import check_manifest
from tuner.seeds import MAX_SEED
from tuner.tuning.dispatch import make_runner
from tuner.tuning.executor import make_executor
from tuner.tuning.progress import Progress
from tuner.tuning.runner import RunStats
from tuner.tuning.samplers import sampler_info
from tuner.tuning.spec import Objective
from tuner.tuning.spec import StudySpec
from tuner.tuning.spec import StudySummary
from tuner.tuning.spec import planned_runs
from tuner.tuning.spec import reference_configs


def check_algorithm(name: str) -> str:
    """An algorithm the simulator knows."""
    from simulator import ALGORITHMS

    if name not in ALGORITHMS:
        raise ConfigError(f"unknown algorithm {name!r}; choose one of {', '.join(ALGORITHMS)}")
    return name


DEVICE_FILE_SUFFIXES = (".toml", ".yaml", ".yml")


def device_model(name: str) -> Device:
    """The device a preset's name or a device file stands for, read here on the driver: the
    workers get its fields, so a cluster's workers need not hold the file, and one with an
    older warpsweep (where a preset's name meant other fields) simulates the same device."""
    from simulator import DEVICES
    from simulator.device import load_device_file

    if name in DEVICES:
        return DEVICES[name]
    if not name.endswith(DEVICE_FILE_SUFFIXES):
        raise ConfigError(f"unknown device {name!r}; choose one of {', '.join(DEVICES)} or a "
                          "device file (.toml/.yaml, e.g. what `warpsweep calibrate` writes)")
    path = home_path(name, "--device")
    if not path.is_file():
        raise ConfigError(f"device file {name!r} not found")
    return load_device_file(path)


def check_device(name: str) -> str:
    """A device preset name or a device file (checked against the Device fields)."""
    device_model(name)
    return name


def check_objective(objective: Objective) -> Objective:
    """Every objective metric is one the simulator reports."""
    from simulator import METRICS

    for metric in objective.metrics:
        if metric not in METRICS:
            raise ConfigError(
                f"unknown objective metric {metric!r}; choose from {', '.join(METRICS)}"
            )
    return objective


def canonical_graph(spec: str) -> tuple[str, str]:
    """The canonical form of a graph spec and the graph's content digest (GraphError if it
    cannot be parsed or its file read)."""
    from simulator.graph_cache import content_digest
    from simulator.graph_spec import parse_spec

    parsed = parse_spec(spec)
    text = parsed.canonical()
    if parsed.is_file and isinstance(spec, os.PathLike):
        try:  # a study names its graph by this text, on every worker and on a resume
            again = parse_spec(text).params["path"]
        except GraphError:
            again = None
        if again != parsed.params["path"]:
            raise GraphError(
                f"graph {os.fspath(spec)!r}: a study names its graph by a spec's text, and a "
                "spec's path ends at its first comma and loses blanks at its ends: rename "
                "the file or link it under a plain name (load_graph and simulate read it)")
    return text, content_digest(parsed)


def check_weighted(algorithm: str, spec: str) -> None:
    """SSSP on a graph spec that asks for no weights is refused before anything runs (a sweep
    would otherwise meet it only when that study's graph is loaded)."""
    from simulator.graph_spec import parse_spec

    if algorithm == "sssp" and parse_spec(spec).options.weights == "none":
        raise ConfigError(
            f"{spec}: SSSP needs edge weights; add `weights=random` to the spec (e.g. "
            f"'{spec},weights=random') or, for a file with weights, `weights=file`")


def check_spec(spec: StudySpec) -> StudySpec:
    """A study spec with every name checked and the graph spec canonical."""
    where = f"{spec.origin}: " if spec.origin else ""
    try:
        check_algorithm(spec.algorithm)
        sampler_info(spec.sampler)
        check_objective(spec.objective)
        if spec.trials is not None and spec.trials < 1:
            raise ConfigError(f"trials must be >= 1, got {spec.trials}")
        if spec.sources < 1:
            raise ConfigError(f"sources must be >= 1, got {spec.sources}")
        if not 0 <= spec.seed <= MAX_SEED:  # numpy and Optuna take 32-bit seeds
            raise ConfigError(f"seed must be from 0 to {MAX_SEED}, got {spec.seed}")
        model = spec.device_model or device_model(spec.device)
    except WarpsweepError as exc:
        raise type(exc)(f"{where}{exc}") from None
    where = f"{spec.graph_origin or spec.origin}: " if spec.origin else ""
    try:  # the graph's refusals name its entry's line
        graph, content = canonical_graph(spec.graph)
        check_weighted(spec.algorithm, spec.graph)
    except WarpsweepError as exc:
        raise type(exc)(f"{where}{exc}") from None
    # results name the device by its name; its fields travel along
    return dataclasses.replace(spec, graph=graph, graph_content=content, device=model.name,
                               device_model=model, device_given=spec.device_given or spec.device)


def filter_device(device: str | None, results: str,
                  stored: dict[str, set[str | None]] | None = None) -> str | None:
    """The device name a reader keeps rows of for ``--device``: a device file's ``name``,
    refused where the results' rows of that name were simulated with other fields (they had
    been shown as this file's, exit 0; `select` and `tune` refuse the same). ``stored``: the
    rows' digests by device name where the caller read them (else ``results``' are read)."""
    from simulator.device import DEVICE_FILE_SUFFIXES
    from simulator.device import device_digest
    from simulator.device import device_name
    from simulator.device import load_device_file
    from simulator.errors import ConfigError
    from tuner.tuning.spec import LEGACY_PRESET_DIGESTS

    if device is None:
        return None
    name = device_name(device)
    if not device.endswith(DEVICE_FILE_SUFFIXES):
        return name
    wanted = device_digest(load_device_file(device))
    # a row written before rows recorded it counts as its preset's fields then, as for tune
    stored = stored_device_digests(results) if stored is None else stored
    digests = {d if d is not None else LEGACY_PRESET_DIGESTS.get(name)
               for d in stored.get(name, ())}
    other = sorted(d for d in digests if d is not None and d != wanted)
    if other:
        raise ConfigError(f"--device {device} has other fields than the {name} of the results' "
                          f"rows (device digest {', '.join(other)}, this one's {wanted}): "
                          f"name the device by its name, --device {name}, to read them")
    return name


def stored_device_digests(results: str | Path) -> dict[str, set[str | None]]:
    """Per device name in ``results``, the digests of the device fields its rows were
    simulated with (None: a row written before rows recorded it)."""
    from tuner.results.location import Location
    from tuner.results.schema import TRIALS
    from tuner.results.store import ParquetDirBackend

    location = Location.of(results)
    if location.local and not location.local_path().is_dir():
        return {}
    dataset = ParquetDirBackend(location).dataset(TRIALS)
    if dataset is None:
        return {}
    columns = [c for c in ("device", "device_digest") if c in dataset.schema.names]
    table = dataset.to_table(columns=columns).group_by(columns).aggregate([])
    digests = (table.column("device_digest").to_pylist() if "device_digest" in columns
               else [None] * table.num_rows)
    found: dict[str, set[str | None]] = {}
    for name, digest in zip(table.column("device").to_pylist(), digests, strict=True):
        found.setdefault(name, set()).add(digest)
    return found


def check_row_models(results: str | Path, keys: list[str]) -> None:
    """Refuse, before any study runs, one whose rows record no cost model (an older
    warpsweep's), whatever its journal records: a resume by the code before this check
    had stamped such a journal with its own model, and the study then resumed with exit 0,
    two models' trials ranked as one (review CR24)."""
    import pyarrow.compute as pc

    from tuner.results.location import Location
    from tuner.results.schema import TRIALS
    from tuner.results.store import ConflictError
    from tuner.results.store import ParquetDirBackend
    from tuner.tuning.study import provenance
    from tuner.tuning.study import unrecorded_model_error

    location = Location.of(results)
    if location.local and not location.local_path().is_dir():
        return
    dataset = ParquetDirBackend(location).dataset(TRIALS)
    if dataset is None or "study_key" not in dataset.schema.names:
        return
    wanted = pc.field("study_key").isin(keys)
    if "model_digest" in dataset.schema.names:
        # a study whose rows hold two cost models (a directory merged by hand across a
        # change to the simulator): the fingerprints leave the model out, so nothing else
        # tells them apart, and the resume had gone on with exit 0 (probe R27)
        models = (dataset.to_table(columns=["study_key", "model_digest"],
                                   filter=wanted & pc.field("model_digest").is_valid())
                  .group_by(["study_key", "model_digest"]).aggregate([]))
        for key in sorted(set(models.column("study_key").to_pylist())):
            found = sorted(r["model_digest"] for r in models.to_pylist()
                           if r["study_key"] == key)
            if len(found) > 1:
                # without its journal nothing records which model is the study's: the
                # repair then keeps the rows written first (review CR27)
                repair = ("which keeps the rows of its journal's model"
                          if key in location.journals() else
                          "which, with the study's journal gone, keeps the rows written "
                          "first; to keep another run's, move the other files out of "
                          "trials/ first")
                raise ConflictError(
                    f"study {key}: its rows in {results} were computed under "
                    f"{len(found)} cost models ({', '.join(found)}): rows copied from "
                    f"another run; run `warpsweep check {results} --repair`, {repair}")
        wanted = wanted & pc.field("model_digest").is_null()
    columns = [c for c in ("study_key", "warpsweep_version", "git_commit")
               if c in dataset.schema.names]
    rows = dataset.to_table(columns=columns, filter=wanted).group_by(columns).aggregate([])
    if rows.num_rows == 0:
        return
    first = rows.column("study_key")[0].as_py()
    mine = rows.filter(pc.equal(rows.column("study_key"), first)).to_pylist()
    raise unrecorded_model_error(first, provenance((r.get("warpsweep_version") for r in mine),
                                                   (r.get("git_commit") for r in mine)))


def check_device_fields_match(results: str | Path, specs: list[StudySpec]) -> None:
    """Refuse (ConfigError) a study whose device name already names rows in ``results`` that
    were simulated with other device fields: best, effect, report and select group rows by the
    device's name, so a name keeps one meaning within a results directory. A row written
    before rows recorded the digest counts as its preset's fields at the time
    (``LEGACY_PRESET_DIGESTS``: ``h100`` then meant what ``h100-datasheet`` is now); such rows
    of a device file cannot be told apart and are not checked."""
    from simulator.device import DATASHEETS
    from tuner.tuning.spec import LEGACY_PRESET_DIGESTS

    named: dict[str, set[str]] = {}
    for spec in specs:  # the run's own studies first: two of them side by side pass the rows
        named.setdefault(spec.device, set()).add(spec.device_digest)
    for device, digests in sorted(named.items()):
        if len(digests) > 1:
            raise ConfigError(
                f"this run names {len(digests)} devices {device!r} with other fields (digests "
                f"{', '.join(sorted(digests))}): best, effect, report and select group rows by "
                "the device's name; give each device file a name of its own (`name = ...`)")
    stored = stored_device_digests(results)
    for spec in specs:
        wanted = spec.device_digest
        for digest in stored.get(spec.device, ()):
            old = digest if digest is not None else LEGACY_PRESET_DIGESTS.get(spec.device)
            if old is None or old == wanted:
                continue
            hint = ""
            if digest is None and spec.device in DATASHEETS:
                hint = (f"; they were written before `{spec.device}` meant the calibrated "
                        f"device, and are the model now named {DATASHEETS[spec.device]}")
            raise ConfigError(
                f"results directory {str(results)!r} holds {spec.device} rows simulated with "
                f"other device fields (digest {old}, this run's {wanted}){hint}: tune into "
                "another --results directory, or give the device another name")


def check_resumes(results: str | Path, specs: list[StudySpec], keys: list[str]) -> None:
    """Refuse, before any study runs, one whose journal ran with another sampler or seed
    than this run asks for: refused only when it opened, the studies before it had run
    (a sweep file's seed edited left a directory of both seeds). A journal in a bucket is
    checked as each study opens it."""
    from tuner.results.location import Location
    from tuner.tuning.study import journal_spec
    from tuner.tuning.study import refuse_another_sampler_or_seed

    loc = Location.of(results)
    if not loc.local:
        return
    for spec, key in zip(specs, keys, strict=True):
        ran = journal_spec(loc.journal_dir() / f"{key}.journal")
        if ran:
            refuse_another_sampler_or_seed(key, spec, ran)


def load_spaces(specs: list[StudySpec],
                base: Path | None = None) -> dict[tuple[str, str], SearchSpace]:
    """Load and validate (against the simulator) every space the studies name, each narrowed
    to the knobs its study's algorithm has; keyed by ``StudySpec.space_ref``."""
    loaded: dict[str, SearchSpace] = {}
    spaces: dict[tuple[str, str], SearchSpace] = {}
    for spec in specs:
        if spec.space_ref in spaces:
            continue
        try:
            if spec.space not in loaded:
                loaded[spec.space] = load_space(spec.space)
                loaded[spec.space].validate()
            spaces[spec.space_ref] = loaded[spec.space].for_algorithm(
                applicable_to(spec.algorithm), spec.algorithm)
            check_policies(spaces[spec.space_ref], spec.algorithm,
                           spec.device_model or spec.device)
        except WarpsweepError as exc:
            where = f"{spec.origin}: " if spec.origin else ""
            raise ConfigError(f"{where}{exc}") from None
    return spaces


def _planned_runs_of_entry(spec: StudySpec, space: SearchSpace) -> int:
    """``planned_runs``, a refusal (a space the grid sampler cannot list) naming the sweep
    entry that asked for that sampler, not only the space file (probe SPACE)."""
    try:
        return planned_runs(spec, space)
    except ConfigError as exc:
        where = f"{spec.origin}: " if spec.origin else ""
        raise ConfigError(f"{where}sampler {spec.sampler}: {exc}") from None


def check_policies(space: SearchSpace, algorithm: str,
                   device: str | Device | None = None) -> None:
    """Every policy file the space can set loads, is for ``algorithm`` and has the splits its
    ``policy_tN`` knobs scale: checked before the run, as `simulate` checks it (a missing file,
    another algorithm's policy, a split the tree lacks had failed every trial, exit 0)."""
    from simulator import Strategy
    from simulator.policy import POLICY_ALGORITHMS
    from simulator.policy import THRESHOLD_KNOBS
    from simulator.policy import strategy_policy
    from tuner.tuning.spec import policy_paths

    paths = policy_paths(space)
    if paths and algorithm not in POLICY_ALGORITHMS:
        raise ConfigError(f"space {space.name!r} sets a policy, and a policy runs "
                          f"{', '.join(POLICY_ALGORITHMS)}, not {algorithm}")
    scaled = {k: 1.0 for k in THRESHOLD_KNOBS if k in space.knobs}
    model = device if not isinstance(device, str) else None
    if paths and isinstance(device, str):  # a preset's name (a device file's model is given)
        from simulator.device import get_device

        model = get_device(device)
    for path in paths:
        try:
            strategy_policy(Strategy.from_params({"policy": path, **scaled}), algorithm, model)
        except ConfigError as exc:
            named = str(exc) if path in str(exc) else f"policy file {path!r}: {exc}"
            raise ConfigError(f"space {space.name!r}: {named}") from None


def applicable_to(algorithm: str) -> Callable[[dict[str, Any]], bool]:
    """Whether a configuration is one the simulator runs for ``algorithm``."""
    from simulator import Strategy
    from simulator.driver import check_applicable

    def accepts(config: dict[str, Any]) -> bool:
        try:
            check_applicable(Strategy.from_params(config), algorithm)
        except WarpsweepError:
            return False
        return True

    return accepts


@dataclass
class RunResult:
    """Summaries of the studies run, and the run's statistics."""

    summaries: list[StudySummary]
    stats: RunStats
    executor: str


def run_studies(specs: list[StudySpec], spaces: dict[tuple[str, str], SearchSpace],
                results: str | Path,
                workers: int | None = None, address: str | None = None,
                timeout: float | None = None, progress: bool | str = False,
                backend: Any = None, flush_every_s: float = 2.0,
                desc: str = "tune", verbose: bool = False,
                deterministic: bool = False) -> RunResult:
    """Run checked studies on a fresh executor, results under ``results``.

    ``deterministic``: with ``workers`` N > 0, results are told to the samplers in the order
    their trials were asked, N in flight, so a seed gives the same trials on every run
    (``tuner.tuning.executor.OrderedExecutor``).

    ``progress``: ``bar``, ``log`` (a line every few seconds), ``off``, or True/False for
    bar/off; ``verbose`` adds a line per finished run.
    """
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    if timeout is not None and not timeout > 0:  # NaN too: no clock ever reaches it
        raise ConfigError(f"--timeout must be > 0 seconds, got {timeout}")
    keys = [s.key(spaces[s.space_ref]) for s in specs]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        a, b = [s for s, k in zip(specs, keys, strict=True) if k == dup][:2]
        apart = [f"{name} {x} and {y}" for name, x, y in (
            ("graphs", a.graph, b.graph), ("spaces", a.space, b.space),
            ("algorithms", a.algorithm, b.algorithm),
            ("devices", a.device_given or a.device, b.device_given or b.device))
            if x != y]
        settings = [name for name in ("sampler", "seed", "trials", "sources", "references")
                    if getattr(a, name) != getattr(b, name)]
        why = (f", as {'; '.join(apart)} (two names of one)" if apart else
               f": the entries differ only in {', '.join(settings)}, which "
               f"{'is' if len(settings) == 1 else 'are'} not part of a study's identity (a "
               "study takes one; for two, two sweeps with their own --results)"
               if settings else "")
        where = ", ".join(dict.fromkeys(o for o in (a.origin, b.origin) if o))
        raise ConfigError(f"{where + ': ' if where else ''}the same study is listed twice: "
                          f"{dup}{why}")
    check_manifest(results, create=False)
    check_device_fields_match(results, specs)
    check_row_models(results, keys)
    check_resumes(results, specs, keys)
    total = sum(_planned_runs_of_entry(s, spaces[s.space_ref]) for s in specs)
    executor = make_executor(workers, address, deterministic)
    try:
        store = ResultStore.open(results, flush_every_s=flush_every_s)
    except BaseException:
        executor.close()
        raise
    mode = {True: "bar", False: "off"}.get(progress, progress)
    references = sum(len(reference_configs()) for s in specs if s.references)
    bar = Progress(total, mode, desc=desc, verbose=verbose, references=references)
    try:
        runner = make_runner(executor, store, results, backend=backend, progress=bar,
                             timeout=timeout)
        summaries = runner.run(specs, spaces)
        return RunResult(summaries, runner.stats, executor.description)
    finally:
        bar.close()
        executor.close()
