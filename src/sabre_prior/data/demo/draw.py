"""Drawing primitives of the demo images: colours, fonts and the :class:`Pen`."""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from typing import Any

from PIL import ImageDraw, ImageFont

RGB = tuple[int, int, int]
OUTLINE: RGB = (45, 40, 38)


@functools.lru_cache(maxsize=32)
def _font(px: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=max(8, px))


def _jit(color: RGB, rng: random.Random, amount: int = 14) -> RGB:
    return tuple(max(0, min(255, c + rng.randint(-amount, amount))) for c in color)  # type: ignore[return-value]


def _mix(a: RGB, b: RGB, t: float) -> RGB:
    return tuple(round(x + (y - x) * t) for x, y in zip(a, b))  # type: ignore[return-value]



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
