"""The H200's CC sweep profiles, launch by launch, against the simulator of this tree.

``bench/gpu/sweep_profiles.py`` printed each launch's GPU active vertices (a worklist's
entries) of one run per (graph, configuration) beside the simulator of its day
(``results/h200_sweep_profiles.txt``, runs 1 and 2 with L1 cached, run 3 bypassed). This
reads those GPU columns back and simulates the same runs now: per configuration, the summed
|simulated - GPU| launch count and the summed |log(simulated / GPU)| of launches 1-3's
active vertices over the (graph, run) cells (docs/fidelity.md uses them as development sets).

Run from anywhere: python bench/profile_fidelity.py [--configs CONFIG ...] [--runs 1 2]
[--device h200]
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simulator import simulate  # noqa: E402
from simulator.load import load_graph  # noqa: E402

PROFILES = ROOT / "bench" / "gpu" / "results" / "h200_sweep_profiles.txt"
GRAPHS = ROOT.parent / "shared" / "graphs"
FILES = {"ca-AstroPh": "ca-AstroPh.txt.gz", "cit-HepPh": "cit-HepPh.lg.gz",
         "p2p-Gnutella31": "p2p-Gnutella31.txt.gz", "deezer_HU_edges": "deezer_HU_edges.csv.gz",
         "coAuthorsDBLP": "coAuthorsDBLP.mtx.gz", "p2p-Gnutella08": "p2p-Gnutella08.txt.gz"}


def gpu_profiles(text: str, runs: set[int]) -> dict[tuple[str, str], list[list[int]]]:
    """(graph, config) -> each chosen run's GPU active vertices, launch by launch."""
    out: dict[tuple[str, str], list[list[int]]] = {}
    for part in text.split("\n# run ")[1:]:
        if int(part.split(",", 1)[0]) not in runs:
            continue
        for block in re.split(r"\n(?=\S)", part):
            head = re.match(r"(\S+) (\S+) \((?:right|WRONG)\)", block)
            if not head:
                continue
            active = [int(line.split()[1]) for line in block.splitlines()[1:]
                      if "(" in line and len(line.split()) >= 3]
            out.setdefault((head.group(1), head.group(2)), []).append(active)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", nargs="*",
                        default=["mapping=vwarp,w=32,driven=data,push=atomic"])
    parser.add_argument("--runs", nargs="*", type=int, default=[1, 2])
    parser.add_argument("--device", default="h200")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    profiles = gpu_profiles(PROFILES.read_text(), set(args.runs))
    for config in args.configs:
        launches = log_sum = 0.0
        for (name, cfg), runs in profiles.items():
            if cfg != config:
                continue
            graph = load_graph(f"file:{GRAPHS / FILES[name]}")
            trace = simulate(graph, "cc", config, args.device, trace=True).trace
            sim = [int(w if f == "data" else a) for a, w, f in
                   zip(trace["frontier"], trace["worklist"], trace["form"], strict=True)]
            for gpu in runs:
                launches += abs(len(sim) - len(gpu))
                log_sum += sum(abs(math.log(max(sim[i], 1) / max(gpu[i], 1)))
                               for i in range(1, min(4, len(sim), len(gpu))))
            print(f"{name:16s} GPU launches {[len(g) for g in runs]}, simulated {len(sim)}; "
                  f"launches 0-4 GPU {runs[0][:5]}, simulated {sim[:5]}", flush=True)
        print(f"{config}: summed |launches| {launches:.0f}, launches 1-3's summed |log| "
              f"{log_sum:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
