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
"""

from __future__ import annotations

import inspect
import logging
import time
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


class TransformersBackend(LocalBackend):
    def __init__(self, name: str, settings: Mapping[str, Any]) -> None:
        super().__init__(name, settings)
        self._model: Any = None
        self._processor: Any = None
        self._device: str | None = None
        self._stop_ids: frozenset[int] = frozenset()

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
    def _encode(self, queries: Sequence[Query]) -> Any:
        conversations = [hf_chat_messages(q, decode_image(q.image, q.id), self.cfg.system_prompt) for q in queries]
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
        return self._processor.apply_chat_template(conversations, **kwargs)

    def complete_batch(self, queries: Sequence[Query]) -> list[Completion]:
        self._load()
        out: list[Completion] = []
        for chunk in batched(queries, self.cfg.batch_size):
            out.extend(self._generate(chunk))
        return out

    def _generate(self, queries: Sequence[Query]) -> list[Completion]:
        import torch

        start = time.perf_counter()
        inputs = self._encode(queries).to(self._model.device)
        floating = {k: v.to(self._model.dtype) for k, v in inputs.items() if torch.is_floating_point(v)}
        inputs.update(floating)
        prompt_len = int(inputs["input_ids"].shape[1])
        with torch.inference_mode():
            decoding = self.cfg.decoding.transformers_kwargs(self._stop_ids, self._processor.tokenizer.pad_token_id)
            sequences = self._model.generate(**inputs, **decoding)
        generated = sequences[:, prompt_len:].tolist()
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

    def close(self) -> None:
        if self._model is None:
            return
        self._model = None
        self._free_accelerator_memory()


def _stop_token_ids(model: Any, tokenizer: Any, source: Any = None) -> set[int]:
    """Token ids that end an answer: the checkpoint's generation config eos ids (as the
    vLLM backend reads them) and the tokenizer's."""
    ids: set[int] = checkpoint_stop_ids(source) if source is not None else set()
    for value in (getattr(model.generation_config, "eos_token_id", None), tokenizer.eos_token_id):
        if value is None:
            continue
        ids.update(int(v) for v in (value if isinstance(value, (list, tuple)) else [value]))
    return ids
