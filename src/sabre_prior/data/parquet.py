"""Reading the self-contained Parquet splits (``data/parquet/<split>.parquet``) and their identity.

The fetch step records in each split's schema metadata where its rows were read (:func:`identity_metadata`);
every output that names its data (tables, figures, report, manifest) reads that identity back from the
files it was computed from (:func:`data_identity`), never from ``params.yaml``, so that a changed
``dataset.source`` that was not fetched can never relabel old data.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from .. import contracts as C
from ..errors import DataError


def iter_rows(path: str | Path, *, with_images: bool = True, batch_size: int = 64) -> Iterator[dict[str, Any]]:
    """Yield the rows of a Parquet split as dicts, in file order.

    ``row["image"]`` is the image's bytes (``with_images=True``) and is absent
    otherwise (cheap for scoring, which needs no pixels).
    """
    p = Path(path)
    # a buffered stream, no pre-buffering: the first rows come without reading the whole row group,
    # and memory stays flat in the number of rows (images are not all held at once)
    pf = open_split(p, buffer_size=1 << 20, pre_buffer=False) if with_images else open_split(p)
    columns = None if with_images else [c for c in pf.schema_arrow.names if c != C.COL_IMAGE]
    batches = pf.iter_batches(batch_size=batch_size, columns=columns)
    while True:
        try:
            batch = next(batches, None)
        except (OSError, pa.ArrowException) as exc:  # a damaged page after a readable footer
            raise DataError(f"{p}: not a readable Parquet file ({exc}); {_REFETCH.format(p=p)}") from None
        if batch is None:
            return
        for row in batch.to_pylist():
            if with_images:
                img = row.get(C.COL_IMAGE)
                if isinstance(img, dict):
                    data = img.get("bytes")
                    if data is None:
                        raise DataError(f"{p}: row {row.get(C.COL_ID)!r}: field 'image' has no embedded bytes")
                    row[C.COL_IMAGE] = data
            yield row


#: What to do about a split file that cannot be read (one sentence for every reader).
_REFETCH = "fetch it again: delete it and run `snakemake --cores 1 {p}` (or `sabre fetch --split {p.stem}`)"


def open_split(path: str | Path, *, check_columns: bool = True, **options: Any) -> pq.ParquetFile:
    """Open a Parquet split, or raise :class:`DataError` naming the file, what is wrong with it
    (missing, empty, unreadable, not Parquet or truncated, columns missing: unless ``check_columns``
    is False, for a reader of the schema metadata only) and what to do."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: split file not found (run the fetch step first: snakemake --cores 1 {p})")
    try:
        if p.stat().st_size == 0:
            raise DataError(f"{p}: the split file is empty (0 bytes); {_REFETCH.format(p=p)}")
        pf = pq.ParquetFile(p, **options)
    except PermissionError as exc:
        raise DataError(
            f"{p}: cannot be read ({os.strerror(exc.errno) if exc.errno else exc}): give yourself read access (chmod u+r {p})"
        ) from None
    except (OSError, pa.ArrowException) as exc:
        raise DataError(
            f"{p}: not a readable Parquet file (truncated, or not Parquet: {exc}); {_REFETCH.format(p=p)}"
        ) from None
    required = C.SPLIT_COLUMNS.get(p.stem) if check_columns else None
    missing = [c for c in required or () if c not in pf.schema_arrow.names]
    if missing:
        raise DataError(
            f"{p}: split {p.stem!r} lacks the column(s) {', '.join(missing)} (it has "
            f"{', '.join(pf.schema_arrow.names) or 'none'}); {_REFETCH.format(p=p)}"
        )
    return pf


def read_rows(path: str | Path, *, with_images: bool = False) -> list[dict[str, Any]]:
    return list(iter_rows(path, with_images=with_images))


# ---------------------------------------------------------------------------
# The data's identity, recorded by the fetch step in each split's schema metadata
# ---------------------------------------------------------------------------
#: Schema metadata keys (Parquet key-value metadata, in the Arrow schema ``sabre fetch`` writes).
SOURCE_KEY = b"sabre_source"  # the source read: a hub repo id or a local directory (the demo: data/demo)
SOURCE_KIND_KEY = b"sabre_source_kind"  # "demo", "local" or "hub"
REVISION_KEY = b"sabre_hub_revision"  # hub sources: the commit read
FILES_KEY = b"sabre_hub_files"  # hub sources: digest of the split's files at that commit
SOURCE_KINDS = ("demo", "local", "hub")

DEMO_LABEL = "embedded demo benchmark, synthetic images"


