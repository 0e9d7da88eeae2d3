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

# One plan for Snakemake and DVC (sabre_prior.repro.dagsync): each job's recipe and made record
# say whether its outputs are what it would make now; the rules' inputs (common.smk) are
# ancient() for those jobs and carry a fresh gate file for the others; after the run, one
# `dvc commit` records what was made. A second run of either tool refuses while this one runs.
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
include: "workflow/rules/repro.smk"


rule all:
    input:
        PIPELINE.all_outputs(),
        RECIPES_DONE,
    default_target: True
