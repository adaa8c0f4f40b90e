"""The `warpsweep` command: one parser, each verb registered by the module that implements it."""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import os
import sys
import warnings
from typing import Any

try:  # numpy and the simulator load here, before `main` runs: Ctrl-C is one line here too
    from simulator.errors import WarpsweepError
    from simulator.errors import WarpsweepWarning
    from tuner.memory import keep_freed_memory
except KeyboardInterrupt:
    sys.stderr.write("warpsweep: interrupted\n")
    raise SystemExit(130) from None

# Each module defines `register(subparsers)`, adding its verb with `set_defaults(run=callable)`;
# the callable takes the parsed namespace and returns an exit code.
VERB_MODULES = (
    "tuner.cli.graph",
    "tuner.cli.simulate",
    "tuner.cli.tune",
    "tuner.cli.bench",
    "tuner.cli.query",
    "tuner.cli.report",
    "tuner.cli.select",
    "tuner.cli.calibrate",
    "tuner.cli.check",
    "tuner.cli.dashboard",
    "tuner.cli.measure",
)


EXAMPLES = """examples:
  warpsweep tune --graph rmat:scale=14,seed=1 --algo bfs --trials 60
  warpsweep simulate --graph rmat:scale=16 --algo bfs --set mapping=vwarp --set w=8
  warpsweep graph info file:../shared/graphs/USA-road-NY.gr.gz
  warpsweep VERB --help      (every verb lists its options and examples)
"""


def version_text() -> str:
    """``warpsweep X.Y.Z (commit abc123)``: what produced a result, for bug reports."""
    from tuner.env import git_commit
    from tuner.env import warpsweep_version

    commit = git_commit()
    return f"warpsweep {warpsweep_version()}" + (f" (commit {commit})" if commit else "")


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser, with every verb whose module is present."""
    parser = argparse.ArgumentParser(
        prog="warpsweep",
        description="Simulate and autotune GPU graph load balancing strategies.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=version_text())
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for name in VERB_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(sub)
    return parser


class _WatchedOutput:
    """Standard output that remembers a failed write: which disk was full when an OSError
    names no file (a redirection's, or the results')."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.failed = False

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except OSError:
            self.failed = True
            raise

    def flush(self) -> None:
        try:
            self.stream.flush()
        except OSError:
            self.failed = True
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _standard_output_fails() -> bool:
    """Whether a write to standard output failed; if so it is pointed at the null device,
    so that Python's flush at exit does not fail again (exit 120)."""
    if not (isinstance(sys.stdout, _WatchedOutput) and sys.stdout.failed):
        return False
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return True


