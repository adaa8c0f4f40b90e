"""The options several verbs share, each added by one function so that its flag, default and
help read the same wherever it appears (``--results``, ``--json``, ``--seed``, the
``--graph``/``--algo``/``--device`` filters, ``--max-memory``/``--no-cache``, ``--config``),
and the argument types they use. A verb calls them where the option belongs in its ``--help``.

Imports only argparse at load (the tuner's constants when called), so that ``python -m
tuner.cli.measure`` stays without Optuna, Ray and DuckDB."""

from __future__ import annotations

import argparse
from pathlib import Path

JSON_HELP = "print one JSON object"
GRAPH_FILTER_HELP = "only studies of this graph (its spec, graph id or name)"
ALGO_FILTER_HELP = "only this algorithm"
DEVICE_FILTER_HELP = "only this device: a preset's name or a device file (its name)"
MAX_MEMORY_HELP = ("refuse a graph or simulation estimated to need more memory than SIZE (8G, "
                   "512M; default: what the machine has available; env WARPSWEEP_MAX_MEMORY)")


def seed_arg(text: str) -> int:
    """An argparse type: a seed from 0 to ``MAX_SEED``."""
    from tuner.seeds import MAX_SEED

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer from 0 to {MAX_SEED}, got "
                                         f"{text!r}") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be from 0 to {MAX_SEED}, got {value}")
    return value


def positive_arg(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def add_results(p: argparse.ArgumentParser) -> None:
    """``--results DIR``: the results directory a verb reads or writes."""
    from tuner.api import DEFAULT_RESULTS

    p.add_argument("--results", default=DEFAULT_RESULTS, metavar="DIR",
                   help=f"results directory (default {DEFAULT_RESULTS})")


def add_config(p: argparse.ArgumentParser, help: str) -> None:
    """``--config K=V,K=V``, repeatable: the repeats combine (as ``--set``'s do) into one list,
    where a second ``--config`` had silently replaced the first; a knob set twice in them is
    refused (``Strategy.parse``). ``config_text`` joins them."""
    p.add_argument("--config", action="append", default=[], metavar="K=V,K=V", help=help,
                   type=_config_arg)


def _config_arg(text: str) -> str:
    """A ``--config`` value: knobs, not nothing (``--config "$CFG"`` with CFG unset had run
    the default strategy without a word)."""
    if not text.strip(" ,"):
        raise argparse.ArgumentTypeError(
            f"{text!r} sets no knob: give K=V,K=V (e.g. mapping=vwarp,w=8), or leave "
            "--config out for the default strategy")
    return text


def path_arg(text: str) -> Path:
    """A file or directory option's value: not empty (``--cache "$DIR"`` unset had been the
    working directory, and ``--model ''`` was echoed back as '.')."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the path is empty; give a file or directory")
    return Path(text)


def location_arg(text: str) -> str:
    """A results directory or file given as a positional argument: not empty (it had been
    answered as "--results is empty", an option those verbs do not have)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the path is empty; give a file, directory or URI")
    return text


def knob_arg(text: str) -> str:
    """A ``--set`` value: a knob, not nothing (``--set "$KNOB"`` unset, as ``--config``)."""
    if not text.strip(" ,"):
        raise argparse.ArgumentTypeError(
            f"{text!r} sets no knob: give KNOB=VALUE (e.g. w=8), or leave --set out")
    return text


def config_text(*parts: list[str]) -> str:
    """The ``--config`` (and ``--set``) values as one ``K=V,K=V`` string for Strategy.parse."""
    return ",".join(filter(None, (text for texts in parts for text in texts)))


def add_json(p: argparse.ArgumentParser, help: str = JSON_HELP) -> None:
    """``--json``: machine-readable output instead of the tables."""
    p.add_argument("--json", action="store_true", help=help)


def add_seed(p: argparse.ArgumentParser, help: str) -> None:
    """``--seed N`` (0 to ``MAX_SEED``, default 0)."""
    p.add_argument("--seed", type=seed_arg, default=0, help=help)


def add_filters(p: argparse.ArgumentParser, *, graph: str | None = GRAPH_FILTER_HELP,
                algo: str = ALGO_FILTER_HELP, device: str = DEVICE_FILTER_HELP) -> None:
    """``--graph`` (left out where ``graph`` is None), ``--algo`` and ``--device``: which
    studies (or groups) of a results directory a reader looks at, each optional."""
    from simulator.functional import ALGORITHMS

    if graph is not None:
        p.add_argument("--graph", default=None, metavar="GRAPH", help=graph, action=_Once)
    # an algorithm no study can hold (BFS, bsf) is named, not answered with "nothing found"
    p.add_argument("--algo", default=None, choices=ALGORITHMS, help=algo, action=_Once)
    p.add_argument("--device", default=None, help=device, action=_Once)


class _Once(argparse.Action):
    """A filter given once: a second had silently replaced the first."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        earlier = getattr(namespace, self.dest, None)
        if earlier is not None:
            parser.error(f"{option_string} given twice ({earlier!r}, then {values!r}): this "
                         "verb filters on one value")
        setattr(namespace, self.dest, values)


class OneValue(argparse.Action):
    """An option whose second value would not do what it reads as: ``tune --graph A --graph
    B`` had tuned B alone (probe CLI); ``calibrate --graphs A --graphs B`` had fitted to B
    alone (probe VERBS). (Other options keep argparse's last-one-wins.)"""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        given = namespace.__dict__.setdefault("_given_once", {})
        if self.dest in given:
            if option_string == "--graph" and parser.prog.endswith(" tune"):
                hint = "tune runs one study; a sweep file lists several graphs (warpsweep sweep)"
            elif "," in (self.metavar or ""):  # a list: the second had replaced the first
                hint = "give one comma-separated list"
            else:
                hint = "give it once"
            parser.error(f"{option_string} given twice ({given[self.dest]!r}, then "
                         f"{values!r}): {hint}")
        given[self.dest] = values
        setattr(namespace, self.dest, values)


def add_max_memory(p: argparse.ArgumentParser) -> None:
    """``--max-memory SIZE``: the memory guard of loading and simulating."""
    p.add_argument("--max-memory", default=None, metavar="SIZE", help=MAX_MEMORY_HELP)


def add_graph_loading(p: argparse.ArgumentParser) -> None:
    """``--max-memory SIZE`` and ``--no-cache``: how a verb that loads a graph loads it."""
    add_max_memory(p)
    p.add_argument("--no-cache", action="store_true", help="bypass the on-disk graph cache")


def check_writable(probe: Path, refusal: str) -> None:
    """ConfigError ``refusal`` (with the reason) unless a file can be made at ``probe`` (made
    and removed): an output found unwritable before the work, not after it."""
    from simulator.errors import ConfigError

    try:
        probe.open("w").close()
        probe.unlink()
    except OSError as exc:
        raise ConfigError(f"{refusal} ({exc.strerror or exc})") from None
