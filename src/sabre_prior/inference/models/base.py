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
import importlib.util
import math
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping, Sequence

from ...errors import BackendError, ConfigError
from ... import registry


@dataclass(frozen=True)
class Query:
    """One question, ready to send."""

    id: str
    split: str
    text: str  # rendered prompt text (see sabre_prior.inference.prompts)
    image: bytes  # the image file's original bytes
    image_mime: str  # e.g. "image/jpeg"
    row: Mapping[str, Any] = field(default_factory=dict)  # dataset row without the image
    template: str = ""  # the prompt template's name (offline baselines answer by it; issue 21)
    repeat: int = 0  # the stability audit's repeat (0: the main run)


@dataclass
class Completion:
    """One response that arrived.  Failed calls are raised (:class:`CallError`), never returned.

    ``outcome`` (see :mod:`sabre_prior.inference.outcomes`): ``"answer"``, ``"refusal"`` (the text is
    then empty; any partial text is in ``extra["partial_text"]``) or ``"empty"``;
    ``detail`` says why for a refusal or an empty answer.  ``output_tokens`` includes
    reasoning or thinking tokens wherever the provider reports them apart.
    """

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish_reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    outcome: str = "answer"
    detail: str | None = None
    #: the HTTP response headers (rate-limit signals for the pacing, never journaled)
    headers: Mapping[str, str] | None = field(default=None, repr=False, compare=False)


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
        #: one of "rate_limit", "overloaded", "server", "timeout", "connection", "malformed",
        #: "empty" (retryable), "auth", "account", "not_found", "bad_request", "refusal" (not),
        #: or "error".  "refusal": the provider rejected this question's content (final for it).
        self.kind = kind
        #: the HTTP response headers, when there was a response (rate-limit signals for the pacing)
        self.headers: Mapping[str, str] | None = None

    @property
    def fatal(self) -> bool:
        """Every further call would fail the same way (bad key, unknown model): stop the run."""
        return not self.retryable and self.kind in FATAL_KINDS


#: Non-retryable kinds that stop a whole run at once (bad key, unknown model, no quota or billing).
FATAL_KINDS: frozenset[str] = frozenset({"auth", "not_found", "account"})


