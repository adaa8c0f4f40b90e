"""Graph file readers: SNAP, CSV, Matrix Market, DIMACS9/PACE ``.gr``, METIS, LG and ``.npz``.

Every reader returns an :class:`EdgeList` with vertex ids relabelled to 0..n-1: formats that
declare n (mtx, gr, METIS, LG, npz) keep it, so isolated vertices stay; edge lists without a
vertex count (SNAP, CSV) map the distinct ids, in increasing order, to 0..k-1. Any file may be
gzip-compressed (detected from its first bytes). The bulk of a file is parsed by numpy in a few
passes over its bytes; only the header lines and the error paths are read line by line in
Python. Every error is a GraphError naming the file and, for a bad line, its line number.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simulator.edges import EdgeList
from simulator.errors import GraphError
from simulator.graph import WEIGHT_RULE
from simulator.graph import Graph
from simulator.graph import float32_weight_problem
from simulator.graph import frozen
from simulator.graph import stores_both_ways
from simulator.graph_spec import FILE_FORMATS
from simulator.knob_checks import NUMBER_TEXT
from simulator.sizes import ENV_MAX_MEMORY
from simulator.sizes import TEXT_BYTES_PER_BYTE
from simulator.sizes import format_bytes
from simulator.sizes import memory_limit
from simulator.temp_files import rename_target
from simulator.temp_files import short_name

NPZ_FORMAT = "warpsweep-csr"
NPZ_VERSION = 1

_EXTENSIONS = {
    ".txt": "snap", ".el": "snap", ".edges": "snap", ".edgelist": "snap", ".tsv": "snap",
    ".snap": "snap", ".csv": "csv", ".mtx": "mtx", ".mm": "mtx", ".graph": "metis",
    ".metis": "metis", ".lg": "lg", ".jlg": "lg", ".npz": "npz",
}
# Byte classes: C whitespace separates fields (as np.fromstring's parser sees it).
_SPACE = np.zeros(256, dtype=bool)
_SPACE[[9, 10, 11, 12, 13, 32]] = True
_COMMAS_TO_SPACES = bytes.maketrans(b",", b" ")
_INT = re.compile(rb"^[+-]?\d+$")
_BOM = b"\xef\xbb\xbf"
# compressions read as text they would be garbage: refused by name
_OTHER_COMPRESSIONS = (*((b"BZh%d" % level, "bzip2") for level in range(1, 10)),
                       (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"),
                       (b"7z\xbc\xaf\x27\x1c", "7-zip"))


# --------------------------------------------------------------------------- reading bytes


def read_bytes(path: Path, label: str) -> bytes:
    """The file's contents, gunzipped when it starts with the gzip magic bytes."""
    if not path.exists():
        if path.is_symlink():  # exists() follows it: say where it leads, not "not found"
            try:
                path.resolve(strict=True)
            except FileNotFoundError:
                raise GraphError(f"{label}: broken symlink: {path} -> "
                                 f"{os.readlink(path)}, which does not exist") from None
            except RuntimeError:  # a loop, on Python 3.11
                pass
            except OSError as exc:  # a loop (ELOOP) on later Pythons, or unreadable
                if exc.errno != errno.ELOOP:
                    raise GraphError(f"{label}: cannot follow {path}: "
                                     f"{exc.strerror or exc}") from None
            raise GraphError(f"{label}: symlink loop: {path}")
        raise GraphError(f"{label}: file not found: {path}")
    if not path.is_file():
        raise GraphError(f"{label}: not a regular file: {path}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise GraphError(f"{label}: cannot read {path}: {exc.strerror or exc}") from None
    for magic, kind in _OTHER_COMPRESSIONS:
        if data.startswith(magic):
            raise GraphError(f"{label}: {path} is {kind}-compressed; graph files are read "
                             "plain or gzipped: decompress it (or gzip it)")
    if data[:2] == b"\x1f\x8b":
        data = _gunzipped(data, path, label)
    return data


# gunzipped a piece at a time, so that the total is held to the memory limit as it grows
_GUNZIP_PIECE = 1 << 26


def _gunzipped(data: bytes, path: Path, label: str) -> bytes:
    """``data`` (one or more gzip members) decompressed, refused once it outgrows what its
    parse could fit in (the memory limit over ``TEXT_BYTES_PER_BYTE``): a gzip trailer states
    the size modulo 4 GiB only, so a file that decompresses past it passes the size check
    and had been inflated whole into memory."""
    limit, source = memory_limit()
    cap = None if limit is None else max(limit // TEXT_BYTES_PER_BYTE, 1)
    pieces, total = [], 0
    rest = data

    def piece_size() -> int:  # never more than one byte past the cap before it is checked
        return _GUNZIP_PIECE if cap is None else max(min(_GUNZIP_PIECE, cap + 1 - total), 1)
    try:
        while rest:
            member = zlib.decompressobj(wbits=31)
            tail = rest
            while not member.eof:
                piece = member.decompress(tail, piece_size())
                if not piece and not tail:  # its input used up, no more output: cut short
                    raise EOFError("compressed file ended before the end-of-stream marker")
                pieces.append(piece)
                total += len(piece)
                if cap is not None and total > cap:
                    raise GraphError(
                        f"{label}: {path} decompresses to more than {format_bytes(cap)}, "
                        f"and reading it would need more than {source}; use a smaller "
                        f"graph, or raise the limit with {ENV_MAX_MEMORY}=SIZE")
                tail = member.unconsumed_tail
            rest = member.unused_data
            if rest and rest[:2] != b"\x1f\x8b":
                if rest.strip(b"\x00"):
                    raise OSError("trailing garbage after the last gzip member")
                rest = b""  # zero padding, as gzip itself ignores
    except (OSError, EOFError, zlib.error) as exc:
        raise GraphError(f"{label}: corrupt gzip file {path}: {exc}") from None
    return b"".join(pieces)


def strip_bom(data: bytes) -> bytes:
    """``data`` without a leading UTF-8 byte order mark (Windows editors write one), which
    would make the first line's first field unreadable as a number."""
    return data[len(_BOM):] if data.startswith(_BOM) else data


def unix_newlines(data: bytes) -> bytes:
    """Text whose lines end in CR alone (old Mac editors) with LF endings: the parsers part
    lines at LF, and such a file had read as one line, its first two numbers one edge. CRLF
    files are kept (a CR before LF is a blank)."""
    lone = data.count(b"\r") - data.count(b"\r\n")
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if lone else data


def detect_format(path: Path, data: bytes, label: str = "") -> str:
    """The format from the file name's extension, else from the first lines of the content.

    A file with no known extension, or ``.txt``, is METIS where it reads as a consistent
    METIS graph and not also as an edge list, refused (asking for ``format=``) where it reads
    both ways, else SNAP (``_snap_or_metis``): a guess either way would read another graph
    without a word.
    """
    return _detect(path, data, label)[0]


def _detect(path: Path, data: bytes, label: str = "") -> tuple[str, EdgeList | None]:
    """``detect_format``'s format, with the METIS edges where sniffing had to read them."""
    label = label or f"file:{path}"
    data = strip_bom(data)
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    ext = os.path.splitext(name)[1]
    if ext == ".gr":
        return _gr_kind(data, label), None
    if ext in _EXTENSIONS and ext != ".txt":  # .txt (any text file's name): the content decides
        return _EXTENSIONS[ext], None
    if data[:2] == b"PK":
        return "npz", None
    if data.lstrip()[:14].lower() == b"%%matrixmarket":
        return "mtx", None
    for _, line, _ in _lines(data):  # the first data line decides, after any comments
        line = line.strip()
        if not line or line[:1] in (b"#", b"%"):
            continue
        if line[:2] in (b"c ", b"p ") or line == b"c":
            return _gr_kind(data, label), None
        fields = [f.strip() for f in line.split(b",")]
        if len(fields) >= 3 and fields[2] in (b"d", b"u") and all(
            _INT.match(f) for f in fields[:2]
        ):
            return "lg", None
        return ("csv", None) if b"," in line else _snap_or_metis(data, label)
    raise GraphError(f"{label}: empty graph: the file has no data lines")


_COMMENT_LINE = re.compile(rb"(?m)^[ \t\r\v\f]*%")


def _snap_or_metis(data: bytes, label: str) -> tuple[str, EdgeList | None]:
    """snap, or metis (with its edges), for content without a telling extension: METIS where
    it reads as a consistent METIS graph (a first line ``N M [FMT [NCON]]`` after only ``%``
    comments, N vertex lines, 2M adjacency entries, ids in 1..N, each edge at both ends) and
    not also as an edge list (every line 2 or 3 fields); refused, asking for ``format=``,
    where it reads both ways (a METIS graph of degrees 2 and 3, or a small hand-made edge
    list: no one can tell); else SNAP, as before. (Every METIS-like edge list had been
    refused, and one with a trailing blank line read as METIS: probe CR.)"""
    start, number, line = _skip_header(data, (b"%",))
    words = (line or b"").split()
    if not 2 <= len(words) <= 4 or not all(_INT.match(w) for w in words):
        return "snap", None
    n = int(words[0])
    if n <= 0 or int(words[1]) < 0 or (len(words) > 2 and (
            len(words[2]) > 3 or words[2].strip(b"01"))):
        return "snap", None
    body = start + len(line) + 1  # counted in place: no copy of a file of gigabytes
    # a comment line may be indented, as both readers take it (probe G27: an indented one
    # was counted a vertex line, and a METIS graph read as another edge list)
    comments = len(_COMMENT_LINE.findall(data, body))
    end = len(data)
    while end > body and data[end - 1] in b" \t\r\n\v\f":  # up to the last filled line
        end -= 1
    lines = data.count(b"\n", body) + (not data.endswith(b"\n") and end > body) - comments
    filled_lines = data.count(b"\n", body, end) + (end > body) - comments
    if not filled_lines <= n <= lines:
        return "snap", None
    try:
        metis = _read_metis(data, label, False)
    except GraphError:
        return "snap", None  # no METIS graph: an edge list whose line count is chance
    if len(words) > 3 or not _fields_two_or_three(data, body, number + 1, label):
        return "metis", metis
    raise GraphError(
        f"{label}: cannot tell the format: it reads as a METIS graph (line {number} "
        f"{line.strip().decode()!r} its header, {n} vertex lines after it) and as an edge list "
        "(every line two or three numbers); add format=metis or format=snap to the spec "
        "(file:PATH,format=snap)")


def _fields_two_or_three(data: bytes, body: int, first_line: int, label: str) -> bool:
    """Whether every filled line after a METIS-like header holds 2 or 3 numbers, as an edge
    list's do (a METIS vertex of another degree cannot be read as an edge)."""
    try:
        tokens = _tokenise(data, body, first_line, label, comments=b"%#")
    except GraphError:
        return False
    filled = tokens.counts[tokens.counts > 0]
    return bool(((filled == 2) | (filled == 3)).all())


def _gr_kind(data: bytes, label: str) -> str:
    """dimacs (``p sp``) or pace (``p tw``), from a ``.gr`` file's problem line."""
    odd = ""
    for _, line, _ in _lines(data):
        words = line.split()
        if not words or words[0] == b"c":
            continue
        if words[0] == b"p" and len(words) >= 2 and words[1] in (b"sp", b"tw"):
            return "dimacs" if words[1] == b"sp" else "pace"
        odd = _header_odd(line)
        break
    raise GraphError(f"{label}: .gr file without a 'p sp N M' or 'p tw N M' problem line{odd}")


def _header_odd(line: bytes) -> str:
    """``': unexpected character ... in LINE'`` for a header line holding a NUL, another
    control byte or a byte past ASCII, else '': a line of NULs shows as blanks."""
    odd = _odd_bytes(np.frombuffer(line, dtype=np.uint8))
    if odd.size == 0:
        return ""
    shown = _line(line + b"\n", np.zeros(1, dtype=np.int64), 0)
    return f": {_odd_byte(line, int(odd[0]))} in {shown!r}"


def _lines(data: bytes, start: int = 0, limit: int = 1 << 62):
    """(line number, line, offset of the next line) from byte ``start``; for headers only."""
    number = 1 + data.count(b"\n", 0, start)
    pos = start
    while pos < len(data) and number <= limit:
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        yield number, data[pos:end], end + 1
        number += 1
        pos = end + 1


def _skip_header(data: bytes, comment: tuple[bytes, ...]) -> tuple[int, int, bytes | None]:
    """(offset, line number, line) of the first non-blank, non-comment line, line None at EOF."""
    for number, line, nxt in _lines(data):
        stripped = line.strip()
        if stripped and not stripped.startswith(comment):
            return nxt - len(line) - 1, number, line
    return len(data), 1 + data.count(b"\n"), None


# --------------------------------------------------------------------------- tokenising


@dataclass
class _Tokens:
    """Every number of a body of text, with each line's field count."""

    values: np.ndarray  # all numbers, in order (int64, or float64 where a token needs it)
    counts: np.ndarray  # fields per line
    comment: np.ndarray  # whether each line is a comment line (counts 0)
    first_line: int  # file line number of the body's first line
    text: bytes  # the body as parsed (comments blanked)
    starts: np.ndarray  # byte offset of every line in ``text``

    def line_text(self, i: int) -> str:
        """Line i of the body, for error messages."""
        return _line(self.text, self.starts, i)

    def leading_ints(self, k: int) -> np.ndarray | None:
        """The first ``k`` fields of every line, read as exact int64 (all other fields
        blanked), or None if one of them is not a plain integer."""
        buf = np.frombuffer(self.text, dtype=np.uint8)
        space = _SPACE[buf]
        starts = ~space
        starts[1:] &= space[:-1]
        token = np.cumsum(starts) - 1  # each byte's token (bytes before the first: -1)
        first = np.cumsum(self.counts) - self.counts
        column = np.arange(int(self.counts.sum())) - np.repeat(first, self.counts)
        kept = np.where(~space & (column[np.maximum(token, 0)] < k), buf, np.uint8(32))
        try:
            values = np.fromstring(kept.tobytes(), dtype=np.int64, sep=" ")
        except ValueError:
            return None
        if values.size != k * int((self.counts > 0).sum()) or _saturated(values):
            return None
        return values.reshape(-1, k)


def _tokenise(
    data: bytes,
    start: int,
    first_line: int,
    label: str,
    *,
    comments: bytes = b"",
    prefix: bytes = b"",
    commas: bool = False,
) -> _Tokens:
    """Parse the numbers of ``data[start:]`` with numpy; count the fields of every line.

    Lines whose first byte is in ``comments`` count as empty; with ``prefix``, every other
    non-blank line must start with that letter (DIMACS ``a``), which is dropped.
    """
    raw = data[start:]
    if not raw.endswith(b"\n"):
        raw += b"\n"
    body = raw.translate(_COMMAS_TO_SPACES) if commas else raw
    buf = np.frombuffer(body, dtype=np.uint8)
    newlines = np.flatnonzero(buf == 10)
    starts = np.empty(newlines.size, dtype=np.int64)
    starts[0] = 0
    starts[1:] = newlines[:-1] + 1
    heads = _line_heads(buf, starts, newlines)
    first = buf[heads]
    comment = np.zeros(starts.size, dtype=bool)
    if comments:
        comment = np.isin(first, np.frombuffer(comments, dtype=np.uint8))
    marked = np.zeros(starts.size, dtype=bool)
    if prefix:
        marked = first == prefix[0]
        joined = np.zeros(starts.size, dtype=bool)
        joined[marked] = ~_SPACE[buf[heads[marked] + 1]]  # a marked line's newline follows
        if joined.any():  # 'a1 2 4' had read as the arc 1 2 4
            i = int(np.argmax(joined))
            raise _odd_line_error(body, starts, i, label, first_line) or GraphError(
                f"{label}: line {first_line + i}: expected {prefix.decode()!r} and a blank "
                f"before the numbers, got {_line(body, starts, i)!r}"
            )
    if comment.any() or marked.any():
        buf = buf.copy()
        if marked.any():
            buf[heads[marked]] = 32
        if comment.any():
            edge = np.zeros(buf.size + 1, dtype=np.int32)
            np.add.at(edge, starts[comment], 1)
            np.add.at(edge, newlines[comment], -1)
            buf[np.cumsum(edge[:-1]) > 0] = 32
        body = buf.tobytes()
    space = _SPACE[buf]
    token_start = ~space
    token_start[1:] &= space[:-1]
    counts = np.add.reduceat(token_start, starts, dtype=np.int64)
    if commas:
        _check_fields(raw, starts, counts, comment, label, first_line)
    if prefix:
        stray = (counts > 0) & ~marked & ~comment
        if stray.any():  # a line of NULs is named so: shown, it reads as blanks
            i = int(np.argmax(stray))
            raise _odd_line_error(body, starts, i, label, first_line) or GraphError(
                f"{label}: line {first_line + i}: expected a line starting with "
                f"{prefix.decode()!r}, got {_line(body, starts, i)!r}"
            )
    values = _numbers(body, int(counts.sum()), label, first_line, starts, counts)
    return _Tokens(values, counts, comment, first_line, body, starts)


def _line_heads(buf: np.ndarray, starts: np.ndarray, newlines: np.ndarray) -> np.ndarray:
    """Each line's first byte that is not a blank (its newline where it has none): a comment
    or DIMACS arc line may be indented."""
    heads = starts.copy()
    indented = np.flatnonzero(_SPACE[buf[starts]] & (buf[starts] != 10))
    if indented.size == 0:  # (the common case: no pass over the bytes)
        return heads
    filled = np.flatnonzero(~_SPACE[buf])
    ends = newlines[indented]
    if filled.size == 0:
        heads[indented] = ends
        return heads
    head = filled[np.minimum(np.searchsorted(filled, starts[indented]), filled.size - 1)]
    heads[indented] = np.where((head >= starts[indented]) & (head < ends), head, ends)
    return heads


def _check_fields(
    raw: bytes, starts: np.ndarray, counts: np.ndarray, comment: np.ndarray, label: str,
    first_line: int,
) -> None:
    """Refuse a comma-separated line whose fields are not one number each: ``1,,2`` had
    read as ``1 2`` (an empty field) once commas became spaces."""
    commas = np.add.reduceat(np.frombuffer(raw, dtype=np.uint8) == 44, starts, dtype=np.int64)
    bad = ~comment & (commas > 0) & (counts != commas + 1)
    if bad.any():
        i = int(np.argmax(bad))
        kind = "an empty field" if counts[i] <= commas[i] else "a field of several numbers"
        raise GraphError(
            f"{label}: line {first_line + i}: {kind} in {_line(raw, starts, i)!r} "
            "(each comma-separated field must hold one number)"
        )


class _Shown(str):
    """A line of a file for a message: bytes that are no UTF-8 kept (surrogate escapes) and
    shown by its repr as the bytes they are ('\\xe9'), not as U+FFFD, which the file lacks."""

    def __repr__(self) -> str:
        return re.sub(r"\\udc([89a-f][0-9a-f])", r"\\x\1", super().__repr__())


def _line(body: bytes, starts: np.ndarray, i: int) -> str:
    """Line i of a body (for error messages; its repr shows undecodable bytes as such)."""
    end = body.find(b"\n", int(starts[i]))
    return _Shown(body[int(starts[i]) : end].decode("utf-8", "surrogateescape").strip()[:80])


def _odd_bytes(buf: np.ndarray) -> np.ndarray:
    """Offsets of the bytes no number or blank is made of: a control byte (NUL), or one
    past ASCII (a non-breaking space, a byte of another encoding)."""
    return np.flatnonzero((buf > 126) | ((buf < 32) & ~_SPACE[buf]))


def _odd_byte(body: bytes, at: int) -> str:
    """The byte at ``at`` named for a message: the character it begins where that is UTF-8
    (U+0000 for a NUL, U+00A0 for a non-breaking space), else the byte's value (0xe9 of a
    Latin-1 'e-acute'): decoded with replacement it had been named U+FFFD, not in the file."""
    for size in range(1, 5):
        try:
            char = body[at:at + size].decode("utf-8")
        except UnicodeDecodeError:
            continue
        return f"unexpected character {char!r} (U+{ord(char):04X})"
    return f"unexpected byte 0x{body[at]:02x} (not UTF-8 text)"


def _odd_line_error(body: bytes, starts: np.ndarray, i: int, label: str,
                    first_line: int) -> GraphError | None:
    """The error naming line i's first odd byte (``_odd_byte``), None where it has none."""
    lo = int(starts[i])
    hi = body.find(b"\n", lo)
    odd = _odd_bytes(np.frombuffer(body, dtype=np.uint8)[lo:hi if hi >= 0 else len(body)])
    if odd.size == 0:
        return None
    return GraphError(f"{label}: line {first_line + i}: {_odd_byte(body, lo + int(odd[0]))} "
                      f"in {_line(body, starts, i)!r}")


def _numbers(
    body: bytes, total: int, label: str, first_line: int, starts: np.ndarray, counts: np.ndarray
) -> np.ndarray:
    """All numbers of ``body``: int64 when every token is an integer, else float64."""
    if total == 0:  # numpy reads a blank body as one 0
        return np.zeros(0, dtype=np.int64)
    for dtype in (np.int64, np.float64):
        try:
            values = np.fromstring(body, dtype=dtype, sep=" ")
        except ValueError:
            continue
        if dtype is np.int64 and _saturated(values):
            continue  # an integer beyond int64, clamped: the float64 reading shows its size
        if values.size == total:
            return values
    # Slow path, only for a malformed file: find the first token neither int nor float.
    raw = np.frombuffer(body, dtype=np.uint8)
    odd = _odd_bytes(raw)
    if odd.size:  # a non-breaking space or a control byte: Python's split takes the first
        at = int(odd[0])
        i = int(np.searchsorted(starts, at, side="right")) - 1
        raise GraphError(f"{label}: line {first_line + i}: {_odd_byte(body, at)} in "
                         f"{_line(body, starts, i)!r}")
    for i in np.flatnonzero(counts):
        line = _line(body, starts, int(i))
        for token in line.split():
            # numpy's grammar, not float()'s (which also takes 1_0 and other digits)
            if not NUMBER_TEXT.fullmatch(token):
                raise GraphError(
                    f"{label}: line {first_line + int(i)}: cannot read {token!r} as a number "
                    f"in {line!r}"
                )
    raise GraphError(f"{label}: could not parse the numbers of the file")


def _saturated(values: np.ndarray) -> bool:
    """Whether numpy's int64 parser clamped a token to int64's bounds (it does not fail)."""
    info = np.iinfo(np.int64)
    return bool(((values == info.max) | (values == info.min)).any())


def _table(tokens: _Tokens, label: str, ncols: int | None, what: str) -> tuple[np.ndarray, ...]:
    """The non-blank lines as a (rows, ncols) array and their line numbers.

    ``ncols`` None takes the first line's field count (at least 2) for every line.
    """
    counts = tokens.counts
    filled = counts > 0
    if not filled.any():
        raise GraphError(f"{label}: empty graph: no edge lines in the file (a graph needs "
                         "at least one edge)")
    if ncols is None:
        ncols = int(counts[np.argmax(filled)])
        if ncols < 2:
            i = int(np.argmax(filled))
            raise GraphError(
                f"{label}: line {tokens.first_line + i}: expected at least 2 fields "
                f"({what}), got {tokens.line_text(i)!r}"
            )
    bad = filled & (counts != ncols)
    if bad.any():
        i = int(np.argmax(bad))
        raise GraphError(
            f"{label}: line {tokens.first_line + i}: expected {ncols} fields ({what}), "
            f"found {int(counts[i])}: {tokens.line_text(i)!r}"
        )
    rows = tokens.values.reshape(-1, ncols)
    lines = tokens.first_line + np.flatnonzero(filled)
    return rows, lines


def _exact_ids(tokens: _Tokens, rows: np.ndarray) -> np.ndarray:
    """Columns 0, 1 of ``rows``, re-read as exact integers where the table was parsed as
    float64 (some field is not an integer) and an id is at or beyond 2**53, where float64
    rounds: 9007199254740993 had become ...992 and merged with it."""
    ids = rows[:, :2]
    if ids.dtype == np.int64 or not (np.abs(ids) >= _FLOAT_EXACT).any():
        return ids
    exact = tokens.leading_ints(2)
    return ids if exact is None else exact


_FLOAT_EXACT = 2.0**53  # float64 holds every integer below it exactly


def _ids(
    rows: np.ndarray, lines: np.ndarray, label: str, n: int | None, base: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """Columns 0, 1 as 0-based ids: from ``base``..n-1+base if n is declared, else compacted."""
    ids = rows[:, :2]
    if ids.dtype != np.int64:
        whole = np.isfinite(ids) & (ids == np.round(ids)) & (np.abs(ids) < 2.0**62)
        if not whole.all():
            i = int(np.argmax(~whole.all(axis=1)))
            raise GraphError(
                f"{label}: line {int(lines[i])}: vertex ids must be integers below 2**62, got "
                f"{ids[i, 0]:g} {ids[i, 1]:g}"
            )
        _check_exact(ids, lines, label)
        ids = ids.astype(np.int64)
    if n is not None:
        bad = (ids < base) | (ids >= n + base)
        if bad.any():
            i = int(np.argmax(bad.any(axis=1)))
            value = int(ids[i][bad[i]][0])
            raise GraphError(
                f"{label}: line {int(lines[i])}: vertex id {value} out of range "
                f"{base}..{n - 1 + base} (the file declares {n} vertices)"
            )
        src = ids[:, 0] - base
        dst = ids[:, 1] - base
        return src, dst, n
    negative = ids < 0
    if negative.any():
        i = int(np.argmax(negative.any(axis=1)))
        raise GraphError(
            f"{label}: line {int(lines[i])}: negative vertex id {int(ids[i].min())}"
        )
    flat, count = _compact(ids.ravel())
    flat = flat.reshape(-1, 2)
    return flat[:, 0], flat[:, 1], count


def _check_exact(ids: np.ndarray, lines: np.ndarray, label: str) -> None:
    """Refuse float64-read ids at or beyond 2**53: float64 rounds them, merging ids."""
    inexact = np.abs(ids) >= _FLOAT_EXACT
    if inexact.any():
        i = int(np.argmax(inexact.any(axis=1)))
        value = ids[i][inexact[i]][0]
        raise GraphError(
            f"{label}: line {int(lines[i])}: vertex id {value:.17g} cannot be read exactly: "
            "the file is read as float64 (a field is not an integer), which rounds ids at or "
            "beyond 2**53; write every vertex id as a plain integer"
        )


def _compact(ids: np.ndarray) -> tuple[np.ndarray, int]:
    """Map the distinct non-negative ids, in increasing order, to 0..k-1."""
    lo, hi = int(ids.min()), int(ids.max())
    span = hi - lo + 1
    if span <= max(4 * ids.size, 1 << 20):
        present = np.zeros(span, dtype=bool)
        present[ids - lo] = True
        if present.all():
            return ids - lo, span
        remap = np.cumsum(present, dtype=np.int64) - 1
        return remap[ids - lo], int(remap[-1]) + 1
    uniq = np.sort(ids)
    keep = np.ones(uniq.size, dtype=bool)
    keep[1:] = uniq[1:] != uniq[:-1]
    uniq = uniq[keep]
    return np.searchsorted(uniq, ids), int(uniq.size)


def _weights(values: np.ndarray, lines: np.ndarray, label: str) -> np.ndarray:
    """Edge weights from a column as float32, else a GraphError naming the line of the first
    that float32 cannot hold (``graph.float32_weight_problem``); an int64 column is checked
    as read, exactly (through float64, integers past 2**53 had rounded unseen)."""
    problem = float32_weight_problem(values)
    if problem is not None:
        i, why = problem
        raise GraphError(f"{label}: line {int(lines[i])}: {why} ({WEIGHT_RULE})")
    if values.dtype.kind == "f":
        # a fraction elsewhere made the table float64, which rounds integers past 2**53 as
        # it reads them: 9007199254740993 had passed as ...992
        past = np.flatnonzero(np.abs(values) >= _FLOAT_EXACT)
        if past.size:
            i = int(past[0])
            raise GraphError(
                f"{label}: line {int(lines[i])}: edge weight {values[i]:.6g} is a whole "
                "number past 2**53, read as a float64 (beside a fraction, or past int64), "
                "which may have rounded it; whether a float32 holds it cannot be told "
                f"({WEIGHT_RULE})")
    return values.astype(np.float32)


def _no_weights(label: str, why: str) -> GraphError:
    """The error for weights=file on a file without weights."""
    return GraphError(f"{label}: weights=file, but {why}; use weights=random or no weights")


# --------------------------------------------------------------------------- formats


def _read_snap(data: bytes, label: str, want_weights: bool, commas: bool = False) -> EdgeList:
    """SNAP edge list (``#`` comments, ``src dst [weight ...]``) or CSV (one header line)."""
    start, first_line, line = _skip_header(data, (b"#", b"%"))
    if line is None:
        raise GraphError(f"{label}: empty graph: no edge lines in the file (a graph needs "
                         "at least one edge)")
    reversed_ends, weight_column = False, 2
    if commas and _is_header(line):
        _check_header(line, first_line, label)
        reversed_ends, weight_column = _header_columns(line, first_line, label, want_weights)
        start += len(line) + 1
        first_line += 1
    tokens = _tokenise(data, start, first_line, label, comments=b"#%", commas=commas)
    rows, lines = _table(tokens, label, None, "src dst [weight]")
    if rows.shape[0] == 1 and rows.shape[1] > 3:
        raise GraphError(
            f"{label}: line {int(lines[0])}: the only edge line holds {rows.shape[1]} numbers "
            "(src dst [weight]): are the file's lines ended by something other than a newline?"
        )
    src, dst, n = _ids(_exact_ids(tokens, rows), lines, label, None, 0)
    if reversed_ends:  # the header names the target column first
        src, dst = dst, src
    weights = None
    if want_weights:
        if rows.shape[1] <= weight_column:
            raise _no_weights(label, "the edge lines have no third (weight) column"
                              if weight_column == 2 else
                              f"the edge lines have no column {weight_column + 1}, the "
                              "header's weight")
        weights = _weights(rows[:, weight_column], lines, label)
    return EdgeList(src, dst, n, weights, lines=lines)


# column names that say a CSV's first two columns are not its edges' ends
_NOT_ENDPOINTS = {"", "weight", "weights", "w", "cost", "distance", "length", "index", "id"}


def _check_header(line: bytes, number: int, label: str) -> None:
    """Refuse a CSV header whose first two columns are not the edges' ends (read by
    position, they would be taken as such): an unnamed index column first, as pandas'
    ``to_csv`` writes it, or a weight column."""
    names = [f.strip().strip(b"\"'").decode(errors="replace").lower()
             for f in _header_fields(line)[:2]]
    if len(names) == 2 and not set(names) & _NOT_ENDPOINTS:
        return
    shown = line.decode(errors="replace").strip()[:80]
    other = [sep for sep in ";|:" if sep in shown]
    if len(names) < 2 and other:  # a spreadsheet's ``1;2``: one field, not a header
        raise GraphError(
            f"{label}: line {number}: {shown!r} is one field: a .csv is read separated by "
            f"commas (or blanks), and this one looks separated by {other[0]!r}; write it "
            "with commas, or give it a .txt name if blanks part its fields")
    raise GraphError(
        f"{label}: line {number}: the header {shown!r} does not start with the source and "
        "target columns, which are read by position (src,dst[,weight]); write the file "
        "with those first (pandas: to_csv(index=False))")


# a CSV header's names for an edge's ends and for its weight
_SOURCE_NAMES = {"source", "src", "from", "u", "start", "tail", "node1", "from_node",
                 "source_id", "src_id", "origin"}
_TARGET_NAMES = {"target", "dst", "to", "v", "end", "head", "node2", "to_node", "target_id",
                 "dst_id", "dest", "destination"}
_WEIGHT_NAMES = {"weight", "weights", "w", "cost", "distance", "length", "value"}
_PLAIN_WEIGHT_NAMES = {"weight", "weights", "w"}  # preferred where a header names several


def _header_columns(line: bytes, number: int, label: str, want_weights: bool
                    ) -> tuple[bool, int]:
    """What a CSV header says of its columns, beyond their order: whether it names the
    target first (``target,source``: a directed graph had been read reversed), and which
    column holds the weights (one named so, ``weight`` before ``length`` where it names
    both, else the third of three; a fourth column and none named a weight is ambiguous:
    the third had been taken, ``count`` before ``weight``; so are two named ``cost`` and
    ``length``: the first had been taken)."""
    names = [f.strip().strip(b"\"'").decode(errors="replace").lower()
             for f in _header_fields(line)]
    reversed_ends = names[0] in _TARGET_NAMES and names[1] in _SOURCE_NAMES
    named = [i for i, name in enumerate(names) if i >= 2 and name in _WEIGHT_NAMES]
    if len(named) > 1:  # ``length,weight``: the one named a weight, else ambiguous
        plainly = [i for i in named if names[i] in _PLAIN_WEIGHT_NAMES]
        candidates = plainly or named
        if want_weights and len(candidates) > 1:
            raise GraphError(
                f"{label}: line {number}: weights=file, but the header "
                f"{line.decode(errors='replace').strip()[:80]!r} names {len(candidates)} "
                f"weight columns ({', '.join(names[i] for i in candidates)}); keep one"
                + ("" if plainly else ", or name the one to read 'weight'"))
        named = candidates
    if named:
        return reversed_ends, named[0]
    if want_weights and len(names) > 3:
        raise GraphError(
            f"{label}: line {number}: weights=file, but the header "
            f"{line.decode(errors='replace').strip()[:80]!r} names no weight column among "
            f"{len(names) - 2} beside the ends; name it one of "
            f"{', '.join(sorted(_WEIGHT_NAMES))}")
    return reversed_ends, 2


def _is_header(line: bytes) -> bool:
    """Whether a CSV file's first line names its columns: neither of its first two fields is
    a number (``1.0,2.0`` or ``1,,2`` is a data line, checked as such, not dropped). Fields
    part at commas, or at blanks in a line without one (a ``.csv`` separated by tabs)."""
    return not any(_is_number(f) for f in _header_fields(line)[:2])


def _header_fields(line: bytes) -> list[bytes]:
    """A CSV line's fields: parted at commas, or at blanks in a line without one."""
    return line.split(b",") if b"," in line else line.split()


def _is_number(field: bytes) -> bool:
    """Whether ``field`` reads as a number (int, float, nan or inf)."""
    try:
        float(field)
    except ValueError:
        return False
    return True


def _read_mtx(data: bytes, label: str, want_weights: bool) -> EdgeList:
    """Matrix Market coordinate: pattern/integer/real, general/symmetric, 1-based."""
    end = data.find(b"\n")
    head = data[: len(data) if end < 0 else end].decode("ascii", "replace").split()
    if len(head) < 5 or head[0].lower() != "%%matrixmarket":
        raise GraphError(
            f"{label}: line 1: expected '%%MatrixMarket matrix coordinate FIELD SYMMETRY'"
        )
    obj, layout, field, symmetry = (h.lower() for h in head[1:5])
    if obj != "matrix" or layout != "coordinate":
        raise GraphError(f"{label}: line 1: only 'matrix coordinate' is supported, not "
                         f"'{obj} {layout}'")
    if field not in ("pattern", "integer", "real"):
        raise GraphError(f"{label}: line 1: unsupported field {field!r} (pattern|integer|real)")
    if symmetry not in ("general", "symmetric", "skew-symmetric"):
        raise GraphError(f"{label}: line 1: unsupported symmetry {symmetry!r}")
    start, size_line, line = _skip_header(data, (b"%",))
    if line is None or len(line.split()) != 3 or not all(_INT.match(w) for w in line.split()):
        raise GraphError(f"{label}: line {size_line}: expected the size line 'ROWS COLS NNZ'")
    nrows, ncols, nnz = (int(w) for w in line.split())
    if nrows != ncols:
        raise GraphError(f"{label}: line {size_line}: adjacency matrix must be square, "
                         f"got {nrows} x {ncols}")
    if nrows <= 0:
        raise GraphError(f"{label}: empty graph: the matrix has no rows")
    body = start + len(line) + 1
    tokens = _tokenise(data, body, size_line + 1, label, comments=b"%")
    width = 2 if field == "pattern" else 3
    rows, lines = _table(tokens, label, width, "row col" + ("" if width == 2 else " value"))
    if rows.shape[0] != nnz:
        raise GraphError(
            f"{label}: line {size_line}: declares {nnz} entries but the file has {rows.shape[0]}"
        )
    if field == "integer" and rows.dtype.kind == "f":
        fraction = rows[:, 2] != np.floor(rows[:, 2])
        if fraction.any():
            i = int(np.argmax(fraction))
            raise GraphError(f"{label}: line {int(lines[i])}: the header declares integer "
                             f"values, not {rows[i, 2]:g}")
    src, dst, n = _ids(rows, lines, label, nrows, 1)
    weights = None
    if want_weights:
        if field == "pattern":
            raise _no_weights(label, "the matrix is a pattern matrix (no values)")
        if symmetry == "skew-symmetric":
            raise GraphError(
                f"{label}: weights=file, but the matrix is skew-symmetric: each mirrored "
                "entry's weight is the negative of the one stored; use weights=random or no "
                "weights"
            )
        weights = _weights(rows[:, 2], lines, label)
    return EdgeList(src, dst, n, weights, symmetric=symmetry != "general", lines=lines)


def _read_gr(data: bytes, label: str, want_weights: bool) -> EdgeList:
    """DIMACS9 ``p sp N M`` + ``a u v w`` arcs, or PACE ``p tw N M`` + ``u v`` edges."""
    start, number, line = _skip_header(data, (b"c",))
    words = (line or b"").split()
    if len(words) != 4 or words[0] != b"p" or words[1] not in (b"sp", b"tw") or not all(
        _INT.match(w) for w in words[2:]
    ):
        raise GraphError(
            f"{label}: line {number}: expected the problem line 'p sp N M' or 'p tw N M'"
            + _header_odd(line or b"")
        )
    dimacs = words[1] == b"sp"
    n, m = int(words[2]), int(words[3])
    if n <= 0:
        raise GraphError(f"{label}: empty graph: the problem line declares {n} vertices")
    tokens = _tokenise(
        data, start + len(line) + 1, number + 1, label, comments=b"c",
        prefix=b"a" if dimacs else b"",
    )
    rows, lines = _table(tokens, label, 3 if dimacs else 2, "a u v w" if dimacs else "u v")
    if rows.shape[0] != m:
        what = "arcs" if dimacs else "edges"
        raise GraphError(
            f"{label}: line {number}: declares {m} {what} but the file has {rows.shape[0]}"
        )
    src, dst, n = _ids(rows, lines, label, n, 1)
    weights = None
    if want_weights:
        if not dimacs:
            raise _no_weights(label, "a PACE 'p tw' file has no edge weights")
        weights = _weights(rows[:, 2], lines, label)
    return EdgeList(src, dst, n, weights, symmetric=not dimacs, lines=lines)


def _read_metis(data: bytes, label: str, want_weights: bool) -> EdgeList:
    """METIS: header ``n m [fmt [ncon]]``, then line i lists the neighbours of vertex i."""
    start, number, line = _skip_header(data, (b"%",))
    words = (line or b"").split()
    if not 2 <= len(words) <= 4 or not all(_INT.match(w) for w in words):
        raise GraphError(f"{label}: line {number}: expected the METIS header 'N M [FMT [NCON]]'")
    n, m = int(words[0]), int(words[1])
    fmt = words[2].decode().zfill(3) if len(words) > 2 else "000"
    if len(fmt) != 3 or any(ch not in "01" for ch in fmt):
        raise GraphError(f"{label}: line {number}: bad METIS fmt {words[2].decode()!r}")
    has_size, has_vwgt, has_ewgt = (ch == "1" for ch in fmt)
    ncon = int(words[3]) if len(words) > 3 else (1 if has_vwgt else 0)
    if n <= 0:
        raise GraphError(f"{label}: empty graph: the header declares {n} vertices")
    tokens = _tokenise(data, start + len(line) + 1, number + 1, label, comments=b"%")
    lines = tokens.first_line + np.flatnonzero(~tokens.comment)
    counts = tokens.counts[~tokens.comment]
    if counts.size > n and counts[n:].any():
        i = n + int(np.argmax(counts[n:] > 0))
        raise GraphError(
            f"{label}: line {int(lines[i])}: the header declares {n} vertices but this is "
            f"vertex line {i + 1}"
        )
    if counts.size < n:
        raise GraphError(
            f"{label}: the header declares {n} vertices but the file has {counts.size} "
            "vertex lines (one line per vertex, blank for an isolated vertex)"
        )
    counts, lines = counts[:n], lines[:n]
    skip = int(has_size) + (ncon if has_vwgt else 0)
    step = 2 if has_ewgt else 1
    bad = (counts < skip) | ((counts - skip) % step != 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise GraphError(
            f"{label}: line {int(lines[i])}: {int(counts[i])} fields do not fit the fmt "
            f"{fmt} (vertex weights then neighbour{' weight' if has_ewgt else ''} pairs)"
        )
    values = tokens.values
    vertex = np.repeat(np.arange(n, dtype=np.int64), counts)
    line_start = np.repeat(np.cumsum(counts) - counts, counts)
    pos = np.arange(values.size, dtype=np.int64) - line_start - skip
    is_nbr = (pos >= 0) & (pos % step == 0)
    nbr = values[is_nbr]
    src = vertex[is_nbr]
    if nbr.size != 2 * m:
        raise GraphError(
            f"{label}: line {number}: declares {m} edges ({2 * m} adjacency entries) but "
            f"the file lists {nbr.size}"
        )
    if nbr.size == 0:
        raise GraphError(f"{label}: empty graph: no edges")
    edge_lines = lines[src]
    rows = np.stack([src + 1, nbr], axis=1)
    src, dst, n = _ids(rows, edge_lines, label, n, 1)
    _check_listed_both_ways(src, dst, n, lines, label)
    weights = None
    if want_weights:
        if not has_ewgt:
            raise _no_weights(label, f"the METIS fmt {fmt} has no edge weights")
        weights = _weights(values[np.flatnonzero(is_nbr) + 1], edge_lines, label)
        _check_weighed_alike(src, dst, n, weights, lines, label)
    return EdgeList(src, dst, n, weights, symmetric=True, lines=edge_lines)


def _check_listed_both_ways(src: np.ndarray, dst: np.ndarray, n: int, vertex_lines: np.ndarray,
                            label: str) -> None:
    """Refuse a METIS adjacency where some u lists v more often than v lists u: the format
    is undirected, and a one-sided entry had been read as an edge (an edge more than the
    header declares, though the entries' total matched)."""
    forward = np.sort(src.astype(np.int64) * n + dst)
    backward = np.sort(dst.astype(np.int64) * n + src)
    differ = np.flatnonzero(forward != backward)
    if differ.size == 0:
        return
    i = int(differ[0])
    key = min(int(forward[i]), int(backward[i]))
    u, v = divmod(key, n)
    if forward[i] > backward[i]:  # the reversed pair is the one-sided entry: v lists u
        u, v = v, u
    raise GraphError(
        f"{label}: line {int(vertex_lines[u])}: vertex {u + 1} lists {v + 1} more often than "
        f"vertex {v + 1} (line {int(vertex_lines[v])}) lists {u + 1}: a METIS graph lists each "
        "edge at both ends"
    )


def _check_weighed_alike(src: np.ndarray, dst: np.ndarray, n: int, weights: np.ndarray,
                         vertex_lines: np.ndarray, label: str) -> None:
    """Refuse a METIS edge whose two ends give it other weights (the lower had been kept
    without a word); each end's entries are listed both ways (``_check_listed_both_ways``),
    so sorted by (pair, weight) the two listings line up."""
    forward = np.lexsort((weights, src.astype(np.int64) * n + dst))
    backward = np.lexsort((weights, dst.astype(np.int64) * n + src))
    differ = np.flatnonzero(weights[forward] != weights[backward])
    if differ.size == 0:
        return
    u, v = int(src[forward[differ[0]]]), int(dst[forward[differ[0]]])
    raise GraphError(
        f"{label}: line {int(vertex_lines[u])}: vertex {u + 1} gives its edge to {v + 1} "
        f"weight {weights[forward[differ[0]]]:g}, vertex {v + 1} (line "
        f"{int(vertex_lines[v])}) weight {weights[backward[differ[0]]]:g}: a METIS graph "
        "gives an edge one weight at both ends"
    )


def _read_lg(data: bytes, label: str, want_weights: bool) -> EdgeList:
    """LG (LightGraphs/Graphs.jl): header ``n,m,d|u,...`` then ``u,v`` per edge, 1-based."""
    start, number, line = _skip_header(data, (b"#",))
    fields = [f.strip() for f in (line or b"").split(b",")]
    if len(fields) < 3 or not all(_INT.match(f) for f in fields[:2]) or fields[2] not in (
        b"d",
        b"u",
    ):
        raise GraphError(f"{label}: line {number}: expected the LG header 'N,M,d|u,...'")
    n, m = int(fields[0]), int(fields[1])
    if n <= 0:
        raise GraphError(f"{label}: empty graph: the header declares {n} vertices")
    if want_weights:
        raise _no_weights(label, "the LG format has no edge weights")
    tokens = _tokenise(data, start + len(line) + 1, number + 1, label, commas=True)
    rows, lines = _table(tokens, label, 2, "u,v")
    if rows.shape[0] != m:
        raise GraphError(
            f"{label}: line {number}: declares {m} edges but the file has {rows.shape[0]} "
            "(only single-graph LG files are supported)"
        )
    src, dst, n = _ids(rows, lines, label, n, 1)
    return EdgeList(src, dst, n, symmetric=fields[2] == b"u", lines=lines)


def _read_npz_edges(path: Path, data: bytes, label: str, want_weights: bool,
                    directed: bool | None = None) -> EdgeList:
    """A CSR ``.npz`` (as ``graph convert`` or scipy.sparse.save_npz write) as an edge list;
    ``directed`` True: its stored edges as arcs, whatever its metadata says."""
    graph = read_npz(path, label, data=data, weights=want_weights, directed=directed)
    if want_weights and graph.weights is None:
        raise _no_weights(label, "the .npz graph has no weights")
    return EdgeList(
        graph.sources,
        graph.indices,
        graph.n,
        graph.weights if want_weights else None,
        symmetric=not graph.directed,
    )


def read_edges(
    path: str | os.PathLike[str],
    fmt: str | None = None,
    *,
    weights: bool = False,
    label: str = "",
    directed: bool | None = None,
) -> EdgeList:
    """Read a graph file into an edge list (ids 0..n-1); ``weights`` asks for its weights;
    ``directed`` True: the spec's ``directed=true``, which reads an ``.npz`` stored as
    undirected by its arcs (it need not store each edge both ways)."""
    path = Path(path)
    label = label or f"file:{path}"
    data = strip_bom(read_bytes(path, label))
    if not data.startswith((b"PK", b"\x93NUMPY")):
        data = unix_newlines(data)
    sniffed = None
    if not fmt:
        fmt, sniffed = _detect(path, data, label)
    if fmt not in FILE_FORMATS:
        raise GraphError(f"{label}: unknown format {fmt!r} (one of {', '.join(FILE_FORMATS)})")
    if fmt != "mtx" and data[:4096].lstrip()[:14].lower() == b"%%matrixmarket":
        # its size line 'ROWS COLS NNZ' would read as an edge
        raise GraphError(f"{label}: format={fmt}, but the file is a MatrixMarket file "
                         "(format=mtx)")
    if fmt == "npz":
        return _read_npz_edges(path, data, label, weights, directed)
    if fmt in ("dimacs", "pace"):
        kind = _gr_kind(data, label)
        if kind != fmt:
            raise GraphError(f"{label}: format={fmt} but the problem line says {kind}")
        return _read_gr(data, label, weights)
    if fmt == "snap":
        return _read_snap(data, label, weights)
    if fmt == "csv":
        return _read_snap(data, label, weights, commas=True)
    if fmt == "mtx":
        return _read_mtx(data, label, weights)
    if fmt == "metis":
        if sniffed is not None and not weights:  # read when its format was detected
            return sniffed
        return _read_metis(data, label, weights)
    return _read_lg(data, label, weights)


# --------------------------------------------------------------------------- npz


def _first_line(exc: BaseException) -> str:
    """An exception's message on one line, cut short."""
    return " ".join(str(exc).split())[:200]


def _text(array: np.ndarray) -> str:
    """A 0-d string or bytes array as str."""
    value = array.item() if array.shape == () else ""
    return value.decode("ascii", "replace") if isinstance(value, bytes) else str(value)


def save_npz(graph: Graph, path: str | os.PathLike[str],
             extra_meta: dict[str, str] | None = None, *,
             make_parents: bool | None = None) -> Path:
    """Write ``graph`` as an uncompressed CSR ``.npz`` atomically (temp file + os.replace);
    ``extra_meta``: more metadata fields (the graph cache's key). ``make_parents``: create
    missing directories above ``path``; None creates them for the graph cache's entries
    (written with ``extra_meta``) only: a user's output under a directory that does not
    exist (a typo) is a GraphError naming it, as ``calibrate --out`` refuses one."""
    path = Path(path)
    if make_parents is None:
        make_parents = extra_meta is not None
    if not make_parents and not path.parent.exists():  # (a file there: mkstemp says so)
        raise GraphError(f"cannot write {str(path)!r}: directory {str(path.parent)!r} does "
                         "not exist; create it first")
    meta = {
        **(extra_meta or {}),
        "format": NPZ_FORMAT,
        "version": NPZ_VERSION,
        "name": graph.name,
        "spec": graph.spec,
        "directed": bool(graph.directed),
    }
    arrays = {"indptr": graph.indptr, "indices": graph.indices, "meta": np.array(json.dumps(meta))}
    if graph.weights is not None:
        arrays["weights"] = graph.weights
    if make_parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    target = rename_target(path)  # a symlink's file, the link kept
    fd, tmp = tempfile.mkstemp(prefix=f".{short_name(target.name, 16)}.", suffix=".tmp",
                               dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
        os.chmod(tmp, 0o644)  # mkstemp makes it owner-only
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_npz_meta(path: Path) -> dict:
    """The metadata of a warpsweep ``.npz`` (its other arrays left unread); {} where it has
    none readable."""
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"])) if "meta" in z.files else {}
    except (OSError, ValueError, EOFError, zlib.error, zipfile.BadZipFile, KeyError,
            AttributeError, TypeError):
        return {}
    return meta if isinstance(meta, dict) else {}


def _check_npz_magic(path: Path, label: str, data: bytes | None) -> None:
    """Refuse a file that is neither a zip archive nor a .npy array (np.load would take it
    for a pickle and advise unpickling it)."""
    head = data[:6] if data is not None else b""
    if data is None:
        try:
            with path.open("rb") as fh:
                head = fh.read(6)
        except OSError as exc:
            raise GraphError(f"{label}: cannot read {path}: {exc.strerror or exc}") from None
    if not head.startswith((b"PK\x03\x04", b"PK\x05\x06", b"\x93NUMPY")):
        raise GraphError(f"{label}: not a readable .npz file: not a zip archive "
                         f"(it starts with {head!r})")


# the arrays a warpsweep or scipy CSR .npz is read from (any other is left unread)
_NPZ_MEMBERS = ("meta", "indptr", "indices", "weights", "format", "shape", "data")


def _npz_member(z, key: str, label: str) -> np.ndarray:
    """One array of an open .npz, its header's declared size held first to the bytes the
    archive keeps for it: numpy allocates a member's whole declared shape before reading
    it, so a damaged or lying header would otherwise cost its full size."""
    archive = getattr(z, "zip", None)
    if archive is not None:
        name = key + ".npy" if key + ".npy" in archive.namelist() else key
        info = archive.getinfo(name)
        with archive.open(info) as fh:
            version = np.lib.format.read_magic(fh)
            read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                           (2, 0): np.lib.format.read_array_header_2_0}.get(version)
            if read_header is not None:
                shape, _, dtype = read_header(fh)
                declared = math.prod(shape) * dtype.itemsize
                if declared > info.file_size:
                    raise GraphError(
                        f"{label}: .npz array {key!r} declares shape {shape} of {dtype} "
                        f"({declared:,} bytes), but the file holds {info.file_size:,} bytes "
                        "for it: a damaged or lying header")
    try:
        return z[key]
    except MemoryError:
        raise GraphError(f"{label}: .npz array {key!r} is too big for this machine's "
                         "memory") from None


def read_npz(path: str | os.PathLike[str], label: str = "", *, data: bytes | None = None,
             written_by_us: bool = False, weights: bool = True,
             directed: bool | None = None) -> Graph:
    """A Graph from a warpsweep CSR ``.npz`` (or a scipy.sparse CSR ``.npz``), validated
    (``written_by_us``: the graph cache's own entry, whose symmetry was checked when its
    graph was built, and is not checked again); ``weights`` False: without the file's weights,
    which are then neither read nor checked (a signed or boolean matrix serves BFS);
    ``directed`` True: directed whatever the metadata says (the spec's ``directed=true``), so
    an undirected one that does not store every edge both ways reads as its arcs."""
    import io

    want_weights, as_directed = weights, directed
    path = Path(path)
    label = label or f"file:{path}"
    source = io.BytesIO(data) if data is not None else path
    _check_npz_magic(path, label, data)
    unreadable = (OSError, ValueError, EOFError, zlib.error, zipfile.BadZipFile, KeyError,
                  NotImplementedError, RuntimeError)
    try:
        z = np.load(source, allow_pickle=False)
    except unreadable as exc:
        raise GraphError(f"{label}: not a readable .npz file: {_first_line(exc)}") from None
    if not hasattr(z, "files"):  # a .npy array, which is no context manager
        raise GraphError(f"{label}: not a .npz archive but a single .npy array")
    try:
        with z:
            members = list(z.files)
            arrays = {k: _npz_member(z, k, label) for k in members if k in _NPZ_MEMBERS}
    except unreadable as exc:
        raise GraphError(f"{label}: not a readable .npz file: {_first_line(exc)}") from None
    if "meta" in arrays:
        try:
            meta = json.loads(str(arrays["meta"]))
        except ValueError:
            raise GraphError(f"{label}: .npz has unreadable metadata") from None
        if not isinstance(meta, dict):
            raise GraphError(f"{label}: .npz metadata is not a JSON object")
        if meta.get("format") != NPZ_FORMAT or meta.get("version") != NPZ_VERSION:
            raise GraphError(
                f"{label}: .npz format {meta.get('format')!r} version {meta.get('version')!r}"
                f" is not {NPZ_FORMAT!r} version {NPZ_VERSION}"
            )
        weights = arrays.get("weights")
        directed = meta.get("directed", False)
        if not isinstance(directed, bool):  # "false" had read as True
            raise GraphError(f"{label}: .npz metadata field 'directed' must be true or "
                             f"false, not {directed!r}")
        shape = None
        name, spec = str(meta.get("name", "graph")), str(meta.get("spec", ""))
    elif "format" in arrays and _text(arrays["format"]) == "csr":
        try:
            shape = tuple(int(s) for s in np.asarray(arrays["shape"]).ravel())
        except (KeyError, TypeError, ValueError):
            raise GraphError(f"{label}: scipy CSR matrix without a readable 'shape'") from None
        if len(shape) != 2 or shape[0] != shape[1]:
            raise GraphError(f"{label}: scipy CSR matrix must be square, got shape {shape}")
        weights, directed, name, spec = arrays.get("data"), True, path.stem, ""
    else:
        raise GraphError(
            f"{label}: .npz is neither a warpsweep CSR graph nor a scipy CSR matrix "
            f"(arrays: {', '.join(sorted(members))})"
        )
    for key in ("indptr", "indices"):
        if key not in arrays:
            raise GraphError(f"{label}: .npz lacks the {key!r} array")
        if arrays[key].dtype.kind not in "iu":
            raise GraphError(f"{label}: .npz array {key!r} must hold integers, not "
                             f"{arrays[key].dtype}")
    if shape is not None and shape[0] != arrays["indptr"].size - 1:
        raise GraphError(
            f"{label}: scipy CSR matrix 'shape' {shape} does not match its 'indptr' "
            f"({arrays['indptr'].size - 1} rows)"
        )
    if weights is not None and weights.dtype.kind == "b" and shape is not None:
        weights = None  # a scipy boolean adjacency matrix: a pattern, no weights
    if not want_weights:
        weights = None
    if weights is not None and weights.dtype.kind not in "iuf":
        raise GraphError(f"{label}: .npz weights must be numbers, not {weights.dtype}")
    directed = directed or bool(as_directed)
    graph = Graph(  # arrays read from the file here: nobody else holds them
        frozen(arrays["indptr"]), frozen(arrays["indices"]),
        None if weights is None else frozen(weights), name=name, spec=spec or label,
        directed=directed, known_symmetric=not directed,  # checked below, with our remedy
    )
    if graph.n == 0:
        raise GraphError(f"{label}: empty graph: no vertices")
    if not directed and not written_by_us and graph.m and not stores_both_ways(
            graph.indptr, graph.indices, graph.weights):
        raise GraphError(
            f"{label}: the .npz metadata says \"directed\": false, but its CSR holds an edge "
            "whose reverse (with its weight) it lacks; read it by its arcs with directed=true "
            "in the spec (file:PATH.npz,directed=true)")
    return graph
