"""SSSP's topology sweeps on the H100 against the simulator's: per graph and width, the
launches the GPU made (``bench/gpu/results/h100.parquet``) and the sweeps the simulator runs on
``h100`` with its waves of resident warps and with ``staggered_waves = true`` (a sweep's blocks
starting as the earlier wave's finish), and the summed absolute gaps. Run from the repository
root (the graphs are ../shared/graphs):

    python bench/sweep_count_fidelity.py [--graphs G,G]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simulator import functional_run  # noqa: E402
from simulator import load_graph  # noqa: E402
from simulator import simulate  # noqa: E402
from simulator.device import get_device  # noqa: E402

RESULTS = ROOT / "bench" / "gpu" / "results" / "h100.parquet"
CONFIGS = ("mapping=thread", "mapping=vwarp,w=8", "mapping=vwarp,w=32")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graphs", help="short graph names, comma-separated (default: all)")
    args = parser.parse_args(argv)
    rows = [r for r in pq.read_table(RESULTS).to_pylist()
            if r["algorithm"] == "sssp" and r["config"] in CONFIGS and r["correct"]]
    waves = get_device("h100")
    staggered = dataclasses.replace(waves, staggered_waves=True)
    graphs = args.graphs.split(",") if args.graphs else sorted({r["graph"] for r in rows})
    gaps = [0, 0]
    print("graph: per width, launches measured, simulated with waves, staggered")
    for name in graphs:
        measured = {}
        for r in rows:
            if r["graph"] == name:
                measured.setdefault(r["config"], r)
        if not measured:
            continue
        first = next(iter(measured.values()))
        graph = load_graph(first["graph_spec"])
        fr = functional_run(graph, "sssp", source=first["source"])
        cells = []
        for config, row in measured.items():
            sims = [simulate(graph, "sssp", config, device, source=fr.source,
                             functional=fr).launches for device in (waves, staggered)]
            gaps = [g + abs(s - row["launches"]) for g, s in zip(gaps, sims, strict=True)]
            cells.append(f"{config.split('=')[-1]:>6s} {row['launches']:5d} {sims[0]:5d} "
                         f"{sims[1]:5d}")
        print(f"{name:24s} | " + " | ".join(cells), flush=True)
    print(f"summed |simulated - measured| launches: waves {gaps[0]}, staggered {gaps[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
