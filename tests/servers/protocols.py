"""The three wire protocols: parse a request, build an answer or an error."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from aiohttp import web


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


def _openai_ok(model: str, answer: str, tin: int, tout: int) -> web.Response:
    return web.json_response(
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop", "logprobs": None}
            ],
            "usage": {"prompt_tokens": tin, "completion_tokens": tout, "total_tokens": tin + tout},
        }
    )


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


def _anthropic_ok(model: str, answer: str, tin: int, tout: int) -> web.Response:
    return web.json_response(
        {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": answer}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": tin, "output_tokens": tout},
        }
    )


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


def _gemini_ok(model: str, answer: str, tin: int, tout: int) -> web.Response:
    return web.json_response(
        {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": answer}]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {"promptTokenCount": tin, "candidatesTokenCount": tout, "totalTokenCount": tin + tout},
            "modelVersion": model,
        }
    )


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


def protocol_for(path: str) -> Protocol | None:
    if path.endswith("/chat/completions"):
        return OPENAI
    if path.endswith("/messages"):
        return ANTHROPIC
    if path.endswith(":generateContent") and "/models/" in path:
        return GEMINI
    return None
