"""Where evaluations run: in the driver process (``--workers 0``) or as Ray tasks.

An executor has a ``capacity`` (how many calls may be in flight), ``call`` (start
``fn(*args)``; arguments made with ``share`` travel by reference), ``wait`` and ``result``.
Ray is imported only by ``RayExecutor``, so the in-process path and the simulator never need it.
``HandoverExecutor`` (the default) evaluates in-process and starts a local Ray in the background
only once the work left is worth Ray's start-up, handing new calls to it when it is up.
"""

from __future__ import annotations

import abc
import logging
import os
import signal
import socket
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from simulator.errors import ConfigError
from tuner.dtype_pickling import pickle_dtypes_by_name
from tuner.env import ray_initialized
from tuner.memory import keep_freed_memory

TASK_RETRIES = 3
CPU_REFRESH_S = 1.0


# Set in a supervised run's child (``tuner.cli.supervise``): its end of the parent's pipe.
SUPERVISED_FD = "WARPSWEEP_SUPERVISED_FD"


def sigterm_stops_the_run() -> None:
    """In a supervised run's child, once Ray has started (on the main thread only): SIGTERM
    stops the run as Ctrl-C does, every finished evaluation saved. Ray's handler, set as it
    starts, had printed its native stack and ended the child without a word."""
    if (os.environ.get(SUPERVISED_FD) is not None
            and threading.current_thread() is threading.main_thread()):
        signal.signal(signal.SIGTERM, signal.default_int_handler)


class Future:
    """A call's pending result."""

    __slots__ = ("ref", "value", "error", "done")

    def __init__(self, ref: Any = None) -> None:
        self.ref = ref
        self.value: Any = None
        self.error: BaseException | None = None
        self.done = False


class Executor(abc.ABC):
    """Runs calls; at most ``capacity`` should be in flight."""

    capacity: int = 1
    description: str = ""
    asynchronous: bool = False  # calls run elsewhere while the driver goes on
    # how calls are handed out, as a study's journal records it per run (what a seed's
    # trials depend on besides the seed: tells in call order, or as results come)
    mode: str = "in-process"

    @abc.abstractmethod
    def call(self, fn: Callable[..., Any], *args: Any, num_returns: int = 1) -> list[Future]:
        """Start ``fn(*args)``; with ``num_returns`` > 1 the returned tuple is split."""

    @abc.abstractmethod
    def wait(self, futures: list[Future], timeout: float) -> list[Future]:
        """Those of ``futures`` that are done, waiting up to ``timeout`` s for at least one."""

    @abc.abstractmethod
    def result(self, future: Future) -> Any:
        """The call's value; raises if the call (or its worker) failed."""

    @abc.abstractmethod
    def share(self, future: Future, rebuild: Rebuild | None = None) -> Any:
        """An argument for later calls that refers to ``future``'s value without fetching it;
        ``rebuild``, a call that computes the value again where it cannot be fetched."""

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release workers and cancel what is still running."""


class InlineExecutor(Executor):
    """Runs each call at once in this process (``--workers 0``)."""

    capacity = 1
    description = "in-process"

    def call(self, fn: Callable[..., Any], *args: Any, num_returns: int = 1) -> list[Future]:
        """Run now; errors are kept for ``result``."""
        futures = [Future() for _ in range(num_returns)]
        try:
            value = fn(*args)
            values = value if num_returns > 1 else (value,)
            for f, v in zip(futures, values, strict=True):
                f.value = v
        except Exception as exc:
            for f in futures:
                f.error = exc
        for f in futures:
            f.done = True
        return futures

    def wait(self, futures: list[Future], timeout: float) -> list[Future]:
        """Everything is already done."""
        return [f for f in futures if f.done]

    def result(self, future: Future) -> Any:
        """The value, or the call's exception re-raised."""
        if future.error is not None:
            raise future.error
        return future.value

    def share(self, future: Future, rebuild: Rebuild | None = None) -> Any:
        """The value itself."""
        return self.result(future)


