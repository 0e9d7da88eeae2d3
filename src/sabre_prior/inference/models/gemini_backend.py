"""Google Gemini through the official ``google-genai`` SDK.

The endpoint is set with ``HttpOptions(base_url=...)`` (``base_url`` in params);
the SDK's retries are off (``HttpRetryOptions(attempts=1)``): the engine
retries, counts and journals.  Settings besides the common ones:

* ``thinking_budget``: ``thinking_config.thinking_budget`` (0 turns thinking off
  where the model allows it);
* ``reasoning_effort``: ``thinking_config.thinking_level`` (minimal, low,
  medium, high).

Thinking tokens are billed as output: they are added to ``output_tokens`` (and
also kept apart in the journal's ``extra.thoughts_tokens``).
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Any, ClassVar, Mapping

from ...errors import ConfigError
from ..outcomes import call_error_from_exception, classify_error, classify_gemini_response, parse_duration
from .base import ApiBackend, CallError, Completion, ImageTokenRule, Query

for _name in ("google_genai", "google.genai", "httpx", "httpx2", "httpcore", "aiohttp"):
    logging.getLogger(_name).setLevel(logging.WARNING)


def gemini_retry_delay(error: Any) -> float | None:
    """``google.rpc.RetryInfo.retryDelay`` from a Gemini error's ``details``
    (https://ai.google.dev/gemini-api/docs/rate-limits; https://cloud.google.com/apis/design/errors#error_details)."""
    details = error.get("details") if isinstance(error, Mapping) else getattr(error, "details", None)
    if not isinstance(details, (list, tuple)):
        return None
    for d in details:
        if isinstance(d, Mapping) and str(d.get("@type", "")).endswith("google.rpc.RetryInfo"):
            delay = d.get("retryDelay") or d.get("retry_delay")
            if isinstance(delay, Mapping):  # {"seconds": 37, "nanos": 0}
                return float(delay.get("seconds", 0)) + float(delay.get("nanos", 0)) / 1e9
            if delay is not None:
                return parse_duration(str(delay))
    return None


def gemini_image_tokens(w: float, h: float) -> int:
    """258 per 768x768 tile, 258 in all when both sides <= 384 (Gemini token guide; docs/api_models.md)."""
    if w <= 384 and h <= 384:
        return 258
    return 258 * math.ceil(w / 768) * math.ceil(h / 768)


def map_gemini_error(exc: BaseException) -> CallError:
    code = getattr(exc, "code", None)
    if isinstance(code, int) and not isinstance(code, bool) and hasattr(exc, "details"):
        # google-genai errors.APIError: the HTTP status in ``code``, the error body in ``details``,
        # the google.rpc status name in ``status``
        headers = getattr(getattr(exc, "response", None), "headers", None)
        status = getattr(exc, "status", None)
        message = f"{status + ': ' if status else ''}{getattr(exc, 'message', None) or str(exc)}"
        return classify_error("gemini", code, getattr(exc, "details", None), headers, message, "google")
    err = call_error_from_exception(exc, "gemini", "google")
    if err is not None:
        return err
    if isinstance(exc, asyncio.TimeoutError) or "Timeout" in type(exc).__name__:
        return CallError(f"request timed out ({type(exc).__name__})", retryable=True, kind="timeout")
    name = type(exc).__name__
    if any(s in name for s in ("Connect", "Connection", "Disconnected", "ClientOSError", "ClientPayloadError")):
        return CallError(f"connection failed ({name}: {exc})", retryable=True, kind="connection")
    return CallError(f"malformed response ({name}: {exc})", retryable=True, kind="malformed")


class GeminiBackend(ApiBackend):
    provider: ClassVar[str] = "gemini"
    sdk_module: ClassVar[str] = "google.genai"
    extra_settings: ClassVar[frozenset[str]] = frozenset({"thinking_budget", "reasoning_effort"})
    image_token_rules: ClassVar[Mapping[str, ImageTokenRule]] = {"gemini": gemini_image_tokens, "google": gemini_image_tokens}
    retry_delay_from_error = staticmethod(gemini_retry_delay)

    def __init__(self, name: str, settings: Mapping[str, Any]) -> None:
        super().__init__(name, settings)
        budget = settings.get("thinking_budget")
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < -1):
            raise ConfigError(f"models.{name}.thinking_budget must be a number of tokens (0: off, -1: dynamic)")
        self.thinking_budget: int | None = budget
        effort = settings.get("reasoning_effort")
        if effort is not None and str(effort).upper() not in ("MINIMAL", "LOW", "MEDIUM", "HIGH", "XHIGH"):
            raise ConfigError(f"models.{name}.reasoning_effort must be minimal, low, medium, high or xhigh for Gemini")
        self.reasoning_effort: str | None = None if effort is None else str(effort).upper()

    def may_reason(self) -> bool:
        return self.thinking_budget != 0  # Gemini 3 models think at every thinking_level

    def generation_settings(self) -> dict[str, Any]:
        out = super().generation_settings()
        out.update(thinking_budget=self.thinking_budget, reasoning_effort=self.reasoning_effort)
        return out

    #: one client: the SDK's aiohttp pool does not slow down with many connections
    connections_per_client: ClassVar[int] = 1 << 30

    def make_client(self) -> Any:
        from google import genai
        from google.genai import types

        options: dict[str, Any] = {
            "timeout": int((self.timeout_s + 1.0) * 1000),  # milliseconds
            "retry_options": types.HttpRetryOptions(attempts=1),
        }
        if self.base_url:
            options["base_url"] = self.base_url
        if self.extra_body:
            options["extra_body"] = self.extra_body
        return genai.Client(api_key=self.api_key(), http_options=types.HttpOptions(**options))

    async def close_client(self, client: Any) -> None:
        await client.aio.aclose()

    def request(self, query: Query) -> dict[str, Any]:
        """The keyword arguments of ``aio.models.generate_content`` (image first, then the text)."""
        from google.genai import types

        config: dict[str, Any] = {"max_output_tokens": self.max_output_tokens, "candidate_count": 1}
        if self.temperature is not None:
            config["temperature"] = self.temperature
        thinking: dict[str, Any] = {}
        if self.thinking_budget is not None:
            thinking["thinking_budget"] = self.thinking_budget
        if self.reasoning_effort is not None:
            thinking["thinking_level"] = self.reasoning_effort
        if thinking:
            config["thinking_config"] = types.ThinkingConfig(**thinking)
        contents = [
            types.Content(
                role="user",
                parts=[types.Part.from_bytes(data=query.image, mime_type=query.image_mime), types.Part.from_text(text=query.text)],
            )
        ]
        return {"model": self.model_id, "contents": contents, "config": types.GenerateContentConfig(**config)}

    async def acomplete(self, query: Query) -> Completion:
        client = self.client()
        try:
            resp = await client.aio.models.generate_content(**self.request(query))
        except Exception as exc:
            raise map_gemini_error(exc) from None
        return parse_generate_content(resp)



def parse_generate_content(resp: Any) -> Completion:
    """A GenerateContentResponse -> Completion with its outcome (see :mod:`sabre_prior.inference.outcomes`)."""
    return classify_gemini_response(resp)
