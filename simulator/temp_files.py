"""Names of the hidden files a write puts beside its target before it renames them over it."""

from __future__ import annotations

import os
from pathlib import Path

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