@dataclass(frozen=True)
class Rebuild:
    """How to compute a shared value again: return ``index`` of ``fn(*args)``."""

    fn: Callable[..., Any]
    args: tuple
    index: int


@dataclass(frozen=True)
class Shared:
    """A reference to an object in Ray's store, resolved (and cached) by the worker, and how
    to compute it again where the store cannot give it (``rebuild``)."""

    ref: Any
    rebuild: Rebuild | None = None


# How long a worker waits for a shared object before computing it again itself (where it
# can): an object lost with its node is re-created by Ray from its lineage, but a worker was
# seen waiting for one for good after a node left (tests/test_cluster_multinode.py).
RESOLVE_TIMEOUT_S = 30.0


# Prepared graphs and functional runs a worker keeps resolved, most recently used first. A
# sweep interleaves its studies, so this must exceed two objects per study in flight, or each
# trial would fetch its graph again (from another node: tens of ms). Numpy arrays come out of
# Ray's object store without a copy, and the driver holds the same objects for as long as
# their studies run, so keeping them costs little memory.
_CACHE: OrderedDict[str, Any] = OrderedDict()
_CACHE_SIZE = 64


# Per worker process, since last taken (``take_resolve_counts``): shared objects fetched from
# the store, and computed again here because the store could not give them.
_COUNTS = {"fetched": 0, "rebuilt": 0}


def take_resolve_counts() -> tuple[int, int]:
    """Fetches and rebuilds in this worker process since the last call (then zero)."""
    fetched, rebuilt = _COUNTS["fetched"], _COUNTS["rebuilt"]
    _COUNTS["fetched"] = _COUNTS["rebuilt"] = 0
    return fetched, rebuilt


def _resolve(arg: Any) -> Any:
    if not isinstance(arg, Shared):
        return arg
    import ray

    key = arg.ref.hex()
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    if arg.rebuild is None:
        value = ray.get(arg.ref)
        _COUNTS["fetched"] += 1
    else:
        try:
            value = ray.get(arg.ref, timeout=RESOLVE_TIMEOUT_S)
            _COUNTS["fetched"] += 1
        except (ray.exceptions.GetTimeoutError, ray.exceptions.ObjectLostError) as exc:
            logging.getLogger(__name__).warning(
                "shared object %s not fetched (%s); computing it on this node", key[:16],
                type(exc).__name__)
            value = _rebuild_on_node(key, arg.rebuild)
    _CACHE[key] = value
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return value


class NodeCache:
    """A Ray actor on one node (no CPU) that computes a lost shared object again once for the
    whole node and keeps it in the store (it owns the copy): the node's other worker
    processes fetch that copy instead of computing it again each."""

    def __init__(self) -> None:
        self._refs: dict[str, Any] = {}

    def get(self, key: str, rebuild: Rebuild) -> tuple[list[Any], bool]:
        """The value's reference, in a list (so Ray does not resolve it), and whether it was
        computed by this call."""
        import ray

        if key in self._refs:
            return [self._refs[key]], False
        value = rebuild.fn(*rebuild.args)[rebuild.index]
        self._refs[key] = ray.put(value)
        return [self._refs[key]], True


_NODE_CACHES: dict[str, Any] = {}  # this worker's handle of its node's NodeCache


