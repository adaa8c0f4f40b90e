"""YAML documents that remember the line of every key, so config errors can point at it; and
JSON documents read as strictly (a key given twice refused)."""

from __future__ import annotations

import errno
import json
import re
import stat
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import yaml

from simulator.errors import ConfigError

KeyPath = tuple[str | int, ...]
# A sweep or space file is hand-written: a bigger one is a mistake (or garbage), not a config.
MAX_YAML_BYTES = 16 << 20


@dataclass
class YamlDoc:
    """Plain data loaded from a YAML file plus the 1-based line of every key and list item."""

    data: Any
    source: str
    lines: dict[KeyPath, int] = field(default_factory=dict)

    def line(self, path: KeyPath) -> int | None:
        """Line of ``path``, or of its nearest ancestor that has one."""
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get(())

    def where(self, path: KeyPath) -> str:
        """``file:line: key.path`` for error messages."""
        line = self.line(path)
        loc = f"{self.source}:{line}" if line is not None else self.source
        dotted = ".".join(str(p) for p in path)
        return f"{loc}: {dotted}" if dotted else loc

    def error(self, path: KeyPath, message: str) -> ConfigError:
        """A ConfigError located at ``path``."""
        return ConfigError(f"{self.where(path)}: {message}")


def load_yaml(path: str | Path) -> YamlDoc:
    """Read ``path`` as YAML with line numbers; unreadable or invalid files raise ConfigError."""
    path = Path(path)
    try:
        st = path.stat()
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory")
        if not stat.S_ISREG(st.st_mode):  # /dev/zero, a FIFO: reading would never end
            raise ConfigError(f"cannot read {str(path)!r}: not a regular file")
        if st.st_size > MAX_YAML_BYTES:
            raise ConfigError(f"{path}: {st.st_size:,} bytes is too large for a configuration "
                              f"file (at most {MAX_YAML_BYTES:,})")
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {str(path)!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not a UTF-8 text file ({exc.reason})") from None
    return parse_yaml(text, str(path))


def parse_yaml(text: str, source: str = "<string>") -> YamlDoc:
    """Parse YAML text with line numbers; duplicate keys are an error (PyYAML keeps the last)."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:  # at the problem's line and column
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        context = (f" ({exc.context} from line {exc.context_mark.line + 1})"
                   if exc.context and exc.context_mark else "")
        raise ConfigError(f"{where}: invalid YAML: {exc.problem or _one_line(exc)}{context}"
                          ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: invalid YAML: {_one_line(exc)}") from None
    except RecursionError:
        raise ConfigError(f"{source}: invalid YAML: nested too deeply") from None
    doc = YamlDoc(data=None, source=source)
    if node is None:
        return doc
    constructor = yaml.SafeLoader("")
    doc.lines[()] = node.start_mark.line + 1
    doc.data = _convert(node, (), doc, _Walk(constructor))
    return doc


# Nodes a document may expand to (aliases repeat their anchor's nodes): a space or sweep file
# has a few hundred; an alias bomb ("billion laughs") would have billions.
MAX_NODES = 100_000
MAX_DEPTH = 64


@dataclass
class _Walk:
    """The constructor, the nodes expanded so far and the collections being expanded."""

    ctor: yaml.SafeLoader
    nodes: int = 0
    open: set[int] = field(default_factory=set)


def _convert(node: yaml.Node, path: KeyPath, doc: YamlDoc, walk: _Walk) -> Any:
    walk.nodes += 1
    if walk.nodes > MAX_NODES:
        raise ConfigError(f"{source_at(doc, node)}: the document expands to more than "
                          f"{MAX_NODES:,} values (aliases repeating aliases?)")
    if len(path) > MAX_DEPTH:
        raise ConfigError(f"{source_at(doc, node)}: nested more than {MAX_DEPTH} levels deep")
    if not isinstance(node, yaml.ScalarNode):
        if id(node) in walk.open:
            raise ConfigError(f"{source_at(doc, node)}: {'.'.join(map(str, path))}: an alias "
                              "refers to a collection that contains it (a cycle)")
        walk.open.add(id(node))
        try:
            return _convert_collection(node, path, doc, walk)
        finally:
            walk.open.discard(id(node))
    _check_number_text(node, path, doc)
    if node.style is None and node.tag == _STR and _EXPONENT_FLOAT.fullmatch(node.value):
        return float(node.value)  # YAML 1.2's number; 1.1 reads 1e-3 and 2.5e0 as text
    try:
        return walk.ctor.construct_object(node)
    except yaml.YAMLError as exc:
        raise doc.error(path, _one_line(exc)) from None


_INT_OR_FLOAT = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
_STR = "tag:yaml.org,2002:str"
_EXPONENT_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)[eE][-+]?[0-9]+")
_OCTAL = re.compile(r"[-+]?0[0-7_]+")


def _check_number_text(node: yaml.ScalarNode, path: KeyPath, doc: YamlDoc) -> None:
    """Refuse the YAML 1.1 number forms that read as another number than written: ``010`` is
    8 (octal) and ``1:30`` is 90 (base 60)."""
    if node.style is not None or node.tag not in _INT_OR_FLOAT:
        return
    text = node.value
    if _OCTAL.fullmatch(text):
        raise doc.error(path, f"{text} reads as an octal number in YAML "
                        f"({int(text.replace('_', ''), 8)}); write it without the leading "
                        "zero, or quote it for a string")
    if ":" in text:
        raise doc.error(path, f"{text} reads as a base-60 number in YAML; write the number "
                        "itself, or quote it for a string")


def _convert_collection(node: yaml.Node, path: KeyPath, doc: YamlDoc, walk: _Walk) -> Any:
    ctor = walk.ctor
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise doc.error(path, "mapping keys must be plain scalars")
            if key_node.tag == "tag:yaml.org,2002:merge":  # PyYAML's message names its tag
                raise ConfigError(f"{source_at(doc, key_node)}: {'.'.join(map(str, path))}: "
                                  "a YAML merge key (<<) is not read here: write the keys "
                                  "out (an alias of a whole value, *name, is read)")
            try:
                key = ctor.construct_object(key_node)
            except yaml.YAMLError as exc:
                raise ConfigError(f"{source_at(doc, key_node)}: {_one_line(exc)}") from None
            sub = (*path, key)
            if key in out:
                raise ConfigError(
                    f"{source_at(doc, key_node)}: {'.'.join(map(str, sub))}: duplicate key {key!r}"
                )
            doc.lines[sub] = key_node.start_mark.line + 1
            out[key] = _convert(value_node, sub, doc, walk)
        return out
    items = []
    for i, item in enumerate(node.value):
        sub = (*path, i)
        doc.lines[sub] = item.start_mark.line + 1
        items.append(_convert(item, sub, doc, walk))
    return items


def source_at(doc: YamlDoc, node: yaml.Node) -> str:
    """``file:line`` of a node."""
    return f"{doc.source}:{node.start_mark.line + 1}"


def _one_line(exc: yaml.YAMLError) -> str:
    return " ".join(str(exc).split())


def loads_json(text: str | bytes) -> Any:
    """A JSON document; ValueError naming a key an object gives twice (Python's reader keeps
    the last without a word, as PyYAML does)."""
    return json.loads(text, object_pairs_hook=_unique_keys)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"key {key!r} is given twice in one object")
        seen[key] = value
    return seen
