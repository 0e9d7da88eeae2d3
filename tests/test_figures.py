"""Tests of sabre_prior.report.figures (and plotting): content, layout, determinism."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from PIL import Image

from sabre_prior import contracts as C
from sabre_prior.report import plotting
from sabre_prior.report.figures import (
    FIGURE_STEMS,
    figure_width,
    probe_accuracy_figure,
    split_accuracy_figure,
    write_figures,
)
from sabre_prior.data.parquet import data_identity
from sabre_prior.report.tables import ResultsFileError, load_results
from tests.identity import write_split_files

SPLITS = ("context", "texture", "attribute", "language")
NAMES = ["Random", "Always yes", "Always no", "World prior", "Claude 4.6", "Kimi-k2.6", "Qwen 3.5", "Gemini 3.5",
         "GPT-5.4", "Grok-4.3", "A rather long model display name", "m12", "m13", "m14", "m15"]  # fmt: skip


def make_fixture(root: Path, n_models: int, splits: tuple[str, ...] = SPLITS, data: Path | None = None) -> dict[str, Any]:
    """Metrics (and interval) files for ``n_models`` models with distinct, known values; the splits
    are copied from ``data`` (the demo's: the figures' chance levels read their questions), else
    one-row files that record their source only."""
    mdir, idir = root / "metrics", root / "intervals"
    mdir.mkdir(parents=True, exist_ok=True)
    idir.mkdir(parents=True, exist_ok=True)
    models: dict[str, Any] = {}
    for i in range(n_models):
        key = f"model_{i:02d}"
        models[key] = {"backend": "baseline", "strategy": "random", "display_name": NAMES[i]}
        doc: dict[str, Any] = {}
        ivs: dict[str, Any] = {"confidence": 0.95, "resamples": 500, "seed": 0}
        accs = []
        for j, split in enumerate(splits):
            # context: neighbouring models tie (labels at the same height must not collide)
            correct = 100 - 5 * (i // 2) if split == "context" else (7 * i + 13 * j + 3) % 101
            acc = correct / 100
            accs.append(acc)
            doc[split] = {"accuracy": acc, "correct": correct, "total": 100, "missing": 0}
            if split in C.PAIRED_SPLITS:
                doc[split]["question_accuracy"] = 0.5
                doc[split]["probe_accuracy"] = {
                    p: ((11 * i + 17 * k + j) % 101) / 100 for k, p in enumerate(C.PROBES[split])
                }
            ivs[split] = {"estimate": acc, "low": max(0.0, acc - 0.08), "high": min(1.0, acc + 0.08)}
        doc["macro_accuracy"] = sum(accs) / len(accs)
        m = doc["macro_accuracy"]
        ivs["macro"] = {"estimate": m, "low": max(0.0, m - 0.04), "high": min(1.0, m + 0.04)}
        (mdir / f"{key}.json").write_text(json.dumps(doc), encoding="utf-8")
        (idir / f"{key}.json").write_text(json.dumps(ivs), encoding="utf-8")
    if data is None:
        write_split_files(root / "data", splits)  # fetched from the demo (schema metadata)
    else:
        (root / "data").mkdir(parents=True, exist_ok=True)
        for split in splits:
            shutil.copy(data / f"{split}.parquet", root / "data" / f"{split}.parquet")
    return {"dataset": {"source": "demo"}, "splits": list(splits), "models": models}


def data_of(root: Path, params: dict[str, Any]) -> Any:
    return data_identity(root / "data", params["splits"])


def _bars(ax: Any) -> list[Any]:
    """The data bars (zorder 2), not the shaded strict-pair band."""
    from matplotlib.patches import Rectangle

    return [p for p in ax.patches if isinstance(p, Rectangle) and p.get_zorder() == 2]


def _overlaps(a: Any, b: Any) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def _assert_readable_layout(fig: Any) -> None:
    """Legend, title and tick labels inside the figure and not overlapping each other."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    fig_box = fig.bbox
    legend_box = fig.legends[0].get_window_extent(renderer)
    title_box = fig._suptitle.get_window_extent(renderer)
    for box in (legend_box, title_box):
        assert box.x0 >= fig_box.x0 - 1 and box.x1 <= fig_box.x1 + 1
        assert box.y0 >= fig_box.y0 - 1 and box.y1 <= fig_box.y1 + 1
    for ax in fig.axes:
        ticks = [t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_text()]
        for k in range(len(ticks) - 1):
            assert not _overlaps(ticks[k], ticks[k + 1]), "x tick labels overlap"
        for t in ticks:
            assert not _overlaps(t, legend_box), "legend covers tick labels"
            assert t.y0 >= fig_box.y0 - 1
        assert not _overlaps(ax.get_window_extent(renderer), legend_box), "legend covers the axes"
        assert not _overlaps(ax.get_window_extent(renderer), title_box), "title covers the axes"
        axes_box = ax.get_window_extent(renderer)
        value_boxes = [t.get_window_extent(renderer) for t in ax.texts]
        for text, box in zip(ax.texts, value_boxes):  # value labels stay inside the axes
            assert axes_box.y0 - 1 <= box.y0 and box.y1 <= axes_box.y1 + 1, text.get_text()
        for k, box in enumerate(value_boxes):  # and do not collide with each other
            assert not any(_overlaps(box, other) for other in value_boxes[k + 1 :]), ax.texts[k].get_text()