def _rebuild_on_node(key: str, rebuild: Rebuild) -> Any:
    """``rebuild``'s value through this node's ``NodeCache`` (computed here if the actor
    cannot be reached)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    try:
        node = ray.get_runtime_context().get_node_id()
        actor = _NODE_CACHES.get(node) or ray.remote(NodeCache).options(
            name=f"warpsweep-node-cache-{node}", namespace="warpsweep", get_if_exists=True,
            num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
        ).remote()
        _NODE_CACHES[node] = actor  # a named actor lives while a handle of its owner does
        (ref,), built = ray.get(actor.get.remote(key, rebuild))
        _COUNTS["rebuilt"] += int(built)
        return ray.get(ref)
    except Exception as exc:  # noqa: BLE001 - the node's cache is a saving; computing here is sure
        logging.getLogger(__name__).warning("node cache unavailable (%s: %s); computing here",
                                            type(exc).__name__, str(exc)[:300])
        _COUNTS["rebuilt"] += 1
        return rebuild.fn(*rebuild.args)[rebuild.index]


def run_call(fn: Callable[..., Any], *args: Any) -> Any:
    """Body of every Ray task: resolve shared arguments (once per worker) and call ``fn``
    (whose results, a study's graph and functional runs among them, go to Ray's store with
    their dtypes pickled by name: see ``tuner.dtype_pickling``)."""
    keep_freed_memory()
    pickle_dtypes_by_name()
    return fn(*(_resolve(a) for a in args))


@contextmanager
def _quiet_token_notice() -> Iterator[None]:
    """Ray's notice that token authentication is on (as it should be) is left out of the
    tool's output, which `-q` and `--json` keep to the results; its warning that it is off is
    not. So is its notice that a Ray started off the main thread (``HandoverExecutor``) sets
    no SIGTERM handler: the driver's own handling of signals is unchanged."""
    notices = (("ray._private.authentication.authentication_token_setup",
                "Token authentication is enabled"),
               ("ray._private.worker", "SIGTERM handler is not set"))
    filters = []
    for name, text in notices:
        def not_the_notice(record: logging.LogRecord, text: str = text) -> bool:
            return not record.getMessage().startswith(text)

        logging.getLogger(name).addFilter(not_the_notice)
        filters.append((name, not_the_notice))
    try:
        yield
    finally:
        for name, f in filters:
            logging.getLogger(name).removeFilter(f)


