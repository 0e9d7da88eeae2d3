# Scoring under the official contract: per model, every split's predictions -> metrics and the
# per-question traces (raw, normalized and gold answers, verdict). The usage summaries name the
# refused questions (counted in the metrics' `refused`).

localrules:
    evaluate,


rule evaluate:
    input:
        predictions=expand("results/predictions/{{model}}/{split}.jsonl", split=SPLITS),
        data=expand("data/parquet/{split}.parquet", split=SPLITS),
        usage=expand("results/usage/{{model}}/{split}.json", split=SPLITS),
        code=code("scoring", "data"),
    output:
        metrics="results/metrics/{model}.json",
        traces=expand("results/traces/{{model}}/{split}.jsonl", split=SPLITS),
        headline="results/headline/{model}.json",  # what `dvc metrics show` prints, a row per model
    params:
        settings=settings("splits"),
    log:
        "results/logs/evaluate/{model}.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre --log {log} evaluate --predictions results/predictions/{wildcards.model} --data data/parquet"
        " --output {output.metrics} --trace-dir results/traces/{wildcards.model} --headline {output.headline}"
        " --usage results/usage/{wildcards.model} --settings {params.settings:q}"
