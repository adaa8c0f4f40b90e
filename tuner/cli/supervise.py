"""A ``tune`` or ``sweep`` run in a child process: a death Python cannot report is reported.

When the Ray node a run's driver is attached to dies (its raylet killed, the machine out of
memory), Ray ends the driver at once: no exception, no ``finally``, exit 1 with nothing of
ours on stderr. The evaluations finished before are safe in the journal, but the user is not
told that, nor how to go on. So the command runs its work in a child and waits: a child that
ends without saying it finished (a byte on a pipe, written as ``main`` returns) ended
abruptly, and the parent names that, with the command that resumes the run.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys

SUPERVISED_FD = "WARPSWEEP_SUPERVISED_FD"  # set in the child: its end of the pipe
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def wants_supervision(args: argparse.Namespace) -> bool:
    """Whether this command runs a study on Ray from the console (not a child already, not
    ``--workers 0``, which runs in this process without Ray)."""
    return (getattr(args, "verb", None) in ("tune", "sweep") and args.workers != 0
            and SUPERVISED_FD not in os.environ)


def report_finished() -> None:
    """In a supervised child: tell the parent that ``main`` returned (whatever its code)."""
    fd = os.environ.get(SUPERVISED_FD)
    if fd is None:
        return
    try:
        os.write(int(fd), b"1")
    except (OSError, ValueError):
        pass  # a parent gone: nobody to tell


def supervised(args: argparse.Namespace) -> int:
    """Run this command again in a child and return its exit code, naming an abrupt end.
    The child has its own process group, so a terminal's Ctrl-C reaches it once, forwarded
    from here (as SIGTERM and SIGHUP are): it then stops as it always has, saying so."""
    child: subprocess.Popen | None = None
    pending: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        if child is None:
            pending.append(signum)
        else:
            child.send_signal(signum)

    # a signal ignored here (nohup's SIGHUP, a background job's SIGINT) stays ignored, and the
    # child inherits that: forwarding it would end a child the user meant to keep running
    previous = {s: signal.signal(s, forward) for s in FORWARDED
                if signal.getsignal(s) is not signal.SIG_IGN}
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)  # a process the child started may hold the write end
    try:
        env = {**os.environ, SUPERVISED_FD: str(write_end)}
        child = subprocess.Popen([sys.executable, "-m", "tuner.cli", *sys.argv[1:]], env=env,
                                 pass_fds=(write_end,), process_group=0)
        os.close(write_end)
        write_end = None
        for signum in pending:
            child.send_signal(signum)
        code = child.wait()
        try:
            finished = os.read(read_end, 1) == b"1"
        except BlockingIOError:  # nothing written
            finished = False
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        os.close(read_end)
        if write_end is not None:
            os.close(write_end)
    if finished:
        return code
    from tuner.cli.tune import resume_command

    how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit {code}"
    print(f"warpsweep: error: the {args.verb} run ended abruptly ({how}), without a word of "
          "its own: the Ray node it ran on died (its raylet stopped, or the machine ran out "
          "of memory) or the process was killed. Every evaluation that finished is saved; "
          f"resume with:\n  {resume_command(args)}", file=sys.stderr)
    return code if code > 0 else 128 - code
