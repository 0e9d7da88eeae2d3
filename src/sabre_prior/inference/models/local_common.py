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

from ...errors import BackendError, ConfigError
from ... import registry
from .base import OPERATIONAL_KEYS, Backend, Completion, Query

T = TypeVar("T")

DEFAULT_MAX_NEW_TOKENS = registry.DEFAULT_MAX_OUTPUT_TOKENS  # ``max_output_tokens``, the one name for API and local models
DEFAULT_BATCH_SIZE = 16  # as the engine's default chunk for batch backends
DTYPES = ("auto", "bfloat16", "float16", "float32")
#: Version of the decoding protocol (:class:`Decoding`); part of every local model's cache identity.
DECODING_PROTOCOL = "greedy-explicit-1"

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

#: Every setting a local backend understands (others are configuration errors): the keys its
#: registry entry lists (what the params schema accepts) and the operational ones.
KNOWN_KEYS = HARDWARE_KEYS | OPERATIONAL_KEYS | frozenset(k for n in registry.names("local") for k in registry.SPECS[n].settings)

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
    repetition_penalty: float = 1.0
    chat_template: str | None = None  # a Jinja template, or a path to a .jinja/.json file holding one

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
        penalty = settings.get("repetition_penalty", 1.0)
        if isinstance(penalty, bool) or not isinstance(penalty, (int, float)) or float(penalty) <= 0:
            raise ConfigError(f"{where}.repetition_penalty must be a number > 0, got {penalty!r}")
        template = settings.get("chat_template")
        if template is not None and (not isinstance(template, str) or not template.strip()):
            raise ConfigError(f"{where}.chat_template must be a Jinja template or the path of a file holding one")
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
            max_new_tokens=pos_int("max_output_tokens", DEFAULT_MAX_NEW_TOKENS) or DEFAULT_MAX_NEW_TOKENS,
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
            repetition_penalty=float(penalty),
            chat_template=template,
        )

    @property
    def decoding(self) -> "Decoding":
        return Decoding(max_new_tokens=self.max_new_tokens, repetition_penalty=self.repetition_penalty, seed=self.seed)


# ---------------------------------------------------------------------------
# The decoding protocol (one for both local backends)
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Decoding:
    """How every local model decodes: greedy (temperature 0, no top-p/top-k/min-p
    filtering, no presence/frequency penalty, one candidate), at most
    ``max_new_tokens`` new tokens, ``repetition_penalty`` 1.0 unless the model's
    settings say otherwise, stopping at the checkpoint's end-of-turn tokens.

    It is passed explicitly to both backends, so a checkpoint's
    ``generation_config.json`` defaults (e.g. Qwen's ``repetition_penalty: 1.05``,
    ``do_sample: true`` with a temperature) never change an answer: transformers
    applies ``generate()`` keyword arguments over the model's generation config,
    and vLLM applies an explicit ``SamplingParams`` as given.
    """

    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    repetition_penalty: float = 1.0
    seed: int = 0

    def describe(self) -> dict[str, Any]:
        """The protocol as written to the run manifest and the run log."""
        return {
            "strategy": "greedy",
            "temperature": 0.0,
            "top_p": 1.0,
            "top_k": None,
            "max_new_tokens": self.max_new_tokens,
            "repetition_penalty": self.repetition_penalty,
            "checkpoint_generation_config": "overridden (only its end-of-turn token ids are used)",
        }

    def transformers_kwargs(self, stop_ids: Sequence[int], pad_id: int | None) -> dict[str, Any]:
        """Keyword arguments of ``model.generate`` (they override the checkpoint's generation config)."""
        return {
            "do_sample": False,
            "num_beams": 1,
            "max_new_tokens": self.max_new_tokens,
            "min_new_tokens": None,
            "repetition_penalty": self.repetition_penalty,
            "no_repeat_ngram_size": 0,
            "temperature": None,
            "top_p": None,
            "top_k": None,
            "min_p": None,
            "eos_token_id": sorted(stop_ids) or None,
            "pad_token_id": pad_id,
        }

    def vllm_kwargs(self, stop_ids: Sequence[int]) -> dict[str, Any]:
        """Keyword arguments of ``vllm.SamplingParams`` (every sampling field set)."""
        return {
            "n": 1,
            "temperature": 0.0,
            "top_p": 1.0,
            "top_k": 0,  # vLLM: 0 (or -1 in older releases) switches top-k off; greedy ignores it anyway
            "min_p": 0.0,
            "presence_penalty": 0.0,
            "frequency_penalty": 0.0,
            "repetition_penalty": self.repetition_penalty,
            "max_tokens": self.max_new_tokens,
            "stop_token_ids": sorted(stop_ids),
            "seed": self.seed,
        }


