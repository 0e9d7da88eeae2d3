"""The vLLM backend: request building and output parsing without vLLM; the engine
itself only where vLLM imports and a CUDA GPU is visible."""

from __future__ import annotations

import base64
import json
import importlib.util
import io
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from PIL import Image

from sabre_prior.errors import BackendError, ConfigError
from sabre_prior.inference.models.base import CallError, Query, create_backend
from sabre_prior.inference.models.local_common import LocalSettings, resolve_model_source
from sabre_prior.inference.models.vllm_backend import (
    answer_each,
    build_requests,
    chat_kwargs,
    engine_kwargs,
    parse_output,
    sampling_kwargs,
)

pytestmark = pytest.mark.torch  # imported in the test process: these tests share one xdist worker


def _jpeg(color: str = "red") -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (40, 30), color).save(buf, "JPEG")
    return buf.getvalue()


QUERIES = [
    Query(id="a", split="language", text="Question: Which?\n\nOptions:\nA. x\nB. y", image=_jpeg("red"), image_mime="image/jpeg"),
    Query(id="b", split="context", text="Question: Is there a dog?", image=_jpeg("blue"), image_mime="image/png"),
]


def _cfg(**settings) -> LocalSettings:
    return LocalSettings.from_settings("m", {"backend": "vllm", "model_id": "org/vlm", **settings})


# -- pure functions -------------------------------------------------------------------
def test_engine_kwargs_defaults() -> None:
    cfg = _cfg()
    kw = engine_kwargs(cfg, resolve_model_source(cfg.model_id, environ={}))
    assert kw == {
        "model": "org/vlm",
        "tokenizer": "org/vlm",
        "dtype": "auto",
        "tensor_parallel_size": 1,
        "trust_remote_code": False,
        "seed": 0,
        "limit_mm_per_prompt": {"image": 1, "video": 0},
    }


def test_engine_kwargs_from_settings() -> None:
    cfg = _cfg(
        gpus=2,
        max_model_len=8192,
        gpu_memory_utilization=0.85,
        max_num_seqs=64,
        enforce_eager=True,
        load_format="dummy",
        revision="r1",
        trust_remote_code=True,
        processor_kwargs={"max_pixels": 1003520},
        model_kwargs={"swap_space": 8},
    )
    kw = engine_kwargs(cfg, resolve_model_source(cfg.model_id, cfg.revision, environ={}))
    assert kw["tensor_parallel_size"] == 2  # follows gpus unless set
    assert (kw["max_model_len"], kw["gpu_memory_utilization"], kw["max_num_seqs"]) == (8192, 0.85, 64)
    assert kw["enforce_eager"] is True and kw["load_format"] == "dummy" and kw["trust_remote_code"] is True
    assert kw["revision"] == kw["tokenizer_revision"] == "r1"
    assert kw["mm_processor_kwargs"] == {"max_pixels": 1003520}
    assert kw["swap_space"] == 8
    assert engine_kwargs(_cfg(gpus=4, tensor_parallel_size=2), resolve_model_source("org/vlm"))["tensor_parallel_size"] == 2


def test_sampling_is_the_shared_protocol() -> None:
    """Every sampling field is explicit, so the checkpoint's generation_config (e.g.
    Qwen2.5-VL's repetition_penalty 1.05) cannot change vLLM's answers: vLLM applies
    default sampling params from generation_config only to requests without explicit
    ones (vllm-project/vllm PR 11164, LLM.get_default_sampling_params)."""
    kw = sampling_kwargs(_cfg(), [2, 9])
    assert kw == {"n": 1, "temperature": 0.0, "top_p": 1.0, "top_k": 0, "min_p": 0.0, "presence_penalty": 0.0,
                  "frequency_penalty": 0.0, "repetition_penalty": 1.0, "max_tokens": 64, "stop_token_ids": [2, 9], "seed": 0}  # fmt: skip
    assert sampling_kwargs(_cfg(max_output_tokens=8, repetition_penalty=1.05))["repetition_penalty"] == 1.05


def test_chat_template_setting_reaches_llm_chat(tmp_path) -> None:
    assert chat_kwargs(_cfg()) == {"use_tqdm": False}
    (tmp_path / "t.jinja").write_text("{{ messages }}")
    assert chat_kwargs(_cfg(chat_template=str(tmp_path / "t.jinja")))["chat_template"] == "{{ messages }}"


