"""One style for every output (sabre_prior.report.style): model colours, score rounding, captions."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from sabre_prior.report import style
from sabre_prior.repro.pipeline import BY_NAME, REPORT_FIGURES, STAGES, Pipeline, snakemake_outputs

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


def test_every_report_output_has_a_caption_that_says_what_it_shows() -> None:
    stems = {Path(o.path).stem for s in STAGES for o in s.outs if o.report} | set(REPORT_FIGURES)
    for stem in sorted(stems):
        text = style.caption(stem)
        assert len(text.split()) >= 15, stem  # a sentence or two, not a file name
        assert not any(f"{stem}.{ext}" in text for ext in ("png", "pdf", "md", "csv", "tex")), stem


def test_snakemake_report_entries_carry_the_captions() -> None:
    """The rules' outputs marked for `snakemake --report` carry the caption files (Snakemake's report())."""
    from snakemake.io import report

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    pipeline = Pipeline(params, ROOT)
    seen = 0
    for stage in STAGES:
        for out in snakemake_outputs(pipeline, stage.name, report):
            flags = getattr(out, "flags", {})
            if "report" not in flags:
                continue
            caption = flags["report"].caption
            assert caption is not None, out
            assert Path(caption).is_file() and Path(caption) == style.caption_path(Path(str(out)).stem)
            seen += 1
    assert seen == sum(1 for s in STAGES for o in s.outs if o.report)
    assert BY_NAME["figures"].outs[0].report is not None
