"""Every `warpsweep ...` example of the README, of docs/*.md and of the CLI's --help texts works
as printed; the README stays a user's README (at most 300 lines) and its links resolve.

Each is parsed by the real parser (optional parts in [brackets] taken in, shell redirections
left out); the study specs of `tune` and `sweep` examples are checked as a run checks them
before it starts (names, graph spec, SSSP's weights); `graph info`, `simulate` and the
readers (`query`, `best`, `effect`, `pareto`, `check`) run for real, the readers on a small
results directory. Long runs (tuning budgets, sweeps of many graphs, reports, selector
training, calibration) are checked but not run.
"""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from tuner.cli import build_parser
from tuner.cli import main

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
# placeholders the examples use for a value of the reader's own
PLACEHOLDERS = {"G": "rmat:scale=14,seed=1", "A": "bfs", "D": "h100"}
# a file an earlier example writes (calibrate's output), read by a later one
WRITTEN_BY_EXAMPLES = {"h100.toml": REPO / "bench" / "gpu" / "results" / "h100.toml"}
READERS = {"query", "best", "effect", "pareto", "check"}
RUN = {"graph info", "simulate"}
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
README_MAX_LINES = 300  # issue 42: a README for users; the model and benchmarks live in docs/


def doc_examples(path: Path) -> list[str]:
    """The `warpsweep ...` lines of a Markdown file's bash blocks (continuations joined)."""
    out = []
    text = path.read_text()
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #")[0].strip()
            if "&& warpsweep " in line:  # `pip install ... && warpsweep ...`, `ray exec '...'`
                line = line.split("&&", 1)[1].strip().rstrip("'\"")
            if line.startswith("warpsweep "):
                out.append(line)
    return out


def help_examples() -> list[str]:
    """The `warpsweep ...` lines of every parser's epilog (continuations joined)."""
    out = []

    def walk(parser: argparse.ArgumentParser) -> None:
        for line in re.sub(r"\\\n\s*", " ", parser.epilog or "").splitlines():
            line = line.strip()
            if line.startswith("warpsweep ") and "VERB" not in line:
                out.append(re.split(r"\s{3,}| #", line)[0].strip())
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in dict.fromkeys(action.choices.values()):
                    walk(sub)

    walk(build_parser())
    return out


def readme_examples() -> list[str]:
    return doc_examples(README)


def docs_examples() -> list[str]:
    return [e for path in DOCS for e in doc_examples(path)]


EXAMPLES = sorted(set(readme_examples()) | set(docs_examples()) | set(help_examples()))


def argv_of(example: str) -> list[str]:
    """The example's arguments: [optional parts] taken in, placeholders filled, `...` and
    shell redirections left out."""
    text = re.sub(r"\[([^\[\]]*)\]", r"\1", example)
    words = shlex.split(text)[1:]
    out, skip = [], False
    for word in words:
        if skip:
            skip = False
            continue
        if word in (">", "<"):
            skip = True
            continue
        if word == "...":
            continue
        out.append(PLACEHOLDERS.get(word, word))
    return [str(WRITTEN_BY_EXAMPLES.get(w, w)) for w in out]


def verb_of(argv: list[str]) -> str:
    return " ".join(argv[:2]) if argv[0] in ("graph", "select", "bench") else argv[0]


def test_the_docs_hold_examples_of_every_verb():
    verbs = {verb_of(argv_of(e)) for e in EXAMPLES}
    assert {"tune", "sweep", "simulate", "graph info", "query", "best", "check",
            "calibrate", "report", "select train"} <= verbs


def test_the_readme_shows_the_everyday_verbs():
    verbs = {verb_of(argv_of(e)) for e in readme_examples()}
    assert {"tune", "sweep", "simulate", "graph info", "query", "best", "effect", "pareto",
            "report", "select train", "calibrate", "check"} <= verbs


def test_the_docs_folder_holds_examples():
    assert DOCS, "docs/*.md missing"
    assert docs_examples(), "no `warpsweep ...` example found in docs/*.md"


