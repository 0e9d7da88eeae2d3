# The paper's outputs: the main table (md, csv, tex; with intervals and the failure-aware scores),
# the accuracy figures, the data of `dvc plots show`, and the run manifest. The data source the
# tables name is what the Parquet files record.

localrules:
    tables,
    figures,
    plot_data,
    manifest,


rule tables:
    input:
        expand("results/metrics/{model}.json", model=MODELS),
        expand("results/intervals/{model}.json", model=MODELS),
        expand("data/parquet/{split}.parquet", split=SPLITS),
        # a model whose score depends on the backend or the batch size is marked beside its score
        "results/tables/backend_parity.csv",
        "results/tables/batch_invariance.csv",
        code("report", "analysis", "scoring", "inference", "data"),
    output:
        report("results/tables/main_results.md", caption=caption("main_results"), category="Tables", subcategory="Main results"),
        report("results/tables/main_results.csv", caption=caption("main_results"), category="Tables", subcategory="Main results"),
        "results/tables/main_results.tex",
        report("results/tables/main_results_ci.csv", caption=caption("main_results_ci"), category="Tables", subcategory="Main results"),
        report("results/tables/failure_aware.md", caption=caption("failure_aware"), category="Tables", subcategory="Failure-aware scores"),
        "results/tables/failure_aware.csv",
    params:
        settings=settings("models", "splits", "analysis.report.max_nonanswer_rate"),
    log:
        "results/logs/tables.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre --log {log} tables --metrics-dir results/metrics --intervals-dir results/intervals --data data/parquet"
        " --parity results/tables/backend_parity.csv --invariance results/tables/batch_invariance.csv"
        " --outdir results/tables --settings {params.settings:q}"


rule figures:
    input:
        expand("results/metrics/{model}.json", model=MODELS),
        expand("results/intervals/{model}.json", model=MODELS),
        expand("data/parquet/{split}.parquet", split=SPLITS),
        code("report", "analysis", "scoring", "inference", "data"),
    output:
        report("results/figures/split_accuracy.png", caption=caption("split_accuracy"), category="Figures", subcategory="Accuracy"),
        "results/figures/split_accuracy.pdf",
        report("results/figures/probe_accuracy.png", caption=caption("probe_accuracy"), category="Figures", subcategory="Accuracy"),
        "results/figures/probe_accuracy.pdf",
    params:
        settings=settings("models", "splits", "analysis.report.max_nonanswer_rate"),
    log:
        "results/logs/figures.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre --log {log} figures --metrics-dir results/metrics --intervals-dir results/intervals --data data/parquet"
        " --outdir results/figures --settings {params.settings:q}"


rule plot_data:
    input:
        expand("results/metrics/{model}.json", model=MODELS),
        code("report", "analysis", "scoring", "inference", "data"),
    output:
        "results/plots/split_accuracy.csv",
    params:
        settings=settings("models", "splits"),
    log:
        "results/logs/plot_data.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre --log {log} plot-data --metrics-dir results/metrics --output {output} --settings {params.settings:q}"


rule manifest:
    input:
        expand("data/parquet/{split}.parquet", split=SPLITS),
        expand("results/usage/{model}/{split}.json", model=MODELS, split=SPLITS),  # the served model versions
        code("manifest.py", "analysis", "report", "scoring", "inference", "data"),
    output:
        "results/manifest.json",
    params:
        settings=settings("models", "splits", "dataset"),
    log:
        "results/logs/manifest.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre --log {log} manifest --output {output} --data data/parquet --usage-dir results/usage --settings {params.settings:q}"
