# Scoring under the official contract: one metrics file per model, traces per split.


rule evaluate:
    input:
        predictions=expand("results/predictions/{{model}}/{split}.jsonl", split=SPLITS),
        data=expand("data/parquet/{split}.parquet", split=SPLITS),
        # refused questions (no prediction) are counted in the metrics' `refused`
        usage=expand("results/usage/{{model}}/{split}.json", split=SPLITS),
    output:
        metrics="results/metrics/{model}.json",
        traces=expand("results/traces/{{model}}/{split}.jsonl", split=SPLITS),
    params:
        # read by `sabre evaluate --params`; listed so a change re-runs the step
        splits=SPLITS,
    log:
        "results/logs/evaluate/{model}.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre evaluate --predictions results/predictions/{wildcards.model} --data data/parquet"
        " --params params.yaml --output {output.metrics} --trace-dir results/traces/{wildcards.model}"
        " --usage results/usage/{wildcards.model}"
        " > {log} 2>&1"
