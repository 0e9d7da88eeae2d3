"""One style for every output (sabre_prior.report.style): model colours, score rounding, captions."""

from __future__ import annotations

import json
import re
from pathlib import Path

from sabre_prior.report import style
from sabre_prior.contracts import REPORT_FIGURES

ROOT = Path(__file__).resolve().parents[1]


def test_model_styles_follow_params_order() -> None:
    models = {"zeta": {}, "alpha": {}, "mid": {}}
    styles = style.model_styles(models)
    assert list(styles) == ["zeta", "alpha", "mid"]  # not alphabetical
    assert [s.color for s in styles.values()] == list(style.PALETTE[:3])
    assert style.model_style(8) == style.ModelStyle(style.PALETTE[0], style.HATCHES[1])  # past 8: a hatch
    assert len({style.model_style(i) for i in range(32)}) == 32


def test_one_rounding_for_scores() -> None:
    assert style.SCORE_DECIMALS == 1
    assert [style.score_text(x) for x in (1 / 3, 0.1225, 0.0, 1.0, 0.31249999999999994)] == [
        "33.3", "12.3", "0.0", "100.0", "31.3",
    ]  # fmt: skip
    assert style.n_text(1, True) == "n = 1 pair" and style.n_text(12, False) == "n = 12 questions"


def test_dvc_plots_template_uses_the_model_palette_in_params_order() -> None:
    """`dvc plots show` colours a model as the figures and the HTML report do (Vega-Lite's default
    palette and its alphabetical domain would give another colour)."""
    template = json.loads((ROOT / ".dvc/plots/grouped_bars.json").read_text().replace('"<DVC_METRIC_DATA>"', "[]"))
    color = template["encoding"]["color"]
    assert color["scale"]["range"] == list(style.PALETTE)
    assert color["sort"] is None  # the data's order: params.yaml's (results/plots/split_accuracy.csv)


#: Every output the rules mark for `snakemake --report`: (path, caption stem) as written in workflow/rules/.
REPORTED = re.findall(
    r'report\("([^"]+)", caption=caption\("([^"]+)"\)', "".join(p.read_text() for p in sorted((ROOT / "workflow/rules").glob("*.smk")))
)


def test_every_report_output_has_a_caption_that_says_what_it_shows() -> None:
    assert len(REPORTED) >= 12
    stems = {stem for _, stem in REPORTED} | set(REPORT_FIGURES)
    for stem in sorted(stems):
        text = style.caption(stem)
        assert len(text.split()) >= 15, stem  # a sentence or two, not a file name
        assert not any(f"{stem}.{ext}" in text for ext in ("png", "pdf", "md", "csv", "tex")), stem


def test_snakemake_report_entries_carry_their_own_captions() -> None:
    """Each output marked for `snakemake --report` carries the caption file of its own stem (the text the
    HTML report shows under it), and every caption file is used."""
    for path, stem in REPORTED:
        assert Path(path).stem == stem, (path, stem)
        assert style.caption_path(stem).is_file()
    files = {p.stem.removeprefix("caption_") for p in style.caption_path("main_results").parent.glob("caption_*.rst")}
    assert files == {stem for _, stem in REPORTED}
