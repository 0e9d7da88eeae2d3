"""``results/report/index.html``: a static, self-contained report.

One HTML file, opened from disk with no server: CSS, JavaScript, the data
(JSON in a ``<script type="application/json">`` block), the figures (PNG) and
JPEG thumbnails of the images (data URIs, each distinct image once) are all
inlined.  The templates are package resources (``resources/report.*``).  The
same inputs give byte-identical output: no timestamps, sorted JSON, and
deterministic JPEG encoding.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from .. import contracts as C
from ..config import display_name
from ..data.parquet import data_identity, iter_rows
from ..data.reader import image_mime
from ..errors import DataError
from ..io_utils import write_text
from ..options import options_mapping
from ..report import flags
from ..report.flags import max_nonanswer_rate
from ..report.style import BOLD_RULE, model_styles, n_text, tie_note
from ..report.style import caption as figure_caption
from .intervals import read_intervals
from .settings import AnalysisSettings
from .traces import Trace, read_model_traces

TEMPLATES = ("report.html", "report.css", "report.js")
JPEG_QUALITY = 70


def _resource(name: str) -> str:
    return (resources.files("sabre_prior") / "resources" / name).read_text(encoding="utf-8")


def thumbnail_uri(data: bytes, max_px: int) -> str:
    """A JPEG data URI of the image scaled to fit ``max_px`` x ``max_px`` (never enlarged)."""
    from PIL import Image, ImageOps

    try:
        with Image.open(io.BytesIO(data)) as img:
            img.draft("RGB", (max_px, max_px))  # fast JPEG downscale on decode
            rgb = ImageOps.exif_transpose(img).convert("RGB")  # upright: the thumbnail has no EXIF
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:  # what PIL raises for bad images
        raise DataError(f"image of {image_mime(data)} could not be decoded: {exc}") from None
    rgb.thumbnail((max_px, max_px), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    rgb.save(buf, format="JPEG", quality=JPEG_QUALITY, optimize=True)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def png_uri(path: str | Path) -> str:
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise DataError(f"{p}: figure not found") from None
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def split_questions(data_path: Path, split: str, max_px: int, images: dict[str, str]) -> list[dict[str, Any]]:
    """Questions of a split in data order; each distinct image is thumbnailed once into ``images``."""
    out: list[dict[str, Any]] = []
    for row in iter_rows(data_path, with_images=True):
        data = row.get(C.COL_IMAGE)
        key = None
        if isinstance(data, (bytes, bytearray)):
            key = hashlib.sha256(data).hexdigest()[:16]
            if key not in images:
                try:
                    images[key] = thumbnail_uri(bytes(data), max_px)
                except DataError as exc:
                    raise DataError(f"{data_path}: row {row.get(C.COL_ID)!r}: field 'image': {exc}") from None
        opts = options_mapping(row.get(C.COL_OPTIONS)) if split == "language" else {}
        out.append(
            {
                "id": row[C.COL_ID],
                "q": str(row.get(C.COL_QUESTION) or ""),
                "img": key,
                "probe": row.get(C.COL_PROBE) if split in C.PAIRED_SPLITS else None,
                "pair": row.get(C.COL_PAIR_ID) if split in C.PAIRED_SPLITS else None,
                "options": [[k, v] for k, v in opts.items()],
            }
        )
    if not out:
        raise DataError(f"{data_path}: split {split!r} has no rows")
    return out


def aligned_results(questions: Sequence[Mapping[str, Any]], rows: Sequence[Trace], source: str) -> list[list[Any]]:
    """Per question (data order): ``[prediction, normalized, answer, normalized answer, parsed, missing, correct, outcome]``."""
    by_id = {r["id"]: r for r in rows}
    qids = [q["id"] for q in questions]
    lacking = [q for q in qids if q not in by_id]
    extra = sorted(set(by_id) - set(qids))
    if lacking or extra:
        raise DataError(
            f"{source}: trace and data disagree (not in trace: {lacking[:3] or '-'}; not in data: {extra[:3] or '-'}); "
            "re-run the evaluate step on the same data"
        )
    out = []
    for qid in qids:
        r = by_id[qid]
        out.append([r["prediction"], r["normalized_prediction"], r["answer"], r["normalized_answer"],
                    bool(r["parsed"]), bool(r["missing"]), bool(r["correct"]), str(r["outcome"])])  # fmt: skip
    return out


def read_csv_rows(path: str | Path | None) -> list[dict[str, str]]:
    """Rows of an optional CSV table (absent: none)."""
    if path is None:
        return []
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: table not found")
    with open(p, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def report_data(
    params: Mapping[str, Any],
    *,
    traces_dir: str | Path,
    data_dir: str | Path,
    intervals_dir: str | Path,
    diagnostics_json: str | Path,
    settings: AnalysisSettings,
    figures: Sequence[str | Path] = (),
    comparison_csv: str | Path | None = None,
    paper_csv: str | Path | None = None,
    sensitivity_csv: str | Path | None = None,
    stability_csv: str | Path | None = None,
    parity_csv: str | Path | None = None,
    invariance_csv: str | Path | None = None,
) -> dict[str, Any]:
    """Everything the page shows, as one JSON-able dict."""
    splits = list(params.get("splits") or C.SPLITS)
    models = list(params["models"])
    images: dict[str, str] = {}
    questions = {s: split_questions(Path(data_dir) / f"{s}.parquet", s, settings.thumbnail_px, images) for s in splits}
    results: dict[str, dict[str, Any]] = {}
    for m in models:
        traces = read_model_traces(Path(traces_dir) / m, splits)
        results[m] = {
            s: aligned_results(questions[s], traces[s], str(Path(traces_dir) / m / f"{s}.jsonl")) for s in splits
        }
    try:
        diag = json.loads(Path(diagnostics_json).read_text(encoding="utf-8"))["models"]
    except FileNotFoundError:
        raise DataError(f"{diagnostics_json}: diagnostics not found (run `sabre diagnose`)") from None
    missing = [m for m in models if m not in diag]
    if missing:
        raise DataError(
            f"{diagnostics_json}: no diagnostics for model(s) {', '.join(missing)} (re-run `sabre diagnose`)"
        )
    pair_class = {m: {s: diag[m][s].get("pair_class", {}) for s in splits if s in diag[m]} for m in models}
    summary = {
        m: {s: {k: v for k, v in diag[m][s].items() if k != "pair_class"} for s in splits if s in diag[m]}
        for m in models
    }
    intervals = {m: read_intervals(Path(intervals_dir) / f"{m}.json") for m in models}
    # the data's identity is what the Parquet splits record (the fetch step), not params.yaml
    identity = data_identity(Path(data_dir), splits, digest=True)
    styles = model_styles(models)
    return {
        "title": "SABRE-Prior evaluation report",
        "data": {**identity.as_dict(), "label": identity.label},
        "splits": splits,
        "paired": [s for s in C.PAIRED_SPLITS if s in splits],
        "probes": {
            s: [[p, role, exp] for p, (role, exp) in C.PROBES[s].items()] for s in C.PAIRED_SPLITS if s in splits
        },
        "models": [{"key": m, "name": display_name(params, m), **styles[m].as_dict()} for m in models],
        "main_table": main_table(params, intervals, questions),
        # the intervals' own settings (they were computed by another step)
        "confidence": intervals[models[0]][C.I_CONFIDENCE],
        "resamples": intervals[models[0]][C.I_RESAMPLES],
        "seed": intervals[models[0]][C.I_SEED],
        "intervals": intervals,
        "diagnostics": summary,
        "pair_class": pair_class,
        "comparison": read_csv_rows(comparison_csv),
        "paper": read_csv_rows(paper_csv),
        # issue 21: non-answer flags, failure-aware bounds (in the intervals), prompt sensitivity, stability
        "outcomes": list(C.OUTCOMES),
        "non_answers": list(C.NON_ANSWERS),
        "max_nonanswer_rate": max_nonanswer_rate(params),
        "nonanswers": nonanswer_flags(params, intervals),
        "sensitivity": read_csv_rows(sensitivity_csv),
        "stability": read_csv_rows(stability_csv),
        # issue 34: model -> why its score depends on the backend or the batch size (report.flags decides)
        "serving": flags.serving_flags(parity_csv, invariance_csv, {m: display_name(params, m) for m in models}),
        "figures": [{"name": Path(f).stem, "src": png_uri(f), "caption": figure_caption(Path(f).stem)} for f in figures],
        "questions": questions,
        "results": results,
        "images": images,
    }


def nonanswer_flags(params: Mapping[str, Any], intervals: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per model and split (and ``macro``): ``{"text": "12 of 12 non-answers (100.0%)", "flagged": bool}``
    from the intervals' failure-aware blocks (report.flags decides; the page only shows it)."""
    threshold = max_nonanswer_rate(params)
    out: dict[str, dict[str, Any]] = {}
    for m, iv in intervals.items():
        fa = iv.get("failure_aware") or {}
        out[m] = {
            s: {"text": flags.flag_text(b), "flagged": flags.flagged(b, threshold)}
            for s, b in fa.items()
            if isinstance(b, Mapping) and "nonanswer" in b
        }
    return out


