"""A fake of the three providers' batch APIs on 127.0.0.1, for the real SDKs.

One aiohttp server (a background thread) speaks

* OpenAI Files + Batches (base_url ``<url>/v1``): ``POST /v1/files`` (multipart,
  ``purpose=batch``), ``POST /v1/batches``, ``GET /v1/batches[/<id>]``,
  ``POST /v1/batches/<id>/cancel``, ``GET /v1/files/<id>/content``.
  Shapes from https://platform.openai.com/docs/guides/batch and
  https://platform.openai.com/docs/api-reference/batch (SDK: openai/types/batch.py,
  batch_request_counts.py, file_object.py): statuses ``validating`` ->
  ``in_progress`` -> ``finalizing`` -> ``completed`` (or ``expired``,
  ``cancelling`` -> ``cancelled``); ``request_counts {total, completed, failed}``;
  the output file holds the 200 responses ``{"id", "custom_id", "response":
  {"status_code", "request_id", "body"}, "error": null}``, the error file the
  others (non-200 responses, and ``response: null`` with ``error.code``
  ``batch_expired`` / ``batch_cancelled`` for requests never run, per the
  guide's "Batch expiration" section).
* Anthropic Message Batches (base_url ``<url>``): ``POST /v1/messages/batches``,
  ``GET /v1/messages/batches/<id>``, ``GET .../<id>/results`` (at the
  ``results_url`` the batch object names), ``POST .../<id>/cancel``.  Shapes from
  https://platform.claude.com/docs/en/build-with-claude/batch-processing and the
  SDK (anthropic/types/messages/message_batch*.py): ``processing_status``
  ``in_progress`` -> ``ended`` (``canceling`` after a cancel); ``request_counts``
  (``processing`` until the end, then ``succeeded``/``errored``/``canceled``/
  ``expired``); result lines ``{"custom_id", "result": {"type": "succeeded",
  "message"} | {"type": "errored", "error": {"type": "error", "error": {"type",
  "message"}}} | {"type": "canceled"} | {"type": "expired"}}``, in no fixed order
  (we reverse them).
* Gemini batches (base_url ``<url>``): ``POST /<version>/models/<m>:batchGenerateContent``,
  ``GET /<version>/batches[/<id>]``, ``POST /<version>/batches/<id>:cancel`` (told apart
  from OpenAI's ``/v1/batches`` by the ``x-goog-api-key`` header the SDK sends).  Shapes from
  https://ai.google.dev/gemini-api/docs/batch-api and the SDK's converters
  (google/genai/batches.py ``_BatchJob_from_mldev``, ``_BatchJobDestination_from_mldev``,
  ``_ListBatchJobsResponse_from_mldev``; _transformers.py ``t_job_state``): an
  Operation ``{"name": "batches/<id>", "metadata": {"state": "BATCH_STATE_PENDING"
  | ..._RUNNING | ..._SUCCEEDED | ..._CANCELLED | ..._EXPIRED, "output":
  {"inlinedResponses": {"inlinedResponses": [{"response" | "error", "metadata"}]}}}}``,
  responses in request order; an expired job has no output.

Each request inside a batch is parsed with the synchronous protocols
(:mod:`tests.servers.protocols`) and answered with :func:`fake_answer`, so a
batch answer equals the synchronous one.  A batch ends after ``steps`` status
polls (``hold`` keeps every batch running until released).  Item faults:
``faults[content key]`` is a list of faults for the key's successive batches
(``"500"``, ``"400"``, ``"empty"`` (normal stop), ``"budget"`` (empty, the
token budget spent), ``"refusal"``, ``"expired"``, or None for a normal answer); ``expire_batches`` makes the first N batches end expired with
only their first half answered.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from . import protocols as P
from .core import content_key, fake_answer, fake_usage


@dataclass
class FakeBatch:
    id: str
    protocol: str
    model: str
    requests: list[tuple[str, str, str, bytes]]  # custom id, content key, text, image
    input_bytes: int
    meta: dict[str, Any] = field(default_factory=dict)
    polls: int = 0
    status: str = ""
    cancel: bool = False
    ended: bool = False
    expired: bool = False
    results: list[dict[str, Any]] = field(default_factory=list)  # (protocol-neutral) per request
    created: float = field(default_factory=time.time)


class FakeBatchServer:
    def __init__(self, *, expected_key: str | None = None, steps: int = 2) -> None:
        self.expected_key = expected_key
        self.steps = steps
        self.hold = False
        self.faults: dict[str, list[str | None]] = {}
        self.expire_batches = 0
        self.invalid = False  # OpenAI: batches fail validation (status failed, errors.data, no files)
        #: Gemini: jobs end BATCH_STATE_FAILED with this google.rpc.Status message in the Operation's
        #: top-level ``error`` (https://ai.google.dev/api/batch-mode: batches.get returns an Operation;
        #: a done Operation carries ``error`` (Status {code, message}) or ``response``)
        self.gemini_failure: str | None = None
        self.create_failures = 0  # OpenAI: the next N batch creations answer 500
        self.batches: dict[str, FakeBatch] = {}
        self.order: list[str] = []  # batch ids in creation order
        self.files: dict[str, bytes] = {}
        self.uploads: list[int] = []  # sizes of uploaded files (bytes on the wire)
        self.create_bodies: list[int] = []  # sizes of the create requests' bodies
        self.attempts: Counter[str] = Counter()  # content key -> batches it was in
        self.answered: Counter[str] = Counter()  # content key -> answers given
        self.cancels: list[str] = []
        self.sync_calls = 0
        self.port = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # -- running --------------------------------------------------------------------------
    def url(self, protocol: str = "openai") -> str:
        base = f"http://127.0.0.1:{self.port}"
        return base + "/v1" if protocol == "openai" else base

    def __enter__(self) -> "FakeBatchServer":
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            app = web.Application(client_max_size=512 * 1024 * 1024)
            app.router.add_route("*", "/{tail:.*}", self._handle)
            runner = web.AppRunner(app, access_log=None)
            loop.run_until_complete(runner.setup())
            site = web.TCPSite(runner, "127.0.0.1", 0)
            loop.run_until_complete(site.start())
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            ready.set()
            loop.run_forever()
            loop.run_until_complete(runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name="fake-batch-server", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def created(self) -> list[FakeBatch]:
        return [self.batches[i] for i in self.order]

    # -- the batch life cycle (protocol-neutral) ---------------------------------------------
    def _new(self, protocol: str, model: str, requests: list[tuple[str, str, bytes]], size: int, meta: dict[str, Any]) -> FakeBatch:
        bid = {"openai": "batch_", "anthropic": "msgbatch_", "gemini": ""}[protocol] + uuid.uuid4().hex[:20]
        rows = [(cid, content_key(text, image), text, image) for cid, text, image in requests]
        batch = FakeBatch(id=bid, protocol=protocol, model=model, requests=rows, input_bytes=size, meta=meta)
        with self._lock:
            batch.expired = len(self.order) < self.expire_batches
            self.batches[bid] = batch
            self.order.append(bid)
            for _, key, _, _ in rows:
                self.attempts[key] += 1
        return batch

    def _advance(self, batch: FakeBatch) -> None:
        """One status poll: the batch moves on; at the end its results are made."""
        if batch.ended:
            return
        batch.polls += 1
        if batch.cancel or (not self.hold and batch.polls >= self.steps):
            self._finish(batch)

    def _finish(self, batch: FakeBatch) -> None:
        n = len(batch.requests)
        for i, (cid, key, text, image) in enumerate(batch.requests):
            fault: str | None = None
            plan = self.faults.get(key) or []
            attempt = self.attempts[key]
            if attempt - 1 < len(plan):
                fault = plan[attempt - 1]
            if batch.cancel:
                fault = "cancelled"
            elif batch.expired and i >= n // 2:
                fault = "expired"
            answer = fake_answer(text, image)
            if fault in ("empty", "budget"):
                answer = ""
            if fault in (None, "empty", "budget", "refusal"):
                tin, tout = fake_usage(text, answer)
                if fault == "budget":
                    tout = 64  # the whole output budget spent (on thinking), no text
                if fault is None:
                    with self._lock:
                        self.answered[key] += 1
                batch.results.append(
                    {"cid": cid, "ok": True, "answer": answer, "tin": tin, "tout": tout, "refusal": fault == "refusal", "budget": fault == "budget"}
                )
            else:
                batch.results.append({"cid": cid, "ok": False, "fault": fault})
        batch.ended = True

    # -- the handler ----------------------------------------------------------------------------
    def _key_ok(self, request: web.Request) -> bool:
        if self.expected_key is None:
            return True
        auth = request.headers.get("Authorization", "")
        got = auth[7:] if auth.startswith("Bearer ") else request.headers.get("x-api-key") or request.headers.get("x-goog-api-key")
        return got == self.expected_key

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path, method = request.path, request.method
        if not self._key_ok(request):
            return web.json_response({"error": {"message": "invalid API key", "type": "authentication_error"}}, status=401)
        try:
            if path.startswith("/v1/messages/batches"):
                return await self._anthropic(request, path, method)
            if "x-goog-api-key" in request.headers:  # google-genai sends its key in this header
                return await self._gemini(request, path, method)
            if path.startswith("/v1/"):
                return await self._openai(request, path, method)
        except (KeyError, ValueError, TypeError, StopIteration) as exc:
            return web.json_response({"error": {"message": f"bad request: {exc!r}", "type": "invalid_request_error"}}, status=400)
        return web.json_response({"error": {"message": f"no route {method} {path}"}}, status=404)

    # -- OpenAI --------------------------------------------------------------------------------
    def _openai_batch(self, b: FakeBatch) -> dict[str, Any]:
        done = sum(1 for r in b.results if r["ok"])
        failed = len(b.results) - done
        if not b.ended and not self.hold:  # request_counts.completed grows while in progress
            done = min(len(b.requests), len(b.requests) * b.polls // max(1, self.steps))
        if self.invalid:  # validation failed: "failed" with the reasons in errors.data, no output files
            b.ended = True
            errors = {"object": "list", "data": [{"code": "invalid_request", "message": "injected validation error", "param": "body.model", "line": 1}]}
            return {**self._openai_fields(b), "status": "failed", "errors": errors, "failed_at": int(time.time()),
                    "request_counts": {"total": 0, "completed": 0, "failed": 0}}  # fmt: skip
        if b.ended:
            status = "cancelled" if b.cancel else "expired" if b.expired else "completed"
        elif b.cancel:
            status = "cancelling"
        else:
            status = "validating" if b.polls == 0 else "in_progress" if b.polls < self.steps - 1 or self.hold else "finalizing"
        out = [r for r in b.results if r["ok"]]
        err = [r for r in b.results if not r["ok"]]
        if b.ended:
            if out:
                self.files.setdefault(f"file-out-{b.id}", self._openai_lines(b, out))
            if err:
                self.files.setdefault(f"file-err-{b.id}", self._openai_lines(b, err))
        return {
            **self._openai_fields(b),
            "errors": None,
            "status": status,
            "output_file_id": f"file-out-{b.id}" if b.ended and out else None,
            "error_file_id": f"file-err-{b.id}" if b.ended and err else None,
            "created_at": int(b.created),
            "in_progress_at": int(b.created) if b.polls else None,
            "expires_at": int(b.created) + 86400,
            "completed_at": int(time.time()) if b.ended and status == "completed" else None,
            "request_counts": {"total": len(b.requests), "completed": done, "failed": failed},
            "metadata": b.meta.get("metadata"),
        }

    def _openai_fields(self, b: FakeBatch) -> dict[str, Any]:
        return {
            "id": b.id,
            "object": "batch",
            "endpoint": b.meta.get("endpoint"),
            "input_file_id": b.meta.get("input_file_id"),
            "completion_window": "24h",
            "created_at": int(b.created),
            "metadata": b.meta.get("metadata"),
        }

    def _openai_lines(self, b: FakeBatch, rows: list[dict[str, Any]]) -> bytes:
        lines = []
        for r in rows:
            line: dict[str, Any] = {"id": f"batch_req_{uuid.uuid4().hex[:12]}", "custom_id": r["cid"]}
            if r["ok"]:
                body = json.loads(P._openai_ok(b.model, r["answer"], r["tin"], r["tout"]).body)
                if r["refusal"]:  # message.refusal (https://platform.openai.com/docs/api-reference/chat/object)
                    body["choices"][0]["message"].update(content=None, refusal="I can't help with that.")
                if r["budget"]:  # finish_reason "length": max tokens reached (same page)
                    body["choices"][0]["finish_reason"] = "length"
                line["response"] = {"status_code": 200, "request_id": uuid.uuid4().hex, "body": body}
                line["error"] = None
            elif r["fault"] in ("expired", "cancelled"):
                code = "batch_expired" if r["fault"] == "expired" else "batch_cancelled"
                line["response"] = None
                line["error"] = {"code": code, "message": "This request could not be executed before the completion window expired."}
            else:
                status = int(r["fault"])
                line["response"] = {"status_code": status, "request_id": uuid.uuid4().hex, "body": json.loads(P._openai_error(status, f"injected {status}").body)}
                line["error"] = None
            lines.append(json.dumps(line))
        return ("\n".join(lines) + "\n").encode()

    async def _openai(self, request: web.Request, path: str, method: str) -> web.StreamResponse:
        if path == "/v1/chat/completions" and method == "POST":  # the synchronous call (retry: sync)
            model, text, b64 = P.OPENAI.parse(path, await request.json())
            image = P.b64decode(b64)
            answer = fake_answer(text, image)
            with self._lock:
                self.sync_calls += 1
                self.answered[content_key(text, image)] += 1
            return P._openai_ok(model, answer, *fake_usage(text, answer))
        if path == "/v1/files" and method == "POST":
            form = await request.post()
            upload = form["file"]
            data = upload.file.read()  # type: ignore[union-attr]
            if form.get("purpose") != "batch":
                raise ValueError("purpose must be batch")
            fid = f"file-{uuid.uuid4().hex[:20]}"
            self.files[fid] = data
            self.uploads.append(len(data))
            return web.json_response(
                {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()), "filename": upload.filename, "purpose": "batch", "status": "processed"}  # type: ignore[union-attr]
            )
        if path == "/v1/batches" and method == "POST":
            if self.create_failures > 0:
                self.create_failures -= 1
                return P._openai_error(500, "injected 500 on batch create")
            body = await request.json()
            data = self.files[body["input_file_id"]]
            requests = []
            for raw in data.splitlines():
                line = json.loads(raw)
                if line["url"] != body["endpoint"] or line["method"] != "POST":
                    raise ValueError("line url/method differ from the batch endpoint")
                model, text, b64 = P.OPENAI.parse("/v1/chat/completions", line["body"])
                requests.append((line["custom_id"], text, P.b64decode(b64)))
            if len({r[0] for r in requests}) != len(requests):  # "custom_id ... must be unique" (batch guide)
                raise ValueError("duplicate custom_id in the input file")
            batch = self._new("openai", model, requests, len(data), {"endpoint": body["endpoint"], "input_file_id": body["input_file_id"], "metadata": body.get("metadata")})
            return web.json_response(self._openai_batch(batch))
        if path == "/v1/batches" and method == "GET":
            data = [self._openai_batch(b) for b in reversed(self.created())]
            return web.json_response({"object": "list", "data": data, "has_more": False, "first_id": None, "last_id": None})
        parts = path.split("/")  # "", v1, batches|files, id, [cancel|content]
        if parts[2] == "batches":
            batch = self.batches[parts[3]]
            if len(parts) == 5 and parts[4] == "cancel" and method == "POST":
                batch.cancel = True
                self.cancels.append(batch.id)
            else:
                self._advance(batch)
            return web.json_response(self._openai_batch(batch))
        if parts[2] == "files" and len(parts) == 5 and parts[4] == "content":
            return web.Response(body=self.files[parts[3]], content_type="application/octet-stream")
        raise KeyError(path)

    # -- Anthropic ----------------------------------------------------------------------------------
    def _anthropic_batch(self, b: FakeBatch, request: web.Request) -> dict[str, Any]:
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if b.ended:
            for r in b.results:
                kind = "succeeded" if r["ok"] else {"expired": "expired", "cancelled": "canceled"}.get(r["fault"], "errored")
                counts[kind] += 1
        else:
            counts["processing"] = len(b.requests)
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return {
            "id": b.id,
            "type": "message_batch",
            "processing_status": "ended" if b.ended else "canceling" if b.cancel else "in_progress",
            "request_counts": counts,
            "created_at": now,
            "expires_at": now,
            "ended_at": now if b.ended else None,
            "archived_at": None,
            "cancel_initiated_at": now if b.cancel else None,
            "results_url": f"http://127.0.0.1:{self.port}/v1/messages/batches/{b.id}/results" if b.ended else None,
        }

    async def _anthropic(self, request: web.Request, path: str, method: str) -> web.StreamResponse:
        if path == "/v1/messages/batches" and method == "POST":
            raw = await request.read()
            self.create_bodies.append(len(raw))
            body = json.loads(raw)
            requests, model = [], ""
            for entry in body["requests"]:
                if not re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", entry["custom_id"]):  # the documented custom_id pattern
                    raise ValueError(f"custom_id {entry['custom_id']!r} does not match ^[a-zA-Z0-9_-]{{1,64}}$")
                model, text, b64 = P.ANTHROPIC.parse("/v1/messages", entry["params"])
                requests.append((entry["custom_id"], text, P.b64decode(b64)))
            batch = self._new("anthropic", model, requests, len(raw), {})
            return web.json_response(self._anthropic_batch(batch, request))
        parts = path.split("/")  # "", v1, messages, batches, id, [results|cancel]
        batch = self.batches[parts[4]]
        if len(parts) == 6 and parts[5] == "results":
            lines = []
            for r in reversed(batch.results):  # "not guaranteed to be in the same order as requests"
                if r["ok"]:
                    msg = json.loads(P._anthropic_ok(batch.model, r["answer"], r["tin"], r["tout"]).body)
                    if r["refusal"]:  # stop_reason "refusal" (Messages API)
                        msg["stop_reason"] = "refusal"
                    if r["budget"]:  # stop_reason "max_tokens" (Messages API)
                        msg["stop_reason"] = "max_tokens"
                    result: dict[str, Any] = {"type": "succeeded", "message": msg}
                elif r["fault"] in ("expired", "cancelled"):
                    result = {"type": "expired" if r["fault"] == "expired" else "canceled"}
                else:
                    err = json.loads(P._anthropic_error(int(r["fault"]), f"injected {r['fault']}").body)
                    result = {"type": "errored", "error": err}
                lines.append(json.dumps({"custom_id": r["cid"], "result": result}))
            return web.Response(body=("\n".join(lines) + "\n").encode(), content_type="application/binary")
        if len(parts) == 6 and parts[5] == "cancel" and method == "POST":
            batch.cancel = True
            self.cancels.append(batch.id)
        else:
            self._advance(batch)
        return web.json_response(self._anthropic_batch(batch, request))

    # -- Gemini ----------------------------------------------------------------------------------------
    def _gemini_op(self, b: FakeBatch) -> dict[str, Any]:
        if b.ended and self.gemini_failure is not None and not b.cancel:
            state = "BATCH_STATE_FAILED"
        elif b.ended:
            state = "BATCH_STATE_CANCELLED" if b.cancel else "BATCH_STATE_EXPIRED" if b.expired else "BATCH_STATE_SUCCEEDED"
        else:
            state = "BATCH_STATE_PENDING" if b.polls == 0 else "BATCH_STATE_RUNNING"
        meta: dict[str, Any] = {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
            "model": f"models/{b.model}",
            "displayName": b.meta.get("displayName"),
            "state": state,
            "name": f"batches/{b.id}",
        }
        if b.ended and state == "BATCH_STATE_SUCCEEDED":
            out = []
            for r in b.results:
                item: dict[str, Any] = {"metadata": {"key": r["cid"]}}
                if r["ok"]:
                    item["response"] = json.loads(P._gemini_ok(b.model, r["answer"], r["tin"], r["tout"]).body)
                    if r["refusal"]:  # finishReason SAFETY (https://ai.google.dev/api/generate-content#FinishReason)
                        item["response"]["candidates"][0].update(finishReason="SAFETY", content={"role": "model", "parts": []})
                    if r["budget"]:  # finishReason MAX_TOKENS (same page)
                        item["response"]["candidates"][0].update(finishReason="MAX_TOKENS", content={"role": "model", "parts": []})
                else:  # a google.rpc.Status; 13 INTERNAL, 3 INVALID_ARGUMENT
                    item["error"] = {"code": 3 if r["fault"] == "400" else 13, "message": f"injected {r['fault']}"}
                out.append(item)
            meta["output"] = {"inlinedResponses": {"inlinedResponses": out}}
        op: dict[str, Any] = {"name": f"batches/{b.id}", "metadata": meta, "done": b.ended}
        if state == "BATCH_STATE_FAILED":
            op["error"] = {"code": 3, "message": self.gemini_failure}
        return op

    async def _gemini(self, request: web.Request, path: str, method: str) -> web.StreamResponse:
        if path.endswith(":batchGenerateContent") and method == "POST":
            raw = await request.read()
            self.create_bodies.append(len(raw))
            body = json.loads(raw)
            model = path.rsplit("/models/", 1)[1].split(":", 1)[0]
            requests = []
            for entry in body["batch"]["inputConfig"]["requests"]["requests"]:
                _, text, b64 = P.GEMINI.parse(f"/models/{model}:generateContent", entry["request"])
                requests.append((entry["metadata"]["key"], text, P.b64decode(b64)))
            batch = self._new("gemini", model, requests, len(raw), {"displayName": body["batch"].get("displayName")})
            return web.json_response(self._gemini_op(batch))
        version, _, rest = path[1:].partition("/")  # the SDK's api version (v1beta or v1)
        if rest == "batches" and method == "GET":
            return web.json_response({"operations": [self._gemini_op(b) for b in reversed(self.created())]})
        name = rest[len("batches/") :]
        if name.endswith(":cancel") and method == "POST":
            batch = self.batches[name[: -len(":cancel")]]
            batch.cancel = True
            self.cancels.append(batch.id)
            return web.json_response({})
        batch = self.batches[name]
        self._advance(batch)
        return web.json_response(self._gemini_op(batch))
