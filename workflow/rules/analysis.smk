# Analysis beyond the paper (sabre_prior.analysis): bootstrap intervals, paired model
# comparisons, world-prior diagnostics, the comparison with the paper and the HTML report.

ANALYSIS = config.get("analysis") or {}
BOOTSTRAP = {k: ANALYSIS.get(k) for k in ("bootstrap_resamples", "seed", "confidence")}
PAPER_NAMES = {m: s["paper_name"] for m, s in config["models"].items() if s.get("paper_name")}
DIAGNOSTIC_TABLES = list(C.DIAGNOSTIC_TABLES)
ALL_TRACES = expand("results/traces/{model}/{split}.jsonl", model=MODELS, split=SPLITS)


# seconds each: never submitted to a cluster
localrules:
    intervals,
    compare,
    diagnose,
    paper_compare,
    html_report,


#: Everything the analysis rules write (added to `all` in common.smk).
ANALYSIS_OUTPUTS = [
    *expand("results/intervals/{model}.json", model=MODELS),
    *expand("results/tables/model_comparison.{ext}", ext=["md", "csv"]),
    *expand("results/tables/{name}", name=DIAGNOSTIC_TABLES),
    *expand("results/figures/{fig}.{ext}", fig=C.PAIR_OUTCOMES_FIGURE, ext=["png", "pdf"]),
    *expand("results/tables/paper_comparison.{ext}", ext=["md", "csv"]),
    "results/tables/main_results_ci.csv",
    C.REPORT_PATH,
]


rule intervals:
    input:
        metrics="results/metrics/{model}.json",
        traces=expand("results/traces/{{model}}/{split}.jsonl", split=SPLITS),
    output:
        "results/intervals/{model}.json",
    params:
        bootstrap=BOOTSTRAP,
    log:
        "results/logs/intervals/{model}.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre intervals --model {wildcards.model} --traces-dir results/traces/{wildcards.model}"
        " --metrics {input.metrics} --output {output} > {log} 2>&1"


rule compare:
    input:
        ALL_TRACES,
    output:
        md=report("results/tables/model_comparison.md", category="Analysis", subcategory="Paired model comparison"),
        csv="results/tables/model_comparison.csv",
    params:
        bootstrap=BOOTSTRAP,
        models=MODELS,
    log:
        "results/logs/compare.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre compare --traces-dir results/traces --outdir results/tables > {log} 2>&1"


rule diagnose:
    input:
        traces=ALL_TRACES,
        data=expand("data/parquet/{split}.parquet", split=[s for s in SPLITS if s not in C.PAIRED_SPLITS]),
    output:
        json=C.DIAGNOSTICS_JSON,
        md=report("results/tables/diagnostics.md", category="Analysis", subcategory="World-prior diagnostics"),
        csv=expand("results/tables/{name}", name=DIAGNOSTIC_TABLES[1:]),
        png=report(f"results/figures/{C.PAIR_OUTCOMES_FIGURE}.png", category="Figures", subcategory="World-prior diagnostics"),
        pdf=f"results/figures/{C.PAIR_OUTCOMES_FIGURE}.pdf",
    params:
        models=config["models"],
    log:
        "results/logs/diagnose.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre diagnose --traces-dir results/traces --data data/parquet --tables-dir results/tables"
        " --figures-dir results/figures --json {output.json} > {log} 2>&1"


rule paper_compare:
    input:
        expand("results/intervals/{model}.json", model=list(PAPER_NAMES)),
    output:
        md=report("results/tables/paper_comparison.md", category="Analysis", subcategory="Comparison with the paper"),
        csv="results/tables/paper_comparison.csv",
    params:
        paper_names=PAPER_NAMES,
    log:
        "results/logs/paper_compare.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre paper-compare --intervals-dir results/intervals --outdir results/tables > {log} 2>&1"


rule html_report:
    input:
        traces=ALL_TRACES,
        data=expand("data/parquet/{split}.parquet", split=SPLITS),
        intervals=expand("results/intervals/{model}.json", model=MODELS),
        diagnostics=C.DIAGNOSTICS_JSON,
        comparison="results/tables/model_comparison.csv",
        paper="results/tables/paper_comparison.csv",
        figures=expand("results/figures/{fig}.png", fig=[*FIGURES, C.PAIR_OUTCOMES_FIGURE]),
    output:
        C.REPORT_PATH,
    params:
        figures=lambda wildcards, input: " ".join(f"--figure {f}" for f in input.figures),
        models=config["models"],
        thumbnails=ANALYSIS.get("report"),
    log:
        "results/logs/html_report.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre report --traces-dir results/traces --data data/parquet --intervals-dir results/intervals"
        " --diagnostics {input.diagnostics} --comparison {input.comparison} --paper {input.paper}"
        " {params.figures} --output {output} > {log} 2>&1"
