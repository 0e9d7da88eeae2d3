# Aggregation: the paper's main table and the figures.


rule tables:
    input:
        expand("results/metrics/{model}.json", model=MODELS),
    output:
        expand("results/tables/main_results.{ext}", ext=["md", "csv", "tex"]),
    params:
        models=config["models"],
    log:
        "results/logs/tables.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre tables --metrics-dir results/metrics --outdir results/tables > {log} 2>&1"


rule figures:
    input:
        expand("results/metrics/{model}.json", model=MODELS),
    output:
        expand("results/figures/{fig}.{ext}", fig=FIGURES, ext=["png", "pdf"]),
    params:
        models=config["models"],
    log:
        "results/logs/figures.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre figures --metrics-dir results/metrics --outdir results/figures > {log} 2>&1"
