"""Running one model on one split and writing its prediction file.

The prediction file ``results/predictions/<model>/<split>.jsonl`` holds one
line ``{"id": ..., "prediction": ...}`` per question, in dataset order (the
official format).  It is written atomically, and only when every question has
an answer: a failed call is never stored as an answer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from tqdm import tqdm

from . import contracts as C
from .data import image_mime, iter_rows
from .io_utils import write_jsonl
from .models.base import Query, create_backend
from .prompts import DEFAULT_TEMPLATE, render
from .scoring import resolve_eval_type

log = logging.getLogger(__name__)


@dataclass
class SplitRun:
    model: str
    split: str
    answered: int = 0
    failed: list[str] = field(default_factory=list)


def build_queries(data_path: Path, split: str, template: str) -> list[Query]:
    queries: list[Query] = []
    for row in iter_rows(data_path, with_images=True):
        image = row.pop(C.COL_IMAGE)
        eval_type = resolve_eval_type(row)
        row[C.COL_EVAL_TYPE] = eval_type
        text = render(row, eval_type, template)
        queries.append(
            Query(id=str(row[C.COL_ID]), split=split, text=text, image=image, image_mime=image_mime(image), row=row)
        )
    return queries


def predict_split(
    model: str,
    settings: Mapping[str, Any],
    split: str,
    data_path: str | Path,
    output: str | Path,
    *,
    template: str | None = None,
    progress: bool = True,
) -> SplitRun:
    """Answer every question of ``split`` with ``model`` and write the prediction file."""
    template = settings.get("prompt_template") or template or DEFAULT_TEMPLATE
    backend = create_backend(model, settings)
    backend.check_ready()
    queries = build_queries(Path(data_path), split, template)
    run = SplitRun(model=model, split=split)
    answers: dict[str, str] = {}
    try:
        bar = tqdm(total=len(queries), desc=f"{model}/{split}", unit="q", disable=not progress)
        batch = int(settings.get("batch_size", 64))
        for start in range(0, len(queries), batch):
            chunk = queries[start : start + batch]
            for q, completion in zip(chunk, backend.complete_batch(chunk)):
                answers[q.id] = completion.text
            bar.update(len(chunk))
        bar.close()
    finally:
        backend.close()
    run.answered = len(answers)
    write_jsonl(output, ({C.PRED_ID: q.id, C.PRED_PREDICTION: answers[q.id]} for q in queries))
    log.info("%s/%s: %d predictions written to %s", model, split, run.answered, output)
    return run
