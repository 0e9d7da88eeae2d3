# SABRE-Prior evaluation pipeline: wiring only. Rules live in workflow/rules/*.smk,
# all logic in the `sabre_prior` package, called through the `sabre` CLI.

from snakemake.utils import min_version, validate

min_version("8.20")


configfile: "params.yaml"


validate(config, "workflow/schemas/params.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/inference.smk"
include: "workflow/rules/score.smk"
include: "workflow/rules/report.smk"


rule all:
    input:
        all_outputs(),
    default_target: True
