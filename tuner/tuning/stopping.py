"""How a run stops on a signal: the signals that stop it as Ctrl-C does, held off while what
finished is written, so that a second one does not cut the final flush short."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# What stops a supervised run's child as Ctrl-C does (``tuner.cli.supervise``, which sends
# it for the first forwarded signal and when the supervising process dies). Not SIGINT, which
# the child inherits ignored where the command runs as a background job of a non-interactive
# shell (`warpsweep tune ... &`): such a child had gone on tuning, its journal locked, after
# the command was killed or told to stop.
STOP = signal.SIGUSR2
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, STOP)


class StoppedBeforeSaved(KeyboardInterrupt):
    """A stop pressed again while the run wrote what finished: some rows may be only in the
    study journal, from which the next run of the command rebuilds them."""


@contextmanager
def stop_signals_held() -> Iterator[None]:
    """Hold the signals that interrupt the run (those whose handler raises KeyboardInterrupt)
    until the block ends, then raise KeyboardInterrupt if one came. A second one inside the
    block interrupts it at once, as ``StoppedBeforeSaved`` (a stuck disk must not hold the
    run for good). A signal arriving as the run stopped had aborted its last flush, and the
    run said every finished evaluation was saved while the rows lagged the journal."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def hold(signum: int, _frame: object) -> None:
        received.append(signum)
        if len(received) > 1:
            restore()
            raise StoppedBeforeSaved

    previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    held = [s for s, handler in previous.items() if handler is signal.default_int_handler]

    def restore() -> None:
        for s in held:
            signal.signal(s, previous[s])

    for s in held:
        signal.signal(s, hold)
    try:
        yield
    except KeyboardInterrupt as exc:
        if received and not isinstance(exc, StoppedBeforeSaved):
            raise StoppedBeforeSaved from exc
        raise
    finally:
        restore()
    if received:
        raise KeyboardInterrupt


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """SIGTERM stops an in-process run as Ctrl-C does (what `timeout` or a batch scheduler
    sends), where nothing else handles it: it had ended the run at once, the rows of the last
    two seconds left to the journal and no word said."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL):
        yield
        return
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:  # unless something set its own meanwhile (Ray, as it starts)
        if signal.getsignal(signal.SIGTERM) is signal.default_int_handler:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
