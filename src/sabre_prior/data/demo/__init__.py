"""The embedded demo benchmark: a synthetic, procedurally drawn stand-in for SABRE-Prior.

:func:`generate` writes a local copy of the hub dataset repo layout::

    README.md                      dataset card; YAML front matter declares one config per split
    data/<split>/metadata.jsonl    one row per question: file_name + the row fields (docs/benchmark.md)
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

Modules: :mod:`.draw` (colours, fonts, the :class:`~.draw.Pen`), :mod:`.items` (scales, seeded
randomness, JPEG encoding, the item and row shapes), one generator per split (:mod:`.context`,
:mod:`.texture`, :mod:`.attribute`, :mod:`.language`) and :mod:`.writer` (the dataset card and
the directory).
"""

from __future__ import annotations

from .attribute import ATTRIBUTE_OBJECTS
from .context import OBJECTS, SCENES
from .items import IMAGES_DIR, SCALES, Scale
from .language import LANGUAGE_ITEMS, UNKNOWN_TEXTS
from .texture import COUNTERFACTUAL_MATERIALS, MATERIALS, TEXTURE_OBJECTS
from .writer import DEMO_TAG, HUB_URL, card_text, generate, is_demo_dir

__all__ = [
    "ATTRIBUTE_OBJECTS",
    "COUNTERFACTUAL_MATERIALS",
    "DEMO_TAG",
    "HUB_URL",
    "IMAGES_DIR",
    "LANGUAGE_ITEMS",
    "MATERIALS",
    "OBJECTS",
    "SCALES",
    "SCENES",
    "Scale",
    "TEXTURE_OBJECTS",
    "UNKNOWN_TEXTS",
    "card_text",
    "generate",
    "is_demo_dir",
]
