"""What one provider response means: an answer, a refusal, an empty answer, or a failed call.

Pure functions, one set per wire protocol, shared by the synchronous backends
(``models/*_backend.py``) and any other reader of provider responses (e.g. the
result lines of a provider batch job).  Each takes a parsed response body, as a
``dict`` (JSON as sent on the wire, camelCase or snake_case) or as the SDK's
typed object, and returns a :class:`~sabre_prior.inference.models.base.Completion` whose
``outcome`` is one of

* :data:`ANSWER`  - text to score;
* :data:`REFUSAL` - the provider or the model declined (content filter, safety
  finish reason, ``refusal`` field or stop reason, blocked prompt).  Final for
  the question: never a prediction, never retried unless asked for.  The
  partial text, if any, is kept apart in ``extra["partial_text"]`` and
  ``text`` is empty, so it cannot reach a prediction file by accident;
* :data:`EMPTY`   - no text; ``finish_reason`` tells a spent token budget
  (:func:`budget_spent`) from a normal stop.

An HTTP error body is classified by :func:`classify_error` into a
:class:`~sabre_prior.inference.models.base.CallError` whose ``kind`` is, besides the
transport kinds of :func:`~sabre_prior.inference.models.base.status_error`,
``"refusal"`` (a per-question moderation rejection such as DashScope's
``data_inspection_failed``: final for that question, never stops the run),
``"account"`` (insufficient quota, billing, permission: stops the run at
once) or ``"overloaded"`` (Anthropic 529: retried).  Its ``retry_after`` comes
from every documented signal: ``Retry-After``, ``retry-after-ms``, OpenAI
``x-ratelimit-reset-requests``/``-tokens`` (durations like ``6m0s``),
Anthropic ``anthropic-ratelimit-*-reset`` (RFC 3339 times) and Gemini
``google.rpc.RetryInfo.retryDelay`` in the error details.

Sources for every rule are named beside it and collected in docs/api_models.md.

Interface (stable; used by the batch-API code of issue 12):
``classify_openai_chat(body, provider=...)``, ``classify_anthropic_message(body)``,
``classify_gemini_response(body)``, ``classify_error(protocol, status, body,
headers=None, message=None, provider=None)``, ``retry_after_from_headers(headers)``,
``budget_spent(finish_reason)``, and the constants below.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import re
from collections.abc import Mapping  # isinstance against typing.Mapping is ~30x slower (per call here)
from typing import Any

from .models.base import ApiBackend, CallError, Completion, backend_class, parse_retry_after, status_error

ANSWER = "answer"
REFUSAL = "refusal"
EMPTY = "empty"
FAILURE = "failure"
OUTCOMES = (ANSWER, REFUSAL, EMPTY, FAILURE)

#: Finish reasons that mean "the output token budget ran out", per protocol:
#: OpenAI ``length`` (https://platform.openai.com/docs/api-reference/chat/object),
#: Anthropic ``max_tokens`` (https://docs.anthropic.com/en/api/messages, stop_reason),
#: Gemini ``MAX_TOKENS`` (https://ai.google.dev/api/generate-content#FinishReason).
BUDGET_FINISH_REASONS = frozenset({"length", "max_tokens", "MAX_TOKENS", "model_context_window_exceeded"})

#: Gemini finish reasons that mean the candidate was stopped by a filter
#: (https://ai.google.dev/api/generate-content#FinishReason; google-genai types.FinishReason).
GEMINI_REFUSAL_FINISH = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "LANGUAGE",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "MODEL_ARMOR",
    }
)

#: OpenAI-compatible error ``code``/``type`` values that reject one request's content
#: (final for that question, not for the run):
#: DashScope ``data_inspection_failed`` (https://www.alibabacloud.com/help/en/model-studio/error-code),
#: Moonshot ``content_filter`` "The request was rejected because it was considered high risk"
#: (https://platform.kimi.ai/docs/api/errors), OpenAI ``content_policy_violation`` / ``content_filter``.
MODERATION_CODES = frozenset(
    {"data_inspection_failed", "datainspectionfailed", "content_filter", "content_policy_violation"}
)

#: Error ``code``/``type`` values that mean the account cannot pay or may not call:
#: OpenAI 429 ``insufficient_quota`` and its codes (https://platform.openai.com/docs/guides/error-codes),
#: Anthropic 402 ``billing_error`` / 403 ``permission_error`` (https://docs.anthropic.com/en/api/errors),
#: Moonshot ``exceeded_current_quota_error`` / 403 permission (https://platform.kimi.ai/docs/api/errors),
#: DashScope ``Arrearage`` (overdue payment) (https://www.alibabacloud.com/help/en/model-studio/error-code),
#: Gemini ``PERMISSION_DENIED`` (https://ai.google.dev/gemini-api/docs/troubleshooting).
ACCOUNT_CODES = frozenset(
    {
        "insufficient_quota",
        "credit_balance_exhausted",
        "organization_spend_limit_exceeded",
        "project_spend_limit_exceeded",
        "organization_usage_limit_exceeded",
        "billing_error",
        "billing_not_active",
        "permission_error",
        "permission_denied",
        "exceeded_current_quota_error",
        "arrearage",
        "access_terminated_error",
    }
)


def _get(obj: Any, *names: str) -> Any:
    """The first present field among ``names`` of a mapping or an object (None if none)."""
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        for n in names:
            if n in obj and obj[n] is not None:
                return obj[n]
        return None
    for n in names:
        v = getattr(obj, n, None)
        if v is not None:
            return v
    return None


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _enum_name(v: Any) -> str | None:
    if v is None:
        return None
    name = getattr(v, "name", None)
    if isinstance(name, str):
        return name
    value = getattr(v, "value", v)
    return str(value)


def budget_spent(finish_reason: str | None) -> bool:
    """True when the finish reason says the output token budget ran out."""
    return finish_reason in BUDGET_FINISH_REASONS


def _finish(text: str, completion: Completion, refusal: str | None) -> Completion:
    if refusal is not None:
        if text:
            completion.extra["partial_text"] = text
        completion.text = ""
        completion.outcome = REFUSAL
        completion.detail = refusal
    elif not text.strip():
        completion.text = text
        completion.outcome = EMPTY
        completion.detail = "token budget spent" if budget_spent(completion.finish_reason) else "empty answer"
    else:
        completion.text = text
        completion.outcome = ANSWER
    return completion


def _served(**fields: Any) -> dict[str, str]:
    """What the provider says served a response (issue 21), the fields it returned only."""
    return {k: str(v) for k, v in fields.items() if v is not None and str(v)}


def _malformed(what: str) -> CallError:
    return CallError(f"malformed response: {what}", retryable=True, kind="malformed")


# --------------------------------------------------------------------------------------
# OpenAI chat completions (and OpenAI-compatible endpoints: xAI, Moonshot, DashScope)
# --------------------------------------------------------------------------------------
#: Providers whose ``completion_tokens`` leave out ``completion_tokens_details.reasoning_tokens``:
#: xAI ("The reasoning token count is outputted in the reasoning_tokens field, separated from
#: the completion_tokens", https://docs.cloud.google.com/vertex-ai/generative-ai/docs/partner-models/grok/capabilities/reasoning;
#: https://docs.x.ai/docs/guides/reasoning).  OpenAI counts them inside completion_tokens
#: (https://platform.openai.com/docs/guides/reasoning).  For any provider, a ``total_tokens`` equal
#: to prompt + completion + reasoning also shows them apart.
REASONING_APART = frozenset({"xai"})


def classify_openai_chat(body: Any, *, provider: str | None = None) -> Completion:
    """A chat.completion body -> Completion with its outcome (raises CallError when malformed)."""
    choices = _get(body, "choices")
    if not isinstance(choices, (list, tuple)) or not choices:
        raise _malformed("no choices[0].message")
    choice = choices[0]
    message = _get(choice, "message")
    if message is None:
        raise _malformed("no choices[0].message")
    content = _get(message, "content")
    if content is not None and not isinstance(content, str):
        raise _malformed("message content is not text")
    text = content or ""
    finish = _get(choice, "finish_reason")
    usage = _get(body, "usage")
    prompt = _int(_get(usage, "prompt_tokens"))
    out = _int(_get(usage, "completion_tokens"))
    total = _int(_get(usage, "total_tokens"))
    reasoning = _int(_get(_get(usage, "completion_tokens_details"), "reasoning_tokens"))
    extra: dict[str, Any] = {}
    if reasoning:
        extra["reasoning_tokens"] = reasoning
        apart = (provider or "") in REASONING_APART or (
            total is not None and prompt is not None and out is not None and total == prompt + out + reasoning
        )
        if apart:  # billed as output: count it there
            out = (out or 0) + reasoning
            extra["reasoning_apart"] = True
    # served model: `model` ("The model used for the chat completion", a dated snapshot for an alias),
    # `system_fingerprint` ("the backend configuration that the model runs with", optional) and the
    # completion's `id` (https://platform.openai.com/docs/api-reference/chat/object; openai-python
    # types/chat/chat_completion.py: id, model, system_fingerprint: Optional[str])
    served = _served(model=_get(body, "model"), system_fingerprint=_get(body, "system_fingerprint"), response_id=_get(body, "id"))
    if served:
        extra["served"] = served
    completion = Completion(text=text, input_tokens=prompt, output_tokens=out, finish_reason=finish, extra=extra)
    refusal: str | None = None
    # message.refusal: https://platform.openai.com/docs/api-reference/chat/object (choices[].message.refusal)
    said = _get(message, "refusal")
    if isinstance(said, str) and said.strip():
        refusal = f"message.refusal: {said.strip()[:200]}"
    # finish_reason content_filter: "content was omitted due to a flag from our content filters"
    # (https://platform.openai.com/docs/api-reference/chat/object; DashScope and Moonshot use the same value)
    elif finish == "content_filter":
        refusal = "finish_reason content_filter"
    return _finish(text, completion, refusal)


# --------------------------------------------------------------------------------------
# Anthropic Messages
# --------------------------------------------------------------------------------------
def classify_anthropic_message(body: Any) -> Completion:
    """A Messages API message body -> Completion with its outcome."""
    blocks = _get(body, "content")
    if not isinstance(blocks, (list, tuple)):
        raise _malformed("no content blocks")
    text = "".join(str(_get(b, "text") or "") for b in blocks if _get(b, "type") == "text")
    usage = _get(body, "usage")
    stop = _get(body, "stop_reason")
    # served model: the message's `model` ("The model that handled the request") and `id`
    # (https://docs.anthropic.com/en/api/messages; anthropic-sdk-python types/message.py: id, model);
    # Anthropic returns no system fingerprint
    served = _served(model=_get(body, "model"), response_id=_get(body, "id"))
    completion = Completion(
        text=text,
        input_tokens=_int(_get(usage, "input_tokens")),
        output_tokens=_int(_get(usage, "output_tokens")),
        finish_reason=stop,
        extra={"served": served} if served else {},
    )
    refusal: str | None = None
    # stop_reason "refusal": streaming classifiers intervened; billed up to the refusal
    # (https://docs.anthropic.com/en/docs/test-and-evaluate/strengthen-guardrails/handle-streaming-refusals)
    if stop == "refusal":
        details = _get(body, "stop_details")
        category = _get(details, "category")
        refusal = "stop_reason refusal" + (f" ({category})" if category else "")
    return _finish(text, completion, refusal)


# --------------------------------------------------------------------------------------
# Gemini generateContent
# --------------------------------------------------------------------------------------
def classify_gemini_response(body: Any) -> Completion:
    """A GenerateContentResponse (wire JSON or google-genai object) -> Completion with its outcome.

    Thinking tokens (``usageMetadata.thoughtsTokenCount``) are billed as output
    (https://ai.google.dev/gemini-api/docs/thinking#pricing): they are added to
    ``output_tokens`` and kept apart in ``extra["thoughts_tokens"]``.
    """
    usage = _get(body, "usage_metadata", "usageMetadata")
    prompt = _int(_get(usage, "prompt_token_count", "promptTokenCount"))
    out = _int(_get(usage, "candidates_token_count", "candidatesTokenCount"))
    thoughts = _int(_get(usage, "thoughts_token_count", "thoughtsTokenCount"))
    extra: dict[str, Any] = {}
    if thoughts:
        extra["thoughts_tokens"] = thoughts
        out = (out or 0) + thoughts
    # served model: `modelVersion` ("The model version used to generate the response") and `responseId`
    # (https://ai.google.dev/api/generate-content#generatecontentresponse; google-genai types.py
    # GenerateContentResponse.model_version / response_id); no system fingerprint
    served = _served(
        model=_get(body, "model_version", "modelVersion"), response_id=_get(body, "response_id", "responseId")
    )
    if served:
        extra["served"] = served
    candidates = _get(body, "candidates")
    if not candidates:
        # a blocked prompt has no candidate, its reason in promptFeedback.blockReason
        # (https://ai.google.dev/api/generate-content#PromptFeedback)
        feedback = _get(body, "prompt_feedback", "promptFeedback")
        reason = _enum_name(_get(feedback, "block_reason", "blockReason"))
        if reason:
            completion = Completion(text="", input_tokens=prompt, output_tokens=out, finish_reason=reason, extra=extra)
            return _finish("", completion, f"promptFeedback.blockReason {reason}")
        raise _malformed("no candidates")
    cand = candidates[0]
    parts = _get(_get(cand, "content"), "parts") or []
    text = "".join(
        str(_get(p, "text")) for p in parts if _get(p, "text") and not _get(p, "thought")
    )
    reason = _enum_name(_get(cand, "finish_reason", "finishReason"))
    completion = Completion(text=text, input_tokens=prompt, output_tokens=out, finish_reason=reason, extra=extra)
    refusal = f"finishReason {reason}" if reason in GEMINI_REFUSAL_FINISH else None
    return _finish(text, completion, refusal)


# --------------------------------------------------------------------------------------
# Errors and their retry signals
# --------------------------------------------------------------------------------------
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


@functools.lru_cache(maxsize=256)  # every response carries one or two, mostly the same few values
def parse_duration(value: str) -> float | None:
    """Seconds of a Go-style duration (``1s``, ``6m0s``, ``20ms``, ``1h2m3.5s``) or a protobuf ``37s``."""
    s = str(value).strip()
    if not s:
        return None
    pos, total = 0, 0.0
    for m in _DURATION.finditer(s):
        if m.start() != pos:
            return None
        total += float(m.group(1)) * _UNIT[m.group(2)]
        pos = m.end()
    if pos != len(s):
        try:
            return max(0.0, float(s))
        except ValueError:
            return None
    return total


def _until(value: str, now: _dt.datetime | None = None) -> float | None:
    """Seconds from now until an RFC 3339 time."""
    try:
        when = _dt.datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    now = now or _dt.datetime.now(_dt.timezone.utc)
    return max(0.0, (when - now).total_seconds())


def _header(headers: Any, name: str) -> str | None:
    get = getattr(headers, "get", None)
    if get is None:
        return None
    v = get(name)
    if v is None and isinstance(headers, Mapping):  # a plain dict with other casing
        low = name.lower()
        v = next((val for k, val in headers.items() if str(k).lower() == low), None)
    return None if v is None else str(v)


def _exhausted_resets(headers: Any, prefix: str, families: tuple[str, ...], parse: Any) -> float | None:
    """The reset of the exhausted families (remaining 0), else the longest reset given."""
    resets: dict[str, float] = {}
    exhausted: list[str] = []
    for fam in families:
        raw = _header(headers, f"{prefix}reset-{fam}") if prefix.startswith("x-") else _header(headers, f"{prefix}{fam}-reset")
        if raw is None:
            continue
        secs = parse(raw)
        if secs is None:
            continue
        resets[fam] = secs
        remaining = _header(headers, f"{prefix}remaining-{fam}") if prefix.startswith("x-") else _header(headers, f"{prefix}{fam}-remaining")
        if remaining is not None and remaining.strip() in ("0", "0.0"):
            exhausted.append(fam)
    if not resets:
        return None
    chosen = [resets[f] for f in exhausted] or list(resets.values())
    return max(chosen)


def retry_after_from_headers(headers: Any) -> float | None:
    """Seconds to wait, from every documented header family (None when none is given).

    1. ``retry-after-ms`` / ``Retry-After`` (seconds or HTTP date): honoured by the
       official SDKs (openai-python and anthropic-sdk-python ``_calculate_retry_timeout``).
    2. OpenAI ``x-ratelimit-reset-requests`` / ``x-ratelimit-reset-tokens``: the time
       until that limit is back to full, as a duration ("1s", "6m0s", "20ms")
       (https://platform.openai.com/docs/guides/rate-limits#rate-limits-in-headers).
    3. Anthropic ``anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-reset``:
       an RFC 3339 time (https://docs.anthropic.com/en/api/rate-limits#response-headers).

    For 2 and 3, the reset of a family whose ``remaining`` is 0 is used; without
    ``remaining`` headers, the longest reset given (as anthropic-sdk-typescript#357 proposes).
    """
    if headers is None:
        return None
    ra = parse_retry_after(headers)
    if ra is not None:
        return ra
    openai = _exhausted_resets(headers, "x-ratelimit-", ("requests", "tokens"), parse_duration)
    if openai is not None:
        return openai
    return _exhausted_resets(
        headers, "anthropic-ratelimit-", ("requests", "tokens", "input-tokens", "output-tokens"), _until
    )


def error_fields(body: Any) -> tuple[Any, str, str, str]:
    """(the ``error`` object, its lower-cased code, type/status, message) of an error body."""
    if isinstance(body, (bytes, str)):
        try:
            body = json.loads(body)
        except (ValueError, TypeError):
            return None, "", "", str(body)[:500] if body else ""
    if isinstance(body, list) and body:  # Gemini sometimes wraps the error in a list
        body = body[0]
    error = _get(body, "error")
    if error is None and isinstance(body, Mapping) and ("message" in body or "code" in body):
        error = body
    if isinstance(error, str):
        return None, "", "", error
    code = _get(error, "code")
    etype = _get(error, "type", "status")
    message = _get(error, "message") or ""
    return error, str(code or "").lower(), str(etype or "").lower(), str(message)


def classify_error(
    protocol: str,
    status: int,
    body: Any,
    headers: Any = None,
    message: str | None = None,
    provider: str | None = None,
) -> CallError:
    """An HTTP error (status, JSON body, headers) -> CallError with its kind and wait.

    ``protocol``: the registry name of an API backend (``openai`` for chat completions and
    compatible endpoints, ``anthropic``, ``gemini``); its class's ``refusal_phrases`` and
    ``retry_delay_from_error`` carry the protocol's own rules.  ``message`` overrides the text
    taken from the body.
    """
    quirks = backend_class(protocol)  # the protocol's own rules are attributes of its backend class
    if not issubclass(quirks, ApiBackend):
        raise ValueError(f"classify_error: {protocol!r} is not an API backend")
    error, code, etype, body_message = error_fields(body)
    text = message or body_message or f"HTTP {status}"
    labels = {code, etype}
    retry_after = retry_after_from_headers(headers)
    if retry_after is None:
        retry_after = quirks.retry_delay_from_error(error)  # Gemini: google.rpc.RetryInfo in the body
    if labels & ACCOUNT_CODES:  # (Gemini 403 PERMISSION_DENIED too: its status is the type)
        return CallError(f"HTTP {status}: {text}", retryable=False, status=status, kind="account")
    if status in (400, 403, 422) and (labels & MODERATION_CODES or any(p in text.lower() for p in quirks.refusal_phrases)):
        # a moderation rejection of this request's content (DashScope data_inspection_failed,
        # Moonshot content_filter; the backend's refusal_phrases, e.g. Anthropic
        # "Output blocked by content filtering policy")
        return CallError(f"HTTP {status}: {text}", retryable=False, status=status, kind="refusal")
    if status == 402:  # payment required: billing (Anthropic billing_error, xAI/others)
        return CallError(f"HTTP {status}: {text}", retryable=False, status=status, kind="account")
    if status == 529 or etype == "overloaded_error":
        # Anthropic 529 overloaded_error: "The API is temporarily overloaded" (https://docs.anthropic.com/en/api/errors)
        return CallError(f"HTTP {status}: {text}", retryable=True, status=status, retry_after=retry_after, kind="overloaded")
    err = status_error(status, text, None)
    err.retry_after = retry_after
    return err


def call_error_from_exception(exc: BaseException, protocol: str, provider: str | None = None) -> CallError | None:
    """CallError for an SDK status exception that carries an HTTP status, else None.

    Works for openai/anthropic ``APIStatusError`` (``status_code``, ``response``, ``body``);
    google-genai's ``errors.APIError`` is read by ``models.gemini_backend.map_gemini_error``.
    """
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        return None
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping) and "error" not in body:
        body = {"error": body}
    message = getattr(exc, "message", None) or str(exc)
    return classify_error(protocol, status, body, headers, str(message), provider)
