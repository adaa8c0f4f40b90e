"""``warpsweep graph info SPEC [--json]`` and ``warpsweep graph convert SPEC OUT.npz``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from simulator.errors import ConfigError
from simulator.features import graph_features
from simulator.graph_spec import parse_spec
from simulator.load import load_graph
from simulator.loaders import save_npz
from simulator.sizes import max_memory
from simulator.temp_files import rename_target
from tuner.cli.args import add_graph_loading
from tuner.cli.args import add_json
from tuner.cli.args import path_arg


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``graph`` verb and its ``info`` and ``convert`` subcommands."""
    graph = subparsers.add_parser(
        "graph",
        help="inspect or convert input graphs",
        description="Load a graph from a spec (rmat:scale=14, file:PATH, ...) and inspect it.",
        epilog="examples:\n  warpsweep graph info rmat:scale=14 --json\n"
               "  warpsweep graph convert file:../shared/graphs/USA-road-NY.gr.gz ny.npz",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = graph.add_subparsers(dest="graph_command", required=True, metavar="COMMAND")
    info = sub.add_parser(
        "info", help="print a graph's features",
        description="Print a graph's size and the degree, diameter and locality features "
                    "the selector learns from.",
        epilog="examples:\n  warpsweep graph info rmat:scale=14,seed=1\n"
               "  warpsweep graph info file:../shared/graphs/email-Enron.txt.gz --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    info.add_argument("spec", help="graph spec, e.g. rmat:scale=14 or file:road.gr.gz")
    add_json(info)
    add_graph_loading(info)
    info.set_defaults(run=run_info)
    convert = sub.add_parser(
        "convert", help="write a graph as a CSR .npz file",
        description="Write a graph as a CSR .npz file, loadable as file:OUT.npz.",
        epilog="examples:\n"
               "  warpsweep graph convert file:../shared/graphs/web-NotreDame.txt.gz,order=bfs "
               "notredame.npz\n"
               "  warpsweep graph convert rmat:scale=20,ef=16,seed=1 rmat20.npz",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    convert.add_argument("spec", help="graph spec, e.g. file:web-NotreDame.txt.gz,order=bfs")
    convert.add_argument("out", type=path_arg, help="output .npz path (loadable as file:OUT.npz)")
    convert.add_argument("--force", action="store_true",
                         help="replace OUT where it exists (refused otherwise)")
    add_graph_loading(convert)
    convert.set_defaults(run=run_convert)


def _format(value: float | int) -> str:
    """A feature value for the human table."""
    if isinstance(value, bool):  # (an int to Python: `directed` had read 1)
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.6g}"


def run_info(args: argparse.Namespace) -> int:
    """Load the graph and print its features (a table, or JSON with --json)."""
    with max_memory(args.max_memory):
        return _info(args)


def _info(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    graph = load_graph(args.spec, cache=not args.no_cache)
    loaded = time.perf_counter() - start
    feats = graph_features(graph)
    feats["directed"] = bool(feats["directed"])  # (a 0/1 feature for the selector)
    if args.json:
        json.dump({"name": graph.name, "spec": graph.spec, **feats}, sys.stdout)
        sys.stdout.write("\n")
        return 0
    rows = [("name", graph.name), ("spec", graph.spec)]
    rows += [(key, _format(value)) for key, value in feats.items()]
    rows.append(("load time", f"{loaded:.2f} s"))
    width = max(len(key) for key, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    return 0


def run_convert(args: argparse.Namespace) -> int:
    """Load the graph and write it as a CSR .npz file."""
    _check_output(args.spec, args.out, args.force)
    with max_memory(args.max_memory):
        graph = load_graph(args.spec, cache=not args.no_cache)
    path = _save(graph, args.out)
    options = (["directed=true"] if graph.directed else []) + (
        ["weights=file"] if graph.weights is not None else [])  # what reading it back needs
    print(f"wrote {path}: {graph.name}, n={graph.n:,}, m={graph.m:,}, spec {graph.spec}"
          + (f" (read it as file:{path},{','.join(options)})" if options else ""))
    return 0


def _check_output(spec: str, out_path: Path, force: bool = False) -> None:
    """Refuse, before the graph is loaded, an output that is not a FILE.npz, is a directory,
    lies under a file, is the input file itself (not left to overwrite its source), or
    exists unless ``force`` (a user's own .npz had been replaced without a word)."""
    out = str(out_path)
    if not out.lower().endswith(".npz") or out_path.name.lower() == ".npz":
        # loaders pick the format by extension: OUT.txt would hold a zip no reader takes
        raise ConfigError(f"graph convert: output {out!r} must be a FILE.npz "
                          "(read back as file:FILE.npz)")
    target = rename_target(out_path)  # a link leading back to itself: one line
    if out_path.is_dir():
        raise ConfigError(f"graph convert: output {out!r} is a directory")
    if target.exists() and not target.is_file():  # a pipe or a device: renamed over, lost
        raise ConfigError(f"graph convert: output {out!r} is no regular file")
    named = out.strip()
    if named.lower().startswith("path="):
        named = named[5:].strip()
    if "," in out or named != out or out.startswith("~"):  # file:OUT would name another
        raise ConfigError(f"graph convert: output {out!r} cannot be named by a graph spec "
                          "(file:PATH,option=...: a path ends at its first comma, loses "
                          "blanks at its ends and a leading 'path=', and reads a leading ~ "
                          "as home); choose another name")
    parent = next(p for p in out_path.absolute().parents if p.exists())
    if not parent.is_dir():  # mkdir would say 'File exists'
        raise ConfigError(f"graph convert: cannot write {out!r}: {str(parent)!r} is not a "
                          "directory")
    parsed = parse_spec(spec)
    if parsed.is_file and out_path.exists():
        source = parsed.path
        if source.exists() and source.samefile(out_path):
            raise ConfigError(f"graph convert: output {out!r} is the input file itself; "
                              "write to another path")
    if (out_path.exists() or out_path.is_symlink()) and not force:
        raise ConfigError(f"graph convert: output {out!r} exists; pass --force to replace "
                          "it, or write to another path")


def _save(graph, out: Path) -> Path:
    """``save_npz``, its OS errors (a parent that is a file, no permission, a full disk) as
    one line naming OUT, not the temporary file's errno."""
    try:
        return save_npz(graph, out)
    except OSError as exc:
        raise ConfigError(f"graph convert: cannot write {str(out)!r}: "
                          f"{exc.strerror or exc}") from None
