"""Names of the hidden files a write puts beside its target before it renames them over it."""

from __future__ import annotations

from pathlib import Path

MAX_NAME_BYTES = 255  # a file name's limit on Linux's and macOS's filesystems


def beside(path: str | Path, tag: str = "tmp") -> Path:
    """A hidden sibling of ``path`` for a write under way, ``.NAME.TAG``: NAME cut short
    where the whole would pass 255 bytes (a name of 250 had been refused for its temp file's
    length, the message blaming the name)."""
    path = Path(path)
    return path.with_name(f".{short_name(path.name, len(tag) + 2)}.{tag}")


def short_name(name: str, reserved: int) -> str:
    """``name`` cut (on a character) so that ``reserved`` more bytes fit in a file name."""
    return name.encode()[:MAX_NAME_BYTES - reserved].decode(errors="ignore")
