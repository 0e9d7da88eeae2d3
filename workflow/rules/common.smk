# Shared names for the rules. Paths follow sabre_prior.contracts (see README, "Data contracts");
# names that the package defines are imported from there, never typed again.
from sabre_prior import contracts as C

SPLITS = list(config["splits"])
MODELS = list(config["models"])
SOURCE = config["dataset"]["source"]
IS_DEMO = SOURCE == "demo"
DEMO_SETTINGS = config["dataset"].get("demo", {})


wildcard_constraints:
    split="|".join(SPLITS),
    model="|".join(MODELS),


def fetch_inputs(wildcards):
    """The fetch step reads the generated demo copy when dataset.source is demo."""
    return ["data/demo"] if IS_DEMO else []


def all_outputs():
    return [
        *expand("results/metrics/{model}.json", model=MODELS),
        *expand("results/tables/main_results.{ext}", ext=["md", "csv", "tex"]),
        *expand("results/figures/{fig}.{ext}", fig=FIGURES, ext=["png", "pdf"]),
        *ANALYSIS_OUTPUTS,  # workflow/rules/analysis.smk
        MANIFEST,  # workflow/rules/manifest.smk
        PLOT_DATA,
    ]


FIGURES = list(C.FIGURE_STEMS)
MANIFEST = C.MANIFEST_PATH
PLOT_DATA = C.PLOT_DATA_PATH


# Resources of the predict jobs, from each model's settings (see
# sabre_prior.models.local_common.job_resources): local models (transformers,
# vllm) ask for `gpus` GPUs (default 1) of `gpu_model`; API and offline models
# for none. Limit GPUs on a workstation with `snakemake --resources gpu=N`.
from sabre_prior.models.local_common import LOCAL_BACKENDS, job_resources

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
