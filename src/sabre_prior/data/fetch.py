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
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from .. import contracts as C
from ..errors import AccessError, DataError, SabreError, SourceError
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
    "(export HF_TOKEN=hf_...) or run `hf auth login`"
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
    from huggingface_hub import constants

    endpoint = constants.ENDPOINT
    return (
        f"The Hugging Face hub at {endpoint} is unreachable, so the dataset '{repo}' cannot be read ({detail}). "
        "Check the network connection and proxy settings (HTTPS_PROXY), and that a token is available for "
        f"the gated data ({_TOKEN_HOW}). Without a network, a revision fetched before can be used from the "
        "local cache: set HF_HUB_OFFLINE=1 and pin dataset.revision (or --revision) to that commit. "
        f"{_DEMO_HINT}"
    )


def offline_uncached_message(repo: str, revision: str | None, cache: str) -> str:
    return (
        f"HF_HUB_OFFLINE is set, but the revision '{revision or 'main'}' of the dataset '{repo}' is not in the "
        f"local Hugging Face cache ({cache}). Unset HF_HUB_OFFLINE to read it from the hub (with a token: "
        f"{_TOKEN_HOW}), or pin dataset.revision to a commit fetched before on this machine. {_DEMO_HINT}"
    )


#: Transport errors of the HTTP clients the Hugging Face libraries use (httpx/httpx2 and httpcore in
#: huggingface_hub >= 1.0, requests/urllib3 before): by top-level module, the class names of their
#: connection, proxy and timeout errors.  A status error (401, 403, 404) is not among them.
_TRANSPORT_ERRORS = {
    "httpx": {"TransportError", "TimeoutException", "NetworkError", "ConnectError", "ProxyError"},
    "httpx2": {"TransportError", "TimeoutException", "NetworkError", "ConnectError", "ProxyError"},
    "httpcore": {"NetworkError", "ConnectError", "TimeoutException", "ProxyError"},
    "httpcore2": {"NetworkError", "ConnectError", "TimeoutException", "ProxyError"},
    "requests": {"ConnectionError", "Timeout", "ProxyError", "SSLError"},
    "urllib3": {"NewConnectionError", "MaxRetryError", "ProtocolError", "ProxyError", "TimeoutError"},
}


