"""Google Gemini: ``models.generateContent`` over the lean HTTP client, as the ``google-genai`` SDK sends it.

The plain calls go over :class:`~.http.JsonHttp` (``aiohttp``) with the JSON body the installed
``google-genai`` SDK builds (``aio.models.generate_content``: its request converters and pydantic's
URL-safe base64 for the image bytes, which the API accepts like standard base64 under proto3's JSON
mapping), to ``{base_url}/{api_version}/models/{model}:generateContent`` with the
``x-goog-api-key`` header; the API version is the SDK's (``google/genai/_api_client.py``: ``v1``
unless GOOGLE_GENAI_API_VERSION says otherwise, ``beta`` meaning ``v1beta``). Importing the SDK
costs about a second, and its request and response models cost CPU on every call (at 200 requests
a second it topped out at 130-185 a second on 2 cores); ``tests/models/test_api_backends.py``
checks that both paths send the same body. The SDK (``via_sdk``, its retries off with
``HttpRetryOptions(attempts=1)``) stays for the batch API (``batch_gemini.py``).
Settings besides the common ones:

* ``thinking_budget``: ``thinking_config.thinking_budget`` (0 turns thinking off
  where the model allows it);
* ``reasoning_effort``: ``thinking_config.thinking_level`` (minimal, low,
  medium, high).

Thinking tokens are billed as output: they are added to ``output_tokens`` (and
also kept apart in the journal's ``extra.thoughts_tokens``).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import math
import os
from collections.abc import Mapping  # isinstance against typing.Mapping is ~30x slower
from typing import Any, ClassVar

from ...errors import ConfigError
from ..outcomes import call_error_from_exception, classify_error, classify_gemini_response, error_fields, parse_duration
from .base import ApiBackend, CallError, Completion, ImageTokenRule, Query

#: The Gemini Developer API (google-genai's default base URL, ``_api_client.py``).
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"

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
    runtime_module: ClassVar[str] = "aiohttp"
    default_base_url: ClassVar[str] = DEFAULT_BASE_URL
    #: google-genai reads it too (``_base_url.py``)
    base_url_env: ClassVar[str] = "GOOGLE_GEMINI_BASE_URL"
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

    def thinking_config(self) -> dict[str, Any]:
        """``ThinkingConfig``'s fields (the SDK sends them under these names)."""
        thinking: dict[str, Any] = {}
        if self.thinking_budget is not None:
            thinking["thinking_budget"] = self.thinking_budget
        if self.reasoning_effort is not None:
            thinking["thinking_level"] = self.reasoning_effort
        return thinking

    def request(self, query: Query) -> dict[str, Any]:
        """The keyword arguments of ``aio.models.generate_content`` (image first, then the text)."""
        from google.genai import types

        config: dict[str, Any] = {"max_output_tokens": self.max_output_tokens, "candidate_count": 1}
        if self.temperature is not None:
            config["temperature"] = self.temperature
        thinking = self.thinking_config()
        if thinking:
            config["thinking_config"] = types.ThinkingConfig(**thinking)
        contents = [
            types.Content(
                role="user",
                parts=[types.Part.from_bytes(data=query.image, mime_type=query.image_mime), types.Part.from_text(text=query.text)],
            )
        ]
        return {"model": self.model_id, "contents": contents, "config": types.GenerateContentConfig(**config)}

    def request_body(self, query: Query) -> bytes:
        """The JSON body the SDK sends for :meth:`request` (google-genai's ``_GenerateContentParameters_to_mldev``:
        camelCase fields, ``thinkingConfig``'s own fields and ``mime_type`` as the SDK writes them, the
        image as URL-safe base64; ``extra_body`` merged in depth, as ``HttpOptions.extra_body`` is)."""
        config: dict[str, Any] = {"candidateCount": 1, "maxOutputTokens": self.max_output_tokens}
        if self.temperature is not None:
            config["temperature"] = self.temperature
        thinking = self.thinking_config()
        if thinking:
            config["thinkingConfig"] = thinking
        image = {"inlineData": {"data": base64.urlsafe_b64encode(query.image).decode("ascii"), "mime_type": query.image_mime}}
        body: dict[str, Any] = {
            "contents": [{"parts": [image, {"text": query.text}], "role": "user"}],
            "generationConfig": config,
        }
        _merge(body, self.extra_body)
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()

    def path(self) -> str:
        """``/{api_version}/models/{model}:generateContent``, the API version as the SDK chooses it."""
        env = os.environ.get("GOOGLE_GENAI_API_VERSION")
        version = "v1beta" if env == "beta" else (env or "v1")
        model = self.model_id if self.model_id.startswith(("models/", "tunedModels/")) else f"models/{self.model_id}"
        return f"/{version}/{model}:generateContent"

    def http_headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self.api_key(), "Content-Type": "application/json", "Accept": "application/json"}

    async def acomplete(self, query: Query) -> Completion:
        if self.via_sdk:
            client = self.client()
            try:
                resp = await client.aio.models.generate_content(**self.request(query))
            except Exception as exc:
                raise map_gemini_error(exc) from None
            return parse_generate_content(resp)
        answer = await self.http().post(self.path(), self.request_body(query))
        if not 200 <= answer.status < 300:
            # the message as google-genai's APIError gives it: "<google.rpc status>: <message>"
            error, _, _, message = error_fields(answer.body)
            status = error.get("status") if isinstance(error, Mapping) else None
            text = f"{status + ': ' if status else ''}{message}" if message else None
            err = classify_error("gemini", answer.status, answer.body, answer.headers, text, "google")
            err.headers = answer.headers
            raise err
        completion = parse_generate_content(answer.json())
        completion.headers = answer.headers
        return completion


def _merge(into: dict[str, Any], extra: Mapping[str, Any]) -> None:
    """Merge ``extra`` into ``into``, mappings in depth, a key matching one of ``into`` in either case
    (``generation_config`` is ``generationConfig``) taking that key's spelling: ``HttpOptions.extra_body``
    as google-genai's ``_common.recursive_dict_update`` and ``align_key_case`` apply it."""
    spelled = {k.replace("_", "").lower(): k for k in into}
    for given, value in extra.items():
        key = spelled.get(str(given).replace("_", "").lower(), given)
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value



def parse_generate_content(resp: Any) -> Completion:
    """A GenerateContentResponse -> Completion with its outcome (see :mod:`sabre_prior.inference.outcomes`)."""
    return classify_gemini_response(resp)
