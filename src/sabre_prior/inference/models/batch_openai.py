"""OpenAI Batch API (Files + Batches, endpoint ``/v1/chat/completions``) through the ``openai`` SDK.

Also used for the OpenAI-compatible providers that document the same endpoints
(:data:`sabre_prior.inference.batch.OPENAI_COMPATIBLE_BATCH`).  Facts used, from the
batch guide https://platform.openai.com/docs/guides/batch and the SDK
(``openai/resources/batches.py``, ``openai/types/batch.py``):

* input: a JSONL file uploaded with ``purpose="batch"``, one line
  ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}``
  per request; at most 50,000 requests and 200 MB per file;
* ``batches.create(input_file_id, endpoint, completion_window="24h", metadata)``;
  status ``validating``, ``in_progress``, ``finalizing``, ``completed``,
  ``failed`` (validation; reasons in ``errors.data``), ``expired``,
  ``cancelling``, ``cancelled``; ``request_counts {total, completed, failed}``;
* results: ``output_file_id`` and ``error_file_id``, JSONL lines
  ``{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}``;
  requests not run before expiry or cancellation are in the error file with
  ``response: null`` and ``error.code`` ``batch_expired`` / ``batch_cancelled``.

The body of each line is :meth:`OpenAIBackend.request_body`, the bytes the
synchronous path posts.  Control calls that create something (file upload,
batch create) are never retried by the SDK (a retried create could start a
second, paid batch); status and download calls are.
"""

from __future__ import annotations

import json
from typing import Any, Iterator, Sequence

from ..batch import OPENAI_COMPATIBLE_BATCH, BatchState
from ..engine import WorkItem
from ..outcomes import classify_error, classify_openai_chat
from .base import CallError, Completion
from .openai_backend import OpenAIBackend, map_openai_error

ENDPOINT = "/v1/chat/completions"
ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
#: error codes of requests that were never run (retried in a later batch)
NOT_RUN = {"batch_expired": "expired", "batch_cancelled": "cancelled"}


class OpenAIBatch:
    provider = "openai"

    def __init__(self, backend: OpenAIBackend) -> None:
        import openai

        self.backend = backend
        self.provider = str(backend.settings.get("provider") or "openai").lower()
        self.max_requests, self.max_bytes = OPENAI_COMPATIBLE_BATCH.get(self.provider, OPENAI_COMPATIBLE_BATCH["openai"])
        self.overhead = 0
        #: images: "up to 50 MB total payload size per request" (https://platform.openai.com/docs/guides/images-vision)
        self.max_request_bytes = 50 * 1000 * 1000
        self.client = openai.OpenAI(
            api_key=backend.api_key(), base_url=backend.base_url, max_retries=3, timeout=max(60.0, backend.timeout_s)
        )

    def request_line(self, key: str, item: WorkItem) -> bytes:
        head = json.dumps({"custom_id": key, "method": "POST", "url": ENDPOINT}, separators=(",", ":"))[:-1]
        return b"".join((head.encode(), b',"body":', self.backend.request_body(item.query), b"}\n"))

    def submit(self, shard_id: str, keys: Sequence[str], lines: Sequence[bytes]) -> tuple[str, dict[str, Any]]:
        once = self.client.with_options(max_retries=0)
        try:
            upload = once.files.create(file=(f"sabre-{shard_id}.jsonl", b"".join(lines), "application/jsonl"), purpose="batch")
            batch = once.batches.create(
                input_file_id=upload.id,
                endpoint=ENDPOINT,
                completion_window="24h",
                metadata={"sabre_shard": shard_id},
            )
        except Exception as exc:
            raise map_openai_error(exc, "openai", self.provider) from None
        return batch.id, {"input_file_id": upload.id}

    def find(self, shard_id: str) -> str | None:
        try:
            page = self.client.batches.list(limit=100)
            for batch in page.data:
                if (batch.metadata or {}).get("sabre_shard") == shard_id:
                    return batch.id
        except Exception as exc:
            raise map_openai_error(exc, "openai", self.provider) from None
        return None

    def state(self, batch_id: str) -> BatchState:
        try:
            b = self.client.batches.retrieve(batch_id)
        except Exception as exc:
            raise map_openai_error(exc, "openai", self.provider) from None
        counts = b.request_counts
        message = ""
        if b.errors is not None and b.errors.data:
            message = "; ".join(f"{e.code}: {e.message}" + (f" (line {e.line})" if e.line else "") for e in b.errors.data)
        return BatchState(
            status=b.status,
            ended=b.status in ENDED,
            total=getattr(counts, "total", 0) or 0,
            succeeded=getattr(counts, "completed", 0) or 0,
            errored=getattr(counts, "failed", 0) or 0,
            message=message,
            failed_whole=b.status == "failed" and not b.output_file_id and not b.error_file_id,
        )

    def results(self, batch_id: str, state: BatchState) -> Iterator[tuple[str, Completion | CallError]]:
        try:
            b = self.client.batches.retrieve(batch_id)
        except Exception as exc:
            raise map_openai_error(exc, "openai", self.provider) from None
        for file_id in (b.output_file_id, b.error_file_id):
            if not file_id:
                continue
            try:
                data = self.client.files.content(file_id).read()
            except Exception as exc:
                raise map_openai_error(exc) from None
            for raw in data.splitlines():
                if raw.strip():
                    yield parse_result_line(raw, self.provider)

    def cancel(self, batch_id: str) -> None:
        try:
            self.client.batches.cancel(batch_id)
        except Exception as exc:
            raise map_openai_error(exc, "openai", self.provider) from None

    def close(self) -> None:
        self.client.close()


def parse_result_line(raw: bytes, provider: str | None = None) -> tuple[str, Completion | CallError]:
    """One line of an output or error file -> (custom_id, completion or error).

    The response body and an error body are classified exactly as the synchronous
    path's (:func:`sabre_prior.inference.outcomes.classify_openai_chat`, :func:`~sabre_prior.inference.outcomes.classify_error`).
    """
    try:
        line = json.loads(raw)
        key = str(line["custom_id"])
    except (ValueError, KeyError, TypeError):
        return "", CallError("malformed result line", retryable=True, kind="malformed")
    error = line.get("error")
    response = line.get("response")
    if error:
        code = str(error.get("code") or "error")
        message = f"{code}: {error.get('message') or ''}".strip()
        if code in NOT_RUN:
            return key, CallError(message, retryable=True, kind=NOT_RUN[code])
        return key, CallError(message, retryable=True, kind="server")
    if not isinstance(response, dict):
        return key, CallError("malformed result line: no response", retryable=True, kind="malformed")
    status = response.get("status_code")
    body = response.get("body")
    if status != 200:
        return key, classify_error("openai", int(status or 500), body, provider=provider)
    try:
        return key, classify_openai_chat(body, provider=provider)
    except CallError as exc:
        return key, exc