def _caused_by_interrupt(exc: BaseException) -> bool:
    """Whether a KeyboardInterrupt lies in ``exc``'s chain of causes."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; bad input gives one line on stderr and exit 2."""
    if sys.stdout is None:  # `>&-`: an answer would be lost, or a traceback after the work
        if sys.stderr is not None:
            print("warpsweep: error: standard output is closed (>&-): give it a file or "
                  "/dev/null", file=sys.stderr)
        return 2
    for stream in (sys.stdout, sys.stderr):  # text the locale's encoding lacks: escaped,
        # not a UnicodeEncodeError traceback (UTF-8 mode off: LC_ALL=C PYTHONUTF8=0); in
        # UTF-8, a file name's bytes that no encoding reads written back as they were given
        if stream is not None and hasattr(stream, "reconfigure"):
            utf8 = (getattr(stream, "encoding", None) or "").lower().replace("-", "") == "utf8"
            stream.reconfigure(errors="surrogateescape" if utf8 else "backslashreplace")
    try:
        parser = build_parser()  # imports every verb's module: a second or so
    except (KeyboardInterrupt, RuntimeError) as exc:
        # a Ctrl-C landing while a class is made reaches here as the RuntimeError it causes
        # (``__set_name__``; probe SWEEP2): interrupted all the same
        if not isinstance(exc, KeyboardInterrupt) and not _caused_by_interrupt(exc):
            raise
        print("warpsweep: interrupted", file=sys.stderr)
        return 130
    args, extra = parser.parse_known_args(argv)
    if extra:  # named by the (sub)command's own usage, not the top level's (probes INST, CLI)
        _innermost_parser(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
    from tuner.cli import supervise

    if argv is None and supervise.wants_supervision(args):
        return supervise.supervised(args)
    supervise.obey_stop()
    keep_freed_memory()
    warnings.showwarning = _one_line_warning
    _WARNED.clear()  # once a command (main may run several in one process)
    watched = sys.stdout = _WatchedOutput(sys.stdout)
    try:
        code = _run(args)
    finally:
        sys.stdout = watched.stream
    # (not after a traceback: the supervising command then names the end, with the resume)
    supervise.report_finished(args)
    return code


def _innermost_parser(parser: argparse.ArgumentParser,
                      args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the command ``args`` ran: ``graph info``'s, not ``graph``'s."""
    while True:
        commands = next((a for a in parser._actions
                         if isinstance(a, argparse._SubParsersAction)), None)
        chosen = getattr(args, commands.dest, None) if commands is not None else None
        if chosen not in (commands.choices if commands is not None else {}):
            return parser
        parser = commands.choices[chosen]


_WARNED: set[str] = set()


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings about the user's data as one line each, once (a report reads the results
    three times: probe CR); others as Python shows them."""
    if issubclass(category, WarpsweepWarning):
        if str(message) not in _WARNED:
            _WARNED.add(str(message))
            print(f"warpsweep: warning: {message}", file=file or sys.stderr)
        return
    print(warnings.formatwarning(message, category, filename, lineno, line),
          file=file or sys.stderr, end="")


def _run(args: argparse.Namespace) -> int:
    """The parsed command's exit code; bad input, Ctrl-C and a failing disk as one line."""
    try:
        return int(args.run(args) or 0)
    except WarpsweepError as exc:
        print(f"warpsweep: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("warpsweep: interrupted", file=sys.stderr)
        return 130
    except MemoryError as exc:  # past the size guard (an estimate short of the real need)
        from simulator.sizes import ENV_MAX_MEMORY

        reason = " ".join(str(exc).split())[:300] or "MemoryError"
        # (the limit's figure now is what is left after the failed run grew: not what the
        # check saw before it, so it is not quoted)
        print(f"warpsweep: error: ran out of memory ({reason}), past what the size check "
              "estimated up front (the graph and a simulation's arrays; not what grows with a "
              "run's length, such as a long path's levels): use a smaller graph or setting"
              + (f", or lower {ENV_MAX_MEMORY} (now {os.environ[ENV_MAX_MEMORY].strip()}) so "
                 "the check refuses such graphs up front" if os.environ.get(ENV_MAX_MEMORY)
                 else f", or set {ENV_MAX_MEMORY} below this machine's memory so the check "
                 "refuses such graphs up front"), file=sys.stderr)
        if getattr(args, "verb", None) not in ("tune", "sweep"):
            return 2
        from tuner.cli.tune import resume_command

        print("warpsweep: every finished evaluation is saved; resume with:\n  "
              + resume_command(args), file=sys.stderr)
        return 1
    except BrokenPipeError:  # `warpsweep ... | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # a disk or bucket that fails mid-run: say so, no traceback
        verb = getattr(args, "verb", None)
        where = getattr(args, "results", None)
        text = str(exc)
        on_output = False
        if exc.filename is None and where and exc.errno in (errno.EPERM, errno.EACCES):
            text += f" (under {where})"  # a read or a write: no more is known (review CR25)
        elif exc.filename is None and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
            # no file named: say whose disk is full or will not take writes (the results are
            # written by these verbs alone; a reader's failing write is its output's)
            out = getattr(args, "out", None) or getattr(args, "model", None)
            on_output = _standard_output_fails()
            if on_output:
                text += " (writing to standard output)"
            elif verb not in ("tune", "sweep", "check"):
                text += f" (writing {out})" if out else " (writing the command's output)"
            elif where:
                text += f" (writing under {where})"
        print(f"warpsweep: error: {text}", file=sys.stderr)
        if verb == "check" and getattr(args, "repair", False):
            print("warpsweep: the repair stopped at that write; once it can write, run "
                  "`check --repair` again (what it set right so far is kept)", file=sys.stderr)
        if verb in ("tune", "sweep"):
            from tuner.cli.tune import resume_command

            what = ("its output could not be written; every finished evaluation is saved"
                    if on_output else
                    "the run stopped writing its results; what it wrote is kept (a resume "
                    "writes the rows its journal holds beyond them, and cuts a torn last line)")
            print(f"warpsweep: {what}. Once the disk or bucket takes writes again, resume "
                  "with:\n  " + resume_command(args), file=sys.stderr)
        return 1
