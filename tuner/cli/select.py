"""``warpsweep select train|evaluate|recommend|adaptive``: the adaptive selector's verbs."""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
from collections.abc import Callable
from typing import Any

from tuner.cli.args import OneValue
from tuner.cli.args import add_filters
from tuner.cli.args import add_json
from tuner.cli.args import add_results
from tuner.cli.args import add_seed
from tuner.cli.args import path_arg
from tuner.results.damaged import scanning

EXAMPLES = """examples:
  warpsweep sweep sweeps/selector.yaml --workers 1 --results selector-results
  warpsweep select train --results selector-results --algo bfs --model bfs-h100.json
  warpsweep select evaluate --results selector-results --algo bfs
  warpsweep select recommend --graph rmat:scale=13,seed=7 --model bfs-h100.json --verify
  warpsweep select adaptive --results selector-results
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``select`` verb and its subcommands."""
    from simulator.functional import ALGORITHMS

    select = subparsers.add_parser(
        "select", help="learn graph features -> best configuration, evaluate it, recommend",
        description="The adaptive selector: learn, from a results directory, which "
                    "configuration is fastest for a graph with given features; evaluate it "
                    "leave-one-graph-out against fixed rules; recommend a configuration for "
                    "a new graph.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = select.add_subparsers(dest="select_command", required=True, metavar="COMMAND")

    train = sub.add_parser(
        "train", help="fit a selector on a results directory and write the model file",
        description="Build the graphs x configurations matrix of simulated times (the "
                    "configurations evaluated on every graph), choose the model (k nearest "
                    "neighbours or a regression tree, feature subset, k / depth) by "
                    "leave-one-graph-out cross-validation, fit it on every graph and write it "
                    "as JSON.",
        epilog="examples:\n  warpsweep select train --results selector-results --algo bfs "
               "--model bfs-h100.json\n  warpsweep select train --algo sssp --device c2050 "
               "--model sssp-c2050.json --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _group_args(train)
    train.add_argument("--model", required=True, metavar="FILE.json", type=path_arg,
                       help="model file to write (JSON)")
    add_json(train, "print a JSON summary")
    train.set_defaults(run=_scanned(run_train))

    ev = sub.add_parser(
        "evaluate", help="leave-one-graph-out regret of the selector against fixed rules",
        description="For each graph held out in turn: train the selector (its setting chosen "
                    "by cross-validation on the other graphs only), pick a configuration, and "
                    "print its simulated time over the best found for that graph (regret), "
                    "beside the fixed rules: always thread, always vwarp W=32, W = next power "
                    "of two of the average degree, and the best single configuration on the "
                    "training graphs; then the geometric means.",
        epilog="examples:\n  warpsweep select evaluate --results selector-results\n"
               "  warpsweep select evaluate --algo bfs --device h100 --json > regret.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _group_args(ev, every=True)
    add_json(ev)
    ev.set_defaults(run=_scanned(run_evaluate))

    rec = sub.add_parser(
        "recommend", help="the configuration a model picks for a graph",
        description="Load the graph, compute its features and print the configuration the "
                    "model picks, the training graphs behind the choice (nearest neighbours, "
                    "or the tree's leaf and its decision path), the predicted time over the "
                    "graph's best and a rough absolute time (the configuration's log time "
                    "fitted on log edges and log diameter over the training graphs); --verify "
                    "simulates it, and thread for scale.",
        epilog="examples:\n  warpsweep select recommend --graph rmat:scale=13,seed=7 "
               "--algo bfs --model bfs-h100.json\n  warpsweep select recommend --graph "
               "file:../shared/graphs/email-Enron.txt.gz --model bfs-h100.json --verify",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rec.add_argument("--graph", required=True, metavar="SPEC", action=OneValue,
                     help="graph spec, e.g. rmat:scale=13,seed=7 or file:PATH")
    rec.add_argument("--algo", default=None, choices=ALGORITHMS,
                     help="algorithm (default: the model's)")
    rec.add_argument("--device", default=None,
                     help="device: a preset's name or a device file, the model's (default: "
                          "the model's; --verify simulates with a file's fields)")
    rec.add_argument("--model", required=True, metavar="FILE.json", type=path_arg,
                     help="model file")
    rec.add_argument("--verify", action="store_true",
                     help="simulate the configuration (and thread, for scale) on the graph")
    add_json(rec)
    rec.set_defaults(run=run_recommend)

    ad = sub.add_parser(
        "adaptive", help="the per-iteration adaptive policy against the best constant one",
        description="Per graph: the best mapping=adaptive configuration's time against the "
                    "best of the constant (non-adaptive) configurations complete on every "
                    "graph of the group (the same ones for each graph; the output says how "
                    "many, and which graphs narrowed them), their ratio, and where adaptive "
                    "wins (graphs, and the one feature split that best separates them).",
        epilog="examples:\n  warpsweep select adaptive --results selector-results\n"
               "  warpsweep select adaptive --algo bfs --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_results(ad)
    add_filters(ad, graph=None, algo="only this algorithm (default: every one)",
                device="only this device, a name or a device file (default: every one)")
    add_json(ad)
    ad.set_defaults(run=_scanned(run_adaptive))


def _group_args(p: argparse.ArgumentParser, every: bool = False) -> None:
    """The results and the (algorithm, device) group: the only one (train), or with ``every``
    each group in turn (evaluate)."""
    add_results(p)
    default = "every one" if every else "the only one in the results"
    add_filters(p, graph=None, algo=f"algorithm (default: {default})",
                device=f"device, a name or a device file (default: {default})")
    add_seed(p, "model seed (default 0)")


def _dump(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=1, default=str, allow_nan=False)
    print()


def _scanned(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A verb whose reading of ``--results`` names a damaged file in one line."""

    @functools.wraps(run)
    def wrapped(args: argparse.Namespace) -> int:
        with scanning(args.results):
            return run(args)

    return wrapped


def _num(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _label(name: str, spec: str, width: int = 34) -> str:
    """A graph's name for a table (its shortened spec when it has none)."""
    return name[:width] if name else _short(spec, width)


def _labels(graphs: list[tuple[str, str, str]], width: int = 34) -> dict[str, str]:
    """Each (graph id, name, spec)'s label, by id: ``_label``, or the id where two graphs
    would read alike (two files of one name had made two identical rows: review SELECT2)."""
    plain = {gid: _label(name, spec, width) for gid, name, spec in graphs}
    seen: dict[str, int] = {}
    for label in plain.values():
        seen[label] = seen.get(label, 0) + 1
    return {gid: (label if seen[label] == 1 else gid[:width]) for gid, label in plain.items()}


def _short(spec: str, width: int = 34) -> str:
    text = spec.removeprefix("file:").split("/")[-1]
    return text if len(text) <= width else text[: width - 1] + "~"


def _device_name(device: str | None) -> str | None:
    """A --device value as the name the results record (a device file: its ``name``)."""
    from simulator.device import device_name

    return device_name(device) if device is not None else None


def run_train(args: argparse.Namespace) -> int:
    """Fit the selector on one group and write the model file."""
    from tuner.results.location import home_of

    args.model = home_of(args.model, "--model")  # ~ as --results reads it (review CR25)
    from simulator.errors import ConfigError
    from simulator.temp_files import beside
    from tuner.cli.args import check_writable
    from tuner.selection import selector as sel
    from tuner.selection.selector_model import check_model_path
    from tuner.selection.selector_model import save_model

    model = check_model_path(args.model, args.results)  # before the training, not after
    check_writable(beside(model), f"--model {str(model)!r}: cannot write there")
    found = sel.pick_groups(args.results, args.algo, _device_name(args.device))
    if len(found) > 1:
        raise ConfigError("the results hold several groups (" + ", ".join(
            f"{a}/{d}" for a, d in found) + "); choose one with --algo and --device")
    matrix = sel.load_matrix(args.results, *found[0])
    if args.device is not None:
        _refuse_other_fields(args.device, matrix.device, matrix.device_digest,
                             f"the results' {matrix.algorithm} rows")
    trained = sel.train(matrix, args.seed)
    path = save_model(trained, args.model, str(args.results))
    s = trained.selector
    if args.json:
        _dump({"model": str(path), "algorithm": matrix.algorithm, "device": matrix.device,
               "graphs": len(matrix.graphs), "candidates": len(matrix.configs),
               "setting": s.hyper.describe(), "cv_geomean_regret": trained.scores[0]
               .geomean_regret,
               "cv_geomean_regret_is": "in-sample: the least over the settings tried "
                                       "(select evaluate gives the held-out figure)",
               "not_candidates": _configs_not_on_every_graph(matrix),
               "not_candidates_lacking_on": [{"graph": g, "lacks": n}
                                             for g, n in _graphs_lacking(matrix)],
               "dropped": matrix.dropped,
               "measured_graphs": sum(matrix.measured), "measured_gpu": matrix.measured_gpu,
               "gpus_left_out": matrix.other_gpus})
        return 0
    print(f"{matrix.algorithm} on {matrix.device}: {len(matrix.graphs)} graphs, "
          f"{len(matrix.configs)} candidate configurations (evaluated on every graph)")
    if any(matrix.measured):
        print(f"  measured on the GPU (tune --verify, {matrix.measured_gpu}): "
              f"{sum(matrix.measured)} of {len(matrix.graphs)} graphs, whose measured times "
              "stand for the simulated ones (their best is the measured best)")
    if matrix.other_gpus:
        print(f"  not used: measurements on {', '.join(matrix.other_gpus)}, not "
              f"{matrix.device}'s GPU")
    for gid, why in matrix.dropped.items():
        print(f"  left out {gid}: {why}")
    unused = _configs_not_on_every_graph(matrix)
    if unused:  # one graph's failed row had dropped a configuration everywhere, unsaid
        print(f"  not candidates: {len(unused)} configuration(s) not complete on every graph "
              "(failed or not tried on some: "
              f"{sel.few([f'{g} lacks {n}' for g, n in _graphs_lacking(matrix)])}), "
              f"e.g. {'; '.join(unused[:3])}")
    print("cross-validation (leave one graph out) of each setting, the best first; the chosen "
          "setting's figure is the least of these, so in-sample (select evaluate gives the "
          "held-out one, the setting chosen inside each fold):")
    for score in trained.scores[:5]:
        print(f"  {score.geomean_regret:7.4f}  {score.hyper.describe()}")
    print(f"chosen: {s.hyper.describe()}; model written to {path}")
    return 0


def _configs_not_on_every_graph(matrix) -> list[str]:
    """The configurations some graph has a complete row of but not every kept one: left out
    of the candidates (``TimeMatrix.configs``), as text."""
    from tuner.results.configs import config_key

    candidates = {config_key(c) for c in matrix.configs}
    seen = {k for times in matrix.all_times for k in times}
    return sorted(" ".join(f"{k}={v}" for k, v in matrix.all_configs[k].items())
                  for k in seen - candidates)


def _graphs_lacking(matrix) -> list[tuple[str, int]]:
    """The graphs lacking a complete row of some configuration another graph has, and how
    many they lack, most first: those that narrowed the candidates."""
    from tuner.selection.selector import lacking

    return lacking(matrix, {k for times in matrix.all_times for k in times})


def run_evaluate(args: argparse.Namespace) -> int:
    """Leave-one-graph-out regret table per group."""
    from simulator.errors import ConfigError
    from tuner.selection import selector as sel
    from tuner.tuning.plan import filter_device

    device = filter_device(args.device, args.results)  # another file's rows of its name refused
    sel.pick_groups(args.results, args.algo, device)  # a clear error when none match
    evaluations, left = sel.evaluate_groups(args.results, args.algo, device, args.seed)
    lines = [f"left out {a} on {d}: {why}" for a, d, why in left]
    if not evaluations:
        raise ConfigError(f"no group in {str(args.results)!r} has {sel.MIN_GRAPHS} graphs with "
                          "features and a configuration evaluated on every graph ("
                          + "; ".join(lines) + ")")
    if args.json:
        _dump({"evaluations": [evaluation_json(e) for e in evaluations],
               "left_out_groups": [{"algorithm": a, "device": d, "why": why}
                                   for a, d, why in left]})
        return 0
    for i, ev in enumerate(evaluations):
        if i:
            print()
        print(evaluation_table(ev))
    if lines:
        print()
        print("\n".join(lines))
    return 0


def evaluation_json(ev: Any) -> dict[str, Any]:
    """An Evaluation as JSON."""
    from tuner.selection.selector import describe_config

    return {
        "algorithm": ev.algorithm, "device": ev.device, "policies": ev.policies,
        "candidates": ev.candidates, "dropped": ev.dropped,
        "geomean": {p: _num(v) for p, v in ev.geomean.items()},
        "rows": [{"graph_id": r.graph_id, "graph_spec": r.graph_spec, "graph_name": r.graph_name,
                  "best_time_us": r.best_time_us, "best_config": r.best_config,
                  "best_label": describe_config(r.best_config),
                  "regrets": {p: _num(v) for p, v in r.regrets.items()},
                  "selected": r.selected,
                  "selected_labels": {p: describe_config(c) for p, c in r.selected.items()},
                  "selector_setting": r.selector_setting,
                  "selector_predicted_time_us": _num(r.predicted_time_us),
                  "measured": r.measured} for r in ev.rows],
        "measured_gpu": ev.measured_gpu,
    }


def evaluation_table(ev: Any) -> str:
    """An Evaluation as a text table: per graph, best time and each policy's regret."""
    from tuner.selection.selector import describe_config

    heads = ["selector", "thread", "w=32", "w=pow2", "best1"]
    lines = [f"{ev.algorithm} on {ev.device}: leave-one-graph-out over {len(ev.rows)} graphs, "
             f"{ev.candidates} candidate configurations; regret = time / best found",
             f"{'graph':<34} {'best us':>10} " + " ".join(f"{h:>8}" for h in heads)
             + "  selector's pick"]
    label = _labels([(r.graph_id, r.graph_name, r.graph_spec) for r in ev.rows])
    for r in ev.rows:
        vals = " ".join(_cell(r.regrets[p]) for p in ev.policies)
        lines.append(f"{label[r.graph_id]:<34} {r.best_time_us:>10.1f} {vals}  "
                     f"{describe_config(r.selected[ev.policies[0]])}")
    lines.append(f"{'geometric mean':<34} {'':>10} "
                 + " ".join(_cell(ev.geomean[p]) for p in ev.policies))
    lines.append("columns: " + "; ".join(f"{h} = {p}" for h, p in zip(heads, ev.policies,
                                                                     strict=True)))
    for h, p in zip(heads, ev.policies, strict=True):  # a "-" cell: not in that column's mean
        missing = [r for r in ev.rows if r.regrets[p] is None or math.isnan(r.regrets[p])]
        if missing and len(missing) < len(ev.rows):
            lines.append(f"{h}'s mean is over {len(ev.rows) - len(missing)} of {len(ev.rows)} "
                         f"graphs: its configuration has no complete time on "
                         f"{', '.join(label[r.graph_id] for r in missing)}")
    measured = [r for r in ev.rows if r.measured]
    if measured:  # best us and the regrets mix GPU times and simulated ones (probe MEASURED2)
        lines.append(f"measured on the GPU (tune --verify, {ev.measured_gpu}): "
                     f"{len(measured)} of {len(ev.rows)} graphs, whose times are the measured "
                     "ones where measured"
                     + (f" ({', '.join(label[r.graph_id] for r in measured)})"
                        if len(measured) < len(ev.rows) else ""))
    for gid, why in ev.dropped.items():
        lines.append(f"left out {gid}: {why}")
    return "\n".join(lines)


def _cell(v: float) -> str:
    return f"{'-':>8}" if v is None or math.isnan(v) else f"{v:>8.3f}"


def _refuse_other_fields(device: str, name: str, digest: str | None, what: str,
                         named: str = "--device") -> None:
    """Refuse a --device whose fields are not those ``what`` was simulated with (``digest``,
    of the device named ``name``; None: not recorded): a device file reusing a preset's
    name had passed for it, as `tune` refuses it."""
    import dataclasses

    from simulator.device import device_digest
    from simulator.device import get_device
    from simulator.errors import ConfigError
    from tuner.tuning.spec import LEGACY_PRESET_DIGESTS

    if digest is None:  # written before it was recorded: its preset's fields then, as tune
        # reads such rows (a model of the datasheet-era h100 had passed for today's, probe
        # COMPAT)
        digest = LEGACY_PRESET_DIGESTS.get(name)
        if digest is None:
            return
    given = device_digest(dataclasses.replace(get_device(device), name=name))
    if given != digest:
        raise ConfigError(f"{named} {device} has other fields than the {name} of {what} "
                          f"(device digest {digest}, this one's {given}); train on results "
                          "simulated with this device")


def _same_fields(device: str, name: str) -> bool:
    """Whether the ``device`` given (a preset or a device file) has the fields of the
    device ``name`` (a preset), whatever the name each goes by."""
    import dataclasses

    from simulator.device import DEVICES
    from simulator.device import device_digest
    from simulator.device import get_device

    if name not in DEVICES:
        return False
    given = dataclasses.replace(get_device(device), name=name)
    return device_digest(given) == device_digest(DEVICES[name])


def run_recommend(args: argparse.Namespace) -> int:
    """Load a graph, pick its configuration with the model, optionally simulate it."""
    from tuner.results.location import home_of

    args.model = home_of(args.model, "--model")  # ~ as --results reads it (review CR25)
    from simulator import ALGORITHMS
    from simulator import functional_run
    from simulator import get_device
    from simulator import load_graph
    from simulator import simulate
    from simulator.device import DEVICES
    from simulator.errors import ConfigError
    from simulator.features import graph_features
    from tuner.selection.selector import describe_config
    from tuner.selection.selector_model import load_model
    from tuner.tuning.plan import check_weighted

    selector, doc = load_model(args.model)
    algo, device = doc["algorithm"], doc["device"]
    if algo not in ALGORITHMS:
        raise ConfigError(f"model file {str(args.model)!r} names the algorithm {algo!r}, which "
                          f"warpsweep does not run ({', '.join(ALGORITHMS)}): damaged?")
    given_device = _device_name(args.device)
    if given_device not in (None, device) and _same_fields(args.device, device):
        given_device = device  # a device file of the model's device's fields (h100.toml, h100)
    for flag, given, have in (("--algo", args.algo, algo), ("--device", given_device, device)):
        if given is not None and given != have:
            raise ConfigError(f"{flag} {given}: the model {str(args.model)!r} was trained for "
                              f"{algo} on {device}; train one for {given}")
    if args.device is not None:
        _refuse_other_fields(args.device, device, doc.get("device_digest"),
                             f"the model {str(args.model)!r}")
    elif device in DEVICES:  # by its name, a preset whose fields are not the model's (another
        # version's, or a name edited in the file) had passed without --device
        _refuse_other_fields(device, device, doc.get("device_digest"),
                             f"the model {str(args.model)!r}", named="the preset")
    check_weighted(algo, args.graph)  # an SSSP model's pick for a graph SSSP cannot run
    graph = load_graph(args.graph)
    feats = {k: float(v) for k, v in graph_features(graph).items()}
    choice = selector.choose(feats)
    predicted = selector.predicted_time_us(choice, feats)
    coverage = selector.coverage(feats)
    out: dict[str, Any] = {
        "graph": graph.spec or args.graph, "algorithm": algo, "device": device,
        "n": graph.n, "m": graph.m, "model": str(args.model),
        "setting": selector.hyper.describe(), "config": choice.config,
        "config_label": describe_config(choice.config),
        "predicted_relative": choice.predicted_relative, "predicted_time_us": predicted,
        "predicted_time_basis": selector.time_basis,
        "neighbours": [{"graph_id": n.graph_id, "graph_spec": n.graph_spec,
                        "name": selector.matrix.graphs[n.index].name,
                        "distance": n.distance, "weight": n.weight,
                        "time_us": float(selector.matrix.times[n.index, choice.index]),
                        "best_time_us": float(selector.matrix.times[n.index].min())}
                       for n in choice.neighbours],
        "path": choice.path,
        "extrapolated": coverage.extrapolated, "nearest_distance": coverage.nearest,
        "training_spread": coverage.spread, "features_beyond_training": coverage.beyond,
        # its features are a training graph's: the model saw its times (probe ADP)
        "in_training": bool(coverage.nearest == 0.0),
    }
    changed = _policy_changed(choice.config, doc)
    if changed:
        out["policy_changed"] = changed
    if args.verify:
        if changed:  # its time would stand for another policy's (review SELECT2)
            raise ConfigError(f"--verify: {changed}")
        # a device file given is simulated with its fields; else the model's device by name
        if args.device is None and device not in DEVICES:
            raise ConfigError(
                f"--verify: the model was trained on device {device!r}, which is no preset "
                "(a device file's name): give that file with --device FILE to simulate with "
                "its fields")
        model = get_device(args.device if args.device is not None else device)
        fr = functional_run(graph, algo)
        real = simulate(graph, algo, choice.config, model, functional=fr).time_us
        thread = simulate(graph, algo, {"mapping": "thread"}, model, functional=fr).time_us
        out["verify"] = {"time_us": real, "thread_time_us": thread,
                         "prediction_error": predicted / real - 1.0,
                         "speedup_over_thread": thread / real}
    if args.json:
        _dump(out)
        return 0
    print(recommend_text(out, len(selector.matrix.graphs)))
    return 0


def _policy_changed(config: dict[str, Any], doc: dict[str, Any]) -> str | None:
    """Why the policy file the pick names is not the one the model learnt (None: it is,
    or the model recorded none)."""
    from tuner.selection.selector_model import candidate_policy_digests

    path = config.get("policy")
    learnt = (doc.get("policy_digests") or {}).get(path) if isinstance(path, str) else None
    if learnt is None:
        return None
    now = candidate_policy_digests([config])[path]
    if now == learnt:
        return None
    return (f"the pick's policy file {path!r} is not the one the model learnt (content "
            f"{learnt}, here {now}): run from the directory the model was trained in, or "
            "train it again")


def recommend_text(out: dict[str, Any], n_train: int) -> str:
    """The recommendation as text."""
    cfg = ",".join(f"{k}={v}" for k, v in out["config"].items())
    lines = [f"graph       {out['graph']} (n={out['n']:,}, m={out['m']:,})",
             f"model       {out['model']}: {out['algorithm']} on {out['device']}, "
             f"{out['setting']}, {n_train} training graphs",
             f"config      {out['config_label']}",
             f"            (warpsweep simulate --config {cfg})"]
    if out["path"]:
        lines.append("rule path   " + " -> ".join(out["path"]))
        lines.append("leaf graphs (nearest first):")
    else:
        lines.append("nearest training graphs:")
    ids = [n.get("graph_id") or f"#{i}" for i, n in enumerate(out["neighbours"])]
    label = _labels([(gid, n["name"], n["graph_spec"])
                     for gid, n in zip(ids, out["neighbours"], strict=True)], 28)
    for gid, n in zip(ids, out["neighbours"], strict=True):
        name = label[gid]
        lines.append(f"  {name:<28} distance {n['distance']:6.3f}  "
                     f"weight {n['weight']:.2f}  this config {n['time_us']:.1f} us "
                     f"(its best {n['best_time_us']:.1f})")
    lines.append(f"predicted   {out['predicted_relative']:.3f}x this graph's best; "
                 f"~{out['predicted_time_us']:.1f} us (rough: {out['predicted_time_basis']})")
    if out.get("policy_changed"):
        lines.append(f"caution     {out['policy_changed']}")
    if out.get("in_training"):
        lines.append("            (this graph's features are a training graph's: the model "
                     "was fitted to its times, so the prediction is in-sample)")
    if len(out["neighbours"]) == 1 and not out["path"]:  # 1.000x by construction (probe SE)
        lines.append("            (one nearest graph, whose best is the pick: the 1x says "
                     "nothing of the error)")
    if out["extrapolated"]:
        why = []
        if out["nearest_distance"] > out["training_spread"]:
            why.append(f"the nearest training graph is {out['nearest_distance']:.3g} away, "
                       f"farther than any training graph from its nearest "
                       f"({out['training_spread']:.3g})")
        if out["features_beyond_training"]:
            why.append(f"{', '.join(out['features_beyond_training'])} beyond the training "
                       "graphs' range")
        lines.append(f"caution     outside the training graphs ({'; '.join(why)}): the pick "
                     "and its prediction are extrapolated; train on graphs like this one")
    if "verify" in out:
        v = out["verify"]
        lines.append(f"verified    simulated {v['time_us']:.1f} us (prediction "
                     f"{100 * v['prediction_error']:+.1f}%); thread {v['thread_time_us']:.1f} "
                     f"us, {v['speedup_over_thread']:.2f}x slower than this")
    return "\n".join(lines)


def run_adaptive(args: argparse.Namespace) -> int:
    """Adaptive (per-iteration W) against the best constant configuration, per graph."""
    from simulator.errors import ConfigError
    from tuner.selection.selector import compare_adaptive
    from tuner.selection.selector import describe_config
    from tuner.selection.selector import few
    from tuner.tuning.plan import filter_device

    comparisons = compare_adaptive(args.results, args.algo,
                                   filter_device(args.device, args.results))
    if not any(c.rows for c in comparisons):  # as evaluate refuses a group it cannot judge
        left = [f"{gid}: {why}" for c in comparisons for gid, why in c.left_out.items()]
        raise ConfigError(f"no graph in {str(args.results)!r} has both a complete adaptive "
                          "and a complete constant configuration to compare"
                          + (f" (left out {few(left)})" if left else ""))
    if args.json:
        _dump({"comparisons": [{
            "algorithm": c.algorithm, "device": c.device, "geomean_ratio": _num(c.geomean_ratio),
            "where": c.where, "constants": c.constants, "most_constants": c.most_constants,
            "constants_narrowed_by": c.narrowed_by, "left_out": c.left_out,
            "rows": [{"graph_id": r.graph_id, "graph_spec": r.graph_spec,
                      "adaptive_time_us": r.adaptive_time_us,
                      "adaptive_config": r.adaptive_config,
                      "constant_time_us": r.constant_time_us,
                      "constant_config": r.constant_config, "ratio": r.ratio,
                      "adaptive_wins": r.wins} for r in c.rows]} for c in comparisons]})
        return 0
    for i, c in enumerate(comparisons):
        if i:
            print()
        print(f"{c.algorithm} on {c.device}: best adaptive against best constant configuration "
              "(ratio < 1: adaptive wins)")
        print(f"{'graph':<34} {'adaptive us':>11} {'constant us':>11} {'ratio':>7}  "
              "best adaptive / best constant")
        label = _labels([(r.graph_id, r.graph_name, r.graph_spec) for r in c.rows])
        for r in c.rows:
            print(f"{label[r.graph_id]:<34} {r.adaptive_time_us:>11.1f} "
                  f"{r.constant_time_us:>11.1f} {r.ratio:>7.3f}  "
                  f"{describe_config(r.adaptive_config)} / {describe_config(r.constant_config)}")
        if c.rows:
            print(f"{'geometric mean':<34} {'':>11} {'':>11} {c.geomean_ratio:>7.3f}")
        print(c.constants_line())
        for gid, why in c.left_out.items():
            print(f"left out {gid}: {why}")
        print(c.where)
    return 0