def parse_retry_after(headers: Mapping[str, str] | Any) -> float | None:
    """Seconds to wait from ``Retry-After`` (seconds or HTTP date) or ``retry-after-ms``."""
    if headers is None:
        return None
    get = getattr(headers, "get", None)
    if get is None:
        return None
    ms = get("retry-after-ms") or get("Retry-After-Ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = get("retry-after") or get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        from email.utils import parsedate_to_datetime
        import datetime as _dt

        when = parsedate_to_datetime(str(value))
        return max(0.0, (when - _dt.datetime.now(_dt.timezone.utc)).total_seconds())
    except (TypeError, ValueError, IndexError):
        return None


def status_error(status: int, message: str, headers: Any = None) -> CallError:
    """Classify an HTTP error status the same way for every provider."""
    retry_after = parse_retry_after(headers)
    text = f"HTTP {status}: {message}".strip()
    if status == 429:
        return CallError(text, retryable=True, status=status, retry_after=retry_after, kind="rate_limit")
    if status in (408, 409, 425) or status >= 500:
        kind = "timeout" if status in (408, 504) else "server"
        return CallError(text, retryable=True, status=status, retry_after=retry_after, kind=kind)
    if status in (401, 403):
        return CallError(text, retryable=False, status=status, kind="auth")
    if status == 404:
        return CallError(text, retryable=False, status=status, kind="not_found")
    return CallError(text, retryable=False, status=status, kind="bad_request")


#: Input tokens of one image (width, height in pixels) by a provider's documented rule.
ImageTokenRule = Callable[[float, float], int]


def generic_image_tokens(w: float, h: float) -> int:
    """No documented rule found (xAI, Moonshot, local models): Anthropic-like, at least 85."""
    return max(85, round(w * h / 750))


class Backend:
    """Base class of all backends."""

    #: "offline" (no cost, no cache needed), "api" or "local".
    kind: ClassVar[str] = "offline"
    #: True: ``acomplete`` ends an attempt after ``timeout_s`` itself (a :class:`CallError` of kind
    #: "timeout"), so the engine sets no timer of its own for it
    times_out: bool = False
    #: provider (``provider`` in params) -> its image-token rule, for the providers this backend's
    #: protocol reaches (an OpenAI-compatible endpoint does not count images like OpenAI); sources
    #: beside each rule and in docs/api_models.md.  Others: :func:`generic_image_tokens`.
    image_token_rules: ClassVar[Mapping[str, ImageTokenRule]] = {}

    def __init__(self, name: str, settings: Mapping[str, Any]) -> None:
        self.name = name
        self.settings = dict(settings)

    # -- identity used for caching ------------------------------------------------
    def cache_identity(self) -> dict[str, Any]:
        """What, besides the query content, determines the answer (model id, settings).

        Operational settings (concurrency, rate limits, prices, timeouts, the key's
        variable name, the endpoint URL, display names) are left out: changing them
        never invalidates answers already in the response journal.
        """
        return {k: v for k, v in sorted(self.settings.items()) if k not in OPERATIONAL_KEYS}

    def secrets(self) -> list[str]:
        """Values that must never reach a file or log (API keys); the engine redacts them."""
        return []

    @classmethod
    def image_tokens(cls, provider: str, width: int | None, height: int | None) -> int:
        """Input tokens of one image by ``provider``'s documented rule (an estimate; 1000 when the size is unknown)."""
        if not width or not height:
            return 1000
        return cls.image_token_rules.get(provider, generic_image_tokens)(float(width), float(height))

    def estimate_input_tokens(self, query: "Query", width: int | None, height: int | None) -> int:
        """A rough input-token count (prompt + image) for rate limiting and ``sabre estimate``."""
        return max(1, len(query.text) // 4) + self.image_tokens("generic", width, height)

    # -- calling styles -----------------------------------------------------------
    def complete_batch(self, queries: Sequence[Query]) -> "list[Completion | CallError]":
        """One answer per question; a :class:`CallError` in a question's place fails that
        question alone (raising one fails, or retries, the whole batch)."""
        raise NotImplementedError(f"backend {type(self).__name__} has no batch mode")

    async def acomplete(self, query: Query) -> Completion:
        raise NotImplementedError(f"backend {type(self).__name__} has no async mode")

    def check_ready(self) -> None:
        """Fail fast (before any call) when something the user must set is missing."""

    def prepare(self) -> None:
        """Slow set-up before the first :meth:`acomplete` (import the SDK, create clients).

        The engine runs it once in a worker thread, so that reading the data goes on meanwhile.
        """

    def run_info(self) -> dict[str, Any]:
        """Facts about the last run for the run log (e.g. a local model's throughput); JSON-safe."""
        return {}

    def close(self) -> None:
        """Release resources (HTTP clients, GPU memory)."""

    async def aclose(self) -> None:
        """Release resources bound to the engine's event loop (async HTTP clients)."""

    @property
    def is_async(self) -> bool:
        """True when the backend implements :meth:`acomplete` (the engine's async path)."""
        return type(self).acomplete is not Backend.acomplete


#: Settings that never change an answer (see :meth:`Backend.cache_identity`).
OPERATIONAL_KEYS: frozenset[str] = frozenset(
    {
        "display_name",
        "paper_name",
        "concurrency",
        "batch_size",
        "batch",  # provider batch API settings (sabre_prior.inference.batch): same requests, same answers
        "rate_limits",
        "prices",
        "timeout_s",
        "max_attempts",
        "empty_budget_retries",
        "empty_retries",
        "retry_refusals",
        "backoff_base_s",
        "backoff_max_s",
        "api_key_env",
        "base_url",
        "prompt_template",  # the template enters the key through its name and version
        "image",  # the sent image enters the key through its bytes' hash
        "same_model_as",  # which checkpoint a model serves (backend parity, issue 34): a label
        "batch_audit",  # whether the batch-invariance audit asks it again (its own journal)
        # job resources (Snakemake / SLURM), see models.local_common.job_resources
        "threads",
        "mem_mb",
        "runtime",
        "gpus",
        "gpu_model",
        "cuda_visible_devices",
    }
)


class MissingKeyError(BackendError):
    """The environment variable that should hold a model's API key is unset or empty."""


def _import_quietly(module: str) -> None:
    try:
        importlib.import_module(module)
    except Exception:  # reported again, with context, when the client is created
        pass


def import_in_background(module: str) -> None:
    """Start importing ``module`` in a thread that the interpreter waits for at exit.

    Not a daemon thread: a run answered wholly from the journal can end while the
    import is still loading C extensions, and a daemon thread that runs on while the
    interpreter finalizes can crash the process (a SIGSEGV after the job's work was
    done, seen once in CI; cpython#127893 describes the class of crash).  Waiting
    costs such a run at most the rest of the import (about half a second).
    """
    threading.Thread(target=_import_quietly, args=(module,), name=f"import:{module}").start()


def prefetch_sdk(settings: Mapping[str, Any]) -> None:
    """Start importing a model's SDK in the background (about 0.5 s), as early as possible."""
    backend = settings.get("backend")
    if backend not in REGISTRY:
        return
    module_name, _, cls_name = REGISTRY[str(backend)].partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), cls_name)
    except Exception:  # reported with context by create_backend
        return
    sdk = getattr(cls, "runtime_module", "") or getattr(cls, "sdk_module", "")
    if sdk and importlib.util.find_spec(sdk.split(".")[0]) is not None:
        import_in_background(sdk)