class RayExecutor(Executor):
    """Runs calls as Ray tasks, one CPU each, on a local or existing Ray cluster."""

    asynchronous = True

    def __init__(self, workers: int | None = None, address: str | None = None) -> None:
        try:
            import ray
        except ImportError as exc:  # pragma: no cover - ray is a dependency
            raise ConfigError(f"Ray is not installed ({exc}); use --workers 0") from None
        self._ray = ray
        self._owns = False
        pickle_dtypes_by_name()  # what the driver puts in the store (see run_call)
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING,
                                      "log_to_driver": True}
            target = address
            if address is None:
                if workers:
                    kwargs["num_cpus"] = min(workers, os.cpu_count() or workers)
                # a cluster this machine happens to run (`ray start`) is not ours to borrow:
                # an existing one is named by --address (or by RAY_ADDRESS, as Ray's jobs set)
                if not os.environ.get("RAY_ADDRESS"):
                    target = "local"
            if address is not None:
                probe_address(address)
            elif os.environ.get("RAY_ADDRESS"):  # Ray would retry an unreachable one for good
                probe_address(os.environ["RAY_ADDRESS"], named="RAY_ADDRESS")
            try:
                with _quiet_token_notice():
                    ray.init(address=target, **kwargs)
            except Exception as exc:  # noqa: BLE001 - Ray raises bare Exception on a node that
                # never starts (`ulimit -v` below the raylet's reservation)
                reason = ' '.join(str(exc).split())[:300]
                if address is None and os.environ.get("RAY_ADDRESS"):
                    raise ConfigError(f"no Ray cluster at RAY_ADDRESS "
                                      f"{os.environ['RAY_ADDRESS']!r}: {reason}") from None
                if address is None:
                    raise ConfigError(f"could not start a local Ray cluster ({reason}); "
                                      "--workers 0 runs in this process without Ray") from None
                # something listens there (probe_address): a cluster this driver cannot join
                auth = ("" if os.environ.get("RAY_AUTH_MODE") == "token" else
                        "; a cluster started with token authentication (Ray's default) takes "
                        "a driver with RAY_AUTH_MODE=token and its token (docs/cluster.md)")
                raise ConfigError(f"could not join the Ray cluster at --address {address!r}: "
                                  f"{reason}{auth}") from None
            self._owns = True
            sigterm_stops_the_run()
        self._workers = workers
        self.max_capacity = 0
        self._read_cpus()
        if self.cpus < 1 and address is None:
            self.close()
            raise ConfigError("the local Ray cluster has no CPUs")
        # a task lost with its node (or worker) is run again by Ray before the driver sees it
        self._task = ray.remote(num_cpus=1, max_retries=TASK_RETRIES)(run_call)
        self._tasks: dict[int, Any] = {}

    def _read_cpus(self) -> None:
        self.cpus = int(self._ray.cluster_resources().get("CPU", 0))
        self._cpus_at = time.monotonic()

    @property
    def capacity(self) -> int:
        """Calls to keep in flight: the cluster's CPUs now (re-read every second, so nodes
        that join or leave change it), capped by ``--workers``; at least 1, so a cluster
        scaled to zero sees demand and starts a worker."""
        if time.monotonic() - self._cpus_at >= CPU_REFRESH_S:
            self._read_cpus()
        cpus = min(self.cpus, self._workers) if self._workers else self.cpus
        cap = max(1, cpus)
        self.max_capacity = max(self.max_capacity, cap)
        return cap

    @property
    def mode(self) -> str:  # type: ignore[override]
        return f"Ray, up to {self.max_capacity} in flight, results told as they come"

    @property
    def description(self) -> str:
        """For the run's footer."""
        # the cap said only where it held some CPU back (5 on a 2-CPU cluster never did)
        capped = (f", capped at {self._workers}"
                  if self._workers and self._workers < self.cpus else "")
        cpus = "CPU" if self.max_capacity == 1 else "CPUs"
        nodes = self._nodes()
        on = f" on {nodes} nodes" if nodes > 1 else ""
        return f"Ray, up to {self.max_capacity} {cpus} in flight{on}{capped}"

    def _nodes(self) -> int:
        """The cluster's live nodes now (0 where Ray cannot say)."""
        try:
            return sum(1 for node in self._ray.nodes() if node.get("Alive"))
        except Exception:  # noqa: BLE001 - a footer's detail
            return 0

    def call(self, fn: Callable[..., Any], *args: Any, num_returns: int = 1) -> list[Future]:
        """Submit a task."""
        # SPREAD: with exactly one call per CPU in flight, the default policy (pack the first
        # node it sees free, from a resource view a moment old) can queue a call behind a busy
        # node while another idles; spreading keeps every node fed.
        refs = self._task.options(num_returns=num_returns,
                                  scheduling_strategy="SPREAD").remote(fn, *args)
        refs = refs if num_returns > 1 else [refs]
        return [Future(r) for r in refs]

    def wait(self, futures: list[Future], timeout: float) -> list[Future]:
        """``ray.wait`` for the first ready, then every other one ready by then (results
        that arrive together are handled together)."""
        by_ref = {f.ref: f for f in futures}
        refs = list(by_ref)
        ready, rest = self._ray.wait(refs, num_returns=1, timeout=timeout)
        if ready and rest:
            more, _ = self._ray.wait(rest, num_returns=len(rest), timeout=0)
            ready += more
        return [by_ref[r] for r in ready]

    def result(self, future: Future) -> Any:
        """``ray.get``; task and worker failures raise."""
        return self._ray.get(future.ref)

    def share(self, future: Future, rebuild: Rebuild | None = None) -> Any:
        """The object ref, wrapped so workers cache the resolved value (or compute it again
        with ``rebuild`` where it cannot be fetched)."""
        return Shared(future.ref, rebuild)

    def put(self, value: Any) -> Shared:
        """Put a driver-side object into the store once."""
        return Shared(self._ray.put(value))

    def cancel(self, futures: list[Future]) -> None:
        """Best-effort cancellation of running calls: those not finished already (a task
        force-cancelled as it completed had failed a check inside Ray, ending a Ctrl-C'd run
        with exit 1: probe RI, 1 of 5 stops)."""
        refs = [f.ref for f in futures]
        try:
            _, refs = self._ray.wait(refs, num_returns=len(refs), timeout=0, fetch_local=False)
        except Exception:  # noqa: BLE001 - then every one, as before
            pass
        for ref in refs:
            try:
                self._ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - cancelling is best effort at shutdown
                pass

    def close(self) -> None:
        """Shut Ray down if this executor started it."""
        if self._owns and self._ray.is_initialized():
            self._ray.shutdown()
        self._owns = False


