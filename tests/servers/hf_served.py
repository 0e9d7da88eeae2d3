"""An OpenAI-compatible server on 127.0.0.1 that answers with a local checkpoint through the
``transformers`` backend, as ``vllm serve`` or any OpenAI-compatible server serves an open model
(backend parity tests, issue 34).

``POST /v1/chat/completions`` is parsed as :mod:`.protocols` parses it (the request our OpenAI
backend sends: https://platform.openai.com/docs/api-reference/chat/create, the image as a base64
``data:`` URL, the prompt text after it) and answered with the chat-completion object of
https://platform.openai.com/docs/api-reference/chat/object (``finish_reason`` ``length`` when the
token limit ended the answer, as vLLM's OpenAI-compatible server reports it,
https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html).  The answer is the one
:class:`~sabre_prior.inference.models.transformers_backend.TransformersBackend` gives for the same
image and text at batch size 1 (``max_completion_tokens`` / ``max_tokens`` of the request).

``plant(text, image) -> bool`` plants a disagreement: those requests are answered ``"Yes."`` instead
of the model's answer (an answer the contract extracts on a yes/no question).
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from sabre_prior.inference.models.base import Query
from sabre_prior.inference.models.transformers_backend import TransformersBackend

from .protocols import _openai_body, _openai_parse

PLANTED_ANSWER = "Yes."


class HFServedServer:
    """``with HFServedServer(model_dir) as server: server.url + "/v1"``."""

    def __init__(self, model_dir: Path, plant: Callable[[str, bytes], bool] | None = None) -> None:
        self.model_dir = str(model_dir)
        self.plant = plant
        self.requests = 0
        self.planted = 0
        self._backends: dict[int, TransformersBackend] = {}
        self._lock = threading.Lock()  # one generation at a time: the model is not shared across threads
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
                    return
                self._send(200, outer.answer(body))

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def backend(self, max_tokens: int) -> TransformersBackend:
        if max_tokens not in self._backends:
            settings = {"backend": "transformers", "model_id": self.model_dir, "device": "cpu", "batch_size": 1,
                        "max_output_tokens": max_tokens}  # fmt: skip
            backend = TransformersBackend("served", settings)
            backend.check_ready()
            self._backends[max_tokens] = backend
        return self._backends[max_tokens]

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        model, text, data = _openai_parse("/v1/chat/completions", body)
        image = base64.b64decode(data)
        header = body["messages"][-1]["content"]
        mime = next(p["image_url"]["url"] for p in header if p.get("type") == "image_url").split(";")[0][5:]
        max_tokens = int(body.get("max_completion_tokens") or body.get("max_tokens") or 64)
        query = Query(hashlib.sha256(image + text.encode()).hexdigest()[:16], "served", text, image, mime)
        with self._lock:
            self.requests += 1
            completion = self.backend(max_tokens).complete_batch([query])[0]
            planted = self.plant is not None and self.plant(text, image)
            self.planted += planted
        content = PLANTED_ANSWER if planted else completion.text
        finish = "length" if completion.finish_reason == "length" and not planted else "stop"
        return _openai_body(model, content, completion.input_tokens or 0, completion.output_tokens or 0, finish=finish)

    def __enter__(self) -> "HFServedServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        for backend in self._backends.values():
            backend.close()
