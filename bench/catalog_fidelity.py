"""A measured catalog against the simulator: does it rank a strategy right among its peers?

``bench/gpu/pr_cc.py --catalog spatial|wer`` measures BFS, SSSP and CC on the harness's 17
graphs under one strategy family (the subject) beside the sweeps and worklists it competes with:
``bench/gpu/results/h200_spatial.parquet`` (the spatial hybrid: partitions of 4, 16, 64
vertices under the thread mapping, 16 at W = 8 and 32) and ``h200_wer.parquet`` (WER and WER+
with 1, 4, 16 vertices a thread); bench/gpu's own CC catalog too (``h100_pr_cc.parquet
--algorithms cc --subject ' c'``: the chunked sweeps as the subject). Every row is
simulated with ``--device`` (default the shipped ``bench/gpu/results/h100.toml``, fitted to
BFS and SSSP rows of other kernels: no constant was fitted to these times; for the H200
catalogs it is also another GPU's model. For ``h100_pr_cc.parquet`` the simulator is not
blind: the block push's scan rounds and PageRank's gather groups were adopted on rules that
read these same PageRank and CC times). A configuration's measured time is its
fastest correct variant's. Per algorithm and graph: Spearman rho over all configurations,
over the subject's alone (``--subject``, a word of the configurations' short names; default:
the catalog's), and the regret of the simulated pick (measured time of the predicted fastest
over the measured best); then, per configuration, its charge relative to each graph's best
(median over graphs of (sim / best sim) / (measured / best measured): above 1, the simulator
overcharges it), and the launches simulated beside those measured.

Simulations are kept, one JSON line each, in ``--sims`` (default: the results file's name with
``_sims.jsonl``), keyed by the row, the device's fields and the simulator's sources (lines of
another simulator or device are dropped), and only the missing ones run (smallest graphs
first): a run cut short keeps what it finished, and the tables cover the graphs whose every
configuration is simulated (the others are named).

Run from anywhere: python bench/catalog_fidelity.py [RESULTS.parquet] [--device D] [--jobs N]
[--graphs-dir DIR] [--sims FILE] [--subject WORD] [--algorithms A,A]
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import sys
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import as_completed
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simulator import functional_run  # noqa: E402
from simulator import simulate  # noqa: E402
from simulator.device import device_digest  # noqa: E402
from simulator.device import get_device  # noqa: E402
from simulator.load import load_graph  # noqa: E402
from tuner.calibration.heldout import regret  # noqa: E402
from tuner.calibration.heldout import spearman  # noqa: E402
from tuner.env import simulator_digest  # noqa: E402

RESULTS = ROOT / "bench" / "gpu" / "results" / "h200_spatial.parquet"
SHIPPED = ROOT / "bench" / "gpu" / "results" / "h100.toml"
WITHIN = 1.05


def simulate_one(task: tuple[str, str, int | None, str, str]) -> tuple[float, int]:
    """One measured row simulated: (time_us, launches)."""
    spec, algorithm, source, config, device = task
    graph = load_graph(spec)
    fr = functional_run(graph, algorithm, source)
    r = simulate(graph, algorithm, config, device, source, functional=fr)
    return float(r.time_us), int(r.launches)


def sim_key(row: dict, device: str) -> str:
    """What identifies a simulation in the ``--sims`` file: the row, the device's fields and
    the simulator's sources (a line of another cost model is not reused)."""
    return "|".join([row["graph_spec"], row["algorithm"], str(row["source"]), row["config"],
                     device_digest(get_device(device)), simulator_digest()])


