"""End to end: real Snakemake on the embedded demo, checked against an independent computation."""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.project import snakemake

SPLITS = ("context", "texture", "attribute", "language")


pytestmark = pytest.mark.slow  # a whole Snakemake run of the demo


@pytest.fixture(scope="module")
def demo_run(demo_repo_run_copy: Path) -> Path:
    """`snakemake --cores 2 all` in a copy of the project (the session's run, tests/conftest.py)."""
    return demo_repo_run_copy


def _simple_answer(text: str, eval_type: str) -> str:
    """A deliberately independent, minimal reading of the baselines' plain answers."""
    words = re.findall(r"[a-z0-9]+", (text or "").lower())
    if eval_type == "yes_no_exact":
        return next((w for w in words if w in ("yes", "no")), "")
    if eval_type == "count_exact":
        return next((w for w in words if w.isdigit()), "")
    return next((w.upper() for w in words if len(w) == 1 and w.isalpha()), "")


def _gold(answer: object, eval_type: str) -> str:
    text = str(answer).strip()
    return text.lower() if eval_type == "yes_no_exact" else text.upper()


def _independent_scores(project: Path, model: str) -> dict[str, float]:
    scores: dict[str, float] = {}
    for split in SPLITS:
        rows = pq.read_table(project / "data/parquet" / f"{split}.parquet", columns=None).drop(["image"]).to_pylist()
        preds = {}
        with open(project / "results/predictions" / model / f"{split}.jsonl") as fh:
            for line in fh:
                rec = json.loads(line)
                preds[rec["id"]] = rec["prediction"]
        assert [r["id"] for r in rows] == list(preds), "prediction file must follow dataset order"
        ok = {r["id"]: _simple_answer(preds[r["id"]], r["eval_type"]) == _gold(r["answer"], r["eval_type"]) for r in rows}
        if split in ("context", "texture"):
            pairs: dict[str, list[bool]] = defaultdict(list)
            for r in rows:
                pairs[r["pair_id"]].append(ok[r["id"]])
            assert all(len(v) == 4 for v in pairs.values())
            scores[split] = 100 * sum(all(v) for v in pairs.values()) / len(pairs)
        else:
            scores[split] = 100 * sum(ok.values()) / len(ok)
    scores["macro"] = sum(scores[s] for s in SPLITS) / 4
    return scores


def test_main_table_matches_independent_scores(demo_run: Path) -> None:
    import yaml

    models = list(yaml.safe_load((demo_run / "params.yaml").read_text())["models"])
    with open(demo_run / "results/tables/main_results.csv", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        table = {row[0]: row for row in reader}
    assert header == ["model", "context", "texture", "attribute", "language", "macro"]
    assert list(table) == models
    for model in models:
        expected = _independent_scores(demo_run, model)
        got = dict(zip(header[1:], map(float, table[model][1:])))
        for col, value in expected.items():
            assert got[col] == pytest.approx(value, abs=0.051), (model, col)


def test_reference_points_behave_as_the_benchmark_intends(demo_run: Path) -> None:
    metrics = {m: json.loads((demo_run / f"results/metrics/{m}.json").read_text()) for m in ("prior", "always_yes")}
    # following priors or answering a constant never passes a strict pair
    for m in metrics.values():
        assert m["context"]["accuracy"] == 0.0 and m["texture"]["accuracy"] == 0.0
    # the prior model is right on the base images and wrong on the edited ones
    probes = metrics["prior"]["context"]["probe_accuracy"]
    assert probes == {"base_source": 1.0, "base_target": 1.0, "edited_source": 0.0, "edited_target": 0.0}


def test_outputs_exist_and_second_run_does_nothing(demo_run: Path) -> None:
    for fig in ("split_accuracy", "probe_accuracy"):
        assert (demo_run / f"results/figures/{fig}.png").read_bytes().startswith(b"\x89PNG")
        assert (demo_run / f"results/figures/{fig}.pdf").read_bytes().startswith(b"%PDF")
    for split in SPLITS:
        assert (demo_run / f"results/traces/prior/{split}.jsonl").stat().st_size > 0
    again = snakemake(["--cores", "2", "all"], demo_run)
    assert "Nothing to be done" in again.stdout + again.stderr
