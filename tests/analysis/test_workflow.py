"""The analysis rules in the real workflow: `snakemake all` on the demo, then `snakemake --report`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from sabre_prior import contracts as C
from sabre_prior.contracts import REPORT_FIGURES
from tests.project import snakemake

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run(demo_repo_run_copy: Path) -> Path:
    """`snakemake --cores 2 all` in a copy of the project (the session's run, tests/conftest.py)."""
    return demo_repo_run_copy


def test_analysis_outputs_agree_with_the_metrics(run: Path) -> None:
    params = yaml.safe_load((run / "params.yaml").read_text())
    models = list(params["models"])
    for model in models:
        metrics = json.loads(C.metrics_path(model, run).read_text())
        iv = json.loads(C.intervals_path(model, run).read_text())
        for split in params["splits"]:
            assert iv[split][C.I_ESTIMATE] == pytest.approx(metrics[split][C.M_ACCURACY], abs=1e-9)
            assert iv[split][C.I_LOW] <= iv[split][C.I_ESTIMATE] <= iv[split][C.I_HIGH]
        assert iv[C.I_MACRO][C.I_ESTIMATE] == pytest.approx(metrics[C.M_MACRO], abs=1e-9)
        assert iv[C.I_RESAMPLES] == params["analysis"]["bootstrap_resamples"]
    comparison = (run / "results/tables/model_comparison.csv").read_text().splitlines()
    n = len(models)
    assert len(comparison) == 1 + n * (n - 1) // 2 * (len(params["splits"]) + 1)
    diag = json.loads((run / "results/analysis/diagnostics.json").read_text())
    assert diag["model_order"] == models
    # the offline "prior" baseline follows the world prior on every pair
    if "prior" in models:
        counts = diag["models"]["prior"]["context"]["pair_class_counts"]
        assert counts["prior_following"] == diag["models"]["prior"]["context"]["pairs"]
    html = (run / "results/report/index.html").read_text()
    data = json.loads(
        re.search(r'<script id="sabre-data" type="application/json">(.*?)</script>', html, re.DOTALL).group(1)
    )
    assert [m["key"] for m in data["models"]] == models
    assert {f["name"] for f in data["figures"]} == set(REPORT_FIGURES)  # the rule's (workflow/rules/analysis.smk)
    # the data named is what the demo's Parquet files record
    assert data["data"]["kind"] == "demo" and data["data"]["label"].startswith("embedded demo benchmark")
    manifest = json.loads((run / "results/manifest.json").read_text())
    assert manifest["dataset"] == {"source": C.DEMO_DIR, "kind": "demo", "revision": None}
    assert "**0.0**" not in (run / "results/tables/main_results.md").read_text()  # no tied zero is bold


def test_snakemake_report(run: Path) -> None:
    snakemake(["--report", "snakemake_report.html"], run)
    page = run / "snakemake_report.html"
    assert page.stat().st_size > 50_000
    text = page.read_text(errors="replace")
    for name in ("pair_outcomes.png", "model_comparison.md", "main_results.csv", "split_accuracy.png"):
        assert name in text, name
    # every entry is described by its caption (the HTML report's), not only by its file name
    from sabre_prior.report.style import caption

    for stem in ("split_accuracy", "probe_accuracy", "pair_outcomes", "main_results", "model_comparison",
                 "diagnostics", "paper_comparison"):  # fmt: skip
        assert caption(stem)[:30] in text, stem


def test_changing_the_seed_reruns_only_the_analysis(run: Path) -> None:
    params_path = run / "params.yaml"
    text = params_path.read_text()
    params = yaml.safe_load(text)
    params["analysis"]["seed"] = 1
    params_path.write_text(yaml.safe_dump(params, sort_keys=False))
    try:
        assert yaml.safe_load(params_path.read_text())["analysis"]["seed"] == 1
        plan = snakemake(["-n", "--quiet", "rules"], run).stdout
        assert re.search(r"^intervals\s+\d+", plan, re.MULTILINE) and re.search(r"^compare\s+1", plan, re.MULTILINE)
        assert not re.search(r"^(predict|evaluate|fetch)\s", plan, re.MULTILINE), plan
    finally:
        params_path.write_text(text)
