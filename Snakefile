# SABRE-Prior evaluation pipeline: wiring only. The stages are declared once in
# sabre_prior.repro.pipeline (dvc.yaml is generated from the same declaration); the rules in
# workflow/rules/*.smk take their inputs, outputs, log and command from it. All logic is
# in the `sabre_prior` package, called through the `sabre` CLI.

from snakemake.utils import min_version

min_version("9.0")


# read first by sabre_prior.config: an invalid or tab-indented file, or a key given twice, is an
# error naming the file and line (Snakemake's own reading says neither, and keeps the last duplicate)
from sabre_prior.config import read_params_file

read_params_file("params.yaml")


configfile: "params.yaml"


# validated against workflow/schemas/params.schema.yaml; unknown or misspelt keys are errors with
# the closest valid key suggested (sabre_prior.config)
# and every setting that can be checked before a job runs (templates, backend settings, model ids,
# a local source's folder: sabre_prior.buildcheck), before anything is planned or deleted
from sabre_prior.buildcheck import validate_for_run

validate_for_run(config, "params.yaml")

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
include: "workflow/rules/robustness.smk"
include: "workflow/rules/repro.smk"


rule all:
    input:
        PIPELINE.all_outputs(),
        RECIPES_DONE,
    default_target: True
