# Data: the demo benchmark (when dataset.source is `demo`) and each split fetched to
# self-contained Parquet with `datasets.load_dataset` (a hub repo, a local copy or the demo).
# Both run on the submitting node of a cluster (the hub needs the network).

localrules:
    demo_data,
    fetch,


rule demo_data:
    input:
        code("data"),
    output:
        temp(directory("data/demo")),
    params:
        scale=config["dataset"].get("demo", {}).get("scale", "small"),
        seed=config["dataset"].get("demo", {}).get("seed", 0),
    log:
        "results/logs/demo_data.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre --log {log} demo-data --output {output} --scale {params.scale} --seed {params.seed}"


rule fetch:
    input:
        source_files,
        code("data"),
    output:
        "data/parquet/{split}.parquet",
    params:
        settings=settings("dataset.source", "dataset.revision"),
        # a hub source: the digest of the split's files at the commit served now (a moved revision re-fetches)
        hub_files=lambda wildcards: HUB_FILES.get(wildcards.split, ""),
    log:
        "results/logs/fetch/{split}.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre --log {log} fetch --split {wildcards.split} --output {output} --settings {params.settings:q}"
