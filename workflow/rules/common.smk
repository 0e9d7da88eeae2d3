# Names the rules share. The rule files (one per stage) are written by hand; their inputs, outputs,
# params, resources and log are where the rule stands.

from pathlib import Path

from sabre_prior import settings as _settings
from sabre_prior.buildcheck import exit_on_error
from sabre_prior.data.fetch import hub_digests, source_kind, split_files
from sabre_prior.inference.models.local_common import LOCAL_BACKENDS, job_resources
from sabre_prior.registry import kind_of as backend_kind  # offline / api / local
from sabre_prior.report.style import caption_path

MODELS = list(config["models"])
SPLITS = list(config["splits"])
TEMPLATES = list(config.get("prompt", {}).get("templates") or ["screening_v1"])
# the audit's repeats 1..audit.repeats-1 (repeat 0 is the main run; none while the audit is off)
REPEATS = [str(r) for r in range(1, int(config.get("audit", {}).get("repeats", 1)))]
LOCAL_MODELS = [m for m in MODELS if config["models"][m].get("backend") in LOCAL_BACKENDS]
# the models asked again at batch size 1 (`batch_audit: true`; docs/parity.md)
BATCH_AUDITED = [m for m in MODELS if config["models"][m].get("batch_audit")]
OTHER_MODELS = [m for m in MODELS if m not in LOCAL_MODELS]
SOURCE = str(config["dataset"]["source"])
# demo, local or hub (a missing local folder stops here, with a message naming it)
SOURCE_KIND = exit_on_error(source_kind, SOURCE)
# a hub source: per split, the digest of its files at the commit the hub serves now (one request;
# an unreachable hub or a refused token stops the run here, before any job deletes or writes anything)
HUB_FILES = exit_on_error(hub_digests, config)


def one_of(names):
    """A wildcard regex matching exactly these names (none: matches nothing)."""
    import re

    return "|".join(re.escape(n) for n in names) if names else "(?!)"


wildcard_constraints:
    split=one_of(SPLITS),
    model=one_of(MODELS),
    template=one_of(TEMPLATES),
    repeat=one_of(REPEATS),


#: The keys of a model's entry that its answering jobs (predict, prompt_run, audit_run) do not read:
#: its name in the tables, its paper name, the checkpoint it serves and whether its batches are audited.
NOT_ANSWERING = ("display_name", "paper_name", "same_model_as", "batch_audit")
ANSWERING = ("models.{model}", *(f"!models.{{model}}.{key}" for key in NOT_ANSWERING))


def settings(*keys):
    """A rule's `settings` param: the settings of params.yaml its command reads (dotted keys, with
    {model}-style wildcards; `!key` leaves one out), as the JSON passed to the command's `--settings`.
    Snakemake records the value, so changing one of them re-runs the job (sabre_prior.settings). The
    wildcards are filled in part by part: a model's name may hold a dot."""

    def declared(wc):
        out = []
        for key in keys:
            excluded, path = _settings.parts(key)
            out.append((["!"] if excluded else []) + [p.format(**wc) for p in path])
        return _settings.encode(config, out)

    return declared


#: The modules at the package's top that hold a stage's command (not shared by every stage).
COMMAND_MODULES = ("prompt_run", "audit_run", "audit", "manifest", "batch_audit")


def code(*parts):
    """The source files a stage's command runs: its package folders (or modules) under
    src/sabre_prior, those they import from (tests/test_cli.py checks), and the shared modules at the
    package's top (settings, contracts, formatting, ...). An input: editing them re-runs the jobs."""
    package = Path(workflow.basedir, "src/sabre_prior")
    found = sorted(p for p in package.glob("*.py") if p.stem not in COMMAND_MODULES)
    for part in parts:
        path = package / part
        found += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return [str(f.relative_to(workflow.basedir)) for f in dict.fromkeys(found)]


def source_files(wildcards):
    """What a fetch job reads: the demo folder, a local copy's files of the split (its card and the
    split's data files), or, for a hub repo, nothing on disk (its settings and HUB_FILES say what
    it reads)."""
    if SOURCE_KIND == "demo":
        return ["data/demo"]
    if SOURCE_KIND == "local":
        return split_files(SOURCE, wildcards.split)
    return []


def model_resource(key):
    """A resource of a model's predict job, from its settings (local_common.job_resources)."""
    return lambda wildcards: job_resources(config["models"][wildcards.model])[key]


def api_job(wildcards):
    """1 for a hosted model's job (limit them with `--resources api_jobs=N`), else 0."""
    return int(backend_kind(config["models"][wildcards.model].get("backend")) == "api")


def cuda_prefix(wildcards):
    """`CUDA_VISIBLE_DEVICES=... ` for a model pinned with `cuda_visible_devices`, else nothing."""
    devices = job_resources(config["models"][wildcards.model])["cuda_visible_devices"]
    return f"CUDA_VISIBLE_DEVICES={devices} " if devices else ""


def caption(stem):
    """The caption file of a report output (the HTML report shows the same text)."""
    return str(caption_path(stem))


# On a cluster only local-model predictions (rule predict_local) are submitted; every other rule
# is local (each rule file lists its own). Data download needs the hub, API calls the network,
# and scoring and the report take seconds.
localrules:
    all,
    predict,
