"""Fetch one split with ``datasets.load_dataset`` and write it as self-contained Parquet.

The same call serves the gated hub repo and a local copy of its layout (the demo)::

    datasets.load_dataset(source, split, split="test", revision=revision)

Every layout a mirror may have (``metadata.jsonl``/``.csv``/``.parquet`` ImageFolders, nested
image folders, ``push_to_hub`` Parquet shards) gives the same file (:func:`canonical_table`). The
rows are validated (:mod:`sabre_prior.data.validate`; for every copy of the real dataset, hub or local,
also the official counts), then written to ``data/parquet/<split>.parquet``:

* every column of the source is kept, in name order, and rows keep their order;
* ``image`` holds the embedded file bytes (``{"bytes", "path"}`` with ``path`` the file's base
  name), so the file needs nothing else; ``datasets`` can load it back with its features;
* ``options`` is stored as a letter-keyed mapping (from a list, a mapping, JSON text or texts
  that carry their letter, :func:`sabre_prior.options.options_mapping`);
* written row group by row group (memory stays bounded), deterministically (same input,
  same bytes: no timestamps) and atomically (temporary file, then rename);
* from a hub id, the schema metadata records the commit read and a digest of the split's files
  there (:func:`hub_files`); a later commit with the same files keeps the commit recorded first.

Access to the gated repo uses the token the Hugging Face libraries find themselves
(``HF_TOKEN`` or a stored login). It is never logged or written; failures become an
:class:`~sabre_prior.errors.AccessError` with what to do.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from .. import contracts as C
from ..errors import AccessError, DataError, SabreError
from ..io_utils import atomic_writer
from .parquet import FILES_KEY, REVISION_KEY, identity_metadata
from .validate import validate_split

if TYPE_CHECKING:  # pragma: no cover
    import datasets

log = logging.getLogger(__name__)

#: Rows per Parquet row group (about 30 MB of real-size images).
ROW_GROUP_ROWS = 100
HUB_PAGE = f"https://huggingface.co/datasets/{C.HUB_REPO_ID}"
_TOKEN_HOW = (
    "create a read token at https://huggingface.co/settings/tokens and either export it as HF_TOKEN "
    "(export HF_TOKEN=hf_...) or run `hf auth login` (older versions: `huggingface-cli login`)"
)
_DEMO_HINT = "To run the pipeline without the real data, set dataset.source: demo in params.yaml."


# ---------------------------------------------------------------------------
# Messages for access problems (one paragraph each)
# ---------------------------------------------------------------------------
def _page(repo: str) -> str:
    return f"https://huggingface.co/datasets/{repo}"


def missing_token_message(repo: str) -> str:
    return (
        f"Cannot read the gated dataset '{repo}': no Hugging Face token was found. "
        f"Log in at {_page(repo)} and accept the dataset's terms (CC BY-NC 4.0, evaluation only), then "
        f"{_TOKEN_HOW}. The token is read by the Hugging Face libraries and never stored by this pipeline. "
        f"{_DEMO_HINT}"
    )


def not_granted_message(repo: str) -> str:
    return (
        f"Your Hugging Face token was accepted but has no access to the gated dataset '{repo}'. "
        f"Open {_page(repo)} while logged in with the same account, accept the terms (CC BY-NC 4.0, evaluation "
        "only) and wait until access is granted, then run again. If HF_TOKEN is set it takes precedence over "
        "a stored login: check that it belongs to that account and may read gated repos. "
        f"{_DEMO_HINT}"
    )


def invalid_token_message(repo: str) -> str:
    return (
        f"The Hugging Face hub rejected your token while reading '{repo}' (invalid or expired credentials). "
        f"Set HF_TOKEN to a valid read token from https://huggingface.co/settings/tokens or log in again with "
        f"`hf auth login`; unset HF_TOKEN to use the stored login instead. Access to the data also requires "
        f"accepting its terms at {_page(repo)}. {_DEMO_HINT}"
    )


def unknown_repo_message(repo: str, token_present: bool) -> str:
    auth = (
        "If it is a private repository, make sure your token's account can see it."
        if token_present
        else "If it is a private or gated repository, you are not logged in: " + _TOKEN_HOW + "."
    )
    return (
        f"The dataset '{repo}' was not found on the Hugging Face hub. Check dataset.source in params.yaml "
        f"(or --source): the real benchmark is '{C.HUB_REPO_ID}' ({HUB_PAGE}); a local copy must be an "
        f"existing directory; 'demo' uses the embedded demo benchmark. {auth}"
    )


def unknown_revision_message(repo: str, revision: str | None) -> str:
    return (
        f"The revision '{revision}' does not exist in the dataset '{repo}' on the Hugging Face hub. "
        f"Set dataset.revision in params.yaml (or --revision) to an existing branch, tag or commit of "
        f"{_page(repo)}, or to null for the latest version."
    )


def unreachable_message(repo: str, detail: str) -> str:
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    return (
        f"Cannot reach the Hugging Face hub at {endpoint} to read '{repo}' ({detail}). Check the network "
        "connection and proxy settings, and that HF_HUB_OFFLINE and HF_DATASETS_OFFLINE are not set "
        f"(offline mode only works for data already in the local cache). {_DEMO_HINT}"
    )


def download_failed_message(repo: str, detail: str) -> str:
    return (
        f"Could not download the files of '{repo}' ({detail}). This usually means that access to the gated "
        f"dataset was not granted to the account of your token: accept the terms at {_page(repo)}, check "
        f"HF_TOKEN (or `hf auth login`), then run again. {_DEMO_HINT}"
    )


# ---------------------------------------------------------------------------
# Mapping load errors to messages
# ---------------------------------------------------------------------------
def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def _status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def explain_load_error(
    exc: BaseException,
    source: str,
    split: str,
    revision: str | None,
    *,
    token_present: bool,
    local: bool,
) -> SabreError | None:
    """The user-facing error for a failed ``load_dataset`` call, or None when it is not one we know."""
    if local:
        return _explain_local_error(exc, source, split)
    from datasets.exceptions import DatasetNotFoundError
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalTokenNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    missing_or_invalid = invalid_token_message(source) if token_present else missing_token_message(source)
    for err in _chain(exc):  # precise types first, wherever they sit in the chain
        if isinstance(err, GatedRepoError):
            return AccessError(not_granted_message(source) if _status(err) == 403 else missing_or_invalid)
        if isinstance(err, RevisionNotFoundError):
            return AccessError(unknown_revision_message(source, revision))
        if isinstance(err, RepositoryNotFoundError):
            return AccessError(unknown_repo_message(source, token_present))
        if isinstance(err, LocalTokenNotFoundError):
            return AccessError(missing_token_message(source))
        if isinstance(err, HfHubHTTPError) and _status(err) in (401, 403):
            if _status(err) == 401:
                return AccessError(missing_or_invalid)
            return AccessError(not_granted_message(source) if token_present else missing_token_message(source))
    text = str(exc)
    if isinstance(exc, DatasetNotFoundError):
        # datasets >= 2.20 re-raises hub errors as DatasetNotFoundError with the cause removed
        if "gated" in text:
            return AccessError(not_granted_message(source) if "ask for access" in text else missing_or_invalid)
        if text.startswith("Revision"):
            return AccessError(unknown_revision_message(source, revision))
        return AccessError(unknown_repo_message(source, token_present))
    if isinstance(exc, ConnectionError):
        return AccessError(unreachable_message(source, text.splitlines()[0] if text else type(exc).__name__))
    if isinstance(exc, FileNotFoundError):
        return AccessError(download_failed_message(source, text.splitlines()[0] if text else type(exc).__name__))
    if isinstance(exc, ValueError) and "BuilderConfig" in text:
        return DataError(f"{source}: the dataset has no config {split!r} ({text.splitlines()[0]})")
    return None


def _explain_local_error(exc: BaseException, source: str, split: str) -> SabreError | None:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if isinstance(exc, ValueError) and "BuilderConfig" in text:
        return DataError(
            f"{source}/README.md: the dataset card declares no config {split!r} "
            f"(expected one config per split with data_files under data/{split}/**): {text}"
        )
    if isinstance(exc, (FileNotFoundError, ValueError)):
        return DataError(f"{source}: cannot load split {split!r} from this directory: {text}")
    return None


def token_present() -> bool:
    """Whether the Hugging Face libraries would send a token (HF_TOKEN or a stored login); never returns it."""
    try:
        from huggingface_hub import get_token

        return bool(get_token())
    except Exception:  # noqa: BLE001 - a broken token file reads as "no token"
        return False


def is_local_source(source: str) -> bool:
    """True for an existing directory; a missing path that cannot be a hub repo id is an error."""
    path = Path(source).expanduser()
    if path.is_dir():
        return True
    if path.exists():
        raise DataError(f"{source}: is a file; the dataset source must be a hub repo id or a directory")
    looks_like_path = source.startswith((".", "/", "~")) or source.count("/") > 1 or "\\" in source
    if source.rstrip("/") == C.DEMO_DIR:
        raise DataError(f"{source}: the demo benchmark is missing; generate it with `sabre demo-data --output {source}`")
    if looks_like_path:
        raise DataError(f"{source}: local dataset directory not found")
    return False


# ---------------------------------------------------------------------------
# The dataset card of a local mirror
# ---------------------------------------------------------------------------
def card_metadata(source: str | Path) -> dict[str, Any]:
    """The YAML front matter of ``<source>/README.md`` (the dataset card); {} when there is none."""
    import yaml

    card = Path(source).expanduser() / "README.md"
    if not card.is_file():
        return {}
    text = card.read_text(encoding="utf-8")
    if not text.startswith("---"):
        return {}
    try:
        meta = yaml.safe_load(text.split("---", 2)[1]) or {}
    except yaml.YAMLError as exc:
        raise DataError(f"{card}: the dataset card's YAML header is not valid YAML: {exc}") from None
    return meta if isinstance(meta, dict) else {}


def split_patterns(source: str | Path, split: str, meta: dict[str, Any] | None = None) -> list[str]:
    """The ``data_files`` patterns the card declares for ``split``'s test split (hub card layout);
    ``meta``: the card's metadata when it is not read from ``<source>/README.md`` (a hub repo)."""
    for config in (card_metadata(source) if meta is None else meta).get("configs") or []:
        if not isinstance(config, dict) or config.get("config_name") != split:
            continue
        files = config.get("data_files") or []
        entries = files if isinstance(files, list) else [files]
        patterns: list[str] = []
        for entry in entries:
            paths = entry.get("path") if isinstance(entry, dict) else entry
            if isinstance(entry, dict) and entry.get("split", C.HUB_SPLIT) != C.HUB_SPLIT:
                continue
            patterns += [str(p) for p in (paths if isinstance(paths, list) else [paths]) if p]
        return patterns
    return []


