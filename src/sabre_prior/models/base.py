"""The one small interface every model backend implements, and the registry.

A backend turns :class:`Query` objects (one question: rendered prompt text plus
the image's original bytes) into :class:`Completion` objects.  Two calling
styles exist, and a backend implements at least one:

* ``complete_batch(queries)`` - synchronous, used by offline and local
  (transformers, vLLM) backends that batch on their own;
* ``acomplete(query)`` - a coroutine for one query, used by API backends; the
  engine runs many concurrently under its rate limits and retries.

Backends are registered by name with a ``module:Class`` string so that optional
SDKs (openai, anthropic, google-genai, torch, vllm) are imported only when a
model that needs them is actually run.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Sequence

from ..errors import BackendError


@dataclass(frozen=True)
class Query:
    """One question, ready to send."""

    id: str
    split: str
    text: str  # rendered prompt text (see sabre_prior.prompts)
    image: bytes  # the image file's original bytes
    image_mime: str  # e.g. "image/jpeg"
    row: Mapping[str, Any] = field(default_factory=dict)  # dataset row without the image


@dataclass
class Completion:
    """A successful answer.  Failures are raised, never returned as text."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish_reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class CallError(Exception):
    """One call failed.  ``retryable`` tells the engine whether to try again."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
        kind: str = "error",
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after
        self.kind = kind


class Backend:
    """Base class of all backends."""

    #: "offline" (no cost, no cache needed), "api" or "local".
    kind: ClassVar[str] = "offline"

    def __init__(self, name: str, settings: Mapping[str, Any]) -> None:
        self.name = name
        self.settings = dict(settings)

    # -- identity used for caching ------------------------------------------------
    def cache_identity(self) -> dict[str, Any]:
        """What, besides the query content, determines the answer (model id, settings)."""
        return {k: v for k, v in sorted(self.settings.items()) if k not in ("display_name", "paper_name", "concurrency")}

    # -- calling styles -----------------------------------------------------------
    def complete_batch(self, queries: Sequence[Query]) -> list[Completion]:
        raise NotImplementedError(f"backend {type(self).__name__} has no batch mode")

    async def acomplete(self, query: Query) -> Completion:
        raise NotImplementedError(f"backend {type(self).__name__} has no async mode")

    def check_ready(self) -> None:
        """Fail fast (before any call) when something the user must set is missing."""

    def close(self) -> None:
        """Release resources (HTTP clients, GPU memory)."""


#: backend name -> "module:Class" (relative to this package's parent).
REGISTRY: dict[str, str] = {
    "baseline": "sabre_prior.models.baseline:BaselineBackend",
    "openai": "sabre_prior.models.openai_backend:OpenAIBackend",
    "anthropic": "sabre_prior.models.anthropic_backend:AnthropicBackend",
    "gemini": "sabre_prior.models.gemini_backend:GeminiBackend",
    "transformers": "sabre_prior.models.transformers_backend:TransformersBackend",
    "vllm": "sabre_prior.models.vllm_backend:VLLMBackend",
}


def backend_class(backend: str) -> type[Backend]:
    if backend not in REGISTRY:
        known = ", ".join(sorted(REGISTRY))
        raise BackendError(f"unknown model backend {backend!r}; known backends: {known}")
    module_name, _, cls_name = REGISTRY[backend].partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise BackendError(
            f"backend {backend!r} needs the Python package {exc.name!r}, which is not installed; "
            f"install it (e.g. pip install -e '.[api]' for API backends, '.[local]' for local models)"
        ) from exc
    cls = getattr(module, cls_name)
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise BackendError(f"{REGISTRY[backend]} is not a Backend subclass")
    return cls


def create_backend(name: str, settings: Mapping[str, Any]) -> Backend:
    """Instantiate the backend named by ``settings['backend']`` for model ``name``."""
    backend = settings.get("backend")
    if not isinstance(backend, str):
        raise BackendError(f"models.{name}.backend is missing")
    return backend_class(backend)(name, settings)
