"""Parquet splits that record their source the way the fetch step does (schema metadata), for tests
of the outputs that name their data (tables, figures, report, manifest)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from sabre_prior.data.parquet import DataIdentity, data_identity, identity_metadata


def write_split_files(
    data_dir: Path,
    splits: Iterable[str],
    source: str = "data/demo",
    kind: str = "demo",
    revision: str | None = None,
) -> Path:
    """One-row ``<split>.parquet`` files whose schema metadata names ``source`` (as ``sabre fetch`` writes it)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    for split in splits:
        table = pa.table({"id": [f"{split}_001"]})
        files = "0" * 64 if kind == "hub" else None
        table = table.replace_schema_metadata(identity_metadata(source, kind, revision, files))
        pq.write_table(table, data_dir / f"{split}.parquet")
    return data_dir


def demo_identity(data_dir: Path, splits: Iterable[str]) -> DataIdentity:
    splits = list(splits)
    return data_identity(write_split_files(data_dir, splits), splits)
