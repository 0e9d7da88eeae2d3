"""The transformers backend on a tiny random VLM built in the test (CPU, no download)."""

from __future__ import annotations

import importlib.util
import io
from pathlib import Path
from types import ModuleType

import pytest

# find_spec, not importorskip: collecting this module (in every xdist worker) does not import torch
if importlib.util.find_spec("torch") is None or importlib.util.find_spec("transformers") is None:
    pytest.skip("the local-model stack (pip install -e '.[local]') is not installed", allow_module_level=True)

from PIL import Image  # noqa: E402

from sabre_prior.errors import BackendError  # noqa: E402
from sabre_prior.inference.models.base import Query, create_backend  # noqa: E402

pytestmark = pytest.mark.torch  # imported in the test process: these tests share one xdist worker

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def load_tiny_vlm_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tiny_vlm", FIXTURES / "tiny_vlm.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return load_tiny_vlm_module().build_tiny_vlm(tmp_path_factory.mktemp("tiny_vlm"))


def _jpeg(color: str, size: tuple[int, int] = (70, 47)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, "JPEG")
    return buf.getvalue()


COLORS = ["red", "blue", "green", "white", "black"]
# prompts of different lengths, so that a batch needs padding
QUERIES = [
    Query(
        id=f"q{i}",
        split="context",
        text="Question: Is there a cat" + " here" * (3 * i) + "?\n\nAnswer with only yes or no. Do not explain.",
        image=_jpeg(color),
        image_mime="image/jpeg",
    )
    for i, color in enumerate(COLORS)
]


def _backend(model: Path, **settings):
    return create_backend("tiny", {"backend": "transformers", "model_id": str(model), "device": "cpu", **settings})


