"""Graph spec strings (``rmat:scale=18,ef=16,seed=1``, ``file:road.gr.gz``): the one parser.

Grammar: ``KIND:key=value,key=value,...``. ``file`` takes the path as its first field
(``file:PATH,key=value,...``; the path may not contain a comma). A bare path whose name ends
in a known graph extension (``web.txt.gz``) is read as ``file:`` that path.

Generator parameters (defaults in brackets):

- ``rmat`` (alias ``kron``): ``scale`` (n = 2**scale, required), ``ef`` [16] edges per vertex,
  ``a`` [0.57], ``b`` [0.19], ``c`` [0.19] (Graph500); ``d = 1 - a - b - c``.
- ``random``: ``n`` (required), ``m`` (edges) or ``deg`` (average stored degree) [deg=8]:
  uniform G(n, m).
- ``grid2d``: ``rows`` (required), ``cols`` [rows]: 4-point grid.
- ``mesh2d``: ``rows`` (required), ``cols`` [rows]: 6-point triangular mesh.
- ``road``: ``rows`` (required), ``cols`` [rows], ``keep`` [0.65] fraction of grid edges kept.
- ``file``: the path, and ``format`` [from the extension or the header]: one of
  ``snap csv mtx dimacs pace metis lg npz``.

Options valid on every spec:

- ``directed=true|false`` [false]: keep edge direction; otherwise every edge is stored both ways.
- ``weights=none|file|random`` [none]: no weights, the file's weights, or seeded uniform integers
  1..100 (float32; both directions of an undirected edge get the same weight).
- ``seed=INT`` [0]: seeds the generator, the random weights and ``order=random``.
- ``order=none|degree|bfs|random`` [none]: relabel the vertices after loading: by decreasing
  degree, in BFS order (component by component, from each component's lowest id), or randomly.
"""

from __future__ import annotations

import dataclasses
import decimal
import math
import os
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from simulator.errors import GraphError

FILE_FORMATS = ("snap", "csv", "mtx", "dimacs", "pace", "metis", "lg", "npz")
WEIGHT_MODES = ("none", "file", "random")
ORDERS = ("none", "degree", "bfs", "random")
# Name suffixes (before an optional .gz) that make a bare path a file spec.
GRAPH_EXTENSIONS = (
    ".txt", ".el", ".edges", ".edgelist", ".tsv", ".csv", ".mtx", ".mm", ".gr", ".graph",
    ".metis", ".lg", ".jlg", ".npz",
)
KIND_ALIASES = {"kron": "rmat"}
REQUIRED = object()


def _parse_int(text: str) -> int:
    """An integer written in decimal (underscores allowed), or a float with no fraction."""
    try:
        return int(text, 10)
    except ValueError:
        pass
    try:  # exactly as written: through a float, 1.2345678901234567891e18 had named ...768
        value = decimal.Decimal(text.strip())
    except decimal.InvalidOperation:
        value = decimal.Decimal("nan")
    if not value.is_finite() or value != value.to_integral_value():
        raise ValueError(f"expected an integer, got {text!r}")
    if value.adjusted() > 30:  # 1e999999999 is an integer too large to write out
        raise ValueError(f"expected an integer of at most 31 digits, got {text!r}")
    return int(value)


