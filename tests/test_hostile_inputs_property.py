"""Property test (issue 41): generated hostile graph specs, knob sets, space files and device
files given to the CLI end in a one-line error and a non-zero exit, never a traceback, and
write nothing under the results directory. In-process (``tuner.cli.main``), a bounded number
of examples each, a memory limit of 16 MB so that nothing large is ever built.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from simulator.device import Device
from simulator.sizes import ENV_MAX_MEMORY
from simulator.strategy import Strategy
from tuner.cli import main

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])

HOSTILE_TEXT = st.sampled_from([
    "", "abc", "-1", "0", "1e400", "-1e400", "nan", "inf", "-inf", "1.5", "99999999999999999999",
    "2147483648", "1e12", "true", "none", "0x10", "1_000", " ", "=", "é", "\x00", "[1]",
])
NUMBERS = st.one_of(st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True))
HOSTILE_VALUE = st.one_of(NUMBERS, HOSTILE_TEXT, st.booleans(), st.none(),
                          st.lists(st.integers(), max_size=2))


@pytest.fixture(autouse=True)
def _small_limit(monkeypatch):
    monkeypatch.setenv(ENV_MAX_MEMORY, "16M")


def run_cli(capsys, argv: list[str], results: Path | None = None) -> tuple[int, str]:
    """Run the CLI in-process; anything but exit 0 must be a one-line error."""
    capsys.readouterr()
    code = main(argv)
    _, err = capsys.readouterr()
    assert "Traceback" not in err
    if code != 0:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("warpsweep: error: "), err
        if results is not None:
            assert not results.exists() or not any(p.is_file() for p in results.rglob("*"))
    return code, err


# A spec: a kind (or junk), each of its keys with a sampled value, sometimes an unknown key.
KINDS = {
    "rmat": ["scale", "ef", "a", "b", "c"], "random": ["n", "m", "deg"],
    "grid2d": ["rows", "cols"], "mesh2d": ["rows", "cols"], "road": ["rows", "cols", "keep"],
}
OPTIONS = ["directed", "weights", "seed", "order"]


@st.composite
def graph_specs(draw) -> str:
    kind = draw(st.sampled_from([*KINDS, "kron", "file", "bogus", ""]))
    keys = KINDS.get(kind, KINDS["rmat"]) + OPTIONS + ["bogus"]
    chosen = draw(st.lists(st.sampled_from(keys), max_size=4, unique=True))
    fields = [f"{k}={draw(HOSTILE_TEXT)}" for k in chosen]
    if kind == "file":
        fields.insert(0, draw(st.sampled_from(["/", "/nonexistent.gr", "/dev/null", "x.npz"])))
    return f"{kind}:{','.join(fields)}"


@given(spec=graph_specs())
@SETTINGS
def test_generated_graph_specs(capsys, spec):
    code, err = run_cli(capsys, ["graph", "info", "--no-cache", spec])
    # every spec drawn holds a hostile value, an unknown key, kind or file, or misses a key
    assert code != 0, spec


@st.composite
def knob_sets(draw) -> list[str]:
    knobs = [*Strategy.KNOBS, "bogus"]
    chosen = draw(st.lists(st.sampled_from(knobs), min_size=1, max_size=4, unique=True))
    argv = []
    for k in chosen:
        argv += ["--set", f"{k}={draw(HOSTILE_TEXT)}"]
    return argv


@given(sets=knob_sets())
@SETTINGS
def test_generated_knob_sets(capsys, sets):
    run_cli(capsys, ["simulate", "--graph", "rmat:scale=5,seed=1", "--algo", "bfs", *sets])


# Space files: a valid space with one defect injected; the values are never valid knob values.
SPACE_VALUE = st.one_of(HOSTILE_TEXT, st.integers(2**31, 2**70), st.integers(-2**70, -1),
                        st.sampled_from([float("nan"), float("inf"), -float("inf"), 0.5]),
                        st.lists(st.integers(), min_size=1, max_size=2))
DEFECTS = [
    lambda v: {"params": {"bogus_knob": {"choices": [1, 2]}}},
    lambda v: {"params": {"chunk": {"int": [v, 4]}}, "fixed": {"mapping": "vwarp"}},
    lambda v: {"params": {"w": {"choices": [v]}}, "fixed": {"mapping": "vwarp"}},
    lambda v: {"params": {"mapping": {"choices": ["vwarp", v]}}},
    lambda v: {"params": {"chunk": {"float": [1, v]}}},
    lambda v: {"params": {"chunk": v}},
    lambda v: {"params": v},
    lambda v: [v],
    lambda v: {"params": {"mapping": {"value": "vwarp"}, "w": {"choices": [8], "when": v}}},
]


@given(defect=st.sampled_from(range(len(DEFECTS))), value=SPACE_VALUE,
       alias=st.booleans())
@SETTINGS
def test_generated_space_files(capsys, defect, value, alias):
    doc = DEFECTS[defect](value)
    text = yaml.safe_dump(doc, allow_unicode=True)
    if alias:  # a self-referencing alias on top
        text = "x: &x\n  y: *x\n" + (text if isinstance(doc, dict) else "params: {}\n")
    with tempfile.TemporaryDirectory() as tmp:
        space = Path(tmp) / "space.yaml"
        space.write_text(text)
        results = Path(tmp) / "results"
        code, _ = run_cli(capsys, ["tune", "--graph", "rmat:scale=5,seed=1", "--algo", "bfs",
                                   "--space", str(space), "--workers", "0", "--trials", "2",
                                   "--results", str(results), "--no-progress"], results)
        assert code != 0, text


FIELDS = [f.name for f in Device.__dataclass_fields__.values()] + ["base", "bogus"]


@given(fields=st.dictionaries(st.sampled_from(FIELDS), HOSTILE_VALUE, min_size=1, max_size=4),
       suffix=st.sampled_from([".yaml", ".toml"]))
@SETTINGS
def test_generated_device_files(capsys, fields, suffix):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"dev{suffix}"
        if suffix == ".toml":
            lines = [f"{k} = {_toml(v)}" for k, v in fields.items()]
            path.write_text("\n".join(lines) + "\n")
        else:
            path.write_text(yaml.safe_dump(fields, allow_unicode=True))
        run_cli(capsys, ["simulate", "--graph", "rmat:scale=4,seed=1", "--algo", "bfs",
                         "--device", str(path)])


def _toml(value) -> str:
    """A TOML literal (or, for None, deliberately broken TOML)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(repr(value), repr(value))
    if isinstance(value, int | list):
        return repr(value)
    if value is None:
        return ""
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\x00", "") + '"'
