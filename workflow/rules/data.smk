# Data: the embedded demo benchmark (hub layout) and the self-contained Parquet splits.
# The fetch of a split reads the demo folder, a local mirror's card and split files, or (hub)
# the resolved revision in its stamp: sabre_prior.repro.pipeline.Pipeline.fetch_inputs.


rule demo_data:
    input:
        stage_inputs("demo_data"),
    output:
        directory(stage_outputs("demo_data")[0]),
    log:
        stage_log("demo_data"),
    conda:
        "../../environment.yml"
    shell:
        stage_shell("demo_data")


rule fetch:
    input:
        stage_inputs("fetch"),
    output:
        stage_outputs("fetch"),
    log:
        stage_log("fetch"),
    conda:
        "../../environment.yml"
    shell:
        stage_shell("fetch")
