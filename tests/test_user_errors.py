"""A new user's first hour (issue 33): every error a user can cause ends in a few lines that name the
file (and line, key or row), say what is wrong and what to do, exit non-zero, and change nothing
already computed; no traceback unless ``sabre --debug`` asks for one.

Each case breaks one input of a finished demo run (a copy of ``demo_repo_run``) and runs a stage's
command as its rule runs it (Snakemake's record of the session's demo run), by hand: without the
settings the rule passes, so that it reads params.yaml; every file under data/ and
results/ must be unchanged afterwards. Credentials are covered elsewhere: a missing API key
(tests/test_inference.py::test_predict_missing_key_exit_code), a refused one
(tests/test_engine.py::test_wrong_key_is_a_fatal_401), a hub token missing or refused
(tests/test_source_errors.py::test_no_token_and_no_access_are_errors_with_the_fix); a full disk in
tests/test_bad_inputs.py::test_a_full_disk_names_the_file_without_a_traceback.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pyarrow.parquet as pq
import pytest
from project import env

from sabre_prior import cli

#: every case starts from a finished `snakemake all` of the demo (the session's demo_repo_run, ~28 CPU-s
#: on 2 cores): an end-to-end run of real Snakemake, so the slow tier (CI runs it; the developer loop,
#: `-m "not slow"`, does not build the run)
pytestmark = pytest.mark.slow

SPLIT = "data/parquet/context.parquet"
#: rule -> the arguments of its command for the model ``random`` and the split ``context``
_COMMANDS: dict[str, list[str]] = {}


@pytest.fixture(autouse=True)
def _rule_commands(workflow_summary: list[dict[str, str]]) -> None:
    """The rules' commands as the session's demo run ran them (`snakemake --detailed-summary`)."""
    if _COMMANDS:
        return
    for row in workflow_summary:
        words = shlex.split(row["shellcmd"]) if "sabre" in row["shellcmd"] else []
        if not words:
            continue
        words = words[words.index("sabre") + 3 :]  # without `sabre --log <log>`
        if "--settings" in words:  # as run by hand: the command reads params.yaml
            i = words.index("--settings")
            words = [*words[:i], "--params", "params.yaml", *words[i + 2 :]]
        model, split = (words[words.index(k) + 1] if k in words else None for k in ("--model", "--split"))
        if model in (None, "random") and split in (None, "context"):
            _COMMANDS.setdefault(row["rule"], words)


def stage_argv(stage: str) -> list[str]:
    """The arguments of a rule's command for the model ``random`` and split ``context``."""
    return list(_COMMANDS[stage])


@pytest.fixture
def project(demo_repo_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A finished demo run's settings, data and results (not its logs), as the working directory."""
    dest = tmp_path / "project"
    dest.mkdir()
    for name in ("params.yaml", "dvc.yaml", "Snakefile"):
        shutil.copy2(demo_repo_run / name, dest / name)
    for name in ("data", "results"):
        shutil.copytree(demo_repo_run / name, dest / name, symlinks=True, ignore=shutil.ignore_patterns("logs"))
    monkeypatch.chdir(dest)
    return dest


def digests(root: Path) -> dict[str, str]:
    """SHA-256 of every file under data/ and results/ (results/logs/ is the commands' logs: not results)."""
    out = {}
    for top in ("data", "results"):
        for p in sorted((root / top).rglob("*")):
            rel = p.relative_to(root).as_posix()
            if p.is_file() and not rel.startswith("results/logs/"):
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest() if os.access(p, os.R_OK) else "unreadable"
    return out


# ---------------------------------------------------------------------------
# How each input is broken
# ---------------------------------------------------------------------------
def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])  # a download or copy cut short


def _columns_missing(p: Path) -> None:
    table = pq.read_table(p)
    pq.write_table(table.select(["id", "question"]), p)  # a Parquet file, but not a split of the benchmark


