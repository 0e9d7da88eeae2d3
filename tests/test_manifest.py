"""The run manifest (package versions, data hashes and identity, models) and the git ids that find a result's commit."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dvc_helpers import GIT_ID

from sabre_prior.data.parquet import identity_metadata
from sabre_prior import manifest as M
from sabre_prior.cli import main
from sabre_prior.errors import DataError

PARAMS = {
    "dataset": {"source": "demo", "revision": None},
    "splits": ["context", "attribute"],
    "models": {
        "rand": {"backend": "baseline", "strategy": "random", "seed": 0},
        "gpt": {"backend": "openai", "model_id": "gpt-x-2026", "api_key_env": "OPENAI_API_KEY"},
    },
}


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *GIT_ID, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def code_repo(tmp_path: Path) -> Path:
    """A git repo with a nested package whose names exercise git's tree ordering, an executable and a symlink."""
    root = tmp_path / "repo"
    pkg = root / "pkg"
    (pkg / "a").mkdir(parents=True)
    (pkg / "a" / "x.py").write_text("x = 1\n")
    (pkg / "a.b").write_text("dotted name sorts before the directory 'a/'?\n")
    (pkg / "a-b.py").write_text("print('dash')\n")
    (pkg / "run.sh").write_text("#!/bin/sh\necho hi\n")
    os.chmod(pkg / "run.sh", 0o755)
    (pkg / "link").symlink_to("a/x.py")
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\x00compiled")
    (root / "Snakefile").write_text("rule all:\n    input: []\n")
    (root / ".gitignore").write_text("__pycache__/\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "code")
    return root


def test_code_ids_equal_the_ids_git_gives_the_committed_code(code_repo: Path) -> None:
    ids = M.code_ids(code_repo, ["pkg", "Snakefile"])
    assert ids["pkg"] == _git(code_repo, "rev-parse", "HEAD:pkg")
    assert ids["Snakefile"] == _git(code_repo, "rev-parse", "HEAD:Snakefile")
    assert M.git_blob_id(b"x = 1\n") == _git(code_repo, "hash-object", "pkg/a/x.py")


def test_code_ids_without_git_match_and_ignore_bytecode(code_repo: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    shutil.copytree(code_repo, plain, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    assert M.code_ids(plain, ["pkg"]) == M.code_ids(code_repo, ["pkg"])


def test_code_ids_change_with_the_code_and_find_the_commit(code_repo: Path) -> None:
    before = M.code_ids(code_repo, ["pkg"])
    head = _git(code_repo, "rev-parse", "HEAD")
    assert M.find_commits(code_repo, before) == [head]
    (code_repo / "pkg" / "a" / "x.py").write_text("x = 2\n")
    after = M.code_ids(code_repo, ["pkg"])
    assert after != before
    assert M.find_commits(code_repo, after) == []


def _parquet(path: Path, n: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.table({"id": [f"q{i}" for i in range(n)], "answer": ["yes"] * n})
    # fetched from a local copy: the schema metadata the fetch step writes (data.parquet.identity_metadata)
    pq.write_table(table.replace_schema_metadata(identity_metadata("./mirror", "local")), path)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    root = tmp_path / "run"
    (root / "src" / "sabre_prior").mkdir(parents=True)
    (root / "src" / "sabre_prior" / "m.py").write_text("pass\n")
    (root / "params.yaml").write_text("dataset: {source: demo}\n")
    _parquet(root / "data" / "parquet" / "context.parquet", 4)
    _parquet(root / "data" / "parquet" / "attribute.parquet", 3)
    return root


def test_manifest_records_everything_and_is_byte_identical_when_rebuilt(run_dir: Path) -> None:
    out1, out2 = run_dir / "m1.json", run_dir / "m2.json"
    args = (PARAMS, run_dir / "params.yaml", run_dir / "data" / "parquet")
    m = M.write_manifest(*args, out1, run_dir)
    M.write_manifest(*args, out2, run_dir)
    assert out1.read_bytes() == out2.read_bytes()
    assert json.loads(out1.read_text()) == m
    # no params hash and no code ids: the manifest changes only when what it describes does (a code
    # edit that leaves every output alone changes no output); the code a job ran is in its recipe
    assert "params" not in m and "code" not in m
    assert m["data"]["context"]["rows"] == 4 and m["data"]["attribute"]["rows"] == 3
    assert m["data"]["context"]["columns"] == ["id", "answer"]
    # the data's identity is what the Parquet files record; params.yaml says demo
    assert m["dataset"] == {"source": "./mirror", "kind": "local", "revision": None}
    assert m["data"]["context"]["sha256"] == hashlib.sha256((run_dir / "data/parquet/context.parquet").read_bytes()).hexdigest()
    decoding = m["models"]["gpt"].pop("decoding")  # what the API model is asked for, as sent
    assert decoding["temperature"] == 0.0 and decoding["max_output_tokens"] == 64
    assert m["models"] == {
        "gpt": {"backend": "openai", "model_id": "gpt-x-2026"},
        "rand": {"backend": "baseline", "model_id": "baseline/random"},
    }
    assert m["packages"]["python"] and m["packages"]["pyarrow"] == pa.__version__
    assert "openai" in m["packages"]  # the backend a configured model uses
    assert "torch" not in m["packages"]  # ... and not one no model uses
    assert "commit" not in json.dumps(m)  # the commit goes to the log only (see the module docstring)


def test_manifest_changes_with_models_and_data_and_not_with_params_comments(run_dir: Path) -> None:
    args = (PARAMS, run_dir / "params.yaml", run_dir / "data" / "parquet")
    first = M.build_manifest(*args, run_dir)
    (run_dir / "params.yaml").write_text("dataset: {source: demo}  # edited\n")
    assert M.build_manifest(*args, run_dir) == first
    assert M.build_manifest(dict(PARAMS, models={"rand": PARAMS["models"]["rand"]}), *args[1:], run_dir) != first
    _parquet(run_dir / "data" / "parquet" / "attribute.parquet", 5)
    second = M.build_manifest(*args, run_dir)
    assert first["data"]["attribute"] != second["data"]["attribute"]
    assert first["data"]["context"] == second["data"]["context"]


def test_missing_split_is_a_clear_error(run_dir: Path) -> None:
    (run_dir / "data" / "parquet" / "attribute.parquet").unlink()
    with pytest.raises(DataError, match=r"attribute\.parquet: split file not found"):
        M.build_manifest(PARAMS, run_dir / "params.yaml", run_dir / "data" / "parquet", run_dir)


def test_cli_writes_the_manifest_and_logs_the_head_commit(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    params = dict(PARAMS, models={"rand": PARAMS["models"]["rand"]})
    (run_dir / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.chdir(run_dir)
    assert main(["manifest", "--output", "results/manifest.json"]) == 0
    written = json.loads((run_dir / "results" / "manifest.json").read_text())
    assert written["models"] == {"rand": {"backend": "baseline", "model_id": "baseline/random"}}
    assert "git HEAD: unknown" in capsys.readouterr().out  # not a git repo here


def test_find_commits_lists_the_commit_holding_the_working_trees_code(tmp_path: Path) -> None:
    """The documented `sabre manifest --find-commits` (README, "Exact reproduction"): in a clone it names
    the commit whose src/sabre_prior, Snakefile and workflow are the working tree's, and writes no file;
    after an uncommitted edit no commit holds that code, which it says (exit 1)."""
    import subprocess
    import sys

    from dvc_helpers import make_repo

    project = make_repo(tmp_path / "p")
    sabre = [str(Path(sys.executable).parent / "sabre"), "manifest", "--find-commits"]
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project, capture_output=True, text=True, check=True).stdout.strip()
    proc = subprocess.run(sabre, cwd=project, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.split() == [head], proc.stdout + proc.stderr
    assert not (project / "results/manifest.json").exists()
    (project / "workflow/rules/report.smk").write_text("# an uncommitted edit\n", encoding="utf-8")
    proc = subprocess.run(sabre, cwd=project, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "no commit among the last 200 holds exactly this working tree's code" in proc.stdout
