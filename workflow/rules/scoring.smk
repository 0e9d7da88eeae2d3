# Scoring under the official contract: one metrics file per model, traces per split.


rule evaluate:
    input:
        stage_inputs("evaluate"),
    output:
        stage_outputs("evaluate"),
    log:
        stage_log("evaluate"),
    conda:
        "../../environment.yml"
    shell:
        stage_shell("evaluate")
