"""What every split generator shares: scales, seeded randomness, JPEG encoding, items and rows.

Randomness is derived from the seed and the item's id only (never from call order), so the same
``scale`` and ``seed`` give byte-identical files.
"""

from __future__ import annotations

import hashlib
import io
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from PIL import Image, ImageFilter

from ... import contracts as C

IMAGES_DIR = "images"

T = TypeVar("T")


@dataclass(frozen=True)
class Scale:
    pairs: int  # pairs in context and texture (4 questions each)
    singles: int  # images (= questions) in attribute and language
    width: int
    height: int
    noise: float  # std-dev of the sensor-like pixel noise
    blur: float  # Gaussian blur radius (px) that softens the aliased drawing
    quality: int  # JPEG quality


SCALES: dict[str, Scale] = {
    "small": Scale(pairs=3, singles=12, width=320, height=214, noise=2.0, blur=0.4, quality=85),
    "full": Scale(pairs=100, singles=100, width=1400, height=939, noise=5.0, blur=0.8, quality=92),
}


def _digest(seed: int, *keys: object) -> int:
    text = "\x1f".join([str(seed), *map(str, keys)])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def _rng(seed: int, *keys: object) -> random.Random:
    """A generator that depends only on the seed and the keys (never on call order)."""
    return random.Random(_digest(seed, *keys))


def _encode(img: Image.Image, sc: Scale, seed: int, key: str) -> bytes:
    """Soften, add deterministic sensor noise and encode as a plain baseline JPEG (no metadata)."""
    if sc.blur > 0:
        img = img.filter(ImageFilter.GaussianBlur(sc.blur))
    if sc.noise > 0:
        gen = np.random.default_rng(_digest(seed, "noise", key))
        arr = np.asarray(img, dtype=np.float32)
        arr = arr + gen.standard_normal(arr.shape, dtype=np.float32) * np.float32(sc.noise)
        img = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), "RGB")
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=sc.quality, optimize=False, progressive=False, subsampling="4:2:0")
    return buf.getvalue()


@dataclass
class _Item:
    """One image and the rows (questions) that refer to it."""

    path: str  # relative to data/<split>/
    image: Image.Image
    rows: list[dict[str, Any]]


def _num(i: int) -> str:
    return f"{i + 1:03d}"


def _numbered(split: str, count: int, seed: int, cycle: Sequence[T]) -> Iterator[tuple[str, random.Random, T]]:
    """``count`` ids ``<split>_001``, ``<split>_002``...; each with its own generator and, round robin, an entry of ``cycle``."""
    for i in range(count):
        item_id = f"{split}_{_num(i)}"
        yield item_id, _rng(seed, item_id), cycle[i % len(cycle)]


def _pair_items(
    split: str,
    pair_id: str,
    base: Image.Image,
    edited: Image.Image,
    question: Callable[[str], str],
    extra: dict[str, Any],
) -> Iterator[_Item]:
    """The pair's two images, each with the rows of its probes (contracts.PROBES order)."""
    for role, img in (("base", base), ("edited", edited)):
        rows = [
            _paired_row(split, pair_id, probe, question(probe), expected, extra)
            for probe, (probe_role, expected) in C.PROBES[split].items()
            if probe_role == role
        ]
        yield _Item(f"{IMAGES_DIR}/{pair_id}_{role}.jpg", img, rows)


def _paired_row(split: str, pair_id: str, probe: str, question: str, answer: str, extra: dict[str, Any]) -> dict[str, Any]:
    return {
        C.COL_ID: f"{pair_id}__{probe}",
        C.COL_SUBSET: split,
        C.COL_PAIR_ID: pair_id,
        C.COL_PROBE: probe,
        C.COL_QUESTION: question,
        C.COL_ANSWER: answer,
        C.COL_EVAL_TYPE: C.SPLIT_EVAL_TYPE[split],
        C.COL_QUESTION_TYPE: "yes_no",
        **extra,
    }
