"""Anthropic Messages API through the official ``anthropic`` SDK.

The SDK's own retries are off (``max_retries=0``): the engine retries, counts
and journals.  Settings besides the common ones:

* ``thinking_budget``: 0 sends ``thinking: {type: disabled}``, N >= 1024 sends
  ``{type: enabled, budget_tokens: N}``; unset sends nothing (the API's default);
* ``reasoning_effort``: sent as ``output_config.effort`` (low ... max).

Plain calls are the documented REST call ``POST {base_url}/v1/messages`` with the
``x-api-key``, ``anthropic-version`` and ``content-type: application/json`` headers
(https://docs.anthropic.com/en/api/overview, https://docs.anthropic.com/en/api/versioning),
made by the lean client of :mod:`.http` (no SDK import at start-up); the response
headers (``anthropic-ratelimit-*``) go to the engine's pacing.

The installed SDK's ``messages.create`` has no ``temperature`` argument, so by
default none is sent; a ``temperature`` in the params entry goes in the request
body.
"""

from __future__ import annotations

import base64
import json
import logging
from typing import Any, ClassVar, Mapping

from ...errors import ConfigError
from ..outcomes import classify_anthropic_message, classify_error
from .base import ApiBackend, Completion, ImageTokenRule, Query
from .openai_backend import map_openai_error

#: the SDK's default endpoint (``ANTHROPIC_BASE_URL`` overrides it, as for the SDK)
DEFAULT_BASE_URL = "https://api.anthropic.com"
#: the documented API version header (https://docs.anthropic.com/en/api/versioning)
API_VERSION = "2023-06-01"

for _name in ("anthropic", "httpx", "httpx2", "httpcore"):
    logging.getLogger(_name).setLevel(logging.WARNING)


def anthropic_image_tokens(w: float, h: float) -> int:
    """w*h/750 after the API's downscale to 1568 px / ~1,600 tokens
    (https://docs.anthropic.com/en/docs/vision, "Evaluate image size"; docs/api_models.md)."""
    s = min(1.0, 1568 / max(w, h))
    return max(1, min(1600, round(w * s * h * s / 750)))


class AnthropicBackend(ApiBackend):
    provider: ClassVar[str] = "anthropic"
    sdk_module: ClassVar[str] = "anthropic"
    runtime_module: ClassVar[str] = "aiohttp"
    default_base_url: ClassVar[str] = DEFAULT_BASE_URL
    base_url_env: ClassVar[str] = "ANTHROPIC_BASE_URL"
    extra_settings: ClassVar[frozenset[str]] = frozenset({"thinking_budget", "reasoning_effort"})
    default_temperature: ClassVar[float | None] = None
    image_token_rules: ClassVar[Mapping[str, ImageTokenRule]] = {"anthropic": anthropic_image_tokens}
    #: 400 invalid_request_error "Output blocked by content filtering policy": this request's content
    #: was refused (as reported in https://github.com/anthropics/claude-code/issues/43487 and #6195)
    refusal_phrases: ClassVar[tuple[str, ...]] = ("content filtering policy",)

    def __init__(self, name: str, settings: Mapping[str, Any]) -> None:
        super().__init__(name, settings)
        budget = settings.get("thinking_budget")
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 0):
            raise ConfigError(f"models.{name}.thinking_budget must be 0 (off) or a number of tokens >= 1024")
        self.thinking_budget: int | None = budget
        self.reasoning_effort = settings.get("reasoning_effort")

    def may_reason(self) -> bool:
        return self.thinking_budget != 0 and self.thinking_budget is not None

    def generation_settings(self) -> dict[str, Any]:
        out = super().generation_settings()
        out.update(thinking_budget=self.thinking_budget, reasoning_effort=self.reasoning_effort)
        return out

    def make_client(self) -> Any:
        import anthropic

        return anthropic.AsyncAnthropic(
            api_key=self.api_key(),
            base_url=self.base_url,
            max_retries=0,
            timeout=self.timeout_s + 1.0,
        )

    def request(self, query: Query) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` (image first, then the text)."""
        image = {
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": query.image_mime,
                "data": base64.b64encode(query.image).decode("ascii"),
            },
        }
        kwargs: dict[str, Any] = {
            "model": self.model_id,
            "max_tokens": self.max_output_tokens,
            "messages": [{"role": "user", "content": [image, {"type": "text", "text": query.text}]}],
        }
        if self.thinking_budget is not None:
            kwargs["thinking"] = (
                {"type": "disabled"}
                if self.thinking_budget == 0
                else {"type": "enabled", "budget_tokens": self.thinking_budget}
            )
        if self.reasoning_effort is not None:
            kwargs["output_config"] = {"effort": self.reasoning_effort}
        body = dict(self.extra_body)
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if body:
            kwargs["extra_body"] = body
        return kwargs

    def request_body(self, query: Query) -> bytes:
        """The JSON body :meth:`request` describes (``extra_body`` merged in, as the SDK does)."""
        kwargs = self.request(query)
        kwargs.update(kwargs.pop("extra_body", None) or {})
        return json.dumps(kwargs, ensure_ascii=False, separators=(",", ":")).encode()

    def http_headers(self) -> dict[str, str]:
        return {"x-api-key": self.api_key(), "anthropic-version": API_VERSION, "content-type": "application/json",
                "accept": "application/json"}  # fmt: skip

    async def acomplete(self, query: Query) -> Completion:
        if self.via_sdk:
            client = self.client()
            try:
                resp = await client.messages.create(**self.request(query))
            except Exception as exc:
                raise map_openai_error(exc, "anthropic", self.provider_name) from None
            return parse_message(resp)
        answer = await self.http().post("/v1/messages", self.request_body(query))
        if not 200 <= answer.status < 300:
            err = classify_error("anthropic", answer.status, answer.body, answer.headers, provider=self.provider_name)
            err.headers = answer.headers
            raise err
        completion = parse_message(answer.json())
        completion.headers = answer.headers
        return completion


def parse_message(resp: Any) -> Completion:
    """A Messages API message -> Completion with its outcome (see :mod:`sabre_prior.inference.outcomes`)."""
    return classify_anthropic_message(resp)
