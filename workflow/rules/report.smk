# Aggregation: the paper's main table and the figures.


rule tables:
    input:
        stage_inputs("tables"),
        stamp=stage_stamp("tables"),
    output:
        stage_outputs("tables"),
    log:
        stage_log("tables"),
    conda:
        "../../environment.yml"
    shell:
        stage_shell("tables")


rule figures:
    input:
        stage_inputs("figures"),
        stamp=stage_stamp("figures"),
    output:
        stage_outputs("figures"),
    log:
        stage_log("figures"),
    conda:
        "../../environment.yml"
    shell:
        stage_shell("figures")
