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

import statistics
import sys
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from worklist_fidelity import arguments  # noqa: E402
from worklist_fidelity import measured_items  # noqa: E402

from simulator import driver  # noqa: E402
from simulator import launch_costs  # noqa: E402
from simulator import worklist_pushes  # noqa: E402
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

    def resident(s, d):  # the resident warps, wherever the pushes' arrival order reads them
        return max(1, wave // per_warp)

    with mock.patch.object(driver, "wave_entries", lambda s, d: wave), \
            mock.patch.object(worklist_pushes, "resident_warps", resident), \
            mock.patch.object(launch_costs, "resident_warps", resident):
        return int(simulate(graph, "sssp", config, "h100", functional=functional).worklist_items)


def main(argv: list[str] | None = None) -> int:
    results, graphs = arguments(__doc__, RESULTS, argv)
    runs = measured_items(results, graphs,
                          ("graph", "graph_spec", "source", "config", "wave_entries"))
    print(f"{'graph':<22} {'config':<44} {'E':>6} {'gpu':>10} {'simulated':>10} {'ratio':>6}")
    ratios: dict[tuple[str, int], list[float]] = {}
    loaded = None
    for (graph, spec, source, config, wave), gpu in sorted(runs.items()):
        if loaded is None or loaded[0] != spec:
            g = load_graph(spec)
            loaded = (spec, g, functional_run(g, "sssp", source))
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
