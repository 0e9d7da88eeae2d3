"""OpenAI chat completions through the official ``openai`` SDK.

Also serves every OpenAI-compatible endpoint (xAI, Moonshot, Alibaba's
compatible mode, a vLLM or SGLang server) through ``base_url``.  The SDK's own
retries are off (``max_retries=0``): the engine retries, counts and journals.

Settings besides the common ones: ``reasoning_effort`` (sent as is),
``max_tokens_field`` (``max_completion_tokens``, the default, or ``max_tokens``
for older compatible servers), ``image_detail`` (``low``/``high``/``auto``).

The request is the documented REST call ``POST {base_url}/chat/completions``
with ``Authorization: Bearer <key>`` (https://platform.openai.com/docs/api-reference/chat/create,
https://platform.openai.com/docs/api-reference/authentication; ``OpenAI-Organization`` /
``OpenAI-Project`` from ``OPENAI_ORG_ID`` / ``OPENAI_PROJECT_ID`` as the SDK sends them),
made by the lean client of :mod:`.http` (importing the SDK costs about a second of
start-up); the SDK's ``chat.completions.create`` sends the same body (a test checks it).
The JSON body is assembled here: the base64 image needs no JSON escaping, so it is
spliced in as bytes instead of being scanned by the JSON encoder (about 1.3 ms per
300 KB image, the main client-side cost at high concurrency).  The response headers
(``x-ratelimit-*``) go to the engine's pacing.
"""

from __future__ import annotations

import base64
import inspect
import json
import logging
import math
import os
from typing import Any, ClassVar, Mapping

from ...errors import ConfigError
from ..outcomes import call_error_from_exception, classify_error, classify_openai_chat
from .base import ApiBackend, CallError, Completion, ImageTokenRule, Query

#: the SDK's default endpoint (``OPENAI_BASE_URL`` overrides it, as for the SDK)
DEFAULT_BASE_URL = "https://api.openai.com/v1"

for _name in ("openai", "httpx", "httpx2", "httpcore"):
    logging.getLogger(_name).setLevel(logging.WARNING)


_IMAGE_SLOT = "@@sabre-image-data-url@@"


def data_url(query: Query) -> str:
    return f"data:{query.image_mime};base64,{base64.b64encode(query.image).decode('ascii')}"


def map_openai_error(exc: BaseException, protocol: str = "openai", provider: str | None = None) -> CallError:
    """SDK exception -> CallError (shared with the Anthropic backend: same SDK family)."""
    err = call_error_from_exception(exc, protocol, provider)
    if err is not None:
        return err
    name = type(exc).__name__
    if "Timeout" in name:
        return CallError(f"request timed out ({name})", retryable=True, kind="timeout")
    if "Connection" in name:
        return CallError(f"connection failed ({name}: {exc})", retryable=True, kind="connection")
    return CallError(f"malformed response ({name}: {exc})", retryable=True, kind="malformed")


def openai_image_tokens(w: float, h: float) -> int:
    """OpenAI, high detail: fit 2048x2048, shortest side 768, 170 per 512 tile + 85
    (OpenAI vision guide, "Calculating costs"; docs/api_models.md)."""
    s = min(1.0, 2048 / max(w, h))
    w, h = w * s, h * s
    s = min(1.0, 768 / min(w, h))
    w, h = w * s, h * s
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def qwen_vl_image_tokens(w: float, h: float) -> int:
    """Alibaba Qwen3.x VL: one token per 32x32 pixels, +2, at most 16,384 per image (Model Studio
    vision guide, "Up to 16,384 per image"; the 32-px patch as docs/api_models.md explains)."""
    return min(16384, math.ceil(w / 32) * math.ceil(h / 32) + 2)


