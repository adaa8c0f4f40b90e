"""The selector's model file: plain JSON holding the training data and the chosen setting.

No pickled objects: the file keeps the training graphs (ids, specs, features), the candidate
configurations, the matrix of their simulated times, the scaler's means and scales and the
setting cross-validation chose; loading refits the scikit-learn model on those arrays (the fit
is deterministic) and checks that the scaler comes out as stored. A file of another format or
selector schema version is refused with a ConfigError naming both versions.
"""

from __future__ import annotations

import json
from datetime import UTC
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from simulator.errors import ConfigError
from simulator.errors import WarpsweepError
from simulator.strategy import Strategy
from simulator.temp_files import rename_target
from simulator.temp_files import written_whole
from simulator.yamldoc import loads_json
from tuner.env import git_commit
from tuner.env import warpsweep_version
from tuner.results.configs import config_key
from tuner.results.location import Location
from tuner.selection.selector import LOG_FEATURES
from tuner.selection.selector import GraphInfo
from tuner.selection.selector import Hyper
from tuner.selection.selector import Selector
from tuner.selection.selector import TimeMatrix
from tuner.selection.selector import Trained
from tuner.selection.selector import describe_config
from tuner.selection.selector import feature_vector
from tuner.selection.selector import fit

FORMAT = "warpsweep-selector"
SELECTOR_SCHEMA_VERSION = 1


def model_json(trained: Trained, results: str | None = None) -> dict[str, Any]:
    """The model file's content."""
    sel = trained.selector
    m = sel.matrix
    names = list(sel.feature_names)
    return {
        "format": FORMAT,
        "schema_version": SELECTOR_SCHEMA_VERSION,
        "warpsweep_version": warpsweep_version(),
        "git_commit": git_commit(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "results": results,
        "algorithm": m.algorithm,
        "device": m.device,
        "device_digest": m.device_digest,  # its fields: another file of its name is refused
        "seed": sel.seed,
        "setting": sel.hyper.describe(),
        "hyperparameters": sel.hyper.to_json(),
        "feature_names": names,
        "log_features": [n for n in names if n in LOG_FEATURES],
        "scaler": {"mean": sel.scaler.mean_.tolist(), "scale": sel.scaler.scale_.tolist()},
        "graphs": [{"graph_id": g.graph_id, "graph_spec": g.graph_spec, "name": g.name,
                    "features": g.features,
                    "x": feature_vector(g.features, names).tolist()} for g in m.graphs],
        "candidates": m.configs,
        # the policy files the candidates name, by content: another file under the same
        # path is not the policy the model learnt (review SELECT2)
        "policy_digests": candidate_policy_digests(m.configs),
        "candidate_labels": [describe_config(c) for c in m.configs],
        "time_us": m.times.tolist(),
        "cv": [{"setting": s.hyper.describe(), **s.hyper.to_json(),
                "geomean_regret": s.geomean_regret} for s in trained.scores],
    }


def candidate_policy_digests(configs: list[dict[str, Any]]) -> dict[str, str]:
    """The content digest of each policy file the configurations name, by its path as
    written (``missing`` where it names no file)."""
    from simulator.policy import policy_digest

    out: dict[str, str] = {}
    for config in configs:
        path = config.get("policy")
        if isinstance(path, str) and path not in out:
            try:
                out[path] = policy_digest(path)
            except (OSError, WarpsweepError):
                out[path] = "missing"
    return out


def check_model_path(path: str | Path, results: str | Path | None = None) -> Path:
    """The model file's path to write; ConfigError unless it ends in ``.json``, its directory
    exists, and it lies outside the results directory ``results`` (a model written there
    would stand in for the results' own files, their manifest among them)."""
    path = Path(path)
    if path.suffix != ".json":
        raise ConfigError(f"--model {str(path)!r}: the model file is JSON; give a .json path")
    rename_target(path)  # a link leading back to itself: one line
    if path.is_dir():
        raise ConfigError(f"--model {str(path)!r} is a directory; give a file name")
    if not path.absolute().parent.is_dir():
        what = "is a file" if path.absolute().parent.exists() else "does not exist"
        raise ConfigError(f"--model {str(path)!r}: directory {str(path.parent)!r} {what}")
    if results is not None:
        location = Location.of(results)
        if location.local and path.absolute().resolve().is_relative_to(
                Path(location.root).resolve()):
            raise ConfigError(f"--model {str(path)!r} is inside the results directory "
                              f"{str(results)!r}; write it elsewhere")
    return path


def save_model(trained: Trained, path: str | Path, results: str | None = None) -> Path:
    """Write the model file (a ``.json`` path), atomically."""
    path = check_model_path(path, results)
    _refuse_overwriting_another_file(path)
    text = json.dumps(model_json(trained, results), indent=1, allow_nan=False)
    try:
        with written_whole(path) as tmp:
            tmp.write_text(text + "\n")
    except OSError as exc:
        raise ConfigError(f"--model {str(path)!r}: cannot write it "
                          f"({exc.strerror or exc})") from None
    return path


def _refuse_overwriting_another_file(path: Path) -> None:
    """A file at ``path`` is replaced only if it is a selector model (of any version): an
    unrelated JSON file named by mistake had been overwritten without a word."""
    if not path.is_file():
        return
    try:
        with path.open("rb") as fh:
            head = fh.read(4096)
    except OSError:
        return  # the write names what is wrong
    if f'"format": "{FORMAT}"'.encode() not in head:
        raise ConfigError(f"--model {str(path)!r} exists and is not a warpsweep selector "
                          "model: refusing to overwrite it (name another file)")


def load_model(path: str | Path) -> tuple[Selector, dict[str, Any]]:
    """The fitted selector of a model file and the file's content; ConfigError for a file
    that is not a selector model of this schema version."""
    path = Path(path)
    if path.exists() and not path.is_file() and not path.is_dir():
        # /dev/zero, a FIFO: reading it would never end (or fill the memory)
        raise ConfigError(f"model file {str(path)!r} is not a regular file")
    try:
        doc = loads_json(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"model file {str(path)!r} does not exist") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"model file {str(path)!r} is not readable JSON ({exc})") from None
    except RecursionError:  # nested thousands deep: no model (a traceback, review CR15)
        raise ConfigError(f"model file {str(path)!r} is nested too deeply") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise ConfigError(f"{str(path)!r} is not a warpsweep selector model (format {got!r}, "
                          f"expected {FORMAT!r})")
    version = doc.get("schema_version")
    if type(version) is not int or version != SELECTOR_SCHEMA_VERSION:  # (true == 1)
        raise ConfigError(
            f"model file {str(path)!r} has selector schema version {version!r} (written by "
            f"warpsweep {doc.get('warpsweep_version', '?')}); this warpsweep "
            f"{warpsweep_version()} reads selector schema version {SELECTOR_SCHEMA_VERSION}: "
            "train it again with `warpsweep select train`"
        )
    try:
        selector = _rebuild(doc)
    except (KeyError, TypeError, ValueError) as exc:
        reason = " ".join(str(exc).split())  # scikit-learn's run over several lines
        raise ConfigError(f"model file {str(path)!r} is damaged ({type(exc).__name__}: "
                          f"{reason[:200]})") from None
    return selector, doc


