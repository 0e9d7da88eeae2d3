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
    # a buffered stream, no pre-buffering: the first rows come without reading the whole row group,
    # and memory stays flat in the number of rows (images are not all held at once)
    pf = pq.ParquetFile(p, buffer_size=1 << 20, pre_buffer=False) if with_images else pq.ParquetFile(p)
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
