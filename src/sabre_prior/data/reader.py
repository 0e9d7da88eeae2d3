"""A split's rows for ``sabre predict``, read in a forked child process (pyarrow stays out of this one).

Before its first request ``sabre predict`` needs the first question (pyarrow's and numpy's import
and the first Parquet rows: ~0.2 s of CPU) and an HTTP client (its import and set-up: ~0.1 s). In
one process both run under the GIL, one after the other. :func:`open_rows` forks a child as soon as
the command line is parsed: the child imports pyarrow and sends the rows of
:func:`sabre_prior.data.parquet.iter_rows` through a pipe, pickled, while this process reads the
settings and sets up the HTTP client on the other core; this process never imports pyarrow.

- The pipe holds about a megabyte: the child reads only a few rows ahead, so memory stays flat
  in the number of questions, as with the in-process reader.
- The child's first message is the row count (the progress bar's total) or the error met opening
  the file; an error later in the file comes where it happened. Either is raised in this process
  when the rows are iterated, with the message :func:`~sabre_prior.data.parquet.iter_rows` gives.
- Closing the rows early (an error, an aborted run) kills the child; the child leaves by itself
  when this process dies (its next write fails).
- Where ``os.fork`` is missing, or another thread already runs (forking is then unsafe), the rows
  are read in this process (:class:`LocalRows`), with the same interface.
"""

from __future__ import annotations

import os
import pickle
import signal
import threading
from pathlib import Path
from typing import Any, Iterator

_MIME = {
    b"\xff\xd8\xff": "image/jpeg",
    b"\x89PNG": "image/png",
    b"GIF8": "image/gif",
    b"RIFF": "image/webp",
}

#: Rows read from the Parquet file at a time: small, so that the first question comes early.
FIRST_READ_BATCH = 8
#: The pipe's size (Linux: ``F_SETPIPE_SZ``; the default is 64 KiB, less than one photo-sized row).
PIPE_BYTES = 1 << 20


def image_mime(data: bytes) -> str:
    """The image's MIME type from its first bytes."""
    for magic, mime in _MIME.items():
        if data.startswith(magic):
            return mime
    return "application/octet-stream"


class LocalRows:
    """The rows read in this process (:func:`~sabre_prior.data.parquet.iter_rows`)."""

    def __init__(self, path: Path, batch_size: int = FIRST_READ_BATCH) -> None:
        self.path = path
        self.batch_size = batch_size

    def count(self) -> int | None:
        """The number of rows, or None when the file cannot be read (iterating then raises why)."""
        try:
            import pyarrow.parquet as pq

            return int(pq.ParquetFile(self.path).metadata.num_rows)
        except Exception:  # a missing or broken file is reported by the reader with its context
            return None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        from .parquet import iter_rows

        return iter_rows(self.path, with_images=True, batch_size=self.batch_size)

    def close(self) -> None:
        pass


class ForkedRows:
    """The rows read by a forked child process and received through a pipe (see the module's doc)."""

    def __init__(self, path: Path, batch_size: int = FIRST_READ_BATCH) -> None:
        self.path = path
        read_end, write_end = os.pipe()
        try:
            import fcntl

            fcntl.fcntl(write_end, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
        except (ImportError, OSError):  # not Linux, or over /proc/sys/fs/pipe-max-size: the default size
            pass
        try:
            pid = os.fork()
        except OSError:  # no process to be had (EAGAIN, ENOMEM): open_rows reads in this process instead
            os.close(read_end)
            os.close(write_end)
            raise
        if pid == 0:  # the child: never returns
            os.close(read_end)
            _serve(write_end, path, batch_size)
        os.close(write_end)
        self._pid: int | None = pid
        self._in = os.fdopen(read_end, "rb", buffering=1 << 16)
        self._count: int | None = None
        self._error: BaseException | None = None
        self._header = False
        self._ended = False

    def _read(self) -> tuple[str, Any]:
        try:
            kind, value = pickle.load(self._in)
        except (EOFError, pickle.UnpicklingError, ValueError, OSError):
            status = self._reap(kill=False)
            from ..errors import DataError

            raise DataError(f"{self.path}: the process reading the rows stopped before the end ({status})") from None
        return kind, value

    def _read_header(self) -> None:
        if self._header:
            return
        self._header = True
        try:
            kind, value = self._read()
        except Exception as exc:  # the child stopped before its first message: raised when iterating
            self._error = exc
            return
        if kind == "count":
            self._count = value
        else:
            self._error = value

    def count(self) -> int | None:
        """The number of rows, or None when the file cannot be read (iterating then raises why)."""
        self._read_header()
        return self._count

    def __iter__(self) -> Iterator[dict[str, Any]]:
        try:
            self._read_header()
            if self._error is not None:
                raise self._error
            while True:
                kind, value = self._read()
                if kind == "row":
                    yield value
                elif kind == "end":
                    self._ended = True
                    return
                else:
                    raise value
        finally:
            self.close()

    def close(self) -> None:
        """Stop the child (at once, unless it sent every row) and release the pipe."""
        if not self._in.closed:
            self._in.close()
        self._reap(kill=not self._ended)

    def _reap(self, *, kill: bool) -> str:
        if self._pid is None:
            return "already ended"
        pid, self._pid = self._pid, None
        if kill:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        return f"exit status {code}" if code >= 0 else f"killed by signal {-code}"

    def __del__(self) -> None:  # a stream dropped unread must not leave its child behind
        try:
            self.close()
        except Exception:
            pass


def _serve(fd: int, path: Path, batch_size: int) -> None:
    """The child: send ``("count", n)`` (or ``("error", exc)``), then ``("row", row)``..., ``("end", None)``."""
    code = 0
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)  # the child writes nothing but the pipe (stderr stays, for a crash)
        out = os.fdopen(fd, "wb", buffering=1 << 16)
        try:
            from .parquet import iter_rows
            import pyarrow.parquet as pq

            try:
                count: int | None = int(pq.ParquetFile(path).metadata.num_rows)
            except Exception:
                count = None  # the reader below raises the error, with its context
            pickle.dump(("count", count), out)
            for row in iter_rows(path, with_images=True, batch_size=batch_size):
                pickle.dump(("row", row), out, protocol=pickle.HIGHEST_PROTOCOL)
            pickle.dump(("end", None), out)
            out.flush()
        except BrokenPipeError:
            pass  # the parent closed the rows (or died): nothing left to do
        except BaseException as exc:  # noqa: BLE001 - sent to the parent, raised there
            try:
                pickle.dump(("error", _picklable(exc, path)), out)
                out.flush()
            except BrokenPipeError:
                pass
    except BaseException:  # noqa: BLE001 - the parent reports a child that stopped early
        code = 1
    finally:
        os._exit(code)


def _picklable(exc: BaseException, path: Path) -> BaseException:
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        from ..errors import DataError

        return DataError(f"{path}: reading the rows failed: {type(exc).__name__}: {exc}")


def open_rows(path: str | Path, batch_size: int = FIRST_READ_BATCH) -> ForkedRows | LocalRows:
    """The rows of a Parquet split, read in a forked child where that is safe, else in this process."""
    p = Path(path)
    if hasattr(os, "fork") and threading.active_count() == 1:
        try:
            return ForkedRows(p, batch_size)
        except OSError:
            pass
    return LocalRows(p, batch_size)