def probe_address(address: str, timeout: float = 5.0, named: str = "--address") -> None:
    """Fail fast if nothing listens at a ``HOST:PORT`` or ``ray://HOST:PORT`` address (Ray
    itself retries for minutes); ``auto`` is left to Ray, which answers at once."""
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    if address in ("auto", "local") or not sep or not port.isdigit():
        return
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout) as s:
            answer = _first_answer(s, timeout) if not _ray_tls() else None
    except OSError as exc:
        raise ConfigError(f"no Ray cluster at {named} {address!r}: cannot connect to "
                          f"{host}:{port} ({exc.strerror or exc})") from None
    if answer is not None and not (len(answer) >= 4 and answer[3] == _HTTP2_SETTINGS_TYPE):
        said = (answer.decode("ascii", "replace").splitlines()[0][:60] if answer.strip()
                else "")
        how = f"it answered {said!r}" if said else "it closed the connection"
        raise ConfigError(
            f"no Ray cluster at {named} {address!r}: something listens at {host}:{port} but "
            f"does not speak gRPC as a Ray head does ({how}); a head's address is its GCS "
            "port, 6379 unless `ray start --head --port` chose another")


# What an HTTP/2 client sends first (RFC 9113 3.4: the preface, then a SETTINGS frame, empty
# here), and how every HTTP/2 server's answer begins: a SETTINGS frame (type 4, flags 0, on
# stream 0), its 3-byte length first. Ray's GCS and its client server speak gRPC over HTTP/2.
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
_HTTP2_SETTINGS_TYPE = 4


def _first_answer(sock: socket.socket, timeout: float) -> bytes | None:
    """The first bytes a server answers an HTTP/2 preface with (b"": it closed the
    connection), or None where it says nothing within ``timeout`` (a loaded head may be
    slow: left to Ray)."""
    sock.settimeout(timeout)
    try:
        sock.sendall(_HTTP2_PREFACE)
        answer = b""
        while len(answer) < 9:
            more = sock.recv(80)
            if not more:
                break
            answer += more
        return answer
    except TimeoutError:
        return None
    except OSError:  # reset by a server that does not take what was sent
        return b""


def _ray_tls() -> bool:
    """Whether Ray connects over TLS (``RAY_USE_TLS``): the plain preface would not be
    answered."""
    return os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true")


# In-process work left (seconds at the mean evaluation time so far) above which the default
# executor starts a local Ray. Ray's start-up takes 2-5 s of wall time (10 on a loaded
# machine), a CPU meanwhile and ~1.5 s to shut down, and a run that ends before Ray is up
# waits for it: below this a study finishes sooner in-process (a 10-trial rmat:scale=10 study
# is ~1 s; a 40-trial rmat:scale=15 one ~9 s), above it Ray's CPUs win it back.
RAY_AFTER_S = 15.0


class Local:
    """A value computed in-process that later calls take by reference: passed as it is to an
    in-process call, put into Ray's store once for Ray calls (``HandoverExecutor``)."""

    def __init__(self, value: Any, rebuild: Rebuild | None = None) -> None:
        self.value = value
        self.rebuild = rebuild


