"""Counts that line up (issue 42): the table, the progress line, the footer, --json and the
journal say configurations, evaluations and repeats with the same numbers; the best on the
progress line includes the references; Ctrl-C names the command that resumes."""

from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
import sys
import time

import optuna
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend

from tuner.cli import main
from tuner.results.store import read_trials

GRAPH = "rmat:scale=8,seed=2"


def test_table_progress_footer_json_and_journal_agree(tmp_path, capsys):
    argv = ["tune", "--graph", GRAPH, "--trials", "40", "--workers", "0", "--sources", "1",
            "--results", str(tmp_path)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    table = re.search(r"(\d+) configurations tried and (\d+) references: (\d+) evaluations, "
                      r"(\d+) failed; (\d+) repeats", captured.out)
    assert table is not None
    configs, refs, evals, _failed, repeats = map(int, table.groups())
    assert (configs, refs) == (40, 7)
    footer = re.search(r"(\d+) evaluations? simulated in this run", captured.out)
    assert int(footer.group(1)) == evals  # a fresh study: every evaluation ran now
    last = captured.err.strip().splitlines()[-1]
    assert last.startswith(f"tune: {configs}/40 configurations, {refs}/7 references")
    rows = read_trials(str(tmp_path)).to_pylist()
    assert len([r for r in rows if r["state"] != "duplicate"]) == evals
    assert sum(r["repeats"] or 0 for r in rows) == repeats
    (path,) = (tmp_path / "studies").glob("*.journal")
    study = optuna.load_study(study_name=path.stem,
                              storage=JournalStorage(JournalFileBackend(str(path))))
    assert study.user_attrs["counts"] == {"configurations": configs, "evaluations": evals,
                                          "references": refs, "failed": _failed,
                                          "repeats": repeats}
    assert main([*argv, "--json"]) == 0
    (doc,) = json.loads(capsys.readouterr().out)["studies"]
    assert (doc["configurations"], doc["evaluations"], doc["repeats"]) == (configs, evals,
                                                                           repeats)


def test_the_best_on_the_progress_line_includes_the_references(tmp_path, capsys):
    # a space of one slow configuration: the best so far is a reference's
    space = tmp_path / "slow.yaml"
    space.write_text("fixed: {mapping: vwarp, w: 1, chunk: 2048}\n")
    assert main(["tune", "--graph", GRAPH, "--space", str(space), "--workers", "0",
                 "--sources", "1", "--results", str(tmp_path / "r")]) == 0
    captured = capsys.readouterr()
    first = re.search(r"\n  1 +([\d.]+) .*\[reference: ", captured.out)
    assert first is not None  # a reference ranks first
    assert f"best {first.group(1)}," in captured.err.strip().splitlines()[-1]


def test_ctrl_c_names_the_command_that_resumes(tmp_path):
    results = tmp_path / "r"
    # a study that outlasts the store's first flush (2 s) many times over, however fast the
    # machine (300 vwarp trials on rmat:scale=13 took 5 s: some runs ended before the SIGINT)
    argv = ["tune", "--graph", "rmat:scale=13,seed=2", "--space", "all", "--trials", "5000",
            "--sources", "2", "--seed", "7", "--workers", "0", "--results", str(results)]
    # a Ctrl-C as a terminal sends it, whatever this process inherited (a background job of a
    # non-interactive shell ignores SIGINT, and so would the child: Python then never raises
    # KeyboardInterrupt)
    proc = subprocess.Popen([sys.executable, "-m", "tuner.cli", *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list((results / "trials").rglob("*.parquet")):
        time.sleep(0.2)  # until some results are on disk
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130
    command = err.strip().splitlines()[-1].strip()
    assert "Resume with:" in err and command.startswith("warpsweep tune ")
    words = shlex.split(command)
    assert words[1:] == argv  # the options as given
    before = len(read_trials(str(results)))
    assert main(words[1:] + ["--trials", "20"]) in (0, 1)  # it resumes the same study
    rows = read_trials(str(results)).to_pylist()
    assert len({r["study_key"] for r in rows}) == 1 and len(rows) >= before


def test_a_resume_with_nothing_left_reports_the_sources_used_not_asked(tmp_path, capsys):
    """--sources beyond the graph's vertices with edges takes them all (242 here); a resume
    that loads no graph had reported the number asked (100000) in its summary."""
    argv = ["tune", "--graph", "rmat:scale=8,seed=1", "--algo", "bfs", "--workers", "0",
            "--no-progress", "--trials", "3", "--sources", "100000", "--results",
            str(tmp_path / "r"), "--json"]
    for _ in range(2):  # the run, then a resume with nothing left to run
        assert main(argv) == 0
        (study,) = json.loads(capsys.readouterr().out)["studies"]
        assert study["sources"] == 242


def test_a_resume_command_reads_back_values_that_begin_with_a_dash():
    """`--graph=-big.txt.gz --results=-res3` had been printed `--graph -big.txt.gz ...`,
    and `sweep -- -sw.yaml` as `sweep -sw.yaml`: pasted back, "expected one argument"; and
    `warpsweep check -dmg --repair` (probe NAMES)."""
    from tuner.cli import build_parser
    from tuner.cli.tune import resume_command
    from tuner.results.location import shell_word

    parser = build_parser()
    for argv in (["tune", "--graph=-big.txt.gz", "--results=-res3", "--seed", "3"],
                 ["sweep", "--", "-sw.yaml"], ["sweep", "sw.yaml", "--results", "r"]):
        given = parser.parse_args(argv)
        again = parser.parse_args(shlex.split(resume_command(given))[1:])
        for name in ("graph", "results", "seed", "sweep_file"):
            assert getattr(again, name, None) == getattr(given, name, None)
    assert shlex.split(shell_word("-dmg")) == ["./-dmg"]
    assert shlex.split(shell_word("s3://b/it's")) == ["s3://b/it's"]