BREAK: dict[str, Callable[[Path], None]] = {
    "missing": lambda p: p.unlink(),
    "empty": lambda p: p.write_bytes(b""),
    "truncated": _truncate,
    "not_the_format": lambda p: p.write_bytes(b"<html>Sign in to continue</html>\n"),  # a login page saved instead
    "columns_missing": _columns_missing,
    "a_list": lambda p: p.write_text("[1, 2]\n"),
}

#: What the message says for each way a Parquet split is broken (besides the file's name).
PARQUET_SAYS = {
    "missing": "split file not found (run the fetch step first",
    "empty": "the split file is empty (0 bytes); fetch it again",
    "truncated": "not a readable Parquet file (truncated, or not Parquet",
    "not_the_format": "not a readable Parquet file (truncated, or not Parquet",
    "columns_missing": "split 'context' lacks the column(s) image, subset",
}
#: The commands that read a split (the manifest, too: its fingerprint opens each split the same way).
READS_SPLITS = ("predict", "evaluate", "tables", "figures", "diagnose", "html_report", "prompt_run", "manifest")

JSON_CASES = [
    # (file broken, how, stage, what the message says besides the file's name)
    ("results/predictions/random/context.jsonl", "missing", "evaluate", "prediction file not found"),
    ("results/predictions/random/context.jsonl", "empty", "evaluate", "holds no prediction for any of the split's"),
    ("results/predictions/random/context.jsonl", "truncated", "evaluate", ": invalid JSON"),
    ("results/predictions/random/context.jsonl", "not_the_format", "evaluate", ":1: invalid JSON"),
    ("results/predictions/random/context.jsonl", "a_list", "evaluate", ":1: expected a JSON object, got list"),
    ("results/metrics/random.json", "missing", "tables", "metrics file for model 'random' not found"),
    ("results/metrics/random.json", "empty", "figures", "not valid JSON"),
    ("results/metrics/random.json", "truncated", "intervals", "not valid JSON"),
    ("results/metrics/random.json", "a_list", "tables", "top level must be a JSON object"),
    ("results/intervals/random.json", "missing", "html_report", "intervals file not found"),
    ("results/intervals/random.json", "truncated", "figures", "not valid JSON"),
    ("results/traces/random/context.jsonl", "missing", "compare", "trace file not found"),
    ("results/traces/random/context.jsonl", "empty", "diagnose", "trace file is empty"),
    ("results/traces/random/context.jsonl", "truncated", "intervals", ": invalid JSON"),
    ("results/usage/random/context.json", "missing", "evaluate", "usage summary not found"),
    ("results/usage/random/context.json", "not_the_format", "stability", "not valid JSON"),
    ("results/usage/random/context.json", "a_list", "manifest", "not a JSON object"),
]


def assert_refused(project: Path, argv: list[str], file: str, says: str, capsys: pytest.CaptureFixture[str]) -> None:
    before = digests(project)
    rc = cli.main(argv)  # an exception escaping here (a traceback) fails the test
    err = capsys.readouterr().err
    assert rc == 2, err
    assert f"error: {file}" in err and says in err, err
    assert "Traceback" not in err
    assert digests(project) == before, "a file under data/ or results/ changed"


@pytest.mark.parametrize(
    ("stage", "how"),
    # `sabre tables` reads a split's recorded source only (schema metadata), `sabre manifest` its schema
    # metadata (it records the columns the file has), and `sabre diagnose` the rows of attribute and
    # language only: context's columns do not matter to them
    [(stage, how) for stage in READS_SPLITS for how in PARQUET_SAYS
     if not (how == "columns_missing" and stage in ("tables", "diagnose", "manifest"))],  # fmt: skip
)
def test_a_broken_parquet_split(project: Path, stage: str, how: str, capsys: pytest.CaptureFixture[str]) -> None:
    BREAK[how](project / SPLIT)
    assert_refused(project, stage_argv(stage), SPLIT, PARQUET_SAYS[how], capsys)