def split_folder(pattern: str) -> str:
    """The folder part of a data_files pattern before any wildcard (``data/context/**`` -> ``data/context``)."""
    parts = []
    for part in pattern.split("/"):
        if any(ch in part for ch in "*?["):
            break
        parts.append(part)
    return "/".join(parts) or "."


def check_split_folder(source: str, split: str) -> None:
    """A missing split folder is named as the card expects it (before ``datasets`` says less)."""
    patterns = split_patterns(source, split)
    folders = sorted({split_folder(p) for p in patterns})
    missing = [f for f in folders if not (Path(source).expanduser() / f).exists()]
    if patterns and len(missing) == len(folders):
        raise DataError(
            f"{source}: split {split!r} is missing: the dataset card (README.md) expects its files at "
            f"{', '.join(patterns)}, but there is no folder {', '.join(f + '/' for f in missing)}"
        )


# ---------------------------------------------------------------------------
# Loading, Parquet
# ---------------------------------------------------------------------------
@contextmanager
def open_split(
    source: str, split: str, revision: str | None = None, *, local: bool | None = None
) -> Iterator[datasets.Dataset]:
    """``load_dataset(source, split, split="test", revision=revision)`` with user-facing errors.

    A local directory is loaded with a throwaway ``cache_dir``: the library keys its cache of a
    local folder by the file names, not their contents, so a regenerated copy (another demo
    seed) would otherwise be served stale. Hub data keeps the user's cache (it is pinned by
    revision).
    """
    import datasets

    if local is None:
        local = is_local_source(source)
    path = str(Path(source).expanduser()) if local else source
    with tempfile.TemporaryDirectory(prefix="sabre-fetch-") if local else nullcontext(None) as cache_dir:
        extra = {"cache_dir": cache_dir} if cache_dir else {}
        try:
            ds = datasets.load_dataset(path, split, split=C.HUB_SPLIT, revision=revision, **extra)
        except SabreError:
            raise
        except Exception as exc:
            err = explain_load_error(exc, source, split, revision, token_present=token_present(), local=local)
            if err is None:
                raise
            raise err from exc
        try:
            yield ds
        finally:
            del ds


