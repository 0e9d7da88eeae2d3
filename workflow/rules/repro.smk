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



# The jobs' recipes (.sabre/recipes/, written by the Snakefile's planner) as DVC's stage
# `recipes` records them: this rule runs exactly when that stage is out of date (params.yaml
# or the package edited without any job's recipe changing), so that `snakemake -n all` has
# nothing to do exactly when `dvc status` is clean.
rule recipes:
    input:
        lambda wildcards: PIPELINE.recipes_inputs(ancient),
    output:
        RECIPES_DONE,
    log:
        "results/logs/recipes.log",
    shell:
        "sabre recipes > {log} 2>&1 && date +%s%N > {output}"