@pytest.mark.parametrize(("file", "how", "stage", "says"), JSON_CASES, ids=lambda x: str(x).rsplit("/", 2)[-1][:30])
def test_a_broken_result_file(project: Path, file: str, how: str, stage: str, says: str, capsys: pytest.CaptureFixture[str]) -> None:
    BREAK[how](project / file)
    assert_refused(project, stage_argv(stage), file, says, capsys)


def test_debug_shows_the_traceback(project: Path) -> None:
    (project / SPLIT).write_bytes(b"")
    args = [sys.executable, "-m", "sabre_prior.cli"]
    plain = subprocess.run([*args, *stage_argv("evaluate")], capture_output=True, text=True, env=env(), timeout=300)
    debug = subprocess.run([*args, "--debug", *stage_argv("evaluate")], capture_output=True, text=True, env=env(), timeout=300)
    assert plain.returncode == 2 and "Traceback" not in plain.stderr
    assert plain.stderr.strip().splitlines() == [f"error: {SPLIT}: the split file is empty (0 bytes); fetch it again: "
                                                 f"delete it and run `snakemake --cores 1 {SPLIT}` (or `sabre fetch --split context`)"]  # fmt: skip
    assert debug.returncode != 0 and "Traceback" in debug.stderr and "DataError" in debug.stderr


# ---------------------------------------------------------------------------
# Files and folders the system refuses (a private user and mount namespace: works as root too)
# ---------------------------------------------------------------------------
def _namespaces() -> bool:
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True)
    return probe.returncode == 0


NOBODY = 12345  # a user id not mapped into the namespace: its files are foreign there, even to "root"


def _refused(project: Path, argv: list[str], prepare: str = "") -> subprocess.CompletedProcess[str]:
    """``sabre argv`` in a user (and mount) namespace of its own, after the shell commands ``prepare``."""
    command = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "sabre_prior.cli", *argv])
    script = f"{prepare} {command}" if prepare else command
    return subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script], cwd=project,
                          capture_output=True, text=True, env=env(), timeout=300)  # fmt: skip


def _foreign(path: Path, mode: int) -> None:
    """``path`` owned by someone else with ``mode``: as a user, chmod suffices; as root, a foreign owner too."""
    if os.geteuid() == 0:
        os.chown(path, NOBODY, NOBODY)
    path.chmod(mode)


needs_namespaces = pytest.mark.skipif(not _namespaces(), reason="needs unshare (user and mount namespaces)")


@needs_namespaces
@pytest.mark.parametrize("stage", ["evaluate", "tables"])
def test_an_unreadable_split(project: Path, stage: str) -> None:
    _foreign(project / SPLIT, 0)
    before = digests(project)
    proc = _refused(project, stage_argv(stage))
    assert proc.returncode == 2, proc.stderr
    assert f"error: {SPLIT}: cannot be read (Permission denied): give yourself read access" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert digests(project) == before


FOLDERS = [("tables", "results/tables", "main_results.md"), ("diagnose", "results/analysis", "diagnostics.json"),
           ("evaluate", "results/metrics", "random.json"), ("figures", "results/figures", "split_accuracy.png")]  # fmt: skip


@needs_namespaces
@pytest.mark.parametrize("why", ["permission", "read_only_file_system"])
@pytest.mark.parametrize(("stage", "folder", "first"), FOLDERS, ids=[f[0] for f in FOLDERS])
def test_an_output_folder_that_cannot_be_written(project: Path, stage: str, folder: str, first: str, why: str) -> None:
    """The message names the user's file and folder, never our temporary file; nothing there is deleted
    (issue 33: a read-only folder gave a PermissionError traceback naming `.sabre-tmp.main_results.md.*`)."""
    prepare = ""
    if why == "permission":
        _foreign(project / folder, 0o555)
        says = f"Make the folder {folder} writable for you"
    else:
        prepare = f"mount --bind {folder} {folder} && mount -o remount,bind,ro {folder} &&"
        says = f"The file system holding {folder} is mounted read-only"
    before = digests(project)
    proc = _refused(project, stage_argv(stage), prepare)
    assert proc.returncode == 2, proc.stderr
    assert f"error: {folder}/{first}: cannot write" in proc.stderr and says in proc.stderr, proc.stderr
    assert "nothing in the folder was changed or deleted" in proc.stderr
    assert ".sabre-tmp" not in proc.stderr and "Traceback" not in proc.stderr
    assert digests(project) == before
    assert not [p for p in (project / folder).iterdir() if p.name.startswith(".sabre-tmp")]


