"""The real Ray cluster launcher end to end over loopback SSH (issue 10).

`ray up` of clusters/onprem.yaml adapted to one machine (head 127.0.0.1, worker 127.0.0.2, the CI
key, an offline install), `ray exec` of a probe until both nodes are up, `ray submit` of a probe
that runs tasks, a tiny sweep on the head through `ray exec`, its results fetched with
`ray rsync-down` and read back, then `ray down`, after which no Ray process may be left.

The end-to-end test runs only with WARPSWEEP_LAUNCHER_TEST=1, which .ci/run sets once
ci/sshd_loopback.sh has an sshd accepting the key: it takes over this user's ~/warpsweep, ~/venv
and every Ray process of the machine (`ray stop` in onprem.yaml's head start and in `ray down`),
so it belongs on a disposable CI machine, in a pytest run of its own.
"""

from __future__ import annotations

import copy
import getpass
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
ONPREM = REPO / "clusters" / "onprem.yaml"
PROBE = REPO / "ci" / "loopback_probe.py"
ENABLE_VAR = "WARPSWEEP_LAUNCHER_TEST"
KEY = Path(os.environ.get("WARPSWEEP_LAUNCHER_KEY", "~/.ssh/warpsweep_ci")).expanduser()
HEAD_IP = "127.0.0.1"
WORKER_IP = "127.0.0.2"
CLUSTER_NAME = "warpsweep-loopback-ci"
RAY_TEMP_DIR = "/tmp/ray-warpsweep-loopback"  # not /tmp/ray: no ray.init() elsewhere finds it
OBJECT_STORE_BYTES = 100_000_000
OFFLINE_INSTALL = "bash ~/warpsweep/ci/loopback_venv.sh ~/venv ~/warpsweep"
MARKER = ".warpsweep-launcher-test"  # in ~/warpsweep and ~/venv: made by this test
PROBE_MARK = "LOOPBACK-PROBE "
REMOTE_SWEEP = "~/warpsweep-loopback-sweep.yaml"
REMOTE_RESULTS = "~/warpsweep-loopback-results"
TINY_SWEEP = {
    "description": "loopback launcher smoke sweep",
    "trials": 4,
    "sampler": "random",
    "sources": 1,
    "seed": 0,
    "graphs": ["rmat:scale=8,seed=1"],
    "algorithms": ["bfs"],
    "devices": ["h100"],
    "spaces": ["vwarp"],
}
REFERENCE_LABELS = {"thread"} | {f"vwarp w={w}" for w in (1, 2, 4, 8, 16, 32)}


def _with_flags(command: str, flags: list[str], what: str) -> str:
    """`command` (`...; ray start ...` as onprem.yaml writes it) with flags after `ray start`."""
    if not command.split(";")[-1].strip().startswith("ray start"):
        raise ValueError(f"clusters/onprem.yaml: {what} does not end in `ray start`: {command!r}")
    return " ".join([command.rstrip(), *flags])


def loopback_config(onprem: dict, user: str, key: Path) -> dict:
    """clusters/onprem.yaml adapted to run head and worker on this machine over loopback SSH."""
    cfg = copy.deepcopy(onprem)
    cfg["cluster_name"] = CLUSTER_NAME
    cfg["provider"] = {**cfg["provider"], "head_ip": HEAD_IP, "worker_ips": [WORKER_IP]}
    cfg["auth"] = {**cfg["auth"], "ssh_user": user, "ssh_private_key": str(key)}
    # the install step needs the network (pip, PyPI): an offline venv over the installed
    # packages instead; the other setup commands (~/.bashrc lines) stay as written
    installs = [c for c in cfg["setup_commands"] if "pip install" in c]
    if len(installs) != 1:
        raise ValueError("clusters/onprem.yaml: expected one setup command with `pip install`")
    cfg["setup_commands"] = [OFFLINE_INSTALL if c in installs else c
                             for c in cfg["setup_commands"]]
    small = [f"--object-store-memory={OBJECT_STORE_BYTES}", f"--temp-dir={RAY_TEMP_DIR}"]
    cfg["head_start_ray_commands"] = [
        _with_flags(c, small, "a head start command") if "ray start" in c else c
        for c in cfg["head_start_ray_commands"]]
    # no `ray stop` on a worker that shares the head's machine (it would stop the head too);
    # its own IP, or Ray reports the machine's primary IP and the autoscaler relaunches it
    worker_flags = [f"--node-ip-address={WORKER_IP}", "--num-cpus=1", *small]
    cfg["worker_start_ray_commands"] = [
        _with_flags(c, worker_flags, "a worker start command")
        for c in cfg["worker_start_ray_commands"] if "ray start" in c]
    return cfg


