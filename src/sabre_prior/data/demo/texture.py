"""The texture split: an object filled with its normal material (base) or a counterfactual one (edited)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator

from PIL import Image, ImageDraw, ImageFilter

from .draw import OUTLINE, RGB, Pen, _jit, _label, _mix, _vgradient
from .items import Scale, _Item, _numbered, _pair_items, _rng

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


def _texture_items(sc: Scale, seed: int) -> Iterator[_Item]:
    split = "texture"
    for pair_id, rng, obj in _numbered(split, sc.pairs, seed, list(TEXTURE_OBJECTS)):
        normal = TEXTURE_OBJECTS[obj][2]
        counterfactual = rng.choice([m for m in COUNTERFACTUAL_MATERIALS if m != normal])
        base, edited = _texture_images(sc, rng, obj, counterfactual)
        extra = {"object": obj, "normal_material": normal, "counterfactual_material": counterfactual}

        def question(probe: str) -> str:
            material = normal if probe.endswith("normal") else counterfactual
            return f"Is the surface of the {obj} in this image made of {material}?"

        yield from _pair_items(split, pair_id, base, edited, question, extra)
