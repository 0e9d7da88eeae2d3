"""The outcome classification of provider responses and errors (pure functions, wire bodies as documented).

Each body below is written from the provider's API reference (source beside it).
"""

from __future__ import annotations

import datetime as dt

import pytest

from sabre_prior.inference import outcomes as O


def chat(content, finish="stop", refusal=None, usage=None):
    # https://platform.openai.com/docs/api-reference/chat/object
    return {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": refusal}, "finish_reason": finish}],
        "usage": usage or {"prompt_tokens": 100, "completion_tokens": 2, "total_tokens": 102},
    }


def test_openai_answer_empty_and_refusals() -> None:
    c = O.classify_openai_chat(chat("Yes."))
    assert (c.outcome, c.text, c.input_tokens, c.output_tokens) == (O.ANSWER, "Yes.", 100, 2)
    c = O.classify_openai_chat(chat("Yes, the", finish="content_filter"))
    assert c.outcome == O.REFUSAL and c.text == "" and c.extra["partial_text"] == "Yes, the"
    c = O.classify_openai_chat(chat(None, refusal="I can't help with that."))
    assert c.outcome == O.REFUSAL and "I can't help" in (c.detail or "")
    c = O.classify_openai_chat(chat("", finish="length"))
    assert c.outcome == O.EMPTY and c.detail == "token budget spent"
    c = O.classify_openai_chat(chat("  ", finish="stop"))
    assert c.outcome == O.EMPTY and c.detail == "empty answer"


