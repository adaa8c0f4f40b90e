"""The papers' load-balancing trends rerun on the simulator: claim, figure, and agree,
disagree or untested.

Run: python bench/paper_trends.py [--quick] [--device D] [--json PATH] [--only NAMES]
(the same as ``warpsweep bench trends``, which runs this file by path). The experiments are in
bench/trends/, one module per paper; this file is their registry and driver.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# this checkout's packages, whether or not (and wherever) `pip install -e .` pointed (once:
# `warpsweep bench trends` runs this file each time it builds its parser)
ROOT = str(Path(__file__).resolve().parents[1])
if sys.path[:1] != [ROOT]:
    sys.path.insert(0, ROOT)

from bench.trends import cheng  # noqa: E402
from bench.trends import common  # noqa: E402
from bench.trends import hong  # noqa: E402
from bench.trends import nasre  # noqa: E402
from bench.trends import wer  # noqa: E402
from bench.trends.common import AGREE  # noqa: E402
from bench.trends.common import DEFAULT_DEVICES  # noqa: E402
from bench.trends.common import DISAGREE  # noqa: E402
from bench.trends.common import MARGIN  # noqa: E402
from bench.trends.common import MISSING  # noqa: E402
from bench.trends.common import Context  # noqa: E402
from bench.trends.common import Lab  # noqa: E402
from bench.trends.common import Row  # noqa: E402
from bench.trends.common import render  # noqa: E402
from bench.trends.common import sizes  # noqa: E402
from simulator.device import get_device  # noqa: E402
from simulator.errors import ConfigError  # noqa: E402
from tuner.cli.args import OneValue  # noqa: E402
from tuner.cli.args import path_arg  # noqa: E402

EXPERIMENTS: dict[str, Callable[[Context], list[Row]]] = {
    **hong.EXPERIMENTS, **cheng.EXPERIMENTS, **nasre.EXPERIMENTS, **wer.EXPERIMENTS,
}


def select(only: str | None) -> list[str]:
    """Experiment names chosen by ``--only`` (comma separated; a prefix such as ``hong`` picks
    every experiment starting with it)."""
    if only is None:
        return list(EXPERIMENTS)
    wanted = [w.strip().lower() for w in only.split(",") if w.strip()]
    if not wanted:  # --only '' is a mistake, not "everything" (the full run takes minutes)
        raise ConfigError(f"--only {only!r} names no experiment; choose from "
                          f"{list(EXPERIMENTS)} or a prefix")
    unknown = [w for w in wanted if not any(name.startswith(w) for name in EXPERIMENTS)]
    if unknown:
        raise ConfigError(
            f"unknown experiment(s) {unknown}; choose from {list(EXPERIMENTS)} or a prefix"
        )
    return [name for name in EXPERIMENTS if any(name.startswith(w) for w in wanted)]


@dataclass
class Report:
    rows: list[Row]
    skipped: dict[str, str]
    wall_s: float
    simulations: int


def run_trends(
    *,
    quick: bool = False,
    device: str | None = None,
    only: str | None = None,
    log: Callable[[str], None] | None = None,
) -> Report:
    """Run the selected experiments and return their rows (and those skipped, with why)."""
    log = log or (lambda line: print(line, file=sys.stderr, flush=True))
    names = select(only)
    size = sizes(quick)
    if device:
        get_device(device)  # an unknown device is the user's error, not a skipped experiment
    devices = {k: device or v for k, v in DEFAULT_DEVICES.items()}
    lab = Lab(log)
    ctx = Context(lab, size, devices, log)
    rows: list[Row] = []
    skipped: dict[str, str] = {}
    start = time.perf_counter()
    log(f"paper trends ({size.name} size): {', '.join(names)}")
    for name in sorted(MISSING):
        log(f"  skipped real graph {name}: not in {common.SHARED_GRAPHS}")
    for name in names:
        t0 = time.perf_counter()
        log(f"[{name}] ...")
        try:
            new = EXPERIMENTS[name](ctx)
        except ConfigError as exc:
            # a knob the simulator does not model yet: the experiment cannot run at all
            skipped[name] = str(exc)
            log(f"[{name}] skipped: {exc}")
            continue
        rows.extend(new)
        log(f"[{name}] {len(new)} rows, {time.perf_counter() - t0:.1f} s")
    return Report(rows, skipped, time.perf_counter() - start, lab.simulations)




def summary(report: Report) -> str:
    agree = sum(r.verdict == AGREE for r in report.rows)
    disagree = sum(r.verdict == DISAGREE for r in report.rows)
    untested = len(report.rows) - agree - disagree
    tested = f"{agree}/{agree + disagree} claims agree" + (
        f" ({untested} not tested here: their runs were one simulation)" if untested else "")
    text = (f"{tested} (a faster/slower claim needs a {MARGIN:.0%} margin); "
            f"{report.simulations} simulations in {report.wall_s:.1f} s")
    if report.skipped:
        text += f"; skipped: {', '.join(report.skipped)} (knobs not modelled yet)"
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options shared by ``bench/paper_trends.py`` and ``warpsweep bench trends``."""
    parser.add_argument("--quick", action="store_true",
                        help="small graphs and short sweeps (under a minute)")
    parser.add_argument("--device", default=None,
                        help="one device for every experiment (default: each paper's era: "
                        + ", ".join(f"{k} {v}" for k, v in DEFAULT_DEVICES.items()) + ")")
    parser.add_argument("--json", type=path_arg, default=None, metavar="PATH",
                        help="also write the rows as a JSON list of objects")
    parser.add_argument("--only", default=None, metavar="NAME,...", action=OneValue,
                        help=f"comma-separated experiments or prefixes: {', '.join(EXPERIMENTS)}")


