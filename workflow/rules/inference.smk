# Inference: one job per model and split, writing the official prediction format
# and the usage summary (calls, tokens, estimated cost).
#
# API keys never pass through Snakemake: `sabre predict` reads the variable named
# by the model's `api_key_env` from the environment at run time and stops before
# any call when it is unset. (Snakemake's `envvars:` is workflow-wide and would
# demand every provider's key even for runs that need none.)
#
# API jobs ask for one `api_jobs` resource: `snakemake --resources api_jobs=1`
# runs one API job at a time, so that the splits of one model do not multiply its
# concurrency against the provider's rate limit. Completed calls are kept in the
# response journal (.sabre/journal/, outside the tracked outputs): a killed or
# failed job re-runs only the calls it had not finished.


rule predict:
    input:
        stage_inputs("predict"),
    wildcard_constraints:
        model=one_of(OTHER_MODELS),
    output:
        stage_outputs("predict"),
    params:
        cuda=cuda_prefix,
    threads: model_resource("threads")
    resources:
        gpu=model_resource("gpu"),
        gpu_model=model_resource("gpu_model"),
        mem_mb=model_resource("mem_mb"),
        runtime=model_resource("runtime"),
        api_jobs=lambda wc: int(backend_kind(config["models"][wc.model].get("backend")) == "api"),
    log:
        stage_log("predict"),
    conda:
        "../../environment.yml"
    shell:
        stage_shell("predict", prefix="{params.cuda}")


# Local models (transformers, vllm): the same job as a rule of its own, so that a
# cluster run submits only these (GPU) jobs and keeps API, scoring and report
# jobs on the submitting node (`localrules` in common.smk).
use rule predict as predict_local with:
    wildcard_constraints:
        model=one_of(LOCAL_MODELS),