def test_reasoning_tokens_counted_in_output_only_where_reported_apart() -> None:
    # xAI: reasoning_tokens separated from completion_tokens (total = prompt + completion + reasoning)
    apart = {"prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 281, "completion_tokens_details": {"reasoning_tokens": 180}}
    c = O.classify_openai_chat(chat("No.", usage=apart), provider="xai")
    assert c.output_tokens == 181 and c.extra["reasoning_tokens"] == 180
    c = O.classify_openai_chat(chat("No.", usage={**apart, "total_tokens": None}), provider="xai")
    assert c.output_tokens == 181
    # OpenAI: completion_tokens already include reasoning tokens
    inside = {"prompt_tokens": 100, "completion_tokens": 181, "total_tokens": 281, "completion_tokens_details": {"reasoning_tokens": 180}}
    c = O.classify_openai_chat(chat("No.", usage=inside), provider="openai")
    assert c.output_tokens == 181


def test_anthropic_refusal_and_max_tokens() -> None:
    # https://docs.anthropic.com/en/docs/test-and-evaluate/strengthen-guardrails/handle-streaming-refusals
    body = {"content": [{"type": "text", "text": "Hello.."}], "stop_reason": "refusal", "usage": {"input_tokens": 50, "output_tokens": 3}}
    c = O.classify_anthropic_message(body)
    assert c.outcome == O.REFUSAL and c.text == "" and c.output_tokens == 3
    c = O.classify_anthropic_message({"content": [], "stop_reason": "max_tokens", "usage": {"input_tokens": 5, "output_tokens": 64}})
    assert c.outcome == O.EMPTY and c.detail == "token budget spent"
    c = O.classify_anthropic_message({"content": [{"type": "text", "text": "3"}], "stop_reason": "end_turn", "usage": {}})
    assert c.outcome == O.ANSWER and c.text == "3"


def test_gemini_safety_blocked_prompt_and_thoughts() -> None:
    # https://ai.google.dev/api/generate-content#FinishReason and #PromptFeedback
    safety = {"candidates": [{"content": {"parts": [{"text": "Yes, the"}]}, "finishReason": "SAFETY"}], "usageMetadata": {"promptTokenCount": 300, "candidatesTokenCount": 3}}
    c = O.classify_gemini_response(safety)
    assert c.outcome == O.REFUSAL and c.text == "" and c.finish_reason == "SAFETY"
    blocked = {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": {"promptTokenCount": 12559, "totalTokenCount": 12559}}
    c = O.classify_gemini_response(blocked)
    assert c.outcome == O.REFUSAL and c.input_tokens == 12559 and "PROHIBITED_CONTENT" in (c.detail or "")
    thinking = {
        "candidates": [{"content": {"parts": [{"text": "plan", "thought": True}, {"text": "B"}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 300, "candidatesTokenCount": 1, "thoughtsTokenCount": 40},
    }
    c = O.classify_gemini_response(thinking)
    assert (c.outcome, c.text, c.output_tokens) == (O.ANSWER, "B", 41)
    with pytest.raises(O.CallError) as e:
        O.classify_gemini_response({"candidates": []})
    assert e.value.kind == "malformed"


def test_sdk_objects_classify_like_wire_json() -> None:
    from google.genai import types

    resp = types.GenerateContentResponse.model_validate(
        {"candidates": [{"content": {"parts": [{"text": "Ye"}]}, "finishReason": "SAFETY"}]}
    )
    assert O.classify_gemini_response(resp).outcome == O.REFUSAL
    from openai.types.chat import ChatCompletion

    cc = ChatCompletion.model_validate({"id": "x", "object": "chat.completion", "created": 0, "model": "m", **chat("Yes", finish="content_filter")})
    assert O.classify_openai_chat(cc).outcome == O.REFUSAL


def test_durations_and_reset_headers() -> None:
    assert O.parse_duration("1s") == 1.0
    assert O.parse_duration("6m0s") == 360.0
    assert O.parse_duration("20ms") == pytest.approx(0.02)
    assert O.parse_duration("1h2m3.5s") == pytest.approx(3723.5)
    assert O.parse_duration("37s") == 37.0
    assert O.parse_duration("soon") is None
    # OpenAI: the exhausted family's reset
    h = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "2s", "x-ratelimit-remaining-tokens": "9000", "x-ratelimit-reset-tokens": "6m0s"}
    assert O.retry_after_from_headers(h) == 2.0
    assert O.retry_after_from_headers({"x-ratelimit-reset-tokens": "1.5s"}) == 1.5
    # Retry-After wins over the reset headers
    assert O.retry_after_from_headers({**h, "retry-after": "7"}) == 7.0
    # Anthropic: RFC 3339
    when = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=30)).isoformat().replace("+00:00", "Z")
    got = O.retry_after_from_headers({"anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-requests-reset": when})
    assert 28.0 < got <= 30.0


def test_error_kinds() -> None:
    quota = {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "param": None, "code": "insufficient_quota"}}
    e = O.classify_error("openai", 429, quota)
    assert e.kind == "account" and e.fatal and "exceeded your current quota" in str(e)
    e = O.classify_error("openai", 429, {"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}, {"x-ratelimit-reset-requests": "3s"})
    assert e.kind == "rate_limit" and e.retryable and e.retry_after == 3.0
    dash = {"error": {"code": "data_inspection_failed", "message": "Input data may contain inappropriate content.", "type": "data_inspection_failed"}}
    e = O.classify_error("openai", 400, dash, provider="alibaba")
    assert e.kind == "refusal" and not e.retryable and not e.fatal
    moon = {"error": {"type": "content_filter", "message": "The request was rejected because it was considered high risk"}}
    assert O.classify_error("openai", 400, moon).kind == "refusal"
    over = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    e = O.classify_error("anthropic", 529, over)
    assert e.kind == "overloaded" and e.retryable
    assert O.classify_error("anthropic", 402, {"type": "error", "error": {"type": "billing_error", "message": "x"}}).kind == "account"
    assert O.classify_error("anthropic", 403, {"type": "error", "error": {"type": "permission_error", "message": "x"}}).fatal
    gem = {
        "error": {
            "code": 429,
            "status": "RESOURCE_EXHAUSTED",
            "message": "Quota exceeded",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"},
            ],
        }
    }
    e = O.classify_error("gemini", 429, gem)
    assert e.kind == "rate_limit" and e.retry_after == 37.0
    assert O.classify_error("openai", 400, {"error": {"message": "bad param", "code": "invalid_value"}}).kind == "bad_request"
