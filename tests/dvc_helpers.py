"""Helpers for the DVC tests: temporary git repos of the project, dvc/snakemake runs, output parsing."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

from project import BIN, copy_project, env

GIT_ID = ["-c", "user.name=sabre-tests", "-c", "user.email=tests@example.invalid", "-c", "commit.gpgsign=false"]
#: Planted in the environment of every pipeline run of these tests; must never be written anywhere.
PLANTED = {"HF_TOKEN": "hf_PLANTEDsecret123", "OPENAI_API_KEY": "sk-PLANTEDsecret456", "ANTHROPIC_API_KEY": "sk-ant-PLANTED789"}


def run(
    cmd: list[str], cwd: Path, *, check: bool = True, timeout: float = 900, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a command with the test environment plus the planted secrets; fail with its output."""
    full_env = {**env(), **PLANTED, **(extra_env or {})}
    proc = subprocess.run(cmd, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} (in {cwd}) failed with exit code {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}\n"
            f"--- stderr\n{proc.stderr[-6000:]}"
        )
    return proc


def timed(cmd: list[str], cwd: Path, **kw: object) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.perf_counter()
    proc = run(cmd, cwd, **kw)  # type: ignore[arg-type]
    return proc, time.perf_counter() - start


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run(["git", *GIT_ID, *args], cwd, check=check)


def dvc(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run([str(BIN / "dvc"), *args], cwd, check=check)


def smk(
    cwd: Path, *args: str, check: bool = True, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Snakemake; its output (stdout and stderr) is in ``.stdout + .stderr``."""
    return run([str(BIN / "snakemake"), *args], cwd, check=check, extra_env=extra_env)


def out(proc: subprocess.CompletedProcess[str]) -> str:
    return proc.stdout + proc.stderr


def make_repo(dest: Path) -> Path:
    """A git repo holding one commit of the project as a fresh clone would see it (no data, no results)."""
    copy_project(dest)
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "project snapshot for a test")
    return dest


def clone(src: Path, dest: Path) -> Path:
    run(["git", "clone", "-q", str(src), str(dest)], dest.parent)
    return dest


def copy_tree(src: Path, dest: Path) -> Path:
    """A copy of a working tree with its mtimes (and .git, .dvc/cache, .snakemake)."""
    shutil.copytree(src, dest, symlinks=True)
    return dest


def planned_jobs(output: str) -> dict[str, int]:
    """Rule -> job count from Snakemake's "Job stats" table ({} when there is nothing to do)."""
    if "Nothing to be done" in output:
        return {}
    match = re.search(r"Job stats:\n.*?\n-+\s+-+\n(.*?)\ntotal", output, re.S)
    assert match, f"no job stats in snakemake output:\n{output[-3000:]}"
    jobs = {}
    for line in match.group(1).splitlines():
        name, count = line.split()
        jobs[name] = int(count)
    jobs.pop("all", None)
    return jobs


def dvc_ran_stage(output: str) -> bool:
    """Whether `dvc repro` ran the pipeline stage (its command, Snakemake) rather than finding it unchanged."""
    return "Running stage 'pipeline'" in output


def digests(project: Path) -> dict[str, str]:
    """SHA-256 of every file of what dvc.yaml tracks (the outputs a fresh clone's run makes)."""
    import hashlib

    from sabre_prior.sync import METRICS, PLOTS, TRACKED

    files: list[Path] = []
    for top in (*TRACKED, *METRICS, *PLOTS):
        p = project / top
        files += sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p] if p.is_file() else []
    return {f.relative_to(project).as_posix(): hashlib.sha256(f.read_bytes()).hexdigest() for f in files}


def set_param_models(project: Path, extra: str) -> None:
    """Append model entries (YAML text indented under `models:`) to params.yaml."""
    text = (project / "params.yaml").read_text(encoding="utf-8")
    assert text.rstrip().splitlines()[-1].startswith("    "), "params.yaml must end inside `models:`"
    (project / "params.yaml").write_text(text.rstrip("\n") + "\n" + extra, encoding="utf-8")


NEW_MODEL = """  always_yes_again:
    backend: baseline
    strategy: always_yes
    display_name: Always yes (again)
"""


#: The rules that read every model's outputs: what re-runs, besides a model's own jobs, when any one
#: model's results change (the rules of workflow/rules/ whose inputs expand over all models, and the
#: Snakefile's dvc_lock, which records every output in dvc.lock).
AGGREGATES = frozenset({
    "tables", "figures", "plot_data", "manifest", "compare", "diagnose", "paper_compare", "stability",
    "prompt_sensitivity", "parity", "batch_invariance", "html_report", "dvc_lock",
})  # fmt: skip
#: A model's own jobs (per model, or per model and split/template/repeat).
PER_MODEL = frozenset({"predict", "evaluate", "intervals", "prompt_run", "audit", "audit_run", "batch_audit"})


def jobs_run(output: str) -> list[tuple[str, dict[str, str]]]:
    """(rule, wildcards) of every job in Snakemake's output (its job blocks: `rule X:` or
    `localrule X:` with a `wildcards:` line), the targets `all` and `outputs` and the bookkeeping
    `dvc_lock` left out."""
    jobs = []
    for match in re.finditer(r"^(?:local)?rule (\w+):\n((?:    .*\n?)+)", output, re.M):
        rule, body = match.group(1), match.group(2)
        if rule in ("all", "outputs", "dvc_lock"):
            continue
        wc = re.search(r"^    wildcards: (.*)$", body, re.M)
        pairs = dict(item.split("=", 1) for item in wc.group(1).split(", ")) if wc else {}
        jobs.append((rule, pairs))
    return jobs
