"""params.yaml validation (the schema is shared with Snakemake)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from sabre_prior import config
from sabre_prior.cli import main
from sabre_prior.config import load_params, model_settings, schema_path, validate_params
from sabre_prior.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def params() -> dict:
    return yaml.safe_load((ROOT / "params.yaml").read_text())


def test_shipped_params_are_valid(params: dict) -> None:
    validate_params(params)
    assert params["dataset"]["source"] == "demo"
    assert set(params["splits"]) == {"context", "texture", "attribute", "language"}


def test_workflow_schema_is_the_package_schema() -> None:
    linked = ROOT / "workflow" / "schemas" / "params.schema.yaml"
    assert linked.resolve() == schema_path().resolve()


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda p: p["models"]["random"].update(backend="nonsense"), "models.random.backend"),
        (lambda p: p["models"]["random"].pop("strategy"), "models.random"),
        (lambda p: p.update(splits=["context", "colour"]), "splits.1"),
        (lambda p: p["dataset"].pop("source"), "dataset"),
        (lambda p: p.update(models={}), "models"),
        (lambda p: p["models"].update({"gpt": {"backend": "openai", "model_id": "x"}}), "models.gpt"),
        (lambda p: p["models"].update({"bad name!": {"backend": "baseline", "strategy": "random"}}), "models"),
    ],
)
def test_invalid_params_name_the_field(params: dict, mutate, field: str) -> None:
    bad = copy.deepcopy(params)
    mutate(bad)
    with pytest.raises(ConfigError) as info:
        validate_params(bad, "params.yaml")
    assert f"  - {field}:" in str(info.value)


def test_load_params_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_params(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("models: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_params(broken)


def test_model_settings_unknown_model(params: dict) -> None:
    with pytest.raises(ConfigError, match="models.nope is not defined; configured models: "):
        model_settings(params, "nope")
    assert model_settings(params, "random")["strategy"] == "random"


def test_cli_check_config_reports_errors(tmp_path: Path, params: dict, capsys) -> None:
    bad = copy.deepcopy(params)
    bad["models"]["random"]["backend"] = "nonsense"
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(bad))
    assert main(["check-config", "--params", str(path)]) == 2
    err = capsys.readouterr().err
    assert "models.random.backend" in err and "Traceback" not in err
    assert main(["check-config", "--params", str(ROOT / "params.yaml")]) == 0


@pytest.mark.parametrize(
    ("mutate", "line"),
    [
        (lambda p: p.update(sead=7), "  - sead: unknown key; valid keys here: analysis, audit, dataset, models, prompt, splits"),
        (lambda p: p.update(analysys={}), "  - analysys: unknown key (did you mean 'analysis'?)"),
        (lambda p: p["dataset"].update(revison="v1"), "  - dataset.revison: unknown key (did you mean 'revision'?)"),
        (lambda p: p["dataset"]["demo"].update(sead=1), "  - dataset.demo.sead: unknown key (did you mean 'seed'?)"),
        (lambda p: p["analysis"].update(sead=1), "  - analysis.sead: unknown key (did you mean 'seed'?)"),
        (lambda p: p["analysis"]["report"].update(thumbnail=9), "  - analysis.report.thumbnail: unknown key (did you mean 'thumbnail_px'?)"),
        (lambda p: p["prompt"].update(templats=["x"]), "  - prompt.templats: unknown key (did you mean 'templates'?)"),
        (lambda p: p["models"]["random"].update(sead=3), "  - models.random.sead: unknown key for backend 'baseline' (did you mean 'seed'?)"),
        # valid for another backend, not for this one
        (lambda p: p["models"]["random"].update(model_id="x"), "  - models.random.model_id: unknown key for backend 'baseline';"),
        (
            lambda p: p["models"].update(g={"backend": "openai", "model_id": "m", "api_key_env": "K", "max_new_tokens": 5}),
            "  - models.g.max_new_tokens: unknown key for backend 'openai' (did you mean 'max_output_tokens'?)",
        ),
    ],
)
def test_unknown_keys_are_errors_with_the_closest_key(params: dict, mutate, line: str) -> None:
    bad = copy.deepcopy(params)
    bad.setdefault("prompt", {})
    mutate(bad)
    with pytest.raises(ConfigError) as info:
        validate_params(bad, "params.yaml")
    lines = str(info.value).splitlines()
    assert len(lines) == 2, lines  # one line per bad field, never twice
    assert lines[1].startswith(line), lines[1]


@pytest.mark.parametrize("preset", ["configs/paper.yaml", "configs/open_models.yaml"])
def test_shipped_presets_use_only_keys_their_backends_read(params: dict, preset: str) -> None:
    merged = {**params, "models": yaml.safe_load((ROOT / preset).read_text())["models"]}
    validate_params(merged, preset)


def test_snakemake_stops_on_an_unknown_key_with_the_suggestion(tmp_path: Path) -> None:
    import shutil
    import subprocess
    import sys

    from project import copy_project

    project = copy_project(tmp_path / "p")
    text = (project / "params.yaml").read_text()
    (project / "params.yaml").write_text(text.replace("  seed: 0\n  confidence", "  sead: 0\n  confidence", 1))
    assert "sead" in (project / "params.yaml").read_text()
    proc = subprocess.run([str(Path(sys.executable).parent / "snakemake"), "-n", "all"], cwd=project,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode != 0
    assert "analysis.sead: unknown key (did you mean 'seed'?)" in proc.stdout + proc.stderr
    shutil.rmtree(project)


def test_the_overlapped_check_gives_the_same_verdict_as_load_params(
    tmp_path: Path, params: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """load_params_overlapped (sabre predict) validates in a forked child: a valid file passes, an
    invalid one raises the very message load_params raises, and with another thread
    running (no fork then) the check runs in-process before it returns. The forking half runs in a
    fresh interpreter (a pytest worker has threads of its own)."""
    import subprocess
    import sys
    import threading

    monkeypatch.chdir(tmp_path)
    bad = copy.deepcopy(params)
    bad["analysis"]["bootstrap_resampels"] = 10
    (tmp_path / "good.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(bad, sort_keys=False), encoding="utf-8")
    with pytest.raises(ConfigError) as direct:
        load_params("bad.yaml")
    script = (
        "import os, sys, threading\n"
        "from sabre_prior import config\n"
        "assert threading.active_count() == 1\n"
        "got, verdict = config.load_params_overlapped('good.yaml')\n"
        "verdict(); verdict()\n"
        "_, verdict = config.load_params_overlapped('bad.yaml')\n"
        "try:\n    verdict()\nexcept config.ConfigError as exc:\n    sys.stdout.write(str(exc))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == str(direct.value) and "bootstrap_resamples" in proc.stdout

    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        with pytest.raises(ConfigError, match="bootstrap_resampels"):
            config.load_params_overlapped("bad.yaml")  # not forked: in-process, raised at once
    finally:
        stop.set()
        worker.join()


def test_predict_with_an_invalid_file_makes_no_call_and_names_the_field(tmp_path: Path, params: dict, capsys) -> None:
    """The overlapped check's verdict comes before anything is sent: an unknown key stops `sabre predict`
    with exit 2 and the schema's message, and the model's server sees no request."""
    from tests.servers import FakeServer

    with FakeServer(latency=0.0) as server:
        bad = copy.deepcopy(params)
        bad["models"] = {"m": {"backend": "openai", "model_id": "fake-model-1", "api_key_env": "SABRE_NO_KEY_NEEDED",
                               "base_url": server.url("openai"), "concurrency": 2, "temprature": 0}}  # fmt: skip
        path = tmp_path / "params.yaml"
        path.write_text(yaml.safe_dump(bad, sort_keys=False), encoding="utf-8")
        code = main(["predict", "--model", "m", "--split", "attribute", "--params", str(path),
                     "--data", str(tmp_path / "none.parquet"), "--output", str(tmp_path / "p.jsonl")])  # fmt: skip
        err = capsys.readouterr().err
        assert code == 2 and "temprature" in err and "temperature" in err, err
        assert server.calls == []


def test_snakemake_shows_a_config_error_without_a_stack(tmp_path: Path) -> None:
    """A configuration error under Snakemake: the message naming the key (and what to do), exit 1,
    and no line of our stack (docs/troubleshooting.md)."""
    import subprocess
    import sys

    from project import copy_project

    project = copy_project(tmp_path / "p")
    text = (project / "params.yaml").read_text()
    (project / "params.yaml").write_text(text.replace("max_nonanswer_rate: 0.05", "max_nonanswer_rate: lots", 1))
    proc = subprocess.run([str(Path(sys.executable).parent / "snakemake"), "-n", "all"], cwd=project,
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2, text
    assert "analysis.report.max_nonanswer_rate" in text
    assert "Traceback" not in text and "sabre_prior" not in text and 'File "' not in text, text


@pytest.mark.parametrize(
    ("text", "says"),
    [
        # Snakemake reads --configfile before this project's Snakefile runs: its own message
        # (a FileNotFoundError naming the file; docs/troubleshooting.md says so)
        (None, "other.yaml"),
        ("models: [\n", "not valid JSON or YAML"),
        ("models:\n  gpt:\n    backend: opnai\n", "with the command line's --config/--configfile"),
    ],
    ids=["missing", "not_yaml", "unknown_backend"],
)
def test_a_bad_configfile_under_snakemake_changes_nothing(tmp_path: Path, text: str | None, says: str) -> None:
    """`snakemake all --configfile other.yaml` with a missing, broken or invalid file: a non-zero exit,
    a message naming the file or key, none of our stack, and no file of the project written
    (Snakemake's own log in .snakemake/log aside)."""
    import hashlib
    import subprocess
    import sys

    from project import copy_project

    project = copy_project(tmp_path / "p")
    if text is not None:
        (project / "other.yaml").write_text(text, encoding="utf-8")

    def tree() -> dict[str, str]:
        return {str(p.relative_to(project)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(project.rglob("*"))
                if p.is_file() and "__pycache__" not in p.parts and ".snakemake" not in p.parts}  # fmt: skip

    before = tree()
    proc = subprocess.run([str(Path(sys.executable).parent / "snakemake"), "--cores", "1", "all", "--configfile", "other.yaml"],
                          cwd=project, capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert says in out, out
    assert "sabre_prior" not in out, out
    if text is not None and "opnai" in text:
        assert "models.gpt.backend" in out and "Traceback" not in out, out
    assert tree() == before