def _parse_float(text: str) -> float:
    """A finite float."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {text!r}")
    return value


def _parse_bool(text: str) -> bool:
    """true/false (also 1/0, yes/no, on/off)."""
    low = text.lower()
    if low in ("true", "1", "yes", "on"):
        return True
    if low in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def _choice(allowed: tuple[str, ...]) -> Callable[[str], str]:
    """A parser accepting one of ``allowed`` (case-insensitive)."""

    def parse(text: str) -> str:
        low = text.lower()
        if low not in allowed:
            raise ValueError(f"expected one of {'|'.join(allowed)}, got {text!r}")
        return low

    return parse


@dataclass(frozen=True)
class Param:
    """One key a spec kind accepts: its parser, default and range check."""

    name: str
    parse: Callable[[str], Any]
    default: Any = REQUIRED
    check: Callable[[Any], bool] | None = None
    rule: str = ""


def _int_param(name: str, default: Any = REQUIRED, lo: int = 1, hi: int | None = None) -> Param:
    """An integer parameter in [lo, hi]."""
    rule = f">= {lo}" if hi is None else f"in {lo}..{hi}"
    return Param(name, _parse_int, default, lambda v: v >= lo and (hi is None or v <= hi), rule)


def _prob_param(name: str, default: float) -> Param:
    """A probability parameter in [0, 1]."""
    return Param(name, _parse_float, default, lambda v: 0.0 <= v <= 1.0, "in [0, 1]")


KIND_PARAMS: dict[str, tuple[Param, ...]] = {
    "rmat": (
        _int_param("scale", lo=1, hi=30),
        _int_param("ef", 16),
        _prob_param("a", 0.57),
        _prob_param("b", 0.19),
        _prob_param("c", 0.19),
    ),
    "random": (
        _int_param("n", lo=2, hi=2**31 - 1),
        _int_param("m", None, lo=1),  # no edges: an empty graph, refused here by name
        Param("deg", _parse_float, None, lambda v: v > 0, "> 0"),
    ),
    "grid2d": (_int_param("rows", hi=2**16), _int_param("cols", None, hi=2**16)),
    "mesh2d": (_int_param("rows", hi=2**16), _int_param("cols", None, hi=2**16)),
    "road": (
        _int_param("rows", hi=2**16),
        _int_param("cols", None, hi=2**16),
        Param("keep", _parse_float, 0.65, lambda v: 0.0 < v <= 1.0, "in (0, 1]"),
    ),
    "file": (
        Param("path", str),
        Param("format", _choice(FILE_FORMATS), None),
    ),
}
# Kinds whose structure depends on the seed.
RANDOM_KINDS = ("rmat", "random", "road")

OPTION_PARAMS: tuple[Param, ...] = (
    Param("directed", _parse_bool, False),
    Param("weights", _choice(WEIGHT_MODES), "none"),
    Param("seed", _parse_int, 0, lambda v: 0 <= v < 2**63, "in 0..2**63-1"),
    Param("order", _choice(ORDERS), "none"),
)


@dataclass(frozen=True)
class SpecOptions:
    """The options every spec accepts (see the module docstring)."""

    directed: bool = False
    weights: str = "none"
    seed: int = 0
    order: str = "none"


@dataclass(frozen=True)
class GraphSpec:
    """A parsed, validated graph spec; ``str(spec)`` is its canonical string."""

    kind: str
    params: Mapping[str, Any] = field(default_factory=dict)
    options: SpecOptions = field(default_factory=SpecOptions)

    @property
    def is_file(self) -> bool:
        """Whether the graph is read from a file rather than generated."""
        return self.kind == "file"

    @property
    def path(self) -> Path:
        """The file a file spec names, a leading ``~`` expanded; a ``~user`` that names no
        user is refused in one line (pathlib raises RuntimeError for it)."""
        raw = str(self.params["path"])
        try:
            return Path(raw).expanduser()
        except RuntimeError:
            head = raw.split("/", 1)[0]
            raise GraphError(f"file:{raw}: cannot expand {head!r}: no such user (a file "
                             f"named so reads as file:./{raw})") from None

    @property
    def uses_seed(self) -> bool:
        """Whether anything about the graph depends on ``seed``."""
        return (
            self.kind in RANDOM_KINDS
            or self.options.weights == "random"
            or self.options.order == "random"
        )

    def canonical(self) -> str:
        """The canonical spec string: every parameter in a fixed order, non-default options."""
        fields: list[str] = []
        for p in KIND_PARAMS[self.kind]:
            value = self.params.get(p.name)
            if value is None:
                continue
            fields.append(value if p.name == "path" else f"{p.name}={_fmt(value)}")
        opts = self.options
        if opts.directed:
            fields.append("directed=true")
        if opts.weights != "none":
            fields.append(f"weights={opts.weights}")
        if opts.order != "none":
            fields.append(f"order={opts.order}")
        if self.uses_seed:
            fields.append(f"seed={opts.seed}")
        return f"{self.kind}:{','.join(fields)}"

    def short_name(self) -> str:
        """The file's stem, or the generator and its size (``rmat14-ef16``): the readable
        slug of study keys and graph ids (and measured GPU rows' graph names), kept as it was
        so results written before keep their keys. Not unique: :meth:`unique_name` is."""
        p = self.params
        if self.kind == "file":
            return file_stem(p["path"])
        if self.kind == "rmat":
            return f"rmat{p['scale']}-ef{p['ef']}"
        if self.kind == "random":
            size = f"m{p['m']}" if p.get("m") is not None else f"deg{p['deg']:g}"
            return f"random-n{p['n']}-{size}"
        return f"{self.kind}-{p['rows']}x{p['cols']}"

    def unique_name(self) -> str:
        """The graph's name: :meth:`short_name` plus everything else that tells two graphs
        apart: generator parameters off their defaults, a file's format if given, then
        ``directed``, weights, vertex order and the seed wherever it matters
        (``rmat14-ef16-wrandom-s1``, ``grid2d-16x16``, ``road-64x64-keep0.5-s2``). Equal
        canonical specs give equal names; generated graphs whose specs differ get different
        names (floats to 6 significant digits); files are named by their stem."""
        parts = [self.short_name()]
        named = {"rmat": ("scale", "ef"), "random": ("n", "m", "deg"),
                 "grid2d": ("rows", "cols"), "mesh2d": ("rows", "cols"),
                 "road": ("rows", "cols"), "file": ("path",)}[self.kind]
        for p in KIND_PARAMS[self.kind]:
            value = self.params.get(p.name)
            if p.name in named or value is None or value == p.default:
                continue
            parts.append(f"{p.name}{value:g}" if isinstance(value, float) else str(value))
        opts = self.options
        if opts.directed:
            parts.append("directed")
        if opts.weights != "none":
            parts.append(f"w{opts.weights}")
        if opts.order != "none":
            parts.append(f"{opts.order}-order")
        if self.uses_seed:
            parts.append(f"s{opts.seed}")
        return "-".join(parts)

    def __str__(self) -> str:
        return self.canonical()

    def __hash__(self) -> int:
        return hash(self.canonical())


def _fmt(value: Any) -> str:
    """A parameter value as it appears in a canonical spec."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def file_stem(path: str) -> str:
    """The file's name without directories, ``.gz`` and its format extension."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    if name.lower().endswith(".gz"):
        name = name[:-3]
    stem, dot, ext = name.rpartition(".")
    return stem if dot and stem and "." + ext.lower() in GRAPH_EXTENSIONS else name


def _looks_like_path(text: str) -> bool:
    """Whether a spec without a kind is a bare path to a graph file."""
    low = text.lower()
    if low.endswith(".gz"):
        low = low[:-3]
    return low.endswith(GRAPH_EXTENSIONS) and "," not in text and "=" not in text


def allowed_keys(kind: str) -> list[str]:
    """The keys a spec of ``kind`` accepts, its parameters first."""
    return [p.name for p in KIND_PARAMS[kind] if p.name != "path"] + [
        p.name for p in OPTION_PARAMS
    ]


def _names_a_file(text: str) -> bool:
    """Whether ``text``, taken whole as a path, names an existing file."""
    try:
        return Path(text).expanduser().is_file()
    except (OSError, ValueError, RuntimeError):
        return False


def _bare_path_hint(text: str) -> str:
    """Where a spec refused as no kind names a file: how to read it (a bare path is read only
    without ':', ',' or '=', which specs part it at)."""
    if not _names_a_file(text):
        return ""
    return (f"; {text!r} is a file: write file:{text} to read it (a bare path holds no ':', "
            "',' or '=')")


def parse_spec(spec: str | GraphSpec) -> GraphSpec:
    """Parse and validate a spec string; GraphError names the spec and the problem."""
    if isinstance(spec, GraphSpec):
        return spec
    literal = None
    if isinstance(spec, os.PathLike):  # a file's path, named whole (commas and all)
        spec = literal = os.fspath(spec)
    if not isinstance(spec, str):
        hint = ""
        if type(spec).__name__ == "Graph":  # a study names its graph by spec, to rebuild it
            hint = ("; a study rebuilds its graph from a spec on every worker: write it with "
                    "simulator.loaders.save_npz(graph, 'g.npz') and pass 'file:g.npz' (with "
                    "',directed=true' for a directed graph, else it is read symmetrised)")
        raise GraphError(f"graph spec must be a string, got {type(spec).__name__}{hint}")
    text = spec.strip()
    if not text:
        raise GraphError("empty graph spec (expected e.g. rmat:scale=14 or file:PATH)")
    kind, colon, rest = text.partition(":")
    kind = kind.strip().lower()
    if literal is not None:
        kind, rest = "file", literal
    elif not colon or len(kind) == 1:  # no kind, or a drive letter
        if _looks_like_path(text):
            kind, rest = "file", text
        else:
            raise GraphError(
                f"graph spec {spec!r}: expected KIND:key=value,... with KIND one of "
                f"{', '.join(sorted([*KIND_PARAMS, *KIND_ALIASES]))}, or a graph file path"
                + _bare_path_hint(text))
    kind = KIND_ALIASES.get(kind, kind)
    if kind not in KIND_PARAMS:
        raise GraphError(
            f"graph spec {spec!r}: unknown kind {kind!r}; expected one of "
            f"{', '.join(sorted([*KIND_PARAMS, *KIND_ALIASES]))}" + _bare_path_hint(text))
    fields = [f.strip() for f in rest.split(",")] if rest.strip() else []
    raw: dict[str, str] = {}
    if kind == "file":
        if literal is not None:
            fields = [literal]
        elif fields and fields[0].lower().startswith("path="):
            fields[0] = fields[0][5:].strip()
        if not fields or not fields[0]:
            raise GraphError(f"graph spec {spec!r}: file: needs a path (file:PATH,...)")
        raw["path"] = fields.pop(0)
        if literal is None and rest != raw["path"] and _names_a_file(rest):
            raise GraphError(
                f"graph spec {spec!r}: {rest!r} is a file, but a spec reads a path up to its "
                f"first comma, without blanks at its ends or a leading 'path=' (here "
                f"{raw['path']!r}): rename the file or link it under a plain name")
    for f in fields:
        key, eq, value = f.partition("=")
        key, value = key.strip().lower(), value.strip()
        if not eq or not key:
            raise GraphError(
                f"graph spec {spec!r}: malformed field {f!r}, expected key=value "
                f"(allowed keys: {', '.join(allowed_keys(kind))})"
            )
        if key in raw:
            raise GraphError(f"graph spec {spec!r}: key {key!r} given twice")
        raw[key] = value
    values: dict[str, Any] = {}
    for p in (*KIND_PARAMS[kind], *OPTION_PARAMS):
        if p.name not in raw:
            if p.default is REQUIRED:
                raise GraphError(
                    f"graph spec {spec!r}: missing required key {p.name!r} for {kind} "
                    f"(allowed keys: {', '.join(allowed_keys(kind))})"
                )
            values[p.name] = p.default
            continue
        text_value = raw.pop(p.name)
        if not text_value:
            raise GraphError(f"graph spec {spec!r}: empty value for {p.name!r}")
        try:
            value = p.parse(text_value)
        except ValueError as exc:
            raise GraphError(f"graph spec {spec!r}: bad value for {p.name!r}: {exc}") from None
        if p.check is not None and not p.check(value):
            raise GraphError(
                f"graph spec {spec!r}: {p.name}={text_value} out of range (must be {p.rule})"
            )
        values[p.name] = value
    if raw:
        raise GraphError(
            f"graph spec {spec!r}: unknown key {next(iter(raw))!r} for {kind} "
            f"(allowed keys: {', '.join(allowed_keys(kind))})"
        )
    options = SpecOptions(**{p.name: values.pop(p.name) for p in OPTION_PARAMS})
    _check_kind(spec, kind, values, options)
    parsed = GraphSpec(kind, values, options)
    if not parsed.uses_seed and options.seed != 0:  # a seed that changes nothing
        parsed = GraphSpec(kind, values, dataclasses.replace(options, seed=0))
    return parsed


def _check_kind(spec: str, kind: str, params: dict[str, Any], options: SpecOptions) -> None:
    """Cross-field rules and defaults that depend on other fields (fills ``params``)."""
    if options.weights == "file" and kind != "file":
        raise GraphError(
            f"graph spec {spec!r}: weights=file needs a file: spec; use weights=random"
        )
    if kind == "rmat":
        total = params["a"] + params["b"] + params["c"]
        if total > 1.0 + 1e-12:
            raise GraphError(f"graph spec {spec!r}: a+b+c = {total:g} must be <= 1")
    elif kind == "random":
        n = params["n"]
        if params["m"] is not None and params["deg"] is not None:
            raise GraphError(f"graph spec {spec!r}: give m= or deg=, not both")
        if params["m"] is None and params["deg"] is None:
            params["deg"] = 8.0
        pairs = n * (n - 1) // (1 if options.directed else 2)
        m = params["m"] if params["m"] is not None else random_edge_count(params, options)
        if m == 0:  # deg > 0 but too small for n: no edge would be drawn
            raise GraphError(
                f"graph spec {spec!r}: deg={params['deg']:g} on {n} vertices draws no edges "
                "(an empty graph); raise deg or n")
        if m > pairs:
            asked = (f"m={m}" if params["m"] is not None
                     else f"deg={params['deg']:g} ({m} edges)" if m < 10**15
                     else f"deg={params['deg']:g}")
            raise GraphError(
                f"graph spec {spec!r}: {asked} asks for more edges than a simple graph on "
                f"{n} vertices has (at most {pairs})"
            )
    elif kind in ("grid2d", "mesh2d", "road"):
        if params["cols"] is None:
            params["cols"] = params["rows"]
        if params["rows"] * params["cols"] < 2:
            raise GraphError(f"graph spec {spec!r}: a grid needs at least 2 vertices")


def random_edge_count(params: Mapping[str, Any], options: SpecOptions) -> int:
    """The number of distinct edges ``random:`` draws (from ``m`` or the average degree)."""
    if params.get("m") is not None:
        return int(params["m"])
    per_vertex = params["deg"] if options.directed else params["deg"] / 2
    edges = per_vertex * params["n"]
    # deg=1e308 on many vertices overflows to inf, which int() refuses: as many as asked
    return int(round(edges)) if math.isfinite(edges) else 2**63
