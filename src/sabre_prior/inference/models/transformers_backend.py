"""Local vision-language models through Hugging Face ``transformers``.

The model is read by hub id from the local cache (or from a local directory)
with ``AutoProcessor`` and ``AutoModelForImageTextToText``; each question is one
conversation (image, then prompt) rendered by the processor's chat template,
answered with the shared decoding protocol (:class:`~.local_common.Decoding`:
greedy, at most ``max_output_tokens`` tokens, ``repetition_penalty`` 1.0 unless
set, the checkpoint's generation defaults overridden) in left-padded batches
of ``batch_size``. ``check_ready`` loads the processor first (seconds, no
weights) and stops with one line naming a missing package or setting.

Settings (``models.<name>`` in params.yaml): ``model_id`` (required),
``revision``, ``dtype`` (auto/bfloat16/float16/float32), ``device``
(auto/cpu/cuda/cuda:N), ``gpus`` (> 1 spreads the model with
``device_map="auto"``), ``batch_size`` (default 16), ``max_output_tokens``
(default 64), ``trust_remote_code``, ``allow_download``, ``system_prompt``,
``processor_kwargs`` / ``model_kwargs`` (passed to ``from_pretrained``, e.g.
``{max_pixels: 1003520}`` for Qwen2.5-VL or ``{attn_implementation: sdpa}``),
``repetition_penalty``, ``chat_template`` (a Jinja template or a .jinja file, for
checkpoints that ship none),
``load_format: dummy`` (random weights from the model's config, for
benchmarks without the weights).

What the CPU does for the GPU (issue 34; each switch is a class attribute that
``benchmarks/gpu_check.py`` turns off to measure its effect):

* ``prefetch_enabled``: the next batch's images are decoded and run through the
  processor in a worker thread while the GPU generates the current batch (the
  engine names the next batch through :meth:`TransformersBackend.prefetch`; a
  call with more than ``batch_size`` questions prefetches its own batches);
* ``group_by_length``: the engine orders the questions by :meth:`order_key`
  (image pixels, then prompt length), so a batch pads less;
* ``fast_processor``: the checkpoint's fast image processor is used where it
  gives the same pixel values as the slow one on the first batch's images
  (checked at the first batch, recorded in ``run_info``);
* ``time_split``: the model's time is split into vision tower + prefill (up to
  the first new token) and decoding (a streamer synchronises at every token:
  for benchmarks only).
"""

from __future__ import annotations

import inspect
import io
import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Mapping, Sequence

from ...errors import BackendError
from .base import Completion, Query
from .local_common import (
    LocalBackend,
    batched,
    check_model_files,
    checkpoint_stop_ids,
    decode_image,
    generated_length,
    hf_chat_messages,
    missing_model_message,
    preflight_processor,
    resolve_device,
    resolve_dtype,
)

log = logging.getLogger(__name__)


#: Largest difference of normalised pixel values under which the fast image processor counts as giving
#: the same pixel values as the slow one (float rounding; one grey level is ~0.015 after normalisation).
FAST_PROCESSOR_TOLERANCE = 1e-4
#: Timing keys this backend adds to ``stats`` (seconds, summed over batches).
TIMING_KEYS = ("image_decode_s", "processor_s", "encode_wait_s", "model_s", "prefill_s", "decode_s")