def identity_metadata(
    source: str, kind: str, revision: str | None = None, files: str | None = None
) -> dict[bytes, bytes]:
    """The schema metadata the fetch step writes into a split: where its rows were read."""
    if kind not in SOURCE_KINDS:
        raise ValueError(f"unknown source kind {kind!r} (one of {', '.join(SOURCE_KINDS)})")
    meta = {SOURCE_KEY: source.encode("utf-8"), SOURCE_KIND_KEY: kind.encode("ascii")}
    if revision:
        meta[REVISION_KEY] = revision.encode("ascii")
    if files:
        meta[FILES_KEY] = files.encode("ascii")
    return meta


@dataclass(frozen=True)
class SplitIdentity:
    """What one Parquet split says about itself (its schema metadata) and, optionally, its SHA-256."""

    split: str
    source: str
    kind: str
    revision: str | None = None
    hub_files: str | None = None
    sha256: str | None = None  # of the Parquet file as read (only when asked for: it reads the whole file)


@dataclass(frozen=True)
class DataIdentity:
    """The identity of the data every output was computed from: one source (and revision), per-split digests."""

    source: str
    kind: str
    revision: str | None
    splits: tuple[SplitIdentity, ...]

    @property
    def label(self) -> str:
        """For titles and captions: ``embedded demo benchmark, ...`` / ``<repo> @ <commit>`` / ``local copy <dir>``."""
        if self.kind == "demo":
            return DEMO_LABEL
        if self.kind == "local":
            return f"local copy {self.source}"
        if self.revision:
            return f"{self.source} @ {self.revision[:12]}"
        commits = sorted({s.revision[:12] for s in self.splits if s.revision})
        return f"{self.source} @ {', '.join(commits)} (per split)" if commits else self.source

    def as_dict(self) -> dict[str, Any]:
        """JSON-able: source, kind, revision and, per split, its hub file digest and SHA-256 (where known)."""
        per_split: dict[str, dict[str, str]] = {}
        for s in self.splits:
            entry = {}
            if s.hub_files:
                entry["hub_files"] = s.hub_files
            if s.sha256:
                entry["sha256"] = s.sha256
            per_split[s.split] = entry
        return {"source": self.source, "kind": self.kind, "revision": self.revision, "splits": per_split}


def split_identity(path: str | Path, split: str, *, digest: bool = False) -> SplitIdentity:
    """Read a split's identity from its schema metadata (a file the fetch step did not write: an error)."""
    p = Path(path)
    meta = open_split(p, check_columns=False).schema_arrow.metadata or {}
    source, kind = meta.get(SOURCE_KEY), meta.get(SOURCE_KIND_KEY)
    if not source or not kind or kind.decode("ascii", "replace") not in SOURCE_KINDS:
        raise DataError(
            f"{p}: the file does not record which source it was read from (schema metadata "
            f"{SOURCE_KEY.decode()!r}); it was not written by this version's fetch step: "
            f"re-fetch it (delete it and run snakemake --cores 1 {p})"
        )
    revision, files = meta.get(REVISION_KEY), meta.get(FILES_KEY)
    return SplitIdentity(
        split,
        source.decode("utf-8"),
        kind.decode("ascii"),
        revision.decode("ascii") if revision else None,
        files.decode("ascii") if files else None,
        sha256_file(p) if digest else None,
    )


def data_identity(data_dir: str | Path, splits: Sequence[str], *, digest: bool = False) -> DataIdentity:
    """The identity of ``<data_dir>/<split>.parquet`` for every split; they must share one source. A
    hub split that a newer commit left alone keeps the commit it was read at, so the splits of a hub
    source may name different commits: the identity's revision is then None and each split has its own."""
    if not splits:
        raise DataError("no splits configured")
    found = [split_identity(Path(data_dir) / f"{s}.parquet", s, digest=digest) for s in splits]
    first = found[0]
    for other in found[1:]:
        if (other.source, other.kind) != (first.source, first.kind):
            raise DataError(
                f"{Path(data_dir)}: the splits were fetched from different sources: "
                f"{first.split} from {_where(first)}, {other.split} from {_where(other)}; re-fetch them"
            )
    revisions = {s.revision for s in found}
    return DataIdentity(first.source, first.kind, first.revision if len(revisions) == 1 else None, tuple(found))


def _where(s: SplitIdentity) -> str:
    return f"{s.source}@{s.revision}" if s.revision else s.source


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def priced_data(source: str, splits: list[str], data_dir: str | Path) -> list[str]:
    """What an estimate prices, one line per split: the file, its questions and, when they are not
    the official count, that these are not the real benchmark (the demo, or a partial copy)."""
    lines = [f"pricing the questions in {data_dir}/ (dataset.source in params.yaml: {source})"]
    for split in splits:
        path = Path(data_dir) / f"{split}.parquet"
        if not path.is_file():
            continue  # the estimate itself names the missing file
        rows = open_split(path, check_columns=False).metadata.num_rows
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
