"""Plot data for ``dvc plots``: per-split accuracy of every model, one row per (model, split).

``results/plots/split_accuracy.csv`` has the columns ``model,split,accuracy``
(accuracy in percent, one decimal as in the tables, the macro average as split ``macro``), models in the order
of ``params.yaml``.  ``dvc plots show`` draws it as grouped bars with the template
``.dvc/plots/grouped_bars.json``; adding a model to ``params.yaml`` adds its bars
with no edit to ``dvc.yaml``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from .. import contracts as C
from ..errors import DataError
from ..io_utils import read_json_file, write_text
from .style import score_text

COLUMNS = ("model", "split", "accuracy")


def split_accuracy_rows(params: Mapping[str, Any], metrics_dir: Path) -> list[tuple[str, str, str]]:
    """(model, split, accuracy in percent as shown everywhere: :func:`.style.score_text`) for every
    configured model and split, then the macro average."""
    splits = list(params.get("splits") or C.SPLITS)
    rows: list[tuple[str, str, str]] = []
    for model in params.get("models") or {}:
        path = Path(metrics_dir) / f"{model}.json"
        metrics = read_json_file(path, missing=f"metrics of model {model!r} not found (run `sabre evaluate` for it first)")
        for split in splits:
            try:
                value = metrics[split][C.M_ACCURACY]
            except (KeyError, TypeError):
                raise DataError(f"{path}: field {split}.{C.M_ACCURACY} is missing") from None
            rows.append((model, split, score_text(float(value))))
        if C.M_MACRO not in metrics:
            raise DataError(f"{path}: field {C.M_MACRO} is missing")
        rows.append((model, "macro", score_text(float(metrics[C.M_MACRO]))))
    return rows


def write_plot_data(params: Mapping[str, Any], metrics_dir: Path, output: Path) -> int:
    """Write the CSV; returns the number of data rows."""
    rows = split_accuracy_rows(params, metrics_dir)
    lines = [",".join(COLUMNS)] + [f"{model},{split},{value}" for model, split, value in rows]
    write_text(output, "\n".join(lines) + "\n")
    return len(rows)