def ray_processes() -> list[str]:
    """Ray's live processes on this machine (GCS, raylets, workers, monitors): `pid cmdline`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX":
                continue  # exited, not yet reaped: no longer runs
            comm = (proc / "comm").read_text().strip()
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue
        markers = ("default_worker.py", "ray/dashboard/", "ray/_private/log_monitor.py",
                   "ray/autoscaler/_private/monitor.py", "ray/util/client/server",
                   RAY_TEMP_DIR)
        if (comm in ("gcs_server", "raylet") or cmdline.startswith("ray::")
                or any(m in cmdline for m in markers)):
            found.append(f"{proc.name} {cmdline[:160]}")
    return found


def ray_cli() -> list[str]:
    """The `ray` command of this Python (its script, or the module where no script is beside)."""
    script = Path(sys.executable).with_name("ray")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ray.scripts.scripts"]


def _ssh_ok(ip: str) -> bool:
    """Whether the CI key logs in to `ip` without a password."""
    cmd = ["ssh", "-i", str(KEY), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
           "-o", "UserKnownHostsFile=/dev/null", "-o", "IdentitiesOnly=yes",
           "-o", "ConnectTimeout=5", f"{getpass.getuser()}@{ip}", "true"]
    try:
        return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=20).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def launcher_blocker() -> str | None:
    """Why the loopback launch cannot run here, or None when it can."""
    home = Path.home()
    if not KEY.is_file():
        return f"no CI key {KEY} (ci/sshd_loopback.sh makes it)"
    for tool in ("ssh", "rsync"):
        if shutil.which(tool) is None:
            return f"no {tool} on PATH"
    for ip in (HEAD_IP, WORKER_IP):
        if not _ssh_ok(ip):
            return f"the key {KEY} does not log in to {getpass.getuser()}@{ip}:22"
    for path in (home / "warpsweep", home / "venv"):
        if path.exists() and not (path / MARKER).exists():
            return f"{path} exists and was not made by this test: the cluster would overwrite it"
    for _ in range(20):  # an earlier run's Ray may take a few seconds to exit
        running = ray_processes()
        if not running:
            break
        time.sleep(0.5)
    if running:
        return ("Ray already runs on this machine (`ray stop` in the launch would kill it): "
                + "; ".join(running[:3]))
    return None


@dataclass
class Step:
    """One launcher command: what, how long, how it ended."""

    name: str
    seconds: float
    returncode: int | None


@dataclass
class Launcher:
    """Runs `ray` cluster-launcher commands on one config, timing each one."""

    config: Path
    logs: Path
    steps: list[Step] = field(default_factory=list)

    def _log(self, name: str, out: str) -> None:
        """Keep a step's output beside the config (pytest keeps the last runs' tmp dirs)."""
        self.logs.mkdir(exist_ok=True)
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
        (self.logs / f"{len(self.steps):02d}-{slug}.log").write_text(out)

    def ray(self, name: str, verb: str, *args: str, options: tuple[str, ...] = (),
            timeout: float = 60, check: bool = True) -> str:
        """`ray VERB OPTIONS CONFIG ARGS`; its output, or the test fails showing it."""
        cmd = [*ray_cli(), verb, *options, str(self.config), *args]
        env = {**os.environ, "RAY_UP_enable_autoscaler_v2": "0"}  # v2 launches no local workers
        env.pop("RAY_ADDRESS", None)
        start = time.monotonic()
        try:
            done = subprocess.run(cmd, cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, errors="replace", timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            self.steps.append(Step(name, time.monotonic() - start, None))
            out = exc.output or ""
            out = out.decode(errors="replace") if isinstance(out, bytes) else out
            self._log(name, out)
            if check:
                pytest.fail(f"{name}: `ray {verb}` ran past {timeout:.0f} s\n{out[-3000:]}")
            return out or ""
        self.steps.append(Step(name, time.monotonic() - start, done.returncode))
        self._log(name, done.stdout)
        if check and done.returncode != 0:
            pytest.fail(f"{name}: `ray {verb}` exited {done.returncode}\n{done.stdout[-3000:]}")
        return done.stdout

    def probe(self, name: str, verb: str, *args: str, timeout: float = 90) -> dict:
        """Run the probe through `ray exec`/`ray submit` and parse its one result line."""
        out = self.ray(name, verb, *args, timeout=timeout)
        lines = [ln.strip() for ln in out.splitlines() if ln.strip().startswith(PROBE_MARK)]
        assert lines, f"{name}: no {PROBE_MARK.strip()} line in\n{out[-3000:]}"
        return json.loads(lines[-1][len(PROBE_MARK):])

    def report(self) -> str:
        """The steps as `name: seconds` lines."""
        return "\n".join(f"  {s.name:<28} {s.seconds:6.1f} s"
                         + ("" if s.returncode == 0 else f"  (exit {s.returncode})")
                         for s in self.steps)


def _prepare_home() -> None:
    """A fresh ~/warpsweep and ~/venv (only ones this test made are removed)."""
    home = Path.home()
    for path in (home / "warpsweep", home / "venv"):
        if (path / MARKER).exists():
            shutil.rmtree(path)
    (home / "warpsweep").mkdir()
    (home / "warpsweep" / MARKER).touch()
    state = Path("/tmp/ray") / f"cluster-{CLUSTER_NAME}.state"
    state.unlink(missing_ok=True)  # the local provider's node states of an earlier run


def _wait_for_worker(launcher: Launcher, timeout_s: float) -> dict:
    """Probe through `ray exec` until head and loopback worker are alive: {ip: node}."""
    nodes = launcher.probe("ray exec probe: 2 nodes up", "exec",
                           "python ~/warpsweep/ci/loopback_probe.py nodes --wait-for 2 "
                           f"--timeout {timeout_s:.0f}", timeout=timeout_s + 60)["nodes"]
    alive = {n["ip"]: n for n in nodes if n["alive"]}
    if len(alive) != 2 or WORKER_IP not in alive:
        logs = launcher.ray("monitor log", "exec",
                            f"tail -n 30 {RAY_TEMP_DIR}/session_latest/logs/monitor.*",
                            check=False)
        pytest.fail(f"the worker did not join in {timeout_s:.0f} s: {nodes}\n{logs[-3000:]}")
    return alive


def test_loopback_config_adapts_onprem():
    """The adapted config is onprem.yaml with only the loopback changes, and Ray accepts it."""
    from ray.autoscaler._private.util import prepare_config
    from ray.autoscaler._private.util import validate_config

    onprem = yaml.safe_load(ONPREM.read_text())
    cfg = loopback_config(onprem, "root", Path("/root/.ssh/warpsweep_ci"))
    validate_config(prepare_config(copy.deepcopy(cfg)))
    assert cfg["provider"] == {**onprem["provider"], "head_ip": HEAD_IP,
                               "worker_ips": [WORKER_IP]}
    assert cfg["file_mounts"] == onprem["file_mounts"]  # the checkout and the Ray token
    assert "~/.ray/auth_token" in cfg["file_mounts"]
    assert not any(re.search(r"\b(pip|curl|uv)\b", c) for c in cfg["setup_commands"])
    assert len(cfg["setup_commands"]) == len(onprem["setup_commands"])
    for cmd in cfg["head_start_ray_commands"] + cfg["worker_start_ray_commands"]:
        assert "RAY_AUTH_MODE=token" in cmd  # explicit on every node, as onprem.yaml has it
    (worker,) = cfg["worker_start_ray_commands"]
    assert "ray stop" not in worker and f"--node-ip-address={WORKER_IP}" in worker
    assert "--num-cpus=1" in worker and f"--temp-dir={RAY_TEMP_DIR}" in worker
    assert any("ray stop" in c for c in cfg["head_start_ray_commands"])
    head_start = [c for c in cfg["head_start_ray_commands"] if "ray start" in c]
    assert len(head_start) == 1 and "--num-cpus=0" in head_start[0]  # the head runs no trials


@pytest.mark.skipif(os.environ.get(ENABLE_VAR) != "1",
                    reason=f"set {ENABLE_VAR}=1 after `bash ci/sshd_loopback.sh` (an sshd on "
                           f"{HEAD_IP}/{WORKER_IP} that accepts {KEY}); .ci/run does")
def test_ray_up_loopback_sweep_end_to_end(tmp_path, capsys):
    """ray up / exec / submit / rsync-up / rsync-down / down of onprem.yaml over loopback."""
    blocker = launcher_blocker()
    if blocker:
        pytest.fail(f"{ENABLE_VAR}=1 but the loopback launch cannot run: {blocker}")
    from tuner.results.store import read_trials

    config = tmp_path / "loopback.yaml"
    config.write_text(yaml.safe_dump(loopback_config(
        yaml.safe_load(ONPREM.read_text()), getpass.getuser(), KEY), sort_keys=False))
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump(TINY_SWEEP, sort_keys=False))
    launcher = Launcher(config, tmp_path / "logs")
    home = Path.home()
    started = time.monotonic()
    down = False
    _prepare_home()
    try:
        launcher.ray("ray up", "up", options=("-y", "--no-config-cache",
                                              "--disable-usage-stats"), timeout=240)
        nodes = _wait_for_worker(launcher, timeout_s=150)
        worker_id = nodes[WORKER_IP]["node_id"]
        assert nodes[WORKER_IP]["cpus"] == 1 and len(nodes) == 2

        found = launcher.probe("ray submit probe tasks", "submit", str(PROBE), "tasks")
        assert found["driver_python"] == str(home / "venv" / "bin" / "python")
        for task in found["tasks"]:  # the head has no CPUs for Ray: tasks run on the worker
            assert task["ip"] == WORKER_IP and task["node_id"] == worker_id, task
            assert task["python"] == str(home / "venv" / "bin" / "python"), task
            assert task["tuner"] == str(home / "warpsweep" / "tuner" / "__init__.py"), task

        launcher.ray("ray rsync-up sweep", "rsync-up", str(sweep), REMOTE_SWEEP)
        out = launcher.ray("ray exec warpsweep sweep", "exec",
                           f"rm -rf {REMOTE_RESULTS} && cd ~/warpsweep && warpsweep sweep "
                           f"{REMOTE_SWEEP} --address auto --results {REMOTE_RESULTS} -q",
                           timeout=240)
        assert "rmat8" in out, out[-3000:]
        results = tmp_path / "results"
        launcher.ray("ray rsync-down results", "rsync-down", f"{REMOTE_RESULTS}/",
                     f"{results}/")
        rows = read_trials(results).to_pylist()
        assert {r["state"] for r in rows} <= {"complete", "duplicate"}, rows
        refs = [r for r in rows if r["role"] == "reference"]
        assert {r["label"] for r in refs} == REFERENCE_LABELS
        trials = [r for r in rows if r["role"] == "trial" and r["state"] == "complete"]
        assert len(trials) >= 2
        for row in refs + trials:  # every evaluation ran on the loopback worker
            assert row["node_id"] == worker_id and row["worker"], row

        launcher.ray("ray down", "down", options=("-y",), timeout=120)
        down = True
        for _ in range(40):
            left = ray_processes()
            if not left:
                break
            time.sleep(0.5)
        assert not left, f"Ray processes left after `ray down`: {left}"
    finally:
        if not down:
            launcher.ray("ray down (cleanup)", "down", options=("-y",), timeout=120,
                         check=False)
        subprocess.run([*ray_cli(), "stop", "--force"],
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        with capsys.disabled():
            print(f"\nloopback launcher steps ({time.monotonic() - started:.1f} s in all; "
                  f"outputs in {launcher.logs}):\n{launcher.report()}", flush=True)
