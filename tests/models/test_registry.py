"""The backend registry is the one source: every derived list of backend names agrees with it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

from sabre_prior.inference import batch
from sabre_prior import manifest
from sabre_prior.config import load_schema, schema_path, validate_params
from sabre_prior.errors import ConfigError
from sabre_prior.inference.models import base, local_common
from sabre_prior import registry

ROOT = Path(__file__).resolve().parents[2]


def test_names_are_unique_and_kinds_known() -> None:
    assert len(registry.SPECS) == len(registry.BACKENDS)
    assert {s.kind for s in registry.BACKENDS} <= {"offline", "api", "local"}
    for spec in registry.BACKENDS:
        assert "backend" in spec.settings and set(spec.required) <= set(spec.settings), spec.name


def test_schema_enum_and_per_backend_keys_come_from_the_registry() -> None:
    model = load_schema()["$defs"]["model"]
    assert model["properties"]["backend"]["enum"] == list(registry.names())
    covered: dict[str, dict[str, object]] = {}
    for rule in model["allOf"]:
        match = rule["if"].get("properties", {}).get("backend", {})
        names = [match["const"]] if "const" in match else match.get("enum", [])
        if "propertyNames" in rule["then"]:
            for name in names:
                covered[name] = rule["then"]
    assert set(covered) == set(registry.names())
    for spec in registry.BACKENDS:
        assert covered[spec.name]["propertyNames"] == {"enum": list(spec.settings)}
        assert covered[spec.name]["required"] == list(spec.required)
        # every key a backend accepts is described in the schema's properties
        assert set(spec.settings) <= set(model["properties"]), spec.name


def test_the_schema_file_types_no_backend_list() -> None:
    text = schema_path().read_text(encoding="utf-8")
    raw = yaml.safe_load(text)["$defs"]["model"]
    assert "enum" not in raw["properties"]["backend"]
    assert "allOf" not in raw, "the per-backend and batch rules are filled in from the registry"
    # no backend or batch provider is named anywhere in the file (prose and comments included)
    named = set(registry.names()) | set(registry.OPENAI_COMPATIBLE_BATCH)
    words = set(re.findall(r"[a-z]+", text))
    assert words & named == set()


def test_batch_rules_of_the_schema_come_from_the_registry() -> None:
    rules = load_schema()["$defs"]["model"]["allOf"]
    assert rules[-len(registry.batch_schema_rules()):] == registry.batch_schema_rules()
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    ok = {"backend": "openai", "model_id": "m", "api_key_env": "K", "provider": "moonshot", "batch": True}
    validate_params({**params, "models": {"m": ok}})
    for bad, message in (
        ({**ok, "provider": "xai"}, r"provider 'xai' does not document the OpenAI Files \+ Batches endpoints"),
        ({"backend": "baseline", "strategy": "random", "batch": True}, "batch"),
    ):
        with pytest.raises(ConfigError, match=message):
            validate_params({**params, "models": {"m": bad}})
    # without the code's own check, the schema alone refuses them too
    import jsonschema

    validator = jsonschema.Draft202012Validator(load_schema())
    assert not list(validator.iter_errors({**params, "models": {"m": ok}}))
    for bad in ({**ok, "provider": "xai"}, {**ok, "backend": "baseline", "strategy": "random"}):
        assert list(validator.iter_errors({**params, "models": {"m": bad}}))


def test_derived_lists() -> None:
    assert base.REGISTRY == {s.name: s.target for s in registry.BACKENDS}
    assert manifest.BACKEND_PACKAGES == {s.name: s.packages for s in registry.BACKENDS if s.packages}
    assert local_common.LOCAL_BACKENDS == frozenset(registry.names("local"))
    assert batch.ADAPTERS == {s.name: s.batch for s in registry.BACKENDS if s.batch}
    assert set(batch.ADAPTERS) <= set(registry.names("api"))


def test_rules_and_sources_type_no_backend_names() -> None:
    literal = re.compile(r"""["'](%s)["']""" % "|".join(registry.names()))
    files = [ROOT / "Snakefile", *sorted((ROOT / "workflow" / "rules").glob("*.smk"))]
    hits = [f"{f.name}: {m.group(0)}" for f in files for m in literal.finditer(f.read_text(encoding="utf-8"))]
    assert hits == []


@pytest.mark.parametrize("spec", [s for s in registry.BACKENDS if s.kind == "api"], ids=lambda s: s.name)
def test_api_classes_accept_what_the_schema_accepts(spec: registry.BackendSpec) -> None:
    cls = base.backend_class(spec.name)
    assert issubclass(cls, base.ApiBackend) and cls.kind == "api"
    own = cls.COMMON_SETTINGS | cls.extra_settings
    assert own <= set(spec.settings)
    # the API entries share one key list: each key is read by some API class or is operational
    every_api = set().union(*(base.backend_class(n).extra_settings for n in registry.names("api")))
    assert set(spec.settings) <= base.OPERATIONAL_KEYS | cls.COMMON_SETTINGS | every_api | set(registry._COMMON)


def test_local_entries_are_what_local_backends_understand() -> None:
    for name in registry.names("local"):
        assert set(registry.SPECS[name].settings) <= local_common.KNOWN_KEYS | set(registry._COMMON), name


def test_packages_are_declared_dependencies() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = " ".join(project["dependencies"] + sum(project["optional-dependencies"].values(), []))
    declared += " " + (ROOT / "requirements-gpu.in").read_text(encoding="utf-8")
    for spec in registry.BACKENDS:
        for package in spec.packages:
            assert re.search(rf"(^|[\s\"']){re.escape(package)}\b", declared), (spec.name, package)


def test_unknown_setting_names_the_closest_key() -> None:
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    params["models"] = {"g": {"backend": "gemini", "model_id": "m", "api_key_env": "K", "thinking_budgt": 0}}
    with pytest.raises(ConfigError, match=r"models\.g\.thinking_budgt: unknown key for backend 'gemini' \(did you mean 'thinking_budget'\?\)"):
        validate_params(params)


def test_schema_and_local_settings_agree_on_local_keys() -> None:
    # what the schema accepts for a local model, LocalSettings accepts, and the other way round
    base_entry = {"model_id": "org/tiny"}
    for name in registry.names("local"):
        params = {"dataset": {"source": "demo"}, "splits": ["context"]}
        ok = {"backend": name, **base_entry, "repetition_penalty": 1.05, "chat_template": "{{ messages }}"}
        validate_params({**params, "models": {"m": ok}})
        local_common.LocalSettings.from_settings("m", ok)
        bad = {"backend": name, **base_entry, "temperature": 0.7}  # local decoding is greedy
        with pytest.raises(ConfigError, match="temperature"):
            validate_params({**params, "models": {"m": bad}})
        with pytest.raises(ConfigError, match="temperature"):
            local_common.LocalSettings.from_settings("m", bad)


def test_protocol_and_provider_rules_live_on_the_backend_classes(monkeypatch: pytest.MonkeyPatch) -> None:
    from sabre_prior.inference import outcomes
    from sabre_prior.inference.models.anthropic_backend import AnthropicBackend

    # no branch on a protocol or provider name outside the backend modules
    for module in (outcomes, base):
        source = Path(module.__file__).read_text(encoding="utf-8")
        assert not re.search(r"\b(protocol|provider)\s*(==|in)\s*[(\"']", source), module.__name__
    blocked = {"type": "error", "error": {"type": "invalid_request_error", "message": "Output blocked by content filtering policy"}}
    assert outcomes.classify_error("anthropic", 400, blocked).kind == "refusal"
    assert outcomes.classify_error("openai", 400, blocked).kind == "bad_request", "the phrase is Anthropic's own"
    monkeypatch.setattr(AnthropicBackend, "refusal_phrases", ())
    assert outcomes.classify_error("anthropic", 400, blocked).kind == "bad_request", "read from the class"
    retry_info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}
    quota = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "quota", "details": [retry_info]}}
    assert outcomes.classify_error("gemini", 429, quota).retry_after == pytest.approx(37)
    assert outcomes.classify_error("openai", 429, quota).retry_after is None, "RetryInfo is Gemini's own signal"
    with pytest.raises(ValueError, match="not an API backend"):
        outcomes.classify_error("baseline", 429, quota)
    # every API class counts its own provider's images by a rule of its own
    for name in registry.names("api"):
        cls = base.backend_class(name)
        assert cls.provider in cls.image_token_rules, name
        assert cls.image_tokens(cls.provider, 1400, 939) != base.generic_image_tokens(1400, 939), name


def test_one_name_for_the_output_token_limit() -> None:
    # API and local models read `max_output_tokens`; local models' old `max_new_tokens` is refused
    for name in registry.names("api") + registry.names("local"):
        assert "max_output_tokens" in registry.SPECS[name].settings and "max_new_tokens" not in registry.SPECS[name].settings
    assert local_common.DEFAULT_MAX_NEW_TOKENS == registry.DEFAULT_MAX_OUTPUT_TOKENS
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    params["models"] = {"q": {"backend": "vllm", "model_id": "org/m", "max_new_tokens": 8}}
    with pytest.raises(ConfigError, match=r"models\.q\.max_new_tokens: unknown key for backend 'vllm' \(did you mean 'max_output_tokens'\?\)"):
        validate_params(params)
    params["models"] = {"q": {"backend": "vllm", "model_id": "org/m", "max_output_tokens": 8}}
    validate_params(params)
    assert local_common.LocalSettings.from_settings("q", params["models"]["q"]).decoding.max_new_tokens == 8
