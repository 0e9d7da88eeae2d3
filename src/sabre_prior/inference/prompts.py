"""Versioned prompt templates.

``screening_v1`` reproduces the default prompt of the authors' open-source
screening client (docs/benchmark.md): the image, then ``Question: <question>``;
for multiple choice a blank line, ``Options:`` and one ``A. <text>`` line per
option; then a blank line and a type-specific instruction followed by
`` Do not explain.``.

Templates are versioned: ``TEMPLATE_VERSIONS`` gives each template a version
that enters the response journal's key, so editing a template's wording (and
bumping its version) never reuses answers given to the old text.  A model picks
its own template with ``prompt_template`` in its params entry.

Images are sent as their original bytes.  A model may set a size limit
(``image: {max_side: <px>, max_bytes: <bytes>, quality: <1-95>}``); an image
over the limit is then re-encoded deterministically (RGB, Lanczos resize to fit
``max_side``, baseline JPEG without metadata, quality lowered in fixed steps
until ``max_bytes`` is met).  :func:`prepare_image` reports how each image was
sent (format, pixel size, byte size, sha256).
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from typing import Any, Mapping

from ..errors import ConfigError
from ..options import options_mapping

DEFAULT_TEMPLATE = "screening_v1"

_INSTRUCTIONS_V1 = {
    "yes_no_exact": "Answer with only yes or no.",
    "count_exact": "Answer with only the count.",
    "choice_exact": "Answer with only the option letter.",
    "multiple_choice_exact": "Answer with only the option letter.",
}


def _screening_v1(row: Mapping[str, Any], eval_type: str) -> str:
    parts = [f"Question: {row['question']}"]
    lines = _options_lines(row)
    if lines:
        parts += ["", "Options:", *lines]
    instruction = _INSTRUCTIONS_V1.get(eval_type)
    parts.append("")
    parts.append(f"{instruction} Do not explain." if instruction else "Do not explain.")
    return "\n".join(parts)


def _options_lines(row: Mapping[str, Any]) -> list[str]:
    opts = options_mapping(row.get("options"))
    return [f"{k}. {v}" for k, v in opts.items()]


def _bare_v1(row: Mapping[str, Any], eval_type: str) -> str:
    """The question as the dataset words it (and a choice's options, one per line); no instruction."""
    return "\n".join([str(row["question"]), *_options_lines(row)])


#: The answer format, stated (format_v1).
_FORMATS_V1 = {
    "yes_no_exact": "Answer format: exactly one word, yes or no.",
    "count_exact": "Answer format: exactly one whole number written in digits (for example 3).",
    "choice_exact": "Answer format: exactly one capital letter, the letter of the correct option.",
    "multiple_choice_exact": "Answer format: exactly one capital letter, the letter of the correct option.",
}


def _format_v1(row: Mapping[str, Any], eval_type: str) -> str:
    """The screening layout with the answer format spelt out (what the scorer will read)."""
    parts = [f"Question: {row['question']}"]
    lines = _options_lines(row)
    if lines:
        parts += ["", "Options:", *lines]
    parts += ["", _FORMATS_V1.get(eval_type, "Answer format: a short phrase."), "Reply with the answer only."]
    return "\n".join(parts)


#: The templates (their texts: docs/prompts.md).  ``screening_v1`` is the paper's prompt.
TEMPLATES = {"screening_v1": _screening_v1, "bare_v1": _bare_v1, "format_v1": _format_v1}

#: Version of each template's wording; part of the response journal's key.
TEMPLATE_VERSIONS: dict[str, str] = {"screening_v1": "1", "bare_v1": "1", "format_v1": "1"}


def check_templates(names: Any, source: str = "params.yaml") -> list[str]:
    """``prompt.templates`` checked against the known templates (a ConfigError names the entry)."""
    out = []
    for i, name in enumerate(names):
        if name not in TEMPLATES:
            raise ConfigError(
                f"{source}: prompt.templates[{i}]: unknown prompt template {name!r}; known: {', '.join(sorted(TEMPLATES))}"
            )
        out.append(str(name))
    return out


def template_version(template: str) -> str:
    """The version string of ``template`` (raises ConfigError when unknown)."""
    if template not in TEMPLATES:
        raise ConfigError(f"unknown prompt template {template!r}; known: {', '.join(sorted(TEMPLATES))}")
    return TEMPLATE_VERSIONS.get(template, "1")


def render(row: Mapping[str, Any], eval_type: str, template: str = DEFAULT_TEMPLATE) -> str:
    """Render the prompt text for one dataset row."""
    try:
        fn = TEMPLATES[template]
    except KeyError:
        raise ConfigError(f"unknown prompt template {template!r}; known: {', '.join(sorted(TEMPLATES))}") from None
    return fn(row, eval_type)


# --------------------------------------------------------------------------
# Images: original bytes, or a deterministic re-encode under a size limit
# --------------------------------------------------------------------------

_QUALITY_STEPS = (95, 90, 85, 80, 75, 70, 60, 50, 40, 30)


@dataclass(frozen=True)
class ImagePolicy:
    """How a model wants its images: no limits means the original bytes."""

    max_side: int | None = None  # longest side in pixels
    max_bytes: int | None = None  # encoded size
    quality: int = 90  # JPEG quality of a re-encode (lowered for max_bytes)

    @property
    def limited(self) -> bool:
        return self.max_side is not None or self.max_bytes is not None

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], model: str = "?") -> "ImagePolicy":
        """Read ``image: {max_side, max_bytes, quality}`` from a model's settings."""
        raw = settings.get("image") or {}
        if not isinstance(raw, Mapping):
            raise ConfigError(f"models.{model}.image must be a mapping, got {type(raw).__name__}")
        unknown = sorted(set(raw) - {"max_side", "max_bytes", "quality"})
        if unknown:
            raise ConfigError(f"models.{model}.image: unknown keys {', '.join(unknown)} (known: max_side, max_bytes, quality)")
        values: dict[str, Any] = {}
        for key, low, high in (("max_side", 16, 100_000), ("max_bytes", 1024, 1 << 32), ("quality", 1, 95)):
            v = raw.get(key)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
                raise ConfigError(f"models.{model}.image.{key} must be an integer in [{low}, {high}], got {v!r}")
            values[key] = v
        return cls(**values)

    def identity(self) -> dict[str, Any]:
        return {"max_side": self.max_side, "max_bytes": self.max_bytes, "quality": self.quality}