def test_build_requests_one_conversation_per_question() -> None:
    convs = build_requests(QUERIES, system_prompt="Answer briefly.")
    assert len(convs) == 2
    for conv, q in zip(convs, QUERIES):
        assert conv[0] == {"role": "system", "content": "Answer briefly."}
        image, text = conv[1]["content"]
        assert image["type"] == "image_url" and text == {"type": "text", "text": q.text}
        prefix = f"data:{q.image_mime};base64,"
        assert image["image_url"]["url"].startswith(prefix)
        assert base64.b64decode(image["image_url"]["url"][len(prefix) :]) == q.image
    assert [m["role"] for m in build_requests(QUERIES[:1])[0]] == ["user"]


def _output(text: str, prompt_len: int = 7, token_ids=(1, 2, 3), finish: str = "stop"):
    cand = SimpleNamespace(text=text, token_ids=list(token_ids), finish_reason=finish)
    return SimpleNamespace(prompt_token_ids=list(range(prompt_len)), outputs=[cand])


def test_parse_output() -> None:
    c = parse_output(_output("  Yes.\n", prompt_len=1290, token_ids=(9, 8, 2)))
    assert (c.text, c.input_tokens, c.output_tokens, c.finish_reason) == ("Yes.", 1290, 3, "stop")
    c = parse_output(_output("1 2 3", token_ids=range(64), finish="length"))
    assert (c.output_tokens, c.finish_reason) == (64, "length")
    bare = parse_output(SimpleNamespace(outputs=[SimpleNamespace(text="B", token_ids=None, finish_reason=None)]))
    assert (bare.text, bare.input_tokens, bare.output_tokens) == ("B", None, None)


def test_parse_output_failures_are_call_errors() -> None:
    with pytest.raises(CallError, match="question x: vLLM returned no candidate") as e:
        parse_output(SimpleNamespace(prompt_token_ids=[1], outputs=[]), "x")
    assert not e.value.retryable
    with pytest.raises(CallError) as e:
        parse_output(_output("", finish="abort"), "y")
    assert e.value.retryable


def test_backend_settings_are_checked_without_vllm() -> None:
    backend = create_backend("m", {"backend": "vllm", "model_id": "org/vlm", "batch_size": 256})
    assert backend.cache_identity() == {"backend": "vllm", "model_id": "org/vlm", "max_new_tokens": 64, "dtype": "auto",
                                        "decoding": "greedy-explicit-1"}  # fmt: skip
    with pytest.raises(ConfigError, match=r"models\.m\.max_model_len"):
        create_backend("m", {"backend": "vllm", "model_id": "org/vlm", "max_model_len": 0})


# -- per-question failures -------------------------------------------------------------------
class FakeChat:
    """LLM.chat stand-in: vLLM validates every prompt of a call before scheduling any, and
    raises (ValueError "The decoder prompt (length N) is longer than the maximum model length
    of M", vllm/v1/engine/processor.py _validate_model_input) for the whole call."""

    def __init__(self, bad: set[str]) -> None:
        self.bad, self.calls = bad, []

    def __call__(self, queries):
        self.calls.append([q.id for q in queries])
        for q in queries:
            if q.id in self.bad:
                raise ValueError(f"The decoder prompt (length 9000) is longer than the maximum model length of 8192.")
        return [_output(f"answer {q.id}") for q in queries]


def test_a_prompt_that_cannot_be_served_fails_alone() -> None:
    queries = [Query(id=f"q{i}", split="context", text="t", image=_jpeg(), image_mime="image/jpeg") for i in range(4)]
    chat = FakeChat(bad={"q2"})
    results = answer_each(chat, queries)
    assert [r.text if not isinstance(r, CallError) else None for r in results] == ["answer q0", "answer q1", None, "answer q3"]
    err = results[2]
    assert isinstance(err, CallError) and not err.retryable and err.kind == "bad_request"
    assert "question q2" in str(err) and "longer than the maximum model length" in str(err)
    assert chat.calls == [["q0", "q1", "q2", "q3"], ["q0"], ["q1"], ["q2"], ["q3"]]
    ok = FakeChat(bad=set())
    assert len(answer_each(ok, queries)) == 4 and ok.calls == [["q0", "q1", "q2", "q3"]]


