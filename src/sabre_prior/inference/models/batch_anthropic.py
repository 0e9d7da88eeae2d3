"""Anthropic Message Batches through the ``anthropic`` SDK.

Facts used, from https://platform.claude.com/docs/en/build-with-claude/batch-processing
and the SDK (``anthropic/resources/messages/batches.py``,
``anthropic/types/messages/message_batch*.py``):

* ``messages.batches.create(requests=[{"custom_id", "params"}])``; a batch
  holds at most 100,000 requests or 256 MB, whichever comes first; each
  request is a Messages request (at most 32 MB);
  ``custom_id`` matches ``^[a-zA-Z0-9_-]{1,64}$`` (our keys are 64 hex digits);
* ``processing_status`` ``in_progress``, ``canceling``, ``ended``;
  ``request_counts {processing, succeeded, errored, canceled, expired}``
  (the last four stay 0 until the whole batch has ended);
* ``messages.batches.results(id)`` streams JSONL lines ``{"custom_id", "result"}``
  with ``result.type`` ``succeeded`` (``message``), ``errored`` (``error``:
  an error response ``{"type": "error", "error": {"type", "message"}}``),
  ``canceled`` or ``expired``; results come in no particular order.

``params`` is exactly what the synchronous path posts to ``/v1/messages``: the
keyword arguments of ``messages.create`` with ``extra_body`` merged in.
"""

from __future__ import annotations

import json
from typing import Any, Iterator, Sequence

from ..batch import BatchState
from ..engine import WorkItem
from ..outcomes import classify_anthropic_message, classify_error
from .anthropic_backend import AnthropicBackend
from .base import CallError, Completion
from .openai_backend import map_openai_error

#: error ``type`` of an errored result -> the HTTP status the synchronous API gives it
#: (https://docs.anthropic.com/en/api/errors)
ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


class AnthropicBatch:
    provider = "anthropic"
    max_requests = 100_000
    max_bytes = 256 * 1000 * 1000
    #: a Messages API request is at most 32 MB (https://docs.anthropic.com/en/api/overview#request-size-limits)
    max_request_bytes = 32 * 1000 * 1000
    #: ``{"requests":[`` ... ``]}`` around the entries
    overhead = len('{"requests":[]}')

    def __init__(self, backend: AnthropicBackend) -> None:
        import anthropic

        self.backend = backend
        self.client = anthropic.Anthropic(
            api_key=backend.api_key(), base_url=backend.base_url, max_retries=3, timeout=max(60.0, backend.timeout_s)
        )

    def params(self, item: WorkItem) -> dict[str, Any]:
        kwargs = self.backend.request(item.query)
        extra = kwargs.pop("extra_body", None) or {}
        kwargs.update(extra)
        return kwargs

    def request_line(self, key: str, item: WorkItem) -> bytes:
        entry = {"custom_id": key, "params": self.params(item)}
        return json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode() + b","

    def submit(self, shard_id: str, keys: Sequence[str], lines: Sequence[bytes]) -> tuple[str, dict[str, Any]]:
        from anthropic.types.messages import MessageBatch

        body = b'{"requests":[' + b"".join(lines)[:-1] + b"]}"  # the lines end with a comma
        try:
            batch = self.client.with_options(max_retries=0).post(
                "/v1/messages/batches",
                cast_to=MessageBatch,
                content=body,
                options={"headers": {"Content-Type": "application/json"}},
            )
        except Exception as exc:
            raise map_openai_error(exc, "anthropic") from None
        return batch.id, {"bytes": len(body)}

    def find(self, shard_id: str) -> str | None:
        return None  # a Message Batch carries no client metadata to find it by

    def state(self, batch_id: str) -> BatchState:
        try:
            b = self.client.messages.batches.retrieve(batch_id)
        except Exception as exc:
            raise map_openai_error(exc, "anthropic") from None
        c = b.request_counts
        total = c.processing + c.succeeded + c.errored + c.canceled + c.expired
        return BatchState(
            status=b.processing_status,
            ended=b.processing_status == "ended",
            total=total,
            succeeded=c.succeeded,
            errored=c.errored + c.canceled + c.expired,
        )

    def results(self, batch_id: str, state: BatchState) -> Iterator[tuple[str, Completion | CallError]]:
        try:
            for line in self.client.messages.batches.results(batch_id):
                yield line.custom_id, outcome(line.result)
        except CallError:
            raise
        except Exception as exc:
            raise map_openai_error(exc, "anthropic") from None

    def cancel(self, batch_id: str) -> None:
        try:
            self.client.messages.batches.cancel(batch_id)
        except Exception as exc:
            raise map_openai_error(exc, "anthropic") from None

    def close(self) -> None:
        self.client.close()


def outcome(result: Any) -> Completion | CallError:
    kind = getattr(result, "type", None)
    if kind == "succeeded":
        try:
            return classify_anthropic_message(result.message)
        except CallError as exc:
            return exc
    if kind == "errored":
        err = getattr(getattr(result, "error", None), "error", None)
        etype = str(getattr(err, "type", "api_error"))
        message = str(getattr(err, "message", "") or etype)
        body = {"type": "error", "error": {"type": etype, "message": message}}
        return classify_error("anthropic", ERROR_STATUS.get(etype, 500), body, message=f"{etype}: {message}")
    if kind == "canceled":
        return CallError("the request was canceled with its batch before it ran", retryable=True, kind="cancelled")
    if kind == "expired":
        return CallError("the batch expired before the request ran", retryable=True, kind="expired")
    return CallError(f"malformed result (type {kind!r})", retryable=True, kind="malformed")
