# Shared names for the rules. Each rule takes its inputs, outputs, log and command from the
# one declaration of the pipeline (sabre_prior.repro.pipeline.STAGES, also rendered into dvc.yaml).

from sabre_prior.repro.pipeline import BY_NAME, snakemake_outputs

SPLITS = PIPELINE.splits
MODELS = PIPELINE.models


wildcard_constraints:
    split="|".join(SPLITS),
    model="|".join(MODELS),
    template="|".join(PIPELINE.templates),


def stage_inputs(name):
    """Data inputs and code files of the stage (item placeholders are the rule's wildcards)."""
    return PIPELINE.inputs(BY_NAME[name])


def stage_stamp(name):
    """The job's stamp: command and params values (sabre_prior.repro.dagsync rewrites it on a change)."""
    return BY_NAME[name].stamp


def stage_outputs(name):
    return snakemake_outputs(PIPELINE, name, report)


def stage_log(name):
    return BY_NAME[name].log


def stage_shell(name, prefix=""):
    """The declared command; `prefix` is Snakemake-only (device pinning, a Snakemake placeholder)."""
    return f"{prefix}{PIPELINE.shell(BY_NAME[name])}"


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
# scoring and the report (seconds) run on the submitting node.
localrules:
    all,
    demo_data,
    fetch,
    predict,
    evaluate,
    tables,
    figures,


def model_resource(key):
    """A resource callable for the predict rule: `key` of job_resources(model settings)."""
    return lambda wildcards: job_resources(config["models"][wildcards.model])[key]


def cuda_prefix(wildcards):
    """`CUDA_VISIBLE_DEVICES=... ` for a model pinned with `cuda_visible_devices`, else nothing."""
    devices = job_resources(config["models"][wildcards.model])["cuda_visible_devices"]
    return f"CUDA_VISIBLE_DEVICES={devices} " if devices else ""
