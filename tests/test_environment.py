"""pyproject.toml and environment.yml declare the same dependencies."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]

# conda-forge names that differ from the PyPI distribution names
CONDA_TO_PYPI = {"pytorch": "torch"}


def _name_spec(req: str) -> tuple[str, str]:
    m = re.match(r"^\s*([A-Za-z0-9_.\-]+)\s*(.*)$", req)
    assert m, req
    name = m.group(1).lower().replace("_", "-")
    spec = re.sub(r"\s+", "", m.group(2).split(";")[0])
    return CONDA_TO_PYPI.get(name, name), spec


def _pyproject_requirements() -> dict[str, str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    reqs = list(data["project"]["dependencies"])
    for extra in data["project"].get("optional-dependencies", {}).values():
        reqs.extend(extra)
    out: dict[str, str] = {}
    for r in reqs:
        name, spec = _name_spec(r)
        out[name] = spec
    return out


def _conda_requirements() -> dict[str, str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    out: dict[str, str] = {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):  # the pip: section installs the project itself
            for pip_dep in dep.get("pip", []):
                if not pip_dep.startswith("-e"):
                    name, spec = _name_spec(pip_dep)
                    out[name] = spec
            continue
        name, spec = _name_spec(dep)
        if name in ("python", "pip"):
            continue
        out[name] = spec.replace("==", "==").rstrip("=")
    return out


def test_environment_yml_matches_pyproject() -> None:
    py = _pyproject_requirements()
    conda = _conda_requirements()
    assert sorted(set(py) - set(conda)) == [], "in pyproject.toml but not environment.yml"
    assert sorted(set(conda) - set(py)) == [], "in environment.yml but not pyproject.toml"
    mismatched = {n: (py[n], conda[n]) for n in py if py[n] != conda[n]}
    assert mismatched == {}, "version specifiers differ (pyproject, environment.yml)"


def test_python_requirement_matches() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    py_spec = [d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python")]
    assert py_spec == ["python" + data["project"]["requires-python"]]