class HandoverExecutor(Executor):
    """The default (no ``--workers``, no ``--address``): evaluates in this process, one call
    at a time, and starts a local Ray in a background thread only when told (``consider``)
    that the work left exceeds ``start_after_s``; once Ray is up, every new call goes to it
    and up to every CPU is in flight.

    In-process calls finish inside ``call``, so nothing is in flight when Ray takes over:
    no result can be lost or doubled by the handover. A small study, or a resume with nothing
    left, never starts Ray. Ray is started and shut down by the same background thread (its
    processes are tied to the thread that started them, which waits until ``close``).
    """

    def __init__(self, start_after_s: float | None = None,
                 cpus: int | None = None) -> None:
        self.start_after_s = RAY_AFTER_S if start_after_s is None else start_after_s
        self._cpus = (os.cpu_count() or 1) if cpus is None else cpus
        self._inline = InlineExecutor()
        self._ray: RayExecutor | None = None
        self._starting: RayExecutor | None = None
        self._thread: threading.Thread | None = None
        self._up = threading.Event()
        self._stop = threading.Event()
        self.start_error: str | None = None
        self.inline_calls = 0
        self.ray_calls = 0
        self._puts: weakref.WeakKeyDictionary[Local, Shared] = weakref.WeakKeyDictionary()

    # -- starting Ray ----------------------------------------------------------------------
    def consider(self, work_left_s: float) -> None:
        """Start Ray in the background if the in-process work left is worth it (and this
        machine has more than one CPU to spread it over)."""
        if self._thread is None and self._cpus > 1 and work_left_s > self.start_after_s:
            self._thread = threading.Thread(target=self._serve_ray, name="warpsweep-ray",
                                            daemon=True)
            self._thread.start()

    def _serve_ray(self) -> None:
        try:
            self._starting = RayExecutor()
        except BaseException as exc:  # noqa: BLE001 - reported by the driver; it goes on
            self.start_error = " ".join(str(exc).split())[:300] or type(exc).__name__
        self._up.set()
        self._stop.wait()
        if self._starting is not None:
            self._starting.close()

    @property
    def started(self) -> bool:
        """Whether Ray was asked to start."""
        return self._thread is not None

    def _poll(self) -> RayExecutor | None:
        if self._ray is None and self._up.is_set() and self._starting is not None:
            self._ray = self._starting
            sigterm_stops_the_run()  # (on the driver's thread: the one that may set it)
        return self._ray

    # -- the executor ----------------------------------------------------------------------
    @property
    def asynchronous(self) -> bool:  # type: ignore[override]
        """Calls run elsewhere once Ray has taken over."""
        return self._poll() is not None

    @property
    def capacity(self) -> int:  # type: ignore[override]
        """1 in-process; the Ray cluster's CPUs once it is up."""
        ray = self._poll()
        return ray.capacity if ray is not None else 1

    @property
    def max_capacity(self) -> int:
        """The most calls that were in flight at once."""
        return self._ray.max_capacity if self._ray is not None else 1

    mode = "in-process, handing over to a local Ray (results then told as they come)"

    @property
    def description(self) -> str:  # type: ignore[override]
        """For the run's footer: where the evaluations ran."""
        if self._ray is None or not self.ray_calls:
            return "in-process" + (f" (Ray did not start: {self.start_error})"
                                   if self.start_error else "")
        return (f"in-process for the first {self.inline_calls} calls, then "
                f"{self._ray.description}")

    def call(self, fn: Callable[..., Any], *args: Any, num_returns: int = 1) -> list[Future]:
        """In-process (done on return) until Ray is up, then a Ray task."""
        ray = self._poll()
        if ray is None:
            self.inline_calls += 1
            plain = [a.value if isinstance(a, Local) else a for a in args]
            return self._inline.call(fn, *plain, num_returns=num_returns)
        self.ray_calls += 1
        return ray.call(fn, *(self._in_store(a) if isinstance(a, Local) else a for a in args),
                        num_returns=num_returns)

    def _in_store(self, local: Local) -> Shared:
        shared = self._puts.get(local)
        if shared is None:
            shared = Shared(self._ray._ray.put(local.value), local.rebuild)
            self._puts[local] = shared
        return shared

    def wait(self, futures: list[Future], timeout: float) -> list[Future]:
        """In-process calls are done; Ray's are waited for."""
        done = [f for f in futures if f.ref is None and f.done]
        if done or self._ray is None:
            return done
        return self._ray.wait([f for f in futures if f.ref is not None], timeout)

    def result(self, future: Future) -> Any:
        """The value (an in-process call's exception, or a Ray task's failure, re-raised)."""
        if future.ref is None:
            return self._inline.result(future)
        return self._ray.result(future)

    def share(self, future: Future, rebuild: Rebuild | None = None) -> Any:
        """An in-process value wrapped as ``Local`` (put into Ray's store when a Ray call
        first takes it); a Ray result by reference."""
        if future.ref is None:
            return Local(self._inline.result(future), rebuild)
        return self._ray.share(future, rebuild)

    def cancel(self, futures: list[Future]) -> None:
        """Cancel the Ray calls among ``futures`` (in-process ones are done)."""
        if self._ray is not None:
            self._ray.cancel([f for f in futures if f.ref is not None])

    def close(self) -> None:
        """Shut down the Ray this executor started (waiting for a start under way)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._ray = None


class OrderedExecutor(Executor):
    """Another executor's calls, seen finishing in the order they were made (``--workers N
    --deterministic``), with exactly ``slots`` in flight.

    The runner tells the sampler each result as ``wait`` hands it over and asks the next trial
    when a slot frees. Handing results over in call order, whatever order the workers finish
    them in, makes that sequence of asks and tells, hence every trial a seeded sampler draws,
    the same on every run with the same seed and ``slots``; the price is a worker left idle
    while an earlier call is still running.
    """

    def __init__(self, inner: Executor, slots: int) -> None:
        self.inner = inner
        self.slots = slots
        self.asynchronous = inner.asynchronous
        self._order: dict[Future, int] = {}
        self._made = 0

    @property
    def capacity(self) -> int:
        """Always ``slots``, whatever the cluster has (Ray queues what it cannot run yet)."""
        return self.slots

    @property
    def description(self) -> str:
        """For the run's footer."""
        return f"{self.inner.description}; {self.slots} in flight, results taken in order"

    @property
    def mode(self) -> str:  # type: ignore[override]
        return f"deterministic: {self.slots} in flight, results told in call order"

    def call(self, fn: Callable[..., Any], *args: Any, num_returns: int = 1) -> list[Future]:
        """The inner executor's call, numbered."""
        futures = self.inner.call(fn, *args, num_returns=num_returns)
        for f in futures:
            self._order[f] = self._made
        self._made += 1
        return futures

    def wait(self, futures: list[Future], timeout: float) -> list[Future]:
        """The earliest made of ``futures`` once it is done (nothing before that)."""
        if not futures:
            return []
        first = min(futures, key=lambda f: self._order.get(f, -1))
        done = self.inner.wait([first], timeout)
        if done:
            self._order.pop(first, None)
        return done

    def result(self, future: Future) -> Any:
        """The inner executor's result."""
        return self.inner.result(future)

    def share(self, future: Future, rebuild: Rebuild | None = None) -> Any:
        """The inner executor's shared reference."""
        return self.inner.share(future, rebuild)

    def __getattr__(self, name: str) -> Any:  # put, cancel, max_capacity of a Ray executor
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def close(self) -> None:
        """Close the inner executor."""
        self.inner.close()


