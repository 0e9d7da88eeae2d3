"""The attribute split: an animal or object drawn with a non-canonical number of parts.

``canonical_count`` holds the count a world prior would give (a spider drawn with 6 legs: 8)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator

from PIL import Image, ImageDraw

from ... import contracts as C
from .draw import RGB, Pen, _jit, _mix, _vgradient
from .items import IMAGES_DIR, Scale, _Item, _numbered

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


def _attribute_items(sc: Scale, seed: int) -> Iterator[_Item]:
    split = "attribute"
    for qid, rng, obj in _numbered(split, sc.singles, seed, list(ATTRIBUTE_OBJECTS)):
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
