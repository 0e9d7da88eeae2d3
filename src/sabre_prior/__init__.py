"""SABRE-Prior: reference pipeline for evaluating VLMs on world-prior stress tests."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("sabre-prior")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"