def test_answers_every_question_with_token_counts(tiny_model: Path) -> None:
    backend = _backend(tiny_model, batch_size=2, max_output_tokens=6)
    backend.check_ready()
    completions = backend.complete_batch(QUERIES)
    assert len(completions) == len(QUERIES)
    # input tokens: what the processor's chat template makes of each conversation alone
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(tiny_model, local_files_only=True)
    for q, c in zip(QUERIES, completions):
        conv = [{"role": "user", "content": [{"type": "image", "image": Image.open(io.BytesIO(q.image))}, {"type": "text", "text": q.text}]}]
        ids = processor.apply_chat_template(conv, add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"]
        assert c.input_tokens == len(ids[0] if isinstance(ids[0], list) else ids)
        assert 1 <= c.output_tokens <= 6
        assert c.finish_reason in ("stop", "length")
        assert c.finish_reason == "stop" or c.output_tokens == 6
        assert isinstance(c.text, str)
    assert len({c.input_tokens for c in completions}) == len(QUERIES)  # the prompts really differ
    stats = backend.throughput()
    assert stats["questions_per_s"] > 0 and backend.stats["questions"] == len(QUERIES)
    assert backend.stats["output_tokens"] == sum(c.output_tokens for c in completions)
    backend.close()


def test_batched_generation_equals_one_by_one(tiny_model: Path) -> None:
    """Left padding and the attention mask keep batched greedy answers identical."""
    batched = _backend(tiny_model, batch_size=len(QUERIES), max_output_tokens=8).complete_batch(QUERIES)
    single_backend = _backend(tiny_model, batch_size=1, max_output_tokens=8)
    single = [single_backend.complete_batch([q])[0] for q in QUERIES]
    assert [c.text for c in batched] == [c.text for c in single]
    assert [c.output_tokens for c in batched] == [c.output_tokens for c in single]


def test_greedy_decoding_is_deterministic_across_loads(tiny_model: Path) -> None:
    first = [c.text for c in _backend(tiny_model, max_output_tokens=5).complete_batch(QUERIES[:3])]
    second = [c.text for c in _backend(tiny_model, max_output_tokens=5).complete_batch(QUERIES[:3])]
    assert first == second


def test_dtype_setting_is_applied(tiny_model: Path) -> None:
    import torch

    backend = _backend(tiny_model, dtype="bfloat16", max_output_tokens=3)
    backend.check_ready()
    assert backend._model is None  # loaded at the first batch, not by the readiness check
    assert len(backend.complete_batch(QUERIES[:2])) == 2
    assert backend._model.dtype == torch.bfloat16


def test_dummy_weights_from_the_config(tiny_model: Path) -> None:
    """load_format: dummy builds random weights from the config (benchmarks without weights)."""
    real = _backend(tiny_model, max_output_tokens=6).complete_batch(QUERIES)
    dummy = _backend(tiny_model, max_output_tokens=6, load_format="dummy", seed=123).complete_batch(QUERIES)
    assert len(dummy) == len(QUERIES)
    assert [c.text for c in dummy] != [c.text for c in real]


def test_cache_identity_ignores_batching(tiny_model: Path) -> None:
    a = _backend(tiny_model, batch_size=2).cache_identity()
    b = _backend(tiny_model, batch_size=7, device="cpu").cache_identity()
    assert a == b and a["model_id"] == str(tiny_model) and a["max_new_tokens"] == 64


def test_hub_id_missing_from_the_local_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hub id is read from the local cache only: a clear error, no download attempt."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    backend = create_backend("qwen", {"backend": "transformers", "model_id": "Qwen/Qwen2.5-VL-7B-Instruct"})
    assert backend.source.local_files_only
    with pytest.raises(BackendError, match=r"models\.qwen: cannot load 'Qwen/Qwen2.5-VL-7B-Instruct' from the local cache"):
        backend.check_ready()
    with pytest.raises(BackendError, match=r"models\.qwen: cannot load .*HF_HUB_OFFLINE is set"):
        backend.complete_batch(QUERIES[:1])


def test_cuda_without_a_gpu_fails_clearly(tiny_model: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible here; this checks the message on machines without one")
    with pytest.raises(BackendError, match="no CUDA GPU is visible"):
        _backend(tiny_model, device="cuda").check_ready()


def test_not_a_vision_model(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match=r"models\.tiny: .* holds no config.json"):
        _backend(tmp_path).check_ready()
    (tmp_path / "config.json").write_text('{"model_type": "bert", "hidden_size": 8}')
    backend = _backend(tmp_path)
    # the pre-flight (processor only, no weights) stops it in one line
    with pytest.raises(BackendError, match=r"models\.tiny: .*(no tokenizer|processor of .* cannot be loaded|cannot load)"):
        backend.check_ready()


def test_checkpoint_generation_defaults_do_not_change_answers(tiny_model: Path, tmp_path: Path) -> None:
    """A generation_config.json asking for sampling and a strong repetition penalty (as
    Qwen's 1.05, but larger) is overridden by the shared protocol; the model setting is not."""
    import json
    import shutil

    plain = [c.text for c in _backend(tiny_model, max_output_tokens=8).complete_batch(QUERIES)]
    noisy = tmp_path / "noisy"
    shutil.copytree(tiny_model, noisy)
    gen = json.loads((noisy / "generation_config.json").read_text())
    gen.update(do_sample=True, temperature=3.0, top_k=2, top_p=0.5, repetition_penalty=50.0, no_repeat_ngram_size=1)
    (noisy / "generation_config.json").write_text(json.dumps(gen))
    assert [c.text for c in _backend(noisy, max_output_tokens=8).complete_batch(QUERIES)] == plain
    penalised = [c.text for c in _backend(tiny_model, max_output_tokens=8, repetition_penalty=50.0).complete_batch(QUERIES)]
    assert penalised != plain  # the setting itself is applied (the check above can fail)


def test_missing_chat_template_is_refused_before_loading(tiny_model: Path, tmp_path: Path) -> None:
    import json
    import shutil

    bare = tmp_path / "bare"
    shutil.copytree(tiny_model, bare)
    for f in ("chat_template.json", "chat_template.jinja"):
        (bare / f).unlink(missing_ok=True)
    for f in ("tokenizer_config.json", "processor_config.json"):
        if (bare / f).exists():
            data = json.loads((bare / f).read_text())
            data.pop("chat_template", None)
            (bare / f).write_text(json.dumps(data))
    with pytest.raises(BackendError, match=r"ships no chat template.*set models\.tiny\.chat_template"):
        _backend(bare).check_ready()
    template = tmp_path / "llava.jinja"
    template.write_text(load_tiny_vlm_module().CHAT_TEMPLATE)
    backend = _backend(bare, chat_template=str(template), max_output_tokens=3)
    backend.check_ready()
    assert len(backend.complete_batch(QUERIES[:2])) == 2


# -- the whole pipeline ------------------------------------------------------------------
@pytest.mark.slow
def test_snakemake_pipeline_evaluates_the_tiny_model(tiny_vlm_run: Path, tmp_path: Path) -> None:
    """A real `snakemake all` of the project with the tiny model (the session's shared run,
    tests/conftest.py::tiny_vlm_run): predictions for every question, scores and tables for the
    tiny model; a re-run in a copy takes every answer from the journal."""
    import json
    import shutil

    import pyarrow.parquet as pq

    spec = importlib.util.spec_from_file_location("local_model_project", FIXTURES / "local_model_project.py")
    assert spec and spec.loader
    lmp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lmp)
    project = lmp.project_module()
    root = tmp_path / "project"
    shutil.copytree(tiny_vlm_run / "local", root, symlinks=True)  # with its mtimes and .snakemake/

    splits = ["context", "texture", "attribute", "language"]
    usage_total = 0
    for split in splits:
        ids = pq.read_table(root / "data" / "parquet" / f"{split}.parquet", columns=["id"]).column("id").to_pylist()
        lines = (root / "results" / "predictions" / "tiny" / f"{split}.jsonl").read_text().splitlines()
        assert [json.loads(line)["id"] for line in lines] == ids and ids
        assert all(isinstance(json.loads(line)["prediction"], str) for line in lines)
        usage = json.loads((root / "results" / "usage" / "tiny" / f"{split}.json").read_text())
        assert usage["answered"] == usage["questions"] == len(ids) and usage["failed"] == 0
        assert usage["input_tokens"] > 16 * len(ids)  # prompt plus 16 image tokens each
        assert len(ids) <= usage["output_tokens"] <= 4 * len(ids)
        usage_total += usage["calls"]
    metrics = json.loads((root / "results" / "metrics" / "tiny.json").read_text())
    assert all(metrics[s]["missing"] == 0 and metrics[s]["total"] > 0 for s in splits)
    assert 0.0 <= metrics["macro_accuracy"] <= 1.0
    for ext in ("md", "tex"):
        assert "Tiny random VLM" in (root / "results" / "tables" / f"main_results.{ext}").read_text()
    csv_rows = (root / "results" / "tables" / "main_results.csv").read_text().splitlines()
    assert any(row.startswith("tiny,") for row in csv_rows)
    assert usage_total > 0
    first_log = json.loads((root / "results" / "logs" / "usage" / "tiny" / "context.json").read_text())
    assert first_log["throughput"]["questions_per_s"] > 0
    assert first_log["generation"]["questions"] == first_log["calls"]

    # kill-safety: the predictions are gone, the journal is not; no generation is repeated
    before = (root / "results" / "predictions" / "tiny" / "context.jsonl").read_bytes()
    (root / "results" / "predictions" / "tiny" / "context.jsonl").unlink()
    project.snakemake(["--cores", "2", "results/predictions/tiny/context.jsonl"], root)
    assert (root / "results" / "predictions" / "tiny" / "context.jsonl").read_bytes() == before
    run_log = json.loads((root / "results" / "logs" / "usage" / "tiny" / "context.json").read_text())
    assert run_log["calls"] == 0 and run_log["cached"] == len(before.splitlines())
    assert "throughput" not in run_log  # nothing was generated


def test_prefetch_and_length_order_leave_the_answers_alone(tiny_model: Path) -> None:
    """Issue 34: the next batch encoded in a thread (prefetch, named by the engine or within one call) and
    the engine's length order change when the CPU works, not what is answered."""
    from sabre_prior.inference.models import transformers_backend as tb

    plain = _backend(tiny_model, batch_size=2, max_output_tokens=6)
    plain.prefetch_enabled = plain.group_by_length = plain.fast_processor = False
    reference = [c.text for c in plain.complete_batch(QUERIES)]
    assert plain._pool is None and plain.stats["encode_wait_s"] == 0.0  # nothing ran ahead
    fast = _backend(tiny_model, batch_size=2, max_output_tokens=6)
    fast.time_split = True
    assert [c.text for c in fast.complete_batch(QUERIES)] == reference
    assert fast._pool is not None  # batches 2 and 3 were encoded in the worker thread
    for key in tb.TIMING_KEYS:
        assert fast.stats[key] >= 0.0
    assert fast.stats["prefill_s"] > 0 and fast.stats["decode_s"] > 0 and fast.stats["image_decode_s"] > 0
    assert fast.stats["model_s"] >= fast.stats["prefill_s"]
    # as the engine sends them: ordered by order_key, the next batch named before this one is sent
    ordered = sorted(QUERIES, key=fast.order_key)
    assert [q.id for q in ordered] == [q.id for q in QUERIES]  # one image size; prompts grow with i
    engine_like = _backend(tiny_model, batch_size=2, max_output_tokens=6)
    engine_like.check_ready()
    got = {}
    for start in range(0, len(ordered), 2):
        engine_like.prefetch(ordered[start + 2 : start + 4])
        got.update({q.id: c.text for q, c in zip(ordered[start : start + 2], engine_like.complete_batch(ordered[start : start + 2]))})
    assert [got[q.id] for q in QUERIES] == reference
    assert engine_like._prefetched == {} and engine_like.stats["encode_wait_s"] > 0  # every named batch was used
    assert engine_like.run_info()["image_processor"]["used"] == type(engine_like._processor.image_processor).__name__
    for b in (plain, fast, engine_like):
        b.close()


def test_the_fast_image_processor_only_where_it_gives_the_same_pixels(tiny_model: Path) -> None:
    """The checkpoint's fast image processor replaces the slow one only when the pixel values agree."""
    from transformers import AutoImageProcessor

    backend = _backend(tiny_model, batch_size=2, max_output_tokens=3)
    backend.check_ready()
    slow = AutoImageProcessor.from_pretrained(tiny_model, use_fast=False)
    backend._processor.image_processor = slow
    backend.complete_batch(QUERIES[:2])
    check = backend.image_processor_check
    fast_name = type(AutoImageProcessor.from_pretrained(tiny_model, use_fast=True)).__name__
    if fast_name == type(slow).__name__:
        assert check["fast"] == "the processor in use"
    else:
        assert check["fast"] == fast_name and isinstance(check["max_abs_diff"], float)
        assert check["used"] == (fast_name if check["max_abs_diff"] <= 1e-4 else type(slow).__name__)
        assert type(backend._processor.image_processor).__name__ == check["used"]
    backend.close()
