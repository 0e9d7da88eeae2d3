"""The three wire protocols: parse a request, build an answer or an error.

:func:`documented_fault` builds each provider's documented non-answer (refusal
signals, blocked prompts, moderation 400s, token-budget finishes, quota and
overload errors, rate-limit reset headers); the source of each is named beside it.
"""

from __future__ import annotations

import base64
import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from aiohttp import web

#: What the fakes say served an answer (tests set "model" / "system_fingerprint" to play a provider
#: that changed the version behind a model name: drift, issue 21).
SERVED: dict[str, str] = {}


def b64decode(data: str) -> bytes:
    """Standard or URL-safe base64 (the Gemini SDK sends URL-safe)."""
    return base64.b64decode(data.replace("-", "+").replace("_", "/"), validate=True)


# -- OpenAI chat completions --------------------------------------------------------------
def _openai_parse(path: str, body: Mapping[str, Any]) -> tuple[str, str, str]:
    content = body["messages"][-1]["content"]
    text = "".join(p["text"] for p in content if p.get("type") == "text")
    url = next(p["image_url"]["url"] for p in content if p.get("type") == "image_url")
    header, _, data = url.partition(",")
    if not header.startswith("data:image/") or not header.endswith(";base64"):
        raise ValueError(f"image_url is not a base64 data URL: {header[:40]!r}")
    return body["model"], text, data


def _openai_body(
    model: str, content: str | None, tin: int, tout: int, *, finish: str = "stop", refusal: str | None = None,
    reasoning: int = 0, apart: bool = False,
) -> dict[str, Any]:
    # https://platform.openai.com/docs/api-reference/chat/object; usage.completion_tokens_details.reasoning_tokens
    # is part of completion_tokens at OpenAI (https://platform.openai.com/docs/guides/reasoning) and apart from it
    # at xAI ("separated from the completion_tokens",
    # https://docs.cloud.google.com/vertex-ai/generative-ai/docs/partner-models/grok/capabilities/reasoning)
    usage: dict[str, Any] = {"prompt_tokens": tin, "completion_tokens": tout, "total_tokens": tin + tout}
    if reasoning:
        completion = tout if apart else tout + reasoning
        usage = {
            "prompt_tokens": tin,
            "completion_tokens": completion,
            "total_tokens": tin + tout + reasoning,
            "completion_tokens_details": {"reasoning_tokens": reasoning},
        }
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal}
    # id / model / system_fingerprint: https://platform.openai.com/docs/api-reference/chat/object
    # ("model": the model used, a dated snapshot when an alias was asked for; "system_fingerprint":
    # the backend configuration; openai-python types/chat/chat_completion.py). SERVED overrides them.
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": 0,
        "model": SERVED.get("model", f"{model}-2026-01-01"),
        "system_fingerprint": SERVED.get("system_fingerprint", "fp_fake0001"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": usage,
    }


def _openai_ok(model: str, answer: str, tin: int, tout: int, reasoning: int = 0, apart: bool = False) -> web.Response:
    return web.json_response(_openai_body(model, answer, tin, tout, reasoning=reasoning, apart=apart))


def _openai_error(status: int, message: str, headers: Mapping[str, str] | None = None) -> web.Response:
    return web.json_response(
        {"error": {"message": message, "type": "fake_error", "code": str(status)}}, status=status, headers=headers
    )


# -- Anthropic Messages -----------------------------------------------------------------------
def _anthropic_parse(path: str, body: Mapping[str, Any]) -> tuple[str, str, str]:
    content = body["messages"][-1]["content"]
    text = "".join(p["text"] for p in content if p.get("type") == "text")
    image = next(p for p in content if p.get("type") == "image")
    if image["source"]["type"] != "base64":
        raise ValueError("image source is not base64")
    return body["model"], text, image["source"]["data"]


def _anthropic_body(model: str, answer: str, tin: int, tout: int, stop: str = "end_turn") -> dict[str, Any]:
    # https://docs.anthropic.com/en/api/messages (response: content, stop_reason, usage)
    # id / model: "The model that handled the request" (https://docs.anthropic.com/en/api/messages); no fingerprint
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": SERVED.get("model", model),
        "content": [{"type": "text", "text": answer}] if answer else [],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": tin, "output_tokens": tout},
    }


