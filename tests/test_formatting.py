"""sabre_prior.formatting: the one home of intervals, percents, p-values and CSV/Markdown tables.

The two roundings are pinned side by side: the main tables round half away from zero (the
paper's rule), the analysis outputs keep Python's float formatting. They differ on ties.
"""

from __future__ import annotations

import csv
import io

import pytest

from sabre_prior import formatting as F
from sabre_prior.analysis import stats
from sabre_prior.formatting import Interval, csv_text, format_interval, format_p, format_percent, md_table, percent


@pytest.mark.parametrize(
    ("fraction", "decimals", "half_up", "as_float"),
    [
        (0.1225, 1, "12.3", "12.2"),  # 12.25 % is stored as 12.249999...: the float rounding goes down
        (0.0025, 1, "0.3", "0.2"),
        (0.3125, 1, "31.3", "31.2"),  # the paper's 31.25 -> 31.3; f"{31.25:.1f}" ties to even
        (0.125, 0, "13", "12"),
        (0.375, 0, "38", "38"),
        (1 / 3, 1, "33.3", "33.3"),
        (0.4, 0, "40", "40"),
        (0.4375, 1, "43.8", "43.8"),
        (0.0, 1, "0.0", "0.0"),
        (1.0, 2, "100.00", "100.00"),
    ],
)
def test_the_two_roundings(fraction: float, decimals: int, half_up: str, as_float: str) -> None:
    assert format_percent(fraction, decimals) == half_up
    assert format_percent(fraction, decimals, rounding="half_up") == half_up
    assert format_percent(fraction, decimals, rounding="float") == as_float
    assert format_percent(fraction, decimals, rounding="float") == f"{100.0 * fraction:.{decimals}f}"


def test_percent_never_shows_negative_zero() -> None:
    assert str(percent(-0.0000001)) == "0.0"
    assert str(percent(-0.0000001, 0)) == "0"
    assert format_percent(-0.0004) == "0.0"


def test_signed_percentage_points() -> None:
    assert format_percent(0.125, rounding="float", signed=True) == "+12.5"
    assert format_percent(-0.125, rounding="float", signed=True) == "-12.5"
    assert format_percent(0.0, rounding="float", signed=True) == "+0.0"
    assert format_percent(0.1225, signed=True) == "+12.3"
    assert format_percent(-0.1225, signed=True) == "-12.3"


def test_missing_values() -> None:
    assert format_percent(None, rounding="float", missing="-") == "-"
    assert format_percent(None, missing="n/a") == "n/a"
    with pytest.raises(ValueError):
        format_percent(None)
    with pytest.raises(ValueError):
        format_percent(None, rounding="float")


def test_unknown_rounding_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown rounding 'banker'"):
        format_percent(0.5, rounding="banker")  # type: ignore[arg-type]


def test_format_interval_both_roundings() -> None:
    assert format_interval(0.4, 0.31, 0.5) == "40.0 [31.0, 50.0]"  # the main tables
    assert format_interval(0.3125, 0.1225, 0.5) == "31.3 [12.3, 50.0]"
    assert format_interval(0.3125, 0.1225, 0.5, rounding="float") == "31.2 [12.2, 50.0]"
    assert format_interval(0.4, 0.31, 0.5, 0, rounding="float") == "40 [31, 50]"  # `sabre intervals`


def test_format_p() -> None:
    assert [format_p(p) for p in (None, 0.0004, 0.001, 0.04567, 1.0)] == ["-", "<0.001", "0.001", "0.0457", "1"]


def test_one_interval_type() -> None:
    assert stats.Interval is Interval
    iv = Interval(1 / 3, 0.25, 0.5)
    assert iv.as_dict() == {"estimate": 0.3333333333, "low": 0.25, "high": 0.5}
    assert iv.as_dict(3) == {"estimate": 0.333, "low": 0.25, "high": 0.5}
    assert repr(Interval(0.5, 0.4, 0.6)) == "Interval(estimate=0.5, low=0.4, high=0.6)"  # in error messages


def test_md_table_spaced_and_compact_rules() -> None:
    rows = [["a|b", 1], ["c", 2.5]]
    assert md_table(["Name", "n"], rows) == "| Name | n |\n| --- | --: |\n| a\\|b | 1 |\n| c | 2.5 |\n"
    assert md_table(["Name", "n"], rows, ["r", "l"]) == "| Name | n |\n| --: | --- |\n| a\\|b | 1 |\n| c | 2.5 |\n"
    compact = md_table(["Model", "A", "B"], [["x\\|y", "**1.0**", "–"]], compact_rule=True, escape=False)
    assert compact == "| Model | A | B |\n|:--|--:|--:|\n| x\\|y | **1.0** | – |\n"


def test_csv_text_rows_as_sequences_or_mappings() -> None:
    header = ["model", "n", "inside", "note"]
    text = csv_text(header, [["a", 1, True, None], {"model": "b,c", "n": 2, "inside": False}])
    assert text == 'model,n,inside,note\na,1,true,\n"b,c",2,false,\n'
    assert list(csv.reader(io.StringIO(text)))[2] == ["b,c", "2", "false", ""]
    with pytest.raises(ValueError, match="'extra'"):
        csv_text(header, [{"model": "a", "extra": 1}])


def test_write_csv_is_csv_text_on_disk(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "sub" / "t.csv"
    F.write_csv(path, ["a", "b"], [{"a": 1, "b": "x"}])
    assert path.read_bytes() == b"a,b\n1,x\n"
