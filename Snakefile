# SABRE-Prior evaluation pipeline. One rule file per stage (workflow/rules/); all logic is in the
# `sabre_prior` package, called through the `sabre` command. How Snakemake and DVC share the work:
# docs/orchestration.md.

import sys
from pathlib import Path

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
    *rules.parity.output,
    *expand(rules.batch_audit.output, model=BATCH_AUDITED),
    *rules.batch_invariance.output,
    *rules.html_report.output,
]


# the files DVC's stage depends on besides params.yaml (dvc.yaml: deps), for the rule dvc_lock
DVC_DEPS = [
    "Snakefile",
    *(str(p) for d in ("workflow", "src/sabre_prior") for p in sorted(Path(d).rglob("*"))
      if p.is_file() and "__pycache__" not in p.parts),
]
# record in dvc.lock what `snakemake all` made: in a DVC project (DVC works in a git repository), and
# not for a run with other settings than params.yaml's
from sabre_prior.sync import dvc_project

IN_DVC = dvc_project()  # one `git rev-parse` per start
RECORD = IN_DVC and SAME_AS_PARAMS
if IN_DVC and not SAME_AS_PARAMS:
    print("note: --config/--configfile: these results are not recorded in dvc.lock (not params.yaml's)", file=sys.stderr)


rule all:
    input:
        ALL,
        "dvc.lock" if RECORD else [],
    default_target: True


# DVC's command: every output, and DVC records them itself
rule outputs:
    input:
        ALL,


# dvc.lock, made from every output, params.yaml and the code: recorded when one of them is newer
# (or the lock is missing). A shell job, so that Snakemake does not start a second copy of itself
# to run it (a `run:` job is spawned as a subprocess that parses this Snakefile again).
localrules:
    dvc_lock,


rule dvc_lock:
    input:
        ALL,
        "params.yaml",
        DVC_DEPS,
    output:
        "dvc.lock",
    log:
        "results/logs/dvc_lock.log",
    conda:
        "environment.yml"
    shell:
        "dvc commit --force pipeline > {log} 2>&1"
        " && echo \"recorded the pipeline's outputs in dvc.lock (dvc commit)\" >&2"


# remove from the tracked folders what no job of the pipeline makes (a removed model's files, a
# temporary file a kill left), so that what DVC records (dvc_lock above, or `dvc repro` after this
# run) is what a fresh run makes: before the first job runs and after the last (not on a dry run).
# Not in a run with other settings (--config/--configfile): it would remove the results of models
# params.yaml has and the other settings lack; the next run on params.yaml prunes.
onstart:
    from sabre_prior.sync import prune

    if SAME_AS_PARAMS:
        prune(ALL)


onsuccess:
    from sabre_prior.sync import prune

    if SAME_AS_PARAMS:
        prune(ALL)