def _anthropic_ok(model: str, answer: str, tin: int, tout: int, reasoning: int = 0, apart: bool = False) -> web.Response:
    # thinking tokens are billed inside output_tokens (https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking)
    return web.json_response(_anthropic_body(model, answer, tin, tout + reasoning))


#: error.type per status, https://docs.anthropic.com/en/api/errors ("HTTP errors"); 503 is not
#: listed there and gets the generic api_error; 529 is overloaded_error.
_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "api_error",
    529: "overloaded_error",
}


def _anthropic_error(status: int, message: str, headers: Mapping[str, str] | None = None) -> web.Response:
    err = {"type": _ANTHROPIC_TYPES.get(status, "api_error"), "message": message}
    return web.json_response({"type": "error", "error": err}, status=status, headers=headers)


# -- Gemini generateContent ----------------------------------------------------------------------
def _gemini_parse(path: str, body: Mapping[str, Any]) -> tuple[str, str, str]:
    model = path.rsplit("/models/", 1)[1].split(":", 1)[0]
    parts = body["contents"][-1]["parts"]
    text = "".join(p["text"] for p in parts if "text" in p)
    inline = next(p.get("inlineData") or p.get("inline_data") for p in parts if "inlineData" in p or "inline_data" in p)
    return model, text, inline["data"]


def _gemini_body(model: str, answer: str, tin: int, tout: int, finish: str = "STOP", thoughts: int = 0) -> dict[str, Any]:
    # https://ai.google.dev/api/generate-content#v1beta.GenerateContentResponse (usageMetadata.thoughtsTokenCount
    # is reported apart from candidatesTokenCount, https://ai.google.dev/gemini-api/docs/thinking)
    usage: dict[str, Any] = {"promptTokenCount": tin, "candidatesTokenCount": tout, "totalTokenCount": tin + tout + thoughts}
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    parts = [{"text": answer}] if answer else []
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}],
        "usageMetadata": usage,
        # modelVersion / responseId: https://ai.google.dev/api/generate-content#generatecontentresponse
        "modelVersion": SERVED.get("model", model),
        "responseId": uuid.uuid4().hex[:22],
    }


def _gemini_ok(model: str, answer: str, tin: int, tout: int, reasoning: int = 0, apart: bool = False) -> web.Response:
    return web.json_response(_gemini_body(model, answer, tin, tout, thoughts=reasoning))


_GEMINI_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def _gemini_error(status: int, message: str, headers: Mapping[str, str] | None = None) -> web.Response:
    err = {"code": status, "message": message, "status": _GEMINI_STATUS.get(status, "UNKNOWN")}
    return web.json_response({"error": err}, status=status, headers=headers)


@dataclass(frozen=True)
class Protocol:
    name: str
    parse: Callable[[str, Mapping[str, Any]], tuple[str, str, str]]  # model, text, base64 image
    ok: Callable[[str, str, int, int], web.Response]
    error: Callable[..., web.Response]
    api_key: Callable[[web.Request], str | None]


def _bearer(request: web.Request) -> str | None:
    auth = request.headers.get("Authorization", "")
    return auth[7:] if auth.startswith("Bearer ") else None


OPENAI = Protocol("openai", _openai_parse, _openai_ok, _openai_error, _bearer)
ANTHROPIC = Protocol(
    "anthropic", _anthropic_parse, _anthropic_ok, _anthropic_error, lambda r: r.headers.get("x-api-key") or _bearer(r)
)
GEMINI = Protocol(
    "gemini",
    _gemini_parse,
    _gemini_ok,
    _gemini_error,
    lambda r: r.headers.get("x-goog-api-key") or r.query.get("key"),
)
PROTOCOLS = {p.name: p for p in (OPENAI, ANTHROPIC, GEMINI)}


# -- documented non-answers ------------------------------------------------------------------
DOCUMENTED_FAULTS = frozenset({"refusal", "blocked", "moderation", "empty_length", "quota", "overloaded", "429_reset"})
PARTIAL = "Yes, the"  # the partial text of a refusal: must never reach a prediction
MAX_TOKENS = 64


