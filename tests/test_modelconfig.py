"""One typed model config (issue 20): a params entry is parsed once per job into a frozen
:class:`ModelConfig` that the job side is handed; defaults live in one place."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from sabre_prior import cli, registry
from sabre_prior.errors import ConfigError
from sabre_prior.inference import batch, engine, prompts, usage
from sabre_prior.inference.modelconfig import ModelConfig, as_config
from tests.servers import FakeServer
from tests.servers.dataset import write_split
from tests.servers.fixtures import api_key, model_settings, server  # noqa: F401

BASELINE = {"backend": "baseline", "strategy": "always_yes"}


def test_the_config_is_frozen_typed_and_read_only() -> None:
    cfg = ModelConfig.parse("yes", BASELINE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        cfg.settings["strategy"] = "always_no"  # type: ignore[index]
    assert cfg.kind == "offline" and cfg.backend == "baseline" and cfg.prices is None
    assert cfg.max_output_tokens == registry.DEFAULT_MAX_OUTPUT_TOKENS  # the one default
    assert isinstance(cfg.engine, engine.EngineSettings) and isinstance(cfg.images, prompts.ImagePolicy)
    assert as_config("yes", cfg) is cfg  # parsed already: handed on as it is


def test_defaults_follow_the_backend_kind(server: FakeServer) -> None:
    entry = {k: v for k, v in model_settings(server).items() if k != "concurrency"}
    api = ModelConfig.parse("fake", entry)
    assert api.kind == "api" and api.engine.concurrency == 8 and api.engine.retry_empty
    local = ModelConfig.parse("loc", {"backend": "transformers", "model_id": "org/m"})
    assert local.kind == "local" and local.engine.concurrency == 1 and not local.engine.retry_empty


@pytest.mark.parametrize(
    "entry, field",
    [
        ({**BASELINE, "max_output_tokens": 0}, "models.m.max_output_tokens"),
        ({**BASELINE, "concurrency": "many"}, "models.m.concurrency"),
        ({**BASELINE, "image": {"max_side": "big"}}, "models.m.image"),
        ({"strategy": "random"}, "models.m.backend"),
    ],
)
def test_a_bad_entry_names_its_field(entry: dict, field: str) -> None:
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        ModelConfig.parse("m", entry)


def test_retry_refusals_from_the_command_line_or_the_entry(server: FakeServer) -> None:
    plain = ModelConfig.parse("fake", model_settings(server))
    assert not plain.engine.retry_refusals and plain.retrying_refusals().engine.retry_refusals
    assert plain.retrying_refusals(False) is plain
    on = ModelConfig.parse("fake", {**model_settings(server), "retry_refusals": True})
    assert on.retrying_refusals(False).engine.retry_refusals, "the entry's own setting stays on"


def test_without_a_key_is_parsed_again(server: FakeServer) -> None:
    cfg = ModelConfig.parse("fake", {**model_settings(server), "prompt_template": "bare_v1"})
    assert cfg.prompt_template == "bare_v1"
    assert cfg.without("prompt_template").prompt_template is None
    assert "prompt_template" in cfg.settings, "the original is unchanged"


def test_a_predict_job_parses_its_entry_once(
    tmp_path: Path, server: FakeServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`sabre predict` (and `sabre estimate` per model): each part of the entry is parsed exactly once."""
    write_split(tmp_path / "data/parquet/context.parquet", "context", 4)
    params = {
        "dataset": {"source": "demo"},
        "splits": ["context"],
        "models": {"fake": model_settings(server, prices={"input_per_mtok": 1.0, "output_per_mtok": 5.0})},
    }
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.chdir(tmp_path)
    counts: dict[str, int] = {}
    for owner, cls in (
        (engine, engine.EngineSettings), (prompts, prompts.ImagePolicy), (usage, usage.Prices), (batch, batch.BatchSettings)
    ):  # fmt: skip
        original = cls.from_settings.__func__  # type: ignore[attr-defined]

        def counting(klass, *args, _original=original, _name=cls.__name__, **kwargs):  # type: ignore[no-untyped-def]
            counts[_name] = counts.get(_name, 0) + 1
            return _original(klass, *args, **kwargs)

        monkeypatch.setattr(cls, "from_settings", classmethod(counting))
    assert cli.main(["predict", "--model", "fake", "--split", "context", "--no-progress"]) == 0
    assert "4 answered" in capsys.readouterr().out
    # Prices twice: the model's prices and, inside the same parse, the batch prices derived from them
    assert counts == {"EngineSettings": 1, "ImagePolicy": 1, "Prices": 2, "BatchSettings": 1}, counts
    counts.clear()
    assert cli.main(["estimate", "--models", "fake"]) == 0
    assert counts == {"EngineSettings": 1, "ImagePolicy": 1, "Prices": 2, "BatchSettings": 1}, counts