def test_engine_fails_only_the_unservable_question(tmp_path) -> None:
    """Through the real engine and journal: the others are answered and journaled, the
    unservable one is a failure (never an answer) and is not retried."""
    from sabre_prior.inference.engine import Engine, EngineSettings, WorkItem
    from sabre_prior.inference.journal import Journal
    from sabre_prior.inference.models.base import Backend

    chat = FakeChat(bad={"q1"})

    class Fake(Backend):
        kind = "local"

        def complete_batch(self, queries):
            return answer_each(chat, queries)

    items = [WorkItem(Query(id=f"q{i}", split="s", text=f"t{i}", image=b"", image_mime="image/jpeg"), key=f"k{i}") for i in range(3)]
    settings = EngineSettings(batch_size=3, backoff_base_s=0.001, retry_empty=False)
    with Journal(tmp_path / "j.jsonl") as journal:
        result = Engine(Fake("m", {"backend": "fake"}), journal, settings, progress=False).run(items)
    assert result.answers == {"q0": "answer q0", "q2": "answer q2"}
    assert list(result.failures) == ["q1"] and "longer than the maximum model length" in result.failures["q1"]
    assert chat.calls == [["q0", "q1", "q2"], ["q0"], ["q1"], ["q2"]]  # no retry of q1
    assert len((tmp_path / "j.jsonl").read_text().splitlines()) == 2


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_missing_vllm_is_a_clear_error() -> None:
    backend = create_backend("m", {"backend": "vllm", "model_id": "org/vlm"})
    with pytest.raises(BackendError, match="needs the 'vllm' package"):
        backend.check_ready()


# -- the real engine (GPU machines with vLLM only) -------------------------------------------
def _gpu_reason() -> str | None:
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not installed (it needs Linux with a CUDA GPU)"
    import torch

    if not torch.cuda.is_available():
        return "no CUDA GPU is visible"
    return None


@pytest.mark.gpu
def test_vllm_engine_on_a_tiny_random_model(tmp_path: Path) -> None:
    reason = _gpu_reason()
    if reason:
        pytest.skip(reason)
    spec = importlib.util.spec_from_file_location("tiny_vlm", Path(__file__).resolve().parents[1] / "fixtures" / "tiny_vlm.py")
    assert spec and spec.loader
    tiny = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tiny)
    # heads of 32 dims: the smallest that vLLM's attention kernels take
    model = tiny.build_tiny_vlm(tmp_path / "tiny", hidden_size=64)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    settings = {"backend": "vllm", "model_id": str(model), "max_output_tokens": 6, "dtype": "float16",
                "max_model_len": 1024, "gpu_memory_utilization": 0.3, "enforce_eager": True}
    backend = create_backend("tiny", settings)
    backend.check_ready()
    try:
        completions = backend.complete_batch(QUERIES)
        assert len(completions) == len(QUERIES)
        for c in completions:
            assert c.input_tokens and c.input_tokens > 16  # prompt + 16 image tokens
            assert 1 <= (c.output_tokens or 0) <= 6
        again = backend.complete_batch(QUERIES)
        assert [c.text for c in again] == [c.text for c in completions]
    finally:
        backend.close()


# -- the backend's engine calls, against a stand-in for the vllm module ----------------------------
def _fake_vllm(record: dict):
    """A stand-in for the parts of vLLM's offline API the backend uses: ``LLM(**engine_args)``,
    ``LLM.chat(messages, sampling_params, use_tqdm=..., chat_template=...)`` returning one
    ``RequestOutput`` per conversation, ``LLM.get_tokenizer()`` and ``SamplingParams(**kw)``
    (docs.vllm.ai: "Offline Inference", vllm.LLM.chat, vllm.SamplingParams)."""
    import importlib.machinery
    import types

    module = types.ModuleType("vllm")
    module.__spec__ = importlib.machinery.ModuleSpec("vllm", None)

    class LLM:
        def __init__(self, **kwargs):
            record["engine"] = kwargs
            record["offline_at_start"] = os.environ.get("HF_HUB_OFFLINE")

        def get_tokenizer(self):
            return SimpleNamespace(eos_token_id=99)

        def chat(self, messages, sampling_params, **kwargs):
            record.setdefault("chats", []).append((len(messages), kwargs))
            return [_output(f"ok{i}") for i in range(len(messages))]

    class SamplingParams:
        def __init__(self, **kwargs):
            record["sampling"] = kwargs

    module.LLM, module.SamplingParams = LLM, SamplingParams
    return module


