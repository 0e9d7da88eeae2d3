"""Local vision-language models through vLLM's offline engine.

All questions of a batch go to ``LLM.chat`` at once (vLLM schedules them
itself); each is one conversation with the image (as a ``data:`` URL of the
original bytes) and the prompt text, answered greedily with
``SamplingParams(temperature=0, max_tokens=max_new_tokens)``.

Settings (``models.<name>`` in params.yaml): ``model_id`` (required),
``revision``, ``dtype``, ``tensor_parallel_size`` (default: ``gpus``),
``max_model_len``, ``gpu_memory_utilization``, ``max_num_seqs``,
``enforce_eager``, ``max_new_tokens`` (default 64), ``trust_remote_code``,
``allow_download``, ``system_prompt``, ``processor_kwargs`` (vLLM's
``mm_processor_kwargs``), ``model_kwargs`` (more ``LLM(...)`` engine
arguments), ``load_format: dummy`` (random weights, for benchmarks).

The request building (:func:`build_requests`, :func:`engine_kwargs`,
:func:`sampling_kwargs`) and output parsing (:func:`parse_output`) are pure
functions, tested without vLLM.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Mapping, Sequence

from ..errors import BackendError
from .base import CallError, Completion, Query
from .local_common import (
    LocalBackend,
    LocalSettings,
    ModelSource,
    check_model_files,
    missing_model_message,
    openai_chat_messages,
)

log = logging.getLogger(__name__)


def engine_kwargs(cfg: LocalSettings, source: ModelSource) -> dict[str, Any]:
    """Keyword arguments of ``vllm.LLM(...)`` for these settings."""
    kwargs: dict[str, Any] = {
        "model": source.path_or_id,
        "tokenizer": source.path_or_id,
        "dtype": cfg.dtype,
        "tensor_parallel_size": cfg.tensor_parallel_size or max(cfg.gpus, 1),
        "trust_remote_code": cfg.trust_remote_code,
        "seed": cfg.seed,
        "limit_mm_per_prompt": {"image": 1},
    }
    if source.revision:
        kwargs["revision"] = source.revision
        kwargs["tokenizer_revision"] = source.revision
    optional = {
        "max_model_len": cfg.max_model_len,
        "gpu_memory_utilization": cfg.gpu_memory_utilization,
        "max_num_seqs": cfg.max_num_seqs,
        "load_format": cfg.load_format,
    }
    kwargs.update({k: v for k, v in optional.items() if v is not None})
    if cfg.enforce_eager:
        kwargs["enforce_eager"] = True
    if cfg.processor_kwargs:
        kwargs["mm_processor_kwargs"] = dict(cfg.processor_kwargs)
    kwargs.update(cfg.model_kwargs)
    return kwargs


def sampling_kwargs(cfg: LocalSettings) -> dict[str, Any]:
    """Greedy decoding: ``SamplingParams(**sampling_kwargs(cfg))``."""
    return {"temperature": 0.0, "max_tokens": cfg.max_new_tokens, "n": 1, "seed": cfg.seed}


def build_requests(queries: Sequence[Query], system_prompt: str | None = None) -> list[list[dict[str, Any]]]:
    """One OpenAI-style conversation per question, for ``LLM.chat``."""
    return [openai_chat_messages(q, system_prompt) for q in queries]


def parse_output(output: Any, query_id: str = "?") -> Completion:
    """A vLLM ``RequestOutput`` (first candidate) as a :class:`Completion`."""
    candidates = getattr(output, "outputs", None) or []
    if not candidates:
        raise CallError(f"question {query_id}: vLLM returned no candidate", retryable=False, kind="empty")
    first = candidates[0]
    prompt_ids = getattr(output, "prompt_token_ids", None)
    token_ids = getattr(first, "token_ids", None)
    finish = getattr(first, "finish_reason", None)
    if finish == "abort":
        raise CallError(f"question {query_id}: vLLM aborted the request", retryable=True, kind="abort")
    return Completion(
        text=str(first.text or "").strip(),
        input_tokens=None if prompt_ids is None else len(prompt_ids),
        output_tokens=None if token_ids is None else len(token_ids),
        finish_reason=finish,
    )


class VLLMBackend(LocalBackend):
    def __init__(self, name: str, settings: Mapping[str, Any]) -> None:
        super().__init__(name, settings)
        self._llm: Any = None
        self._sampling: Any = None

    def check_ready(self) -> None:
        try:
            import vllm  # noqa: F401
        except ModuleNotFoundError as exc:
            raise BackendError(
                f"models.{self.name}: the vllm backend needs the 'vllm' package (Linux with a CUDA GPU); pip install vllm"
            ) from exc
        check_model_files(self.name, self.source)  # the engine starts at the first batch

    def _load(self) -> None:
        if self._llm is not None:
            return
        import os

        from vllm import LLM, SamplingParams

        if self.source.local_files_only and not self.source.is_local_dir:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # vLLM has no local_files_only switch
        try:
            self._llm = LLM(**engine_kwargs(self.cfg, self.source))
        except OSError as exc:
            raise BackendError(missing_model_message(self.name, self.source, exc)) from exc
        self._sampling = SamplingParams(**sampling_kwargs(self.cfg))
        log.info("%s: vLLM engine ready for %s", self.name, self.source.path_or_id)

    def complete_batch(self, queries: Sequence[Query]) -> list[Completion]:
        self._load()
        start = time.perf_counter()
        outputs = self._llm.chat(build_requests(queries, self.cfg.system_prompt), self._sampling, use_tqdm=False)
        seconds = time.perf_counter() - start
        if len(outputs) != len(queries):
            raise CallError(f"vLLM returned {len(outputs)} outputs for {len(queries)} questions", retryable=False)
        completions = [parse_output(o, q.id) for o, q in zip(outputs, queries)]
        self._account(completions, seconds)
        return completions

    def close(self) -> None:
        if self._llm is None:
            return
        self._llm = None
        self._free_accelerator_memory()
