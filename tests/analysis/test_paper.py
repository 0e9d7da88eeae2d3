"""Comparison with the paper's reported table: `sabre paper-compare`."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from synthetic_project import make_project

from sabre_prior import contracts as C
from sabre_prior.analysis.paper import (
    CSV_COLUMNS,
    PaperRow,
    compare_with_paper,
    load_paper_table,
    mapped_models,
)
from sabre_prior.cli import main
from sabre_prior.errors import ConfigError

SPEC_TABLE = Path(__file__).resolve().parents[3] / "shared" / "reference" / "paper_main_results.csv"


def test_shipped_table_holds_spec_section_5() -> None:
    table = load_paper_table()
    assert list(table) == ["Claude 4.6", "Kimi-k2.6", "Qwen 3.5", "Gemini 3.5", "GPT-5.4", "Grok-4.3"]
    assert table["Claude 4.6"] == {"context": 10, "texture": 40, "attribute": 17, "language": 58, "macro": 31.3}
    assert table["Gemini 3.5"]["context"] == 0 and table["Grok-4.3"]["macro"] == 17.8
    # the macro column is the mean of the four splits, to the paper's rounding
    for row in table.values():
        assert row["macro"] == pytest.approx(sum(row[s] for s in C.SPLITS) / 4, abs=0.051)
    assert sum(r["macro"] for r in table.values()) / 6 == pytest.approx(22.6, abs=0.05)


@pytest.mark.skipif(not SPEC_TABLE.is_file(), reason="the shared reference table is not beside this checkout")
def test_shipped_table_equals_shared_reference() -> None:
    assert load_paper_table() == load_paper_table(SPEC_TABLE.read_text())


def test_unknown_paper_name_is_a_config_error() -> None:
    params = {"models": {"m": {"backend": "baseline", "paper_name": "GPT-9"}}}
    with pytest.raises(
        ConfigError, match=r"models.m.paper_name 'GPT-9' is not a model of the paper's table; known: .*Claude 4.6"
    ):
        mapped_models(params, load_paper_table())


def test_rows_and_inside_flag_hand_values() -> None:
    paper = {"X": {"context": 10.0, "texture": 40.0, "attribute": 17.0, "language": 58.0, "macro": 31.3}}
    iv = {"context": {"estimate": 0.05, "low": 0.01, "high": 0.10}, "texture": {"estimate": 0.5, "low": 0.41, "high": 0.6},
          "attribute": {"estimate": 0.17, "low": 0.1, "high": 0.25}, "language": {"estimate": 0.58, "low": 0.48, "high": 0.68},
          "macro": {"estimate": 0.325, "low": 0.3131, "high": 0.36}}  # fmt: skip
    rows = compare_with_paper({"m": "X"}, paper, {"m": iv}, C.SPLITS)
    by = {r.metric: r for r in rows}
    assert [r.metric for r in rows] == [*C.SPLITS, "macro"]
    assert by["context"].difference == pytest.approx(-5.0) and by["context"].inside  # 10 is the upper end
    assert not by["texture"].inside  # 40 < 41
    assert by["macro"].inside  # 31.3 vs 31.31: within the paper's rounding
    assert not PaperRow("m", "X", "macro", 31.3, 40.0, 31.4, 50.0).inside
    assert [r.metric for r in compare_with_paper({"m": "X"}, paper, {"m": iv}, ["context", "language"])] == [
        "context",
        "language",
    ]


def test_cli_paper_compare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_project(tmp_path / "p", paper_names={"oracle": "Claude 4.6", "prior": "Gemini 3.5"})
    monkeypatch.chdir(root)
    for m in ("oracle", "prior", "always_yes", "mixed"):
        assert main(["intervals", "--model", m]) == 0
    assert main(["paper-compare"]) == 0
    assert "10 comparisons, " in capsys.readouterr().out
    with open("results/tables/paper_comparison.csv", newline="") as fh:
        reader = csv.DictReader(fh)
        assert tuple(reader.fieldnames or ()) == CSV_COLUMNS
        rows = {(r["model"], r["metric"]): r for r in reader}
    assert len(rows) == 10
    r = rows[("oracle", "language")]
    assert (r["paper_name"], r["reported"], r["reproduced"], r["difference"], r["inside"]) == (
        "Claude 4.6",
        "58.0",
        "100.0",
        "42.0",
        "false",
    )
    r = rows[("prior", "context")]  # Gemini reported 0 on context; prior scores 0 with interval [0, 0]
    assert (r["reported"], r["reproduced"], r["low"], r["high"], r["inside"]) == ("0.0", "0.0", "0.0", "0.0", "true")
    md = Path("results/tables/paper_comparison.md").read_text()
    assert "| Oracle | Claude 4.6 | context | 10 | 100.0 [100.0, 100.0] | +90.0 | **no** |" in md
    iv = json.loads(C.intervals_path("prior").read_text())
    assert rows[("prior", "macro")]["reproduced"] == str(round(100 * iv["macro"]["estimate"], 2))


def test_cli_paper_compare_without_mapped_models(project: Path) -> None:
    assert main(["paper-compare"]) == 0
    assert Path("results/tables/paper_comparison.csv").read_text() == ",".join(CSV_COLUMNS) + "\n"
    assert "No configured model has a `paper_name`" in Path("results/tables/paper_comparison.md").read_text()