def decoding_for(name: str, settings: Mapping[str, Any]) -> dict[str, Any] | None:
    """The decoding protocol of a configured model (None for API and offline models)."""
    if settings.get("backend") not in LOCAL_BACKENDS:
        return None
    described = LocalSettings.from_settings(name, settings).decoding.describe()
    if settings.get("batch_invariant"):  # vLLM's batch-invariant mode (the run manifest records it here)
        described["batch_invariant"] = "VLLM_BATCH_INVARIANT=1"
    return described


def _checkpoint_file(source: "str | Path | ModelSource", name: str) -> Path | None:
    """A file of a checkpoint directory, or of a hub model in the local cache."""
    if isinstance(source, ModelSource) and not source.is_local_dir:
        try:
            from huggingface_hub import try_to_load_from_cache
        except ModuleNotFoundError:
            return None
        found = try_to_load_from_cache(source.path_or_id, name, revision=source.revision)
        return Path(found) if isinstance(found, str) else None
    path = Path(source.path_or_id if isinstance(source, ModelSource) else source) / name
    return path if path.is_file() else None


def checkpoint_stop_ids(source: "str | Path | ModelSource") -> set[int]:
    """End-of-turn token ids of a checkpoint (a directory, or a hub model in the local
    cache): ``eos_token_id`` of its ``generation_config.json`` (else of ``config.json`` /
    its ``text_config``). Both local backends stop at these."""
    import json

    ids: set[int] = set()
    for name in ("generation_config.json", "config.json"):
        file = _checkpoint_file(source, name)
        if file is None:
            continue
        data = json.loads(file.read_text())
        for value in (data.get("eos_token_id"), (data.get("text_config") or {}).get("eos_token_id")):
            if value is not None:
                ids.update(int(v) for v in (value if isinstance(value, list) else [value]))
        if ids:
            break
    return ids


