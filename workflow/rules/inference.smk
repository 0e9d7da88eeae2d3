# Inference: one job per model and split, writing the official prediction format.


rule predict:
    input:
        data="data/parquet/{split}.parquet",
    output:
        "results/predictions/{model}/{split}.jsonl",
    params:
        # the model's settings, so that editing one model re-runs only that model
        settings=lambda wildcards: config["models"][wildcards.model],
        template=config.get("prompt", {}).get("template", "screening_v1"),
    log:
        "results/logs/predict/{model}/{split}.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre predict --model {wildcards.model} --split {wildcards.split} --data {input.data}"
        " --output {output} > {log} 2>&1"