# ---------------------------------------------------------------------------
# Content
# ---------------------------------------------------------------------------
def test_split_figure_bars_and_labels_match_metrics(tmp_path: Path) -> None:
    params = make_fixture(tmp_path, 4)
    results = load_results(params, tmp_path / "metrics")
    fig = split_accuracy_figure(params, results, data_of(tmp_path, params))
    ax = fig.axes[0]
    heights = sorted(round(b.get_height(), 6) for b in _bars(ax))
    expected = []
    for key in params["models"]:
        doc = json.loads((tmp_path / "metrics" / f"{key}.json").read_text())
        expected += [round(doc[s]["accuracy"] * 100, 6) for s in SPLITS] + [round(doc["macro_accuracy"] * 100, 6)]
    assert heights == sorted(expected)
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "Context\n(strict pair)\nn = 100 pairs", "Texture\n(strict pair)\nn = 100 pairs", "Attribute\nn = 100 questions",
        "Language\nn = 100 questions", "Macro avg.\n(mean of the\n4 splits)",
    ]  # fmt: skip
    labels = {t.get_text() for t in ax.texts}
    assert "100.0" in labels and "16.0" in labels  # model 0: context 100/100, texture 16/100
    assert ax.get_ylim()[0] == 0 and list(ax.get_yticks())[-1] == 100
    assert [t.get_text() for t in fig.legends[0].get_texts()] == NAMES[:4]
    assert "embedded demo benchmark" in fig._suptitle.get_text()
    assert not [c for c in ax.containers if type(c).__name__ == "ErrorbarContainer"]
    _assert_readable_layout(fig)
    plotting.plt.close(fig)


def test_split_figure_shows_n_beside_every_interval(tmp_path: Path) -> None:
    """Every split's interval has its sample size: under the split when the models share it, else on each bar."""
    params = make_fixture(tmp_path, 3)
    doc_path = tmp_path / "metrics" / "model_01.json"
    doc = json.loads(doc_path.read_text())
    doc["attribute"]["total"] = 90  # this model was scored on fewer attribute questions
    doc_path.write_text(json.dumps(doc))
    results = load_results(params, tmp_path / "metrics", tmp_path / "intervals")
    fig = split_accuracy_figure(params, results, data_of(tmp_path, params))
    ax = fig.axes[0]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks[0].endswith("n = 100 pairs") and ticks[1].endswith("n = 100 pairs")
    assert ticks[3].endswith("n = 100 questions")
    assert ticks[2] == "Attribute"  # sizes differ: each bar says its own
    attribute_labels = [t.get_text() for t in ax.texts if "(n=" in t.get_text()]
    assert sorted(lab.split("(n=")[1] for lab in attribute_labels) == ["100)", "100)", "90)"]
    assert "95% bootstrap confidence interval, 500 resamples" in fig.legends[0].get_title().get_text()
    _assert_readable_layout(fig)
    plotting.plt.close(fig)


