"""The context split: a familiar scene with one labelled object.

The base image holds a context-consistent *source* object, the edited image the unexpected
*target* at the same place."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator

from PIL import Image, ImageDraw

from .draw import RGB, Pen, _jit, _label, _mix, _vgradient
from .items import Scale, _Item, _numbered, _pair_items, _rng

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


def _context_items(sc: Scale, seed: int) -> Iterator[_Item]:
    split = "context"
    for pair_id, rng, scene in _numbered(split, sc.pairs, seed, list(SCENES)):
        _, sources, targets = SCENES[scene]
        source, target = rng.choice(sources), rng.choice(targets)
        base, edited = _context_images(sc, rng, scene, source, target)
        extra = {"scene": scene, "source_object": source, "target_object": target}

        def question(probe: str) -> str:
            obj = source if probe.endswith("source") else target
            return f"Is there a {obj} visible in this {scene}?"

        yield from _pair_items(split, pair_id, base, edited, question, extra)
