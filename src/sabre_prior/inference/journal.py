"""The crash-safe response journal: never pay twice for the same call.

One append-only JSON Lines file per model and split,
``.sabre/journal/<model>/<split>.jsonl`` (:data:`contracts.JOURNAL_DIR`).  Each
successful response is appended as one line with a single ``write()`` as it
arrives (from then on it survives a SIGKILL or an OOM kill of the process) and
is ``fsync``-ed to disk right after, by a background thread that does not hold
up the event loop, at most every 0.1 s (so a power cut loses at most the answers of the last 0.1 s).

Lines are keyed by content (:func:`request_key`): backend and provider, model
id, the generation settings, the prompt template and its version, the rendered
prompt text and the sha256 of the image bytes actually sent.  Row order, file
paths, concurrency, rate limits and prices are not part of the key, so
re-running after a kill, after deleting the predictions, or with different
operational settings reuses every completed call; editing the prompt, the
image policy or a generation setting makes new calls.

The journal stores responses only: never the API key, the prompt or the image.
Each line has an ``outcome`` (:mod:`sabre_prior.inference.outcomes`): ``answer`` (lines
written before outcomes existed count as answers), ``empty`` (an empty answer
kept as the model's answer), ``refusal`` (final for its question, never a
prediction; a later line for the same key supersedes it, so that a run asked
to send refusals again keeps the new response) or ``failure``: the billed
tokens of a question that failed, kept for honest spend and never read back as
a result (a failure is never an answer).  A torn last line
(a kill in the middle of a write) is cut off when the journal is opened; other
unreadable lines are skipped with a warning.  An exclusive ``flock`` keeps two
processes from writing the same journal.

The journal lives outside the DVC-tracked outputs on purpose: it holds paid
responses that may be worth keeping locally, it is ignored by git (``/.sabre/``)
and it is not a pipeline output, so ``dvc repro`` and Snakemake neither delete
nor version it.  Deleting it means paying again.
"""

from __future__ import annotations

import datetime as _dt
import errno
import hashlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any, Iterator, Mapping

from .. import contracts as C
from ..errors import BackendError

log = logging.getLogger(__name__)

#: Version of the journal line format.
JOURNAL_FORMAT = 1
#: the longest a written line waits for its fsync (the background thread's group commit)
SYNC_INTERVAL_S = 0.1
#: the encoders of a request key's canonical JSON and of a journal line, made once (``json.dumps``
#: with options builds an encoder per call)
_KEY_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
_LINE_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def journal_path(model: str, split: str, root: str | Path = ".", journal_dir: str | Path | None = None) -> Path:
    """``<root>/.sabre/journal/<model>/<split>.jsonl`` (or under ``journal_dir``)."""
    base = Path(journal_dir) if journal_dir is not None else Path(root) / C.JOURNAL_DIR
    return base / model / f"{split}.jsonl"


def template_journal_dir(template: str, root: str | Path = ".") -> Path:
    """The journal folder of a prompt-sensitivity template (``.sabre/journal/prompts/<template>``)."""
    return Path(root) / C.JOURNAL_DIR / "prompts" / template


def request_key(
    identity: Mapping[str, Any],
    template: str,
    template_version: str,
    prompt: str,
    image_sha256: str,
    repeat: int = 0,
) -> str:
    """The content hash that identifies one call (sha256 of canonical JSON).

    ``repeat`` (the stability audit's, issue 21) enters the key only when > 0: repeat 0 is the
    main run's call, and every other repeat is a call of its own.
    """
    payload: dict[str, Any] = {
        "identity": identity,
        "template": template,
        "template_version": template_version,
        "prompt": prompt,
        "image_sha256": image_sha256,
    }
    if repeat:
        payload["repeat"] = int(repeat)
    blob = _KEY_JSON.encode(payload)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def outcome_of(record: Mapping[str, Any]) -> str:
    """A journal line's outcome (``answer`` for lines written before outcomes were recorded)."""
    return str(record.get("outcome") or "answer")


def is_refusal(record: Mapping[str, Any]) -> bool:
    return outcome_of(record) == "refusal"


def _keep(records: dict[str, dict[str, Any]], spent: dict[str, list[dict[str, Any]]] | None, rec: dict[str, Any]) -> None:
    """Add one line: a failure's spend aside; otherwise the first result per key, except that a
    later line supersedes a refusal."""
    if outcome_of(rec) == "failure":
        if spent is not None:
            spent.setdefault(rec["key"], []).append(rec)
        return
    old = records.get(rec["key"])
    if old is None or is_refusal(old):
        records[rec["key"]] = rec


