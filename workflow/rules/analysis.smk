# Analysis beyond the paper (sabre_prior.analysis): bootstrap intervals, paired model comparisons,
# world-prior diagnostics, the comparison with the paper and the HTML report that shows them.

localrules:
    intervals,
    compare,
    diagnose,
    paper_compare,
    parity,
    html_report,


rule intervals:
    input:
        traces=expand("results/traces/{{model}}/{split}.jsonl", split=SPLITS),
        metrics="results/metrics/{model}.json",
        code=code("analysis", "report", "scoring", "inference", "data"),
    output:
        "results/intervals/{model}.json",
    params:
        settings=settings("splits", "analysis.bootstrap_resamples", "analysis.seed", "analysis.confidence"),
    log:
        "results/logs/intervals/{model}.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre --log {log} intervals --model {wildcards.model} --traces-dir results/traces/{wildcards.model}"
        " --metrics {input.metrics} --output {output} --settings {params.settings:q}"


rule compare:
    input:
        expand("results/traces/{model}/{split}.jsonl", model=MODELS, split=SPLITS),
        code("analysis", "report", "scoring", "inference", "data"),
    output:
        report("results/tables/model_comparison.md", caption=caption("model_comparison"), category="Analysis", subcategory="Paired model comparison"),
        "results/tables/model_comparison.csv",
    params:
        settings=settings(
            "models", "splits", "analysis.bootstrap_resamples", "analysis.seed", "analysis.confidence",
            "analysis.report.max_nonanswer_rate",
        ),
    log:
        "results/logs/compare.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre --log {log} compare --traces-dir results/traces --outdir results/tables --settings {params.settings:q}"


rule diagnose:
    input:
        expand("results/traces/{model}/{split}.jsonl", model=MODELS, split=SPLITS),
        expand("data/parquet/{split}.parquet", split=SPLITS),
        code("analysis", "report", "scoring", "inference", "data"),
    output:
        "results/analysis/diagnostics.json",
        report("results/tables/diagnostics.md", caption=caption("diagnostics"), category="Analysis", subcategory="World-prior diagnostics"),
        "results/tables/diagnostics_pair_outcomes.csv",
        "results/tables/diagnostics_probes.csv",
        "results/tables/diagnostics_attribute.csv",
        "results/tables/diagnostics_language.csv",
        "results/tables/diagnostics_parsing.csv",
        report("results/figures/pair_outcomes.png", caption=caption("pair_outcomes"), category="Figures", subcategory="World-prior diagnostics"),
        "results/figures/pair_outcomes.pdf",
    params:
        settings=settings("models", "splits", "analysis.report.max_nonanswer_rate"),
    log:
        "results/logs/diagnose.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre --log {log} diagnose --traces-dir results/traces --data data/parquet --tables-dir results/tables"
        " --figures-dir results/figures --json results/analysis/diagnostics.json --settings {params.settings:q}"


rule paper_compare:
    input:
        expand("results/intervals/{model}.json", model=MODELS),
        code("analysis", "report", "scoring", "inference", "data"),
    output:
        report("results/tables/paper_comparison.md", caption=caption("paper_comparison"), category="Analysis", subcategory="Comparison with the paper"),
        "results/tables/paper_comparison.csv",
    params:
        settings=settings("models", "splits", "analysis.report.max_nonanswer_rate"),
    log:
        "results/logs/paper_compare.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre --log {log} paper-compare --intervals-dir results/intervals --outdir results/tables --settings {params.settings:q}"


# Models serving one checkpoint through different backends (the same model_id and revision, or
# same_model_as), compared question by question; a pair that differs is flagged "do not pool"
# (docs/parity.md). With no such pair the table and figure say so.
rule parity:
    input:
        expand("results/traces/{model}/{split}.jsonl", model=MODELS, split=SPLITS),
        code("analysis", "report", "scoring", "inference", "data"),
    output:
        report("results/tables/backend_parity.md", caption=caption("backend_parity"), category="Analysis", subcategory="Backend parity"),
        "results/tables/backend_parity.csv",
        report("results/figures/backend_parity.png", caption=caption("backend_parity"), category="Figures", subcategory="Backend parity"),
        "results/figures/backend_parity.pdf",
    params:
        settings=settings("models", "splits", "analysis.bootstrap_resamples", "analysis.seed", "analysis.confidence"),
    log:
        "results/logs/parity.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre --log {log} parity --traces-dir results/traces --outdir results/tables --figures-dir results/figures"
        " --settings {params.settings:q}"


from sabre_prior.contracts import REPORT_FIGURES


rule html_report:
    input:
        expand("results/traces/{model}/{split}.jsonl", model=MODELS, split=SPLITS),
        expand("data/parquet/{split}.parquet", split=SPLITS),
        expand("results/intervals/{model}.json", model=MODELS),
        "results/analysis/diagnostics.json",
        "results/tables/model_comparison.csv",
        "results/tables/paper_comparison.csv",
        "results/tables/prompt_sensitivity.csv",
        "results/tables/stability.csv",
        "results/tables/backend_parity.csv",
        "results/tables/batch_invariance.csv",
        expand("results/figures/{figure}.png", figure=REPORT_FIGURES),
        code("analysis", "report", "scoring", "inference", "data"),
    output:
        "results/report/index.html",
    params:
        settings=settings(
            "models", "splits", "analysis.report", "analysis.bootstrap_resamples", "analysis.seed", "analysis.confidence",
        ),
        figures=" ".join(f"--figure results/figures/{f}.png" for f in REPORT_FIGURES),
    log:
        "results/logs/html_report.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre --log {log} report --traces-dir results/traces --data data/parquet --intervals-dir results/intervals"
        " --diagnostics results/analysis/diagnostics.json --comparison results/tables/model_comparison.csv"
        " --paper results/tables/paper_comparison.csv --sensitivity results/tables/prompt_sensitivity.csv"
        " --stability results/tables/stability.csv --parity results/tables/backend_parity.csv"
        " --invariance results/tables/batch_invariance.csv {params.figures} --output {output} --settings {params.settings:q}"
