"""One run at a time: whichever orchestrator starts second refuses at once.

* Snakemake's planner (main process) takes ``.sabre/run.lock`` exclusively and, for the whole run,
  also holds DVC's own repository lock ``.dvc/tmp/lock`` (DVC takes it with ``zc.lockfile``, an
  ``fcntl.flock``; see dvc/lock.py), releasing it only around its own ``dvc`` calls. So a
  ``dvc repro`` started during a Snakemake run fails at once with DVC's "Unable to acquire lock".
* A Snakemake started while DVC holds its lock (``dvc repro`` running) refuses: :func:`dvc_busy`.
* A ``sabre`` command run by hand (not as a job: no ``DVC_STAGE``, which DVC sets for every stage
  command (dvc/stage/run.py), and no ``SABRE_RUN``, which the planner exports to Snakemake's jobs)
  that would write a pipeline output refuses while either tool runs.

The locks are ``flock`` locks: the kernel drops them when the holder dies, so a kill leaves
nothing to clean up.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from ..errors import SabreError

RUN_LOCK = ".sabre/run.lock"
DVC_LOCK = ".dvc/tmp/lock"
RUN_ENV = "SABRE_RUN"


class Busy(SabreError):
    exit_code = 3


def _try(path: Path, mode: int) -> int | None:
    """An fd holding ``flock(mode)`` on ``path``, or None when someone else holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _release(fd: int | None) -> None:
    if fd is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def dvc_busy(root: Path) -> bool:
    """DVC holds its repository lock (a ``dvc repro`` or another DVC command runs)."""
    if not (root / ".dvc").is_dir():
        return False
    fd = _try(root / DVC_LOCK, fcntl.LOCK_EX)
    if fd is None:
        return True
    _release(fd)
    return False


def as_job() -> bool:
    """This process is a pipeline job (under DVC or Snakemake), not a command run by hand."""
    return bool(os.environ.get("DVC_STAGE") or os.environ.get(RUN_ENV))


class RunLock:
    """The orchestrator's lock (held by Snakemake's planner for the whole run)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._run: int | None = None
        self._dvc: int | None = None

    def acquire(self) -> None:
        self._run = _try(self.root / RUN_LOCK, fcntl.LOCK_EX)
        if self._run is None:
            raise Busy(
                f"{self.root.resolve()}: another Snakemake run of this project is in progress "
                f"(it holds {RUN_LOCK}); wait for it to finish, or stop it first"
            )
        self.hold_dvc()

    def hold_dvc(self) -> None:
        """Take DVC's lock (refusing when DVC runs)."""
        if not (self.root / ".dvc").is_dir() or self._dvc is not None:
            return
        self._dvc = _try(self.root / DVC_LOCK, fcntl.LOCK_EX)
        if self._dvc is None:
            self.release()
            raise Busy(
                f"{self.root.resolve()}: a DVC command (`dvc repro`?) is running on this project "
                f"(it holds {DVC_LOCK}); wait for it to finish before starting Snakemake"
            )

    def lend_dvc(self) -> None:
        """Let our own ``dvc`` subprocess take DVC's lock."""
        _release(self._dvc)
        self._dvc = None

    def release(self) -> None:
        _release(self._dvc)
        _release(self._run)
        self._dvc = self._run = None


def refuse_hand_run_while_busy(root: Path, what: str) -> None:
    """A hand-run command that would write ``what`` refuses while an orchestrator runs."""
    if as_job():
        return
    fd = _try(root / RUN_LOCK, fcntl.LOCK_SH) if (root / ".sabre").is_dir() else None
    if (root / ".sabre").is_dir() and fd is None:
        raise Busy(f"a Snakemake run of this project is in progress; `{what}` would write its outputs: wait for it")
    _release(fd)
    if dvc_busy(root):
        raise Busy(f"`dvc repro` (or another DVC command) is running on this project; `{what}` would write its outputs: wait for it")
