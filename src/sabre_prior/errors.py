"""Error types whose message is meant for the user (printed without a traceback)."""

from __future__ import annotations


class SabreError(Exception):
    """Base class: the CLI prints ``str(exc)`` and exits with :attr:`exit_code`."""

    exit_code = 2


class ConfigError(SabreError):
    """params.yaml (or a model entry) is invalid."""


class DataError(SabreError):
    """The benchmark data violates the contract (names split, row id and field)."""


class AccessError(SabreError):
    """The gated dataset cannot be reached (token missing, access not granted, unknown repo)."""


class SourceError(AccessError):
    """``dataset.source`` cannot be resolved (hub unreachable, no access, unknown revision, missing folder):
    the message names the source and the fix; nothing falls back to data read earlier."""


class PredictionFileError(SabreError):
    """A prediction file is malformed (names file and line)."""


class BackendError(SabreError):
    """A model backend failed in a way the user must fix (unknown backend, missing key...)."""


class DiskFullError(SabreError):
    """A file could not be written: the disk (or quota) is full; names the file."""


class WriteError(SabreError):
    """A file could not be written: its folder is read-only or not a folder; names the file and folder."""


class InferenceIncomplete(SabreError):
    """Some questions failed after all retries; they are not stored as answers."""

    exit_code = 3
