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
import stat
import subprocess
import sys

from tuner.tuning.executor import SUPERVISED_FD  # set in the child: its end of the pipe
from tuner.tuning.stopping import STOP  # what stops the child as Ctrl-C does (obey_stop)

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
SUPERVISED_VERBS = ("tune", "sweep")


def wants_supervision(args: argparse.Namespace) -> bool:
    """Whether this command runs a study on Ray from the console (not a child already, not
    ``--workers 0``, which runs in this process without Ray)."""
    return (getattr(args, "verb", None) in SUPERVISED_VERBS and args.workers != 0
            and SUPERVISED_FD not in os.environ)


def obey_stop() -> None:
    """In a supervised child: ``STOP`` interrupts the run as Ctrl-C does."""
    if SUPERVISED_FD in os.environ:
        signal.signal(STOP, signal.default_int_handler)


def report_finished(args: argparse.Namespace) -> None:
    """In a supervised child: tell the parent that ``main`` returned (whatever its code).
    Only a verb that is supervised, and only down a pipe: the variable inherited by another
    command (a `query` run from a supervised job) had written "1" into its output."""
    fd = os.environ.get(SUPERVISED_FD)
    if fd is None or getattr(args, "verb", None) not in SUPERVISED_VERBS:
        return
    try:
        if stat.S_ISFIFO(os.fstat(int(fd)).st_mode):
            os.write(int(fd), b"1")
    except (OSError, ValueError):
        pass  # a parent gone: nobody to tell


def supervised(args: argparse.Namespace) -> int:
    """Run this command again in a child and return its exit code, naming an abrupt end.

    The child imports what this process imported (its package's directory first on the
    path, never the working directory) and has its own process group, so a terminal's Ctrl-C
    reaches it once, through here. The first SIGINT, SIGTERM or SIGHUP is passed on as
    ``STOP``: the child stops as Ctrl-C always stopped a run, saying how to resume (a second
    one inside Ray's shutdown had crashed it); a third kills it. It gets ``STOP`` too if
    this process dies."""
    child: subprocess.Popen | None = None
    received: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        received.append(signum)
        if child is None:
            return  # sent once it starts
        if len(received) == 1:
            child.send_signal(STOP)
        elif len(received) == 2:
            print("warpsweep: stopping; every finished evaluation is saved (once more to "
                  "kill it now)", file=sys.stderr)
        else:
            child.kill()

    # a signal ignored here (nohup's SIGHUP, a background job's SIGINT) stays ignored, and the
    # child inherits that: forwarding it would end a child the user meant to keep running
    previous = {s: signal.signal(s, forward) for s in FORWARDED
                if signal.getsignal(s) is not signal.SIG_IGN}
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)  # a process the child started may hold the write end
    try:
        env = {**os.environ, SUPERVISED_FD: str(write_end),
               "PYTHONPATH": os.pathsep.join(filter(None, (_package_root(),
                                                           os.environ.get("PYTHONPATH"))))}
        child = subprocess.Popen([sys.executable, "-P", "-m", "tuner.cli", *sys.argv[1:]],
                                 env=env, pass_fds=(write_end,), process_group=0,
                                 preexec_fn=_interrupt_when_parent_dies)
        os.close(write_end)
        write_end = None
        if received:
            child.send_signal(STOP)
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
    if received:
        why = (f"while stopping on {signal.Signals(received[0]).name}, before it could say "
               "so itself")
    else:
        why = ("without a word of its own: the Ray node it ran on died (its raylet stopped, "
               "or the machine ran out of memory) or the process was killed")
    print(f"warpsweep: error: the {args.verb} run ended abruptly ({how}), {why}. Every "
          f"evaluation that finished is saved; resume with:\n  {resume_command(args)}",
          file=sys.stderr)
    return code if code > 0 else 128 - code


def _package_root() -> str:
    """The directory this ``tuner`` package was imported from (the child imports the same)."""
    import tuner

    return os.path.dirname(os.path.dirname(os.path.abspath(tuner.__file__)))


def _interrupt_when_parent_dies() -> None:
    """In the child, before it runs: ``STOP`` when the supervising process dies (Linux), so
    a killed command does not leave its run going on alone."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, int(STOP))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
