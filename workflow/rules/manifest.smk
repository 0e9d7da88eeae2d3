# Reproducibility outputs: the run manifest and the plot data for `dvc plots`.
# Both are tracked by DVC like every other artifact (dvc.yaml: stages manifest, plot_data).


rule manifest:
    input:
        data=expand("data/parquet/{split}.parquet", split=SPLITS),
        params="params.yaml",
    output:
        MANIFEST,
    params:
        models=config["models"],
    log:
        "results/logs/manifest.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre manifest --output {output} --data data/parquet > {log} 2>&1"


rule plot_data:
    input:
        expand("results/metrics/{model}.json", model=MODELS),
    output:
        PLOT_DATA,
    params:
        models=config["models"],
    log:
        "results/logs/plot_data.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre plot-data --metrics-dir results/metrics --output {output} > {log} 2>&1"
