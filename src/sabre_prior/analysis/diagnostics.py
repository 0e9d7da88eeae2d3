"""Diagnostics of world-prior following, from traces and the data's prior columns.

* Paired splits: accuracy and yes-rate per probe, yes/no rates, and each pair's
  four answers classified (first match wins; the classes are disjoint):

  - ``all_correct``: all four probes right;
  - ``prior_following``: right on the base image, and on the edited image the
    answers of the familiar scene/material (edited_source / edited_normal =
    yes, edited_target / edited_counterfactual = no);
  - ``always_yes`` / ``always_no``: the same word on all four probes;
  - ``other``: anything else (including a missing or unparsable answer).

* Attribute: exact and within-one accuracy, mean absolute and signed error
  (over answers with a count), share of answers equal to the canonical count.
* Language: share choosing the option the wording suggests, and the
  "cannot be determined" option, where the data gives them.
* Parse failures per split: answered, but the contract's extractor found no
  valid answer (kept apart from wrong answers and from missing ones).

Every row belongs to one model and split: a split whose non-answer rate exceeds
``analysis.report.max_nonanswer_rate`` is flagged in every table (:mod:`sabre_prior.report.flags`):
``†`` beside the model in the Markdown with the count in the table's footnote, and the split's
``nonanswer``, ``questions`` and ``flagged`` columns in each CSV.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from .. import contracts as C
from ..formatting import format_percent, md_table, write_csv
from ..io_utils import write_json, write_text
from ..scoring.pairs import group_pairs, pair_correct
from ..report import flags
from ..report.style import OUTCOME_COLORS
from ..report.style import ModelStyle
from .traces import Trace

#: A fraction as a percent with one decimal (float rounding); '-' for unknown.
pct = partial(format_percent, rounding="float", missing="-")

PAIR_CLASSES: tuple[str, ...] = ("all_correct", "prior_following", "always_yes", "always_no", "other")
CLASS_LABELS: dict[str, str] = {
    "all_correct": "All correct",
    "prior_following": "Prior-following",
    "always_yes": "Always yes",
    "always_no": "Always no",
    "other": "Other",
}
#: The outcome colours: none near a model's colour (report.style.OUTCOME_COLORS).
CLASS_COLORS: dict[str, str] = {cls: OUTCOME_COLORS[cls] for cls in PAIR_CLASSES}
#: What four uniform yes/no guesses get all right: the share of "all correct" pairs at chance.
ALL_CORRECT_AT_CHANCE = 1 / 16
FIGURE_NAME = C.PAIR_OUTCOMES_FIGURE


# ---------------------------------------------------------------------------
# pure functions on one split of one model
# ---------------------------------------------------------------------------
def _answer(row: Mapping[str, Any]) -> str | None:
    """The extracted answer, or None when missing or unparsable."""
    if row["missing"] or not row["parsed"]:
        return None
    return str(row["normalized_prediction"])


def classify_pair(split: str, answers: Mapping[str, str | None]) -> str:
    """Class of one pair from its probes' extracted answers (``None``: none)."""
    order = list(C.PROBES[split])
    got = [answers.get(p) for p in order]
    expected = [C.PROBES[split][p][1] for p in order]
    if got == expected:
        return "all_correct"
    # base right; edited answered as if the familiar source/normal were still there
    if got == [expected[0], expected[1], expected[0], expected[1]]:
        return "prior_following"
    if all(a == "yes" for a in got):
        return "always_yes"
    if all(a == "no" for a in got):
        return "always_no"
    return "other"


def pair_classes(rows: Sequence[Trace], split: str, source: str = "trace") -> dict[str, str]:
    """``{pair_id: class}`` in sorted pair order (pairs grouped and checked by the scoring's
    :func:`~sabre_prior.scoring.pairs.group_pairs`)."""
    groups = group_pairs(rows, split, source)
    correct = pair_correct(rows, split, source)
    out: dict[str, str] = {}
    for pair_id in sorted(groups):
        cls = classify_pair(split, {probe: _answer(row) for probe, row in groups[pair_id].items()})
        # the official verdict decides "all correct" (it agrees with the answers by construction)
        if correct[pair_id]:
            cls = "all_correct"
        elif cls == "all_correct":
            cls = "other"
        out[pair_id] = cls
    return out


