"""The language split: the wording suggests an answer that the image does not show.

The correct option says it cannot be determined; ``suggested_option``/``unknown_option`` hold
the two letters and ``options`` is a letter-keyed mapping ``{"A": ..., "D": ...}``."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator

from PIL import Image, ImageDraw

from ... import contracts as C
from .draw import OUTLINE, Pen, _jit, _vgradient
from .items import IMAGES_DIR, Scale, _Item, _numbered

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


def _language_items(sc: Scale, seed: int) -> Iterator[_Item]:
    split = "language"
    for qid, rng, (drawer, question, suggested, distractors) in _numbered(split, sc.singles, seed, LANGUAGE_ITEMS):
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