def run_args(args: argparse.Namespace) -> int:
    """Run from parsed options: table on stdout, progress on stderr, rows to --json."""
    select(args.only)  # bad input refused before anything is made (--json's directories)
    if args.device:
        get_device(args.device)
    if args.json is not None and (not str(args.json).strip() or args.json.is_dir()
                                  or args.json.name in ("", ".", "..")):
        # checked before the run, not found out after it
        raise ConfigError(f"--json {str(args.json)!r}: give a file name")
    if args.json is not None:
        # a file or a dangling link where a directory must be (a link to none: exists() is
        # False, but mkdir finds it in the way, after the run)
        blocked = next((p for p in args.json.parents
                        if os.path.lexists(p) and not p.is_dir()), None)
        if blocked is not None:
            what = "a file" if blocked.exists() else "a link to nothing"
            raise ConfigError(f"--json {str(args.json)!r}: {str(blocked)!r} is {what}, not a "
                              "directory")
        try:  # a file can be made there (or the one there opened): found before the run, in
            # the nearest directory there is (those missing are made with the file, at the end)
            if args.json.exists():
                with open(args.json, "a"):
                    pass
            else:
                nearest = next(p for p in args.json.parents if p.exists())
                with tempfile.TemporaryFile(dir=nearest):
                    pass
        except OSError as exc:
            raise ConfigError(f"--json {str(args.json)!r}: cannot write there "
                              f"({exc.strerror or exc})") from None
    report = run_trends(quick=args.quick, device=args.device, only=args.only)
    print(render(report.rows))
    print()
    print(summary(report))
    if args.json:
        rows = [_finite(r.to_dict()) for r in report.rows]
        try:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(rows, indent=2, default=_jsonable) + "\n")
        except OSError as exc:  # a full disk, a directory made read-only meanwhile
            raise ConfigError(f"--json {str(args.json)!r}: cannot write it "
                              f"({exc.strerror or exc})") from None
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float (a speedup over zero time) as None: strict JSON."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    return str(value)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="paper_trends",
        description="Rerun the papers' load-balancing comparisons on the simulator and say "
        "where it agrees with each claim.",
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run_args(args)
    except ConfigError as exc:
        print(f"paper_trends: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