def test_the_readme_is_short():
    lines = len(README.read_text().splitlines())
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines, over {README_MAX_LINES}: move details to docs/")


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings."""
    out = set()
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    for heading in re.findall(r"^#+ (.+)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        out.add(slug)
    return out


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: p.name)
def test_links_resolve(path):
    """Every relative link of the README and docs/*.md names a file that exists, and a
    heading that exists in it."""
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        assert linked.exists(), f"{path.name}: link to {target} names no file"
        if anchor and linked.suffix == ".md":
            assert anchor in _anchors(linked), f"{path.name}: link to {target}: no such heading"


@pytest.mark.parametrize("example", EXAMPLES)
def test_example_parses_and_its_names_check_out(example):
    argv = argv_of(example)
    args = build_parser().parse_args(argv)  # SystemExit(2) on an unknown option or choice
    verb = verb_of(argv)
    if verb == "tune":
        from tuner.tuning.plan import check_spec
        from tuner.tuning.spec import Objective
        from tuner.tuning.spec import StudySpec

        check_spec(StudySpec(graph=args.graph, algorithm=args.algo, device=args.device,
                             space=args.space, trials=args.trials, sampler=args.sampler,
                             objective=Objective.parse(args.objective), sources=args.sources,
                             seed=args.seed, references=args.references))
    elif verb == "sweep":
        from tuner.tuning.plan import check_spec
        from tuner.tuning.sweep import load_sweep

        for spec in load_sweep(REPO / args.sweep_file):
            check_spec(spec)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """A small results directory: BFS on the README's graph, SSSP on a small road grid."""
    root = tmp_path_factory.mktemp("doc-results") / "results"
    for graph, algo in (("rmat:scale=14,seed=1", "bfs"),
                        ("road:rows=16,seed=1,weights=random", "sssp")):
        assert main(["tune", "--graph", graph, "--algo", algo, "--trials", "3",
                     "--sources", "1", "--workers", "0", "--results", str(root), "-q"]) == 0
    return root


@pytest.mark.parametrize("example", [e for e in EXAMPLES
                                     if verb_of(argv_of(e)) in READERS | RUN])
def test_example_runs(example, results, tmp_path, monkeypatch, capsys):
    argv = argv_of(example)
    verb = verb_of(argv)
    if any(w.startswith("file:../shared/") for w in argv) and not SHARED.is_dir():
        pytest.skip("needs ../shared/graphs")
    monkeypatch.chdir(REPO)  # the examples' relative paths are the repository root's
    # an output file goes to tmp_path (a knob's value, KNOB=FILE, is an input: kept)
    argv = [str(tmp_path / Path(w).name) if w.endswith((".parquet", ".json", ".npz"))
            and "=" not in w and not Path(w).exists() else w for w in argv]
    if verb in READERS:
        if argv[0] == "check":  # its directory positional or named: the test's either way
            rest = argv[1:]
            at = rest.index("--results") if "--results" in rest else 0
            del rest[at:at + (2 if "--results" in rest else 1)]
            argv = ["check", str(results)] + rest
        else:
            argv += ["--results", str(results)]
        if argv[1:2] == ["-"]:  # SQL from stdin
            monkeypatch.setattr("sys.stdin", _stdin("SELECT count(*) FROM trials"))
    code = main(argv)
    err = capsys.readouterr().err
    # 1: no study with a complete row to answer from; 2: bad input, a --graph or --algo that
    # matches none of the results' studies among it (every example here names what they hold)
    assert code in (0, 1), f"{example!r} exited {code}: {err}"
    assert "Traceback" not in err


def _stdin(text: str):
    import io

    return io.StringIO(text)


def test_the_api_modules_example_runs_when_pasted(tmp_path, monkeypatch):
    """Its lines had used load_results and figures without importing them."""
    import tuner.api

    lines = [ln.strip()[4:] for ln in tuner.api.__doc__.splitlines()
             if ln.strip().startswith(">>> ")]
    assert lines and "import" in lines[0]
    monkeypatch.chdir(tmp_path)
    code = "\n".join(ln.replace("trials=20", "trials=3") for ln in lines)
    exec(compile(code, "tuner/api.py docstring", "exec"), {})  # noqa: S102
    assert (tmp_path / "res").is_dir()


def test_model_md_lists_the_instruction_costs_the_model_charges():
    """docs/model.md's instruction costs are what ``InstructionCosts`` charges: a reader
    counting cycles by hand from the doc gets the tool's (probe HAND: they were in the code
    alone)."""
    import dataclasses
    import re

    from simulator.costs import InstructionCosts

    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "model.md")
                    .read_text().split())
    listed = re.split(r"\.(?:\s|$)", text.split("Instruction costs per phase", 1)[1])[0]
    found = dict(re.findall(r"\b([a-z_]+) (\d+)\b", listed))
    assert found == {f.name: str(f.default) for f in dataclasses.fields(InstructionCosts)}


def test_the_readme_main_command_runs_as_printed_and_resumes(tmp_path, monkeypatch, capsys):
    """The first of the README's two commands, as printed (its `pip install` aside), in a
    fresh directory: the table it promises, the results where it says, and a second run that
    resumes without simulating a finished trial."""
    block = README.read_text().split("## Two commands", 1)[1].split("```bash", 1)[1]
    (command,) = [line.split("&&", 1)[1].strip() for line in block.split("```", 1)[0]
                  .splitlines() if "&& warpsweep tune" in line]
    argv = argv_of(command)
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "mapping=thread" in out and "(best fixed virtual warp)" in out
    assert list((tmp_path / "warpsweep-results" / "trials").rglob("*.parquet"))
    assert main(argv) == 0
    assert "\n0 evaluations simulated in this run" in capsys.readouterr().out
