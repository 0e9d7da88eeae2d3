"""The embedded demo benchmark: a synthetic, procedurally drawn stand-in for SABRE-Prior.

:func:`generate` writes a local copy of the hub dataset repo layout::

    README.md                      dataset card; YAML front matter declares one config per split
    data/<split>/metadata.jsonl    one row per question: file_name + the row fields (SPEC.md s.3)
    data/<split>/images/*.jpg      the images, drawn with PIL so the ground truth is visible

``datasets.load_dataset(<dir>, "<split>", split="test")`` reads it exactly like the hub repo.

* context: a drawn scene (kitchen, beach...) with one labelled object; the base image holds the
  context-consistent *source* object, the edited image the unexpected *target* at the same place.
* texture: an object filled with its normal material (base) or a counterfactual one (edited).
* attribute: an animal or object drawn with a non-canonical number of parts (a 6-legged spider);
  ``canonical_count`` holds the count a world prior would give.
* language: the wording suggests an answer that the image does not show; the correct option
  says it cannot be determined. ``suggested_option``/``unknown_option`` hold the two letters.
  ``options`` is a letter-keyed mapping ``{"A": ..., "D": ...}``.

Deterministic: the same ``scale`` and ``seed`` give byte-identical files (fixed JPEG settings,
no EXIF, sorted JSON keys, randomness derived from the seed and the item's id only).
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import math
import os
import random
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from . import contracts as C
from .errors import ConfigError, DataError

#: Tag in the card that marks a directory as a generated demo (safe to replace).
DEMO_TAG = "sabre-prior-demo"
HUB_URL = f"https://huggingface.co/datasets/{C.HUB_REPO_ID}"

RGB = tuple[int, int, int]
OUTLINE: RGB = (45, 40, 38)
IMAGES_DIR = "images"


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


# ---------------------------------------------------------------------------
# Randomness, fonts, encoding
# ---------------------------------------------------------------------------
def _digest(seed: int, *keys: object) -> int:
    text = "\x1f".join([str(seed), *map(str, keys)])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def _rng(seed: int, *keys: object) -> random.Random:
    """A generator that depends only on the seed and the keys (never on call order)."""
    return random.Random(_digest(seed, *keys))


@functools.lru_cache(maxsize=32)
def _font(px: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=max(8, px))


def _jit(color: RGB, rng: random.Random, amount: int = 14) -> RGB:
    return tuple(max(0, min(255, c + rng.randint(-amount, amount))) for c in color)  # type: ignore[return-value]


def _mix(a: RGB, b: RGB, t: float) -> RGB:
    return tuple(round(x + (y - x) * t) for x, y in zip(a, b))  # type: ignore[return-value]


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


# ---------------------------------------------------------------------------
# Drawing helpers
# ---------------------------------------------------------------------------
class Pen:
    """Draws in an object's own coordinates: (0, 0) is its centre, 1 is its size ``s`` in px."""

    def __init__(self, d: ImageDraw.ImageDraw, cx: float, cy: float, s: float, outline: Any = OUTLINE) -> None:
        self.d, self.cx, self.cy, self.s, self.outline = d, cx, cy, s, outline

    def p(self, x: float, y: float) -> tuple[float, float]:
        return (self.cx + x * self.s, self.cy + y * self.s)

    def box(self, x0: float, y0: float, x1: float, y1: float) -> list[float]:
        return [*self.p(x0, y0), *self.p(x1, y1)]

    def lw(self, k: float = 1.0) -> int:
        return max(1, round(self.s * 0.012 * k))

    def _ol(self, outline: bool) -> Any:
        return self.outline if outline else None

    def ellipse(self, x0: float, y0: float, x1: float, y1: float, fill: Any, outline: bool = True) -> None:
        self.d.ellipse(self.box(x0, y0, x1, y1), fill=fill, outline=self._ol(outline), width=self.lw())

    def rect(self, x0: float, y0: float, x1: float, y1: float, fill: Any, outline: bool = True, r: float = 0.0) -> None:
        self.d.rounded_rectangle(
            self.box(x0, y0, x1, y1), radius=r * self.s, fill=fill, outline=self._ol(outline), width=self.lw()
        )

    def poly(self, pts: Sequence[tuple[float, float]], fill: Any, outline: bool = True) -> None:
        self.d.polygon([self.p(x, y) for x, y in pts], fill=fill, outline=self._ol(outline), width=self.lw())

    def line(self, pts: Sequence[tuple[float, float]], fill: Any, k: float = 1.0) -> None:
        self.d.line([self.p(x, y) for x, y in pts], fill=fill, width=self.lw(k), joint="curve")

    def pieslice(self, bx: Sequence[float], a0: float, a1: float, fill: Any, outline: bool = True) -> None:
        self.d.pieslice(self.box(*bx), a0, a1, fill=fill, outline=self._ol(outline), width=self.lw())

    def arc(self, bx: Sequence[float], a0: float, a1: float, fill: Any, k: float = 1.0) -> None:
        self.d.arc(self.box(*bx), a0, a1, fill=fill, width=self.lw(k))

    def text(self, x: float, y: float, text: str, size: float, fill: Any = (30, 30, 30)) -> None:
        font = _font(round(size * self.s))
        px, py = self.p(x, y)
        self.d.text((px, py), text, font=font, fill=fill, anchor="mm")


def _label(d: ImageDraw.ImageDraw, text: str, cx: float, top: float, w: int, h: int) -> None:
    """A white plate with ``text`` centred at ``cx``, its top edge at ``top`` (kept inside the image)."""
    font = _font(round(h * 0.06))
    l, t, r, b = d.textbbox((0, 0), text, font=font)
    pad = h * 0.015
    pw, ph = (r - l) + 2 * pad, (b - t) + 2 * pad
    x0 = min(max(cx - pw / 2, 2), w - pw - 2)
    y0 = min(top, h - ph - 2)
    d.rounded_rectangle([x0, y0, x0 + pw, y0 + ph], radius=pad, fill=(252, 250, 242), outline=(60, 60, 60),
                        width=max(1, round(h / 300)))
    d.text((x0 + pad - l, y0 + pad - t), text, font=font, fill=(20, 20, 20))


def _vgradient(d: ImageDraw.ImageDraw, box: Sequence[float], top: RGB, bottom: RGB, steps: int = 48) -> None:
    x0, y0, x1, y1 = box
    for i in range(steps):
        ya = y0 + (y1 - y0) * i / steps
        yb = y0 + (y1 - y0) * (i + 1) / steps
        d.rectangle([x0, ya, x1, yb + 1], fill=_mix(top, bottom, i / max(1, steps - 1)))


# ---------------------------------------------------------------------------
# Context: scenes and objects
# ---------------------------------------------------------------------------
ObjectDrawer = Callable[[Pen, random.Random], None]
Background = Callable[[ImageDraw.ImageDraw, int, int, random.Random], float]  # returns the ground line (0-1)


def _kettle(p: Pen, rng: random.Random) -> None:
    metal = _jit((188, 190, 200), rng)
    p.arc((-0.3, -0.48, 0.3, 0.1), 180, 360, (60, 60, 60), k=3)
    p.poly([(0.25, 0.05), (0.55, -0.22), (0.58, -0.16), (0.32, 0.2)], metal)
    p.ellipse(-0.38, -0.22, 0.38, 0.5, metal)
    p.ellipse(-0.13, -0.3, 0.13, -0.16, (90, 90, 100))
    p.ellipse(-0.22, -0.05, -0.08, 0.22, (235, 235, 240), outline=False)


def _toaster(p: Pen, rng: random.Random) -> None:
    p.rect(-0.24, -0.45, -0.06, -0.1, (214, 170, 110))
    p.rect(0.06, -0.45, 0.24, -0.1, (214, 170, 110))
    p.rect(-0.48, -0.2, 0.48, 0.5, _jit((200, 200, 208), rng), r=0.1)
    p.rect(0.48, 0.0, 0.56, 0.08, (60, 60, 60))
    p.rect(-0.3, 0.2, 0.3, 0.3, (150, 150, 160), outline=False)


def _frying_pan(p: Pen, rng: random.Random) -> None:
    p.rect(0.25, 0.2, 0.62, 0.3, (110, 70, 40), r=0.04)
    p.ellipse(-0.5, 0.05, 0.3, 0.45, (50, 50, 55))
    p.ellipse(-0.42, 0.1, 0.22, 0.4, (80, 80, 88))


def _fire_hydrant(p: Pen, rng: random.Random) -> None:
    red = _jit((205, 35, 30), rng)
    p.rect(-0.34, 0.0, 0.34, 0.14, red)
    p.rect(-0.2, -0.25, 0.2, 0.45, red)
    p.pieslice((-0.22, -0.45, 0.22, -0.05), 180, 360, red)
    p.rect(-0.05, -0.5, 0.05, -0.42, red)
    p.rect(-0.28, 0.42, 0.28, 0.5, (160, 25, 20))
    p.ellipse(-0.07, 0.0, 0.07, 0.14, (240, 200, 60))


def _traffic_cone(p: Pen, rng: random.Random) -> None:
    orange = _jit((240, 120, 20), rng)
    p.poly([(0, -0.5), (0.3, 0.42), (-0.3, 0.42)], orange)
    p.poly([(-0.12, -0.12), (0.12, -0.12), (0.17, 0.03), (-0.17, 0.03)], (250, 250, 250), outline=False)
    p.poly([(-0.2, 0.15), (0.2, 0.15), (0.24, 0.27), (-0.24, 0.27)], (250, 250, 250), outline=False)
    p.rect(-0.42, 0.42, 0.42, 0.5, (200, 95, 15))


