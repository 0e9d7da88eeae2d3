# Inference: one job per model and split, writing the official prediction format and the usage
# summary (calls, tokens, estimated cost). API keys never pass through Snakemake: `sabre predict`
# reads the variable named by the model's `api_key_env` at run time and stops before any call when
# it is unset. A model's jobs share one budget and pacing per provider and model (.sabre/pacing/),
# so running them at once does not multiply its rate against the provider's limit. Completed calls
# are kept in the response journal (.sabre/journal/): a killed, failed or re-run job pays only for
# the calls it had not finished. A model's display_name is not among its settings here: renaming a
# model re-runs only what shows the name.


rule predict:
    input:
        data="data/parquet/{split}.parquet",
        code=code("inference", "scoring", "data"),
    output:
        predictions="results/predictions/{model}/{split}.jsonl",
        usage="results/usage/{model}/{split}.json",
    params:
        settings=settings(*ANSWERING, "prompt.templates.0"),
        prefix=cuda_prefix,
    wildcard_constraints:
        model=one_of(OTHER_MODELS),
    threads: model_resource("threads")
    resources:
        gpu=model_resource("gpu"),
        gpu_model=model_resource("gpu_model"),
        mem_mb=model_resource("mem_mb"),
        runtime=model_resource("runtime"),
        api_jobs=api_job,
    log:
        "results/logs/predict/{model}/{split}.log",
    conda:
        "../../environment.yml"
    shell:
        "{params.prefix}sabre --log {log} predict --model {wildcards.model} --split {wildcards.split}"
        " --data {input.data} --output {output.predictions} --usage {output.usage} --settings {params.settings:q}"


# Local models (transformers, vllm): the same job as a rule of its own, so that a cluster run
# submits only these (GPU) jobs and keeps API, scoring and report jobs on the submitting node.
use rule predict as predict_local with:
    wildcard_constraints:
        model=one_of(LOCAL_MODELS),