def test_a_file_where_the_output_folder_should_be(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.rmtree(project / "results/analysis")
    (project / "results/analysis").write_text("not a folder\n")
    assert_refused(project, stage_argv("diagnose"), "results/analysis/diagnostics.json",
                   "or a folder above it is of the wrong kind", capsys)  # fmt: skip


def test_a_missing_output_folder_is_made(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = stage_argv("tables")
    out = project / "elsewhere" / "new" / "tables"
    argv[argv.index("--outdir") + 1] = str(out)  # a hand run writing outside data/ and results/
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert (out / "main_results.md").is_file()


# ---------------------------------------------------------------------------
# The configuration
# ---------------------------------------------------------------------------
GOOD = Path(__file__).resolve().parents[1] / "params.yaml"

CONFIG_CASES = [
    # (id, the file's text (None: no file), what the message says besides the file's name)
    ("missing", None, "configuration file not found"),
    ("empty", "", "the file is empty (or holds only comments)"),
    ("comments_only", "# nothing yet\n", "the file is empty (or holds only comments)"),
    ("not_yaml", "splits: [context\n", ":2:1: not valid YAML"),
    ("a_list", "- context\n- texture\n", "the top level must be a mapping of settings"),
    ("duplicate_model", GOOD.read_text() + "  random:\n    backend: baseline\n    strategy: prior\n",
     "key 'random' is given twice"),
    ("unknown_key", GOOD.read_text().replace("\nsplits:", "\nsplitz:"), "splitz: unknown key (did you mean 'splits'?)"),
    ("non_ascii_model", GOOD.read_text().replace("\n  random:\n", "\n  modèle:\n"),
     "models: 'modèle' cannot be a name here: a name must start with an ASCII letter or digit"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "says"), [c[1:] for c in CONFIG_CASES], ids=[c[0] for c in CONFIG_CASES])
@pytest.mark.parametrize("stage", ["check_config", "evaluate"])
def test_a_broken_params_file(project: Path, stage: str, text: str | None, says: str, capsys: pytest.CaptureFixture[str]) -> None:
    params = project / "params.yaml"
    if text is None:
        params.unlink()
    else:
        params.write_text(text, encoding="utf-8")
    argv = ["check-config", "--params", "params.yaml"] if stage == "check_config" else stage_argv(stage)
    assert_refused(project, argv, "params.yaml", says, capsys)


def test_a_duplicate_names_the_key_and_both_lines(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = GOOD.read_text()
    first = text.splitlines().index("  random:") + 1
    (project / "params.yaml").write_text(text + "  random:\n    backend: baseline\n")
    second = len(text.splitlines()) + 1
    assert_refused(project, ["check-config"], f"params.yaml:{second}: key 'random' is given twice", f"first at line {first}", capsys)


def test_every_pattern_of_the_schema_is_said_in_words() -> None:
    """A value or name that does not have its form gets a sentence, not the schema's regular expression."""
    from sabre_prior.config import PATTERN_WORDS, load_schema

    def patterns(node: object) -> set[str]:
        if isinstance(node, dict):
            found = {node["pattern"]} if isinstance(node.get("pattern"), str) else set()
            return found.union(*(patterns(v) for v in node.values()))
        if isinstance(node, list):
            return set().union(*(patterns(v) for v in node))
        return set()

    assert patterns(load_schema()) <= set(PATTERN_WORDS), patterns(load_schema()) - set(PATTERN_WORDS)