def split_n(split: str, questions: Sequence[Mapping[str, Any]]) -> int:
    """The units a split's score counts: its pairs (context, texture) or its questions."""
    return len({q["pair"] for q in questions}) if split in C.PAIRED_SPLITS else len(questions)


def main_table(
    params: Mapping[str, Any], intervals: Mapping[str, Mapping[str, Any]], questions: Mapping[str, Sequence[Any]]
) -> dict[str, Any]:
    """The overview's main table, as text: the cells of ``main_results.md`` (same rounding, same bold rule)."""
    from ..formatting import Interval
    from ..report.tables import COLUMN_TITLES, MACRO, TABLE_SPLITS, ModelResults, build_cells

    splits = [s for s in TABLE_SPLITS if s in questions]
    columns = [*splits, MACRO]
    n = {s: split_n(s, questions[s]) for s in splits}
    results = []
    for m, iv in intervals.items():
        bounds = {c: Interval(*(float(iv[C.I_MACRO if c == MACRO else c][k]) for k in (C.I_ESTIMATE, C.I_LOW, C.I_HIGH)))
                  for c in columns}  # fmt: skip
        est = {s: bounds[s].estimate for s in splits}
        # the outcome counts the intervals' failure-aware scores hold (none in intervals written before issue 21)
        fa = iv.get("failure_aware") or {}
        outcomes = {s: dict(fa[s]["outcomes"]) for s in splits if isinstance(fa.get(s), Mapping) and "outcomes" in fa[s]}
        results.append(
            ModelResults(m, display_name(params, m), est, bounds[MACRO].estimate, dict(n), intervals=bounds, outcomes=outcomes)
        )
    # the cells are main_results.md's: its numbers, its bold rule and its flag (report.flags) beside
    # each value whose non-answer rate exceeds analysis.report.max_nonanswer_rate, counted in the note
    threshold = max_nonanswer_rate(params)
    cells = build_cells(results, threshold)
    index = [(*TABLE_SPLITS, MACRO).index(c) for c in columns]
    ties = tie_note([(COLUMN_TITLES[c], [row[j].value for row in cells]) for c, j in zip(columns, index)])
    flag_note = flags.footnote(
        ((r.name, c, r.nonanswer_block(c)) for r in results for c in columns), threshold
    )
    return {
        "columns": [
            {"key": c, "title": COLUMN_TITLES[c],
             "n": n_text(n[c], c in C.PAIRED_SPLITS) if c in n else f"mean of the {len(splits)} splits"}
            for c in columns
        ],  # fmt: skip
        "rows": [
            {"key": r.key, "cells": [{"text": row[j].text, "ci": row[j].interval.strip(), "bold": row[j].bold,
                                      "flagged": r.flagged(c, threshold)} for c, j in zip(columns, index)]}
            for r, row in zip(results, cells)
        ],  # fmt: skip
        "note": " ".join(part for part in (BOLD_RULE, ties, flag_note) if part),
    }


def _script_json(obj: Any) -> str:
    """JSON safe inside a <script> element."""
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def render_html(data: Mapping[str, Any]) -> str:
    """The page: template with CSS, JS and data inlined."""
    html, css, js = (_resource(n) for n in TEMPLATES)
    for marker, value in (
        ("@@TITLE@@", str(data["title"])),
        ("@@CSS@@", css),
        ("@@JS@@", js),
        ("@@DATA@@", _script_json(data)),
    ):
        if marker not in html:
            raise RuntimeError(f"report template lacks {marker}")
        html = html.replace(marker, value)
    return html


def write_report(output: str | Path, data: Mapping[str, Any]) -> Path:
    """Write the page atomically; returns its path."""
    out = Path(output)
    write_text(out, render_html(data))
    return out