def _utc_now() -> str:
    """``%Y-%m-%dT%H:%M:%S.%fZ`` (isoformat: a third of strftime's time)."""
    return _dt.datetime.now(_dt.timezone.utc).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _parse_lines(data: bytes, path: Path) -> Iterator[dict[str, Any]]:
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError):
            log.warning("%s:%d: unreadable journal line skipped", path, lineno)
            continue
        if isinstance(rec, dict) and isinstance(rec.get("key"), str) and isinstance(rec.get("text"), str):
            yield rec
        else:
            log.warning("%s:%d: journal line without key/text skipped", path, lineno)


def read_journal(
    path: str | Path, spent: dict[str, list[dict[str, Any]]] | None = None
) -> dict[str, dict[str, Any]]:
    """Key -> its result record (read-only; a torn last line is ignored).

    Failure lines (billed spend of failed questions) are never results; they go
    to ``spent`` (key -> lines) when given.
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        return {}
    cut = data.rfind(b"\n") + 1
    records: dict[str, dict[str, Any]] = {}
    for rec in _parse_lines(data[:cut], p):
        _keep(records, spent, rec)
    return records


class Journal:
    """An open, locked journal: look up completed calls, append new ones."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            self._lock()
            self.torn_bytes = self._cut_torn_tail()
            self._spent: dict[str, list[dict[str, Any]]] = {}
            self._records = read_journal(self.path, self._spent)
        except BaseException:
            os.close(self._fd)
            raise
        self.appended = 0
        self._dirty = threading.Event()
        self._wake = threading.Event()
        self._closing = False
        self._syncer = threading.Thread(target=self._sync_loop, name=f"journal-fsync:{self.path.name}", daemon=True)
        self._syncer.start()

    def _sync_loop(self) -> None:
        """Group commit: fsync whenever lines were written since the last fsync, at most every
        :data:`SYNC_INTERVAL_S` (a thread woken for every line took a sixth of the CPU per call)."""
        while True:
            self._dirty.wait()
            self._dirty.clear()
            if self._fd < 0:
                return
            try:
                os.fsync(self._fd)
            except OSError:  # closed under us: the final fsync in close() covers it
                return
            if self._closing:
                return
            self._wake.wait(SYNC_INTERVAL_S)  # close() cuts it short

    # -- opening ------------------------------------------------------------------
    def _lock(self) -> None:
        import fcntl

        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise BackendError(
                    f"{self.path}: another sabre process is running this model and split (journal locked)"
                ) from exc
            raise

    def _cut_torn_tail(self) -> int:
        size = os.fstat(self._fd).st_size
        if size == 0:
            return 0
        with open(self.path, "rb") as fh:
            data = fh.read()
        cut = data.rfind(b"\n") + 1
        if cut == len(data):
            return 0
        os.ftruncate(self._fd, cut)
        os.fsync(self._fd)
        log.warning("%s: ignored a torn last line (%d bytes) left by an interrupted run", self.path, len(data) - cut)
        return len(data) - cut

    # -- use ------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, key: object) -> bool:
        return key in self._records

    def get(self, key: str) -> dict[str, Any] | None:
        return self._records.get(key)

    def spent(self, key: str) -> list[dict[str, Any]]:
        """Failure lines of ``key``: what earlier failed attempts were billed."""
        return self._spent.get(key, [])

    def append(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """Append one response (must hold ``key`` and ``text``): written at once, fsync-ed in the background."""
        rec = {"v": JOURNAL_FORMAT, **record}
        rec.setdefault("time", _utc_now())
        if not isinstance(rec.get("key"), str) or not isinstance(rec.get("text"), str):
            raise ValueError("a journal record needs a string key and text")
        line = (_LINE_JSON.encode(rec) + "\n").encode("utf-8")
        view = memoryview(line)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        if not self._dirty.is_set():  # set already: the syncer has yet to clear it, and its fsync follows
            self._dirty.set()
        _keep(self._records, self._spent, rec)
        self.appended += 1
        return rec

    def sync(self) -> None:
        """fsync now (also done by :meth:`close`)."""
        if self._fd >= 0:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            self._closing = True
            self._dirty.set()
            self._wake.set()
            self._syncer.join()
            os.fsync(self._fd)
            os.close(self._fd)  # releases the flock
            self._fd = -1

    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
