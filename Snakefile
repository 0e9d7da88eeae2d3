# SABRE-Prior evaluation pipeline. One rule file per stage (workflow/rules/); all logic is in the
# `sabre_prior` package, called through the `sabre` command. How Snakemake and DVC share the work:
# docs/orchestration.md.

from snakemake.utils import min_version, validate

min_version("9.0")


# read first by sabre_prior.config: an invalid or tab-indented file, or a key given twice, is an
# error naming the file and line (Snakemake's own reading says neither, and keeps the last duplicate)
from sabre_prior.buildcheck import snakefile_read, snakefile_validate

RAW_PARAMS = snakefile_read("params.yaml")


configfile: "params.yaml"


# every setting that can be checked before a job runs, with messages naming the key and the
# closest valid one (sabre_prior.buildcheck), then the JSON schema as Snakemake validates configs
SAME_AS_PARAMS = snakefile_validate(config, RAW_PARAMS)
validate(config, "workflow/schemas/params.schema.yaml", set_default=False)


# results pulled with DVC (or copied) carry no Snakemake records: say how to adopt them
from sabre_prior.sync import warn_unrecorded

warn_unrecorded()


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/inference.smk"
include: "workflow/rules/scoring.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/robustness.smk"


# every output of the pipeline (the demo folder is temporary: removed once fetched)
ALL = [
    *expand(rules.fetch.output, split=SPLITS),
    *expand(rules.predict.output, model=MODELS, split=SPLITS),
    *expand(rules.evaluate.output, model=MODELS),
    *expand(rules.intervals.output, model=MODELS),
    *rules.tables.output,
    *rules.figures.output,
    *rules.plot_data.output,
    *rules.manifest.output,
    *rules.compare.output,
    *rules.diagnose.output,
    *rules.paper_compare.output,
    *expand(rules.prompt_run.output, template=TEMPLATES, model=MODELS),
    *expand(rules.audit_run.output, model=MODELS, repeat=REPEATS),
    *expand(rules.audit.output, model=MODELS),
    *rules.stability.output,
    *rules.prompt_sensitivity.output,
    *rules.html_report.output,
]


rule all:
    input:
        ALL,
    default_target: True


# After a run started by Snakemake: dvc.lock records what it made (sabre_prior.sync); under
# `dvc repro`, DVC records it. Not run on a dry run or a failed run.
onsuccess:
    from sabre_prior.sync import after_run

    after_run(ALL, SAME_AS_PARAMS)
