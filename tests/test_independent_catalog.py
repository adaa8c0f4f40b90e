"""The independent SSSP implementations' CPU side (bench/gpu/independent): each maps to a valid
simulator strategy, together they cover every combination the comparison needs, the runner
takes its kernel names from the catalog, sssp.cu defines them, and the Parquet round-trips."""

import ast
import itertools
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from simulator import Strategy

REPO = Path(__file__).resolve().parents[1]
INDEPENDENT = REPO / "bench" / "gpu" / "independent"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.gpu.independent import catalog  # noqa: E402


@pytest.fixture(scope="module")
def impls() -> list[catalog.Implementation]:
    """Every implementation of the catalog."""
    return catalog.implementations()


def test_every_config_is_a_valid_simulator_strategy(impls):
    for i in impls:
        strategy = Strategy.parse(i.config)
        assert strategy.driven == i.driven
        assert strategy.lanes_per_vertex == i.w


def test_configs_follow_the_mapping_rules():
    by_id = {i.impl: i for i in catalog.implementations()}
    # the sweeps vote once a warp that they lowered something (changed_flag=warp)
    assert by_id["topo-w1"].config == "mapping=thread,changed_flag=warp"
    assert by_id["topo-w8"].config == "mapping=vwarp,w=8,changed_flag=warp"
    assert by_id["wl-w32-atomicmin-nodedup-warp"].config == (
        "mapping=vwarp,w=32,driven=data,push=atomic")
    assert by_id["wl-w1-recheck-flag-thread"].config == (
        "mapping=thread,driven=data,push=atomic,dedup=true,relax=store")
    assert by_id["wl-w8-atomicmin-flag-block"].config == (
        "mapping=vwarp,w=8,driven=data,push=block,dedup=true")
    assert by_id["wl-w8-atomicmin-nodedup-block"].config == (
        "mapping=vwarp,w=8,driven=data,push=block")
    assert by_id["temporal-w32-edges-0.05"].config == (
        "mapping=vwarp,w=32,driven=temporal,push=atomic,switch_to_topology=0.05,"
        "switch_on=edges")
    assert by_id["temporal-w1-vertices-0.2"].config.endswith("switch_on=vertices")


def test_ids_are_unique_and_there_are_47(impls):
    ids = [i.impl for i in impls]
    assert len(ids) == len(set(ids)) == 47


def test_every_combination_is_covered(impls):
    got = {(i.driven, i.w, i.relax, i.dedup, i.push, i.switch_on, i.switch_fraction)
           for i in impls}
    want = {("topology", w, "atomicmin", "none", "thread", None, None) for w in (1, 8, 32)}
    want |= {("data", w, r, d, p, None, None) for w, r, d, p in itertools.product(
        (1, 8, 32), ("atomicmin", "store_recheck"), ("none", "flag"),
        ("thread", "warp", "block"))}
    want |= {("temporal", w, "atomicmin", "none", "warp", s, f) for w, s, f in itertools.product(
        (1, 32), ("vertices", "edges"), (0.05, 0.2))}
    assert got == want


def test_select_keeps_matching_ids(impls):
    assert [i.impl for i in catalog.select(impls, ("topo-",))] == ["topo-w1", "topo-w8",
                                                                   "topo-w32"]
    assert catalog.select(impls) == impls


def test_write_results_round_trips_the_schema(tmp_path):
    rows = [{c: None for c in catalog.COLUMNS}]
    rows[0].update(device="h100", graph="g", n=3, m=4, w=8, switch_fraction=0.2, time_us=1.5,
                   correct=True, impl="topo-w8", reps=5, iterations=2)
    out = tmp_path / "sub" / "x.parquet"
    catalog.write_results(rows, out)
    table = pq.read_table(out)
    assert table.schema.equals(catalog.SCHEMA)
    assert tuple(table.column_names) == catalog.COLUMNS
    back = table.to_pylist()[0]
    assert back["n"] == 3 and back["w"] == 8 and back["correct"] is True
    assert back["switch_fraction"] == 0.2 and back["switch_on"] is None


def _defined_kernels() -> dict[str, int]:
    """sssp.cu's __global__ functions and how many template parameters each has."""
    text = (INDEPENDENT / "sssp.cu").read_text()
    found = {}
    pattern = (r"(template\s*<([^>]*)>\s*)?__global__\s+void\s+"
               r"(?:__launch_bounds__\([^)]*\)\s*)?(\w+)\s*\(")
    for match in re.finditer(pattern, text):
        params = match.group(2)
        found[match.group(3)] = len(params.split(",")) if params else 0
    return found


def test_sssp_cu_defines_every_kernel_the_catalog_names(impls):
    defined = _defined_kernels()
    assert defined == catalog.KERNEL_TEMPLATES
    for name in catalog.kernel_names(impls):
        base, _, args = name.partition("<")
        assert base in defined
        assert (len(args.rstrip(">").split(",")) if args else 0) == defined[base], name


def test_run_py_takes_every_kernel_name_from_the_catalog():
    tree = ast.parse((INDEPENDENT / "run.py").read_text())
    called = {n.func.id for n in ast.walk(tree)
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert {"kernel_names", "compile_module"} <= called
    literals = [n.value for n in ast.walk(tree)
                if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    for name in catalog.KERNEL_TEMPLATES:
        assert not any(name in s for s in literals), f"run.py spells {name} itself"
    uses = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert "kernels" in uses


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc here")
def test_nvcc_instantiates_every_kernel(tmp_path, impls):
    names = catalog.kernel_names(impls)
    source = tmp_path / "all.cu"
    lines = [f'#include "{INDEPENDENT / "sssp.cu"}"', "void take_all() {"]
    lines += [f"    (void)&{name};" for name in names]
    source.write_text("\n".join([*lines, "}"]) + "\n")
    done = subprocess.run(["nvcc", "-std=c++17", "-arch=sm_90", "-c", str(source), "-o",
                           str(tmp_path / "all.o")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