def _toothbrush(p: Pen, rng: random.Random) -> None:
    p.rect(-0.5, 0.3, 0.3, 0.4, _jit((40, 120, 220), rng), r=0.05)
    p.rect(0.22, 0.28, 0.52, 0.4, (40, 120, 220), r=0.04)
    p.rect(0.26, 0.12, 0.5, 0.29, (245, 245, 250))
    for i in range(7):
        x = 0.28 + i * 0.035
        p.line([(x, 0.14), (x, 0.27)], (170, 200, 230))


def _rubber_duck(p: Pen, rng: random.Random) -> None:
    yellow = _jit((250, 215, 40), rng)
    p.ellipse(-0.48, -0.05, 0.4, 0.45, yellow)
    p.ellipse(-0.05, -0.45, 0.35, -0.05, yellow)
    p.poly([(0.33, -0.3), (0.52, -0.22), (0.33, -0.15)], (245, 130, 20))
    p.ellipse(0.14, -0.33, 0.22, -0.25, (20, 20, 20), outline=False)
    p.arc((-0.35, 0.0, 0.15, 0.3), 0, 180, (200, 160, 20), k=2)


def _laptop(p: Pen, rng: random.Random) -> None:
    p.rect(-0.42, -0.45, 0.42, 0.17, (60, 60, 66), r=0.03)
    p.rect(-0.36, -0.39, 0.36, 0.11, _jit((70, 130, 200), rng), outline=False)
    p.poly([(-0.46, 0.17), (0.46, 0.17), (0.56, 0.32), (-0.56, 0.32)], (170, 172, 180))
    p.poly([(-0.1, 0.22), (0.1, 0.22), (0.12, 0.28), (-0.12, 0.28)], (130, 130, 138), outline=False)


def _desk_lamp(p: Pen, rng: random.Random) -> None:
    p.ellipse(-0.3, 0.38, 0.3, 0.5, (50, 50, 55))
    p.line([(0.0, 0.42), (-0.18, 0.0), (0.1, -0.25)], (50, 50, 55), k=3)
    p.ellipse(0.05, -0.12, 0.25, 0.02, (255, 240, 170), outline=False)
    p.poly([(0.0, -0.42), (0.2, -0.42), (0.42, -0.08), (-0.14, -0.1)], _jit((40, 150, 90), rng))


def _potted_plant(p: Pen, rng: random.Random) -> None:
    green = _jit((50, 150, 60), rng)
    for ang in (-150, -120, -90, -60, -30):
        a = math.radians(ang)
        tip = (0.42 * math.cos(a), 0.08 + 0.5 * math.sin(a))
        side = (0.09 * math.cos(a + math.pi / 2), 0.09 * math.sin(a + math.pi / 2))
        mid = (tip[0] * 0.55, 0.08 + (tip[1] - 0.08) * 0.55)
        p.poly([(0, 0.1), (mid[0] + side[0], mid[1] + side[1]), tip, (mid[0] - side[0], mid[1] - side[1])], green)
    p.poly([(-0.24, 0.1), (0.24, 0.1), (0.18, 0.5), (-0.18, 0.5)], (190, 95, 55))


def _watermelon(p: Pen, rng: random.Random) -> None:
    p.pieslice((-0.5, -0.5, 0.5, 0.5), 0, 180, (40, 130, 50))
    p.pieslice((-0.44, -0.44, 0.44, 0.44), 0, 180, _jit((230, 60, 70), rng), outline=False)
    for i in range(7):
        a = math.radians(20 + i * 22)
        x, y = 0.26 * math.cos(a), 0.26 * math.sin(a)
        p.ellipse(x - 0.02, y - 0.03, x + 0.02, y + 0.03, (25, 20, 20), outline=False)


def _beach_umbrella(p: Pen, rng: random.Random) -> None:
    p.line([(0.0, -0.3), (0.04, 0.5)], (120, 90, 60), k=2.5)
    c1, c2 = _jit((230, 60, 60), rng), (250, 250, 245)
    for i in range(6):
        p.pieslice((-0.55, -0.5, 0.55, 0.1), 180 + i * 30, 210 + i * 30, c1 if i % 2 == 0 else c2)


def _sandcastle(p: Pen, rng: random.Random) -> None:
    sand = _jit((222, 190, 120), rng)
    p.rect(-0.42, 0.0, 0.42, 0.5, sand)
    for x0, y0, x1 in ((-0.48, -0.3, -0.22), (0.22, -0.3, 0.48), (-0.12, -0.42, 0.12)):
        p.rect(x0, y0, x1, 0.0, sand)
        w = (x1 - x0) / 5
        for k in (0, 2, 4):
            p.rect(x0 + k * w, y0 - 0.06, x0 + (k + 1) * w, y0, sand)
    p.pieslice((-0.1, 0.25, 0.1, 0.55), 180, 360, (110, 80, 50))
    p.line([(0.0, -0.48), (0.0, -0.62)], (60, 60, 60))
    p.poly([(0.0, -0.62), (0.12, -0.57), (0.0, -0.52)], (220, 40, 40))


def _snowman(p: Pen, rng: random.Random) -> None:
    white = (246, 248, 252)
    p.ellipse(-0.3, 0.05, 0.3, 0.5, white)
    p.ellipse(-0.22, -0.22, 0.22, 0.12, white)
    p.ellipse(-0.15, -0.43, 0.15, -0.17, white)
    p.rect(-0.14, -0.56, 0.14, -0.4, (30, 30, 30))
    p.rect(-0.2, -0.42, 0.2, -0.38, (30, 30, 30))
    p.ellipse(-0.08, -0.34, -0.04, -0.3, (20, 20, 20), outline=False)
    p.ellipse(0.04, -0.34, 0.08, -0.3, (20, 20, 20), outline=False)
    p.poly([(0.0, -0.28), (0.16, -0.25), (0.0, -0.23)], (240, 120, 20), outline=False)
    for y in (-0.1, -0.02, 0.06):
        p.ellipse(-0.025, y - 0.025, 0.025, y + 0.025, (30, 30, 30), outline=False)
    p.rect(-0.18, -0.2, 0.18, -0.14, _jit((200, 40, 40), rng))


def _mushroom(p: Pen, rng: random.Random) -> None:
    p.rect(-0.11, -0.05, 0.11, 0.5, (240, 230, 205), r=0.04)
    p.pieslice((-0.48, -0.45, 0.48, 0.35), 180, 360, _jit((210, 40, 35), rng))
    for x, y in ((-0.25, -0.15), (0.0, -0.32), (0.24, -0.14), (-0.08, -0.12), (0.14, -0.27)):
        p.ellipse(x - 0.05, y - 0.04, x + 0.05, y + 0.04, (250, 250, 250), outline=False)


def _bicycle(p: Pen, rng: random.Random) -> None:
    frame = _jit((30, 90, 180), rng)
    for cx in (-0.3, 0.3):
        p.ellipse(cx - 0.22, 0.06, cx + 0.22, 0.5, None)
        p.ellipse(cx - 0.2, 0.08, cx + 0.2, 0.48, None)
    p.line([(-0.3, 0.28), (-0.05, 0.28), (0.22, 0.0), (-0.12, 0.0), (-0.3, 0.28)], frame, k=2)
    p.line([(-0.05, 0.28), (-0.15, -0.08)], frame, k=2)
    p.line([(0.3, 0.28), (0.2, -0.12), (0.3, -0.16)], frame, k=2)
    p.rect(-0.24, -0.12, -0.06, -0.07, (30, 30, 30))


def _mailbox(p: Pen, rng: random.Random) -> None:
    p.rect(-0.05, -0.05, 0.05, 0.5, (110, 75, 45))
    blue = _jit((40, 80, 170), rng)
    p.rect(-0.34, -0.3, 0.34, 0.0, blue)
    p.pieslice((-0.34, -0.45, 0.34, -0.15), 180, 360, blue)
    p.rect(0.3, -0.42, 0.34, -0.2, (220, 40, 40), outline=False)


def _television(p: Pen, rng: random.Random) -> None:
    p.line([(-0.05, -0.42), (-0.25, -0.6)], (60, 60, 60))
    p.line([(0.05, -0.42), (0.25, -0.6)], (60, 60, 60))
    p.rect(-0.5, -0.42, 0.5, 0.3, (40, 40, 44), r=0.03)
    p.rect(-0.44, -0.36, 0.44, 0.24, _jit((60, 110, 170), rng), outline=False)
    p.poly([(-0.1, 0.3), (0.1, 0.3), (0.2, 0.45), (-0.2, 0.45)], (60, 60, 66))


def _penguin(p: Pen, rng: random.Random) -> None:
    p.ellipse(-0.18, 0.42, -0.02, 0.5, (245, 150, 30))
    p.ellipse(0.02, 0.42, 0.18, 0.5, (245, 150, 30))
    p.ellipse(-0.3, -0.3, 0.3, 0.46, (25, 25, 30))
    p.ellipse(-0.2, -0.15, 0.2, 0.42, (248, 248, 245), outline=False)
    p.ellipse(-0.18, -0.5, 0.18, -0.16, (25, 25, 30))
    p.ellipse(-0.1, -0.4, -0.03, -0.33, (250, 250, 250), outline=False)
    p.ellipse(0.03, -0.4, 0.1, -0.33, (250, 250, 250), outline=False)
    p.poly([(-0.05, -0.3), (0.05, -0.3), (0.0, -0.2)], (245, 150, 30))