def short(config: str) -> str:
    """A config as the tables name it."""
    words = dict(item.split("=") for item in config.split(","))
    mapping = words.get("mapping", "thread")
    width = mapping if mapping != "vwarp" else f"vw{words['w']}"
    if mapping in ("wer", "wer+"):
        return f"{mapping} c{words.get('chunk', 1)}"
    name = width
    if words.get("driven") == "spatial":
        name = f"spatial {width} p{words['partition']}"
    elif words.get("driven") == "data":
        name = f"data {width}"
        if words.get("push", "atomic") != "atomic":
            name += f" {words['push']}"
    elif words.get("driven") == "temporal":
        name = f"temporal {width} s{words['switch_to_topology']}"
        if words.get("push", "atomic") != "atomic":
            name += f" {words['push']}"
    if words.get("dedup") == "true":
        name += " flag"
    if "chunk" in words:
        name += f" c{words['chunk']}"
    if words.get("distribution") == "dynamic":
        name += " dyn"
    if "defer_threshold" in words:
        name += f" d{words['defer_threshold']}"
    if "donate_threshold" in words:
        name += f" donate{words['donate_threshold']}"
    return name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", type=Path, default=RESULTS)
    parser.add_argument("--device", default=str(SHIPPED))
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--graphs-dir", help="where the files of ../shared/graphs are here")
    parser.add_argument("--sims", type=Path, help="default: RESULTS' name with _sims.jsonl")
    parser.add_argument("--subject",
                        help="default: spatial, donate or wer (the catalog's)")
    parser.add_argument("--algorithms", help="e.g. sssp,cc (default: all the catalog's)")
    args = parser.parse_args()
    t0 = time.time()
    args.sims = args.sims or args.results.with_name(f"{args.results.stem}_sims.jsonl")
    fastest: dict[tuple, dict] = {}  # a configuration's measured time: its fastest variant's
    for r in pq.read_table(args.results).to_pylist():
        if r["correct"] and (args.algorithms is None
                             or r["algorithm"] in args.algorithms.split(",")):
            key = (r["graph_spec"], r["algorithm"], r["source"], r["config"])
            if key not in fastest or r["time_us"] < fastest[key]["time_us"]:
                fastest[key] = r
    rows = list(fastest.values())
    if args.subject is None:
        args.subject = ("spatial" if any("driven=spatial" in r["config"] for r in rows)
                        else "donate" if any("donate_threshold" in r["config"] for r in rows)
                        else "wer")
    done: dict[str, list] = {}
    if args.sims.exists():
        # another simulator's or device's lines are dropped; the current ones are all kept,
        # those of rows this run leaves out (--algorithms) too
        current = "|".join(["", device_digest(get_device(args.device)), simulator_digest()])
        lines = args.sims.read_text().splitlines()
        for line in lines:
            record = json.loads(line)
            if record["key"].endswith(current):
                done[record["key"]] = record["sim"]
        if len(done) < len(lines):
            args.sims.write_text("".join(json.dumps({"key": k, "sim": v}) + "\n"
                                         for k, v in done.items()))
    missing = sorted((r for r in rows if sim_key(r, args.device) not in done),
                     key=lambda r: r["m"])
    tasks = []
    for r in missing:
        spec = r["graph_spec"]
        if args.graphs_dir:
            spec = spec.replace("file:../shared/graphs/",
                                f"file:{args.graphs_dir.rstrip('/')}/")
        tasks.append((spec, r["algorithm"], None if r["source"] < 0 else int(r["source"]),
                      r["config"], args.device))
    with args.sims.open("a") as sink, ProcessPoolExecutor(
            max(1, args.jobs), mp_context=multiprocessing.get_context("fork")) as pool:
        futures = {pool.submit(simulate_one, t): r for t, r in zip(tasks, missing,
                                                                   strict=True)}
        for future in as_completed(futures):
            key = sim_key(futures[future], args.device)
            done[key] = list(future.result())
            sink.write(json.dumps({"key": key, "sim": done[key]}) + "\n")
            sink.flush()
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["graph"], r["algorithm"])].append(r)
    by_algorithm: dict[str, list] = defaultdict(list)
    unfinished = []
    for (graph, algorithm), members in groups.items():
        sims = [done.get(sim_key(m, args.device)) for m in members]
        if any(s is None for s in sims):
            unfinished.append(f"{graph} {algorithm}")
            continue
        by_algorithm[algorithm].append((graph, members, [(None, *s) for s in sims]))
    print(f"{len(rows)} measured configurations, each its fastest correct variant "
          f"({args.results.name}, "
          f"{rows[0]['gpu_name']}), simulated with {Path(args.device).name} "
          f"({time.time() - t0:.0f} s)")
    if unfinished:
        print(f"not all simulated, left out: {', '.join(sorted(unfinished))}")
    for algorithm, graphs in by_algorithm.items():
        print(f"\n{algorithm.upper()}")
        print(f"{'graph':22s} {'rho':>5s} {'rho ' + args.subject[:3]:>7s} {'regret':>6s}  "
              f"{'pick':22s} {'measured best':22s}")
        rhos, sp_rhos, regrets = [], [], []
        charge: dict[str, list[float]] = defaultdict(list)
        launches: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for graph, members, sim in sorted(graphs, key=lambda g: g[0]):
            names = [short(m["config"]) for m in members]
            measured = np.array([m["time_us"] for m in members])
            predicted = np.array([s[1] for s in sim])
            subject = np.array([args.subject in n for n in names])
            rho = spearman(predicted, measured)
            rho_sp = spearman(predicted[subject], measured[subject])
            loss, pick = regret(predicted, measured)
            rhos.append(rho)
            sp_rhos.append(rho_sp)
            regrets.append(loss)
            for i, name in enumerate(names):
                charge[name].append((predicted[i] / predicted.min())
                                    / (measured[i] / measured.min()))
                launches[name][0] += members[i]["launches"]
                launches[name][1] += sim[i][2]
            print(f"{graph:22s} {rho:5.2f} {rho_sp:7.2f} {loss:6.2f}  {names[pick]:22s} "
                  f"{names[int(np.argmin(measured))]:22s}")
        regrets = np.array(regrets)
        print(f"{algorithm} summary: median rho {np.nanmedian(rhos):.2f}, among the "
              f"{args.subject} configs {np.nanmedian(sp_rhos):.2f}; pick within 5% on "
              f"{(regrets <= WITHIN).sum()}/{regrets.size} graphs, geomean regret "
              f"{math.exp(np.log(regrets).mean()):.3f}, worst {regrets.max():.2f}")
        print(f"{'config':22s} {'charge':>7s} {'launches measured':>18s} {'simulated':>10s}")
        for name in sorted(charge, key=lambda k: -np.median(charge[k])):
            print(f"{name:22s} {np.median(charge[name]):7.2f} {launches[name][0]:18d} "
                  f"{launches[name][1]:10d}")


if __name__ == "__main__":
    main()