def _json(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> web.Response:
    return web.json_response(body, status=status, headers=headers)


def documented_fault(
    protocol: str, kind: str, model: str, text: str, wait: float | None, variant: str = "", apart: bool = False
) -> tuple[int, web.Response, tuple[int, int]]:
    """(status, response, billed (input, output) tokens) of one documented provider behaviour.

    ``apart``: the model reports reasoning tokens apart from completion_tokens (xAI).
    """
    tin = 85 + len(text) // 4
    wait = 0.3 if wait is None else wait
    if kind == "refusal":
        if protocol == "openai":
            if variant == "refusal_field":
                # message.refusal with no content (https://platform.openai.com/docs/api-reference/chat/object)
                return 200, _json(_openai_body(model, None, tin, 9, refusal="I'm sorry, I can't help with that.")), (tin, 9)
            # finish_reason content_filter with partial text ("content was omitted due to a flag from our
            # content filters", same page; Azure documents partial results: learn.microsoft.com content filter)
            return 200, _json(_openai_body(model, PARTIAL, tin, 3, finish="content_filter")), (tin, 3)
        if protocol == "anthropic":
            # stop_reason refusal after partial text, billed up to the refusal
            # (https://docs.anthropic.com/en/docs/test-and-evaluate/strengthen-guardrails/handle-streaming-refusals)
            return 200, _json(_anthropic_body(model, PARTIAL, tin, 3, stop="refusal")), (tin, 3)
        # finishReason SAFETY with partial text (https://ai.google.dev/api/generate-content#FinishReason)
        return 200, _json(_gemini_body(model, PARTIAL, tin, 3, finish="SAFETY")), (tin, 3)
    if kind == "blocked":
        # no candidate, promptFeedback.blockReason (https://ai.google.dev/api/generate-content#PromptFeedback;
        # body as reported in vercel/ai#4235)
        body = {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": {"promptTokenCount": tin, "totalTokenCount": tin}, "modelVersion": model}
        return 200, _json(body), (tin, 0)
    if kind == "moderation":
        if protocol == "openai" and variant == "moonshot":
            # https://platform.kimi.ai/docs/api/errors (400 content_filter)
            err = {"error": {"type": "content_filter", "message": "The request was rejected because it was considered high risk"}}
        elif protocol == "openai":
            # DashScope compatible mode (https://www.alibabacloud.com/help/en/model-studio/error-code,
            # 400 data_inspection_failed "Input data may contain inappropriate content.")
            err = {
                "error": {"code": "data_inspection_failed", "param": None, "message": "Input data may contain inappropriate content.", "type": "data_inspection_failed"},
                "request_id": "fake-request",
            }
        elif protocol == "anthropic":
            err = {"type": "error", "error": {"type": "invalid_request_error", "message": "Output blocked by content filtering policy"}}
        else:  # Gemini rejects content with a blocked prompt, not a 400
            return documented_fault(protocol, "blocked", model, text, wait)
        return 400, _json(err, 400), (0, 0)
    if kind == "empty_length":
        # the whole budget spent (on reasoning) and no text: OpenAI finish_reason length, Anthropic
        # stop_reason max_tokens, Gemini finishReason MAX_TOKENS (references above)
        if protocol == "openai":
            body = _openai_body(model, "", tin, 0, finish="length", reasoning=MAX_TOKENS, apart=apart)
            return 200, _json(body), (tin, MAX_TOKENS)
        if protocol == "anthropic":
            return 200, _json(_anthropic_body(model, "", tin, MAX_TOKENS, stop="max_tokens")), (tin, MAX_TOKENS)
        return 200, _json(_gemini_body(model, "", tin, 0, finish="MAX_TOKENS", thoughts=MAX_TOKENS)), (tin, MAX_TOKENS)
    if kind == "quota":
        if protocol == "openai":
            # https://platform.openai.com/docs/guides/error-codes (429 "You exceeded your current quota");
            # body as in mattvr/ShellGPT#23
            err = {"error": {"message": "You exceeded your current quota, please check your plan and billing details.", "type": "insufficient_quota", "param": None, "code": "insufficient_quota"}}
            return 429, _json(err, 429), (0, 0)
        if protocol == "anthropic":
            # 402 billing_error (https://docs.anthropic.com/en/api/errors)
            err = {"type": "error", "error": {"type": "billing_error", "message": "Your credit balance is too low to access the Anthropic API."}}
            return 402, _json(err, 402), (0, 0)
        err = {"error": {"code": 403, "message": "The caller does not have permission", "status": "PERMISSION_DENIED"}}
        return 403, _json(err, 403), (0, 0)
    if kind == "overloaded":
        # 529 overloaded_error (https://docs.anthropic.com/en/api/errors); other protocols: 503 UNAVAILABLE
        if protocol == "anthropic":
            return 529, _json({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, 529), (0, 0)
        return 503, PROTOCOLS[protocol].error(503, "The model is overloaded. Please try again later."), (0, 0)
    # 429_reset: a 429 that says when to come back only through the protocol's own signal
    if protocol == "openai":
        # x-ratelimit-reset-* are durations (https://platform.openai.com/docs/guides/rate-limits#rate-limits-in-headers)
        # a tier-5 limit (10,000 requests a minute, https://platform.openai.com/docs/guides/rate-limits#usage-tiers):
        # the test is about the reset wait, not about pacing to a low limit (tests/test_pacing.py)
        headers = {
            "x-ratelimit-limit-requests": "10000",
            "x-ratelimit-remaining-requests": "0",
            "x-ratelimit-reset-requests": f"{round(wait * 1000)}ms",
            "x-ratelimit-remaining-tokens": "150000",
            "x-ratelimit-reset-tokens": "6m0s",
        }
        err = {"error": {"message": "Rate limit reached for requests", "type": "requests", "param": None, "code": "rate_limit_exceeded"}}
        return 429, _json(err, 429, headers), (0, 0)
    if protocol == "anthropic":
        # anthropic-ratelimit-*-reset are RFC 3339 times (https://docs.anthropic.com/en/api/rate-limits#response-headers)
        when = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=wait)).isoformat(timespec="milliseconds")
        # tier 4: 4,000 requests a minute (https://docs.anthropic.com/en/api/rate-limits#rate-limits)
        headers = {
            "anthropic-ratelimit-requests-limit": "4000",
            "anthropic-ratelimit-requests-remaining": "0",
            "anthropic-ratelimit-requests-reset": when.replace("+00:00", "Z"),
        }
        err = {"type": "error", "error": {"type": "rate_limit_error", "message": "Number of requests has exceeded your rate limit"}}
        return 429, _json(err, 429, headers), (0, 0)
    # Gemini: google.rpc.RetryInfo in the error details, as gemini_rate_limited shows its sources
    err = gemini_rate_limited(model, 60, wait)
    return 429, _json(err, 429), (0, 0)


def protocol_for(path: str) -> Protocol | None:
    if path.endswith("/chat/completions"):
        return OPENAI
    if path.endswith("/messages"):
        return ANTHROPIC
    if path.endswith(":generateContent") and "/models/" in path:
        return GEMINI
    return None


# -- a provider's request limit, enforced -------------------------------------------------------
def _duration(seconds: float) -> str:
    """A Go-style duration as OpenAI sends it ("20ms", "1s", "6m0s")."""
    if seconds < 1:
        return f"{max(0, round(seconds * 1000))}ms"
    m, s = divmod(seconds, 60)
    return f"{int(m)}m{s:.3g}s" if m else f"{s:.3g}s"


def rate_limit_headers(protocol: str, per_minute: float, remaining: float, full_in_s: float, limited: bool) -> dict[str, str]:
    """The rate-limit headers a provider sends with every response (and on a 429).

    OpenAI: ``x-ratelimit-limit-requests`` (per minute), ``x-ratelimit-remaining-requests``,
    ``x-ratelimit-reset-requests`` (a duration until the limit is back to full)
    (https://platform.openai.com/docs/guides/rate-limits#rate-limits-in-headers); no
    ``retry-after`` is documented there.  Anthropic: ``anthropic-ratelimit-requests-limit`` /
    ``-remaining`` / ``-reset`` (RFC 3339 time of full replenishment) on every response and
    ``retry-after`` (seconds) on a 429 (https://docs.anthropic.com/en/api/rate-limits#response-headers).
    Gemini documents no such headers (https://ai.google.dev/gemini-api/docs/rate-limits): none.
    """
    if protocol == "openai":
        return {
            "x-ratelimit-limit-requests": str(round(per_minute)),
            "x-ratelimit-remaining-requests": str(int(remaining)),
            "x-ratelimit-reset-requests": _duration(full_in_s),
        }
    if protocol == "anthropic":
        when = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=full_in_s)
        headers = {
            "anthropic-ratelimit-requests-limit": str(round(per_minute)),
            "anthropic-ratelimit-requests-remaining": str(int(remaining)),
            "anthropic-ratelimit-requests-reset": when.isoformat().replace("+00:00", "Z"),
        }
        if limited:
            headers["retry-after"] = str(max(1, round(full_in_s)))  # whole seconds, as the docs show
        return headers
    return {}


