"""Local vision-language models through vLLM's offline engine.

All questions of a batch go to ``LLM.chat`` at once (vLLM schedules them
itself); each is one conversation with the image (as a ``data:`` URL of the
original bytes) and the prompt text, answered with the shared decoding protocol
(:class:`~.local_common.Decoding`: an explicit ``SamplingParams`` with every
sampling field set, greedy, the checkpoint's end-of-turn ids as stop tokens), so
it decodes as the transformers backend does.

Correctness: the hub is switched off (``HF_HUB_OFFLINE=1``) before vLLM or
``huggingface_hub`` is imported whenever the model is read from the local cache
or a directory; ``limit_mm_per_prompt`` is one image and no video (no memory is
reserved for video); a batch that ``LLM.chat`` rejects as a whole (a prompt longer
than ``max_model_len``, an image the processor cannot read) is re-run question by
question, so only the questions that cannot be served fail (each with its reason)
and the others are answered and journaled as usual. ``check_ready`` runs the same
processor pre-flight as the transformers backend (seconds, no weights).

Settings (``models.<name>`` in params.yaml): ``model_id`` (required),
``revision``, ``dtype``, ``tensor_parallel_size`` (default: ``gpus``),
``max_model_len``, ``gpu_memory_utilization``, ``max_num_seqs``,
``enforce_eager``, ``max_output_tokens`` (default 64), ``trust_remote_code``,
``allow_download``, ``system_prompt``, ``repetition_penalty``, ``chat_template``,
``processor_kwargs`` (vLLM's
``mm_processor_kwargs``), ``model_kwargs`` (more ``LLM(...)`` engine
arguments), ``load_format: dummy`` (random weights, for benchmarks),
``batch_invariant: true`` (vLLM's batch-invariant mode: ``VLLM_BATCH_INVARIANT=1`` is set in this
process, i.e. for this model's job only, before vLLM is imported; documented at
https://docs.vllm.ai/en/latest/features/batch_invariance.html, beta, GPUs of compute capability
>= 8.0; recorded in ``run_info``: the run manifest and the usage files).

The request building (:func:`build_requests`, :func:`engine_kwargs`,
:func:`sampling_kwargs`) and output parsing (:func:`parse_output`) are pure
functions, tested without vLLM.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Mapping, Sequence

from ...errors import BackendError
from .base import CallError, Completion, Query
from .local_common import (
    LocalBackend,
    LocalSettings,
    ModelSource,
    check_model_files,
    checkpoint_stop_ids,
    enforce_offline,
    missing_model_message,
    openai_chat_messages,
    preflight_processor,
    read_chat_template,
)

log = logging.getLogger(__name__)

#: The environment variable of vLLM's batch-invariant mode (docs.vllm.ai, "Batch Invariance").
BATCH_INVARIANT_ENV = "VLLM_BATCH_INVARIANT"


def batch_invariant_env(settings: Mapping[str, Any], name: str = "?") -> dict[str, str]:
    """The environment ``batch_invariant`` asks for (empty without it)."""
    value = settings.get("batch_invariant", False)
    if not isinstance(value, bool):
        raise BackendError(f"models.{name}.batch_invariant must be true or false, got {value!r}")
    return {BATCH_INVARIANT_ENV: "1"} if value else {}


def engine_kwargs(cfg: LocalSettings, source: ModelSource) -> dict[str, Any]:
    """Keyword arguments of ``vllm.LLM(...)`` for these settings."""
    kwargs: dict[str, Any] = {
        "model": source.path_or_id,
        "tokenizer": source.path_or_id,
        "dtype": cfg.dtype,
        "tensor_parallel_size": cfg.tensor_parallel_size or max(cfg.gpus, 1),
        "trust_remote_code": cfg.trust_remote_code,
        "seed": cfg.seed,
        # one image per question and no video: vLLM reserves memory per modality it may see
        "limit_mm_per_prompt": {"image": 1, "video": 0},
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


def sampling_kwargs(cfg: LocalSettings, stop_ids: Sequence[int] = ()) -> dict[str, Any]:
    """The shared decoding protocol: ``SamplingParams(**sampling_kwargs(cfg, stop_ids))``."""
    return cfg.decoding.vllm_kwargs(stop_ids)


def chat_kwargs(cfg: LocalSettings) -> dict[str, Any]:
    """Keyword arguments of ``LLM.chat`` besides the conversations and sampling params."""
    kwargs: dict[str, Any] = {"use_tqdm": False}
    if cfg.chat_template:
        kwargs["chat_template"] = read_chat_template(cfg.chat_template)
    return kwargs


def failed_question(query_id: str, exc: BaseException) -> CallError:
    """A question vLLM cannot serve (prompt too long, unreadable image, template error):
    a failure of that question alone, not retried (the same input fails the same way)."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return CallError(f"question {query_id}: vLLM cannot serve this prompt ({type(exc).__name__}: {first})", retryable=False, kind="bad_request")


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