def test_backend_drives_the_engine_as_configured(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("transformers", reason="the pre-flight loads the processor with transformers")
    import sys

    spec = importlib.util.spec_from_file_location("tiny_vlm", Path(__file__).resolve().parents[1] / "fixtures" / "tiny_vlm.py")
    assert spec and spec.loader
    tiny = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tiny)
    model = tiny.build_tiny_vlm(tmp_path / "tiny")
    (tmp_path / "t.jinja").write_text(tiny.CHAT_TEMPLATE)
    record: dict = {}
    monkeypatch.setitem(sys.modules, "vllm", _fake_vllm(record))
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # restored after the test, as is the hub's constant
    import huggingface_hub.constants as hub_constants

    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", hub_constants.HF_HUB_OFFLINE)
    backend = create_backend("tiny", {"backend": "vllm", "model_id": str(model), "max_output_tokens": 5,
                                      "chat_template": str(tmp_path / "t.jinja"), "repetition_penalty": 1.1})  # fmt: skip
    backend.check_ready()  # the processor pre-flight passes on the tiny LLaVA
    completions = backend.complete_batch(QUERIES)
    assert [c.text for c in completions] == ["ok0", "ok1"]
    assert record["offline_at_start"] == "1"  # set before vLLM could import huggingface_hub
    assert record["engine"]["limit_mm_per_prompt"] == {"image": 1, "video": 0}
    eos = json.loads((model / "generation_config.json").read_text())["eos_token_id"]
    assert record["sampling"]["stop_token_ids"] == [eos] and record["sampling"]["repetition_penalty"] == 1.1
    assert record["sampling"]["max_tokens"] == 5 and record["sampling"]["temperature"] == 0.0
    assert record["chats"] == [(2, {"use_tqdm": False, "chat_template": tiny.CHAT_TEMPLATE})]
    assert backend.run_info()["decoding"]["repetition_penalty"] == 1.1


def test_tokenizer_only_checkpoints_pass_the_vllm_preflight(tmp_path) -> None:
    """InternVL's original repos (trust_remote_code) give AutoProcessor a tokenizer alone;
    vLLM places their images itself, so only the chat template is required."""
    pytest.importorskip("transformers")
    from sabre_prior.inference.models.local_common import preflight_processor

    spec = importlib.util.spec_from_file_location("tiny_vlm", Path(__file__).resolve().parents[1] / "fixtures" / "tiny_vlm.py")
    assert spec and spec.loader
    tiny = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tiny)
    tokenizer = tiny.build_tokenizer()
    tokenizer.save_pretrained(tmp_path)
    (tmp_path / "config.json").write_text('{"model_type": "llama"}')
    cfg = _cfg()
    source = resolve_model_source(str(tmp_path))
    assert preflight_processor("m", source, cfg, engine_places_images=True) is not None
    with pytest.raises(BackendError, match="has no tokenizer|not a vision-language"):
        preflight_processor("m", source, cfg)


def test_batch_invariant_sets_the_documented_variable_for_its_job_and_is_recorded() -> None:
    """Issue 34: ``batch_invariant: true`` -> VLLM_BATCH_INVARIANT=1 (docs.vllm.ai, "Batch Invariance"),
    in the run manifest's decoding (local_common.decoding_for) and the usage summary's environment."""
    from sabre_prior import registry
    from sabre_prior.inference.models import vllm_backend
    from sabre_prior.inference.models.local_common import decoding_for, local_cache_identity

    on = {"backend": "vllm", "model_id": "Qwen/Qwen2.5-VL-7B-Instruct", "batch_invariant": True}
    off = {**on, "batch_invariant": False}
    assert vllm_backend.batch_invariant_env(on) == {"VLLM_BATCH_INVARIANT": "1"}
    assert vllm_backend.batch_invariant_env(off) == {} and vllm_backend.batch_invariant_env({"backend": "vllm"}) == {}
    with pytest.raises(BackendError, match="models.m.batch_invariant must be true or false"):
        vllm_backend.batch_invariant_env({"batch_invariant": "yes"}, "m")
    assert decoding_for("m", on)["batch_invariant"] == "VLLM_BATCH_INVARIANT=1"
    assert "batch_invariant" not in decoding_for("m", off)
    # other numerics, other answers: part of the journal's cache identity
    assert local_cache_identity(on) != local_cache_identity(off)
    # only the vLLM backend takes it
    assert "batch_invariant" in registry.SPECS["vllm"].settings
    assert "batch_invariant" not in registry.SPECS["transformers"].settings


def test_issue_34_settings_validate_per_backend() -> None:
    from sabre_prior.config import validate_params

    base = {"dataset": {"source": "demo"}, "splits": ["context"]}
    ok = {**base, "models": {
        "vl": {"backend": "vllm", "model_id": "m", "batch_invariant": True, "batch_audit": True},
        "hf": {"backend": "transformers", "model_id": "m", "batch_audit": True},
        "api": {"backend": "openai", "model_id": "x", "api_key_env": "K", "same_model_as": "m"},
        "random": {"backend": "baseline", "strategy": "random", "batch_audit": True},
    }}  # fmt: skip
    validate_params(ok)
    bad = {**base, "models": {"hf": {"backend": "transformers", "model_id": "m", "batch_invariant": True}}}
    with pytest.raises(ConfigError, match="models.hf.batch_invariant: unknown key for backend 'transformers'"):
        validate_params(bad)
    with pytest.raises(ConfigError, match="models.vl.batch_invariant"):
        validate_params({**base, "models": {"vl": {"backend": "vllm", "model_id": "m", "batch_invariant": "yes"}}})
