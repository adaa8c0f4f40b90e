"""A seeded sample of mutmut mutants over the simulator's cost code and the calibration fit.

mutmut 3 (``pip install mutmut``; not a test extra, CI does not run this) mutates every function
of the chosen files; this tool runs only a seeded random sample of those mutants, a few per
module, each against the tests that mutmut's own stats found calling the mutated function
(drawn from ``TESTS``), and prints one row per mutant and a summary line per module.

Nothing in the repository is touched: the revision (``HEAD`` unless told), or with
``--worktree`` the working tree's tracked and untracked-unignored files, is copied to a
temporary directory, ``[tool.mutmut]`` is written into that copy's pyproject.toml and mutmut
runs there (its ``mutants/`` lies in that copy).

Example (about 10 minutes on 2 cores):

    python bench/mutation_sample.py --per-module 8 --seed 48
    python bench/mutation_sample.py --only 'simulator.timing.x_kernel_time__mutmut_12'
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# file -> the functions ("name" or "Class.method", fnmatch patterns) whose mutants are sampled
MODULES: dict[str, list[str]] = {
    "simulator/timing.py": ["*"],
    "simulator/worklist.py": ["*"],
    "simulator/lanes.py": ["*"],
    "simulator/sectors.py": ["*"],
    "simulator/scheduling.py": ["*"],
    "simulator/launch_costs.py": ["*"],
    "simulator/edge_work.py": ["_list_sectors", "_lockstep_in_vertex_order"],
    "simulator/expansion.py": ["storing_lanes", "sweeps_storing_lanes"],
    "simulator/worklist_pushes.py": ["who_pushes_what", "_lockstep_worklist_pushes"],
    "simulator/functional.py": ["*"],
    "tuner/calibration/calibrate.py": ["_Stack.*", "predict", "fit", "_solve", "_level",
                                       "_never_binds"],
}

# the tests mutmut may choose from (per mutant it runs those that call the mutated function)
TESTS = [
    "tests/test_engine_hand_counted.py",
    "tests/test_engine_hand_counted_worklists.py",
    "tests/test_engine_l2.py",
    "tests/test_engine_invariants.py",
    "tests/test_warp_step_counts.py",
    "tests/test_worklist_batches.py",
    "tests/test_algorithms.py",
    "tests/test_asynchronous.py",
    "tests/test_strategy.py",
    "tests/test_sweep_speed.py",
    "tests/test_calibrate.py",
    "tests/test_mutation_gaps.py",
]

KEY = re.compile(r"^(?P<module>[\w.]+)\.x(?:ǁ(?P<cls>\w+)ǁ|_)(?P<func>\w+?)__mutmut_(?P<n>\d+)$")


def function_of(key: str) -> tuple[str, str] | None:
    """(module file, "func" or "Class.method") of a mutmut mutant name."""
    m = KEY.match(key)
    if not m:
        return None
    path = m["module"].replace(".", "/") + ".py"
    return path, (f"{m['cls']}.{m['func']}" if m["cls"] else m["func"])


def copy_tree(dest: Path, rev: str, worktree: bool) -> None:
    if worktree:
        listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard",
                                 "-z"], capture_output=True, check=True).stdout
        for name in filter(None, listed.decode().split("\0")):
            src = REPO / name
            if src.is_file():
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / name)
    else:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)


def configure(tree: Path, tests: list[str]) -> None:
    toml = lambda xs: "[" + ", ".join(f'"{x}"' for x in xs) + "]"  # noqa: E731
    with open(tree / "pyproject.toml", "a") as f:
        f.write("\n[tool.mutmut]\n"
                f"source_paths = {toml(MODULES)}\n"
                f"pytest_add_cli_args_test_selection = {toml(tests)}\n"
                f'pytest_add_cli_args = ["-p", "no:cacheprovider"]\n'
                f"also_copy = {toml(['simulator', 'tuner', 'search_spaces', 'tests'])}\n")


def mutmut(tree: Path, *args: str, quiet: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=tree, text=True,
                          capture_output=quiet)


def statuses(tree: Path) -> dict[str, str]:
    out = mutmut(tree, "results", "--all", "true").stdout
    found = {}
    for line in out.splitlines():
        key, _, status = line.strip().rpartition(": ")
        if key:
            found[key] = status
    return found


def changed_line(tree: Path, key: str) -> tuple[int | None, str]:
    """The mutated line's number in the original file, and the change as ``old -> new``."""
    diff = mutmut(tree, "show", key).stdout.splitlines()
    path, func = function_of(key)
    source = (tree / path).read_text()
    start = None
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and "." in func and node.name == func.split(".")[0]:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == func.split(".")[1]:
                    start = item.lineno
        elif isinstance(node, ast.FunctionDef) and node.name == func and start is None:
            start = node.lineno
    line, old, new = None, [], []
    offset = 0
    for text in diff:
        hunk = re.match(r"^@@ -(\d+)", text)
        if hunk:
            offset = int(hunk[1]) - 1
        elif text.startswith("-") and not text.startswith("---"):
            if line is None and start is not None:
                line = start + offset
            old.append(text[1:].strip())
        elif text.startswith("+") and not text.startswith("+++"):
            new.append(text[1:].strip())
        elif text.startswith(" "):
            offset += 1
        if text.startswith("-") and not text.startswith("---"):
            offset += 1
    return line, f"{' '.join(old)}  ->  {' '.join(new)}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=48)
    ap.add_argument("--per-module", type=int, default=8, help="mutants sampled per file")
    ap.add_argument("--rev", default="HEAD", help="revision to copy (default HEAD)")
    ap.add_argument("--worktree", action="store_true",
                    help="copy the working tree (tracked + untracked unignored) instead of --rev")
    ap.add_argument("--only", nargs="+", metavar="MUTANT",
                    help="run these mutmut mutant names instead of a sample")
    ap.add_argument("--keep", action="store_true", help="keep the temporary copy (printed)")
    ap.add_argument("--max-children", type=int, default=2)
    args = ap.parse_args(argv)

    tree = Path(tempfile.mkdtemp(prefix="mutation_sample_"))
    try:
        copy_tree(tree, args.rev, args.worktree)
        tests = [t for t in TESTS if (tree / t).exists()]
        configure(tree, tests)
        # generate every mutant and stop (mutmut refuses a filter that matches none, after
        # generating); the run below gathers stats and checks the clean run
        gen = mutmut(tree, "run", "--max-children", str(args.max_children), "no_such_mutant")
        every = sorted(statuses(tree))
        if not every:
            print(gen.stdout[-3000:], gen.stderr[-3000:], file=sys.stderr)
            return 2
        if args.only:
            picked = args.only
        else:
            rng = random.Random(args.seed)
            picked = []
            for path, patterns in MODULES.items():
                pool = [k for k in every if (f := function_of(k)) and f[0] == path
                        and any(fnmatch.fnmatchcase(f[1], p) for p in patterns)]
                picked += sorted(rng.sample(pool, min(args.per_module, len(pool))))
        mutmut(tree, "run", "--max-children", str(args.max_children), *picked)
        status = statuses(tree)
        counts: dict[str, dict[str, int]] = {}
        print(f"{'status':<10} {'file:line':<28} mutant / change")
        for key in picked:
            path, func = function_of(key)
            s = status.get(key, "missing")
            counts.setdefault(path, {}).setdefault(s, 0)
            counts[path][s] += 1
            line, change = changed_line(tree, key)
            print(f"{s:<10} {path + ':' + str(line):<28} {key}\n{'':<39} {change}")
        print()
        for path, c in counts.items():
            print(f"{path:<28} " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
        total = {k: sum(c.get(k, 0) for c in counts.values())
                 for k in {k for c in counts.values() for k in c}}
        print(f"summary: {len(picked)} mutants, "
              + ", ".join(f"{k} {v}" for k, v in sorted(total.items()))
              + f" (seed {args.seed}, {'worktree' if args.worktree else args.rev})")
        return 0
    finally:
        if args.keep:
            print(f"kept {tree}", file=sys.stderr)
        else:
            shutil.rmtree(tree, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
