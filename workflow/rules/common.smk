# Shared names for the rules. The rule files (workflow/rules/<group>.smk) are generated from the
# one declaration of the pipeline (sabre_prior.repro.pipeline.STAGES, also rendered into dvc.yaml)
# by `sabre generate`; this file is written by hand.

from sabre_prior.repro.dagsync import RECIPES_DONE
from sabre_prior.repro.pipeline import get_param
from sabre_prior.report.style import caption_path

SPLITS = PIPELINE.pipeline.splits
MODELS = PIPELINE.pipeline.models
TEMPLATES = PIPELINE.pipeline.templates
# the audit's repeats 1..audit.repeats-1 (repeat 0 is the main run; none while the audit is off)
REPEATS = PIPELINE.pipeline.repeats


wildcard_constraints:
    split="|".join(SPLITS),
    model="|".join(MODELS),
    template="|".join(PIPELINE.pipeline.templates),
    repeat="|".join(REPEATS) or "(?!)",


def stage_inputs(name):
    """The job's data inputs and its recipe (.sabre/recipes/): ancient() when the job is proven up
    to date, else with a fresh gate file (sabre_prior.repro.dagsync.Plan.job_inputs)."""
    return lambda wildcards: PIPELINE.job_inputs(name, wildcards, ancient)


def param(key):
    """A setting of params.yaml by its dotted key (for a rule's `params:`)."""
    return get_param(config, key)


def caption(stem):
    """The caption file of a report output (the same text as the HTML report's)."""
    return str(caption_path(stem))


# Resources of the predict jobs, from each model's settings (see
# sabre_prior.inference.models.local_common.job_resources): local models (transformers,
# vllm) ask for `gpus` GPUs (default 1) of `gpu_model`; API and offline models
# for none. Limit GPUs on a workstation with `snakemake --resources gpu=N`.
from sabre_prior.inference.models.local_common import LOCAL_BACKENDS, job_resources
from sabre_prior.registry import kind_of as backend_kind  # offline / api / local

LOCAL_MODELS = [m for m in MODELS if config["models"][m].get("backend") in LOCAL_BACKENDS]
OTHER_MODELS = [m for m in MODELS if m not in LOCAL_MODELS]


def one_of(names):
    """A wildcard regex matching exactly these names (none: matches nothing)."""
    import re

    return "|".join(re.escape(n) for n in names) if names else "(?!)"


# On a cluster only local-model predictions (GPU jobs, rule predict_local) are
# submitted; data download (needs the hub), API calls (need the network),
# scoring and the report (seconds) run on the submitting node (each rule file
# lists its own rules; predict here, as predict_local shares its definition).
localrules:
    all,
    predict,


def model_resource(key):
    """A resource callable for the predict rule: `key` of job_resources(model settings)."""
    return lambda wildcards: job_resources(config["models"][wildcards.model])[key]


def cuda_prefix(wildcards):
    """`CUDA_VISIBLE_DEVICES=... ` for a model pinned with `cuda_visible_devices`, else nothing."""
    devices = job_resources(config["models"][wildcards.model])["cuda_visible_devices"]
    return f"CUDA_VISIBLE_DEVICES={devices} " if devices else ""
