"""Local mirrors of the hub repo in every layout a real copy may have, built from the demo.

The demo writes the layout of the dataset card (docs/benchmark.md): one ImageFolder per split
(``data/<split>/metadata.jsonl`` + images), options as a letter-keyed mapping. The other layouts
are what a mirror made with the usual tools would hold:

* ``csv``: ``metadata.csv`` (an ImageFolder metadata file the ``datasets`` loader reads, see
  https://huggingface.co/docs/datasets/image_dataset#imagefolder); a list column arrives as text,
  here JSON text of a list.
* ``csv_delimited``: ``metadata.csv`` with the options as ``A. red | B. blue | ...`` (the documented
  delimiter form, lettered texts).
* ``parquet_metadata``: ``metadata.parquet`` (also an ImageFolder metadata file), options as a list.
* ``nested``: ``metadata.jsonl`` with the images in nested folders (one per pair or item), options
  as a list of texts that already carry their letter (``"A. red"``).
* ``shards``: Parquet shards as ``Dataset.push_to_hub`` writes them: ``<split>/test-0000i-of-0000n.parquet``
  with the image bytes embedded (``embed_table_storage`` over each shard, as in datasets'
  ``arrow_dataset.py`` ``_push_parquet_shards_to_hub``) and a card whose ``data_files`` point at
  ``<split>/test-*``.

Every layout keeps the demo's card tag (``sabre-prior-demo``), so no official count check applies,
unless ``demo_tag=False``.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

LAYOUTS = ("jsonl", "csv", "csv_delimited", "parquet_metadata", "nested", "shards")
SPLITS = ("context", "texture", "attribute", "language")


def _rows(split_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (split_dir / "metadata.jsonl").read_text(encoding="utf-8").splitlines()]


def _lettered(options: dict[str, str]) -> list[str]:
    return [f"{k}. {options[k]}" for k in sorted(options)]


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _rewrite_card(root: Path, pattern: str, demo_tag: bool) -> None:
    card = (root / "README.md").read_text(encoding="utf-8")
    for split in SPLITS:
        card = card.replace(f"path: data/{split}/**", "path: " + pattern.format(split=split))
    if not demo_tag:
        card = card.replace("- sabre-prior-demo\n", "").replace("pretty_name: SABRE-Prior synthetic demo", "pretty_name: SABRE-Prior")
    (root / "README.md").write_text(card, encoding="utf-8")


def _shards(root: Path, split: str, n_shards: int = 2) -> None:
    import datasets
    from datasets.table import embed_table_storage

    ds = datasets.load_dataset(str(root), split, split="test", cache_dir=str(root.parent / f".cache-{root.name}"))
    folder = root / split
    folder.mkdir()
    for i in range(n_shards):
        shard = ds.shard(n_shards, i, contiguous=True).with_format("arrow")
        shard = shard.map(embed_table_storage, batched=True)
        shard.to_parquet(str(folder / f"test-{i:05d}-of-{n_shards:05d}.parquet"))
    del ds


def write_layout(demo: Path, dest: Path, layout: str, *, demo_tag: bool = True) -> Path:
    """A copy of ``demo`` at ``dest`` in ``layout`` (one of :data:`LAYOUTS`)."""
    if layout not in LAYOUTS:
        raise ValueError(layout)
    shutil.copytree(demo, dest)
    if layout == "shards":
        for split in SPLITS:
            _shards(dest, split)
        shutil.rmtree(dest / "data")
        shutil.rmtree(dest.parent / f".cache-{dest.name}", ignore_errors=True)
        _rewrite_card(dest, "{split}/test-*", demo_tag)
        return dest
    for split in SPLITS:
        folder = dest / "data" / split
        rows = _rows(folder)
        if layout == "jsonl":
            continue
        (folder / "metadata.jsonl").unlink()
        for row in rows:
            opts = row.get("options")
            if opts is None:
                continue
            row["options"] = {
                "csv": json.dumps([opts[k] for k in sorted(opts)]),
                "csv_delimited": " | ".join(_lettered(opts)),
                "parquet_metadata": [opts[k] for k in sorted(opts)],
                "nested": _lettered(opts),
            }[layout]
        if layout in ("csv", "csv_delimited"):
            _write_csv(folder / "metadata.csv", rows)
        elif layout == "parquet_metadata":
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.Table.from_pylist(rows), folder / "metadata.parquet")
        else:  # nested: images/<pair or item>/<file>, same file names
            for row in rows:
                old = folder / row["file_name"]
                group = row.get("pair_id") or row["id"]
                new = folder / "images" / "nested" / group / old.name
                new.parent.mkdir(parents=True, exist_ok=True)
                if old.exists():
                    old.rename(new)
                row["file_name"] = new.relative_to(folder).as_posix()
            (folder / "metadata.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    if not demo_tag:
        _rewrite_card(dest, "data/{split}/**", demo_tag)
    return dest


OFFICIAL_SIZES = {"context": 400, "texture": 400, "attribute": 100, "language": 100}


def write_official_size_mirror(dest: Path, sizes: dict[str, int] | None = None) -> Path:
    """A mirror with the official counts (tiny images; rows from tests/servers/dataset.py), card without the
    demo tag: a copy of the real dataset as far as the count check can tell. ``sizes`` makes a partial one."""
    from servers.dataset import rows_for

    sizes = {**OFFICIAL_SIZES, **(sizes or {})}
    configs = []
    for split in SPLITS:
        folder = dest / "data" / split
        (folder / "images").mkdir(parents=True)
        lines = []
        for row in rows_for(split, sizes[split], image_size=(24, 16)):
            image = row.pop("image")
            (folder / "images" / image["path"]).write_bytes(image["bytes"])
            lines.append(json.dumps({**row, "file_name": f"images/{image['path']}"}) + "\n")
        (folder / "metadata.jsonl").write_text("".join(lines), encoding="utf-8")
        configs.append(
            f"- config_name: {split}\n  drop_labels: true\n  data_files:\n  - split: test\n    path: data/{split}/**\n"
        )
    card = "---\nlicense: cc-by-nc-4.0\npretty_name: SABRE-Prior (test mirror)\nconfigs:\n" + "".join(configs) + "---\n"
    (dest / "README.md").write_text(card + "\n# SABRE-Prior mirror for tests\n", encoding="utf-8")
    return dest
