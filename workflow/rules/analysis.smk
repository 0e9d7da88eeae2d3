# Analysis beyond the paper (sabre_prior.analysis): bootstrap intervals, paired model
# comparisons, world-prior diagnostics, the comparison with the paper and the HTML report.


# seconds each: never submitted to a cluster
localrules:
    intervals,
    compare,
    diagnose,
    paper_compare,
    html_report,


rule intervals:
    input:
        stage_inputs("intervals"),
        stamp=stage_stamp("intervals"),
    output:
        stage_outputs("intervals"),
    log:
        stage_log("intervals"),
    conda:
        "../../environment.yml"
    shell:
        stage_shell("intervals")


rule compare:
    input:
        stage_inputs("compare"),
        stamp=stage_stamp("compare"),
    output:
        stage_outputs("compare"),
    log:
        stage_log("compare"),
    conda:
        "../../environment.yml"
    shell:
        stage_shell("compare")


rule diagnose:
    input:
        stage_inputs("diagnose"),
        stamp=stage_stamp("diagnose"),
    output:
        stage_outputs("diagnose"),
    log:
        stage_log("diagnose"),
    conda:
        "../../environment.yml"
    shell:
        stage_shell("diagnose")


rule paper_compare:
    input:
        stage_inputs("paper_compare"),
        stamp=stage_stamp("paper_compare"),
    output:
        stage_outputs("paper_compare"),
    log:
        stage_log("paper_compare"),
    conda:
        "../../environment.yml"
    shell:
        stage_shell("paper_compare")


rule html_report:
    input:
        stage_inputs("html_report"),
        stamp=stage_stamp("html_report"),
    output:
        stage_outputs("html_report"),
    log:
        stage_log("html_report"),
    conda:
        "../../environment.yml"
    shell:
        stage_shell("html_report")
