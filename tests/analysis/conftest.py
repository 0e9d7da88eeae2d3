"""Fixtures of the analysis tests: a synthetic project in the contract formats."""

from __future__ import annotations

from pathlib import Path

import pytest
from synthetic_project import make_project


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A synthetic project (data, params, traces, metrics of four models); the cwd is its root."""
    root = make_project(tmp_path / "proj")
    monkeypatch.chdir(root)
    return root