def check_candidates(candidates: Any) -> list[dict[str, Any]]:
    """The candidate configurations, each a valid Strategy (ValueError naming the first that
    is not: an edited or foreign file must not recommend what cannot run)."""
    if not isinstance(candidates, list) or not candidates:
        raise ValueError("candidates must be a non-empty list of configurations")
    configs = []
    for i, config in enumerate(candidates):
        if not isinstance(config, dict):
            raise ValueError(f"candidate {i} is {type(config).__name__}, not a configuration")
        try:
            Strategy.from_params({k: v for k, v in config.items() if v is not None})
        except WarpsweepError as exc:
            raise ValueError(f"candidate {i} ({describe_config(config)}) is not a valid "
                             f"strategy: {exc}") from None
        configs.append(dict(config))
    return configs


def _graph(i: int, g: Any) -> GraphInfo:
    """Training graph ``i`` of the file: its id, spec and name text, its features numbers."""
    if not isinstance(g, dict) or not isinstance(g.get("features"), dict):
        raise ValueError(f"graph {i} is not an object with a `features` object")
    text = {"graph_id": g["graph_id"], "graph_spec": g["graph_spec"], "name": g.get("name", "")}
    bad = [k for k, v in text.items() if not isinstance(v, str)]
    if bad:
        raise ValueError(f"graph {i}'s {bad[0]} is {text[bad[0]]!r}, not text")
    return GraphInfo(text["graph_id"], text["graph_spec"],
                     {k: float(v) for k, v in g["features"].items()}, text["name"])


def _rebuild(doc: dict[str, Any]) -> Selector:
    for name in ("algorithm", "device"):  # (a list had been a traceback: review SELECT2)
        if not isinstance(doc[name], str) or not doc[name]:
            raise ValueError(f"{name} is {doc[name]!r}, not a name")
    seed = doc.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ValueError(f"seed is {seed!r}, not an integer")
    configs = check_candidates(doc["candidates"])
    keys = [config_key(c) for c in configs]
    times = np.asarray(doc["time_us"], dtype=np.float64)
    graphs = [_graph(i, g) for i, g in enumerate(doc["graphs"])]
    if times.shape != (len(graphs), len(configs)) or not np.all(times > 0):
        raise ValueError(f"time_us is {times.shape}, expected {len(graphs)} x {len(configs)} "
                         "positive times")
    matrix = TimeMatrix(
        doc["algorithm"], doc["device"], graphs, configs, times,
        [dict(zip(keys, row.tolist(), strict=True)) for row in times],
        dict(zip(keys, configs, strict=True)),
    )
    hyper = Hyper.from_json(doc["hyperparameters"])
    if hyper.model == "knn" and not 0 <= hyper.k <= len(graphs):
        raise ValueError(f"knn's k is {hyper.k}, not 0 (every graph) to the {len(graphs)} "
                         "graphs stored")
    selector = fit(matrix, hyper, seed)
    if list(selector.feature_names) != list(doc["feature_names"]):
        raise ValueError("feature_names do not match the setting's feature subset")
    stored = doc["scaler"]
    for name, got in (("mean", selector.scaler.mean_), ("scale", selector.scaler.scale_)):
        want = np.asarray(stored[name], dtype=np.float64)
        if want.shape != got.shape or not np.allclose(want, got, rtol=1e-9, atol=1e-12):
            raise ValueError(f"the scaler's {name} refitted from the stored graphs differs from "
                             "the stored one")
    return selector
