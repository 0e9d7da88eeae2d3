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
* ``manifest.BACKEND_PACKAGES``; ``inference.models.local_common.LOCAL_BACKENDS``;
* the Snakemake predict rule's API/local split (``api_jobs`` resource, local models' GPUs);
* ``inference.batch.ADAPTERS``.

The provider batch APIs' facts (:data:`OPENAI_COMPATIBLE_BATCH`) and the checks of a model's
``batch`` settings live here too, so validating params.yaml imports no stage package.

``tests/models/test_registry.py`` fails if a copy drifts or a backend class accepts a
setting its entry does not list.  This module imports nothing heavy: the schema is read at
every DAG build.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping

from .errors import ConfigError

Kind = Literal["offline", "api", "local"]

#: Output-token limit per answer when a model sets no ``max_output_tokens`` (API and local models
#: alike): the authors' screening client answers in at most 64 tokens.
DEFAULT_MAX_OUTPUT_TOKENS = 64

#: Keys every backend accepts in params.yaml (labels, prompt, job resources, the sent image).
_COMMON: tuple[str, ...] = (
    "backend", "display_name", "paper_name", "provider", "prompt_template", "threads", "mem_mb", "runtime", "image",
    "same_model_as", "batch_audit",
)  # fmt: skip
#: Keys of the hosted-API backends (``ApiBackend.COMMON_SETTINGS``, each class's ``extra_settings``,
#: the operational keys an API call reads).  One list for the three providers, as before the registry.
_API: tuple[str, ...] = _COMMON + (
    "model_id", "api_key_env", "base_url", "concurrency", "temperature", "max_output_tokens", "reasoning_effort",
    "thinking_budget", "max_tokens_field", "image_detail", "extra_body", "timeout_s", "max_attempts",
    "backoff_base_s", "backoff_max_s", "rate_limits", "prices", "empty_budget_retries", "empty_retries",
    "retry_refusals", "batch",
)  # fmt: skip
#: Keys of the local backends (``inference.models.local_common.KNOWN_KEYS`` is made from them and the
#: operational keys).  No ``temperature``: local decoding is greedy (``local_common.decoding_for``).
_LOCAL: tuple[str, ...] = _COMMON + (
    "model_id", "revision", "dtype", "device", "batch_size", "max_output_tokens", "gpus", "gpu_model",
    "cuda_visible_devices", "tensor_parallel_size", "max_model_len", "gpu_memory_utilization", "max_num_seqs",
    "enforce_eager", "trust_remote_code", "allow_download", "load_format", "system_prompt", "processor_kwargs",
    "model_kwargs", "seed", "concurrency", "repetition_penalty", "chat_template",
)  # fmt: skip
#: Keys only the vLLM backend takes: ``batch_invariant`` (docs.vllm.ai, "Batch Invariance":
#: ``VLLM_BATCH_INVARIANT=1``, set for that model's job only).
_VLLM: tuple[str, ...] = _LOCAL + ("batch_invariant",)


#: OpenAI-compatible providers (``provider`` of an ``openai``-backend model) whose docs
#: describe the OpenAI Files + Batches endpoints for /v1/chat/completions, with the
#: limits they document (requests per input file, bytes per input file).
#: Sources (also in docs/api_models.md):
#: openai: https://platform.openai.com/docs/guides/batch and the SDK's batches.create
#:   docstring (50,000 requests, 200 MB per input file);
#: moonshot: https://platform.kimi.ai/docs/api/batch-create (purpose="batch" JSONL,
#:   file at most 100 MB);
#: alibaba (DashScope / Model Studio): https://www.alibabacloud.com/help/en/model-studio/batch-interfaces-compatible-with-openai
#:   ("OpenAI compatible - Batch", files + batches through the OpenAI SDK); OpenAI's
#:   limits are applied.
OPENAI_COMPATIBLE_BATCH: dict[str, tuple[int, int]] = {
    "openai": (50_000, 200 * 1000 * 1000),
    "moonshot": (50_000, 100 * 1000 * 1000),
    "alibaba": (50_000, 200 * 1000 * 1000),
    "dashscope": (50_000, 200 * 1000 * 1000),
}

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
    #: the ``provider`` values (default: the backend's name) whose batch API the adapter speaks;
    #: None: every provider of this backend
    batch_providers: tuple[str, ...] | None = None
    #: what that batch API is, for error messages
    batch_api: str = "the provider batch API"