OBJECTS: dict[str, ObjectDrawer] = {
    "kettle": _kettle,
    "toaster": _toaster,
    "frying pan": _frying_pan,
    "fire hydrant": _fire_hydrant,
    "traffic cone": _traffic_cone,
    "toothbrush": _toothbrush,
    "rubber duck": _rubber_duck,
    "laptop": _laptop,
    "desk lamp": _desk_lamp,
    "potted plant": _potted_plant,
    "watermelon": _watermelon,
    "beach umbrella": _beach_umbrella,
    "sandcastle": _sandcastle,
    "snowman": _snowman,
    "mushroom": _mushroom,
    "bicycle": _bicycle,
    "mailbox": _mailbox,
    "television": _television,
    "penguin": _penguin,
}


def _bg_kitchen(d: ImageDraw.ImageDraw, w: int, h: int, rng: random.Random) -> float:
    d.rectangle([0, 0, w, h], fill=_jit((238, 228, 205), rng))
    tile = h * 0.07
    y = h * 0.24
    while y < h * 0.62:
        x = 0.0
        while x < w:
            d.rectangle([x, y, x + tile, y + tile], fill=(246, 244, 238), outline=(200, 195, 185))
            x += tile
        y += tile
    wood = _jit((150, 105, 65), rng)
    for i in range(4):
        d.rectangle([w * i / 4 + 3, 0, w * (i + 1) / 4 - 3, h * 0.22], fill=wood, outline=(90, 60, 35), width=2)
    d.rectangle([0, h * 0.62, w, h * 0.68], fill=(95, 95, 100))
    for i in range(5):
        d.rectangle([w * i / 5 + 3, h * 0.68, w * (i + 1) / 5 - 3, h], fill=wood, outline=(90, 60, 35), width=2)
    return 0.64


