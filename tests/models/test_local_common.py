"""Shared parts of the local backends: settings, model location, requests, resources."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from sabre_prior.errors import BackendError, ConfigError
from sabre_prior.inference.models.base import Query
from sabre_prior.inference.models.local_common import (
    DECODING_PROTOCOL,
    Decoding,
    LocalSettings,
    checkpoint_stop_ids,
    decoding_for,
    enforce_offline,
    processor_import_message,
    read_chat_template,
    batched,
    decode_image,
    generated_length,
    hf_chat_messages,
    hub_offline,
    job_resources,
    local_cache_identity,
    openai_chat_messages,
    resolve_device,
    resolve_dtype,
    resolve_model_source,
)


def _jpeg(color: str = "red", size: tuple[int, int] = (20, 12)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, "JPEG")
    return buf.getvalue()


def _query(text: str = "Question: Is there a cat?") -> Query:
    return Query(id="q1", split="context", text=text, image=_jpeg(), image_mime="image/jpeg")


# -- settings -------------------------------------------------------------------------
def test_settings_defaults_and_values() -> None:
    cfg = LocalSettings.from_settings("m", {"backend": "transformers", "model_id": "org/model"})
    assert (cfg.dtype, cfg.device, cfg.max_new_tokens, cfg.gpus) == ("auto", "auto", 64, 1)
    cfg = LocalSettings.from_settings(
        "m",
        {"backend": "vllm", "model_id": " org/model ", "batch_size": 3, "tensor_parallel_size": 2, "dtype": "float16"},
    )
    assert (cfg.model_id, cfg.batch_size, cfg.tensor_parallel_size, cfg.dtype) == ("org/model", 3, 2, "float16")


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({}, "model_id"),
        ({"model_id": "m", "dtype": "fp8"}, "dtype"),
        ({"model_id": "m", "device": "gpu0"}, "device"),
        ({"model_id": "m", "batch_size": 0}, "batch_size"),
        ({"model_id": "m", "max_output_tokens": True}, "max_output_tokens"),
        ({"model_id": "m", "max_new_tokens": 8}, "max_new_tokens"),  # the old name of max_output_tokens
        ({"model_id": "m", "gpus": -1}, "gpus"),
        ({"model_id": "m", "gpu_memory_utilization": 1.5}, "gpu_memory_utilization"),
        ({"model_id": "m", "processor_kwargs": [1]}, "processor_kwargs"),
        ({"model_id": "m", "temprature": 0}, "temprature"),
        ({"model_id": "m", "repetition_penalty": 0}, "repetition_penalty"),
        ({"model_id": "m", "chat_template": ""}, "chat_template"),
    ],
)
def test_bad_settings_name_the_field(settings: dict, field: str) -> None:
    with pytest.raises(ConfigError, match=rf"models\.m.*{field}"):
        LocalSettings.from_settings("m", {"backend": "transformers", **settings})


def test_cache_identity_ignores_hardware_settings() -> None:
    a = local_cache_identity({"backend": "vllm", "model_id": "x", "batch_size": 4, "gpus": 2, "device": "cuda:1"})
    b = local_cache_identity({"backend": "vllm", "model_id": "x", "batch_size": 256, "tensor_parallel_size": 4})
    assert a == b == {"backend": "vllm", "model_id": "x", "max_new_tokens": 64, "dtype": "auto", "decoding": DECODING_PROTOCOL}
    c = local_cache_identity({"backend": "vllm", "model_id": "x", "max_output_tokens": 8})
    assert c != a
    # the limit keeps the key it had under its old name: answers journaled before the rename are reused
    assert c == {"backend": "vllm", "model_id": "x", "max_new_tokens": 8, "dtype": "auto", "decoding": DECODING_PROTOCOL}
    assert list(c) == list(local_cache_identity({"backend": "vllm", "model_id": "x", "max_new_tokens": 8}))
    assert local_cache_identity({"backend": "vllm", "model_id": "x", "repetition_penalty": 1.05}) != a


# -- where the model comes from ---------------------------------------------------------
def test_hub_offline_reads_the_environment() -> None:
    assert hub_offline({"HF_HUB_OFFLINE": "1"})
    assert hub_offline({"TRANSFORMERS_OFFLINE": "true"})
    assert not hub_offline({"HF_HUB_OFFLINE": "0"})
    assert not hub_offline({})


def test_model_source_local_dir_and_hub_id(tmp_path) -> None:
    src = resolve_model_source(str(tmp_path))
    assert src.is_local_dir and src.local_files_only and src.path_or_id == str(tmp_path)
    hub = resolve_model_source("org/model", "abc123", environ={})
    assert (hub.is_local_dir, hub.local_files_only, hub.revision) == (False, True, "abc123")
    download = resolve_model_source("org/model", allow_download=True, environ={})
    assert not download.local_files_only
    offline = resolve_model_source("org/model", allow_download=True, environ={"HF_HUB_OFFLINE": "1"})
    assert offline.local_files_only
    with pytest.raises(BackendError, match="does not exist"):
        resolve_model_source(str(tmp_path / "missing"))


# -- requests -----------------------------------------------------------------------------
def test_hf_messages_put_the_image_before_the_prompt() -> None:
    q = _query()
    img = decode_image(q.image, q.id)
    assert img.mode == "RGB" and img.size == (20, 12)
    msgs = hf_chat_messages(q, img, system_prompt="Be brief.")
    assert [m["role"] for m in msgs] == ["system", "user"]
    content = msgs[1]["content"]
    assert [c["type"] for c in content] == ["image", "text"]
    assert content[0]["image"] is img and content[1]["text"] == q.text


def test_openai_messages_carry_the_original_bytes() -> None:
    q = _query()
    (msg,) = openai_chat_messages(q)
    url = msg["content"][0]["image_url"]["url"]
    assert url.startswith("data:image/jpeg;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == q.image
    assert msg["content"][1] == {"type": "text", "text": q.text}


def test_undecodable_image_names_the_question() -> None:
    with pytest.raises(BackendError, match="question q9"):
        decode_image(b"not an image", "q9")


def test_batched_and_generated_length() -> None:
    assert [list(b) for b in batched([1, 2, 3, 4, 5], 2)] == [[1, 2], [3, 4], [5]]
    assert generated_length([5, 6, 2, 0, 0], {2}) == (3, "stop")
    assert generated_length([5, 6, 7], {2}) == (3, "length")


def test_device_and_dtype_resolution() -> None:
    assert resolve_device("auto", cuda_available=False) == "cpu"
    assert resolve_device("auto", cuda_available=True) == "cuda"
    with pytest.raises(BackendError, match="no CUDA GPU"):
        resolve_device("cuda:1", cuda_available=False)
    assert resolve_dtype("auto", "cpu", False) == "float32"
    assert resolve_dtype("auto", "cuda", True) == "bfloat16"
    assert resolve_dtype("auto", "cuda", False) == "float16"
    assert resolve_dtype("float16", "cpu", False) == "float16"


# -- scheduling -------------------------------------------------------------------------------
def test_job_resources() -> None:
    api = job_resources({"backend": "openai", "model_id": "gpt", "api_key_env": "K"})
    assert api["gpu"] == 0 and api["gpu_model"] == "" and api["threads"] == 1
    local = job_resources({"backend": "vllm", "model_id": "x"})
    assert (local["gpu"], local["gpu_model"], local["threads"]) == (1, "", 4)
    big = job_resources(
        {"backend": "vllm", "model_id": "x", "gpus": 4, "gpu_model": "h100", "mem_mb": 256000, "threads": 16}
    )
    assert (big["gpu"], big["gpu_model"], big["mem_mb"], big["threads"]) == (4, "h100", 256000, 16)
    cpu = job_resources({"backend": "transformers", "model_id": "x", "device": "cpu", "gpu_model": "h100"})
    assert (cpu["gpu"], cpu["gpu_model"]) == (0, "")
    pinned = job_resources({"backend": "transformers", "model_id": "x", "cuda_visible_devices": "2,3"})
    assert pinned["cuda_visible_devices"] == "2,3"


# -- the presets of configs/open_models.yaml ---------------------------------------------------
def test_open_model_presets_are_valid() -> None:
    from pathlib import Path

    import yaml

    from sabre_prior.config import validate_params

    path = Path(__file__).resolve().parents[2] / "configs" / "open_models.yaml"
    presets = yaml.safe_load(path.read_text())["models"]
    assert {"qwen2.5-vl-7b", "internvl3-8b", "llava-onevision-7b", "smolvlm-2b", "gemma-3-12b"} <= set(presets)
    validate_params({"dataset": {"source": "demo"}, "splits": ["context"], "models": presets}, str(path))
    for name, settings in presets.items():
        cfg = LocalSettings.from_settings(name, settings)  # no unknown or malformed keys
        assert settings["backend"] in ("transformers", "vllm") and cfg.dtype == "bfloat16"
        assert job_resources(settings)["gpu"] >= 1


# -- the decoding protocol -----------------------------------------------------------------------
def test_one_decoding_protocol_for_both_backends() -> None:
    cfg = LocalSettings.from_settings("m", {"backend": "vllm", "model_id": "x", "max_output_tokens": 12, "seed": 3})
    assert cfg.decoding == Decoding(max_new_tokens=12, repetition_penalty=1.0, seed=3)
    hf = cfg.decoding.transformers_kwargs({7, 2}, pad_id=0)
    vl = cfg.decoding.vllm_kwargs([2, 7])
    # greedy with no filtering and no penalty in both; same length limit and stop tokens
    assert hf["do_sample"] is False and hf["num_beams"] == 1 and hf["temperature"] is None and hf["top_k"] is None
    assert vl["temperature"] == 0.0 and vl["top_p"] == 1.0 and vl["presence_penalty"] == vl["frequency_penalty"] == 0.0
    assert hf["repetition_penalty"] == vl["repetition_penalty"] == 1.0
    assert hf["max_new_tokens"] == vl["max_tokens"] == 12
    assert hf["eos_token_id"] == vl["stop_token_ids"] == [2, 7]
    # a model may set its own repetition penalty: both backends get it
    qwen = LocalSettings.from_settings("q", {"backend": "transformers", "model_id": "x", "repetition_penalty": 1.05})
    assert qwen.decoding.transformers_kwargs([], None)["repetition_penalty"] == qwen.decoding.vllm_kwargs([])["repetition_penalty"] == 1.05


def test_decoding_is_described_for_the_manifest() -> None:
    described = decoding_for("m", {"backend": "transformers", "model_id": "x", "max_output_tokens": 8})
    assert described is not None
    assert (described["strategy"], described["temperature"], described["max_new_tokens"], described["repetition_penalty"]) == ("greedy", 0.0, 8, 1.0)
    assert decoding_for("gpt", {"backend": "openai", "model_id": "gpt", "api_key_env": "K"}) is None


def test_manifest_records_each_local_models_decoding() -> None:
    from sabre_prior.manifest import model_entries

    entries = model_entries({"models": {"a": {"backend": "vllm", "model_id": "x", "repetition_penalty": 1.1}, "b": {"backend": "baseline", "strategy": "yes"}}})
    assert entries["a"]["decoding"]["repetition_penalty"] == 1.1 and "decoding" not in entries["b"]


def test_checkpoint_stop_ids(tmp_path) -> None:
    assert checkpoint_stop_ids(tmp_path) == set()
    (tmp_path / "config.json").write_text('{"text_config": {"eos_token_id": 5}}')
    assert checkpoint_stop_ids(tmp_path) == {5}
    (tmp_path / "generation_config.json").write_text('{"eos_token_id": [1, 106], "repetition_penalty": 1.05}')
    assert checkpoint_stop_ids(tmp_path) == {1, 106}


# -- offline mode and pre-flight messages ----------------------------------------------------------------
def test_enforce_offline_sets_the_variable_and_an_imported_hub(monkeypatch) -> None:
    import sys
    import types

    fake = types.SimpleNamespace(HF_HUB_OFFLINE=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # restored after the test
    monkeypatch.setitem(sys.modules, "huggingface_hub.constants", fake)
    enforce_offline()
    import os

    assert os.environ["HF_HUB_OFFLINE"] == "1" and fake.HF_HUB_OFFLINE is True


def test_processor_import_messages_name_the_package() -> None:
    # transformers' message when a processor needs torchvision (utils/import_utils.py TORCHVISION_IMPORT_ERROR)
    exc = ImportError("Qwen2VLVideoProcessor requires the Torchvision library but it was not found in your environment.")
    assert "'torchvision'" in processor_import_message("q", "Qwen/Qwen2-VL-7B-Instruct", exc)
    assert "'num2words'" in processor_import_message("s", "m", ModuleNotFoundError("No module named 'num2words'", name="num2words"))
    # a CUDA torchvision next to a CPU torch: its C extension fails to register its operators
    broken = RuntimeError("operator torchvision::nms does not exist")
    assert "matching pair" in processor_import_message("q", "m", broken)
    assert processor_import_message("q", "m", ValueError("something else")) is None


def test_chat_template_setting_inline_or_file(tmp_path) -> None:
    inline = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    assert read_chat_template(inline) == inline
    (tmp_path / "t.jinja").write_text(inline)
    assert read_chat_template(str(tmp_path / "t.jinja")) == inline
    (tmp_path / "chat_template.json").write_text('{"chat_template": "x{{ y }}"}')
    assert read_chat_template(str(tmp_path / "chat_template.json")) == "x{{ y }}"
    with pytest.raises(ConfigError, match="does not exist"):
        read_chat_template(str(tmp_path / "missing.jinja"))
