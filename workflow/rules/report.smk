# Reporting: the paper's main table, the figures, the plot data for `dvc plots` and the HTML report.


# seconds: never submitted to a cluster
localrules:
    html_report,


rule tables:
    input:
        stage_inputs("tables"),
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
    output:
        stage_outputs("figures"),
    log:
        stage_log("figures"),
    conda:
        "../../environment.yml"
    shell:
        stage_shell("figures")


rule plot_data:
    input:
        stage_inputs("plot_data"),
    output:
        stage_outputs("plot_data"),
    log:
        stage_log("plot_data"),
    conda:
        "../../environment.yml"
    shell:
        stage_shell("plot_data")


rule html_report:
    input:
        stage_inputs("html_report"),
    output:
        stage_outputs("html_report"),
    log:
        stage_log("html_report"),
    conda:
        "../../environment.yml"
    shell:
        stage_shell("html_report")
