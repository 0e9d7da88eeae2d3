# SABRE-Prior evaluation pipeline: wiring only. Rules live in workflow/rules/*.smk,
# all logic in the `sabre_prior` package, called through the `sabre` CLI.

from snakemake.utils import min_version, validate

min_version("8.20")


configfile: "params.yaml"


# unknown or misspelt keys are errors with the closest valid key suggested (sabre_prior.config);
# Snakemake's validate then fills in the schema's defaults
from sabre_prior.config import validate_params

validate_params(config, "params.yaml")
validate(config, "workflow/schemas/params.schema.yaml")

# Snakemake and DVC agree on what is up to date: before planning, align mtimes and
# Snakemake's records with dvc.lock; after a run, record the outputs in dvc.lock.
# (sabre_prior/dvcsync.py; a no-op outside a DVC project or with SABRE_DVC_SYNC=0)
from sabre_prior import dvcsync

dvcsync.on_start(workflow)


onsuccess:
    dvcsync.on_finish(workflow, success=True)


onerror:
    dvcsync.on_finish(workflow, success=False)


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/inference.smk"
include: "workflow/rules/score.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/manifest.smk"


rule all:
    input:
        all_outputs(),
    default_target: True
