"""The block push's time over the warp push's, measured and simulated: does the calibrated
issue cost overcharge the block push's scans?

``bench/gpu/results/h100.toml`` fits ``instruction_cycles`` (the issue theta, 8.7 cycles an
instruction) to bench/gpu's edge loops, whose instructions stand in for waits. A block push
(``push=block``) issues a block-wide scan and barriers every round, which that figure may
overcharge. Per graph and W, the independent kernels' atomicMin worklists without an in-queue
flag (``bench/gpu/results/h100_independent.parquet``): the block push's measured time over the
warp push's, and the same ratio simulated on the datasheet model (unfitted), on the calibrated
``h100.toml``, and on ``h100.toml`` with the datasheet's ``instruction_cycles`` (every other
fitted field kept). A diagnosis, not a fit: nothing here changes the model.

Run from the repository root (the graphs are ../shared/graphs):
python bench/block_push_charge.py [--graphs G,G] [--jobs N] [--cache DIR|none]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from implementation_fidelity import INDEPENDENT  # noqa: E402
from implementation_fidelity import SHIPPED  # noqa: E402
from implementation_fidelity import independent_rows  # noqa: E402

from simulator.device import get_device  # noqa: E402
from tuner.calibration.parts import DEFAULT_CACHE  # noqa: E402
from tuner.calibration.parts import simulate_parts  # noqa: E402

WIDTHS = (8, 32)


def kernel_id(w: int, push: str) -> str:
    """The independent catalog's id of the atomicMin worklist without a flag."""
    return f"wl-w{w}-atomicmin-nodedup-{push}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graphs", help="short graph names, comma-separated (default: all)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--cache", default=str(DEFAULT_CACHE),
                        help="simulation cache ('none': simulate without one)")
    args = parser.parse_args(argv)
    cache = None if args.cache == "none" else args.cache

    measured, rows = independent_rows(INDEPENDENT)
    wanted = {kernel_id(w, p) for w in WIDTHS for p in ("block", "warp")}
    graphs = set(args.graphs.split(",")) if args.graphs else None
    keep = [i for i, r in enumerate(rows)
            if r["impl"] in wanted and (graphs is None or r["graph"] in graphs)]
    measured = [measured[i] for i in keep]
    impls = [rows[i]["impl"] for i in keep]
    datasheet = get_device("h100-datasheet")
    calibrated = get_device(str(SHIPPED))
    devices = {
        "datasheet": datasheet,
        "h100.toml": calibrated,
        "h100.toml, datasheet issue": dataclasses.replace(
            calibrated, name="h100-calibrated-datasheet-issue",
            instruction_cycles=datasheet.instruction_cycles),
    }
    times = {("measured", m.graph, impl): m.time_us
             for m, impl in zip(measured, impls, strict=True)}
    for label, device in devices.items():
        parts = simulate_parts(measured, device, cache=cache, jobs=args.jobs)
        for m, impl, p in zip(measured, impls, parts, strict=True):
            times[(label, m.graph, impl)] = p.cycles
    models = ("measured", *devices)
    print(f"block push time / warp push time, atomicMin worklists without a flag "
          f"({INDEPENDENT.name}); simulated on {', '.join(devices)}")
    print(f"{'graph':24s} {'W':>3s} " + " ".join(f"{m:>27s}" for m in models))
    for graph in sorted({m.graph for m in measured}):
        for w in WIDTHS:
            block, warp = kernel_id(w, "block"), kernel_id(w, "warp")
            if ("measured", graph, block) not in times or ("measured", graph, warp) not in times:
                continue  # one of the two had no correct run
            ratios = [times[(m, graph, block)] / times[(m, graph, warp)] for m in models]
            print(f"{graph:24s} {w:3d} " + " ".join(f"{r:27.2f}" for r in ratios))
    return 0


if __name__ == "__main__":
    sys.exit(main())
