"""The pinned dependency sets (requirements.lock, requirements-test.lock) match pyproject.toml,
environment.yml and the environment the tests run in. Regenerate with `bash scripts/lock.sh`."""

from __future__ import annotations

import atexit
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

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
    [
        ("requirements.lock", ["api"]),
        ("requirements-test.lock", ["api", "local", "cluster", "test"]),
        ("requirements-gpu.lock", ["api", "local"]),
    ],
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


@pytest.mark.torch
def test_the_local_stack_runs_every_processor_family() -> None:
    """torchvision (Qwen2-VL/2.5-VL, LLaVA-OneVision, InternVL video processors) and num2words
    (SmolVLM2) are in the local extra's lock, with PyPI's default torch/torchvision pair (the
    CUDA 13 builds, which also run on CPU: README "Which torch"), not the CPU-only torch 2.13.0
    next to which PyPI's torchvision 0.28.0 cannot load its operators."""
    pins = _pins("requirements-test.lock")
    assert (pins["torch"], pins["torchvision"]) == ("2.14.1", "0.29.1")
    assert "num2words" in pins
    assert "torch" not in _pins("requirements.lock")  # the pipeline alone needs no torch
    installed = metadata.version("torchvision").split("+", 1)[0] if _installed("torchvision") else None
    if installed is not None:
        import torchvision  # noqa: F401  (its C extension loads next to this torch)

        assert installed == pins["torchvision"]


def _installed(name: str) -> bool:
    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def test_gpu_lock_pins_vllm_with_its_torch_and_transformers() -> None:
    gpu = _pins("requirements-gpu.lock")
    wanted = Requirement(next(l for l in (ROOT / "requirements-gpu.in").read_text().splitlines() if l and not l.startswith("#")))
    assert wanted.specifier.contains(Version(gpu["vllm"]))
    for name in ("torch", "torchvision", "transformers", "num2words", "accelerate"):
        assert name in gpu, f"requirements-gpu.lock: {name} missing ({REGENERATE})"
    for req in _requirements(["api", "local"]):
        assert req.specifier.contains(Version(gpu[_norm(req.name)]), prereleases=True), f"requirements-gpu.lock: {req} vs {gpu[_norm(req.name)]}"


_SKIP_REGISTRY = os.environ.get("SABRE_SKIP_REGISTRY") == "1"
_dry_run: dict[str, Any] = {}


def _start_gpu_lock_dry_run() -> None:
    """Start pip's resolution of requirements-gpu.lock in the background (network-bound, minutes).

    Called once by tests/conftest.py right after collection when the test below is selected,
    so that the resolution overlaps the rest of the suite; the test waits for it."""
    if _dry_run or _SKIP_REGISTRY or Version(metadata.version("pip")) < Version("25.0"):
        return
    tmp = Path(tempfile.mkdtemp(prefix="sabre-gpu-lock-"))
    report = tmp / "report.json"
    env = dict(os.environ, PIP_CONSTRAINT="/dev/null")  # a GPU machine has no constraints of ours
    stderr = open(tmp / "stderr.txt", "w+", encoding="utf-8")  # a file, not a pipe: pip never blocks on it
    proc = subprocess.Popen(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet", "--use-feature=fast-deps",
         "--report", str(report), "-r", str(ROOT / "requirements-gpu.lock")],
        stdout=subprocess.DEVNULL, stderr=stderr, text=True, env=env,
    )  # fmt: skip
    atexit.register(lambda: (proc.kill(), proc.wait(), stderr.close(), shutil.rmtree(tmp, ignore_errors=True)))
    _dry_run.update(proc=proc, report=report, stderr=stderr, started=time.monotonic())


@pytest.mark.slow
@pytest.mark.skipif(_SKIP_REGISTRY, reason="SABRE_SKIP_REGISTRY=1: no package registry here")
def test_gpu_lock_resolves_to_itself() -> None:
    """pip's resolver, from the registry's wheel metadata only (lazy wheels: no CUDA wheel is
    downloaded), installs exactly requirements-gpu.lock: every pin exists for Linux x86_64 /
    Python 3.11 and the pins satisfy each other. Fails as soon as the lock drifts."""
    pip_version = Version(metadata.version("pip"))
    if pip_version < Version("25.0"):
        pytest.skip(f"pip {pip_version} downloads whole wheels in --dry-run; scripts/install.sh installs pip 26.3")
    _start_gpu_lock_dry_run()  # a no-op when conftest.py started it after collection
    proc = _dry_run["proc"]
    proc.wait(timeout=max(1.0, 900 - (time.monotonic() - _dry_run["started"])))
    _dry_run["stderr"].seek(0)
    stderr = _dry_run["stderr"].read()
    assert proc.returncode == 0, f"requirements-gpu.lock does not resolve ({REGENERATE}):\n{stderr[-3000:]}"
    report = _dry_run["report"]
    resolved = {_norm(i["metadata"]["name"]): i["metadata"]["version"].split("+", 1)[0] for i in json.loads(report.read_text())["install"]}
    assert resolved == _pins("requirements-gpu.lock")


test_gpu_lock_resolves_to_itself.start_early = _start_gpu_lock_dry_run  # type: ignore[attr-defined]


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


def _documented_local_install() -> str:
    """The pip command docs/local_models.md gives for the local-model stack (one, in a code block)."""
    text = (ROOT / "docs" / "local_models.md").read_text(encoding="utf-8")
    found = re.findall(r"^(pip install -e '\.\[local\]'[^\n#]*?)\s*$", text, flags=re.M)
    assert len(found) == 1, found
    return found[0]


def test_install_sh_local_installs_what_the_docs_say() -> None:
    """`scripts/install.sh --local` and the pip command of the docs pass the same extra and constraints."""
    args = _documented_local_install().removeprefix("pip install ")
    assert f"uv_install {args}\n" in (ROOT / "scripts" / "install.sh").read_text()
    assert "bash scripts/install.sh --local" in (ROOT / "README.md").read_text()


@pytest.mark.slow
@pytest.mark.skipif(_SKIP_REGISTRY, reason="SABRE_SKIP_REGISTRY=1: no package registry here")
def test_the_documented_local_install_installs_the_locked_versions(tmp_path: Path) -> None:
    """Issue 33: `pip install -e '.[local]'` installed transformers 5.25 / accelerate 1.16 where the lock
    pins 5.24 / 1.15. The documented command, run by pip's resolver as a dry run (a real install
    unpacks ~4 GB of torch and CUDA wheels; the dry run resolves the same set with the same resolver
    and installs nothing), resolves to exactly the versions requirements-test.lock pins."""
    report = tmp_path / "report.json"
    words = shlex.split(_documented_local_install())
    assert words[:2] == ["pip", "install"]
    proc = subprocess.run([sys.executable, "-m", *words, "--dry-run", "--ignore-installed", "--quiet", "--report", str(report)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    resolved = {_norm(i["metadata"]["name"]): i["metadata"]["version"].split("+", 1)[0] for i in json.loads(report.read_text())["install"]}
    resolved.pop("sabre-prior")
    pins = _pins("requirements-test.lock")
    assert {n: (v, pins.get(n)) for n, v in resolved.items() if pins.get(n) != v} == {}
    for name in ("transformers", "accelerate", "torch", "torchvision", "num2words"):
        assert resolved[name] == pins[name]
