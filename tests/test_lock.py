"""The pinned dependency sets (requirements.lock, requirements-test.lock) match pyproject.toml,
environment.yml and the environment the tests run in. Regenerate with `bash scripts/lock.sh`."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
REGENERATE = "regenerate with `bash scripts/lock.sh`"
CONDA_TO_PYPI = {"pytorch": "torch"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(name: str) -> dict[str, str]:
    pins: dict[str, str] = {}
    for n, line in enumerate((ROOT / name).read_text().splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;]+)", line)
        assert match, f"{name}:{n}: not a `name==version` pin: {line!r}"
        key = _norm(match.group(1))
        assert key not in pins, f"{name}:{n}: {key} pinned twice"
        pins[key] = match.group(2)
    assert list(pins) == sorted(pins), f"{name}: pins not sorted ({REGENERATE})"
    return pins


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _requirements(extras: list[str]) -> list[Requirement]:
    project = _pyproject()
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in extras:
        reqs += [Requirement(r) for r in project["optional-dependencies"][extra]]
    return reqs


@pytest.mark.parametrize(
    ("lock", "extras"),
    [("requirements.lock", ["api"]), ("requirements-test.lock", ["api", "local", "cluster", "test"])],
)
def test_lock_pins_every_declared_dependency_within_its_range(lock: str, extras: list[str]) -> None:
    pins = _pins(lock)
    for req in _requirements(extras):
        name = _norm(req.name)
        assert name in pins, f"{lock}: {req} from pyproject.toml is not pinned ({REGENERATE})"
        assert req.specifier.contains(Version(pins[name]), prereleases=True), f"{lock}: {name}=={pins[name]} violates {req}"


def test_test_lock_extends_the_pipeline_lock_with_the_same_versions() -> None:
    base, full = _pins("requirements.lock"), _pins("requirements-test.lock")
    assert {k: full.get(k) for k in base} == base


def test_torch_is_pinned_to_the_cpu_build_release() -> None:
    assert _pins("requirements-test.lock")["torch"] == "2.13.0"
    assert "torch" not in _pins("requirements.lock")  # the pipeline alone needs no torch


def test_environment_yml_is_in_step_with_the_lock() -> None:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pins = _pins("requirements-test.lock")
    names = []
    for dep in env["dependencies"]:
        if not isinstance(dep, str):
            continue
        req = Requirement(dep.replace(" ", ""))
        name = _norm(CONDA_TO_PYPI.get(req.name, req.name))
        if name in ("python", "pip"):
            continue
        names.append(name)
        assert name in pins, f"environment.yml: {dep} is not in requirements-test.lock ({REGENERATE})"
        assert req.specifier.contains(Version(pins[name]), prereleases=True), f"environment.yml: {dep} vs {name}=={pins[name]}"
    assert len(names) >= 10


def test_this_environment_is_the_locked_one() -> None:
    """CI installs requirements.lock: the packages the tests import are exactly those versions."""
    mismatched = {}
    for name, version in _pins("requirements.lock").items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            installed = "missing"
        if installed.split("+", 1)[0] != version:
            mismatched[name] = (version, installed)
    assert not mismatched, f"installed versions differ from requirements.lock (pinned, installed): {mismatched}"
