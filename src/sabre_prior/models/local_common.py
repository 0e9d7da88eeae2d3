"""What the local backends (``transformers``, ``vllm``) share: settings, model
location, chat messages with the image, and output bookkeeping.

Everything here is pure Python (no torch, no vLLM import at module level) so it
is unit-tested on any machine.
"""

from __future__ import annotations

import base64
import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence, TypeVar

from ..errors import BackendError, ConfigError
from .base import OPERATIONAL_KEYS, Backend, Completion, Query

T = TypeVar("T")

DEFAULT_MAX_NEW_TOKENS = 64  # the authors' screening client: at most 64 output tokens
DEFAULT_BATCH_SIZE = 16  # as the engine's default chunk for batch backends
DTYPES = ("auto", "bfloat16", "float16", "float32")

#: Settings that decide where and how fast a model runs, never what it answers;
#: they are left out of the journal's cache identity.
HARDWARE_KEYS = frozenset(
    {
        "display_name",
        "paper_name",
        "concurrency",
        "batch_size",
        "device",
        "gpus",
        "gpu_model",
        "threads",
        "mem_mb",
        "runtime",
        "tensor_parallel_size",
        "gpu_memory_utilization",
        "max_num_seqs",
        "enforce_eager",
        "allow_download",
        "cuda_visible_devices",
    }
)

#: Every setting a local backend understands (others are configuration errors).
KNOWN_KEYS = HARDWARE_KEYS | OPERATIONAL_KEYS | frozenset(
    {
        "backend",
        "provider",
        "model_id",
        "revision",
        "dtype",
        "max_new_tokens",
        "max_model_len",
        "trust_remote_code",
        "load_format",
        "seed",
        "system_prompt",
        "processor_kwargs",
        "model_kwargs",
        "prompt_template",
    }
)