#: The backends, in the order the schema's enum (and its error messages) list them.
BACKENDS: tuple[BackendSpec, ...] = (
    BackendSpec(
        "baseline", "sabre_prior.inference.models.baseline:BaselineBackend", "offline",
        settings=_COMMON + ("strategy", "seed"), required=("strategy",),
    ),
    BackendSpec(
        "openai", "sabre_prior.inference.models.openai_backend:OpenAIBackend", "api", ("openai",),
        settings=_API, required=("model_id", "api_key_env"), batch="sabre_prior.inference.models.batch_openai:OpenAIBatch",
        batch_providers=tuple(sorted(OPENAI_COMPATIBLE_BATCH)), batch_api="the OpenAI Files + Batches endpoints",
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
        ("vllm", "torch", "torchvision", "transformers"), settings=_VLLM, required=("model_id",),
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
    return rules + batch_schema_rules()


def batch_schema_rules() -> list[dict[str, object]]:
    """The params schema's ``batch`` rules: only a backend with a batch adapter takes ``batch``,
    and only with a provider its adapter speaks to (:attr:`BackendSpec.batch_providers`)."""
    batching = {"required": ["batch"], "properties": {"batch": {"not": {"enum": [False]}}}}
    rules: list[dict[str, object]] = [
        {"if": batching, "then": {"properties": {"backend": {"enum": [s.name for s in BACKENDS if s.batch]}}}}
    ]
    for spec in BACKENDS:
        if spec.batch and spec.batch_providers is not None:
            when = {"required": ["batch"], "properties": {"backend": {"const": spec.name}, "batch": {"not": {"enum": [False]}}}}
            rules.append({"if": when, "then": {"properties": {"provider": {"enum": list(spec.batch_providers)}}}})
    return rules


# ---------------------------------------------------------------------------
# Provider batch APIs: which backends and providers have one, and the ``batch`` settings
# (checked here, without importing the engine, when params.yaml is validated)
# ---------------------------------------------------------------------------
BATCH_KEYS = frozenset({"enabled", "wait", "poll_s", "max_requests", "max_bytes", "retry", "max_attempts", "prices"})


def max_output_tokens(settings: Mapping[str, Any], model: str = "?") -> int:
    """``models.<model>.max_output_tokens`` (default :data:`DEFAULT_MAX_OUTPUT_TOKENS`), checked."""
    value = settings.get("max_output_tokens", DEFAULT_MAX_OUTPUT_TOKENS)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"models.{model}.max_output_tokens must be a positive integer, got {value!r}")
    return value


def price_values(settings: Mapping[str, Any], model: str = "?") -> tuple[float, float] | None:
    """``prices`` of a model as (input, output) USD per million tokens, checked (None without)."""
    raw = settings.get("prices")
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ConfigError(f"models.{model}.prices must be a mapping with input_per_mtok and output_per_mtok")
    values = []
    for key in ("input_per_mtok", "output_per_mtok"):
        v = raw.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise ConfigError(f"models.{model}.prices.{key} must be a non-negative number (USD per million tokens), got {v!r}")
        values.append(float(v))
    return values[0], values[1]


def batch_values(settings: Mapping[str, Any], model: str = "?") -> dict[str, Any] | None:
    """``models.<model>.batch`` read and checked (None when absent or false); refused where no
    batch API is documented.  The fields of ``inference.batch.BatchSettings``, ``prices`` as a pair."""
    raw = settings.get("batch")
    if raw is None or raw is False:
        return None
    if raw is True:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"models.{model}.batch must be true, false or a mapping, got {raw!r}")
    unknown = sorted(set(raw) - BATCH_KEYS)
    if unknown:
        raise ConfigError(
            f"models.{model}.batch: unknown settings {', '.join(unknown)} (known: {', '.join(sorted(BATCH_KEYS))})"
        )

    def whole(key: str, default: int | None, minimum: int = 1) -> int | None:
        v = raw.get(key, default)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            raise ConfigError(f"models.{model}.batch.{key} must be a whole number >= {minimum}, got {v!r}")
        return v

    def flag(key: str, default: bool) -> bool:
        v = raw.get(key, default)
        if not isinstance(v, bool):
            raise ConfigError(f"models.{model}.batch.{key} must be true or false, got {v!r}")
        return v

    poll = raw.get("poll_s", 30.0)
    if isinstance(poll, bool) or not isinstance(poll, (int, float)) or poll < 0:
        raise ConfigError(f"models.{model}.batch.poll_s must be a number of seconds >= 0, got {poll!r}")
    retry = raw.get("retry", "batch")
    if retry not in ("batch", "sync"):
        raise ConfigError(f"models.{model}.batch.retry must be batch or sync, got {retry!r}")
    prices = price_values({"prices": raw["prices"]}, f"{model}.batch") if raw.get("prices") is not None else None
    out = {
        "enabled": flag("enabled", True),
        "wait": flag("wait", True),
        "poll_s": float(poll),
        "max_requests": whole("max_requests", None),
        "max_bytes": whole("max_bytes", None, 1024),
        "retry": str(retry),
        "max_attempts": whole("max_attempts", 3) or 3,
        "prices": prices,
    }
    if out["enabled"]:
        check_supported(model, settings)
    return out


def check_supported(model: str, settings: Mapping[str, Any]) -> None:
    """Raise :class:`ConfigError` unless this model's provider documents a batch API we speak."""
    backend = settings.get("backend")
    batch_backends = sorted(s.name for s in BACKENDS if s.batch)
    if backend not in batch_backends:
        raise ConfigError(
            f"models.{model}.batch: backend {backend!r} has no provider batch API "
            f"(batch mode exists for {', '.join(batch_backends)}); remove `batch` from this model"
        )
    providers = SPECS[str(backend)].batch_providers
    provider = str(settings.get("provider") or backend).lower()
    if providers is not None and provider not in providers:
        raise ConfigError(
            f"models.{model}.batch: provider {provider!r} does not document {SPECS[str(backend)].batch_api} "
            f"(batch mode is enabled for {', '.join(providers)}; see docs/api_models.md, 'Batch mode'); "
            f"remove `batch` from this model"
        )


def check_params(params: Mapping[str, Any], source: str = "params.yaml") -> None:
    """Check every model's ``batch`` setting (called when params.yaml is validated)."""
    models = params.get("models")
    if not isinstance(models, Mapping):
        return
    for name, settings in models.items():
        if isinstance(settings, Mapping) and settings.get("batch") not in (None, False):
            try:
                batch_values(settings, str(name))
            except ConfigError as exc:
                raise ConfigError(f"{source}: {exc}") from None