class ApiBackend(Backend):
    """Common part of the hosted-API backends: key from the environment, generation settings.

    The key is read from the variable named by ``api_key_env`` when the backend
    is checked or the client created, is passed to the SDK in memory only, and
    is never part of the cache identity, a log line or a file.
    """

    kind: ClassVar[str] = "api"
    provider: ClassVar[str] = "api"
    sdk_module: ClassVar[str] = ""
    #: the module plain calls need, when not the SDK (the lean HTTP client of models/http.py: aiohttp)
    runtime_module: ClassVar[str] = ""
    #: settings this backend accepts besides the common ones (others are errors)
    extra_settings: ClassVar[frozenset[str]] = frozenset()
    #: temperature sent when the params entry sets none (None: not sent)
    default_temperature: ClassVar[float | None] = 0.0
    #: lower-case fragments of a 400/403/422 error message that reject this request's content
    #: (a per-question refusal, :func:`sabre_prior.inference.outcomes.classify_error`), besides
    #: the ``code``/``type`` values of ``outcomes.MODERATION_CODES`` every protocol shares
    refusal_phrases: ClassVar[tuple[str, ...]] = ()

    @staticmethod
    def retry_delay_from_error(error: Any) -> float | None:
        """Seconds to wait that this protocol puts in an error body (used when no header says)."""
        return None

    COMMON_SETTINGS: ClassVar[frozenset[str]] = frozenset(
        {"backend", "provider", "model_id", "temperature", "max_output_tokens", "extra_body"}
    )

    def __init__(self, name: str, settings: Mapping[str, Any]) -> None:
        super().__init__(name, settings)
        for key in ("model_id", "api_key_env"):
            if not isinstance(settings.get(key), str) or not settings.get(key):
                raise ConfigError(f"models.{name}.{key} is required for backend {settings.get('backend')!r}")
        self.model_id: str = settings["model_id"]
        self.key_env: str = settings["api_key_env"]
        self.base_url: str | None = settings.get("base_url") or None
        self.timeout_s = float(settings.get("timeout_s", 60.0))
        known = OPERATIONAL_KEYS | self.COMMON_SETTINGS | self.extra_settings
        unknown = sorted(k for k in settings if k not in known)
        if unknown:
            raise ConfigError(
                f"models.{name}: settings {', '.join(unknown)} are not understood by backend "
                f"{settings.get('backend')!r} (known: {', '.join(sorted(known))})"
            )
        temperature = settings.get("temperature", self.default_temperature)
        if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, (int, float))):
            raise ConfigError(f"models.{name}.temperature must be a number or null, got {temperature!r}")
        self.temperature: float | None = None if temperature is None else float(temperature)
        self.max_output_tokens: int = registry.max_output_tokens(settings, name)
        extra = settings.get("extra_body") or {}
        if not isinstance(extra, Mapping):
            raise ConfigError(f"models.{name}.extra_body must be a mapping")
        self.extra_body: dict[str, Any] = dict(extra)
        self._clients: list[Any] = []
        self._turn = 0
        #: False: plain calls over the lean HTTP client (backends with a runtime_module); True: the SDK
        #: (tests compare the two)
        self.via_sdk = not self.runtime_module
        self._http: Any = None  # models.http.JsonHttp, made on first use

    @property  # type: ignore[override]
    def times_out(self) -> bool:
        """The lean HTTP client's total timeout is ``timeout_s`` (:meth:`http`); the SDKs' are not."""
        return not self.via_sdk

    @property
    def provider_name(self) -> str:
        """The provider serving the endpoint (``provider`` in params, else the backend's)."""
        return str(self.settings.get("provider") or self.provider)

    # -- the key ------------------------------------------------------------------
    def api_key(self) -> str:
        value = os.environ.get(self.key_env, "")
        if not value.strip():
            raise MissingKeyError(
                f"model {self.name!r} needs an API key: set the environment variable {self.key_env} "
                f"(named by models.{self.name}.api_key_env in params.yaml); no call was made"
            )
        return value.strip()

    def secrets(self) -> list[str]:
        value = os.environ.get(self.key_env, "").strip()
        return [value] if value else []

    def check_ready(self) -> None:
        """The SDK is installed (it starts importing in the background) and the key is set."""
        module = self.runtime_module or self.sdk_module
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            raise BackendError(
                f"backend {self.settings.get('backend')!r} needs the Python package {module!r}; "
                f"install it with pip install -e '.[api]'"
            )
        # importing an SDK takes about half a second: overlap it with reading the data
        if module not in sys.modules:
            import_in_background(module)
        self.api_key()

    # -- identity -----------------------------------------------------------------
    def may_reason(self) -> bool:
        """True when the request does not switch reasoning / thinking off (it may spend the output budget)."""
        return False

    def generation_settings(self) -> dict[str, Any]:
        """Everything sent besides the prompt and the image that can change the answer."""
        return {
            "temperature": self.temperature,
            "max_output_tokens": self.max_output_tokens,
            "extra_body": self.extra_body,
        }

    def cache_identity(self) -> dict[str, Any]:
        return {
            "backend": self.settings.get("backend"),
            "provider": self.settings.get("provider") or self.provider,
            "model_id": self.model_id,
            "generation": self.generation_settings(),
        }

    def estimate_input_tokens(self, query: "Query", width: int | None, height: int | None) -> int:
        return max(1, len(query.text) // 4) + self.image_tokens(self.provider_name, width, height)

    # -- SDK clients --------------------------------------------------------------
    #: requests in flight per SDK client: httpx's pool scans every connection for each
    #: request, so 64 connections in one pool cost ~1 ms of CPU per call; a few small
    #: pools (clients used in turn) keep that flat.
    connections_per_client: ClassVar[int] = 16

    def make_client(self) -> Any:
        """A new SDK client (the key passed in memory, the SDK's retries off)."""
        raise NotImplementedError

    async def close_client(self, client: Any) -> None:
        await client.close()

    def prepare(self) -> None:
        if not self.via_sdk:
            self.http().prepare()
            return
        if not self._clients:
            concurrency = int(self.settings.get("concurrency", 8) or 1)
            n = max(1, math.ceil(concurrency / self.connections_per_client))
            self._clients.extend(self.make_client() for _ in range(n))

    def client(self) -> Any:
        """The next SDK client, round robin (created by :meth:`prepare` or on first use)."""
        if not self._clients:
            self.prepare()
        self._turn += 1
        return self._clients[self._turn % len(self._clients)]

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None
        while self._clients:
            await self.close_client(self._clients.pop())

    # -- the lean HTTP client (models/http.py) -------------------------------------
    #: the API's base URL when neither ``base_url`` nor :attr:`base_url_env` gives one
    default_base_url: ClassVar[str] = ""
    #: the environment variable the provider's SDK reads its base URL from
    base_url_env: ClassVar[str] = ""

    def http_headers(self) -> dict[str, str]:
        """The headers of every plain call: the key (in memory only) and the content type."""
        raise NotImplementedError

    def http(self) -> Any:
        """The lean HTTP client (:class:`~.http.JsonHttp`) of this backend's plain calls."""
        if self._http is None:
            from .http import JsonHttp

            base = self.base_url or (os.environ.get(self.base_url_env) if self.base_url_env else None) or self.default_base_url
            concurrency = int(self.settings.get("concurrency", 8) or 1)
            self._http = JsonHttp(base, self.http_headers(), timeout_s=self.timeout_s, concurrency=concurrency)
        return self._http


#: backend name -> "module:Class", derived from the one registry (sabre_prior.registry).
REGISTRY: dict[str, str] = {spec.name: spec.target for spec in registry.BACKENDS}


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
            f"install it (e.g. pip install -e '.[api]' for API backends, '.[local]' for local models; "
            f"this backend uses: {', '.join(registry.SPECS[backend].packages) or 'no extra package'})"
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
