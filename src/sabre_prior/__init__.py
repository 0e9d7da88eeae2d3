"""SABRE-Prior: reference pipeline for evaluating VLMs on world-prior stress tests."""

from typing import Any


def __getattr__(name: str) -> Any:
    """``__version__``, read from the package metadata when first asked for (importing
    ``importlib.metadata`` costs ~40 ms of every command's start-up otherwise)."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("sabre-prior")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        value = "0.0.0+unknown"
    globals()["__version__"] = value
    return value