def is_unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` (or an error it was raised from) says the hub could not be reached at all."""
    import socket

    for err in _chain(exc):
        if _status(err) is not None:
            return False  # the hub answered
        if isinstance(err, (ConnectionError, TimeoutError, socket.gaierror)):
            return True
        for cls in type(err).__mro__:
            if cls.__name__ in _TRANSPORT_ERRORS.get(cls.__module__.split(".")[0], ()):
                return True
    return False


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
    if is_unreachable(exc):
        first = next((e for e in _chain(exc) if str(e)), exc)
        detail = f"{type(first).__name__}: {str(first).splitlines()[0]}" if str(first) else type(first).__name__
        if any(type(e).__name__ == "OfflineModeIsEnabled" for e in _chain(exc)):
            return AccessError(offline_uncached_message(source, revision, _hub_cache()))
        return AccessError(unreachable_message(source, detail))
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
        raise DataError(
            f"{source}: local dataset directory not found; set dataset.source in params.yaml (or --source) to an "
            f"existing directory holding a copy of the hub layout, a hub repo id such as '{C.HUB_REPO_ID}', or demo"
        )
    return False


def source_kind(source: str) -> str:
    """``demo``, ``local`` (an existing directory) or ``hub`` (a repo id): the one classification of
    ``dataset.source``, for the fetch and the pipeline's rules alike (a missing path that cannot be
    a repo id is a :class:`DataError`; ``SABRE-Prior``, an id without its organisation, is a hub id)."""
    if source == "demo":
        return "demo"
    return "local" if is_local_source(source) else "hub"


def hub_digests(params: Mapping[str, Any]) -> dict[str, str]:
    """Per split, the digest of its files at the commit the hub serves now for a hub source (a rule
    param of the fetch: a moved revision re-fetches only the splits whose files changed); {} for the
    demo or a local copy. An unreachable hub, a refused token or an unknown revision raise
    :class:`SourceError` before anything runs (:func:`resolve_source`)."""
    if source_kind(str(params["dataset"]["source"])) != "hub":
        return {}
    return dict(resolve_source(params).files)


def split_files(source: str, split: str) -> list[str]:
    """The files of a local copy that the fetch of ``split`` reads: its card and the split's folders."""
    src = Path(source).expanduser()
    files = [str(src / "README.md")]
    for folder in sorted({split_folder(p) for p in split_patterns(source, split)}) or ["."]:
        base = src / folder
        if base.is_dir():
            files += sorted(str(p) for p in base.rglob("*") if p.is_file())
    return files


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


def check_card(source: str) -> None:
    """A local copy must hold the hub repo's dataset card (``README.md``), whose YAML header names each
    split's files; without it ``datasets`` reads the folder as one unnamed config."""
    card = Path(source).expanduser() / "README.md"
    if not card.is_file():
        raise DataError(
            f"{card}: the dataset card is missing. A local copy of the dataset must hold the hub repo's README.md, "
            "whose YAML header lists one config per split (config_name: <split>, data_files under data/<split>/**); "
            f"copy it from {HUB_PAGE} (or regenerate the demo with `sabre demo-data`)"
        )


#: The metadata files an ImageFolder split may carry (``datasets``' folder-based builder).
METADATA_NAMES = ("metadata.jsonl", "metadata.csv", "metadata.parquet")


def check_metadata_files(source: str, split: str) -> None:
    """An empty metadata file is named (``datasets`` fails on it with an IndexError)."""
    folders = {split_folder(p) for p in split_patterns(source, split)} or {f"data/{split}"}
    for folder in sorted(folders):
        base = Path(source).expanduser() / folder
        if not base.is_dir():
            continue
        for path in sorted(p for name in METADATA_NAMES for p in base.rglob(name)):
            if not path.read_bytes().strip():
                raise DataError(
                    f"{path}: the metadata file of split {split!r} is empty ({path.stat().st_size} bytes); it must "
                    "hold one record per question (for metadata.jsonl: one JSON object per line, with file_name "
                    "naming its image)"
                )


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


def _image_problem(data: bytes) -> str | None:
    """Why these bytes are not a whole image (None: Pillow decodes every pixel)."""
    import io

    from PIL import Image, UnidentifiedImageError

    if not data:
        return "is empty (0 bytes)"
    try:
        with Image.open(io.BytesIO(data)) as img:
            img.load()  # decodes every pixel: a truncated or corrupted file fails here, not at verify()
    except UnidentifiedImageError:
        return "is not an image Pillow can read"
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        return f"cannot be decoded ({exc})"
    return None


def check_images(table: pa.Table, split: str, batch_rows: int = ROW_GROUP_ROWS) -> None:
    """Decode every image of ``table`` (embedded bytes or the file a local mirror names); raise a
    :class:`DataError` naming the row and file of each one that is missing, empty or broken, before
    anything is written (an API model would otherwise be sent the broken bytes)."""
    if C.COL_IMAGE not in table.column_names:
        return
    ids = table.column(C.COL_ID).to_pylist() if C.COL_ID in table.column_names else []
    problems: list[str] = []
    col = table.column(C.COL_IMAGE)
    for start in range(0, table.num_rows, batch_rows):
        for offset, value in enumerate(col.slice(start, batch_rows).to_pylist()):
            index = start + offset
            if value is None:
                continue  # a row without an image: the contract check names it
            path, data = (value.get("path"), value.get("bytes")) if isinstance(value, dict) else (value, None)
            where = f"{split}: row {ids[index] if index < len(ids) else f'<row {index}>'!r}, image {path or '<embedded>'}"
            if data is None and path:
                try:
                    data = Path(path).read_bytes()
                except FileNotFoundError:
                    problems.append(f"{where}: the file is missing (the split's metadata names it)")
                    continue
                except OSError as exc:
                    problems.append(f"{where}: cannot be read ({exc.strerror or exc})")
                    continue
            why = _image_problem(data or b"")
            if why:
                problems.append(f"{where}: {why}")
    if problems:
        shown = problems[:20]
        more = f"\n  ... and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
        raise DataError(f"{len(problems)} image(s) of split {split!r} cannot be used:\n  " + "\n  ".join(shown) + more)


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
    from huggingface_hub import HfApi, constants

    if constants.is_offline_mode():
        commit, blobs, meta = cached_files(source, revision)
        return commit, split_digests(source, blobs, meta, splits)
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
    return str(info.sha), split_digests(source, blobs, meta, splits)


def check_access(source: str, commit: str) -> None:
    """Whether the token may read the files of ``source`` at ``commit``: a HEAD of its card file
    (``get_hf_file_metadata``), which a gated repo answers 401/403 without granted access while its
    ``dataset_info`` stays public. Nothing is asked offline; a repo without a card passes."""
    from urllib.parse import quote

    from huggingface_hub import constants, get_hf_file_metadata
    from huggingface_hub.errors import EntryNotFoundError

    if constants.is_offline_mode():
        return
    try:
        # the URL as file_download.hf_hub_url forms it, from the endpoint read now (its template is fixed at import)
        get_hf_file_metadata(f"{constants.ENDPOINT}/datasets/{source}/resolve/{quote(commit, safe='')}/README.md")
    except EntryNotFoundError:
        return
    except Exception as exc:
        err = explain_load_error(exc, source, "?", commit, token_present=token_present(), local=False)
        if err is None:
            raise
        raise err from exc


def _hub_cache() -> str:
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)


def cached_files(source: str, revision: str | None) -> tuple[str, dict[str, str], dict[str, Any]]:
    """Offline (``HF_HUB_OFFLINE``): the commit, file blob ids and card metadata of ``revision`` as the
    local Hugging Face cache holds them.

    The cache layout is huggingface_hub's (``file_download.repo_folder_name``, ``refs/<revision>``
    holding a commit, ``snapshots/<commit>/<file>`` linked to ``blobs/<etag>``, the etag being the
    file's blob id, or its sha256 for an LFS file; https://huggingface.co/docs/huggingface_hub/guides/manage-cache),
    so the digests equal the online ones for the files that are cached.
    """
    cache = Path(_hub_cache())
    folder = cache / ("datasets--" + source.replace("/", "--"))
    wanted = revision or "main"
    commit = wanted if _is_commit(wanted) and (folder / "snapshots" / wanted).is_dir() else None
    ref = folder / "refs" / wanted
    if commit is None and ref.is_file():
        commit = ref.read_text(encoding="utf-8").strip()
    snapshot = folder / "snapshots" / str(commit)
    if not commit or not snapshot.is_dir():
        raise AccessError(offline_uncached_message(source, revision, str(cache)))
    blobs: dict[str, str] = {}
    for path in sorted(snapshot.rglob("*")):
        if path.is_file():
            rel = path.relative_to(snapshot).as_posix()
            blobs[rel] = Path(os.readlink(path)).name if path.is_symlink() else hashlib.sha256(path.read_bytes()).hexdigest()
    return commit, blobs, card_metadata(snapshot)


def _is_commit(revision: str) -> bool:
    return len(revision) == 40 and all(ch in "0123456789abcdef" for ch in revision)


def split_digests(source: str, blobs: dict[str, str], meta: dict[str, Any], splits: Sequence[str]) -> dict[str, str]:
    """Per split, a digest of the card and the files under its ``data_files`` folders (see :func:`hub_files`)."""
    digests = {}
    for split in splits:
        folders = {split_folder(p) for p in split_patterns(source, split, meta)} or {"."}
        prefixes = tuple("" if f == "." else f.rstrip("/") + "/" for f in folders)
        files = sorted((path, blob) for path, blob in blobs.items() if path == "README.md" or path.startswith(prefixes))
        digests[split] = hashlib.sha256(json.dumps(files).encode()).hexdigest()
    return digests


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
        check_card(source)
        check_split_folder(source, split)
        check_metadata_files(source, split)
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
        check_images(table, split)
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


# ---------------------------------------------------------------------------
# Resolving dataset.source before anything runs
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ResolvedSource:
    """What ``dataset.source`` names, resolved now (see :func:`resolve_source`)."""

    source: str  #: ``dataset.source`` as written in params.yaml
    kind: str  #: "demo", "local" or "hub"
    location: str  #: the folder read (demo, local mirror) or the hub repo id
    revision: str | None = None  #: ``dataset.revision`` as written (hub only)
    commit: str | None = None  #: the commit the hub (or, offline, the local cache) serves for it
    files: Mapping[str, str] = field(default_factory=dict)  #: hub: split -> digest of the files it reads


def _source_fix(source: str) -> str:
    return (
        f"Fix dataset.source in params.yaml (now {source!r}; or pass --source): 'demo', a Hugging Face dataset "
        f"id such as '{C.HUB_REPO_ID}', or an existing local directory holding a copy of its layout."
    )


def resolve_source(params: Mapping[str, Any], splits: Sequence[str] | None = None) -> ResolvedSource:
    """Resolve ``params["dataset"]`` now, or raise :class:`~sabre_prior.errors.SourceError`.

    * ``demo``: the demo folder (``data/demo``, made by the ``demo_data`` stage; it need not exist yet);
    * a local directory: it must exist (a path that is not a folder is an error naming it);
    * a hub id: one ``dataset_info`` call gives the commit served for ``dataset.revision`` and, per
      split of ``splits`` (default: ``params["splits"]``), a digest of the files it reads there
      (:func:`hub_files`); with ``HF_HUB_OFFLINE=1`` they come from the local cache instead.

    Every failure (hub unreachable, token missing or refused, access not granted, unknown repo or
    revision, folder missing, not in the offline cache) is a :class:`SourceError` whose message names
    the source and what to do. Nothing falls back to what was resolved or fetched earlier.
    """
    data = params.get("dataset") if isinstance(params, Mapping) else None
    if not isinstance(data, Mapping) or not data.get("source"):
        raise SourceError("params.yaml: dataset.source is not set. " + _source_fix(""))
    source = str(data["source"])
    revision = data.get("revision") or None
    wanted = list(params.get("splits") or C.SPLITS) if splits is None else list(splits)
    if source == "demo":
        return ResolvedSource(source, "demo", C.DEMO_DIR)
    try:
        local = is_local_source(source)
    except DataError as exc:
        raise SourceError(f"dataset.source {source!r}: {exc}") from None
    if local:
        return ResolvedSource(source, "local", str(Path(source).expanduser()))
    where = f"dataset.source {source!r}" + (f" at revision {revision!r}" if revision else "")
    try:
        commit, digests = hub_files(source, revision, wanted)
        check_access(source, commit)
    except SabreError as exc:
        raise SourceError(f"{where}: {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - an error we have no message for: named, never ignored
        raise SourceError(
            f"{where}: could not be resolved on the Hugging Face hub ({type(exc).__name__}: {exc}). "
            "Check the network, HF_TOKEN (or `hf auth login`) and dataset.revision, then run again."
        ) from exc
    return ResolvedSource(source, "hub", source, revision, commit, dict(digests))
