"""The dataset card and the directory: :func:`generate` writes the demo in the hub repo layout."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from ... import contracts as C
from ...errors import ConfigError, DataError
from ...io_utils import TEMP_PREFIX
from .attribute import _attribute_items
from .context import _context_items
from .items import IMAGES_DIR, SCALES, Scale, _encode, _Item
from .language import _language_items
from .texture import _texture_items

#: Tag in the card that marks a directory as a generated demo (safe to replace).
DEMO_TAG = "sabre-prior-demo"
HUB_URL = f"https://huggingface.co/datasets/{C.HUB_REPO_ID}"


_SPLIT_ITEMS: dict[str, Callable[[Scale, int], Iterator[_Item]]] = {
    "context": _context_items,
    "texture": _texture_items,
    "attribute": _attribute_items,
    "language": _language_items,
}


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
    tmp = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{output.name}.", suffix=".tmp", dir=output.parent))
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
