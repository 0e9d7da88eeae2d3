"""Gemini Batch API through the ``google-genai`` SDK (``client.batches``), with inlined requests.

Facts used, from https://ai.google.dev/gemini-api/docs/batch-api and the SDK
(``google/genai/batches.py``: ``_BatchJob_from_mldev``, ``_InlinedRequest_to_mldev``,
``_InlinedResponse_from_mldev``; ``google/genai/_transformers.py``: ``t_job_state``):

* ``batches.create(model, src=[InlinedRequest(contents, config, metadata)], config={"display_name"})``
  posts ``models/<model>:batchGenerateContent``; inlined requests suit batches
  whose whole request stays under 20 MB (larger inputs go through a file);
* ``batches.get(name)``: ``state`` ``JOB_STATE_PENDING``, ``JOB_STATE_RUNNING``,
  ``JOB_STATE_SUCCEEDED``, ``JOB_STATE_FAILED``, ``JOB_STATE_CANCELLED``,
  ``JOB_STATE_EXPIRED`` (the REST API's ``BATCH_STATE_*``); on success
  ``dest.inlined_responses``: one per request, in request order, each a
  ``response`` (a GenerateContentResponse) or an ``error`` (a google.rpc.Status
  ``{code, message}``), with the request's ``metadata``;
* a job that stays pending or running for 48 hours expires (no results).

The SDK reports no per-request counts for the Gemini Developer API, so the
progress bar shows the job state and fills up when the job ends.  The request
of each question is :meth:`GeminiBackend.request`, what the synchronous path
sends.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Iterator, Sequence

from ..batch import BatchState
from ..engine import WorkItem
from ..outcomes import classify_error, classify_gemini_response
from .base import CallError, Completion
from .gemini_backend import GeminiBackend, map_gemini_error

ENDED = frozenset({"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED", "JOB_STATE_PARTIALLY_SUCCEEDED"})
#: google.rpc.Code -> HTTP status (https://cloud.google.com/apis/design/errors#handling_errors)
RPC_STATUS = {1: 499, 2: 500, 3: 400, 4: 504, 5: 404, 7: 403, 8: 429, 9: 400, 10: 409, 11: 400, 13: 500, 14: 503, 16: 401}
#: bytes added to each request's JSON estimate (generation config, key names): an upper bound
SLACK = 512


class GeminiBatch:
    provider = "gemini"
    max_requests = 100_000
    max_bytes = 20 * 1000 * 1000
    overhead = 1024

    def __init__(self, backend: GeminiBackend) -> None:
        from google import genai
        from google.genai import types

        self.backend = backend
        options: dict[str, Any] = {
            "timeout": int(max(60.0, backend.timeout_s) * 1000),
            "retry_options": types.HttpRetryOptions(attempts=1),
        }
        if backend.base_url:
            options["base_url"] = backend.base_url
        if backend.extra_body:
            options["extra_body"] = backend.extra_body
        self.client = genai.Client(api_key=backend.api_key(), http_options=types.HttpOptions(**options))
        self._items: dict[str, WorkItem] = {}

    def request_line(self, key: str, item: WorkItem) -> bytes:
        """An upper bound of the request's size in the create call (its JSON, image in base64)."""
        self._items[key] = item
        q = item.query
        sketch = {
            "request": {
                "contents": [
                    {
                        "role": "user",
                        "parts": [{"inlineData": {"data": base64.b64encode(q.image).decode(), "mimeType": q.image_mime}}, {"text": q.text}],
                    }
                ]
            },
            "metadata": {"key": key},
        }
        return json.dumps(sketch, ensure_ascii=False, separators=(",", ":")).encode() + b" " * SLACK

    def submit(self, shard_id: str, keys: Sequence[str], lines: Sequence[bytes]) -> tuple[str, dict[str, Any]]:
        from google.genai import types

        src = []
        for key in keys:
            req = self.backend.request(self._items[key].query)
            src.append(types.InlinedRequest(contents=req["contents"], config=req["config"], metadata={"key": key}))
        try:
            job = self.client.batches.create(model=self.backend.model_id, src=src, config={"display_name": f"sabre-{shard_id}"})
        except Exception as exc:
            raise map_gemini_error(exc) from None
        return str(job.name), {}

    def find(self, shard_id: str) -> str | None:
        try:
            for job in self.client.batches.list(config={"page_size": 100}):
                if job.display_name == f"sabre-{shard_id}":
                    return str(job.name)
        except Exception as exc:
            raise map_gemini_error(exc) from None
        return None

    def _get(self, name: str) -> Any:
        try:
            return self.client.batches.get(name=name)
        except Exception as exc:
            raise map_gemini_error(exc) from None

    def state(self, batch_id: str) -> BatchState:
        job = self._get(batch_id)
        state = getattr(job.state, "value", str(job.state))
        responses = (job.dest.inlined_responses if job.dest is not None else None) or []
        errored = sum(1 for r in responses if r.error is not None)
        error = getattr(job, "error", None)
        message = str(getattr(error, "message", "") or "")
        if state == "JOB_STATE_FAILED" and not message:
            message = self.failure_message(batch_id)
        return BatchState(
            status=state,
            ended=state in ENDED,
            total=len(responses),
            succeeded=len(responses) - errored,
            errored=errored,
            message=message,
            failed_whole=state == "JOB_STATE_FAILED" and not responses,
        )

    def failure_message(self, batch_id: str) -> str:
        """The provider's reason for a failed job, read from the job's raw JSON.

        ``batches.get`` answers an Operation whose top-level ``error`` (a google.rpc.Status
        ``{code, message}``) says why the job failed (https://ai.google.dev/api/batch-mode), but
        google-genai drops it for the Gemini Developer API: ``batches.py`` ``_BatchJob_from_mldev``
        copies ``name`` and ``metadata.*`` only, while ``_BatchJob_from_vertex`` copies ``error``.
        So the same GET is made through the SDK's own client (its auth, base URL and API
        version: ``BaseApiClient.request``, as ``Batches.get`` does) and the field read from it.
        """
        path = batch_id if batch_id.startswith("batches/") else f"batches/{batch_id}"
        try:
            response = self.client._api_client.request("get", path, {}, None)  # noqa: SLF001 - see above
            raw = json.loads(response.body or "{}")
        except Exception as exc:  # noqa: BLE001 - the reason is extra; the job is failed either way
            return f"the provider's reason could not be read ({type(exc).__name__}: {exc})"
        error = raw.get("error") or (raw.get("metadata") or {}).get("error") or {}
        if not isinstance(error, dict) or not error.get("message"):
            return "the provider gave no reason"
        code = f" (google.rpc code {error['code']})" if error.get("code") is not None else ""
        return f"{error['message']}{code}"

    def results(self, batch_id: str, state: BatchState) -> Iterator[tuple[str, Completion | CallError]]:
        job = self._get(batch_id)
        responses = (job.dest.inlined_responses if job.dest is not None else None) or []
        for r in responses:
            key = (r.metadata or {}).get("key", "")
            if r.error is not None:
                err = r.error if isinstance(r.error, dict) else r.error.model_dump()
                code = int(err.get("code") or 13)
                status = RPC_STATUS.get(code, code if code >= 400 else 500)
                yield key, classify_error("gemini", status, {"error": err})
                continue
            try:
                yield key, classify_gemini_response(r.response)
            except CallError as exc:
                yield key, exc

    def cancel(self, batch_id: str) -> None:
        try:
            self.client.batches.cancel(name=batch_id)
        except Exception as exc:
            raise map_gemini_error(exc) from None

    def close(self) -> None:
        self.client.close()