def test_models_keep_their_params_colour_in_every_figure(tmp_path: Path) -> None:
    """A model's bars have the colour of its position in params.yaml, in both figures, whatever the values."""
    from matplotlib.colors import to_hex

    from sabre_prior.report.style import model_styles

    params = make_fixture(tmp_path, 10)
    results = load_results(params, tmp_path / "metrics", tmp_path / "intervals")
    styles = model_styles(params["models"])
    data = data_of(tmp_path, params)
    for fig in (split_accuracy_figure(params, results, data), probe_accuracy_figure(params, results, data)):
        for ax in fig.axes:
            bars = sorted(_bars(ax), key=lambda b: b.get_x())
            groups = len(ax.get_xticks())
            assert len(bars) == groups * 10
            for g in range(groups):  # bars of one group are in params order
                got = [(to_hex(b.get_facecolor()).upper(), b.get_hatch() or "") for b in bars[g * 10 : (g + 1) * 10]]
                assert got == [(st.color.upper(), st.hatch) for st in styles.values()]
        legend = fig.legends[0]
        assert [to_hex(h.get_facecolor()).upper() for h in legend.legend_handles] == [
            st.color.upper() for st in styles.values()
        ]
        plotting.plt.close(fig)


def test_error_bars_drawn_from_intervals(tmp_path: Path) -> None:
    params = make_fixture(tmp_path, 3)
    results = load_results(params, tmp_path / "metrics", tmp_path / "intervals")
    fig = split_accuracy_figure(params, results, data_of(tmp_path, params))
    ax = fig.axes[0]
    errorbars = [c for c in ax.containers if type(c).__name__ == "ErrorbarContainer"]
    assert len(errorbars) == 3 * 5
    # One error bar: model 0, context: 100 % with interval [92, 100] %.
    segments = [seg for c in errorbars for coll in c.lines[2] for seg in coll.get_segments()]
    spans = {(round(s[0][1], 6), round(s[1][1], 6)) for s in segments}
    assert (92.0, 100.0) in spans
    _assert_readable_layout(fig)
    plotting.plt.close(fig)


def test_probe_figure_panels_probes_and_strict_pair(tmp_path: Path) -> None:
    params = make_fixture(tmp_path, 2)
    results = load_results(params, tmp_path / "metrics")
    fig = probe_accuracy_figure(params, results, data_of(tmp_path, params))
    assert len(fig.axes) == 2
    first_probe = {"context": "source", "texture": "normal"}
    for ax, split in zip(fig.axes, C.PAIRED_SPLITS):
        assert ax.get_title(loc="left").startswith(split.capitalize())
        ticks = [t.get_text() for t in ax.get_xticklabels()]
        assert len(ticks) == 5 and ticks[-1].startswith("strict pair")
        assert ticks[0] == f"base image\n{first_probe[split]} probe\n(expect yes)"
        heights = sorted(round(b.get_height(), 6) for b in _bars(ax))
        expected = []
        for key in params["models"]:
            doc = json.loads((tmp_path / "metrics" / f"{key}.json").read_text())[split]
            expected += [round(v * 100, 6) for v in doc["probe_accuracy"].values()] + [round(doc["accuracy"] * 100, 6)]
        assert heights == sorted(expected)
    _assert_readable_layout(fig)
    plotting.plt.close(fig)


def test_probe_figure_with_one_or_no_paired_split(tmp_path: Path) -> None:
    params = make_fixture(tmp_path / "one", 2, splits=("context", "language"))
    fig = probe_accuracy_figure(params, load_results(params, tmp_path / "one" / "metrics"), data_of(tmp_path / "one", params))
    assert len(fig.axes) == 1 and fig.axes[0].get_title(loc="left").startswith("Context")
    plotting.plt.close(fig)
    params = make_fixture(tmp_path / "none", 2, splits=("attribute",))
    fig = probe_accuracy_figure(params, load_results(params, tmp_path / "none" / "metrics"), data_of(tmp_path / "none", params))
    assert "No paired split" in fig.axes[0].texts[0].get_text()
    plotting.plt.close(fig)


@pytest.mark.parametrize("n_models", [1, 15])
def test_layout_readable_from_one_to_fifteen_models(tmp_path: Path, n_models: int) -> None:
    params = make_fixture(tmp_path, n_models)
    results = load_results(params, tmp_path / "metrics", tmp_path / "intervals")
    data = data_of(tmp_path, params)
    for fig in (split_accuracy_figure(params, results, data), probe_accuracy_figure(params, results, data)):
        _assert_readable_layout(fig)
        assert len(fig.legends[0].get_texts()) == n_models
        plotting.plt.close(fig)


