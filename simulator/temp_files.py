"""Names of the hidden files a write puts beside its target before it renames them over it,
and where a write to a user's path goes."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from simulator.errors import ConfigError

MAX_NAME_BYTES = 255  # a file name's limit on Linux's and macOS's filesystems


def beside(path: str | Path, tag: str = "tmp") -> Path:
    """A hidden sibling of ``path`` for a write under way, ``.NAME.TAG``: NAME cut short
    where the whole would pass 255 bytes (a name of 250 had been refused for its temp file's
    length, the message blaming the name). ``.`` gives ``./..TAG``."""
    path = Path(path)
    return path.parent / f".{short_name(path.name, len(os.fsencode(tag)) + 2)}.{tag}"


def short_name(name: str, reserved: int) -> str:
    """``name`` cut (on a character) so that ``reserved`` more bytes fit in a file name; its
    bytes as the filesystem takes them (a name the command line gave in bytes no encoding
    reads stays those bytes)."""
    room = MAX_NAME_BYTES - reserved
    if len(os.fsencode(name)) <= room:
        return name
    cut = name[:room]  # a character is at least one byte
    while len(os.fsencode(cut)) > room:
        cut = cut[:-1]
    return cut


def rename_target(path: str | Path) -> Path:
    """The file a write to ``path`` renames its temporary file over: a symlink's target (the
    link kept; renaming over the link had replaced it with a file, its target left stale).
    ConfigError for a link that leads back to itself."""
    path = Path(path)
    if not path.is_symlink():
        return path
    try:
        path.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # Path.resolve's RuntimeError had been a traceback
            raise ConfigError(f"{str(path)!r} is a symbolic link that leads back to itself"
                              ) from None
    return Path(os.path.realpath(path))


@contextmanager
def written_whole(path: str | Path, tag: str = "tmp") -> Iterator[Path]:
    """Where to write ``path``'s new content: a hidden sibling renamed over it once the block
    succeeds (a reader sees all of it or none, and a failed write leaves nothing); ``path``
    itself where it is a device or a pipe (``--out /dev/null``), which a rename would have
    unlinked and replaced with a file. ``tag`` ends the sibling's name (``tmp.toml``: a reader
    that goes by the suffix can check it)."""
    target = rename_target(path)
    if target.exists() and not target.is_file():
        yield target
        return
    tmp = beside(target, tag)
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(OSError):  # a read-only disk refuses the unlink too
            tmp.unlink(missing_ok=True)