def local_cache_identity(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Settings that change a local model's answers (for the response journal):
    ``settings`` less the hardware and scheduling keys, with the defaults filled in."""
    identity = {k: v for k, v in sorted(settings.items()) if k not in HARDWARE_KEYS}
    # the limit enters the key under the name local models gave it before ``max_output_tokens``
    # became the one name: the journal keeps the answers given before the rename
    if "max_output_tokens" in identity:
        identity["max_new_tokens"] = identity.pop("max_output_tokens")
    identity = dict(sorted(identity.items()))
    identity.setdefault("max_new_tokens", DEFAULT_MAX_NEW_TOKENS)
    identity.setdefault("dtype", "auto")
    # answers made before the shared protocol (checkpoint generation defaults applied) are not reused
    identity.setdefault("decoding", DECODING_PROTOCOL)
    return identity


# ---------------------------------------------------------------------------
# Where the model comes from
# ---------------------------------------------------------------------------
def enforce_offline() -> None:
    """Switch the Hugging Face hub off for this process and its children (vLLM's
    workers): ``HF_HUB_OFFLINE=1`` is read by ``huggingface_hub`` when it is first
    imported, so it is set here before vLLM or the hub library is imported; where the
    hub library was imported already (by ``datasets``), its constant is switched too."""
    import sys

    os.environ["HF_HUB_OFFLINE"] = "1"
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:
        constants.HF_HUB_OFFLINE = True


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
# Pre-flight: the processor, its chat template and image token (no weights)
# ---------------------------------------------------------------------------
#: Packages the image/video processors of the shipped families import, and how to get them.
_PROCESSOR_PACKAGES = ("torchvision", "num2words", "av", "decord", "timm", "einops", "sentencepiece", "tiktoken", "cv2")
_INSTALL_HINT = "pip install -e '.[local]' (or bash scripts/install.sh --test / --gpu, which install the pinned set)"


def processor_import_message(name: str, model: str, exc: BaseException) -> str | None:
    """One actionable line for a processor that cannot be built for a missing or broken
    package, or None when ``exc`` is something else."""
    text = str(exc)
    if "torchvision::nms does not exist" in text or "torchvision" in text and "operator" in text:
        return (
            f"models.{name}: torchvision cannot be loaded next to this torch build (a torchvision wheel built for "
            f"another torch, e.g. a CUDA torchvision with a CPU-only torch); install the matching pair: {_INSTALL_HINT}"
        )
    missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    lowered = text.lower()
    if missing is None:
        missing = next((p for p in _PROCESSOR_PACKAGES if p in lowered), None)
    if missing is None or not isinstance(exc, (ImportError, ModuleNotFoundError, RuntimeError, ValueError)):
        return None
    package = {"cv2": "opencv-python-headless", "PIL": "pillow"}.get(missing, missing)
    return f"models.{name}: the processor of {model} needs the Python package {package!r}, which is not installed; {_INSTALL_HINT}"


def read_chat_template(value: str) -> str:
    """A ``chat_template`` setting: a Jinja template itself, or a path to a ``.jinja``
    file or a ``chat_template.json`` / ``tokenizer_config.json`` holding one."""
    import json

    path = Path(value).expanduser()
    if "{%" in value or "{{" in value or not path.suffix:
        return value
    if not path.is_file():
        raise ConfigError(f"chat_template file {value} does not exist")
    if path.suffix == ".json":
        template = json.loads(path.read_text()).get("chat_template")
        if not isinstance(template, str):
            raise ConfigError(f"{value} holds no chat_template string")
        return template
    return path.read_text()


def image_tokens_of(processor: Any) -> list[str]:
    """The placeholders the processor expands into image features (e.g. ``<image>``,
    ``<|image_pad|>``, ``[IMG]``, ``<IMG_CONTEXT>``; Gemma 3's template writes its
    begin-of-image token ``<start_of_image>``)."""
    tokenizer = getattr(processor, "tokenizer", None)
    found: list[str] = []
    for owner in (processor, tokenizer):
        for attr in ("image_token", "boi_token"):
            value = getattr(owner, attr, None) if owner is not None else None
            if isinstance(value, str) and value and value not in found:
                found.append(value)
    return found


def preflight_processor(name: str, source: "ModelSource", cfg: "LocalSettings", *, engine_places_images: bool = False) -> Any:
    """Load the model's processor (tokenizer and image processor; no weights, seconds) and
    check that it can serve an image question: a chat template (the checkpoint's or the
    ``chat_template`` setting) that places the processor's image token. Every failure is
    one :class:`BackendError` line naming the missing package or setting."""
    try:
        from transformers import AutoProcessor
    except ModuleNotFoundError as exc:
        raise BackendError(f"models.{name}: the local backends need {exc.name!r}; {_INSTALL_HINT}") from exc
    common = {"revision": source.revision, "local_files_only": source.local_files_only, "trust_remote_code": cfg.trust_remote_code}
    try:
        processor = AutoProcessor.from_pretrained(source.path_or_id, **common, **cfg.processor_kwargs)
    except OSError as exc:
        raise BackendError(missing_model_message(name, source, exc)) from exc
    except Exception as exc:  # noqa: BLE001 - every other failure is reported in one line
        message = processor_import_message(name, source.path_or_id, exc)
        if message is None:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            message = f"models.{name}: the processor of {source.path_or_id} cannot be loaded ({type(exc).__name__}: {first})"
        raise BackendError(message) from exc
    tokenizer = getattr(processor, "tokenizer", None)
    if tokenizer is None and engine_places_images and hasattr(processor, "apply_chat_template"):
        # a tokenizer alone (e.g. InternVL's original repos with trust_remote_code): vLLM's own
        # multimodal processor inserts the image placeholders; a chat template is still needed
        if not (cfg.chat_template or getattr(processor, "chat_template", None)):
            raise BackendError(
                f"models.{name}: {source.path_or_id} ships no chat template; set models.{name}.chat_template "
                f"to a Jinja template (or a .jinja file)"
            )
        return processor
    if tokenizer is None:
        raise BackendError(f"models.{name}: {source.path_or_id} has no tokenizer (not a vision-language chat model)")
    if cfg.chat_template:
        processor.chat_template = read_chat_template(cfg.chat_template)
    template = getattr(processor, "chat_template", None) or getattr(tokenizer, "chat_template", None)
    if not template:
        raise BackendError(
            f"models.{name}: {source.path_or_id} ships no chat template (e.g. a PaliGemma-style pretrained "
            f"checkpoint); set models.{name}.chat_template to a Jinja template (or a .jinja file) that places "
            f"the image, or use an instruction-tuned checkpoint"
        )
    image_tokens = image_tokens_of(processor)
    if not image_tokens:
        raise BackendError(f"models.{name}: the processor of {source.path_or_id} defines no image token (not a vision-language processor)")
    probe = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "?"}]}]
    try:
        rendered = processor.apply_chat_template(probe, add_generation_prompt=True, tokenize=False)
    except Exception as exc:  # noqa: BLE001
        raise BackendError(f"models.{name}: the chat template of {source.path_or_id} fails on an image question ({exc})") from exc
    rendered = rendered[0] if isinstance(rendered, list) else rendered
    if not any(token in rendered for token in image_tokens):
        raise BackendError(
            f"models.{name}: the chat template of {source.path_or_id} does not place the image token "
            f"{' or '.join(map(repr, image_tokens))}; "
            f"set models.{name}.chat_template to the model's chat template"
        )
    return processor


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
LOCAL_BACKENDS = frozenset(registry.names("local"))  # from the backend registry
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
        return {"generation": dict(self.stats), "throughput": self.throughput(), "decoding": self.cfg.decoding.describe()}

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
