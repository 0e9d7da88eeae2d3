# Reproducibility outputs: the run manifest.


rule manifest:
    input:
        stage_inputs("manifest"),
    output:
        stage_outputs("manifest"),
    log:
        stage_log("manifest"),
    conda:
        "../../environment.yml"
    shell:
        stage_shell("manifest")

