"""The paper-trends benchmark at its --quick size: it finishes and every row is well formed."""

import json

import pytest

from tuner import paper_trends
from tuner.cli import main as cli_main


@pytest.fixture(scope="module")
def quick_rows(tmp_path_factory):
    out = tmp_path_factory.mktemp("trends") / "rows.json"
    assert paper_trends.main(["--quick", "--json", str(out)]) == 0
    return json.loads(out.read_text())


def test_quick_run_finishes_with_rows(quick_rows):
    assert isinstance(quick_rows, list) and quick_rows
    experiments = {row["experiment"] for row in quick_rows}
    assert len(experiments) == len(quick_rows), "experiment names must be unique"
    assert any(row["experiment"].startswith("Hong 7a") for row in quick_rows)
    assert any(row["experiment"].startswith("Cheng") for row in quick_rows)


def test_every_row_has_claim_figure_and_verdict(quick_rows):
    for row in quick_rows:
        assert row["claim"].strip(), row
        assert row["figure"].strip(), row
        assert row["verdict"] in ("agree", "disagree"), row
        if row["verdict"] == "disagree":
            assert row["note"].strip(), f"a disagreeing row needs a note: {row['experiment']}"


def test_rendered_table_has_one_block_per_row():
    rows = [
        paper_trends.Row("exp a", "claim a " * 20, "1.00x", "agree"),
        paper_trends.Row("exp b", "claim b", "2.00x", "disagree", "a long reason " * 10),
    ]
    table = paper_trends.render(rows)
    assert table.splitlines()[0].startswith("experiment")
    assert "exp a" in table and "exp b" in table and "disagree" in table
    assert max(len(line) for line in table.splitlines()) <= sum(
        w + 2 for _, w in paper_trends.COLUMNS
    )


def test_only_selects_by_prefix_and_rejects_unknown_names():
    assert paper_trends.select("hong") == ["hong7a", "hong7b", "hong8a", "hong8b"]
    assert paper_trends.select("cheng,wer") == ["cheng", "wer"]
    with pytest.raises(paper_trends.ConfigError):
        paper_trends.select("nope")


def test_cli_verb_exits_zero(capsys):
    assert cli_main(["bench", "trends", "--quick", "--only", "hong7a,hong7b"]) == 0
    out = capsys.readouterr().out
    assert "Hong 7a" in out and "claims agree" in out