def _arrow_table(ds: datasets.Dataset) -> pa.Table:
    if getattr(ds, "_indices", None) is not None:
        ds = ds.flatten_indices()
    return ds.data.table


def image_keys(table: pa.Table, batch_rows: int = ROW_GROUP_ROWS) -> list[str | None]:
    """One key per row naming its image file (its path, else a hash of embedded bytes; None: no image)."""
    if C.COL_IMAGE not in table.column_names:
        return [None] * table.num_rows
    keys: list[str | None] = []
    col = table.column(C.COL_IMAGE)
    for start in range(0, table.num_rows, batch_rows):
        for value in col.slice(start, batch_rows).to_pylist():
            path, data = (value.get("path"), value.get("bytes")) if isinstance(value, dict) else (value, None)
            if path:
                keys.append(str(path))
            elif data:
                keys.append("sha256:" + hashlib.sha256(data).hexdigest())
            else:
                keys.append(None)
    return keys


def write_parquet(table: pa.Table, output: Path, row_group_rows: int = ROW_GROUP_ROWS) -> int:
    """Write ``table`` with its image bytes embedded, one row group at a time; returns the file size."""
    from datasets.table import embed_table_storage

    output = Path(output)
    with atomic_writer(output, "wb") as fh:
        writer: pq.ParquetWriter | None = None
        try:
            carried = dict(table.schema.metadata or {})  # e.g. the hub revision (embedding drops it)
            for start in range(0, table.num_rows, row_group_rows):
                chunk = embed_table_storage(table.slice(start, row_group_rows))
                chunk = chunk.replace_schema_metadata({**carried, **(chunk.schema.metadata or {})})
                if writer is None:
                    writer = pq.ParquetWriter(fh, chunk.schema, compression="snappy", store_schema=True)
                writer.write_table(chunk, row_group_size=row_group_rows)
            if writer is None:  # no rows: still a valid, empty file
                writer = pq.ParquetWriter(fh, table.schema, compression="snappy")
        finally:
            if writer is not None:
                writer.close()
    return output.stat().st_size