_TRUTHY = {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class LocalSettings:
    """A local model's settings from ``params.yaml`` (``models.<name>``), validated."""

    name: str
    model_id: str
    revision: str | None = None
    dtype: str = "auto"
    device: str = "auto"
    batch_size: int = DEFAULT_BATCH_SIZE
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    gpus: int = 1
    tensor_parallel_size: int | None = None
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    max_num_seqs: int | None = None
    enforce_eager: bool = False
    trust_remote_code: bool = False
    allow_download: bool = False
    load_format: str | None = None  # vLLM: "dummy" = random weights; transformers: "dummy" too
    seed: int = 0
    system_prompt: str | None = None
    processor_kwargs: dict[str, Any] = field(default_factory=dict)
    model_kwargs: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, name: str, settings: Mapping[str, Any]) -> "LocalSettings":
        where = f"models.{name}"
        unknown = sorted(set(settings) - KNOWN_KEYS)
        if unknown:
            raise ConfigError(
                f"{where}: settings {', '.join(unknown)} are not understood by backend "
                f"{settings.get('backend')!r} (known: {', '.join(sorted(KNOWN_KEYS))})"
            )
        model_id = settings.get("model_id")
        if not isinstance(model_id, str) or not model_id.strip():
            raise ConfigError(f"{where}.model_id is missing (a Hugging Face model id or a local directory)")
        dtype = str(settings.get("dtype", "auto"))
        if dtype not in DTYPES:
            raise ConfigError(f"{where}.dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        device = str(settings.get("device", "auto"))
        if not (device in ("auto", "cpu", "cuda") or device.startswith("cuda:")):
            raise ConfigError(f"{where}.device must be auto, cpu, cuda or cuda:N, got {device!r}")

        def pos_int(key: str, default: int | None) -> int | None:
            value = settings.get(key, default)
            if value is None:
                return None
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{where}.{key} must be a positive integer, got {value!r}")
            return value

        def mapping(key: str) -> dict[str, Any]:
            value = settings.get(key) or {}
            if not isinstance(value, Mapping):
                raise ConfigError(f"{where}.{key} must be a mapping, got {type(value).__name__}")
            return dict(value)

        gpus = settings.get("gpus", 1)
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0:
            raise ConfigError(f"{where}.gpus must be an integer >= 0, got {gpus!r}")
        util = settings.get("gpu_memory_utilization")
        if util is not None and not (isinstance(util, (int, float)) and 0 < float(util) <= 1):
            raise ConfigError(f"{where}.gpu_memory_utilization must be in (0, 1], got {util!r}")
        return cls(
            name=name,
            model_id=model_id.strip(),
            revision=settings.get("revision") or None,
            dtype=dtype,
            device=device,
            batch_size=pos_int("batch_size", DEFAULT_BATCH_SIZE) or DEFAULT_BATCH_SIZE,
            max_new_tokens=pos_int("max_new_tokens", DEFAULT_MAX_NEW_TOKENS) or DEFAULT_MAX_NEW_TOKENS,
            gpus=gpus,
            tensor_parallel_size=pos_int("tensor_parallel_size", None),
            max_model_len=pos_int("max_model_len", None),
            gpu_memory_utilization=None if util is None else float(util),
            max_num_seqs=pos_int("max_num_seqs", None),
            enforce_eager=bool(settings.get("enforce_eager", False)),
            trust_remote_code=bool(settings.get("trust_remote_code", False)),
            allow_download=bool(settings.get("allow_download", False)),
            load_format=settings.get("load_format") or None,
            seed=int(settings.get("seed", 0)),
            system_prompt=settings.get("system_prompt") or None,
            processor_kwargs=mapping("processor_kwargs"),
            model_kwargs=mapping("model_kwargs"),
        )


def local_cache_identity(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Settings that change a local model's answers (for the response journal):
    ``settings`` less the hardware and scheduling keys, with the defaults filled in."""
    identity = {k: v for k, v in sorted(settings.items()) if k not in HARDWARE_KEYS}
    identity.setdefault("max_new_tokens", DEFAULT_MAX_NEW_TOKENS)
    identity.setdefault("dtype", "auto")
    return identity


# ---------------------------------------------------------------------------
# Where the model comes from
# ---------------------------------------------------------------------------
def hub_offline(environ: Mapping[str, str] | None = None) -> bool:
    """True when ``HF_HUB_OFFLINE`` (or the older ``TRANSFORMERS_OFFLINE``) is set."""
    env = os.environ if environ is None else environ
    return any(env.get(k, "").strip().lower() in _TRUTHY for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


@dataclass(frozen=True)
class ModelSource:
    """Where ``from_pretrained`` / vLLM reads the model: a local directory or a hub id."""

    path_or_id: str
    is_local_dir: bool
    local_files_only: bool
    revision: str | None


def resolve_model_source(
    model_id: str,
    revision: str | None = None,
    *,
    allow_download: bool = False,
    environ: Mapping[str, str] | None = None,
) -> ModelSource:
    """A local directory is used as is; a hub id is read from the local cache only,
    unless ``allow_download`` is set and the hub is not switched off (``HF_HUB_OFFLINE``)."""
    path = Path(model_id).expanduser()
    if path.is_dir():
        return ModelSource(str(path), True, True, None)
    if model_id.startswith(("/", "./", "../", "~")):
        raise BackendError(f"model directory {model_id} does not exist")
    local_only = hub_offline(environ) or not allow_download
    return ModelSource(model_id, False, local_only, revision)


def missing_model_message(name: str, source: ModelSource, exc: BaseException) -> str:
    """A user-facing message for a model that is not in the local cache."""
    how = (
        f"download it first (e.g. `hf download {source.path_or_id}`"
        + (f" --revision {source.revision}" if source.revision else "")
        + f") or set models.{name}.allow_download: true"
    )
    if hub_offline():
        how = f"HF_HUB_OFFLINE is set; put {source.path_or_id} in the local cache (HF_HOME) first"
    reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return f"models.{name}: cannot load {source.path_or_id!r} from the local cache ({reason}); {how}"


def check_model_files(name: str, source: ModelSource) -> None:
    """Fail fast, without loading anything, when the model's files are not there."""
    if source.is_local_dir:
        if not (Path(source.path_or_id) / "config.json").is_file():
            raise BackendError(f"models.{name}: {source.path_or_id} holds no config.json (not a model directory)")
        return
    if not source.local_files_only:
        return  # from_pretrained may download it
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(source.path_or_id, "config.json", revision=source.revision)
    if not isinstance(found, str):
        raise BackendError(missing_model_message(name, source, FileNotFoundError("config.json not in the cache")))


# ---------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------
def decode_image(data: bytes, query_id: str = "?") -> Any:
    """The query's image as an RGB ``PIL.Image`` (fully loaded)."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as img:
            return ImageOps.exif_transpose(img).convert("RGB")  # upright, as a viewer shows it
    except (UnidentifiedImageError, OSError) as exc:
        raise BackendError(f"question {query_id}: the image cannot be decoded ({exc})") from exc


def image_data_url(query: Query) -> str:
    """The original image bytes as a ``data:`` URL (no re-encoding)."""
    return f"data:{query.image_mime};base64,{base64.b64encode(query.image).decode('ascii')}"


def hf_chat_messages(query: Query, image: Any, system_prompt: str | None = None) -> list[dict[str, Any]]:
    """One conversation for a processor's chat template: the image, then the prompt text
    (the order of the authors' screening client)."""
    messages: list[dict[str, Any]] = []
    if system_prompt:
        messages.append({"role": "system", "content": [{"type": "text", "text": system_prompt}]})
    messages.append(
        {
            "role": "user",
            "content": [{"type": "image", "image": image}, {"type": "text", "text": query.text}],
        }
    )
    return messages


def openai_chat_messages(query: Query, system_prompt: str | None = None) -> list[dict[str, Any]]:
    """One conversation in the OpenAI format that vLLM's ``LLM.chat`` takes."""
    messages: list[dict[str, Any]] = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    messages.append(
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": image_data_url(query)}},
                {"type": "text", "text": query.text},
            ],
        }
    )
    return messages


def batched(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """Consecutive slices of at most ``size`` items."""
    if size < 1:
        raise ValueError("batch size must be >= 1")
    for start in range(0, len(items), size):
        yield items[start : start + size]


# ---------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------
def generated_length(token_ids: Sequence[int], stop_ids: set[int] | frozenset[int]) -> tuple[int, str]:
    """Number of generated tokens up to and including the first stop token, and the
    finish reason ("stop" when a stop token ended the answer, else "length")."""
    for i, tok in enumerate(token_ids):
        if int(tok) in stop_ids:
            return i + 1, "stop"
    return len(token_ids), "length"


def resolve_device(device: str, cuda_available: bool) -> str:
    """``auto`` -> ``cuda`` when a GPU is visible, else ``cpu``; asking for CUDA without one fails."""
    if device == "auto":
        return "cuda" if cuda_available else "cpu"
    if device.startswith("cuda") and not cuda_available:
        raise BackendError(
            f"device {device!r} requested but no CUDA GPU is visible (CUDA_VISIBLE_DEVICES="
            f"{os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')}); set device: cpu or run on a GPU node"
        )
    return device


def resolve_dtype(dtype: str, device: str, bf16_supported: bool) -> str:
    """``auto`` -> bfloat16 on GPUs that support it, float16 on older GPUs, float32 on CPU."""
    if dtype != "auto":
        return dtype
    if device == "cpu":
        return "float32"
    return "bfloat16" if bf16_supported else "float16"


# ---------------------------------------------------------------------------
# Scheduling (Snakemake resources of the predict rule)
# ---------------------------------------------------------------------------
LOCAL_BACKENDS = frozenset({"transformers", "vllm"})
_DEFAULTS_LOCAL = {"threads": 4, "mem_mb": 32000, "runtime": 240}
_DEFAULTS_OTHER = {"threads": 1, "mem_mb": 2000, "runtime": 120}


def job_resources(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Resources of one predict job for a model's settings.

    Local models ask for ``gpus`` GPUs (default 1; 0 runs on CPU) and, when set,
    a ``gpu_model``; API and offline models ask for none.  ``threads``,
    ``mem_mb`` and ``runtime`` (minutes) can be set per model.
    """
    local = settings.get("backend") in LOCAL_BACKENDS
    defaults = _DEFAULTS_LOCAL if local else _DEFAULTS_OTHER
    gpus = int(settings.get("gpus", 1)) if local else 0
    if local and settings.get("device") == "cpu":
        gpus = 0
    gpu_model = str(settings.get("gpu_model") or "") if gpus > 0 else ""
    return {
        "gpu": gpus,
        "gpu_model": gpu_model,
        "threads": int(settings.get("threads", defaults["threads"])),
        "mem_mb": int(settings.get("mem_mb", defaults["mem_mb"])),
        "runtime": int(settings.get("runtime", defaults["runtime"])),
        "cuda_visible_devices": str(settings.get("cuda_visible_devices") or "") if gpus > 0 else "",
    }


class LocalBackend(Backend):
    """Base of the local backends: settings, model location, throughput bookkeeping."""

    kind = "local"

    def __init__(self, name: str, settings: Mapping[str, Any]) -> None:
        super().__init__(name, settings)
        self.cfg = LocalSettings.from_settings(name, settings)
        self.source: ModelSource = resolve_model_source(
            self.cfg.model_id, self.cfg.revision, allow_download=self.cfg.allow_download
        )
        self.stats: dict[str, float] = {"questions": 0, "input_tokens": 0, "output_tokens": 0, "seconds": 0.0}

    def cache_identity(self) -> dict[str, Any]:
        return local_cache_identity(super().cache_identity())

    def _account(self, completions: Sequence[Completion], seconds: float) -> None:
        for c in completions:
            c.extra.update({"batch_size": len(completions), "batch_seconds": round(seconds, 4)})
        self.stats["questions"] += len(completions)
        self.stats["input_tokens"] += sum(c.input_tokens or 0 for c in completions)
        self.stats["output_tokens"] += sum(c.output_tokens or 0 for c in completions)
        self.stats["seconds"] += seconds

    def throughput(self) -> dict[str, float]:
        """Questions and generated tokens per second of generation so far."""
        secs = self.stats["seconds"] or float("nan")
        return {
            "questions_per_s": self.stats["questions"] / secs,
            "output_tokens_per_s": self.stats["output_tokens"] / secs,
        }

    def run_info(self) -> dict[str, Any]:
        if not self.stats["questions"]:
            return {}  # everything came from the journal: nothing was generated
        return {"generation": dict(self.stats), "throughput": self.throughput()}

    @staticmethod
    def _free_accelerator_memory() -> None:
        try:
            import gc

            import torch

            gc.collect()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except ModuleNotFoundError:  # pragma: no cover
            pass
