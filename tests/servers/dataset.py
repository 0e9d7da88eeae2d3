"""Small synthetic splits in the pipeline's Parquet format (for engine and kill tests).

Each image is a distinct, valid JPEG; questions follow the real splits' shapes
(four probes per pair, counts, four options), so the real prompt templates and
eval types apply.
"""

from __future__ import annotations

import io
import random
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

_PROBES = {
    "context": [("base_source", "base", "yes"), ("base_target", "base", "no"), ("edited_source", "edited", "no"), ("edited_target", "edited", "yes")],
    "texture": [
        ("base_normal", "base", "yes"),
        ("base_counterfactual", "base", "no"),
        ("edited_normal", "edited", "no"),
        ("edited_counterfactual", "edited", "yes"),
    ],
}


def _seed(*parts: object) -> int:
    return zlib.crc32(repr(parts).encode())


def jpeg(seed: int, size: tuple[int, int] = (64, 48), quality: int = 85) -> bytes:
    """A distinct JPEG for ``seed`` (noise over a colour field: sizes like a photo's at scale)."""
    from PIL import Image

    rng = random.Random(seed)
    w, h = size
    base = Image.new("RGB", size, (rng.randrange(256), rng.randrange(256), rng.randrange(256)))
    noise = Image.frombytes("RGB", size, rng.randbytes(w * h * 3))
    img = Image.blend(base, noise, 0.35)
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


def rows_for(split: str, n: int, *, seed: int = 0, image_size: tuple[int, int] = (64, 48)) -> list[dict[str, Any]]:
    """``n`` questions of ``split`` (paired splits: rounded down to whole pairs of four)."""
    rows: list[dict[str, Any]] = []
    if split in _PROBES:
        for p in range(max(1, n // 4)):
            pair = f"{split}_{p:03d}"
            images = {role: jpeg(_seed(seed, split, p, role), image_size) for role in ("base", "edited")}
            for probe, role, answer in _PROBES[split]:
                obj = "toaster" if probe.endswith(("source", "normal")) else "cactus"
                rows.append(
                    {
                        "id": f"{pair}__{probe}",
                        "image": {"bytes": images[role], "path": f"{pair}_{role}.jpg"},
                        "subset": split,
                        "question": f"Is there a {obj} visible in this kitchen?",
                        "answer": answer,
                        "eval_type": "yes_no_exact",
                        "pair_id": pair,
                        "probe": probe,
                    }
                )
    elif split == "attribute":
        for i in range(n):
            rows.append(
                {
                    "id": f"attribute_{i:03d}",
                    "image": {"bytes": jpeg(_seed(seed, split, i), image_size), "path": f"attribute_{i:03d}.jpg"},
                    "subset": split,
                    "question": "How many legs does the animal in the image have?",
                    "answer": str(3 + i % 4),
                    "eval_type": "count_exact",
                }
            )
    elif split == "language":
        for i in range(n):
            rows.append(
                {
                    "id": f"language_{i:03d}",
                    "image": {"bytes": jpeg(_seed(seed, split, i), image_size), "path": f"language_{i:03d}.jpg"},
                    "subset": split,
                    "question": "What brand is the famous drink on the table?",
                    "answer": "D",
                    "eval_type": "multiple_choice_exact",
                    "options": ["Cola", "Lemonade", "Water", "Cannot be determined from the image"],
                    "answer_text": "Cannot be determined from the image",
                }
            )
    else:
        raise ValueError(split)
    return rows


def write_split(path: str | Path, split: str, n: int, *, seed: int = 0, image_size: tuple[int, int] = (64, 48)) -> list[dict[str, Any]]:
    """Write a self-contained Parquet split; returns its rows (with image bytes)."""
    rows = rows_for(split, n, seed=seed, image_size=image_size)
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), p)
    return rows


def write_mirror(project: Path, sizes: dict[str, int], *, seed: int = 0) -> dict[str, Path]:
    """Point ``project``'s ``dataset.source`` at a local copy of the dataset holding these splits
    (``{split: questions}``, rows of :func:`rows_for`), written beside the project as ``push_to_hub``
    writes one (a Parquet shard per split, the demo's card pointing at them): the pipeline's own fetch
    then reads exactly these questions (a Parquet file put into data/parquet by hand is not what the
    fetch job made, so the pipeline would make it again). Returns each split's shard."""
    import yaml

    from sabre_prior.data.demo import generate

    mirror = Path(project).parent / f"{Path(project).name}-mirror"
    generate(mirror.parent / f"{mirror.name}-demo", scale="small", seed=0)
    text = (mirror.parent / f"{mirror.name}-demo" / "README.md").read_text(encoding="utf-8")
    _, front, body = text.split("---\n", 2)
    meta = yaml.safe_load(front)
    # only the splits written (datasets infers a card's builder from its configs' files)
    meta["configs"] = [
        {**c, "data_files": [{"split": "test", "path": f"{c['config_name']}/test-*"}]}
        for c in meta["configs"] if c["config_name"] in sizes
    ]  # fmt: skip
    shards = {}
    for split, n in sizes.items():
        shards[split] = mirror / split / "test-00000-of-00001.parquet"
        write_split(shards[split], split, n, seed=seed)
    (mirror / "README.md").write_text("---\n" + yaml.safe_dump(meta, sort_keys=False) + "---\n" + body, encoding="utf-8")
    params_path = Path(project) / "params.yaml"
    params = yaml.safe_load(params_path.read_text(encoding="utf-8"))
    params["dataset"]["source"] = str(mirror)
    params["splits"] = list(sizes)
    params_path.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    return shards
