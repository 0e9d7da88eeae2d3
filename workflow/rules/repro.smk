# Reproducibility outputs: the run manifest and the plot data for `dvc plots`.


rule manifest:
    input:
        stage_inputs("manifest"),
        stamp=stage_stamp("manifest"),
    output:
        stage_outputs("manifest"),
    log:
        stage_log("manifest"),
    conda:
        "../../environment.yml"
    shell:
        stage_shell("manifest")


rule plot_data:
    input:
        stage_inputs("plot_data"),
        stamp=stage_stamp("plot_data"),
    output:
        stage_outputs("plot_data"),
    log:
        stage_log("plot_data"),
    conda:
        "../../environment.yml"
    shell:
        stage_shell("plot_data")