#: Contract columns stored as text whatever the mirror's format made of them (a CSV reads "3" as 3).
TEXT_COLUMNS = (
    C.COL_ID, C.COL_SUBSET, C.COL_QUESTION, C.COL_ANSWER, C.COL_EVAL_TYPE,
    C.COL_QUESTION_TYPE, C.COL_PAIR_ID, C.COL_PROBE, C.COL_ANSWER_TEXT, C.COL_SUGGESTED_OPTION, C.COL_UNKNOWN_OPTION,
)


def canonical_table(table: pa.Table, features: Any, split: str) -> pa.Table:
    """One form for every layout of a mirror, so that they all give the same Parquet.

    Columns in name order; ``options`` as a letter-keyed mapping (from a list, a mapping, JSON
    text or lettered texts, :func:`~sabre_prior.options.options_mapping`); contract text columns
    as strings, every text column as ``string`` (a CSV gives ``large_string``); the ``huggingface`` schema metadata (features, the image as ``Image``) rebuilt.
    """
    import datasets
    import pyarrow.compute as pc
    from datasets.table import table_cast

    from ..options import options_mapping

    feats = dict(features)
    if C.COL_OPTIONS in table.column_names:
        ids = table.column(C.COL_ID).to_pylist() if C.COL_ID in table.column_names else []
        mapped = []
        for i, value in enumerate(table.column(C.COL_OPTIONS).to_pylist()):
            try:
                mapped.append(options_mapping(value))
            except (TypeError, ValueError) as exc:
                rid = ids[i] if i < len(ids) else f"<row {i}>"
                raise DataError(f"{split}: row {rid!r}, field {C.COL_OPTIONS!r}: {exc}") from None
        keys = sorted({k for m in mapped for k in m})
        if keys:
            kind = pa.struct([(k, pa.string()) for k in keys])
            array = pa.array([{k: m.get(k) for k in keys} if m else None for m in mapped], kind)
            table = table.set_column(table.column_names.index(C.COL_OPTIONS), C.COL_OPTIONS, array)
            feats[C.COL_OPTIONS] = {k: datasets.Value("string") for k in keys}
    for name in table.column_names:
        kind = table.schema.field(name).type
        if pa.types.is_large_string(kind) or (name in TEXT_COLUMNS and not pa.types.is_string(kind)):
            column = pc.cast(table.column(name), pa.string())
            table = table.set_column(table.column_names.index(name), name, column)
            feats[name] = datasets.Value("string")
    order = sorted(table.column_names)
    ordered = datasets.Features({name: feats[name] for name in order})
    return table_cast(table.select(order), ordered.arrow_schema)




def resolve_revision(source: str, revision: str | None) -> str:
    """The commit the hub serves for ``revision`` (``HfApi.dataset_info(...).sha``), with our error messages."""
    return hub_files(source, revision, ())[0]




