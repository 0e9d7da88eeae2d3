"""The one registry of model backends: every list of backend names is derived from it.

Each :class:`BackendSpec` names a backend (the ``backend:`` value in ``params.yaml``), the
class that implements it (``"module:Class"``, imported only when a model of it runs), its
kind (``offline``, ``api`` or ``local``), the optional packages it needs (recorded by the
run manifest and named when one is missing), the settings the params schema accepts for it
and the ones it requires, and its provider batch adapter if it has one.

Derived from here, never typed again:

* ``inference.models.base.REGISTRY`` (name -> class) and ``backend_class``;
* the params schema's ``backend`` enum and its per-backend key lists (filled in by
  :func:`sabre_prior.config.load_schema`, which is what the Snakefile validates with);
* ``repro.manifest.BACKEND_PACKAGES``; ``inference.models.local_common.LOCAL_BACKENDS``;
* the Snakemake predict rule's API/local split (``api_jobs`` resource, local models' GPUs);
* ``inference.batch.ADAPTERS``.

``tests/models/test_registry.py`` fails if a copy drifts or a backend class accepts a
setting its entry does not list.  This module imports nothing heavy: the schema is read at
every DAG build.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["offline", "api", "local"]

#: Keys every backend accepts in params.yaml (labels, prompt, job resources, the sent image).
_COMMON: tuple[str, ...] = (
    "backend", "display_name", "paper_name", "provider", "prompt_template", "threads", "mem_mb", "runtime", "image",
)  # fmt: skip
#: Keys of the hosted-API backends (``ApiBackend.COMMON_SETTINGS``, each class's ``extra_settings``,
#: the operational keys an API call reads).  One list for the three providers, as before the registry.
_API: tuple[str, ...] = _COMMON + (
    "model_id", "api_key_env", "base_url", "concurrency", "temperature", "max_output_tokens", "reasoning_effort",
    "thinking_budget", "max_tokens_field", "image_detail", "extra_body", "timeout_s", "max_attempts",
    "backoff_base_s", "backoff_max_s", "rate_limits", "prices", "empty_budget_retries", "empty_retries",
    "retry_refusals", "batch",
)  # fmt: skip
#: Keys of the local backends (``inference.models.local_common.KNOWN_KEYS`` less the API-only operational keys).
_LOCAL: tuple[str, ...] = _COMMON + (
    "model_id", "revision", "dtype", "device", "batch_size", "max_new_tokens", "gpus", "gpu_model",
    "cuda_visible_devices", "tensor_parallel_size", "max_model_len", "gpu_memory_utilization", "max_num_seqs",
    "enforce_eager", "trust_remote_code", "allow_download", "load_format", "system_prompt", "processor_kwargs",
    "model_kwargs", "seed", "temperature", "concurrency",
)  # fmt: skip


@dataclass(frozen=True)
class BackendSpec:
    """One backend: what ``params.yaml`` may say about it and where its code lives."""

    name: str
    target: str  # "module:Class", imported lazily
    kind: Kind
    packages: tuple[str, ...] = ()
    settings: tuple[str, ...] = _COMMON
    required: tuple[str, ...] = ()
    batch: str | None = None  # "module:Class" of the provider batch adapter (sabre_prior.inference.batch)


#: The backends, in the order the schema's enum (and its error messages) list them.
BACKENDS: tuple[BackendSpec, ...] = (
    BackendSpec(
        "baseline", "sabre_prior.inference.models.baseline:BaselineBackend", "offline",
        settings=_COMMON + ("strategy", "seed"), required=("strategy",),
    ),
    BackendSpec(
        "openai", "sabre_prior.inference.models.openai_backend:OpenAIBackend", "api", ("openai",),
        settings=_API, required=("model_id", "api_key_env"), batch="sabre_prior.inference.models.batch_openai:OpenAIBatch",
    ),
    BackendSpec(
        "anthropic", "sabre_prior.inference.models.anthropic_backend:AnthropicBackend", "api", ("anthropic",),
        settings=_API, required=("model_id", "api_key_env"),
        batch="sabre_prior.inference.models.batch_anthropic:AnthropicBatch",
    ),
    BackendSpec(
        "gemini", "sabre_prior.inference.models.gemini_backend:GeminiBackend", "api", ("google-genai",),
        settings=_API, required=("model_id", "api_key_env"), batch="sabre_prior.inference.models.batch_gemini:GeminiBatch",
    ),
    BackendSpec(
        "transformers", "sabre_prior.inference.models.transformers_backend:TransformersBackend", "local",
        ("torch", "torchvision", "transformers", "accelerate"), settings=_LOCAL, required=("model_id",),
    ),
    BackendSpec(
        "vllm", "sabre_prior.inference.models.vllm_backend:VLLMBackend", "local",
        ("vllm", "torch", "torchvision", "transformers"), settings=_LOCAL, required=("model_id",),
    ),
)  # fmt: skip

SPECS: dict[str, BackendSpec] = {spec.name: spec for spec in BACKENDS}


def names(kind: Kind | None = None) -> tuple[str, ...]:
    """Backend names (of one kind), in registry order."""
    return tuple(spec.name for spec in BACKENDS if kind is None or spec.kind == kind)


def kind_of(backend: object) -> Kind | None:
    """The kind of a backend name (None for an unknown one)."""
    spec = SPECS.get(str(backend))
    return spec.kind if spec else None


def schema_rules() -> list[dict[str, object]]:
    """The params schema's per-backend rules (``if backend ... then required + propertyNames``).

    Consecutive backends with the same keys share one rule, so the schema reads as it did
    when it was typed by hand.
    """
    rules: list[dict[str, object]] = []
    groups: list[list[BackendSpec]] = []
    for spec in BACKENDS:
        if groups and (groups[-1][0].settings, groups[-1][0].required) == (spec.settings, spec.required):
            groups[-1].append(spec)
        else:
            groups.append([spec])
    for group in groups:
        match: dict[str, object] = {"const": group[0].name} if len(group) == 1 else {"enum": [s.name for s in group]}
        rules.append(
            {
                "if": {"properties": {"backend": match}},
                "then": {"required": list(group[0].required), "propertyNames": {"enum": list(group[0].settings)}},
            }
        )
    return rules
