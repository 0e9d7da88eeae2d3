"""Every Snakemake command shown in README.md, docs/ and configs/ parses with the pinned Snakemake.

Each command is taken from the text as a reader would copy it (fenced code
blocks with their line continuations, inline code spans, and comment lines of
the config files), then run with ``-n`` (dry run) in one temporary copy of the
demo project.  A nargs option left in front of the target (``--resources
api_jobs=2 all``) makes Snakemake read the target as a resource and fail here.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.project import ROOT, cluster_env, copy_project, env, snakemake

SOURCES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")), *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "configs").glob("*.yaml"))]
PLACEHOLDERS = {"<GPUs on this machine>": "1"}
#: options that need a finished run to do their work; here only their parsing is checked
#: (tests/analysis/test_workflow.py runs `snakemake --report` after a full demo run)
NEEDS_A_RUN = ("--report",)
PARSE_ERRORS = ("unrecognized arguments", "error: argument", "usage: snakemake", "Invalid resource", "dictionary update sequence")


def _segments(line: str) -> list[str]:
    """The snakemake invocations of one shell line (split at && ; |, comments cut)."""
    line = re.sub(r"\s#.*$", "", line)
    out = []
    for part in re.split(r"&&|;|\|\|", line):
        part = part.strip()
        if part.startswith("snakemake ") or part == "snakemake":
            out.append(part)
    return out


def documented_commands() -> list[tuple[str, str]]:
    """(where, command) for every snakemake command in the sources."""
    found: list[tuple[str, str]] = []
    for rel in SOURCES:
        text = (ROOT / rel).read_text(encoding="utf-8")
        lines = text.splitlines()
        if rel.endswith(".yaml"):  # commands in comments: `#   snakemake ...` or `` # `snakemake ...` ``
            for n, line in enumerate(lines, 1):
                body = line.lstrip()
                if body.startswith("#"):
                    for cmd in re.findall(r"`(snakemake[^`]*)`", body) or _segments(body.lstrip("# ")):
                        found.append((f"{rel}:{n}", cmd))
            continue
        in_block = False
        pending = ""
        for n, line in enumerate(lines, 1):
            if line.lstrip().startswith("```"):
                in_block = not in_block
                continue
            if in_block:
                joined = pending + line
                if joined.rstrip().endswith("\\"):
                    pending = joined.rstrip()[:-1] + " "
                    continue
                pending = ""
                found.extend((f"{rel}:{n}", cmd) for cmd in _segments(joined))
            else:
                for span in re.findall(r"`([^`]+)`", line):
                    found.extend((f"{rel}:{n}", cmd) for cmd in _segments(span))
    return found


COMMANDS = documented_commands()


def test_the_documented_commands_are_found() -> None:
    where = {w.split(":")[0] for w, _ in COMMANDS}
    assert {"README.md", "docs/api_models.md", "configs/paper.yaml", "configs/open_models.yaml"} <= where
    assert any("api_jobs=2" in c for _, c in COMMANDS) and any("gpu=2" in c for _, c in COMMANDS)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_project(tmp_path_factory.mktemp("commands") / "project")


@pytest.mark.slow  # one Snakemake dry run per documented command
def test_every_documented_snakemake_command_parses(demo: Path) -> None:
    failures = []
    seen: set[str] = set()
    for where, cmd in COMMANDS:
        for k, v in PLACEHOLDERS.items():
            cmd = cmd.replace(k, v)
        if cmd in seen:
            continue
        seen.add(cmd)
        args = shlex.split(cmd)[1:]
        # the SLURM profile as docs/install.md says to run it after scripts/install.sh --test (the plugin
        # kept apart in .venv/cluster); the other commands without it, as the quick start runs them
        environ = cluster_env(env()) if "slurm" in cmd else None
        proc = snakemake([*args, "-n", "--quiet", "rules"], demo, check=False, timeout=300, environ=environ)
        output = proc.stdout + proc.stderr
        if any(opt in args for opt in NEEDS_A_RUN):
            bad = any(e in output for e in PARSE_ERRORS)
        else:
            bad = proc.returncode != 0
        if bad:
            failures.append(f"{where}: {cmd}\n{output[-800:]}")
    assert not failures, "documented commands that do not run:\n\n" + "\n\n".join(failures)


@pytest.mark.slow  # one Snakemake dry run per documented command
def test_the_old_order_would_have_been_caught(demo: Path) -> None:
    """The check can fail: the command order the issue reported does not parse."""
    proc = snakemake(["--cores", "8", "--resources", "api_jobs=2", "all", "-n", "--quiet", "rules"], demo, check=False)
    assert proc.returncode != 0 and any(e in proc.stdout + proc.stderr for e in PARSE_ERRORS), proc.stderr[-800:]


def test_the_workflow_passes_snakemakes_lint(tmp_path: Path) -> None:
    """CI (.ci/run) runs `snakemake --lint` before the tests, and a lint fails it (exit 1)."""
    assert "snakemake --lint" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    project = copy_project(tmp_path / "project")
    proc = snakemake(["--lint"], project, check=False, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "Lints for" not in proc.stdout + proc.stderr