def hub_files(source: str, revision: str | None, splits: Sequence[str]) -> tuple[str, dict[str, str]]:
    """The commit the hub serves for ``revision`` and, per split, a digest of the files it reads there.

    One ``HfApi.dataset_info(..., files_metadata=True)`` call: the commit (``sha``), every file's
    blob id (LFS files: their sha256) and the card's metadata (its ``configs`` name each split's
    files). A split's digest covers the card and the files under its ``data_files`` folders, so a
    new commit that leaves them alone leaves the digest alone (a card without configs: every file).
    """
    from huggingface_hub import HfApi

    try:
        info = HfApi().dataset_info(source, revision=revision, files_metadata=True)
    except Exception as exc:
        err = explain_load_error(exc, source, "?", revision, token_present=token_present(), local=False)
        if err is None:
            raise
        raise err from exc
    if not info.sha:
        raise AccessError(f"the hub returned no commit for '{source}' at {revision or 'its default branch'}")
    blobs = {s.rfilename: (s.lfs.sha256 if s.lfs else s.blob_id) or "" for s in info.siblings or []}
    meta = info.card_data.to_dict() if info.card_data is not None else {}
    digests = {}
    for split in splits:
        folders = {split_folder(p) for p in split_patterns(source, split, meta)} or {"."}
        prefixes = tuple("" if f == "." else f.rstrip("/") + "/" for f in folders)
        files = sorted((path, blob) for path, blob in blobs.items() if path == "README.md" or path.startswith(prefixes))
        digests[split] = hashlib.sha256(json.dumps(files).encode()).hexdigest()
    return str(info.sha), digests


def parquet_revision(path: str | Path) -> str | None:
    """The hub commit recorded in a fetched split (None for a local or demo source)."""
    meta = pq.read_schema(path).metadata or {}
    value = meta.get(REVISION_KEY)
    return value.decode() if value else None


def _recorded_commit(path: Path, files: str) -> str | None:
    """The commit recorded in an earlier fetch of the same files (``FILES_KEY``), else None."""
    try:
        meta = pq.read_schema(path).metadata or {}
    except (OSError, pa.ArrowInvalid):
        return None
    commit = meta.get(REVISION_KEY)
    return commit.decode() if commit and meta.get(FILES_KEY) == files.encode() else None


def is_demo_copy(source: str, local: bool) -> bool:
    """A local copy of the generated demo (its card carries the ``sabre-prior-demo`` tag)."""
    if not local:
        return False
    card = Path(source).expanduser() / "README.md"
    try:
        text = card.read_text(encoding="utf-8")
    except OSError:
        return False
    return "\n- sabre-prior-demo\n" in text.split("\n---", 1)[0] + "\n"


def fetch_split(
    source: str,
    split: str,
    output: Path,
    revision: str | None = None,
    *,
    check_counts: bool | None = None,
) -> str:
    """Load, validate and write one split as self-contained Parquet; returns a one-line summary.

    ``check_counts`` enforces the official sizes; by default it is on for every copy of the real
    dataset (the hub, or a local mirror) and off for the generated demo (smaller by design).
    """
    if split not in C.SPLITS:
        raise DataError(f"unknown split {split!r} (expected one of {', '.join(C.SPLITS)})")
    local = is_local_source(source)
    resolved = recorded = files = None
    if local:
        check_split_folder(source, split)
    else:  # read exactly one commit, and record which
        resolved, digests = hub_files(source, revision, [split])
        files = digests[split]
        # the split's files as already fetched (a new commit that left them alone): keep the commit
        # recorded then, so that the same data give the same bytes and nothing after it re-runs
        recorded = _recorded_commit(Path(output), files) or resolved
    with open_split(source, split, resolved or revision, local=local) as ds:
        table = canonical_table(_arrow_table(ds), ds.features, split)
        # where the rows were read, for every output that names its data (data.parquet.data_identity)
        kind = "hub" if not local else ("demo" if is_demo_copy(source, local) else "local")
        identity = identity_metadata(source, kind, recorded if recorded and files else None, files)
        table = table.replace_schema_metadata({**dict(table.schema.metadata or {}), **identity})
        columns = table.column_names
        meta = table.drop_columns([C.COL_IMAGE]) if C.COL_IMAGE in columns else table
        rows: list[dict[str, Any]] = meta.to_pylist()
        keys = image_keys(table)
        counts = (not is_demo_copy(source, local)) if check_counts is None else check_counts
        validate_split(split, rows, columns, keys, official_counts=counts, source=source)
        size = write_parquet(table, Path(output))
        del table, meta
    n_images = len({k for k in keys if k is not None})
    at = f"@{revision}" if revision else ""
    if resolved and resolved != revision:
        at += f" (commit {resolved})"
    if recorded and recorded != resolved:
        at += f"; its files are those of commit {recorded}, which stays recorded"
    return f"{split}: {len(rows)} questions, {n_images} images from {source}{at} -> {output} ({size / 1e6:.1f} MB)"