@dataclass(frozen=True)
class SentImage:
    """The bytes that go to the model and how they were produced."""

    data: bytes
    mime: str
    width: int | None
    height: int | None
    sha256: str
    original_sha256: str
    reencoded: bool

    def record(self) -> dict[str, Any]:
        """JSON-ready description (no pixels): format, size, hash."""
        return {
            "format": self.mime,
            "width": self.width,
            "height": self.height,
            "bytes": len(self.data),
            "sha256": self.sha256,
            "original_sha256": self.original_sha256,
            "reencoded": self.reencoded,
        }


def _mime_of(data: bytes) -> str:
    from ..data.reader import image_mime

    return image_mime(data)


#: JPEG start-of-frame markers (ITU-T T.81, table B.1): SOF0-3, 5-7, 9-11, 13-15 (not DHT C4, JPG C8, DAC CC)
_SOF = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})


def _header_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) as stored in a JPEG's frame header or a PNG's IHDR chunk, read without
    decoding (PIL's ``Image.open`` reports the same stored size: it applies no EXIF rotation);
    None for anything else or anything malformed. Importing PIL alone is ~25 ms of the start-up
    of ``sabre predict``, whose first request needs only this size."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR" and len(data) >= 24:
        w, h = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        return (w, h) if w and h else None
    if data[:2] != b"\xff\xd8":
        return None
    pos, n = 2, len(data)
    while pos + 4 <= n:
        if data[pos] != 0xFF:
            return None
        marker = data[pos + 1]
        if marker == 0xFF:  # a fill byte before a marker
            pos += 1
            continue
        if marker == 0x01 or 0xD0 <= marker <= 0xD7:  # TEM, RSTn: no length
            pos += 2
            continue
        if marker in (0xD9, 0xDA):  # end of image, start of scan before any frame header
            return None
        length = int.from_bytes(data[pos + 2 : pos + 4], "big")
        if length < 2:
            return None
        if marker in _SOF:
            if pos + 9 > n:
                return None
            h, w = int.from_bytes(data[pos + 5 : pos + 7], "big"), int.from_bytes(data[pos + 7 : pos + 9], "big")
            return (w, h) if w and h else None
        pos += 2 + length
    return None


def _pixel_size(data: bytes) -> tuple[int | None, int | None]:
    size = _header_size(data)
    if size is not None:
        return size
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as im:
            return int(im.width), int(im.height)
    except Exception:  # not an image PIL can read: sent as is, size unknown
        return None, None


def _reencode(data: bytes, policy: ImagePolicy) -> bytes:
    from PIL import Image, ImageOps

    with Image.open(io.BytesIO(data)) as im:
        im.load()
        # the re-encoded JPEG carries no EXIF: turn the pixels upright first
        img = ImageOps.exif_transpose(im).convert("RGB")
    if policy.max_side is not None and max(img.size) > policy.max_side:
        scale = policy.max_side / max(img.size)
        size = (max(1, round(img.width * scale)), max(1, round(img.height * scale)))
        img = img.resize(size, Image.Resampling.LANCZOS)
    qualities = [q for q in _QUALITY_STEPS if q <= policy.quality] or [policy.quality]
    if policy.quality not in qualities:
        qualities.insert(0, policy.quality)
    out = b""
    while True:
        for q in qualities:
            buf = io.BytesIO()
            img.save(buf, format="JPEG", quality=q, optimize=False, progressive=False)
            out = buf.getvalue()
            if policy.max_bytes is None or len(out) <= policy.max_bytes:
                return out
        if min(img.size) <= 16:
            return out
        img = img.resize((max(1, img.width * 3 // 4), max(1, img.height * 3 // 4)), Image.Resampling.LANCZOS)


def prepare_image(data: bytes, policy: ImagePolicy | None = None) -> SentImage:
    """The image as it will be sent: the original bytes unless it exceeds the policy's limits."""
    policy = policy or ImagePolicy()
    original_sha = hashlib.sha256(data).hexdigest()
    if not policy.limited:
        width, height = _pixel_size(data)
        return SentImage(data, _mime_of(data), width, height, original_sha, original_sha, False)
    width, height = _pixel_size(data)
    too_big = (policy.max_bytes is not None and len(data) > policy.max_bytes) or (
        policy.max_side is not None and width is not None and height is not None and max(width, height) > policy.max_side
    )
    if not too_big:
        return SentImage(data, _mime_of(data), width, height, original_sha, original_sha, False)
    out = _reencode(data, policy)
    w2, h2 = _pixel_size(out)
    return SentImage(out, "image/jpeg", w2, h2, hashlib.sha256(out).hexdigest(), original_sha, True)
