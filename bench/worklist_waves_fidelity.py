"""Worklist entries of SSSP run in waves on the GPU against the simulator's waves (issue 11).

``bench/gpu/worklist_waves.py`` splits every worklist launch of the data-driven SSSP runs into
consecutive launches of at most E entries: on hardware, the premise of
``simulator.asynchronous`` (waves of entries, each seeing the stores of the ones before, its
own entries reading together). Here the simulator runs with its waves set to the same E
entries (E / entries-per-warp warps; E = 0: its own, the resident warps' entries), so the
comparison isolates what the simulator does inside and between waves, such as the order in
which pushes land on the next worklist, from the GPU's timing. Prints per row the GPU median,
the simulated count and their ratio, and per (config, E) the median ratio.

Run from anywhere: python bench/worklist_waves_fidelity.py [RESULTS.parquet] [--graphs a,b]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pyarrow.parquet as pq  # noqa: E402

from simulator import driver  # noqa: E402
from simulator import engine  # noqa: E402
from simulator.functional import functional_run  # noqa: E402
from simulator.load import load_graph  # noqa: E402
from simulator.simulate import as_strategy  # noqa: E402
from simulator.simulate import simulate  # noqa: E402

RESULTS = ROOT / "bench" / "gpu" / "results" / "h100_worklist_waves.parquet"


def simulated_items(graph, functional, config: str, wave: int) -> int:
    """The simulator's worklist entries with waves of ``wave`` entries (0: its own)."""
    if wave == 0:
        return int(simulate(graph, "sssp", config, "h100", functional=functional).worklist_items)
    strategy = as_strategy(config)
    per_warp = 32 // strategy.lanes_per_vertex * strategy.vertices_per_grab
    with mock.patch.object(driver, "wave_entries", lambda s, d: wave), \
            mock.patch.object(engine, "resident_warps", lambda s, d: max(1, wave // per_warp)):
        return int(simulate(graph, "sssp", config, "h100", functional=functional).worklist_items)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="?", type=Path, default=RESULTS)
    parser.add_argument("--graphs", default=None, help="short graph names, comma-separated")
    args = parser.parse_args(argv)
    results = args.results.resolve()
    os.chdir(ROOT)  # the recorded graph specs are relative to the repository root
    wanted = set(args.graphs.split(",")) if args.graphs else None
    runs: dict[tuple, list[int]] = {}
    for r in pq.read_table(results).to_pylist():
        if wanted is None or r["graph"] in wanted:
            key = (r["graph"], r["graph_spec"], r["source"], r["config"], r["wave_entries"])
            runs.setdefault(key, []).append(r["items"])
    print(f"{'graph':<22} {'config':<44} {'E':>6} {'gpu':>10} {'simulated':>10} {'ratio':>6}")
    ratios: dict[tuple[str, int], list[float]] = {}
    loaded = None
    for (graph, spec, source, config, wave), items in sorted(runs.items()):
        if loaded is None or loaded[0] != spec:
            g = load_graph(spec)
            loaded = (spec, g, functional_run(g, "sssp", source))
        gpu = statistics.median(items)
        sim = simulated_items(loaded[1], loaded[2], config, wave)
        ratios.setdefault((config, wave), []).append(sim / gpu)
        print(f"{graph[:22]:<22} {config:<44} {wave:>6} {gpu:>10.0f} {sim:>10} "
              f"{sim / gpu:>6.2f}", flush=True)
    print("\nmedian simulated / GPU entries over graphs (E = 0: one launch per worklist)")
    for (config, wave), values in sorted(ratios.items()):
        print(f"  {config:<44} E {wave:>5}  {statistics.median(values):5.2f}  "
              f"(range {min(values):.2f}..{max(values):.2f}, {len(values)} graphs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
