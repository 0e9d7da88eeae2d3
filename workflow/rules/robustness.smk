# Numbers you can trust (issue 21): the prompt-sensitivity runs (one job per template and model,
# all splits; template = the `template` wildcard, values from prompt.templates), the API stability
# audit (one job per model) and their tables. Declared in sabre_prior.repro.pipeline like every
# other stage; docs/prompts.md and docs/stability.md.


localrules:
    prompt_sensitivity,
    stability,


rule prompt_run:
    input:
        stage_inputs("prompt_run"),
        stamp=stage_stamp("prompt_run"),
    output:
        stage_outputs("prompt_run"),
    resources:
        api_jobs=lambda wc: int(backend_kind(config["models"][wc.model].get("backend")) == "api"),
    log:
        stage_log("prompt_run"),
    conda:
        "../../environment.yml"
    shell:
        stage_shell("prompt_run")


rule audit:
    input:
        stage_inputs("audit"),
        stamp=stage_stamp("audit"),
    output:
        stage_outputs("audit"),
    resources:
        api_jobs=lambda wc: int(backend_kind(config["models"][wc.model].get("backend")) == "api"),
    log:
        stage_log("audit"),
    conda:
        "../../environment.yml"
    shell:
        stage_shell("audit")


rule prompt_sensitivity:
    input:
        stage_inputs("prompt_sensitivity"),
        stamp=stage_stamp("prompt_sensitivity"),
    output:
        stage_outputs("prompt_sensitivity"),
    log:
        stage_log("prompt_sensitivity"),
    conda:
        "../../environment.yml"
    shell:
        stage_shell("prompt_sensitivity")


rule stability:
    input:
        stage_inputs("stability"),
        stamp=stage_stamp("stability"),
    output:
        stage_outputs("stability"),
    log:
        stage_log("stability"),
    conda:
        "../../environment.yml"
    shell:
        stage_shell("stability")
