# Aggregation: the paper's main table and the figures.


rule tables:
    input:
        metrics=expand("results/metrics/{model}.json", model=MODELS),
        intervals=expand("results/intervals/{model}.json", model=MODELS),
    output:
        md=report("results/tables/main_results.md", category="Tables", subcategory="Main results"),
        csv=report("results/tables/main_results.csv", category="Tables", subcategory="Main results"),
        tex="results/tables/main_results.tex",
        ci=report("results/tables/main_results_ci.csv", category="Tables", subcategory="Main results"),
    params:
        models=config["models"],
    log:
        "results/logs/tables.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre tables --metrics-dir results/metrics --intervals-dir results/intervals --outdir results/tables"
        " > {log} 2>&1"


rule figures:
    input:
        metrics=expand("results/metrics/{model}.json", model=MODELS),
        intervals=expand("results/intervals/{model}.json", model=MODELS),
    output:
        png=[report(f, category="Figures", subcategory="Accuracy") for f in expand("results/figures/{fig}.png", fig=FIGURES)],
        pdf=expand("results/figures/{fig}.pdf", fig=FIGURES),
    params:
        models=config["models"],
    log:
        "results/logs/figures.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre figures --metrics-dir results/metrics --intervals-dir results/intervals --outdir results/figures"
        " > {log} 2>&1"
