# Analysis beyond the paper (sabre_prior.analysis): bootstrap intervals, paired model
# comparisons, world-prior diagnostics and the comparison with the paper (the HTML report
# that shows them is in report.smk).


# seconds each: never submitted to a cluster
localrules:
    intervals,
    compare,
    diagnose,
    paper_compare,


rule intervals:
    input:
        stage_inputs("intervals"),
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
    output:
        stage_outputs("paper_compare"),
    log:
        stage_log("paper_compare"),
    conda:
        "../../environment.yml"
    shell:
        stage_shell("paper_compare")