def _rate(hits: int, n: int) -> float | None:
    return hits / n if n else None


def probe_stats(rows: Sequence[Trace], split: str) -> dict[str, dict[str, Any]]:
    """Accuracy and yes-rate (among answered questions) per probe, in contract order."""
    out: dict[str, dict[str, Any]] = {}
    for probe in C.PROBES[split]:
        sel = [r for r in rows if r["probe"] == probe]
        answered = [r for r in sel if not r["missing"]]
        out[probe] = {
            "n": len(sel),
            "accuracy": _rate(sum(bool(r["correct"]) for r in sel), len(sel)),
            "yes_rate": _rate(sum(_answer(r) == "yes" for r in answered), len(answered)),
        }
    return out


def yes_no_rates(rows: Sequence[Trace]) -> dict[str, float | None]:
    """Share of answered questions whose extracted answer is yes / no."""
    answered = [r for r in rows if not r["missing"]]
    return {
        "yes_rate": _rate(sum(_answer(r) == "yes" for r in answered), len(answered)),
        "no_rate": _rate(sum(_answer(r) == "no" for r in answered), len(answered)),
    }


def parsing_stats(rows: Sequence[Trace]) -> dict[str, int]:
    """Counts: questions, missing, parse failures (answered, nothing valid extracted), of which empty
    answers, wrong but parsed, correct.

    An empty answer reaches a prediction file only when the model spent its whole output-token budget
    (finish reason ``length`` / ``max_tokens``): other empty responses are retried and never stored
    (see ``sabre_prior.inference.engine``), so ``empty_answers`` counts "empty: token budget spent".
    """
    return {
        "questions": len(rows),
        "missing": sum(bool(r["missing"]) for r in rows),
        "parse_failures": sum((not r["missing"]) and (not r["parsed"]) for r in rows),
        "empty_answers": sum((not r["missing"]) and not str(r.get("prediction") or "").strip() for r in rows),
        "wrong_parsed": sum(bool(r["parsed"]) and not r["missing"] and not r["correct"] for r in rows),
        "correct": sum(bool(r["correct"]) for r in rows),
    }


def _as_int(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, float):
        return None if math.isnan(value) or not value.is_integer() else int(value)
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def attribute_stats(rows: Sequence[Trace], canonical: Mapping[str, Any]) -> dict[str, Any]:
    """Counting errors; ``canonical`` maps question id -> canonical count (absent: unknown)."""
    n = len(rows)
    numeric: list[tuple[int, int]] = []
    within = 0
    canon_known = canon_hits = 0
    for r in rows:
        pred = _as_int(_answer(r))
        gold = _as_int(r["normalized_answer"])
        if pred is not None and gold is not None:
            numeric.append((pred, gold))
            within += abs(pred - gold) <= 1
        canon = _as_int(canonical.get(r["id"]))
        if canon is not None:
            canon_known += 1
            canon_hits += pred == canon
    errors = [p - g for p, g in numeric]
    return {
        "n": n,
        "exact": _rate(sum(bool(r["correct"]) for r in rows), n),
        "within_one": _rate(within, n),
        "n_numeric": len(numeric),
        "mae": sum(abs(e) for e in errors) / len(errors) if errors else None,
        "signed_error": sum(errors) / len(errors) if errors else None,
        "n_canonical_known": canon_known,
        "canonical_share": _rate(canon_hits, canon_known),
    }