def test_width_grows_with_models_and_styles_stay_distinct() -> None:
    assert figure_width(5, 1) == figure_width(5, 2) >= 7.5
    assert figure_width(5, 15) > figure_width(5, 8) > figure_width(5, 4)
    styles = [plotting.series_style(i) for i in range(16)]
    assert len(set(styles)) == 16
    # Okabe-Ito colours, no black (error bars must stay visible).
    assert "#000000" not in plotting.PALETTE and len(set(plotting.PALETTE)) == 8


def test_missing_metrics_file_is_an_error(tmp_path: Path) -> None:
    params = make_fixture(tmp_path, 2)
    (tmp_path / "metrics" / "model_01.json").unlink()
    with pytest.raises(ResultsFileError, match=r"model_01\.json: metrics file for model 'model_01' not found"):
        write_figures(params, tmp_path / "metrics", tmp_path / "out", data_dir=tmp_path / "data")


# ---------------------------------------------------------------------------
# Files: valid PNG/PDF, byte-deterministic across processes
# ---------------------------------------------------------------------------
def _run_cli(tmp_path: Path, outdir: Path, hashseed: str, intervals: bool) -> None:
    sabre = Path(sys.executable).parent / "sabre"
    cmd = [str(sabre), "figures", "--params", str(tmp_path / "params.yaml"), "--metrics-dir", str(tmp_path / "metrics"),
           "--outdir", str(outdir), "--data", str(tmp_path / "data")]  # fmt: skip
    if intervals:
        cmd += ["--intervals-dir", str(tmp_path / "intervals")]
    env = {**os.environ, "PYTHONHASHSEED": hashseed, "MPLBACKEND": "Agg"}
    subprocess.run(cmd, check=True, capture_output=True, env=env)


@pytest.mark.slow  # renders every figure in fresh processes
def test_files_valid_and_identical_across_processes(tmp_path: Path, demo_parquet_dir: Path) -> None:
    params = make_fixture(tmp_path, 4, data=demo_parquet_dir)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    _run_cli(tmp_path, tmp_path / "a", "1", intervals=True)
    _run_cli(tmp_path, tmp_path / "b", "2", intervals=True)
    names = [f"{stem}.{ext}" for stem in FIGURE_STEMS for ext in ("png", "pdf")]
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == sorted(names)
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    # PNG: valid, fixed dpi, size = figure size x dpi, no software/version stamp.
    split_png = tmp_path / "a" / "split_accuracy.png"
    with Image.open(split_png) as im:
        im.verify()
    with Image.open(split_png) as im:
        assert im.format == "PNG"
        assert abs(im.size[0] - figure_width(5, 4) * plotting.DPI) <= 1
        assert 600 <= im.size[1] <= 800
        assert round(im.info["dpi"][0]) == plotting.DPI
        assert "Software" not in im.info
    with Image.open(tmp_path / "a" / "probe_accuracy.png") as im:
        assert im.size[1] > 1000  # two panels stacked
    # PDF: one page each, no timestamp.
    for stem in FIGURE_STEMS:
        data = (tmp_path / "a" / f"{stem}.pdf").read_bytes()
        assert data.startswith(b"%PDF-")
        assert data.rstrip().endswith(b"%%EOF")
        assert len(re.findall(rb"/Type\s*/Page\b", data)) == 1
        assert b"/CreationDate" not in data and b"/ModDate" not in data
    # Without intervals: different pictures (no error bars), same file set.
    _run_cli(tmp_path, tmp_path / "c", "1", intervals=False)
    assert (tmp_path / "c" / "split_accuracy.png").read_bytes() != split_png.read_bytes()


# ---------------------------------------------------------------------------
# Figures say what the tables say (issue 33)
# ---------------------------------------------------------------------------
def _flag_split(root: Path, key: str, split: str, unparseable: int) -> None:
    """``key``'s ``split``: ``unparseable`` of its 100 questions without an answer the contract reads."""
    path = root / "metrics" / f"{key}.json"
    doc = json.loads(path.read_text())
    for s in SPLITS:
        doc[s]["outcomes"] = {o: 0 for o in C.OUTCOMES} | {"correct": 100}
    doc[split]["outcomes"] = {o: 0 for o in C.OUTCOMES} | {"unparseable": unparseable, "wrong": 100 - unparseable}
    doc[split]["accuracy"], doc[split]["correct"] = 0.0, 0
    path.write_text(json.dumps(doc))


