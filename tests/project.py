"""Helpers for tests that run the real workflow in a temporary copy of the project."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
#: The SLURM executor plugins, which ``scripts/install.sh --test`` installs apart from the venv (there: why).
CLUSTER_PLUGINS = Path(sys.prefix) / "cluster"


def project_files() -> list[str]:
    """Files git would hand to a fresh clone (tracked + untracked-not-ignored)."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.decode()
    return [f for f in out.split("\0") if f and (ROOT / f).exists()]


def copy_project(dest: Path) -> Path:
    """Copy the project's source tree (no data, results, caches) into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    for rel in project_files():
        src = ROOT / rel
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            target.symlink_to(os.readlink(src))
        else:
            shutil.copy2(src, target)
    return dest


def env() -> dict[str, str]:
    """The environment for subprocesses: this interpreter's bin first on PATH (for `sabre`)."""
    e = dict(os.environ)
    e["PATH"] = f"{BIN}{os.pathsep}{e.get('PATH', '')}"
    e.setdefault("PYTHONHASHSEED", "0")
    return e


def cluster_env(base: dict[str, str]) -> dict[str, str]:
    """``base`` with the SLURM executor plugins on PYTHONPATH (sbatch's --export=ALL hands it to the jobs)."""
    e = dict(base)
    e["PYTHONPATH"] = os.pathsep.join(p for p in (str(CLUSTER_PLUGINS), e.get("PYTHONPATH", "")) if p)
    return e


def cluster_plugin_missing() -> str | None:
    """Why the SLURM executor plugin cannot be used here, or None."""
    import importlib.machinery
    import importlib.util

    name = "snakemake_executor_plugin_slurm"
    if importlib.util.find_spec(name) or importlib.machinery.PathFinder.find_spec(name, [str(CLUSTER_PLUGINS)]):
        return None
    return f"snakemake-executor-plugin-slurm is not installed (bash scripts/install.sh --test puts it in {CLUSTER_PLUGINS})"


def run(
    cmd: list[str], cwd: Path, timeout: float = 600, check: bool = True, environ: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, cwd=cwd, env=environ or env(), capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} failed with exit code {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}\n"
            f"--- stderr\n{proc.stderr[-6000:]}"
        )
    return proc


def snakemake(args: list[str], cwd: Path, **kw) -> subprocess.CompletedProcess[str]:
    return run([str(BIN / "snakemake"), *args], cwd, **kw)


def built_once(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """``build(dir)`` once per test run: under pytest-xdist the workers share one result (the
    pattern of pytest-xdist's docs, "Making session-scoped fixtures execute only once": a file
    lock in the directory all workers' base temp dirs share); without xdist, once per session.
    For the expensive fixtures (whole pipeline runs) that a module-scoped fixture would build again
    in every worker running one of its tests. What is built is read-only for the tests (each
    copies what it changes)."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        out = tmp_path_factory.mktemp(name)
        build(out)
        return out
    from filelock import FileLock

    out = tmp_path_factory.getbasetemp().parent / f"shared-{name}"
    with FileLock(f"{out}.lock"):
        if not (out / ".built").is_file():
            shutil.rmtree(out, ignore_errors=True)  # what a worker that failed half way left
            out.mkdir()
            build(out)
            (out / ".built").write_text("", encoding="utf-8")
    return out


def detailed_summary(project: Path) -> list[dict[str, str]]:
    """`snakemake --detailed-summary all` (Snakemake's own listing of every output: its rule, inputs and
    shell command), one dict per output file: output, rule, inputs (a list), shellcmd, status."""
    out = snakemake(["--detailed-summary", "all"], project).stdout
    lines = [line for line in out.splitlines() if "\t" in line]
    header = lines[0].split("\t")
    rows = []
    for line in lines[1:]:
        row = dict(zip(header, line.split("\t")))
        rows.append({
            "output": row["output_file"], "rule": row["rule"], "inputs": row["input-file(s)"].split(","),
            "shellcmd": row["shellcmd"], "status": row["status"],
        })  # fmt: skip
    return rows
