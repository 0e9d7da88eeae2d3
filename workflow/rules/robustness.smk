# Robustness (docs/prompts.md, docs/stability.md): every template of prompt.templates per model
# (the main template's answers are reused, never paid twice), the stability audit's repeats of a
# fixed, seeded subset (none while audit.repeats is 1; repeat 0 is the main run), and the tables
# and figure that read them. Prompt and audit runs share the model's budget and journal.

localrules:
    audit,
    stability,
    prompt_sensitivity,
    batch_invariance,


rule prompt_run:
    input:
        expand("data/parquet/{split}.parquet", split=SPLITS),
        expand("results/predictions/{{model}}/{split}.jsonl", split=SPLITS),
        code("prompt_run.py", "inference", "scoring", "data"),
    output:
        expand("results/prompts/{{template}}/{{model}}/predictions/{split}.jsonl", split=SPLITS),
        expand("results/prompts/{{template}}/{{model}}/usage/{split}.json", split=SPLITS),
        expand("results/prompts/{{template}}/{{model}}/traces/{split}.jsonl", split=SPLITS),
        "results/prompts/{template}/{model}/metrics.json",
    params:
        settings=settings(*ANSWERING, "splits", "prompt.templates.0"),
    resources:
        api_jobs=api_job,
    log:
        "results/logs/prompt_run/{template}/{model}.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre --log {log} prompt-run --template {wildcards.template} --model {wildcards.model} --data data/parquet"
        " --outdir results/prompts/{wildcards.template}/{wildcards.model} --settings {params.settings:q}"


rule audit_run:
    input:
        expand("data/parquet/{split}.parquet", split=SPLITS),
        code("audit_run.py", "inference", "scoring", "data"),
    output:
        "results/audit/{model}/r{repeat}.json",
    params:
        # not audit.repeats: raising it adds jobs and re-runs none of the earlier repeats
        settings=settings(*ANSWERING, "splits", "audit.questions", "audit.seed", "prompt.templates.0"),
    resources:
        api_jobs=api_job,
    log:
        "results/logs/audit_run/{model}/{repeat}.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre --log {log} audit-run --model {wildcards.model} --repeat {wildcards.repeat} --data data/parquet"
        " --output {output} --settings {params.settings:q}"


rule audit:
    input:
        expand("data/parquet/{split}.parquet", split=SPLITS),
        expand("results/traces/{{model}}/{split}.jsonl", split=SPLITS),
        expand("results/audit/{{model}}/r{repeat}.json", repeat=REPEATS),
        code("audit.py", "audit_run.py", "analysis", "report", "scoring", "inference", "data"),
    output:
        "results/audit/{model}.json",
    params:
        settings=settings(
            "splits", "audit", "prompt.templates.0", "analysis.bootstrap_resamples", "analysis.seed",
            "analysis.confidence",
        ),
    log:
        "results/logs/audit/{model}.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre --log {log} audit --model {wildcards.model} --data data/parquet --traces-dir results/traces/{wildcards.model}"
        " --runs-dir results/audit/{wildcards.model} --output {output} --settings {params.settings:q}"


# Batch invariance (docs/parity.md): a model with `batch_audit: true` has the audit's subset asked
# again at batch size 1 (its own journal; a local model's job asks for its GPUs like predict), and
# the table reports the flip rate against the configured batch size.
rule batch_audit:
    input:
        expand("data/parquet/{split}.parquet", split=SPLITS),
        expand("results/traces/{{model}}/{split}.jsonl", split=SPLITS),
        code("batch_audit.py", "audit.py", "audit_run.py", "analysis", "report", "scoring", "inference", "data"),
    output:
        "results/audit/batch/{model}.json",
    params:
        settings=settings(
            "models.{model}", "!models.{model}.display_name", "splits", "audit.questions", "audit.seed",
            "prompt.templates.0", "analysis.bootstrap_resamples", "analysis.seed", "analysis.confidence",
        ),
    wildcard_constraints:
        model=one_of(BATCH_AUDITED),
    threads: model_resource("threads")
    resources:
        gpu=model_resource("gpu"),
        gpu_model=model_resource("gpu_model"),
        mem_mb=model_resource("mem_mb"),
        runtime=model_resource("runtime"),
        api_jobs=api_job,
    log:
        "results/logs/batch_audit/{model}.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre --log {log} batch-audit --model {wildcards.model} --data data/parquet --traces-dir results/traces/{wildcards.model}"
        " --output {output} --no-progress --settings {params.settings:q}"


rule batch_invariance:
    input:
        expand("results/audit/batch/{model}.json", model=BATCH_AUDITED),
        code("batch_audit.py", "audit.py", "audit_run.py", "analysis", "report", "scoring", "inference", "data"),
    output:
        report("results/tables/batch_invariance.md", caption=caption("batch_invariance"), category="Analysis", subcategory="Batch invariance"),
        "results/tables/batch_invariance.csv",
        report("results/figures/batch_invariance.png", caption=caption("batch_invariance"), category="Figures", subcategory="Batch invariance"),
        "results/figures/batch_invariance.pdf",
    params:
        settings=settings("models", "splits", "analysis.bootstrap_resamples", "analysis.seed", "analysis.confidence"),
    log:
        "results/logs/batch_invariance.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre --log {log} batch-invariance --runs-dir results/audit/batch --outdir results/tables"
        " --figures-dir results/figures --settings {params.settings:q}"


rule stability:
    input:
        expand("results/audit/{model}.json", model=MODELS),
        expand("results/usage/{model}/{split}.json", model=MODELS, split=SPLITS),
        expand("results/prompts/{template}/{model}/usage/{split}.json", template=TEMPLATES, model=MODELS, split=SPLITS),
        code("analysis", "report", "scoring", "inference", "data"),
    output:
        report("results/tables/stability.md", caption=caption("stability"), category="Analysis", subcategory="API stability"),
        "results/tables/stability.csv",
        "results/tables/cost.csv",  # cost by model, template, repeat and split
    params:
        settings=settings("models", "splits", "audit", "prompt.templates", "analysis.report.max_nonanswer_rate"),
    log:
        "results/logs/stability.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre --log {log} stability --audit-dir results/audit --usage-dir results/usage --prompts-dir results/prompts"
        " --outdir results/tables --settings {params.settings:q}"


rule prompt_sensitivity:
    input:
        expand("results/prompts/{template}/{model}/traces/{split}.jsonl", template=TEMPLATES, model=MODELS, split=SPLITS),
        code("analysis", "report", "scoring", "inference", "data"),
    output:
        report("results/tables/prompt_sensitivity.md", caption=caption("prompt_sensitivity"), category="Analysis", subcategory="Prompt sensitivity"),
        "results/tables/prompt_sensitivity.csv",
        report("results/figures/prompt_sensitivity.png", caption=caption("prompt_sensitivity"), category="Figures", subcategory="Prompt sensitivity"),
        "results/figures/prompt_sensitivity.pdf",
    params:
        settings=settings(
            "models", "splits", "prompt.templates", "analysis.bootstrap_resamples", "analysis.seed",
            "analysis.confidence", "analysis.report.max_nonanswer_rate",
        ),
    log:
        "results/logs/prompt_sensitivity.log",
    conda:
        "../../environment.yml"
    shell:
        "sabre --log {log} prompt-sensitivity --prompts-dir results/prompts --outdir results/tables"
        " --figures-dir results/figures --settings {params.settings:q}"