def _bg_bathroom(d: ImageDraw.ImageDraw, w: int, h: int, rng: random.Random) -> float:
    d.rectangle([0, 0, w, h], fill=_jit((205, 228, 240), rng))
    tile = h * 0.09
    for i in range(int(w / tile) + 1):
        d.line([i * tile, 0, i * tile, h * 0.75], fill=(170, 195, 210), width=max(1, h // 200))
    for j in range(int(h * 0.75 / tile) + 1):
        d.line([0, j * tile, w, j * tile], fill=(170, 195, 210), width=max(1, h // 200))
    d.rounded_rectangle([w * 0.72, h * 0.08, w * 0.92, h * 0.42], radius=h * 0.03, fill=(215, 235, 245),
                        outline=(150, 150, 150), width=3)
    d.rectangle([w * 0.62, h * 0.55, w, h * 0.8], fill=(250, 250, 252), outline=(170, 170, 175), width=3)
    for i in range(12):
        for j in range(3):
            c = (235, 235, 238) if (i + j) % 2 == 0 else (120, 125, 135)
            d.rectangle([w * i / 12, h * (0.75 + j * 0.085), w * (i + 1) / 12, h * (0.75 + (j + 1) * 0.085)], fill=c)
    return 0.86


def _bg_office(d: ImageDraw.ImageDraw, w: int, h: int, rng: random.Random) -> float:
    d.rectangle([0, 0, w, h], fill=_jit((205, 212, 222), rng))
    d.rectangle([w * 0.06, h * 0.08, w * 0.36, h * 0.5], fill=(150, 200, 240), outline=(240, 240, 240), width=6)
    d.line([w * 0.21, h * 0.08, w * 0.21, h * 0.5], fill=(240, 240, 240), width=4)
    d.rectangle([w * 0.7, h * 0.1, w * 0.9, h * 0.35], fill=(250, 250, 250), outline=(80, 80, 80), width=2)
    for k in range(4):
        y = h * (0.15 + 0.05 * k)
        d.line([w * 0.73, y, w * (0.87 - 0.03 * (k % 2)), y], fill=(120, 120, 130), width=2)
    d.rectangle([0, h * 0.66, w, h * 0.72], fill=_jit((140, 95, 60), rng))
    d.rectangle([w * 0.05, h * 0.72, w * 0.09, h], fill=(110, 75, 45))
    d.rectangle([w * 0.91, h * 0.72, w * 0.95, h], fill=(110, 75, 45))
    return 0.67


def _bg_beach(d: ImageDraw.ImageDraw, w: int, h: int, rng: random.Random) -> float:
    _vgradient(d, (0, 0, w, h * 0.42), (110, 175, 235), (190, 225, 245))
    sx = w * rng.uniform(0.1, 0.3)
    d.ellipse([sx, h * 0.06, sx + h * 0.14, h * 0.2], fill=(255, 225, 90))
    d.rectangle([0, h * 0.42, w, h * 0.58], fill=(40, 120, 180))
    for k in range(6):
        y = h * (0.45 + 0.02 * k)
        x = w * rng.uniform(0, 0.8)
        d.arc([x, y, x + w * 0.1, y + h * 0.03], 200, 340, fill=(220, 240, 250), width=2)
    _vgradient(d, (0, h * 0.58, w, h), (235, 210, 150), (215, 185, 120))
    return 0.86


def _tree(d: ImageDraw.ImageDraw, x: float, base: float, size: float, green: RGB, snow: bool = False) -> None:
    d.rectangle([x - size * 0.06, base - size * 0.3, x + size * 0.06, base], fill=(100, 70, 45))
    for k in range(3):
        top = base - size * (1.0 - 0.22 * k)
        bottom = base - size * (0.25 + 0.12 * (2 - k))
        half = size * (0.22 + 0.08 * k)
        d.polygon([(x, top), (x + half, bottom), (x - half, bottom)], fill=green)
        if snow:
            d.polygon([(x, top), (x + half * 0.35, top + (bottom - top) * 0.35), (x - half * 0.35,
                                                                                 top + (bottom - top) * 0.35)],
                      fill=(250, 250, 252))


def _bg_forest(d: ImageDraw.ImageDraw, w: int, h: int, rng: random.Random) -> float:
    _vgradient(d, (0, 0, w, h * 0.6), (150, 200, 235), (210, 230, 235))
    d.ellipse([-w * 0.2, h * 0.4, w * 0.6, h * 0.9], fill=(110, 160, 90))
    d.ellipse([w * 0.4, h * 0.38, w * 1.3, h * 0.9], fill=(95, 150, 80))
    d.rectangle([0, h * 0.6, w, h], fill=_jit((80, 140, 60), rng))
    for k in range(9):
        x = w * (0.05 + 0.9 * k / 8) + rng.uniform(-0.03, 0.03) * w
        _tree(d, x, h * rng.uniform(0.62, 0.7), h * rng.uniform(0.35, 0.5), _jit((40, 100, 50), rng))
    return 0.9


def _bg_street(d: ImageDraw.ImageDraw, w: int, h: int, rng: random.Random) -> float:
    _vgradient(d, (0, 0, w, h * 0.6), (140, 185, 230), (205, 220, 235))
    x = 0.0
    while x < w:
        bw = w * rng.uniform(0.12, 0.22)
        top = h * rng.uniform(0.08, 0.3)
        d.rectangle([x, top, x + bw, h * 0.62], fill=_jit((170, 150, 140), rng, 30), outline=(90, 80, 75))
        wy = top + h * 0.04
        while wy < h * 0.55:
            wx = x + bw * 0.12
            while wx < x + bw * 0.8:
                d.rectangle([wx, wy, wx + bw * 0.14, wy + h * 0.05], fill=(200, 225, 240))
                wx += bw * 0.25
            wy += h * 0.09
        x += bw
    d.rectangle([0, h * 0.62, w, h * 0.74], fill=(185, 185, 180))
    d.rectangle([0, h * 0.74, w, h], fill=(70, 70, 75))
    for k in range(8):
        d.rectangle([w * k / 8 + w * 0.02, h * 0.86, w * k / 8 + w * 0.09, h * 0.88], fill=(240, 240, 240))
    return 0.72


def _bg_living_room(d: ImageDraw.ImageDraw, w: int, h: int, rng: random.Random) -> float:
    wall = _jit((230, 210, 180), rng)
    d.rectangle([0, 0, w, h], fill=wall)
    for k in range(0, 40, 2):
        d.rectangle([w * k / 40, 0, w * (k + 1) / 40, h * 0.72], fill=_mix(wall, (200, 170, 140), 0.3))
    d.rectangle([w * 0.4, h * 0.08, w * 0.6, h * 0.3], fill=(90, 140, 110), outline=(120, 80, 40), width=5)
    d.rectangle([0, h * 0.72, w, h], fill=(160, 115, 70))
    for k in range(6):
        y = h * (0.72 + 0.047 * k)
        d.line([0, y, w, y], fill=(120, 85, 50), width=2)
    sofa = _jit((120, 60, 70), rng)
    d.rounded_rectangle([w * 0.02, h * 0.42, w * 0.28, h * 0.8], radius=h * 0.03, fill=sofa)
    d.rounded_rectangle([w * 0.0, h * 0.58, w * 0.3, h * 0.82], radius=h * 0.03, fill=_mix(sofa, (0, 0, 0), 0.15))
    return 0.86


def _bg_snowy_field(d: ImageDraw.ImageDraw, w: int, h: int, rng: random.Random) -> float:
    _vgradient(d, (0, 0, w, h * 0.55), (190, 205, 225), (230, 235, 242))
    d.ellipse([-w * 0.3, h * 0.4, w * 0.7, h * 0.9], fill=(235, 240, 248))
    d.rectangle([0, h * 0.58, w, h], fill=(245, 247, 252))
    for k in range(7):
        x = w * (0.04 + 0.92 * k / 6) + rng.uniform(-0.02, 0.02) * w
        _tree(d, x, h * rng.uniform(0.6, 0.66), h * rng.uniform(0.3, 0.42), (40, 80, 55), snow=True)
    for k in range(40):
        x, y = w * rng.random(), h * rng.random() * 0.55
        r = h * 0.005
        d.ellipse([x - r, y - r, x + r, y + r], fill=(255, 255, 255))
    return 0.9


#: scene -> (background, context-consistent sources, context-unexpected targets)
SCENES: dict[str, tuple[Background, tuple[str, ...], tuple[str, ...]]] = {
    "kitchen": (_bg_kitchen, ("kettle", "toaster", "frying pan"), ("traffic cone", "snowman", "fire hydrant", "penguin")),
    "bathroom": (_bg_bathroom, ("toothbrush", "rubber duck"), ("frying pan", "laptop", "traffic cone", "mailbox")),
    "office": (_bg_office, ("laptop", "desk lamp", "potted plant"), ("watermelon", "rubber duck", "fire hydrant", "snowman")),
    "beach": (_bg_beach, ("beach umbrella", "sandcastle"), ("snowman", "fire hydrant", "television", "desk lamp")),
    "forest": (_bg_forest, ("mushroom",), ("television", "toaster", "mailbox", "laptop")),
    "street": (_bg_street, ("fire hydrant", "mailbox", "traffic cone", "bicycle"), ("penguin", "rubber duck", "kettle", "beach umbrella")),
    "living room": (_bg_living_room, ("television", "potted plant"), ("fire hydrant", "penguin", "sandcastle")),
    "snowy field": (_bg_snowy_field, ("snowman", "penguin"), ("beach umbrella", "watermelon", "toaster")),
}


def _context_images(sc: Scale, rng: random.Random, scene: str, source: str, target: str) -> tuple[Image.Image, Image.Image]:
    w, h = sc.width, sc.height
    background, _, _ = SCENES[scene]
    bg = Image.new("RGB", (w, h))
    ground = background(ImageDraw.Draw(bg), w, h, rng)
    s = h * 0.36
    cx = w * rng.uniform(0.38, 0.62)
    cy = h * ground - s * 0.5
    out = []
    for obj in (source, target):
        img = bg.copy()
        d = ImageDraw.Draw(img)
        OBJECTS[obj](Pen(d, cx, cy, s), _rng(0, rng.random()))
        _label(d, obj, cx, h * ground + h * 0.02, w, h)
        out.append(img)
    return out[0], out[1]


# ---------------------------------------------------------------------------
# Texture: shapes and materials
# ---------------------------------------------------------------------------
Pattern = Callable[[int, int, random.Random], Image.Image]


def _pattern_base(w: int, h: int, color: RGB) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    img = Image.new("RGB", (w, h), color)
    return img, ImageDraw.Draw(img)


def _speckled(base: RGB, speck: RGB, density: float, size: float) -> Pattern:
    def draw(w: int, h: int, rng: random.Random) -> Image.Image:
        img, d = _pattern_base(w, h, base)
        r = max(1.0, size * h)
        for _ in range(int(density * w * h / (r * r * 40))):
            x, y = rng.random() * w, rng.random() * h
            d.ellipse([x - r, y - r * 0.8, x + r, y + r * 0.8], fill=_mix(speck, base, rng.random() * 0.5))
        return img

    return draw


def _shiny(base: RGB) -> Pattern:
    def draw(w: int, h: int, rng: random.Random) -> Image.Image:
        img, d = _pattern_base(w, h, base)
        for k in range(10, 0, -1):
            t = k / 10
            d.ellipse([w * (0.3 - 0.2 * t), h * (0.3 - 0.2 * t), w * (0.3 + 0.2 * t), h * (0.3 + 0.2 * t)],
                      fill=_mix((255, 255, 255), base, 0.45 + 0.55 * t))
        return img

    return draw


def _stripes(c1: RGB, c2: RGB, period: float, slant: float, wavy: bool = False) -> Pattern:
    def draw(w: int, h: int, rng: random.Random) -> Image.Image:
        img, d = _pattern_base(w, h, c1)
        step = max(3.0, period * h)
        x = -h * abs(slant) - step
        while x < w + h * abs(slant):
            if wavy:
                pts = [(x + step * 0.25 * math.sin(y / step * 2), y) for y in range(0, h + 8, 8)]
                d.line(pts, fill=c2, width=max(1, round(step * 0.45)))
            else:
                d.polygon([(x, 0), (x + step / 2, 0), (x + step / 2 + slant * h, h), (x + slant * h, h)], fill=c2)
            x += step
        return img

    return draw


def _brick(w: int, h: int, rng: random.Random) -> Image.Image:
    img, d = _pattern_base(w, h, (205, 200, 190))
    bh = max(4.0, h / 12)
    bw = bh * 2.2
    row = 0
    y = 0.0
    while y < h:
        x = -bw / 2 if row % 2 else 0.0
        while x < w:
            d.rectangle([x + 1, y + 1, x + bw - 2, y + bh - 2], fill=_jit((170, 65, 45), rng, 18))
            x += bw
        y += bh
        row += 1
    return img


def _denim(w: int, h: int, rng: random.Random) -> Image.Image:
    img, d = _pattern_base(w, h, (50, 80, 135))
    step = max(2.0, h / 60)
    x = -float(h)
    while x < w:
        d.line([x, h, x + h, 0], fill=(85, 115, 165), width=1)
        x += step
    for _ in range(w * h // 400):
        px, py = rng.random() * w, rng.random() * h
        d.point((px, py), fill=(180, 195, 220))
    return img


def _marble(w: int, h: int, rng: random.Random) -> Image.Image:
    img, d = _pattern_base(w, h, (240, 238, 232))
    for _ in range(9):
        x, y = rng.random() * w, rng.random() * h
        pts = []
        for _k in range(12):
            pts.append((x, y))
            x += rng.uniform(-0.05, 0.12) * w
            y += rng.uniform(-0.1, 0.1) * h
        d.line(pts, fill=_jit((150, 150, 158), rng, 20), width=max(1, round(h / 150)), joint="curve")
    return img


def _knit(w: int, h: int, rng: random.Random) -> Image.Image:
    base = _jit((160, 45, 60), rng)
    img, d = _pattern_base(w, h, _mix(base, (0, 0, 0), 0.25))
    cw = max(4.0, h / 14)
    for j in range(int(h / cw * 2) + 2):
        for i in range(int(w / cw) + 2):
            x, y = i * cw, j * cw * 0.5
            d.polygon([(x, y), (x + cw / 2, y + cw * 0.45), (x + cw / 2, y + cw * 0.8), (x, y + cw * 0.35)], fill=base)
            d.polygon([(x + cw, y), (x + cw / 2, y + cw * 0.45), (x + cw / 2, y + cw * 0.8), (x + cw, y + cw * 0.35)],
                      fill=_mix(base, (255, 255, 255), 0.12))
    return img


def _wood(w: int, h: int, rng: random.Random) -> Image.Image:
    img, d = _pattern_base(w, h, _jit((165, 115, 70), rng))
    y = 0.0
    while y < h:
        amp, freq, phase = rng.uniform(0.5, 2.0) * h / 100, rng.uniform(2, 6), rng.random() * 6.3
        pts = [(x, y + amp * math.sin(freq * x / w * 6.28 + phase)) for x in range(0, w + 6, 6)]
        d.line(pts, fill=_jit((120, 80, 45), rng, 10), width=max(1, round(h / 120)))
        y += h * rng.uniform(0.025, 0.06)
    return img


def _metal(w: int, h: int, rng: random.Random) -> Image.Image:
    img, d = _pattern_base(w, h, (180, 182, 188))
    _vgradient(d, (0, 0, w, h), (215, 218, 224), (120, 124, 132))
    for _ in range(max(20, h // 2)):
        y = rng.random() * h
        x0 = rng.random() * w
        v = rng.randint(150, 235)
        d.line([x0, y, x0 + rng.uniform(0.1, 0.6) * w, y], fill=(v, v, v + 4 if v < 250 else v), width=1)
    return img


def _leopard(w: int, h: int, rng: random.Random) -> Image.Image:
    img, d = _pattern_base(w, h, (215, 170, 90))
    r = max(2.0, h / 30)
    for _ in range(int(w * h / (r * r * 14))):
        x, y = rng.random() * w, rng.random() * h
        d.ellipse([x - r, y - r * 0.8, x + r, y + r * 0.8], outline=(40, 28, 20), width=max(1, round(r / 3)),
                  fill=(175, 115, 50))
    return img


def _fur(base: RGB) -> Pattern:
    def draw(w: int, h: int, rng: random.Random) -> Image.Image:
        img, d = _pattern_base(w, h, base)
        ln = max(3.0, h / 25)
        for _ in range(int(w * h / (ln * ln) * 1.2)):
            x, y = rng.random() * w, rng.random() * h
            a = rng.uniform(1.2, 1.9)
            d.line([x, y, x + ln * math.cos(a), y + ln * math.sin(a)], fill=_jit(_mix(base, (0, 0, 0), 0.3), rng, 15),
                   width=max(1, round(ln / 6)))
        return img

    return draw


def _ribbed(base: RGB) -> Pattern:
    def draw(w: int, h: int, rng: random.Random) -> Image.Image:
        img, d = _pattern_base(w, h, base)
        n = 7
        for k in range(n):
            d.arc([w * k / n - w * 0.05, -h * 0.1, w * (k + 1) / n + w * 0.05, h * 1.1], 240, 300,
                  fill=_mix(base, (90, 40, 0), 0.45), width=max(1, round(w / 60)))
            d.line([w * k / n, 0, w * k / n, h], fill=_mix(base, (90, 40, 0), 0.5), width=max(1, round(w / 90)))
        return img

    return draw


MATERIALS: dict[str, Pattern] = {
    # normal materials
    "yellow banana peel": _speckled((240, 205, 60), (110, 80, 30), 0.6, 0.012),
    "shiny red apple skin": _shiny((195, 30, 35)),
    "striped green rind": _stripes((120, 180, 70), (40, 110, 40), 0.12, 0.0, wavy=True),
    "dimpled orange peel": _speckled((245, 140, 25), (205, 105, 15), 3.0, 0.008),
    "fuzzy yellow felt": _speckled((215, 230, 70), (240, 250, 160), 4.0, 0.006),
    "ribbed orange rind": _ribbed((235, 125, 30)),
    "glazed white ceramic": _shiny((235, 235, 230)),
    "soft brown fur": _fur((150, 100, 60)),
    "spiny green cactus skin": _speckled((70, 140, 70), (235, 235, 200), 0.8, 0.008),
    "bumpy yellow lemon peel": _speckled((245, 225, 60), (215, 190, 30), 3.0, 0.008),
    "pebbled orange rubber": _speckled((225, 105, 35), (170, 70, 20), 4.0, 0.006),
    "polished wood": _wood,
    # counterfactual materials
    "brushed metal": _metal,
    "zebra-striped fur": _stripes((245, 245, 240), (25, 25, 25), 0.14, 0.25),
    "red brick": _brick,
    "blue denim": _denim,
    "white marble": _marble,
    "knitted wool": _knit,
    "leopard-print fur": _leopard,
}

COUNTERFACTUAL_MATERIALS: tuple[str, ...] = (
    "brushed metal",
    "zebra-striped fur",
    "red brick",
    "blue denim",
    "white marble",
    "knitted wool",
    "polished wood",
    "leopard-print fur",
)


def _m_banana(p: Pen) -> None:
    p.ellipse(-0.55, -0.45, 0.55, 0.35, 255, outline=False)
    p.ellipse(-0.62, -0.65, 0.62, 0.15, 0, outline=False)
    p.rect(0.44, -0.2, 0.56, -0.05, 255, outline=False)


def _m_round(p: Pen) -> None:
    p.ellipse(-0.42, -0.42, 0.42, 0.42, 255, outline=False)


def _m_wide(p: Pen) -> None:
    p.ellipse(-0.55, -0.34, 0.55, 0.34, 255, outline=False)


def _m_lemon(p: Pen) -> None:
    p.ellipse(-0.45, -0.3, 0.45, 0.3, 255, outline=False)
    p.poly([(-0.42, -0.1), (-0.56, 0.0), (-0.42, 0.1)], 255, outline=False)
    p.poly([(0.42, -0.1), (0.56, 0.0), (0.42, 0.1)], 255, outline=False)


def _m_pumpkin(p: Pen) -> None:
    for x0, x1 in ((-0.55, 0.05), (-0.05, 0.55), (-0.3, 0.3)):
        p.ellipse(x0, -0.32, x1, 0.4, 255, outline=False)


def _m_chair(p: Pen) -> None:
    p.rect(-0.3, -0.5, 0.3, -0.02, 255, outline=False)
    p.rect(-0.36, 0.0, 0.36, 0.1, 255, outline=False)
    for x in (-0.34, 0.26):
        p.rect(x, 0.1, x + 0.08, 0.5, 255, outline=False)


def _m_mug(p: Pen) -> None:
    p.rect(-0.3, -0.35, 0.25, 0.45, 255, outline=False, r=0.04)
    p.d.ellipse(p.box(0.1, -0.2, 0.5, 0.25), outline=255, width=round(p.s * 0.07))


def _m_teddy(p: Pen) -> None:
    for bx in ((-0.3, -0.55, -0.12, -0.37), (0.12, -0.55, 0.3, -0.37), (-0.25, -0.5, 0.25, -0.05),
               (-0.3, -0.1, 0.3, 0.5), (-0.48, -0.02, -0.2, 0.2), (0.2, -0.02, 0.48, 0.2)):
        p.ellipse(*bx, 255, outline=False)


def _m_cactus(p: Pen) -> None:
    p.rect(-0.12, -0.5, 0.12, 0.5, 255, outline=False, r=0.12)
    p.rect(-0.4, -0.3, -0.22, 0.05, 255, outline=False, r=0.09)
    p.rect(-0.4, -0.02, -0.05, 0.12, 255, outline=False, r=0.06)
    p.rect(0.22, -0.4, 0.4, -0.05, 255, outline=False, r=0.09)
    p.rect(0.05, -0.12, 0.4, 0.0, 255, outline=False, r=0.06)


def _d_stem(p: Pen) -> None:
    p.line([(0.0, -0.38), (0.05, -0.55)], (90, 60, 30), k=2.5)


def _d_tennis(p: Pen) -> None:
    p.arc((-0.75, -0.4, -0.15, 0.4), 300, 60, (250, 250, 250), k=2)
    p.arc((0.15, -0.4, 0.75, 0.4), 120, 240, (250, 250, 250), k=2)


def _d_basket(p: Pen) -> None:
    p.line([(-0.42, 0.0), (0.42, 0.0)], (30, 30, 30), k=1.5)
    p.line([(0.0, -0.42), (0.0, 0.42)], (30, 30, 30), k=1.5)
    p.arc((-0.7, -0.4, -0.1, 0.4), 300, 60, (30, 30, 30), k=1.5)
    p.arc((0.1, -0.4, 0.7, 0.4), 120, 240, (30, 30, 30), k=1.5)


def _d_pumpkin(p: Pen) -> None:
    p.rect(-0.04, -0.45, 0.05, -0.3, (70, 110, 40))


def _d_teddy(p: Pen) -> None:
    p.ellipse(-0.12, -0.38, -0.06, -0.32, (20, 20, 20), outline=False)
    p.ellipse(0.06, -0.38, 0.12, -0.32, (20, 20, 20), outline=False)
    p.ellipse(-0.06, -0.25, 0.06, -0.17, (40, 25, 20), outline=False)


def _d_none(p: Pen) -> None:
    return None


#: object -> (mask drawer, detail drawer, normal material)
TEXTURE_OBJECTS: dict[str, tuple[Callable[[Pen], None], Callable[[Pen], None], str]] = {
    "banana": (_m_banana, _d_none, "yellow banana peel"),
    "apple": (_m_round, _d_stem, "shiny red apple skin"),
    "watermelon": (_m_wide, _d_none, "striped green rind"),
    "orange": (_m_round, _d_none, "dimpled orange peel"),
    "tennis ball": (_m_round, _d_tennis, "fuzzy yellow felt"),
    "pumpkin": (_m_pumpkin, _d_pumpkin, "ribbed orange rind"),
    "wooden chair": (_m_chair, _d_none, "polished wood"),
    "coffee mug": (_m_mug, _d_none, "glazed white ceramic"),
    "teddy bear": (_m_teddy, _d_teddy, "soft brown fur"),
    "cactus": (_m_cactus, _d_none, "spiny green cactus skin"),
    "lemon": (_m_lemon, _d_none, "bumpy yellow lemon peel"),
    "basketball": (_m_round, _d_basket, "pebbled orange rubber"),
}


def _texture_images(sc: Scale, rng: random.Random, obj: str, counterfactual: str) -> tuple[Image.Image, Image.Image]:
    w, h = sc.width, sc.height
    bg = Image.new("RGB", (w, h))
    d = ImageDraw.Draw(bg)
    _vgradient(d, (0, 0, w, h * 0.7), _jit((225, 225, 232), rng), (190, 192, 205))
    d.rectangle([0, h * 0.7, w, h], fill=_jit((150, 120, 95), rng))
    s = h * 0.62
    cx, cy = w * rng.uniform(0.42, 0.58), h * 0.45
    mask = Image.new("L", (w, h), 0)
    mask_draw, detail_draw, normal = TEXTURE_OBJECTS[obj]
    mask_draw(Pen(ImageDraw.Draw(mask), cx, cy, s))
    shadow = Image.new("L", (w, h), 0)
    ImageDraw.Draw(shadow).ellipse([cx - s * 0.45, h * 0.7, cx + s * 0.45, h * 0.8], fill=110)
    bg.paste((60, 50, 40), (0, 0), shadow.filter(ImageFilter.GaussianBlur(h / 60)))
    x0, y0, x1, y1 = mask.getbbox() or (0, 0, w, h)
    pat_seed = rng.random()
    out = []
    for material in (normal, counterfactual):
        img = bg.copy()
        pattern = MATERIALS[material](x1 - x0, y1 - y0, _rng(0, pat_seed, material))
        img.paste(pattern, (x0, y0), mask.crop((x0, y0, x1, y1)))
        edge = mask.filter(ImageFilter.FIND_EDGES).point(lambda v: 255 if v > 60 else 0)
        if w > 500:
            edge = edge.filter(ImageFilter.MaxFilter(3))
        img.paste(OUTLINE, (0, 0), edge)
        dd = ImageDraw.Draw(img)
        detail_draw(Pen(dd, cx, cy, s))
        _label(dd, obj, w * 0.5, h * 0.86, w, h)
        out.append(img)
    return out[0], out[1]


# ---------------------------------------------------------------------------
# Attribute: things with a countable, non-canonical number of parts
# ---------------------------------------------------------------------------
CountDrawer = Callable[[Pen, int, random.Random], None]


def _spread(n: int, lo: float, hi: float) -> list[float]:
    return [(lo + hi) / 2] if n == 1 else [lo + (hi - lo) * i / (n - 1) for i in range(n)]


def _spider(p: Pen, n: int, rng: random.Random) -> None:
    body = _jit((45, 35, 30), rng)
    left = (n + 1) // 2
    for side, k in ((-1, left), (1, n - left)):
        for a in _spread(k, -55, 55):
            r = math.radians(a)
            c, s_ = math.cos(r), math.sin(r)
            p.line([(side * 0.1 * c, 0.1 * s_ - 0.05), (side * 0.3 * c, 0.3 * s_ - 0.2), (side * 0.5 * c, 0.46 * s_ + 0.02)],
                   body, k=1.6)
    p.ellipse(-0.14, -0.17, 0.14, 0.07, body)
    p.ellipse(-0.17, 0.03, 0.17, 0.42, body)
    p.ellipse(-0.07, -0.12, -0.02, -0.07, (220, 40, 40), outline=False)
    p.ellipse(0.02, -0.12, 0.07, -0.07, (220, 40, 40), outline=False)


def _legs_row(p: Pen, n: int, x0: float, x1: float, y0: float, y1: float, color: RGB, width: float) -> None:
    for x in _spread(n, x0, x1):
        p.rect(x - width / 2, y0, x + width / 2, y1, color)


def _dog(p: Pen, n: int, rng: random.Random) -> None:
    fur = _jit((170, 120, 70), rng)
    _legs_row(p, n, -0.4, 0.26, 0.0, 0.45, fur, 0.06)
    p.line([(-0.45, -0.05), (-0.58, -0.3)], fur, k=2.5)
    p.ellipse(-0.5, -0.18, 0.34, 0.14, fur)
    p.ellipse(0.2, -0.42, 0.5, -0.12, fur)
    p.ellipse(0.2, -0.45, 0.3, -0.2, _mix(fur, (0, 0, 0), 0.35))
    p.ellipse(0.41, -0.32, 0.55, -0.2, fur)
    p.ellipse(0.51, -0.3, 0.56, -0.25, (20, 20, 20), outline=False)
    p.ellipse(0.33, -0.34, 0.38, -0.29, (20, 20, 20), outline=False)


def _bird(p: Pen, n: int, rng: random.Random) -> None:
    feathers = _jit((70, 130, 200), rng)
    for x in _spread(n, -0.16, 0.12):
        p.line([(x, 0.1), (x, 0.45), (x + 0.06, 0.47)], (230, 150, 40), k=1.4)
    p.poly([(-0.3, -0.05), (-0.55, 0.05), (-0.5, -0.12)], feathers)
    p.ellipse(-0.34, -0.22, 0.24, 0.16, feathers)
    p.ellipse(0.08, -0.44, 0.34, -0.18, feathers)
    p.poly([(0.32, -0.34), (0.46, -0.3), (0.32, -0.26)], (240, 170, 30))
    p.ellipse(0.22, -0.36, 0.27, -0.31, (20, 20, 20), outline=False)
    p.arc((-0.25, -0.15, 0.12, 0.12), 0, 180, _mix(feathers, (0, 0, 0), 0.4), k=2)


def _hand(p: Pen, n: int, rng: random.Random) -> None:
    skin = _jit((235, 190, 150), rng)
    width = min(0.1, 0.52 / n * 0.68)
    for x in _spread(n, -0.26, 0.26):
        p.rect(x - width / 2, -0.45, x + width / 2, 0.05, skin, r=width / 2)
    p.rect(-0.32, -0.05, 0.32, 0.4, skin, r=0.08)
    p.rect(-0.2, 0.38, 0.2, 0.55, (90, 120, 180))


def _starfish(p: Pen, n: int, rng: random.Random) -> None:
    pts = []
    for i in range(2 * n):
        r = 0.46 if i % 2 == 0 else 0.17
        a = -math.pi / 2 + math.pi * i / n
        pts.append((r * math.cos(a), r * math.sin(a)))
    p.poly(pts, _jit((235, 110, 60), rng))
    for i in range(n):
        a = -math.pi / 2 + 2 * math.pi * i / n
        for r in (0.12, 0.22, 0.32):
            x, y = r * math.cos(a), r * math.sin(a)
            p.ellipse(x - 0.015, y - 0.015, x + 0.015, y + 0.015, (250, 200, 150), outline=False)


def _octopus(p: Pen, n: int, rng: random.Random) -> None:
    skin = _jit((180, 80, 160), rng)
    for i, a in enumerate(_spread(n, 15, 165)):
        r = math.radians(a)
        pts = []
        for k in range(9):
            t = 0.05 + 0.45 * k / 8
            wig = 0.04 * math.sin(k * 1.3 + i)
            pts.append((t * math.cos(r) - wig * math.sin(r), -0.02 + t * math.sin(r) + wig * math.cos(r)))
        p.line(pts, skin, k=3.0)
    p.ellipse(-0.24, -0.48, 0.24, 0.05, skin)
    p.ellipse(-0.12, -0.2, -0.04, -0.12, (250, 250, 250))
    p.ellipse(0.04, -0.2, 0.12, -0.12, (250, 250, 250))


def _chair(p: Pen, n: int, rng: random.Random) -> None:
    wood = _jit((150, 100, 55), rng)
    p.rect(-0.3, -0.48, 0.3, -0.02, wood)
    for x in (-0.15, 0.0, 0.15):
        p.rect(x - 0.03, -0.4, x + 0.03, -0.08, _mix(wood, (255, 255, 255), 0.3), outline=False)
    p.rect(-0.4, 0.0, 0.4, 0.08, wood)
    _legs_row(p, n, -0.36, 0.36, 0.08, 0.5, wood, 0.05)


def _car(p: Pen, n: int, rng: random.Random) -> None:
    paint = _jit((200, 40, 45), rng)
    length = 0.55 + 0.07 * max(0, n - 4)
    p.poly([(-0.3, -0.05), (-0.18, -0.3), (0.2, -0.3), (0.35, -0.05)], paint)
    p.poly([(-0.22, -0.07), (-0.14, -0.25), (0.0, -0.25), (0.0, -0.07)], (180, 215, 240))
    p.poly([(0.04, -0.07), (0.04, -0.25), (0.17, -0.25), (0.28, -0.07)], (180, 215, 240))
    p.rect(-length, -0.07, length, 0.22, paint, r=0.06)
    rad = min(0.11, (2 * length - 0.1) / n * 0.4)
    for x in _spread(n, -length + 0.1, length - 0.1):
        p.ellipse(x - rad, 0.22 - rad, x + rad, 0.22 + rad, (30, 30, 32))
        p.ellipse(x - rad * 0.45, 0.22 - rad * 0.45, x + rad * 0.45, 0.22 + rad * 0.45, (180, 180, 185))


def _ant(p: Pen, n: int, rng: random.Random) -> None:
    shell = _jit((60, 35, 25), rng)
    for x in _spread(n, -0.32, 0.32):
        p.line([(x, 0.0), (x + 0.06, 0.2), (x - 0.02, 0.42)], shell, k=1.5)
    p.ellipse(-0.5, -0.2, -0.14, 0.12, shell)
    p.ellipse(-0.16, -0.12, 0.14, 0.08, shell)
    p.ellipse(0.12, -0.2, 0.36, 0.04, shell)
    p.line([(0.3, -0.16), (0.42, -0.4)], shell, k=1.2)
    p.line([(0.26, -0.18), (0.3, -0.45)], shell, k=1.2)


def _clover(p: Pen, n: int, rng: random.Random) -> None:
    green = _jit((60, 160, 70), rng)
    p.line([(0.0, -0.12), (0.05, 0.25), (0.02, 0.5)], (70, 120, 50), k=2.5)
    ring = 0.22
    rl = min(0.15, ring * math.sin(math.pi / n) * 0.92) if n > 1 else 0.15
    offset = math.pi / n if n % 2 == 0 else 0.0  # even counts: no leaf straight down over the stem
    for i in range(n):
        a = -math.pi / 2 + 2 * math.pi * i / n + offset
        x, y = ring * math.cos(a), -0.12 + ring * math.sin(a)
        p.line([(0.0, -0.12), (x, y)], _mix(green, (0, 0, 0), 0.3), k=1.5)
    for i in range(n):
        a = -math.pi / 2 + 2 * math.pi * i / n + offset
        x, y = ring * math.cos(a), -0.12 + ring * math.sin(a)
        p.ellipse(x - rl, y - rl, x + rl, y + rl, green)
    p.ellipse(-0.03, -0.15, 0.03, -0.09, _mix(green, (0, 0, 0), 0.3), outline=False)


def _cat(p: Pen, n: int, rng: random.Random) -> None:
    fur = _jit((150, 150, 155), rng)
    p.poly([(-0.38, -0.12), (-0.34, -0.5), (-0.1, -0.28)], fur)
    p.poly([(0.38, -0.12), (0.34, -0.5), (0.1, -0.28)], fur)
    p.ellipse(-0.42, -0.35, 0.42, 0.45, fur)
    r = min(0.07, 0.6 / n * 0.3)
    for x in _spread(n, -0.24, 0.24):
        p.ellipse(x - r, -0.08 - r, x + r, -0.08 + r, (140, 200, 90))
        p.ellipse(x - r * 0.3, -0.08 - r * 0.8, x + r * 0.3, -0.08 + r * 0.8, (15, 15, 15), outline=False)
    p.poly([(-0.05, 0.1), (0.05, 0.1), (0.0, 0.16)], (230, 130, 150))
    for sy in (0.14, 0.2):
        p.line([(-0.12, sy), (-0.45, sy - 0.04)], (40, 40, 40), k=0.6)
        p.line([(0.12, sy), (0.45, sy - 0.04)], (40, 40, 40), k=0.6)


#: object -> (part noun, canonical count, drawn count range (inclusive), drawer)
ATTRIBUTE_OBJECTS: dict[str, tuple[str, int, tuple[int, int], CountDrawer]] = {
    "spider": ("legs", 8, (4, 12), _spider),
    "dog": ("legs", 4, (3, 7), _dog),
    "bird": ("legs", 2, (1, 5), _bird),
    "hand": ("fingers", 5, (3, 8), _hand),
    "starfish": ("arms", 5, (3, 9), _starfish),
    "octopus": ("arms", 8, (5, 11), _octopus),
    "chair": ("legs", 4, (3, 7), _chair),
    "car": ("wheels", 4, (2, 7), _car),
    "ant": ("legs", 6, (3, 10), _ant),
    "clover": ("leaves", 3, (2, 7), _clover),
    "cat": ("eyes", 2, (1, 5), _cat),
}


def _attribute_image(sc: Scale, rng: random.Random, obj: str, n: int) -> Image.Image:
    w, h = sc.width, sc.height
    img = Image.new("RGB", (w, h))
    d = ImageDraw.Draw(img)
    _vgradient(d, (0, 0, w, h * 0.78), _jit((215, 232, 215), rng, 20), (236, 240, 230))
    d.rectangle([0, h * 0.78, w, h], fill=_jit((160, 185, 120), rng))
    s = h * 0.72
    ATTRIBUTE_OBJECTS[obj][3](Pen(d, w * rng.uniform(0.45, 0.55), h * 0.47, s), n, rng)
    return img


# ---------------------------------------------------------------------------
# Language: the wording suggests an answer the image does not show
# ---------------------------------------------------------------------------
SceneDrawer = Callable[[ImageDraw.ImageDraw, Pen, random.Random], None]


def _room(d: ImageDraw.ImageDraw, w: int, h: int, rng: random.Random, table: bool = True) -> None:
    d.rectangle([0, 0, w, h], fill=_jit((226, 214, 196), rng))
    if table:
        d.rectangle([0, h * 0.72, w, h], fill=_jit((140, 100, 65), rng))
        d.line([0, h * 0.72, w, h * 0.72], fill=(95, 65, 40), width=max(1, h // 120))


def _gift(d: ImageDraw.ImageDraw, p: Pen, rng: random.Random) -> None:
    p.rect(-0.38, -0.15, 0.38, 0.45, _jit((200, 50, 70), rng))
    p.rect(-0.42, -0.27, 0.42, -0.13, _jit((210, 60, 80), rng))
    p.rect(-0.05, -0.27, 0.05, 0.45, (250, 210, 70))
    p.ellipse(-0.2, -0.45, 0.0, -0.25, (250, 210, 70))
    p.ellipse(0.0, -0.45, 0.2, -0.25, (250, 210, 70))


def _clock(d: ImageDraw.ImageDraw, p: Pen, rng: random.Random) -> None:
    p.ellipse(-0.45, -0.45, 0.45, 0.45, (250, 250, 245))
    for k in range(12):
        a = 2 * math.pi * k / 12
        p.line([(0.36 * math.cos(a), 0.36 * math.sin(a)), (0.42 * math.cos(a), 0.42 * math.sin(a))], (40, 40, 40), k=1.5)


def _bakery_door(d: ImageDraw.ImageDraw, p: Pen, rng: random.Random) -> None:
    p.rect(-0.7, -0.55, 0.7, -0.38, _jit((160, 60, 40), rng), outline=False)
    p.text(0.0, -0.465, "BAKERY", 0.11, (250, 240, 220))
    p.rect(-0.28, -0.33, 0.28, 0.55, (110, 70, 40))
    p.rect(-0.2, -0.25, 0.2, 0.1, (190, 220, 235))
    p.line([(-0.1, -0.25), (0.0, -0.35), (0.1, -0.25)], (60, 60, 60))
    p.rect(-0.14, -0.2, 0.14, -0.02, (252, 252, 248))
    p.ellipse(0.17, 0.15, 0.23, 0.21, (220, 190, 60))


def _covered_mug(d: ImageDraw.ImageDraw, p: Pen, rng: random.Random) -> None:
    color = _jit((60, 110, 160), rng)
    p.d.ellipse(p.box(0.18, -0.15, 0.48, 0.22), outline=OUTLINE, width=round(p.s * 0.06))
    p.rect(-0.3, -0.25, 0.3, 0.45, color, r=0.05)
    p.rect(-0.34, -0.33, 0.34, -0.22, (40, 40, 45), r=0.03)
    for x in (-0.12, 0.0, 0.12):
        p.arc((x - 0.05, -0.55, x + 0.05, -0.38), 90, 270, (160, 160, 160))


def _closed_book(d: ImageDraw.ImageDraw, p: Pen, rng: random.Random) -> None:
    p.poly([(-0.45, 0.12), (0.3, 0.12), (0.45, 0.35), (-0.3, 0.35)], (245, 240, 225))
    p.poly([(-0.45, 0.05), (0.3, 0.05), (0.45, 0.28), (-0.3, 0.28)], _jit((40, 70, 120), rng))


def _envelope(d: ImageDraw.ImageDraw, p: Pen, rng: random.Random) -> None:
    p.rect(-0.45, -0.25, 0.45, 0.3, _jit((245, 235, 215), rng))
    p.poly([(-0.45, -0.25), (0.45, -0.25), (0.0, 0.08)], (232, 220, 200))
    p.ellipse(-0.06, 0.0, 0.06, 0.12, (200, 30, 50))


def _thermometer(d: ImageDraw.ImageDraw, p: Pen, rng: random.Random) -> None:
    p.rect(-0.08, -0.5, 0.08, 0.3, (245, 248, 252), r=0.08)
    p.ellipse(-0.13, 0.25, 0.13, 0.5, (220, 40, 40))
    p.rect(-0.03, -0.1, 0.03, 0.3, (220, 40, 40), outline=False)
    p.ellipse(0.4, -0.6, 0.6, -0.4, (255, 215, 70))


def _closed_door(d: ImageDraw.ImageDraw, p: Pen, rng: random.Random) -> None:
    p.rect(-0.3, -0.55, 0.3, 0.5, _jit((170, 120, 75), rng))
    p.rect(-0.22, -0.45, 0.22, -0.05, _jit((155, 108, 66), rng))
    p.rect(-0.22, 0.05, 0.22, 0.42, (155, 108, 66))
    p.ellipse(0.18, -0.02, 0.25, 0.05, (220, 190, 60))


def _person_back(d: ImageDraw.ImageDraw, p: Pen, rng: random.Random) -> None:
    p.rect(-0.42, 0.05, 0.42, 0.6, _jit((80, 120, 170), rng), r=0.18)
    p.rect(-0.08, -0.08, 0.08, 0.1, (230, 185, 150))
    p.ellipse(-0.2, -0.5, 0.2, -0.02, _jit((90, 60, 35), rng))
    p.ellipse(-0.22, -0.2, 0.22, 0.18, (90, 60, 35))


def _jar(d: ImageDraw.ImageDraw, p: Pen, rng: random.Random) -> None:
    p.rect(-0.26, -0.28, 0.26, 0.45, _jit((230, 225, 210), rng), r=0.1)
    p.rect(-0.22, -0.4, 0.22, -0.26, _jit((180, 60, 50), rng), r=0.02)


def _phone(d: ImageDraw.ImageDraw, p: Pen, rng: random.Random) -> None:
    p.rect(-0.2, -0.45, 0.2, 0.42, (35, 35, 40), r=0.05)
    p.rect(-0.17, -0.39, 0.17, 0.36, (12, 12, 15), outline=False)


def _cup_over_die(d: ImageDraw.ImageDraw, p: Pen, rng: random.Random) -> None:
    p.poly([(-0.18, -0.3), (0.18, -0.3), (0.3, 0.4), (-0.3, 0.4)], _jit((90, 70, 150), rng))
    p.rect(-0.32, 0.38, 0.32, 0.44, (70, 55, 120))


#: (drawer, question, option the wording suggests, two other distractors)
LANGUAGE_ITEMS: tuple[tuple[SceneDrawer, str, str, tuple[str, str]], ...] = (
    (_gift, "Which toy is inside this birthday present, the teddy bear the child asked for?", "a teddy bear",
     ("a toy train", "a jigsaw puzzle")),
    (_clock, "It is lunchtime in this kitchen. What time does the wall clock show?", "12:00", ("3:30", "9:15")),
    (_bakery_door, "The bakery has just opened for the day. What word is written on the sign on its door?", "OPEN",
     ("CLOSED", "SALE")),
    (_covered_mug, "Most people drink coffee in the morning. What drink is in this covered mug?", "coffee",
     ("tea", "hot chocolate")),
    (_closed_book, "This famous Shakespeare tragedy lies on the table. What is the title of the book?", "Hamlet",
     ("Macbeth", "King Lear")),
    (_envelope, "This is a Valentine's Day envelope. What does the card sealed inside it say?", "I love you",
     ("Happy birthday", "Get well soon")),
    (_thermometer, "It is a hot summer afternoon. What temperature does the thermometer read?", "35 degrees",
     ("10 degrees", "minus 5 degrees")),
    (_closed_door, "Bedrooms always have a bed. What piece of furniture stands right behind this closed door?",
     "a bed", ("a piano", "a bathtub")),
    (_person_back, "The woman in this photo has just won the lottery. What is the expression on her face?",
     "a wide smile", ("tears of sadness", "an angry frown")),
    (_jar, "Strawberry is the most popular jam. What flavour is the jam in this unlabelled jar?", "strawberry",
     ("apricot", "blueberry")),
    (_phone, "Phones show the time on the lock screen. What time is displayed on this phone?", "10:09",
     ("7:45", "18:30")),
    (_cup_over_die, "Gamblers hope for a six. What number is on top of the die hidden under this cup?", "6",
     ("1", "3")),
)
UNKNOWN_TEXTS: tuple[str, ...] = (
    "Cannot be determined from the image",
    "It is not possible to tell from the image",
    "The image does not show this",
)
_WALL_ITEMS = {_clock, _bakery_door, _closed_door}


def _language_image(sc: Scale, rng: random.Random, drawer: SceneDrawer) -> Image.Image:
    w, h = sc.width, sc.height
    img = Image.new("RGB", (w, h))
    d = ImageDraw.Draw(img)
    wall = drawer in _WALL_ITEMS
    if drawer is _thermometer:
        _vgradient(d, (0, 0, w, h), (110, 170, 235), (200, 225, 245))
        d.rectangle([0, h * 0.8, w, h], fill=(110, 170, 80))
    else:
        _room(d, w, h, rng, table=not wall)
    s = h * (0.75 if wall else 0.6)
    cy = h * (0.48 if wall else 0.72 - 0.45 * 0.6)
    drawer(d, Pen(d, w * rng.uniform(0.42, 0.58), cy, s), rng)
    return img


# ---------------------------------------------------------------------------
# Rows
# ---------------------------------------------------------------------------
@dataclass
class _Item:
    """One image and the rows (questions) that refer to it."""

    path: str  # relative to data/<split>/
    image: Image.Image
    rows: list[dict[str, Any]]


def _num(i: int) -> str:
    return f"{i + 1:03d}"


def _context_items(sc: Scale, seed: int) -> Iterator[_Item]:
    split, scenes = "context", list(SCENES)
    for i in range(sc.pairs):
        pair_id = f"{split}_{_num(i)}"
        rng = _rng(seed, pair_id)
        scene = scenes[i % len(scenes)]
        _, sources, targets = SCENES[scene]
        source, target = rng.choice(sources), rng.choice(targets)
        base, edited = _context_images(sc, rng, scene, source, target)
        extra = {"scene": scene, "source_object": source, "target_object": target}

        def question(probe: str) -> str:
            obj = source if probe.endswith("source") else target
            return f"Is there a {obj} visible in this {scene}?"

        yield from _pair_items(split, pair_id, base, edited, question, extra)


def _texture_items(sc: Scale, seed: int) -> Iterator[_Item]:
    split, objects = "texture", list(TEXTURE_OBJECTS)
    for i in range(sc.pairs):
        pair_id = f"{split}_{_num(i)}"
        rng = _rng(seed, pair_id)
        obj = objects[i % len(objects)]
        normal = TEXTURE_OBJECTS[obj][2]
        counterfactual = rng.choice([m for m in COUNTERFACTUAL_MATERIALS if m != normal])
        base, edited = _texture_images(sc, rng, obj, counterfactual)
        extra = {"object": obj, "normal_material": normal, "counterfactual_material": counterfactual}

        def question(probe: str) -> str:
            material = normal if probe.endswith("normal") else counterfactual
            return f"Is the surface of the {obj} in this image made of {material}?"

        yield from _pair_items(split, pair_id, base, edited, question, extra)


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


def _attribute_items(sc: Scale, seed: int) -> Iterator[_Item]:
    split, objects = "attribute", list(ATTRIBUTE_OBJECTS)
    for i in range(sc.singles):
        qid = f"{split}_{_num(i)}"
        rng = _rng(seed, qid)
        obj = objects[i % len(objects)]
        part, canonical, (lo, hi), _ = ATTRIBUTE_OBJECTS[obj]
        n = rng.choice([k for k in range(lo, hi + 1) if k != canonical])
        row = {
            C.COL_ID: qid,
            C.COL_SUBSET: split,
            C.COL_QUESTION: f"How many {part} does the {obj} in this image have?",
            C.COL_ANSWER: str(n),
            C.COL_EVAL_TYPE: C.SPLIT_EVAL_TYPE[split],
            C.COL_QUESTION_TYPE: "count",
            "object": obj,
            "part": part,
            C.COL_CANONICAL_COUNT: canonical,
        }
        yield _Item(f"{IMAGES_DIR}/{qid}.jpg", _attribute_image(sc, rng, obj, n), [row])


def _language_items(sc: Scale, seed: int) -> Iterator[_Item]:
    split = "language"
    for i in range(sc.singles):
        qid = f"{split}_{_num(i)}"
        rng = _rng(seed, qid)
        drawer, question, suggested, distractors = LANGUAGE_ITEMS[i % len(LANGUAGE_ITEMS)]
        unknown = rng.choice(UNKNOWN_TEXTS)
        texts = [suggested, *distractors, unknown]
        rng.shuffle(texts)
        options = dict(zip(C.OPTION_LETTERS, texts))
        letter = {text: key for key, text in options.items()}
        row = {
            C.COL_ID: qid,
            C.COL_SUBSET: split,
            C.COL_QUESTION: question,
            C.COL_OPTIONS: options,
            C.COL_ANSWER: letter[unknown],
            C.COL_ANSWER_TEXT: unknown,
            C.COL_EVAL_TYPE: C.SPLIT_EVAL_TYPE[split],
            C.COL_QUESTION_TYPE: "multiple_choice",
            C.COL_SUGGESTED_OPTION: letter[suggested],
            C.COL_UNKNOWN_OPTION: letter[unknown],
        }
        yield _Item(f"{IMAGES_DIR}/{qid}.jpg", _language_image(sc, rng, drawer), [row])


_SPLIT_ITEMS: dict[str, Callable[[Scale, int], Iterator[_Item]]] = {
    "context": _context_items,
    "texture": _texture_items,
    "attribute": _attribute_items,
    "language": _language_items,
}


# ---------------------------------------------------------------------------
# The dataset card and the directory
# ---------------------------------------------------------------------------
def card_text(scale: str, seed: int, counts: dict[str, tuple[int, int]]) -> str:
    """The dataset card: YAML front matter with one config per split, then a short description."""
    lines = [
        "---",
        "license: cc-by-nc-4.0",
        "pretty_name: SABRE-Prior synthetic demo",
        "tags:",
        f"- {DEMO_TAG}",
        "- synthetic",
        "task_categories:",
        "- visual-question-answering",
        "configs:",
    ]
    for split in C.SPLITS:
        lines += [
            f"- config_name: {split}",
            "  drop_labels: true",
            "  data_files:",
            f"  - split: {C.HUB_SPLIT}",
            f"    path: data/{split}/**",
        ]
    lines += [
        "---",
        "",
        "# SABRE-Prior synthetic demo",
        "",
        "This is a **synthetic demo**, not the SABRE-Prior benchmark. Its images are simple drawings made by",
        f"`sabre demo-data --scale {scale} --seed {seed}`; it only mimics the layout, the row fields and the",
        "probe structure of the real dataset so that the pipeline can run without network access or a token.",
        f"The real data is gated at {HUB_URL} (CC BY-NC 4.0, evaluation only).",
        "",
        "| Split | Images | Questions |",
        "|:--|--:|--:|",
    ]
    lines += [f"| {split} | {counts[split][0]} | {counts[split][1]} |" for split in C.SPLITS]
    lines += [
        "",
        "Load one split with `datasets.load_dataset(\"<this directory>\", \"<split>\", split=\"test\")`.",
        "",
    ]
    return "\n".join(lines)


def is_demo_dir(path: Path) -> bool:
    card = path / "README.md"
    try:
        return card.is_file() and f"- {DEMO_TAG}" in card.read_text(encoding="utf-8")
    except OSError:
        return False


def _check_replaceable(output: Path) -> None:
    if not output.exists():
        return
    if not output.is_dir():
        raise DataError(f"{output}: exists and is not a directory; choose another --output")
    if any(output.iterdir()) and not is_demo_dir(output):
        raise DataError(
            f"{output}: refusing to replace a non-empty directory that is not a generated demo "
            f"(its README.md lacks the '{DEMO_TAG}' tag); choose another --output or remove it"
        )


def _write_split(root: Path, split: str, sc: Scale, seed: int) -> tuple[int, int]:
    split_dir = root / "data" / split
    (split_dir / IMAGES_DIR).mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    n_images = 0
    for item in _SPLIT_ITEMS[split](sc, seed):
        (split_dir / item.path).write_bytes(_encode(item.image, sc, seed, f"{split}/{item.path}"))
        n_images += 1
        for row in item.rows:
            lines.append(json.dumps({C.COL_FILE_NAME: item.path, **row}, sort_keys=True, ensure_ascii=False) + "\n")
    (split_dir / "metadata.jsonl").write_text("".join(lines), encoding="utf-8")
    return n_images, len(lines)


def generate(output: Path, scale: str = "small", seed: int = 0) -> str:
    """Write the demo benchmark to ``output`` (replacing a previous demo atomically); return a summary line."""
    if scale not in SCALES:
        raise ConfigError(f"demo scale must be one of {', '.join(SCALES)}, got {scale!r}")
    sc = SCALES[scale]
    output = Path(output)
    _check_replaceable(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{output.name}.", suffix=".tmp", dir=output.parent))
    try:
        os.chmod(tmp, 0o755)
        counts = {split: _write_split(tmp, split, sc, seed) for split in C.SPLITS}
        (tmp / "README.md").write_text(card_text(scale, seed, counts), encoding="utf-8")
        _replace_dir(tmp, output)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    parts = ", ".join(f"{s} {counts[s][0]} images/{counts[s][1]} questions" for s in C.SPLITS)
    images, questions = sum(c[0] for c in counts.values()), sum(c[1] for c in counts.values())
    return f"demo benchmark ({scale}, seed {seed}) -> {output}: {parts} (total {images} images, {questions} questions)"


def _replace_dir(new: Path, output: Path) -> None:
    if not output.exists():
        os.replace(new, output)
        return
    old = output.with_name(f".{output.name}.old-{os.getpid()}")
    os.replace(output, old)
    os.replace(new, output)
    shutil.rmtree(old, ignore_errors=True)