def make_executor(workers: int | None, address: str | None,
                  deterministic: bool = False) -> Executor:
    """``--workers 0``: in-process; ``--workers N`` or ``--address``: Ray (local, or the
    cluster at ``address``); neither: in-process, handing over to a local Ray once the work
    left is worth its start-up (``HandoverExecutor``; a cluster job, which sets
    ``RAY_ADDRESS``, and a process that already runs Ray use it at once). ``deterministic``:
    results taken in the order the calls were made, ``workers`` in flight
    (``OrderedExecutor``); in-process runs are in order already."""
    if workers is not None and workers < 0:
        raise ConfigError(f"--workers must be >= 0, got {workers}")
    if workers == 0:
        if address is not None:
            raise ConfigError("--workers 0 runs in-process; it cannot be combined with --address")
        return InlineExecutor()
    if deterministic and workers is None:
        raise ConfigError("--deterministic needs --workers N: the number of evaluations in "
                          "flight is part of what fixes the trials")
    if (workers is None and address is None and not os.environ.get("RAY_ADDRESS")
            and not ray_initialized()):
        return HandoverExecutor()  # a Ray this process already runs is used at once
    ray_executor = RayExecutor(workers=workers, address=address)
    return OrderedExecutor(ray_executor, workers) if deterministic else ray_executor