class TransformersBackend(LocalBackend):
    prefetch_enabled = True
    group_by_length = True
    fast_processor = True
    time_split = False

    def __init__(self, name: str, settings: Mapping[str, Any]) -> None:
        super().__init__(name, settings)
        self._model: Any = None
        self._processor: Any = None
        self._device: str | None = None
        self._stop_ids: frozenset[int] = frozenset()
        self._pool: ThreadPoolExecutor | None = None
        #: batches being encoded ahead, by their question ids (the engine names the next one before it
        #: sends the current one, so two can be waiting)
        self._prefetched: dict[tuple[str, ...], Future[Any]] = {}
        self.image_processor_check: dict[str, Any] | None = None
        self.stats.update(dict.fromkeys(TIMING_KEYS, 0.0))

    # -- loading --------------------------------------------------------------------
    def check_ready(self) -> None:
        """Packages, device, model files and the processor (chat template, image token)
        are there; the weights are loaded at the first batch, so a run answered entirely
        from the journal never loads them."""
        try:
            import torch
            import transformers  # noqa: F401
        except ModuleNotFoundError as exc:
            raise BackendError(
                f"models.{self.name}: the transformers backend needs {exc.name!r}; pip install -e '.[local]'"
            ) from exc
        resolve_device(self.cfg.device, torch.cuda.is_available())
        check_model_files(self.name, self.source)
        if self._processor is None:
            self._processor = preflight_processor(self.name, self.source, self.cfg)

    def _load(self) -> None:
        if self._model is not None:
            return
        import torch
        from transformers import AutoConfig, AutoModelForImageTextToText

        cfg, src = self.cfg, self.source
        device = resolve_device(cfg.device, torch.cuda.is_available())
        bf16 = device != "cpu" and torch.cuda.is_bf16_supported()
        dtype_name = resolve_dtype(cfg.dtype, device, bf16)
        common: dict[str, Any] = {
            "revision": src.revision,
            "local_files_only": src.local_files_only,
            "trust_remote_code": cfg.trust_remote_code,
        }
        processor = self._processor or preflight_processor(self.name, src, cfg)
        try:
            model_kwargs: dict[str, Any] = {"dtype": getattr(torch, dtype_name), **cfg.model_kwargs}
            if cfg.load_format == "dummy":
                config = AutoConfig.from_pretrained(src.path_or_id, **common)
                torch.manual_seed(cfg.seed)
                model = AutoModelForImageTextToText.from_config(
                    config, dtype=model_kwargs.pop("dtype"), trust_remote_code=cfg.trust_remote_code
                )
            else:
                if device != "cpu" and cfg.gpus > 1:
                    model_kwargs.setdefault("device_map", "auto")
                model = AutoModelForImageTextToText.from_pretrained(src.path_or_id, **common, **model_kwargs)
        except OSError as exc:
            raise BackendError(missing_model_message(self.name, src, exc)) from exc
        except ValueError as exc:
            raise BackendError(
                f"models.{self.name}: {src.path_or_id} cannot be loaded as an image-text-to-text model "
                f"({str(exc).splitlines()[0]})"
            ) from exc
        if getattr(model, "hf_device_map", None) is None:
            model = model.to(device)
        model.eval()
        tokenizer = getattr(processor, "tokenizer", None)
        if tokenizer is None:
            raise BackendError(f"models.{self.name}: the processor of {src.path_or_id} has no tokenizer")
        tokenizer.padding_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self._stop_ids = frozenset(_stop_token_ids(model, tokenizer, src))
        self._model, self._processor, self._device = model, processor, device
        log.info("%s: loaded %s on %s (%s)", self.name, src.path_or_id, device, dtype_name)

    # -- generation -----------------------------------------------------------------
    def order_key(self, query: Query) -> tuple[int, int]:
        """What a batch should share to pad little: the image's pixels (read from its header, not
        decoded), then the prompt's length (the engine orders questions by it)."""
        from PIL import Image

        try:
            with Image.open(io.BytesIO(query.image)) as img:
                pixels = img.size[0] * img.size[1]
        except Exception:  # noqa: BLE001 - an undecodable image fails later, with its own message
            pixels = 0
        return pixels, len(query.text)

    def _encode(self, queries: Sequence[Query]) -> Any:
        """The processor's batch for ``queries`` (left-padded), timing the image decode and the processor."""
        t0 = time.perf_counter()
        images = [decode_image(q.image, q.id) for q in queries]
        t1 = time.perf_counter()
        conversations = [hf_chat_messages(q, image, self.cfg.system_prompt) for q, image in zip(queries, images)]
        kwargs: dict[str, Any] = {
            "add_generation_prompt": True,
            "tokenize": True,
            "return_dict": True,
            "return_tensors": "pt",
        }
        if "processor_kwargs" in inspect.signature(self._processor.apply_chat_template).parameters:
            kwargs["processor_kwargs"] = {"padding": True}
        else:  # transformers 4.x
            kwargs["padding"] = True
        encoded = self._processor.apply_chat_template(conversations, **kwargs)
        self.stats["image_decode_s"] += t1 - t0
        self.stats["processor_s"] += time.perf_counter() - t1
        return encoded

    def _submit(self, queries: Sequence[Query]) -> "Future[Any]":
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{self.name}-prefetch")
        return self._pool.submit(self._encode, list(queries))

    def prefetch(self, queries: Sequence[Query]) -> None:
        """Start encoding the batch the engine sends next, while the GPU answers the current one."""
        if not self.prefetch_enabled or not queries or self._processor is None:
            return
        ids = tuple(q.id for q in queries)
        if ids not in self._prefetched:
            while len(self._prefetched) >= 2:  # a batch named but never sent (a retry, an abort)
                self._prefetched.pop(next(iter(self._prefetched))).cancel()
            self._prefetched[ids] = self._submit(queries)

    def _encoded(self, queries: Sequence[Query], ahead: "Future[Any] | None") -> Any:
        found = self._prefetched.pop(tuple(q.id for q in queries), None)
        ahead = ahead or found
        if ahead is None:
            return self._encode(queries)
        t0 = time.perf_counter()
        encoded = ahead.result()
        self.stats["encode_wait_s"] += time.perf_counter() - t0
        return encoded

    def complete_batch(self, queries: Sequence[Query]) -> list[Completion]:
        self._load()
        self._choose_image_processor(queries)
        chunks = list(batched(queries, self.cfg.batch_size))
        out: list[Completion] = []
        ahead: Future[Any] | None = None
        for i, chunk in enumerate(chunks):
            encoded = self._encoded(chunk, ahead)
            ahead = self._submit(chunks[i + 1]) if self.prefetch_enabled and i + 1 < len(chunks) else None
            out.extend(self._generate(chunk, encoded))
        return out

    def _choose_image_processor(self, queries: Sequence[Query]) -> None:
        """Once: the fast image processor, where the checkpoint has one and it gives the same pixel
        values as the slow one on (up to four of) these questions' images."""
        if self.image_processor_check is not None or not queries:
            return
        slow = getattr(self._processor, "image_processor", None)
        check: dict[str, Any] = {"used": type(slow).__name__}
        self.image_processor_check = check
        if slow is None or not self.fast_processor:
            return
        from transformers import AutoImageProcessor

        src = self.source
        try:
            fast = AutoImageProcessor.from_pretrained(
                src.path_or_id, revision=src.revision, local_files_only=src.local_files_only,
                trust_remote_code=self.cfg.trust_remote_code, use_fast=True, **self.cfg.processor_kwargs,
            )  # fmt: skip
        except Exception as exc:  # noqa: BLE001 - no fast processor: the slow one stays
            check["fast"] = f"unavailable ({type(exc).__name__})"
            return
        if type(fast) is type(slow):  # the fast one is in use already (or the checkpoint has none)
            check["fast"] = "the processor in use"
            return
        images = [decode_image(q.image, q.id) for q in queries[:4]]
        a, b = slow(images=images, return_tensors="pt"), fast(images=images, return_tensors="pt")
        same, diff = set(a.keys()) == set(b.keys()), 0.0
        for key in a.keys() if same else ():
            x, y = a[key], b[key]
            if getattr(x, "shape", None) != getattr(y, "shape", None):
                same = False
                break
            diff = max(diff, float((x.double() - y.double()).abs().max()) if x.numel() else 0.0)
        check.update(fast=type(fast).__name__, max_abs_diff=diff if same else None, same=same and diff <= FAST_PROCESSOR_TOLERANCE)
        if check["same"]:
            self._processor.image_processor = fast
            check["used"] = type(fast).__name__
        log.info("%s: image processor %s (fast %s: %s)", self.name, check["used"], check["fast"],
                 "same pixel values" if check["same"] else f"differs, max |diff| {check['max_abs_diff']}")  # fmt: skip

    def _generate(self, queries: Sequence[Query], encoded: Any = None) -> list[Completion]:
        import torch

        start = time.perf_counter()
        inputs = (encoded if encoded is not None else self._encode(queries)).to(self._model.device)
        floating = {k: v.to(self._model.dtype) for k, v in inputs.items() if torch.is_floating_point(v)}
        inputs.update(floating)
        prompt_len = int(inputs["input_ids"].shape[1])
        streamer = _FirstToken() if self.time_split else None
        with torch.inference_mode():
            decoding = self.cfg.decoding.transformers_kwargs(self._stop_ids, self._processor.tokenizer.pad_token_id)
            t_model = time.perf_counter()
            sequences = self._model.generate(**inputs, **decoding, **({"streamer": streamer} if streamer else {}))
        generated = sequences[:, prompt_len:].tolist()
        t_end = time.perf_counter()
        self.stats["model_s"] += t_end - t_model
        if streamer is not None and streamer.first is not None:
            self.stats["prefill_s"] += streamer.first - t_model
            self.stats["decode_s"] += t_end - streamer.first
        seconds = time.perf_counter() - start
        input_counts = inputs["attention_mask"].sum(dim=1).tolist()
        completions: list[Completion] = []
        for ids, n_in in zip(generated, input_counts):
            n_out, finish = generated_length(ids, self._stop_ids)
            text = self._processor.tokenizer.decode(ids[:n_out], skip_special_tokens=True).strip()
            completions.append(
                Completion(
                    text=text,
                    input_tokens=int(n_in),
                    output_tokens=n_out,
                    finish_reason=finish,
                )
            )
        self._account(completions, seconds)
        return completions

    def run_info(self) -> dict[str, Any]:
        info = super().run_info()
        if info and self.image_processor_check is not None:
            info["image_processor"] = dict(self.image_processor_check)
        return info

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._prefetched = {}
        if self._model is None:
            return
        self._model = None
        self._free_accelerator_memory()


class _FirstToken:
    """A ``generate`` streamer (transformers' ``BaseStreamer`` interface: ``put`` then ``end``) that
    notes when the first new token arrives: ``put`` is called with the prompt, then with each new
    token as a CPU tensor (a synchronisation), so the time up to the second call is vision tower +
    prefill (https://huggingface.co/docs/transformers/internal/generation_utils#streamers)."""

    def __init__(self) -> None:
        self.calls = 0
        self.first: float | None = None

    def put(self, value: Any) -> None:
        self.calls += 1
        if self.calls == 2:
            self.first = time.perf_counter()

    def end(self) -> None:
        pass


def _stop_token_ids(model: Any, tokenizer: Any, source: Any = None) -> set[int]:
    """Token ids that end an answer: the checkpoint's generation config eos ids (as the
    vLLM backend reads them) and the tokenizer's."""
    ids: set[int] = checkpoint_stop_ids(source) if source is not None else set()
    for value in (getattr(model.generation_config, "eos_token_id", None), tokenizer.eos_token_id):
        if value is None:
            continue
        ids.update(int(v) for v in (value if isinstance(value, (list, tuple)) else [value]))
    return ids