class OpenAIBackend(ApiBackend):
    provider: ClassVar[str] = "openai"
    sdk_module: ClassVar[str] = "openai"
    runtime_module: ClassVar[str] = "aiohttp"
    default_base_url: ClassVar[str] = DEFAULT_BASE_URL
    base_url_env: ClassVar[str] = "OPENAI_BASE_URL"
    extra_settings: ClassVar[frozenset[str]] = frozenset({"reasoning_effort", "max_tokens_field", "image_detail"})
    #: OpenAI-compatible providers without a rule here (xAI, Moonshot) use the generic one
    image_token_rules: ClassVar[Mapping[str, ImageTokenRule]] = {"openai": openai_image_tokens, "alibaba": qwen_vl_image_tokens}

    def __init__(self, name: str, settings: Mapping[str, Any]) -> None:
        super().__init__(name, settings)
        self.max_tokens_field = settings.get("max_tokens_field", "max_completion_tokens")
        if self.max_tokens_field not in ("max_completion_tokens", "max_tokens"):
            raise ConfigError(f"models.{name}.max_tokens_field must be max_completion_tokens or max_tokens")
        self.reasoning_effort = settings.get("reasoning_effort")
        self.image_detail = settings.get("image_detail")
        if self.image_detail not in (None, "low", "high", "auto"):
            raise ConfigError(f"models.{name}.image_detail must be low, high or auto")
        if settings.get("thinking_budget") is not None:
            raise ConfigError(f"models.{name}: thinking_budget is not an OpenAI setting; use reasoning_effort")
        self._raw_post: bool | None = None  # None: not checked yet

    def may_reason(self) -> bool:
        off = self.reasoning_effort == "none" or self.extra_body.get("enable_thinking") is False
        thinking = self.extra_body.get("thinking")
        off = off or (isinstance(thinking, Mapping) and thinking.get("type") == "disabled")
        return not off

    def generation_settings(self) -> dict[str, Any]:
        out = super().generation_settings()
        out.update(
            reasoning_effort=self.reasoning_effort,
            max_tokens_field=self.max_tokens_field,
            image_detail=self.image_detail,
        )
        return out

    def make_client(self) -> Any:
        import openai

        return openai.AsyncOpenAI(
            api_key=self.api_key(),
            base_url=self.base_url,
            max_retries=0,
            timeout=self.timeout_s + 1.0,
        )

    def request(self, query: Query, image_url: str | None = None) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` (image first, then the text)."""
        image: dict[str, Any] = {"url": image_url if image_url is not None else data_url(query)}
        if self.image_detail:
            image["detail"] = self.image_detail
        kwargs: dict[str, Any] = {
            "model": self.model_id,
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": image}, {"type": "text", "text": query.text}],
                }
            ],
            "n": 1,
            self.max_tokens_field: self.max_output_tokens,
        }
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.reasoning_effort is not None:
            kwargs["reasoning_effort"] = self.reasoning_effort
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        return kwargs

    def request_body(self, query: Query) -> bytes:
        """The JSON body of :meth:`request` (with ``extra_body`` merged), image spliced in as bytes."""
        kwargs = self.request(query, image_url=_IMAGE_SLOT)
        extra = kwargs.pop("extra_body", None) or {}
        kwargs.update(extra)
        head, _, tail = json.dumps(kwargs, ensure_ascii=False, separators=(",", ":")).partition(_IMAGE_SLOT)
        return b"".join(
            (head.encode(), b"data:", query.image_mime.encode("ascii"), b";base64,", base64.b64encode(query.image), tail.encode())
        )

    def _raw_post_supported(self, client: Any) -> bool:
        if self._raw_post is None:
            try:
                self._raw_post = "content" in inspect.signature(client.post).parameters
            except (TypeError, ValueError):
                self._raw_post = False
        return self._raw_post

    def http_headers(self) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.api_key()}", "Content-Type": "application/json", "Accept": "application/json"}
        for env, name in (("OPENAI_ORG_ID", "OpenAI-Organization"), ("OPENAI_PROJECT_ID", "OpenAI-Project")):
            if os.environ.get(env) and self.provider_name == "openai":
                headers[name] = os.environ[env]
        return headers

    async def acomplete(self, query: Query) -> Completion:
        if self.via_sdk:
            return await self._acomplete_sdk(query)
        answer = await self.http().post("/chat/completions", self.request_body(query))
        if not 200 <= answer.status < 300:
            err = classify_error("openai", answer.status, answer.body, answer.headers, provider=self.provider_name)
            err.headers = answer.headers
            raise err
        completion = parse_chat_completion(answer.json(), self.provider_name)
        completion.headers = answer.headers
        return completion

    async def _acomplete_sdk(self, query: Query) -> Completion:
        client = self.client()
        try:
            if self._raw_post_supported(client):
                from openai.types.chat import ChatCompletion

                resp = await client.post(
                    "/chat/completions",
                    cast_to=ChatCompletion,
                    content=self.request_body(query),
                    options={"headers": {"Content-Type": "application/json"}},
                )
            else:
                resp = await client.chat.completions.create(**self.request(query))
        except Exception as exc:
            raise map_openai_error(exc, "openai", self.provider_name) from None
        return parse_chat_completion(resp, self.provider_name)


def parse_chat_completion(resp: Any, provider: str | None = None) -> Completion:
    """A chat completion -> Completion with its outcome (see :func:`sabre_prior.inference.outcomes.classify_openai_chat`)."""
    return classify_openai_chat(resp, provider=provider)