def _value_labels(ax: Any) -> list[str]:
    return [t.get_text() for t in ax.texts]


def test_a_bar_standing_for_a_flagged_split_carries_the_flag(tmp_path: Path) -> None:
    """split_accuracy drew 0.0 for a split whose answers were all unparseable, with no marker, where the
    table marks it: now the bar's value carries the tables' † and the legend says what it means."""
    from sabre_prior.report.figures import probe_accuracy_figure

    params = make_fixture(tmp_path, 3)
    for key in params["models"]:
        _flag_split(tmp_path, key, "attribute", 100 if key == "model_01" else 0)
    results = load_results(params, tmp_path / "metrics")
    fig = split_accuracy_figure(params, results, data_of(tmp_path, params))
    labels = _value_labels(fig.axes[0])
    assert labels.count("0.0 †") == 1, labels  # model_01's attribute bar
    assert sum("†" in t for t in labels) == 2  # and its macro (24% of its questions are non-answers)
    assert "†: more than 5% of the split's questions are non-answers" in fig.legends[0].get_title().get_text()
    _assert_readable_layout(fig)
    plotting.plt.close(fig)
    _flag_split(tmp_path, "model_00", "context", 100)
    fig = probe_accuracy_figure(params, load_results(params, tmp_path / "metrics"), data_of(tmp_path, params))
    assert sum("†" in t for t in _value_labels(fig.axes[0])) == 5  # model_00's four probes and its strict pair
    assert not any("†" in t for t in _value_labels(fig.axes[1]))  # texture: nothing flagged
    plotting.plt.close(fig)


def test_no_flag_where_no_split_is_flagged(tmp_path: Path) -> None:
    params = make_fixture(tmp_path, 2)
    for key in params["models"]:
        _flag_split(tmp_path, key, "attribute", 5)  # 5 of 100: not above the 5% threshold
    fig = split_accuracy_figure(params, load_results(params, tmp_path / "metrics"), data_of(tmp_path, params))
    assert not any("†" in t for t in _value_labels(fig.axes[0]))
    assert "†" not in fig.legends[0].get_title().get_text()
    plotting.plt.close(fig)


def test_every_group_has_its_chance_level(tmp_path: Path, demo_parquet_dir: Path) -> None:
    """The reference line: what a uniform guess scores, from the questions of the data (strict pair:
    four yes/no probes, 1/16)."""
    from matplotlib.collections import LineCollection

    from sabre_prior.report.figures import CHANCE_LABEL, chance_accuracy, probe_accuracy_figure

    params = make_fixture(tmp_path, 2, data=demo_parquet_dir)
    chance = chance_accuracy(tmp_path / "data", params["splits"])
    assert chance["context"] == chance["texture"] == 1 / 16
    assert 0 < chance["attribute"] < 1 and 0 < chance["language"] <= 1 / 2
    assert chance["macro"] == sum(chance[s] for s in SPLITS) / 4
    results = load_results(params, tmp_path / "metrics")
    fig = split_accuracy_figure(params, results, data_of(tmp_path, params), chance)
    lines = [c for c in fig.axes[0].collections if isinstance(c, LineCollection) and c.get_linestyle()[0][1] is not None]
    levels = sorted(round(float(seg[0][1]), 6) for c in lines for seg in c.get_segments())
    assert levels == sorted(round(100 * chance[c], 6) for c in [*SPLITS, "macro"])
    assert CHANCE_LABEL in [t.get_text() for t in fig.legends[0].get_texts()]
    plotting.plt.close(fig)
    fig = probe_accuracy_figure(params, results, data_of(tmp_path, params), chance)
    for ax in fig.axes:
        segs = [round(float(s[0][1]), 6) for c in ax.collections if isinstance(c, LineCollection) for s in c.get_segments()]
        assert sorted(segs) == [6.25, 50.0, 50.0, 50.0, 50.0]  # each yes/no probe 50%, the strict pair 1/16
    plotting.plt.close(fig)