def answer_each(chat: Any, queries: Sequence[Query]) -> list[Completion | CallError]:
    """``chat(queries)`` for the whole batch; when it raises (``LLM.chat`` validates every
    prompt before scheduling any, so one prompt over ``max_model_len`` or one unreadable
    image fails the call: vLLM docs, "Offline Inference" / ``LLM.chat``), each question
    again alone, so that only the ones that cannot be served fail."""
    try:
        outputs = chat(queries)
    except Exception as exc:  # noqa: BLE001 - narrowed question by question below
        if len(queries) == 1:
            return [failed_question(queries[0].id, exc)]
        log.warning("vLLM rejected a batch of %d questions (%s); answering them one by one", len(queries), exc)
        return [answer_each(chat, [q])[0] for q in queries]
    if len(outputs) != len(queries):
        raise CallError(f"vLLM returned {len(outputs)} outputs for {len(queries)} questions", retryable=False)
    results: list[Completion | CallError] = []
    for output, query in zip(outputs, queries):
        try:
            results.append(parse_output(output, query.id))
        except CallError as exc:
            if exc.retryable:
                raise  # an aborted request: the engine retries the batch
            results.append(exc)
    return results


class VLLMBackend(LocalBackend):
    def __init__(self, name: str, settings: Mapping[str, Any]) -> None:
        super().__init__(name, settings)
        self._llm: Any = None
        self._sampling: Any = None

    def _offline(self) -> None:
        if self.source.local_files_only:
            enforce_offline()  # before vllm / huggingface_hub are imported

    def check_ready(self) -> None:
        self._offline()
        import importlib.util

        if importlib.util.find_spec("vllm") is None:
            raise BackendError(
                f"models.{self.name}: the vllm backend needs the 'vllm' package (Linux with a CUDA GPU); "
                "install the pinned GPU environment: bash scripts/install.sh --gpu"
            )
        check_model_files(self.name, self.source)  # the engine starts at the first batch
        preflight_processor(self.name, self.source, self.cfg, engine_places_images=True)

    def _load(self) -> None:
        if self._llm is not None:
            return
        self._offline()  # vLLM has no local_files_only switch
        import os

        os.environ.update(batch_invariant_env(self.settings, self.name))  # read when vLLM is imported
        from vllm import LLM, SamplingParams

        try:
            self._llm = LLM(**engine_kwargs(self.cfg, self.source))
        except OSError as exc:
            raise BackendError(missing_model_message(self.name, self.source, exc)) from exc
        stop = checkpoint_stop_ids(self.source)
        if not stop:
            tokenizer = self._llm.get_tokenizer()
            stop = {int(tokenizer.eos_token_id)} if tokenizer.eos_token_id is not None else set()
        self._sampling = SamplingParams(**sampling_kwargs(self.cfg, sorted(stop)))
        log.info("%s: vLLM engine ready for %s", self.name, self.source.path_or_id)

    def complete_batch(self, queries: Sequence[Query]) -> list[Completion | CallError]:
        """One answer per question, or a :class:`CallError` in its place for a question
        vLLM cannot serve (the engine fails that question only)."""
        self._load()
        start = time.perf_counter()
        results = answer_each(self._chat, queries)
        seconds = time.perf_counter() - start
        self._account([r for r in results if isinstance(r, Completion)], seconds)
        return results

    def _chat(self, queries: Sequence[Query]) -> list[Any]:
        requests = build_requests(queries, self.cfg.system_prompt)
        return list(self._llm.chat(requests, self._sampling, **chat_kwargs(self.cfg)))

    def run_info(self) -> dict[str, Any]:
        info = super().run_info()
        env = batch_invariant_env(self.settings, self.name)
        return {**info, "batch_invariant": bool(env), "environment": env} if info else info

    def close(self) -> None:
        if self._llm is None:
            return
        self._llm = None
        self._free_accelerator_memory()
