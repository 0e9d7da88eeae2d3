"""Atomic, deterministic file writing."""

from __future__ import annotations

import errno
import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, TextIO

from .errors import DataError, DiskFullError, SabreError, WriteError


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()
#: Every temporary file this package writes starts with this (see .dvcignore).
TEMP_PREFIX = ".sabre-tmp."


#: errno values that mean "no room to write": the disk or the user's quota is full.
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})


def disk_full_message(path: str | Path, exc: OSError) -> str:
    """The message for a write that failed for want of space (names the file and the fix)."""
    return (
        f"{path}: cannot write: {os.strerror(exc.errno or errno.ENOSPC).lower()} (errno {exc.errno}). Free space on the "
        f"file system that holds {Path(path).parent or '.'} (or raise the quota) and run the same command again; "
        "the file was not replaced (a previous version, if any, is unchanged)"
    )


#: errno values that mean "this folder cannot be written": permissions, a read-only file system, a file
#: where a folder should be.
NOT_WRITABLE = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EISDIR})


def not_writable_message(path: str | Path, exc: OSError) -> str:
    """The message for a write refused by the file system: names the user's file and folder (never a
    temporary file), says what to do, and that nothing there was changed."""
    p = Path(path)
    folder = p.parent or Path(".")
    if exc.errno == errno.EROFS:
        fix = f"the file system holding {folder} is mounted read-only: remount it read-write or write elsewhere"
    elif exc.errno in (errno.ENOTDIR, errno.EISDIR, errno.EEXIST):
        fix = f"{p} or a folder above it is of the wrong kind (a file where a folder must be, or the reverse): move it away"
    else:
        fix = f"make the folder {folder} writable for you (e.g. chmod u+w {folder}) or write elsewhere"
    return (
        f"{p}: cannot write: {os.strerror(exc.errno or errno.EACCES).lower()} (errno {exc.errno}). {fix[0].upper()}{fix[1:]}, "
        "then run the same command again; nothing in the folder was changed or deleted"
    )


def _write_error(p: Path, exc: OSError) -> SabreError | None:
    if exc.errno in NO_SPACE:
        return DiskFullError(disk_full_message(p, exc))
    if exc.errno in NOT_WRITABLE or exc.errno == errno.EEXIST:  # EEXIST: a file where the folder must be
        return WriteError(not_writable_message(p, exc))
    return None


@contextmanager
def atomic_writer(path: str | Path, mode: str = "w") -> Iterator[TextIO]:
    """Write to a temporary file beside ``path`` and rename it into place on success."""
    p = Path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        # one name pattern for every temp file: .dvcignore keeps it out of DVC's hashes and cache
        # should a kill leave it behind, and `sabre recover` removes it
        fd, tmp = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{p.name}.", suffix=".tmp", dir=p.parent)
    except OSError as exc:
        if (error := _write_error(p, exc)) is not None:
            raise error from None
        raise
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp creates 0600; give the usual permissions
        encoding = None if "b" in mode else "utf-8"
        newline = None if "b" in mode else "\n"
        with os.fdopen(fd, mode, encoding=encoding, newline=newline) as fh:
            yield fh  # type: ignore[misc]
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError) and (error := _write_error(p, exc)) is not None:
            raise error from None
        raise


def dumps_stable(obj: Any) -> str:
    """JSON with sorted keys and a trailing newline: byte-identical for equal data."""
    return json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_json(path: str | Path, obj: Any) -> None:
    with atomic_writer(path) as fh:
        fh.write(dumps_stable(obj))


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> int:
    """Write one compact JSON object per line (keys in the given order); returns the line count."""
    n = 0
    with atomic_writer(path) as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n")
            n += 1
    return n


def write_text(path: str | Path, text: str) -> None:
    with atomic_writer(path) as fh:
        fh.write(text)


def read_json_file(path: str | Path, *, missing: str, error: type[SabreError] = DataError, mapping: bool = False) -> Any:
    """The JSON content of ``path``; errors name the file (``"<path>: <missing>"`` when it is absent);
    ``mapping``: the content must be a JSON object."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{p}: {missing}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise error(f"{p}: not valid JSON: {exc}") from None
    if mapping and not isinstance(data, dict):
        raise error(f"{p}: not a JSON object (it holds a {type(data).__name__}); make it again with the command that writes it")
    return data