def _lab(hex_colour: str) -> tuple[float, float, float]:
    """sRGB hex -> CIE L*a*b* (D65)."""
    rgb = [int(hex_colour.lstrip("#")[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    x = (0.4124 * lin[0] + 0.3576 * lin[1] + 0.1805 * lin[2]) / 0.95047
    y = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    z = (0.0193 * lin[0] + 0.1192 * lin[1] + 0.9505 * lin[2]) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def test_colour_means_the_model_alone() -> None:
    """Outcomes and templates are never drawn in a model's colour, nor in one near it (the outcome
    colours were within 1.4-3.2 CIE76 units of model colours); the report's badges use the same."""
    import math

    from sabre_prior.analysis.diagnostics import CLASS_COLORS, PAIR_CLASSES
    from sabre_prior.report import style

    models = [_lab(c) for c in style.PALETTE]
    others = {**{f"outcome {k}": v for k, v in style.OUTCOME_COLORS.items()}, "template": style.TEMPLATE_COLOR}
    for what, colour in others.items():
        nearest = min(math.dist(_lab(colour), m) for m in models)
        assert nearest >= 30, f"{what} {colour} is {nearest:.1f} from a model colour"
    outcome = list(style.OUTCOME_COLORS.values())
    assert min(math.dist(_lab(a), _lab(b)) for i, a in enumerate(outcome) for b in outcome[i + 1 :]) >= 20
    assert CLASS_COLORS == {c: style.OUTCOME_COLORS[c] for c in PAIR_CLASSES}
    css = (Path(__file__).resolve().parents[1] / "src/sabre_prior/resources/report.css").read_text()
    for cls, colour in style.OUTCOME_COLORS.items():
        assert re.search(rf"\.badge\.{cls} {{ background: {colour};", css), cls


def test_prompt_sensitivity_has_a_title_n_and_its_reference(tmp_path: Path) -> None:
    from sabre_prior.analysis.robustness import SENSITIVITY_TITLE, draw_sensitivity, one_template_text
    from sabre_prior.report import style

    def entry(template: str, estimate: float, diff: float) -> dict[str, Any]:
        return {"template": template, "main": template == "screening_v1", "questions": 30, "nonanswer": 0,
                "macro": {"estimate": estimate, "low": estimate - 0.1, "high": estimate + 0.1},
                "difference": {"estimate": diff, "low": diff - 0.05, "high": diff + 0.05}}  # fmt: skip

    captured: list[Any] = []
    real_save = plotting.save_figure

    def keep(fig: Any, outdir: Path, stem: str) -> list[Path]:
        fig.canvas.draw()
        captured.append(([t.get_text() for t in fig.texts], fig._suptitle.get_text() if fig._suptitle else "",
                         [ax for ax in fig.axes], [line for ax in fig.axes for line in ax.get_lines()]))  # fmt: skip
        return real_save(fig, outdir, stem)

    plotting.save_figure = keep  # draw_sensitivity imports it from the module when it runs
    try:
        one = {"m": [entry("screening_v1", 0.4, 0.0)]}
        paths = draw_sensitivity(one, {"m": "M"}, tmp_path / "one")
        texts, title, axes, _ = captured[-1]
        assert title == SENSITIVITY_TITLE and one_template_text("screening_v1") in texts
        assert "nothing to compare" in one_template_text("screening_v1") and not axes  # no plot of zeros
        assert {p.suffix for p in paths} == {".png", ".pdf"} and all(p.stat().st_size for p in paths)
        two = {m: [entry("screening_v1", 0.4, 0.0), entry("direct_v1", 0.3, -0.1)] for m in ("a", "b")}
        draw_sensitivity(two, {"a": "A", "b": "B"}, tmp_path / "two")
        texts, title, axes, lines = captured[-1]
        assert title == f"{SENSITIVITY_TITLE}\nn = 30 questions per model and template"
        reference = [ln for ln in lines if ln.get_label() == "main template (screening_v1)"]
        assert len(reference) == 1 and list(reference[0].get_xdata()) == [0, 0]
        markers = [ln for ln in lines if ln.get_marker() not in (None, "None", "", "|", "_")]  # not the error bars' caps
        assert {ln.get_color() for ln in markers} == {style.TEMPLATE_COLOR}
        assert len({ln.get_marker() for ln in markers}) == 2  # one shape a template
    finally:
        plotting.save_figure = real_save