def exhausted(protocol: str, reset_in_s: float, flavour: str = "", model: str = "") -> web.Response:
    """The 429 of a key whose limit is exhausted until ``reset_in_s`` from now, with the headers each
    provider documents for it (every request until the reset gets one, with the reset still ahead).

    * OpenAI: ``x-ratelimit-remaining-requests: 0`` and ``x-ratelimit-reset-requests``, the duration
      until the limit is back ("1s", "6m0s"); no ``retry-after`` is documented
      (https://platform.openai.com/docs/guides/rate-limits#rate-limits-in-headers), a tier-5 limit of
      10,000 requests a minute (#usage-tiers there);
    * Anthropic: ``anthropic-ratelimit-requests-remaining: 0``, ``anthropic-ratelimit-requests-reset``
      (RFC 3339) and ``retry-after``, "the number of seconds to wait until you can retry the request.
      Earlier retries will fail" (https://docs.anthropic.com/en/api/rate-limits#response-headers), tier 4's
      4,000 requests a minute (#rate-limits there);
    * an OpenAI-compatible server (``flavour="compatible"``), Groq's documented set
      (https://console.groq.com/docs/rate-limits, "Rate Limit Headers"): ``retry-after`` in seconds, set
      only on a 429; ``x-ratelimit-limit-requests`` / ``-remaining-requests`` counting requests per *day*
      and their ``-reset-requests`` ("2m59.56s"); ``x-ratelimit-limit-tokens`` / ``-remaining-tokens`` /
      ``-reset-tokens`` per minute ("7.66s"): here the tokens are what ran out;
    * Gemini: ``google.rpc.RetryInfo.retryDelay`` in the body, no header (:func:`gemini_rate_limited`).
    """
    import math

    wait = max(0.0, reset_in_s)
    whole = str(max(1, math.ceil(wait)))  # delay-seconds are whole (RFC 9110 section 10.2.3)
    err_openai = {"error": {"message": "Rate limit reached for requests", "type": "requests", "param": None, "code": "rate_limit_exceeded"}}
    if protocol == "openai" and flavour == "compatible":
        headers = {
            "retry-after": whole,
            "x-ratelimit-limit-requests": "14400",
            "x-ratelimit-remaining-requests": "14370",
            "x-ratelimit-reset-requests": "2m59.56s",
            "x-ratelimit-limit-tokens": "18000",
            "x-ratelimit-remaining-tokens": "0",
            "x-ratelimit-reset-tokens": f"{wait:.2f}s",
        }
        err = {"error": {"message": "Rate limit reached for model on tokens per minute (TPM). Please try again in "
                         f"{wait:.2f}s.", "type": "tokens", "code": "rate_limit_exceeded"}}  # fmt: skip
        return _json(err, 429, headers)
    if protocol == "openai":
        headers = {
            "x-ratelimit-limit-requests": "10000",
            "x-ratelimit-remaining-requests": "0",
            "x-ratelimit-reset-requests": _duration(wait),
        }
        return _json(err_openai, 429, headers)
    if protocol == "anthropic":
        when = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=wait)
        headers = {
            "anthropic-ratelimit-requests-limit": "4000",
            "anthropic-ratelimit-requests-remaining": "0",
            "anthropic-ratelimit-requests-reset": when.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "retry-after": whole,
        }
        err = {"type": "error", "error": {"type": "rate_limit_error", "message": "Number of requests has exceeded your rate limit"}}
        return _json(err, 429, headers)
    return _json(gemini_rate_limited(model, 60, max(0.001, wait)), 429)


