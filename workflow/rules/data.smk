# Data: the embedded demo benchmark (hub layout) and the self-contained Parquet splits.


rule demo_data:
    output:
        directory("data/demo"),
    params:
        scale=DEMO_SETTINGS.get("scale", "small"),
        seed=DEMO_SETTINGS.get("seed", 0),
    log:
        "results/logs/demo_data.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre demo-data --output {output} --scale {params.scale} --seed {params.seed} > {log} 2>&1"


rule fetch:
    input:
        fetch_inputs,
    output:
        "data/parquet/{split}.parquet",
    params:
        # read by `sabre fetch` from params.yaml; listed here so a change re-runs the step
        source=SOURCE,
        revision=config["dataset"].get("revision"),
    log:
        "results/logs/fetch/{split}.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre fetch --split {wildcards.split} --output {output} > {log} 2>&1"
