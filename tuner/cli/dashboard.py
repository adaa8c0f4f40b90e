"""The ``dashboard`` verb: optuna-dashboard over every study journal of a results directory, live.

optuna-dashboard is an optional extra (``pip install -e ".[dashboard]"``): without it the verb
says so in one line and exits 2.
"""

from __future__ import annotations

import argparse
import importlib.util
import socket

from simulator.errors import ConfigError
from tuner.results.location import Location
from tuner.results.store import check_readable

EXAMPLES = """examples:
  warpsweep dashboard warpsweep-results                 # then open http://127.0.0.1:8080
  warpsweep dashboard results --host 0.0.0.0 --port 8081

Studies show their knobs by name (chunk, not log2_chunk) and the objective by its metric; a
study being tuned updates as its trials finish. The view is read-only.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``dashboard`` to the ``warpsweep`` parser."""
    p = subparsers.add_parser(
        "dashboard", help="optuna-dashboard over a results directory's studies (live)",
        description="Serve optuna-dashboard over every study journal of RESULTS, read-only "
                    "and live. Needs the `dashboard` extra: pip install -e \".[dashboard]\".",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("results", metavar="RESULTS", help="results directory (or URI: its "
                   "journals are read from this machine's copy)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default "
                   "127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    p.set_defaults(run=run_dashboard)


def _check_listenable(host: str, port: int) -> None:
    """Refuse, naming them, a host that does not resolve and a port already taken: the
    server had said it was listening, then failed with the errno alone (exit 1)."""
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:  # '' is every interface, as the server takes it
        found = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
        for family, kind, proto, _, address in found:  # each, as the server may bind any
            with socket.socket(family, kind, proto) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind(address)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {shown}: {exc.strerror or exc}") from None


def run_dashboard(args: argparse.Namespace) -> int:
    """``warpsweep dashboard``: serve until Ctrl-C."""
    if importlib.util.find_spec("optuna_dashboard") is None:
        raise ConfigError('optuna-dashboard is not installed; install the `dashboard` extra: '
                          'pip install -e ".[dashboard]"')
    if not 0 < args.port < 65536:
        raise ConfigError(f"--port must be from 1 to 65535, got {args.port}")
    location = Location.of(args.results)
    check_readable(location)
    journals = location.journal_dir()
    if not journals.is_dir() or not any(journals.glob("*.journal")):
        raise ConfigError(f"{args.results}: no study journal in {journals}")
    _check_listenable(args.host, args.port)
    from optuna.storages import JournalStorage
    from optuna_dashboard import run_server

    from tuner.results.journal import MergedJournals

    run_server(JournalStorage(MergedJournals(journals)), host=args.host, port=args.port)
    return 0