def _letter(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    text = str(value).strip().upper()
    return text or None


def language_stats(rows: Sequence[Trace], suggested: Mapping[str, Any], unknown: Mapping[str, Any]) -> dict[str, Any]:
    """Shares of answers choosing the suggested and the unknown option (where known)."""
    out: dict[str, Any] = {"n": len(rows)}
    for key, mapping in (("suggested", suggested), ("unknown", unknown)):
        known = hits = 0
        for r in rows:
            opt = _letter(mapping.get(r["id"]))
            if opt is None:
                continue
            known += 1
            ans = _answer(r)
            hits += ans is not None and ans.upper() == opt
        out[f"n_{key}_known"] = known
        out[f"{key}_share"] = _rate(hits, known)
    return out


# ---------------------------------------------------------------------------
# one model, all splits
# ---------------------------------------------------------------------------
def _column(data_rows: Sequence[Mapping[str, Any]] | None, column: str) -> dict[str, Any]:
    if not data_rows:
        return {}
    return {r[C.COL_ID]: r.get(column) for r in data_rows if r.get(column) is not None}


def model_diagnostics(
    traces: Mapping[str, Sequence[Trace]], data: Mapping[str, Sequence[Mapping[str, Any]]]
) -> dict[str, Any]:
    """Diagnostics of one model: ``{split: {...}}`` for every split in ``traces``."""
    out: dict[str, Any] = {}
    for split, rows in traces.items():
        entry: dict[str, Any] = {"parsing": parsing_stats(rows), "nonanswer": flags.trace_blocks({split: rows})[split]}
        if split in C.PAIRED_SPLITS:
            classes = pair_classes(rows, split)
            entry["probes"] = probe_stats(rows, split)
            entry.update(yes_no_rates(rows))
            entry["pairs"] = len(classes)
            entry["pair_class_counts"] = {c: sum(v == c for v in classes.values()) for c in PAIR_CLASSES}
            entry["pair_class"] = classes
        elif split == "attribute":
            entry["attribute"] = attribute_stats(rows, _column(data.get(split), C.COL_CANONICAL_COUNT))
        elif split == "language":
            d = data.get(split)
            entry["language"] = language_stats(
                rows, _column(d, C.COL_SUGGESTED_OPTION), _column(d, C.COL_UNKNOWN_OPTION)
            )
        out[split] = entry
    return out


# ---------------------------------------------------------------------------
# tables and the figure
# ---------------------------------------------------------------------------
def _num(x: float | None, nd: int = 4) -> float | None:
    return None if x is None else round(x, nd)


def table_rows(
    diag: Mapping[str, Mapping[str, Any]], threshold: float = flags.DEFAULT_MAX_NONANSWER_RATE
) -> dict[str, list[dict[str, Any]]]:
    """CSV rows of every diagnostics table (fractions 0-1, errors in counts), each with its split's flag columns."""
    t: dict[str, list[dict[str, Any]]] = {k: [] for k in ("pairs", "probes", "attribute", "language", "parsing")}
    for model, splits in diag.items():
        for split, e in splits.items():
            fl = flags.columns(e.get("nonanswer"), threshold)  # None: diagnostics written before the flags
            t["parsing"].append({"model": model, "split": split, **e["parsing"], "nonanswer": fl["nonanswer"], "flagged": fl["flagged"]})
            if "pair_class_counts" in e:
                t["pairs"].append({"model": model, "split": split, "pairs": e["pairs"], **e["pair_class_counts"],
                                   "yes_rate": _num(e["yes_rate"]), "no_rate": _num(e["no_rate"]), **fl})  # fmt: skip
                for probe, s in e["probes"].items():
                    t["probes"].append({"model": model, "split": split, "probe": probe, "n": s["n"],
                                        "accuracy": _num(s["accuracy"]), "yes_rate": _num(s["yes_rate"]), **fl})  # fmt: skip
            if "attribute" in e:
                a = e["attribute"]
                t["attribute"].append(
                    {"model": model, **{k: _num(v) if isinstance(v, float) else v for k, v in a.items()}, **fl}
                )
            if "language" in e:
                lang = e["language"]
                t["language"].append(
                    {"model": model, **{k: _num(v) if isinstance(v, float) else v for k, v in lang.items()}, **fl}
                )
    return t


#: The flag columns of every row: the non-answers and questions of the row's model and split, and
#: whether that split is flagged (above analysis.report.max_nonanswer_rate).
FLAG_COLUMNS: tuple[str, ...] = flags.COLUMNS
CSV_HEADERS: dict[str, tuple[str, ...]] = {
    "pairs": ("model", "split", "pairs", *PAIR_CLASSES, "yes_rate", "no_rate", *FLAG_COLUMNS),
    "probes": ("model", "split", "probe", "n", "accuracy", "yes_rate", *FLAG_COLUMNS),
    "attribute": (
        "model",
        "n",
        "exact",
        "within_one",
        "n_numeric",
        "mae",
        "signed_error",
        "n_canonical_known",
        "canonical_share",
        *FLAG_COLUMNS,
    ),
    "language": ("model", "n", "n_suggested_known", "suggested_share", "n_unknown_known", "unknown_share", *FLAG_COLUMNS),
    "parsing": ("model", "split", "questions", "missing", "parse_failures", "empty_answers", "wrong_parsed", "correct",
                "nonanswer", "flagged"),
}  # fmt: skip


def _f(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "-"
    return f"{x:+.2f}" if signed else f"{x:.2f}"


def markdown(
    diag: Mapping[str, Mapping[str, Any]], names: Mapping[str, str], threshold: float = flags.DEFAULT_MAX_NONANSWER_RATE
) -> str:
    """All diagnostics as one Markdown document (percentages); a flagged model and split carries
    ``†`` beside the model, counted in the table's footnote (report.flags)."""
    t = table_rows(diag, threshold)

    def block(model: str, split: str) -> Mapping[str, Any] | None:
        return (diag[model].get(split) or {}).get("nonanswer")

    def nm(model: str, split: str) -> str:
        mark = flags.mark(block(model, split), threshold)
        return f"{names.get(model, model)} {mark}" if mark else names.get(model, model)

    def note(rows: Sequence[Mapping[str, Any]], split: str | None = None) -> list[str]:
        entries = [(names.get(r["model"], r["model"]), s, block(r["model"], s)) for r in rows for s in [r.get("split", split)]]
        text = flags.footnote(entries, threshold)
        return ["", text] if text else []

    parts = ["# World-prior diagnostics", ""]
    parts += ["## Pair outcomes (context, texture)", "",
              ("Share of pairs per class. Prior-following: right on the base image, and on the edited image "
              "answering as if the familiar source object / normal material were still there."), ""]  # fmt: skip
    if t["pairs"]:
        parts.append(md_table(
            ["Model", "Split", "Pairs", *[CLASS_LABELS[c] for c in PAIR_CLASSES], "Yes-rate", "No-rate"],
            [[nm(r["model"], r["split"]), r["split"], r["pairs"], *[pct(r[c] / r["pairs"]) for c in PAIR_CLASSES],
              pct(r["yes_rate"]), pct(r["no_rate"])] for r in t["pairs"]],
            ["l", "l"] + ["r"] * 8,
        ))  # fmt: skip
        parts += note(t["pairs"])
        parts += ["", "## Accuracy and yes-rate per probe", ""]
        parts.append(md_table(
            ["Model", "Split", "Probe", "n", "Accuracy", "Yes-rate"],
            [[nm(r["model"], r["split"]), r["split"], r["probe"], r["n"], pct(r["accuracy"]), pct(r["yes_rate"])]
             for r in t["probes"]],
            ["l", "l", "l", "r", "r", "r"],
        ))  # fmt: skip
        parts += note(t["probes"])
    else:
        parts.append("No paired split configured.\n")
    parts += ["", "## Attribute (counting)", "",
              ("Within one: |answer - gold| <= 1. MAE and signed error (answer - gold) over answers holding a count. "
              "Canonical: share of answers equal to the canonical count, where the data gives it."), ""]  # fmt: skip
    if t["attribute"]:
        parts.append(md_table(
            ["Model", "n", "Exact", "Within one", "With a count", "MAE", "Signed error", "Canonical"],
            [[nm(r["model"], "attribute"), r["n"], pct(r["exact"]), pct(r["within_one"]), r["n_numeric"], _f(r["mae"]),
              _f(r["signed_error"], signed=True), f"{pct(r['canonical_share'])} (n={r['n_canonical_known']})"] for r in t["attribute"]],
        ))  # fmt: skip
        parts += note(t["attribute"], "attribute")
    else:
        parts.append("Attribute split not configured.\n")
    parts += ["", "## Language (multiple choice)", "",
              ("Share of answers choosing the option the question's wording suggests, and the option saying the "
              "answer cannot be determined from the image (the correct one), where the data gives them."), ""]  # fmt: skip
    if t["language"]:
        parts.append(md_table(
            ["Model", "n", "Suggested option", "Unknown option"],
            [[nm(r["model"], "language"), r["n"], f"{pct(r['suggested_share'])} (n={r['n_suggested_known']})",
              f"{pct(r['unknown_share'])} (n={r['n_unknown_known']})"] for r in t["language"]],
        ))  # fmt: skip
        parts += note(t["language"], "language")
    else:
        parts.append("Language split not configured.\n")
    parts += ["", "## Parse failures", "",
              ("Parse failure: an answer from which the contract extracts no valid answer (no yes/no word, no count, "
              "no option); counted apart from wrong answers and from missing predictions. Of these, "
              "\"empty: token budget spent\" counts the empty answers kept because the model spent its whole "
              "output-token budget (other empty responses are retried, never stored)."), ""]  # fmt: skip
    parts.append(md_table(
        ["Model", "Split", "Questions", "Missing", "Parse failures", "Empty: token budget spent", "Wrong (parsed)",
         "Correct"],
        [[nm(r["model"], r["split"]), r["split"], r["questions"], r["missing"], r["parse_failures"], r["empty_answers"],
          r["wrong_parsed"], r["correct"]]
         for r in t["parsing"]],
        ["l", "l", "r", "r", "r", "r", "r", "r"],
    ))  # fmt: skip
    parts += note(t["parsing"])
    return "\n".join(parts)


def draw_pair_outcomes(
    diag: Mapping[str, Mapping[str, Any]],
    names: Mapping[str, str],
    outdir: str | Path,
    data_label: str,
    styles: Mapping[str, ModelStyle] | None = None,
    threshold: float = flags.DEFAULT_MAX_NONANSWER_RATE,
) -> list[Path]:
    """Write :func:`pair_outcomes_figure` as ``pair_outcomes.{png,pdf}``."""
    from ..report.plotting import save_figure, style

    with style():
        return save_figure(pair_outcomes_figure(diag, names, data_label, styles, threshold), Path(outdir), FIGURE_NAME)


def pair_outcomes_figure(
    diag: Mapping[str, Mapping[str, Any]],
    names: Mapping[str, str],
    data_label: str,
    styles: Mapping[str, ModelStyle] | None = None,
    threshold: float = flags.DEFAULT_MAX_NONANSWER_RATE,
) -> Any:
    """Stacked horizontal bars: share of pairs per class, one bar per model, one panel per paired split.

    The title names the data (``data_label``: what the Parquet splits record); each panel its number of
    pairs; each model's label has its colour swatch (:func:`sabre_prior.report.style.model_styles`, the
    colours of the accuracy figures), and the classes have colours no model has
    (:data:`~sabre_prior.report.style.OUTCOME_COLORS`). A dashed line marks the share of pairs four
    uniform guesses get all right (1/16); a model whose split is flagged (more non-answers than
    ``threshold``) carries :data:`~sabre_prior.report.flags.FLAG` beside its name, explained under the legend.
    """
    import textwrap

    from matplotlib.patches import Rectangle

    from ..report.plotting import plt
    from ..report.style import DARK_OUTCOMES, REFERENCE_COLOR, REFERENCE_DASHES, model_styles, n_text, score_text

    models = list(diag)
    styles = styles if styles is not None else model_styles(models)
    splits = [s for s in C.PAIRED_SPLITS if any(s in diag[m] for m in models)]
    panels = max(1, len(splits))
    width = 7.5
    fig, axes = plt.subplots(
        panels, 1, figsize=(width, (0.7 + 0.32 * max(1, len(models))) * panels + 1.2), squeeze=False
    )
    source = textwrap.fill(f"data: {data_label}", width=int(width * 11))
    fig.suptitle(f"SABRE-Prior paired splits: outcome of each pair's four probes\n{source}")
    if not splits:
        axes[0][0].text(0.5, 0.5, "No paired split configured", ha="center", va="center")
        axes[0][0].set_axis_off()
    any_flagged = False
    for ax, split in zip(axes[:, 0], splits, strict=False):
        keys = models[::-1]
        rows = [diag[m].get(split) for m in keys]
        ns = {e["pairs"] for e in rows if e}
        marked = [bool(e) and flags.flagged(e.get("nonanswer"), threshold) for e in rows]
        any_flagged = any_flagged or any(marked)
        labels = [names.get(m, m) + (f" {flags.FLAG}" if f else "") + (f" (n={e['pairs']})" if e and len(ns) > 1 else "")
                  for m, e, f in zip(keys, rows, marked)]  # fmt: skip
        left = [0.0] * len(rows)
        for cls in PAIR_CLASSES:
            shares = [100.0 * e["pair_class_counts"][cls] / e["pairs"] if e else 0.0 for e in rows]
            bars = ax.barh(labels, shares, left=left, color=CLASS_COLORS[cls], label=CLASS_LABELS[cls],
                           edgecolor="#333333", linewidth=0.4)  # fmt: skip
            for bar, share in zip(bars, shares, strict=True):
                if share >= 7.0:
                    ax.text(bar.get_x() + bar.get_width() / 2, bar.get_y() + bar.get_height() / 2,
                            score_text(share / 100), ha="center", va="center", fontsize=7,
                            color="white" if cls in DARK_OUTCOMES else "black")  # fmt: skip
            left = [a + b for a, b in zip(left, shares, strict=True)]
        ax.axvline(100 * ALL_CORRECT_AT_CHANCE, color=REFERENCE_COLOR, linestyle=REFERENCE_DASHES, linewidth=1.0,
                   label="All correct at chance (1/16)", zorder=3)  # fmt: skip
        for y, key in enumerate(keys):  # the model's own colour, as in the accuracy figures
            st = styles[key]
            ax.add_patch(Rectangle((-0.035, y - 0.22), 0.022, 0.44, transform=ax.get_yaxis_transform(),
                                   facecolor=st.color, hatch=st.hatch, edgecolor="#333333", linewidth=0.4,
                                   clip_on=False))  # fmt: skip
        ax.tick_params(axis="y", pad=14)
        ax.set_xlim(0, 100)
        n_part = f" ({n_text(ns.pop(), True)})" if len(ns) == 1 else ""  # else each model's label has it
        ax.set_title(f"{split.capitalize()}{n_part}", loc="left", fontweight="bold")
        ax.set_xlabel("Share of pairs (%)")
    if splits:
        handles, labels = axes[0][0].get_legend_handles_labels()
        note = ""
        if any_flagged:
            note = textwrap.fill(
                f"{flags.FLAG}: more than {flags.threshold_text(threshold)} of the split's questions are non-answers "
                "(unparseable, refused, failed, truncated; analysis.report.max_nonanswer_rate): the outcomes say "
                "little about what the model sees", width=int(width * 15),
            )  # fmt: skip
        fig.legend(
            handles, labels, loc="lower center", ncol=3, frameon=False, bbox_to_anchor=(0.5, 0.0),
            title=note or None, title_fontsize=7,
        )  # fmt: skip
        fig.tight_layout(rect=(0, 0.12 if note else 0.09, 1, 1))
    return fig


def write_diagnostics(
    diag: Mapping[str, Mapping[str, Any]],
    names: Mapping[str, str],
    tables_dir: str | Path,
    figures_dir: str | Path,
    json_path: str | Path,
    data_label: str,
    styles: Mapping[str, ModelStyle] | None = None,
    threshold: float = flags.DEFAULT_MAX_NONANSWER_RATE,
) -> list[Path]:
    """Write the JSON, the Markdown and CSV tables (flags above ``threshold``: report.flags) and the
    pair-outcome figure (titled with ``data_label``)."""
    tables, figures = Path(tables_dir), Path(figures_dir)
    md_name, *csv_names = C.DIAGNOSTIC_TABLES  # the Markdown, then one CSV per CSV_HEADERS entry, in order
    write_json(json_path, {"pair_classes": list(PAIR_CLASSES), "model_order": list(diag), "models": diag})
    write_text(tables / md_name, markdown(diag, names, threshold))
    t = table_rows(diag, threshold)
    written = [Path(json_path), tables / md_name]
    for (key, header), name in zip(CSV_HEADERS.items(), csv_names, strict=True):
        write_csv(tables / name, header, t[key])
        written.append(tables / name)
    return written + draw_pair_outcomes(diag, names, figures, data_label, styles, threshold)