def gemini_duration(seconds: float) -> str:
    """A ``google.protobuf.Duration`` in its JSON form: seconds with up to nine fractional digits and an
    ``s`` ("45.837906927s"; https://protobuf.dev/reference/protobuf/google.protobuf/#duration)."""
    return f"{max(0.0, seconds):.9f}".rstrip("0").rstrip(".") + "s"


def gemini_rate_limited(model: str, per_minute: float, wait_s: float, quota_value: bool = True) -> dict[str, Any]:
    """The body of a Gemini 429 for an exhausted requests-per-minute quota, as the Gemini API sends it.

    Sources (real 429 bodies quoted in public issues): RESOURCE_EXHAUSTED with the message "You exceeded
    your current quota ... Quota exceeded for metric: ..., limit: N, model: M\nPlease retry in Xs." and
    the details ``google.rpc.Help`` (a link to the rate-limit docs), ``google.rpc.QuotaFailure``
    (``quotaMetric``, ``quotaId`` such as ``GenerateRequestsPerMinutePerProjectPerModel``,
    ``quotaDimensions`` {location, model} and ``quotaValue``, the limit) and ``google.rpc.RetryInfo``
    (``retryDelay``, a protobuf duration): browserbase/mcp-server-browserbase#129, RooCodeInc/Roo-Code#3883,
    googleapis/python-genai#1875 and #2044 (there the violations carry no ``quotaValue``: ``quota_value``
    False), and https://ai.google.dev/gemini-api/docs/rate-limits.  ``retryDelay`` is the wait with its
    fractions, as dcdpr/jp#1061 reports it ("45.837906927s"; older answers quoted in python-genai#2114
    show it in whole seconds).  No ``Retry-After`` header and no rate-limit header comes with it
    (dcdpr/jp#1061: "Gemini answers a 429 without a Retry-After header"); the google-genai SDK reads
    none of it (python-genai#1875: its retries are a fixed exponential backoff).
    """
    limit = f"{round(per_minute)}"
    metric = "generativelanguage.googleapis.com/generate_content_paid_tier_requests"
    violation: dict[str, Any] = {"quotaMetric": metric, "quotaId": "GenerateRequestsPerMinutePerProjectPerModel",
                                 "quotaDimensions": {"location": "global", "model": model}}  # fmt: skip
    if quota_value:
        violation["quotaValue"] = limit
    message = (
        "You exceeded your current quota, please check your plan and billing details. For more information on this "
        "error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. To monitor your current usage, head to: "
        f"https://ai.dev/usage?tab=rate-limit. \n* Quota exceeded for metric: {metric}, limit: {limit}, model: {model}\n"
        f"Please retry in {gemini_duration(wait_s)}."
    )
    return {"error": {"code": 429, "message": message, "status": "RESOURCE_EXHAUSTED", "details": [
        {"@type": "type.googleapis.com/google.rpc.Help",
         "links": [{"description": "Learn more about Gemini API quotas", "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]},
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [violation]},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": gemini_duration(wait_s)},
    ]}}  # fmt: skip


def rate_limited(
    protocol: str, per_minute: float, remaining: float, full_in_s: float, next_in_s: float, model: str = "", quota_value: bool = True
) -> web.Response:
    """The 429 of an exhausted request limit, with the protocol's documented body and headers."""
    headers = rate_limit_headers(protocol, per_minute, remaining, full_in_s, True)
    if protocol == "openai":  # https://platform.openai.com/docs/guides/error-codes (429 "Rate limit reached for requests")
        err = {"error": {"message": "Rate limit reached for requests", "type": "requests", "param": None, "code": "rate_limit_exceeded"}}
        return _json(err, 429, headers)
    if protocol == "anthropic":  # https://docs.anthropic.com/en/api/errors (429 rate_limit_error)
        err = {"type": "error", "error": {"type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit"}}
        return _json(err, 429, headers)
    return _json(gemini_rate_limited(model, per_minute, max(0.001, next_in_s), quota_value), 429)
