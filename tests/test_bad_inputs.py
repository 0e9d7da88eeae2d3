"""A new user's bad inputs (issue 19): each is an error naming the file, line, key, row or field,
with a non-zero exit and no traceback, before anything already done is touched."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from project import BIN, copy_project, env

from sabre_prior import cli
from sabre_prior.buildcheck import validate_for_run as validate_params
from sabre_prior.config import load_params
from sabre_prior.errors import ConfigError

BASE = """\
dataset:
  source: demo
splits: [context]
models:
  random:
    backend: baseline
    strategy: random
"""


def write(tmp_path: Path, text: str, name: str = "params.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def config_error(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_params(path)
    return str(info.value)


# ---------------------------------------------------------------------------
# params.yaml: read with file and line
# ---------------------------------------------------------------------------
def test_a_model_given_twice_is_an_error_naming_file_line_and_key(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + "  random:\n    backend: baseline\n    strategy: prior\n")
    text = config_error(path)
    assert f"{path}:8: key 'random' is given twice" in text and "first at line 5" in text


def test_a_duplicate_key_anywhere_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, BASE.replace("  source: demo\n", "  source: demo\n  source: ./mirror\n"))
    assert f"{path}:3: key 'source' is given twice" in config_error(path)
    path = write(tmp_path, BASE + "    strategy: prior\n")
    assert f"{path}:8: key 'strategy' is given twice" in config_error(path)


def test_check_config_exits_non_zero_on_a_duplicate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, BASE + "  random:\n    backend: baseline\n    strategy: prior\n")
    assert cli.main(["check-config", "--params", str(path)]) != 0
    assert "given twice" in capsys.readouterr().err


def test_invalid_and_tab_indented_yaml_name_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, BASE.replace("  random:\n", "\trandom:\n"))
    text = config_error(path)
    assert text.startswith(f"{path}:5:1: not valid YAML") and "tabs" in text and "random:" in text
    path = write(tmp_path, BASE.replace("splits: [context]", "splits: [context"))
    assert config_error(path).startswith(f"{path}:4:")


def test_a_folder_as_params_says_so(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").mkdir()
    assert "is a directory" in config_error(tmp_path / "p.yaml")


def test_a_missing_backend_is_reported_alone(tmp_path: Path) -> None:
    path = write(tmp_path, BASE.replace("    backend: baseline\n", ""))
    lines = config_error(path).splitlines()
    assert lines[1:] == ["  - models.random: 'backend' is a required property"], lines


# ---------------------------------------------------------------------------
# Settings checked when the DAG is built (validate_for_run is what the Snakefile calls)
# ---------------------------------------------------------------------------
def params_with(**changes: object) -> dict:
    params = yaml.safe_load(BASE)
    for dotted, value in changes.items():
        node = params
        *parents, last = dotted.split("__")
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return params


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"prompt__templates": ["screening_v1", "screening_v9"]}, "prompt.templates[1]: unknown prompt template 'screening_v9'"),
        ({"models__random__prompt_template": "v0"}, "models.random.prompt_template: unknown prompt template 'v0'"),
        ({"dataset__source": "./no-such-mirror"}, "dataset.source: local dataset directory './no-such-mirror' not found"),
    ],
)
def test_build_time_settings(changes: dict, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        validate_params(params_with(**changes))
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("settings", "fragment"),
    [
        ({"backend": "transformers", "model_id": "Qwen/Qwen2.5 VL"}, "models.m.model_id: 'Qwen/Qwen2.5 VL' contains white space"),
        ({"backend": "vllm", "model_id": "./models/none"}, "no such directory"),
        ({"backend": "transformers", "model_id": "org:name"}, "neither a Hugging Face model id"),
        ({"backend": "transformers", "model_id": "Qwen/Qwen2.5-VL-7B-Instruct", "chat_template": "  "},
         "models.m.chat_template must be a Jinja template"),  # what the backend's own settings check says
        ({"backend": "openai", "model_id": "gpt-5.4", "api_key_env": "OPENAI_API_KEY", "image": {"max_side": -1}},
         "models.m.image"),
    ],
)  # fmt: skip
def test_build_time_backend_settings_and_model_ids(settings: dict, fragment: str) -> None:
    params = yaml.safe_load(BASE)
    params["models"] = {"m": settings}
    with pytest.raises(ConfigError) as info:
        validate_params(params)
    assert fragment in str(info.value)


def test_good_model_ids_pass(tmp_path: Path) -> None:
    params = yaml.safe_load(BASE)
    (tmp_path / "weights").mkdir()
    params["models"] = {
        "a": {"backend": "transformers", "model_id": "Qwen/Qwen2.5-VL-7B-Instruct"},
        "b": {"backend": "vllm", "model_id": str(tmp_path / "weights")},
        "c": {"backend": "openai", "model_id": "gpt-5.4", "api_key_env": "OPENAI_API_KEY"},
    }
    validate_params(params)  # raises on a problem


def _project(tmp_path: Path, params: str) -> Path:
    project = copy_project(tmp_path / "project")
    (project / "params.yaml").write_text(params, encoding="utf-8")
    return project


def _snakemake_dry_run(project: Path) -> subprocess.CompletedProcess[str]:
    e = {**env(), "SABRE_DVC_SYNC": "0"}
    return subprocess.run([str(BIN / "snakemake"), "-n", "--cores", "1", "all"], cwd=project, env=e,
                          capture_output=True, text=True, timeout=600)  # fmt: skip


@pytest.mark.slow
def test_snakemake_names_the_file_and_line_and_touches_nothing(tmp_path: Path) -> None:
    project = _project(tmp_path, BASE.replace("  random:\n", "\trandom:\n"))
    done = project / "results" / "predictions" / "random" / "context.jsonl"
    done.parent.mkdir(parents=True)
    done.write_text('{"id": "x", "prediction": "yes"}\n')
    proc = _snakemake_dry_run(project)
    assert proc.returncode != 0
    assert "params.yaml:5:1: not valid YAML" in proc.stdout + proc.stderr
    (project / "params.yaml").write_text(BASE + "prompt:\n  templates: [screening_v9]\n")
    proc = _snakemake_dry_run(project)
    assert proc.returncode != 0 and "unknown prompt template 'screening_v9'" in proc.stdout + proc.stderr
    (project / "params.yaml").write_text(BASE + "  random:\n    backend: baseline\n    strategy: prior\n")
    proc = _snakemake_dry_run(project)
    assert proc.returncode != 0 and "params.yaml:8: key 'random' is given twice" in proc.stdout + proc.stderr
    assert done.read_text() == '{"id": "x", "prediction": "yes"}\n'


# ---------------------------------------------------------------------------
# A local mirror: empty metadata, broken images, no card
# ---------------------------------------------------------------------------
@pytest.fixture
def mirror(demo_dir: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(demo_dir, tmp_path / "mirror"))


def fetch(mirror: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    rc = cli.main(["fetch", "--split", "attribute", "--source", str(mirror), "--output", str(tmp_path / "a.parquet")])
    return rc, capsys.readouterr().err


def test_an_empty_metadata_file_is_named(mirror: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (mirror / "data/attribute/metadata.jsonl").write_bytes(b"")
    rc, err = fetch(mirror, tmp_path, capsys)
    assert rc != 0 and f"{mirror}/data/attribute/metadata.jsonl: the metadata file of split 'attribute' is empty" in err


def _an_image(mirror: Path) -> Path:
    return sorted((mirror / "data/attribute/images").glob("*.jpg"))[0]


def test_an_empty_image_names_its_row_and_file(mirror: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    image = _an_image(mirror)
    image.write_bytes(b"")
    rc, err = fetch(mirror, tmp_path, capsys)
    assert rc != 0 and f"row {image.stem!r}, image {image}: is empty (0 bytes)" in err
    assert not (tmp_path / "a.parquet").exists()


def test_a_corrupted_jpeg_names_its_row_and_file(mirror: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    image = _an_image(mirror)
    data = image.read_bytes()
    image.write_bytes(data[: len(data) // 3])  # a truncated download: the header reads, the pixels do not
    rc, err = fetch(mirror, tmp_path, capsys)
    assert rc != 0 and f"row {image.stem!r}, image {image}: cannot be decoded" in err
    assert not (tmp_path / "a.parquet").exists()


def test_a_missing_image_names_its_row_and_file(mirror: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    image = _an_image(mirror)
    image.unlink()
    rc, err = fetch(mirror, tmp_path, capsys)
    assert rc != 0 and f"row {image.stem!r}, image {image}: the file is missing" in err


def test_a_missing_dataset_card_says_so(mirror: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (mirror / "README.md").unlink()
    rc, err = fetch(mirror, tmp_path, capsys)
    assert rc != 0 and f"{mirror}/README.md: the dataset card is missing" in err


# ---------------------------------------------------------------------------
# A full disk, and a failing stage's log
# ---------------------------------------------------------------------------
def _can_mount() -> bool:
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _can_mount(), reason="needs unshare (user and mount namespaces) to mount a tiny tmpfs")
def test_a_full_disk_names_the_file_without_a_traceback(demo_dir: Path, tmp_path: Path) -> None:
    full = tmp_path / "full"
    full.mkdir()
    script = (
        f"mount -t tmpfs -o size=16k tmpfs {full} && "
        f"{sys.executable} -m sabre_prior.cli fetch --split attribute --source {demo_dir} --output {full}/a.parquet"
    )  # a real file system that runs out of space (a tmpfs of 16 KiB in a private mount namespace)
    proc = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script],
                          capture_output=True, text=True, env=env(), timeout=300)  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert f"{full}/a.parquet: cannot write: no space left on device (errno 28)" in proc.stderr


def test_a_failing_stage_shows_the_end_of_its_log_on_the_terminal(tmp_path: Path) -> None:
    # the fetch rule's command (workflow/rules/data.smk) without the settings it passes: the CLI writes the log
    command = "sabre --log results/logs/fetch/context.log fetch --split context --output data/parquet/context.parquet"
    (tmp_path / "params.yaml").write_text(BASE.replace("source: demo", "source: ./no-such-mirror"))
    proc = subprocess.run(["sh", "-c", command], cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    log = (tmp_path / "results/logs/fetch/context.log").read_text()
    assert "./no-such-mirror: local dataset directory not found" in log
    assert "sabre fetch failed (exit 2); the last" in proc.stderr and "results/logs/fetch/context.log" in proc.stderr
    assert "./no-such-mirror: local dataset directory not found" in proc.stderr


def test_a_crash_under_log_keeps_its_traceback_in_the_log(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "x.log"
    code = "import sys; from sabre_prior import cli; cli._check_config = None; sys.exit(cli.main(sys.argv[1:]))"
    proc = subprocess.run([sys.executable, "-c", code, "--log", str(log), "check-config", "--params", "/nonexistent"],
                          capture_output=True, text=True, env=env(), timeout=120)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" in log.read_text() and "TypeError" in log.read_text()  # the whole story in the log
    assert "sabre check-config failed (exit 1)" in proc.stderr and "TypeError" in proc.stderr  # its end on the terminal


# ---------------------------------------------------------------------------
# Every option of every command says what it does and its default
# ---------------------------------------------------------------------------
def _options():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, command in sub.choices.items():
        for action in command._actions:
            if action.option_strings and action.dest != "help":
                yield name, action


@pytest.mark.parametrize(("command", "action"), list(_options()), ids=lambda x: getattr(x, "dest", x))
def test_every_option_has_help_and_names_its_default(command: str, action) -> None:
    import argparse

    import re

    option = "/".join(action.option_strings)
    assert action.help and action.help is not argparse.SUPPRESS, f"sabre {command} {option}: no help text"
    said = re.sub(r"\(default:[^)]*\)", "", action.help)
    assert len(said.split()) >= 2, f"sabre {command} {option}: help says only its default: {action.help!r}"
    if action.required or isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        return  # a flag's default is "off"; a required option has none
    assert "default" in action.help.lower() or "%(default)" in action.help, f"sabre {command} {option}: help names no default"


# ---------------------------------------------------------------------------
# estimate and batches say what they are about
# ---------------------------------------------------------------------------
PAPER = Path(__file__).resolve().parents[1] / "configs" / "paper.yaml"


def test_estimate_on_the_demo_says_what_it_prices(
    demo_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(PAPER, tmp_path / "params.yaml")  # the README's `cp configs/paper.yaml params.yaml`
    assert cli.main(["fetch", "--split", "context", "--source", str(demo_dir)]) == 0
    capsys.readouterr()
    assert cli.main(["estimate", "--splits", "context", "--models", "gpt-5.4"]) == 0
    text = capsys.readouterr().out
    assert "dataset.source in params.yaml: Zesearch/SABRE-Prior" in text
    assert "context: 12 questions, not the real benchmark's 400" in text and "sabre fetch --split context" in text


def test_batches_on_a_model_without_batch_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(PAPER, tmp_path / "params.yaml")
    assert cli.main(["batches", "--model", "grok-4.3", "--offline"]) == 2
    err = capsys.readouterr().err
    assert "models.grok-4.3 does not use a provider batch API" in err and "remove `batch`" not in err


@pytest.mark.slow
def test_dvc_repro_shows_why_a_stage_failed(tmp_path: Path) -> None:
    from dvc_helpers import make_repo

    project = make_repo(tmp_path / "project")
    params = project / "params.yaml"
    params.write_text(params.read_text().replace("  source: demo\n", "  source: ./no-such-mirror\n", 1))
    proc = subprocess.run([str(BIN / "dvc"), "repro"], cwd=project, env=env(),
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode != 0
    # Snakemake, DVC's command, reads the source before it plans anything and stops with the message
    text = proc.stdout + proc.stderr
    assert "error: params.yaml: invalid configuration" in text and "'./no-such-mirror' not found" in text, text
    assert "Traceback" not in text
    assert not (project / "dvc.lock").exists() and not (project / "results/logs").exists()  # nothing written
