"""Probe a Ray cluster from its head for the loopback launcher test: its nodes, or where tasks run.

Run on the head through the launcher, e.g.
  ray exec CLUSTER.yaml 'python ~/warpsweep/ci/loopback_probe.py nodes --wait-for 2'
  ray submit CLUSTER.yaml ci/loopback_probe.py tasks
Prints one line `LOOPBACK-PROBE {json}`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import ray

MARK = "LOOPBACK-PROBE "


@ray.remote(num_cpus=1)
def where() -> dict:
    """Where a one-CPU task ran: node, IP, Python and the warpsweep code it imports."""
    import tuner

    return {"node_id": ray.get_runtime_context().get_node_id(),
            "ip": ray.util.get_node_ip_address(), "python": sys.executable,
            "tuner": tuner.__file__}


def nodes(wait_for: int = 0, timeout_s: float = 120.0) -> dict:
    """The cluster's nodes (id, IP, alive, CPUs), once `wait_for` are alive or time is up."""
    end = time.monotonic() + timeout_s
    while True:
        found = [{"node_id": n["NodeID"], "ip": n["NodeManagerAddress"], "alive": n["Alive"],
                  "cpus": n.get("Resources", {}).get("CPU", 0.0)} for n in ray.nodes()]
        if sum(n["alive"] for n in found) >= wait_for or time.monotonic() > end:
            return {"nodes": found}
        time.sleep(1.0)


def tasks(count: int = 2) -> dict:
    """Run a few one-CPU tasks and say where each ran (the head has no CPUs for Ray)."""
    return {"driver_python": sys.executable,
            "tasks": ray.get([where.remote() for _ in range(count)], timeout=60)}


def main(argv: list[str] | None = None) -> int:
    """Connect to the running cluster and print the probe asked for."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("probe", choices=["nodes", "tasks"])
    parser.add_argument("--wait-for", type=int, default=0,
                        help="nodes: wait until this many nodes are alive")
    parser.add_argument("--timeout", type=float, default=120.0, help="nodes: wait this long")
    args = parser.parse_args(argv)
    ray.init(address="auto", logging_level="ERROR", log_to_driver=False)
    try:
        found = nodes(args.wait_for, args.timeout) if args.probe == "nodes" else tasks()
        print(MARK + json.dumps(found), flush=True)
    finally:
        ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
