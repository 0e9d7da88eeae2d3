"""Reading the self-contained Parquet splits (``data/parquet/<split>.parquet``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pyarrow.parquet as pq

from .. import contracts as C
from ..errors import DataError

_MIME = {
    b"\xff\xd8\xff": "image/jpeg",
    b"\x89PNG": "image/png",
    b"GIF8": "image/gif",
    b"RIFF": "image/webp",
}


def image_mime(data: bytes) -> str:
    for magic, mime in _MIME.items():
        if data.startswith(magic):
            return mime
    return "application/octet-stream"


def iter_rows(path: str | Path, *, with_images: bool = True, batch_size: int = 64) -> Iterator[dict[str, Any]]:
    """Yield the rows of a Parquet split as dicts, in file order.

    ``row["image"]`` is the image's bytes (``with_images=True``) and is absent
    otherwise (cheap for scoring, which needs no pixels).
    """
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: split file not found (run the fetch step first: snakemake --cores 1 {p})")
    pf = pq.ParquetFile(p)
    columns = None if with_images else [c for c in pf.schema_arrow.names if c != C.COL_IMAGE]
    for batch in pf.iter_batches(batch_size=batch_size, columns=columns):
        for row in batch.to_pylist():
            if with_images:
                img = row.get(C.COL_IMAGE)
                if isinstance(img, dict):
                    data = img.get("bytes")
                    if data is None:
                        raise DataError(f"{p}: row {row.get(C.COL_ID)!r}: field 'image' has no embedded bytes")
                    row[C.COL_IMAGE] = data
            yield row


def read_rows(path: str | Path, *, with_images: bool = False) -> list[dict[str, Any]]:
    return list(iter_rows(path, with_images=with_images))


def priced_data(source: str, splits: list[str], data_dir: str | Path) -> list[str]:
    """What an estimate prices, one line per split: the file, its questions and, when they are not
    the official count, that these are not the real benchmark (the demo, or a partial copy)."""
    lines = [f"pricing the questions in {data_dir}/ (dataset.source in params.yaml: {source})"]
    for split in splits:
        path = Path(data_dir) / f"{split}.parquet"
        if not path.is_file():
            continue  # the estimate itself names the missing file
        rows = pq.ParquetFile(path).metadata.num_rows
        official = C.OFFICIAL_COUNTS[split][1]
        if rows == official:
            lines.append(f"  {split}: {rows} questions (the official count)")
        else:
            lines.append(
                f"  {split}: {rows} questions, not the real benchmark's {official}: this is "
                + ("the embedded demo" if source == "demo" else "the demo or a partial copy")
                + "; fetch the real split first (dataset.source: " + C.HUB_REPO_ID
                + f", then `sabre fetch --split {split}`) for the cost of a real run"
            )
    return lines
