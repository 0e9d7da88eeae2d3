"""A small synthetic project in the pipeline's contract formats, for the analysis tests.

It writes ``data/parquet/<split>.parquet`` (with embedded images and the prior
columns), ``params.yaml`` and, per model, ``results/traces/<model>/<split>.jsonl``
(exactly ``contracts.TRACE_KEYS``) and ``results/metrics/<model>.json``.  The
models answer by fixed rules, so every count in the tests is known by hand.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from PIL import Image, ImageDraw

from sabre_prior import contracts as C
from sabre_prior.data.parquet import identity_metadata

#: The source the synthetic splits record (their schema metadata), as a local copy's path.
SOURCE = "./synthetic-mirror"
N_PAIRS = 6
N_ITEMS = 8
OPTIONS = ["A red one", "A blue one", "It cannot be determined from the image", "A green one"]
UNKNOWN, SUGGESTED = "C", "A"

Answer = Callable[[dict[str, Any]], str | None]


def image_bytes(seed: int, label: str) -> bytes:
    """A distinct small JPEG per seed, with a label drawn on it."""
    img = Image.new("RGB", (160, 110), ((37 * seed) % 256, (91 * seed) % 256, (53 * seed + 80) % 256))
    draw = ImageDraw.Draw(img)
    draw.rectangle((10 + seed % 40, 20, 70 + seed % 40, 80), fill=(255, 255, 255))
    draw.text((12, 88), label, fill=(0, 0, 0))
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=85)
    return buf.getvalue()


def dataset() -> dict[str, list[dict[str, Any]]]:
    """Rows of each split (contract columns plus the prior columns)."""
    rows: dict[str, list[dict[str, Any]]] = {s: [] for s in C.SPLITS}
    objects = {"context": ("cup", "hammer", "kitchen"), "texture": ("wooden", "glass", "chair")}
    seed = 1
    for split in C.PAIRED_SPLITS:
        a, b, where = objects[split]
        for i in range(1, N_PAIRS + 1):
            pair = f"{split}_{i:03d}"
            imgs = {"base": image_bytes(seed, f"{pair} base"), "edited": image_bytes(seed + 1, f"{pair} edited")}
            seed += 2
            for probe, (role, expected) in C.PROBES[split].items():
                thing = a if probe.endswith(("source", "normal")) else b
                rows[split].append({
                    "id": f"{pair}__{probe}", "image": imgs[role], "subset": split,
                    "question": f"Is there a {thing} visible in this {where}?", "answer": expected,
                    "eval_type": "yes_no_exact", "pair_id": pair, "probe": probe,
                })  # fmt: skip
    for i in range(1, N_ITEMS + 1):
        rows["attribute"].append({
            "id": f"attribute_{i:03d}", "image": image_bytes(100 + i, f"legs {i}"), "subset": "attribute",
            "question": "How many legs does the animal have?", "answer": str(3 + i % 3), "eval_type": "count_exact",
            "canonical_count": 4 if i % 3 else 6,
        })  # fmt: skip
        rows["language"].append({
            "id": f"language_{i:03d}", "image": image_bytes(200 + i, f"lang {i}"), "subset": "language",
            "question": "What colour is the car the driver bought yesterday?", "answer": UNKNOWN,
            "eval_type": "multiple_choice_exact", "options": list(OPTIONS), "answer_text": OPTIONS[2],
            "suggested_option": SUGGESTED, "unknown_option": UNKNOWN,
        })  # fmt: skip
    return rows


def write_parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    cols: dict[str, list[Any]] = {k: [r.get(k) for r in rows] for k in rows[0]}
    arrays = {}
    for k, v in cols.items():
        if k == "image":
            arrays[k] = pa.array(
                [{"bytes": b, "path": None} for b in v], pa.struct([("bytes", pa.binary()), ("path", pa.string())])
            )
        else:
            arrays[k] = pa.array(v)
    path.parent.mkdir(parents=True, exist_ok=True)
    # the schema metadata the fetch step writes: where the rows were read (a local copy here)
    table = pa.table(arrays).replace_schema_metadata(identity_metadata(SOURCE, "local"))
    pq.write_table(table, path)


# --- a stand-in for the scorer's extraction, enough for these fixed answers ---
def _norm(text: Any) -> str:
    return re.sub(r"\s+", " ", re.sub(r"\W+", " ", "" if text is None else str(text).lower())).strip()


def extract(eval_type: str, text: Any) -> tuple[str, bool]:
    n = _norm(text)
    pattern = {"yes_no_exact": r"\b(yes|no)\b", "count_exact": r"\b\d+\b", "multiple_choice_exact": r"\b[a-z]\b"}[
        eval_type
    ]
    m = re.search(pattern, n)
    if not m:
        return (n.upper() if eval_type == "multiple_choice_exact" else n), False
    value = m.group(0)
    if eval_type == "multiple_choice_exact":
        value = value.upper()
        return value, value in "ABCD"
    return value, True


def trace(row: dict[str, Any], split: str, prediction: str | None) -> dict[str, Any]:
    """One trace line in contract order (``None``: no prediction line)."""
    norm_pred, parsed = extract(row["eval_type"], prediction)
    norm_ans, _ = extract(row["eval_type"], row["answer"])
    missing = prediction is None
    values = {
        "id": row["id"], "split": split,
        "pair_id": row.get("pair_id") if split in C.PAIRED_SPLITS else None,
        "probe": row.get("probe") if split in C.PAIRED_SPLITS else None,
        "eval_type": row["eval_type"], "prediction": prediction, "normalized_prediction": norm_pred,
        "answer": row["answer"], "normalized_answer": norm_ans, "parsed": parsed and not missing,
        "missing": missing, "correct": (not missing) and norm_pred == norm_ans,
    }  # fmt: skip
    # no usage summaries here: a missing line is `failed` (outcome precedence in contracts.OUTCOMES)
    values["outcome"] = (
        "failed" if missing else "correct" if values["correct"] else "wrong" if values["parsed"] else "unparseable"
    )
    values["chance"] = {"yes_no_exact": 0.5, "multiple_choice_exact": 0.25}.get(row["eval_type"], 0.1)
    return {k: values[k] for k in C.TRACE_KEYS}


# --- the models of the synthetic project ---
def oracle(row: dict[str, Any]) -> str | None:
    return {"yes": "Yes.", "no": "No."}.get(row["answer"], row["answer"])


def prior(row: dict[str, Any]) -> str | None:
    if row["eval_type"] == "yes_no_exact":
        return "Yes" if row["probe"].endswith(("source", "normal")) else "No"
    if row["eval_type"] == "count_exact":
        return str(row["canonical_count"])
    return row["suggested_option"]


def always_yes(row: dict[str, Any]) -> str | None:
    """Yes to everything; counts one too many; 'I think B' (a parse failure) for language."""
    if row["eval_type"] == "yes_no_exact":
        return "Yes, it is."
    if row["eval_type"] == "count_exact":
        return str(int(row["answer"]) + 1)
    return "I think B"


def mixed(row: dict[str, Any]) -> str | None:
    """Right on pairs 1-3 of each paired split, unparsable on pair 4, missing on pair 5, always no on pair 6."""
    if row["eval_type"] == "yes_no_exact":
        k = int(row["pair_id"][-3:])
        if k <= 3:
            return oracle(row)
        if k == 4:
            return "maybe"
        if k == 5:
            return None
        return "no"
    i = int(row["id"][-3:])
    if row["eval_type"] == "count_exact":
        return row["answer"] if i <= 4 else ("many" if i == 5 else str(int(row["answer"]) - 2))
    return UNKNOWN if i <= 2 else SUGGESTED


MODELS: dict[str, Answer] = {"oracle": oracle, "prior": prior, "always_yes": always_yes, "mixed": mixed}


def metrics_of(traces: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The metrics JSON as the scorer writes it (primary metric only)."""
    out: dict[str, Any] = {}
    for split, rows in traces.items():
        if split in C.PAIRED_SPLITS:
            ok: dict[str, bool] = {}
            for r in rows:
                ok[r["pair_id"]] = ok.get(r["pair_id"], True) and r["correct"]
            correct, total = sum(ok.values()), len(ok)
        else:
            correct, total = sum(r["correct"] for r in rows), len(rows)
        out[split] = {
            "accuracy": correct / total,
            "correct": correct,
            "total": total,
            "missing": sum(r["missing"] for r in rows),
        }
    out["macro_accuracy"] = sum(out[s]["accuracy"] for s in traces) / len(traces)
    return out


def make_project(
    root: Path, models: dict[str, Answer] | None = None, paper_names: dict[str, str] | None = None
) -> Path:
    """Write the synthetic project under ``root``; returns ``root``."""
    models = MODELS if models is None else models
    data = dataset()
    for split, rows in data.items():
        write_parquet(C.parquet_path(split, root), rows)
    params = {
        "dataset": {"source": "demo"},
        "splits": list(C.SPLITS),
        "analysis": {"bootstrap_resamples": 500, "seed": 0, "confidence": 0.95, "report": {"thumbnail_px": 96}},
        "models": {
            m: {"backend": "baseline", "strategy": "oracle", "display_name": m.replace("_", " ").title()}
            for m in models
        },
    }
    for m, name in (paper_names or {}).items():
        params["models"][m]["paper_name"] = name
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    for m, answer in models.items():
        traces = {s: [trace(r, s, answer(r)) for r in rows] for s, rows in data.items()}
        for s, rows in traces.items():
            p = C.trace_path(m, s, root)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        C.metrics_path(m, root).parent.mkdir(parents=True, exist_ok=True)
        C.metrics_path(m, root).write_text(json.dumps(metrics_of(traces)), encoding="utf-8")
    return root
