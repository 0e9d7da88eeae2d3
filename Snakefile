# SABRE-Prior evaluation pipeline: wiring only. The stages are declared once in
# sabre_prior.repro.pipeline (dvc.yaml is generated from the same declaration); the rules in
# workflow/rules/*.smk take their inputs, outputs, log and command from it. All logic is
# in the `sabre_prior` package, called through the `sabre` CLI.

from snakemake.utils import min_version

min_version("9.0")


configfile: "params.yaml"


# validated against workflow/schemas/params.schema.yaml; unknown or misspelt keys are errors with
# the closest valid key suggested (sabre_prior.config)
from sabre_prior.config import validate_params

validate_params(config, "params.yaml")

# Snakemake and DVC agree on what is up to date (sabre_prior.repro.dagsync, public interfaces only):
# before planning, each job's stamp is refreshed and, only where an output is older than an
# input, `dvc status` decides; after a run, `dvc commit` records what Snakemake made.
from sabre_prior.repro import dagsync

PIPELINE = dagsync.before_planning(config)


onsuccess:
    dagsync.after_run(PIPELINE, success=True)


onerror:
    dagsync.after_run(PIPELINE, success=False)


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/inference.smk"
include: "workflow/rules/scoring.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/robustness.smk"
include: "workflow/rules/repro.smk"


rule all:
    input:
        PIPELINE.all_outputs(),
    default_target: True
