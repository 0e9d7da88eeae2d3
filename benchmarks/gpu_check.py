"""GPU check: one open VLM through both local backends on the full-size demo.

Run on a machine with a CUDA GPU, in the pinned GPU environment
(``bash scripts/install.sh --gpu``: vLLM with its torch and transformers)::

    python benchmarks/gpu_check.py --model Qwen/Qwen2.5-VL-7B-Instruct
    python benchmarks/gpu_check.py --model Qwen/Qwen2.5-VL-7B-Instruct --random-weights  # config only
    python benchmarks/gpu_check.py --random-arch qwen2_5_vl_7b --max-pixels 1003520      # no files at all
    python benchmarks/gpu_check.py --tiny --backends transformers --device cpu          # smoke test

It generates the demo benchmark at full size (``sabre demo-data --scale full``:
1,000 questions on 600 images of about 1400 x 939 px) and its Parquet splits
(``sabre fetch``), then answers every question once with the ``vllm`` and once
with the ``transformers`` backend, each in a process of its own, and prints per
backend: model load time, questions/s and generated tokens/s of the answering,
peak GPU memory (device-wide, sampled with nvidia-smi, plus torch's own peak
for transformers), and the agreement between the two backends (identical
answer text, and the same answer after the scoring contract's extraction).

Weights: ``--model`` is a hub id read from the local cache (``HF_HOME``) or a
local directory.  Without the weights, ``--random-weights`` builds a randomly
initialised checkpoint from the model's config and processor files only (e.g.
a cache holding just ``config.json``, tokenizer and processor files) and
evaluates both backends on those same weights, so their agreement is still
meaningful (random weights rarely stop early: every answer runs to
``--max-new-tokens``, so questions/s is a pessimistic figure).  ``--tiny`` uses
the test suite's tiny random LLaVA instead (no files needed; a smoke test).
``--random-arch qwen2_5_vl_7b`` needs no files at all: random weights in
Qwen2.5-VL-7B's architecture (tests/fixtures/tiny_families.py: the real config,
model and processor classes, the family's chat template, a locally trained
tokenizer of ~400 tokens, so the output layer is smaller than the real 152k one),
drawn on the GPU in bfloat16 and saved once (~15 GB) under ``--workdir``.

Both backends decode with the one shared protocol (``models.local_common.Decoding``:
greedy, ``--max-new-tokens``, repetition penalty 1.0, checkpoint defaults
overridden), printed with the results, so the agreement figure compares the
backends and not two decoding setups.

Targets (issues 5 and 11) on one H200: vLLM >= 20 questions/s for a 7B VLM,
transformers >= 2 questions/s, agreement >= 99% of answers.  The results are also written as JSON (``--output``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SPLITS = ("context", "texture", "attribute", "language")
TARGET_QPS = 20.0  # vLLM, 7B VLM, one H200
TARGET_HF_QPS = 2.0  # transformers, same model and GPU
TARGET_AGREEMENT = 0.99  # share of questions with the same extracted answer


# ---------------------------------------------------------------------------
# data and model preparation (parent process)
# ---------------------------------------------------------------------------
def prepare_data(workdir: Path, scale: str) -> Path:
    """The demo benchmark at ``scale`` as Parquet splits under ``workdir``."""
    from sabre_prior.data.demo import generate
    from sabre_prior.data.fetch import fetch_split

    parquet = workdir / f"parquet-{scale}"
    if all((parquet / f"{s}.parquet").exists() for s in SPLITS):
        return parquet
    demo = workdir / f"demo-{scale}"
    print(generate(demo, scale=scale, seed=0), flush=True)
    for split in SPLITS:
        print(fetch_split(str(demo), split, parquet / f"{split}.parquet"), flush=True)
    return parquet


def build_tiny(workdir: Path) -> Path:
    spec = importlib.util.spec_from_file_location("tiny_vlm", ROOT / "tests" / "fixtures" / "tiny_vlm.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # heads of 32 dims: the smallest vLLM's attention kernels take
    return module.build_tiny_vlm(workdir / "tiny-vlm", hidden_size=64)


def make_random_arch(arch: str, out: Path, seed: int = 0) -> Path:
    """A random checkpoint of a full-size architecture from tests/fixtures/tiny_families.py."""
    import torch

    spec = importlib.util.spec_from_file_location("tiny_families", ROOT / "tests" / "fixtures" / "tiny_families.py")
    assert spec and spec.loader
    families = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(families)
    if torch.cuda.is_available():
        families.BUILD.update(device="cuda", dtype="bfloat16")
    return families.build(arch, out, seed)


def make_random_checkpoint(source: str, out: Path, seed: int = 0) -> Path:
    """Random weights for ``source``'s config, saved with its processor (worker process)."""
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText, AutoProcessor

    from sabre_prior.inference.models.local_common import hub_offline, resolve_model_source

    src = resolve_model_source(source, allow_download=not hub_offline())
    kw = {"local_files_only": src.local_files_only}
    config = AutoConfig.from_pretrained(src.path_or_id, **kw)
    processor = AutoProcessor.from_pretrained(src.path_or_id, **kw)
    torch.manual_seed(seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with torch.device(device):
        model = AutoModelForImageTextToText.from_config(config, dtype=torch.bfloat16)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


# ---------------------------------------------------------------------------
# GPU memory sampling
# ---------------------------------------------------------------------------
class GpuMemorySampler:
    """Peak device memory in use (MiB) while a worker runs, from nvidia-smi."""

    def __init__(self, interval: float = 0.5) -> None:
        self.interval = interval
        self.peak_mib: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> int | None:
        try:
            out = subprocess.run(
                ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                capture_output=True,
                text=True,
                timeout=10,
            ).stdout
        except (OSError, subprocess.TimeoutExpired):
            return None
        values = [int(v) for v in out.split() if v.strip().isdigit()]
        return sum(values) if values else None

    def _run(self) -> None:
        while not self._stop.is_set():
            used = self._sample()
            if used is not None:
                self.peak_mib = max(self.peak_mib or 0, used)
            self._stop.wait(self.interval)

    def __enter__(self) -> "GpuMemorySampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


# ---------------------------------------------------------------------------
# one backend (worker process)
# ---------------------------------------------------------------------------
def bf16_matmul_tflops(n: int = 8192, repeats: int = 10) -> float | None:
    """The GPU's measured bf16 matrix rate (TFLOP/s): the mean of ``repeats`` n x n x n products after
    three warm-ups, on random data (the ceiling the model's work is compared with)."""
    import torch

    if not torch.cuda.is_available():
        return None
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(repeats):
        a @ b
    torch.cuda.synchronize()
    seconds = (time.perf_counter() - t0) / repeats
    del a, b
    torch.cuda.empty_cache()
    return round(2 * n**3 / seconds / 1e12, 1)


def flops_per_question(backend: Any, queries: list[Any], output_tokens: float) -> dict[str, Any]:
    """FLOPs one question costs, from the loaded model's parameter counts and these questions' encodings:
    2 x (language-model parameters) per prompt and generated token, 2 x L x T^2 x hidden for causal
    attention over the T prompt tokens, and 2 x (vision-tower parameters) per image patch (the vision
    tower's own attention, windowed in Qwen2.5-VL, is left out: a lower bound)."""
    model = backend._model
    config = model.config
    text = getattr(config, "text_config", config)
    vision_params = sum(p.numel() for n, p in model.named_parameters() if "visual" in n or "vision" in n)
    text_params = sum(p.numel() for n, p in model.named_parameters() if not ("visual" in n or "vision" in n))
    embed = model.get_input_embeddings().weight.numel()  # a lookup, not a product
    text_params -= embed
    image_id = getattr(config, "image_token_id", None)
    prompt = images = patches = 0
    for q in queries:
        enc = backend._encode([q])
        ids = enc["input_ids"][0]
        prompt += int(ids.numel())
        images += int((ids == image_id).sum()) if image_id is not None else 0
        pv = enc.get("pixel_values")
        if pv is not None:  # Qwen2-VL family: (patches, channels x temporal x patch x patch)
            patches += int(pv.shape[0]) if pv.dim() == 2 else int(pv.shape[0] * (pv.shape[-1] // 14) * (pv.shape[-2] // 14))
    k = max(1, len(queries))
    t, out = prompt / k, output_tokens
    layers, hidden = int(text.num_hidden_layers), int(text.hidden_size)
    flops = 2 * text_params * (t + out) + 2 * layers * t * t * hidden + 2 * vision_params * patches / k
    return {
        "flops_per_question": float(flops),
        "prompt_tokens": round(t, 1),
        "image_tokens": round(images / k, 1),
        "image_patches": round(patches / k, 1),
        "text_params": int(text_params),
        "vision_params": int(vision_params),
    }


def _answer_all(backend: Any, queries: list[Any], engine_like: bool = True) -> tuple[dict[str, str], int, int, float]:
    """Answers, input and output tokens and seconds for ``queries``, sent as the engine sends them
    (ordered by ``order_key`` when the backend groups by length; batches of ``batch_size``, the next
    one named through ``prefetch``)."""
    batch = backend.cfg.batch_size
    ordered = list(queries)
    if engine_like and getattr(backend, "group_by_length", False) and hasattr(backend, "order_key"):
        ordered.sort(key=backend.order_key)
    answers: dict[str, str] = {}
    in_tok = out_tok = 0
    t0 = time.perf_counter()
    for start in range(0, len(ordered), batch):
        chunk = ordered[start : start + batch]
        if hasattr(backend, "prefetch") and start + batch < len(ordered):
            backend.prefetch(ordered[start + batch : start + 2 * batch])
        for q, c in zip(chunk, backend.complete_batch(chunk)):
            answers[q.id] = c.text
            in_tok += c.input_tokens or 0
            out_tok += c.output_tokens or 0
    return answers, in_tok, out_tok, time.perf_counter() - t0


#: The transformers backend's switches (``TransformersBackend`` class attributes), turned on one by one.
VARIANTS: tuple[tuple[str, dict[str, bool]], ...] = (
    ("none", {"prefetch_enabled": False, "group_by_length": False, "fast_processor": False}),
    ("+prefetch", {"prefetch_enabled": True, "group_by_length": False, "fast_processor": False}),
    ("+group by length", {"prefetch_enabled": True, "group_by_length": True, "fast_processor": False}),
    ("+fast processor", {"prefetch_enabled": True, "group_by_length": True, "fast_processor": True}),
    ("none, again", {"prefetch_enabled": False, "group_by_length": False, "fast_processor": False}),  # order effects
)


def time_split(stats: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    """Seconds of each part of the transformers backend's time since ``before`` (its stats then), to four
    decimals (a tiny model's image decode on ten questions takes under 5 ms: two decimals showed 0.0)."""
    from sabre_prior.inference.models.transformers_backend import TIMING_KEYS

    return {k: round(stats[k] - before[k], 4) for k in TIMING_KEYS}


def run_backend(
    backend_name: str, settings: dict[str, Any], parquet: Path, max_questions: int | None, options: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Answer every question with one backend; timings, tokens and answers; for transformers also
    where the time goes, the ratio to the GPU's bf16 rate, batch 1 against batch N, and each switch's effect."""
    import dataclasses

    from sabre_prior.inference.models.base import create_backend
    from sabre_prior.inference.predict import build_queries
    from sabre_prior.inference.prompts import DEFAULT_TEMPLATE

    options = options or {}
    queries = [q for split in SPLITS for q in build_queries(parquet / f"{split}.parquet", split, DEFAULT_TEMPLATE)]
    if max_questions:
        queries = queries[:max_questions]
    hf = backend_name == "transformers"
    tflops = bf16_matmul_tflops() if hf else None
    result: dict[str, Any] = {"backend": backend_name, "questions": len(queries), "bf16_matmul_tflops": tflops}
    if hf and options.get("variants"):
        # each switch's effect, on a fresh backend per variant (its own load, its own processor choice)
        n, tokens = options.get("variant_questions") or len(queries), options.get("variant_tokens") or 4
        rows = []
        for label, switches in VARIANTS:
            b = create_backend(backend_name, {**settings, "max_output_tokens": tokens})
            for key, value in switches.items():
                setattr(b, key, value)
            b.check_ready()
            b.complete_batch(queries[:1])
            before = dict(b.stats)
            _, _, _, seconds = _answer_all(b, queries[:n])
            split = time_split(b.stats, before)
            rows.append({"variant": label, "questions": n, "max_new_tokens": tokens, "seconds": round(seconds, 2),
                         "questions_per_s": round(n / seconds, 2), **split,
                         "image_processor": (b.image_processor_check or {}).get("used")})  # fmt: skip
            print(f"variant {label}: {rows[-1]}", flush=True)
            b.close()
        result["variants"] = rows
        result["image_processor_check"] = b.image_processor_check
    backend = create_backend(backend_name, settings)
    if hf:
        backend.time_split = True
    backend.check_ready()
    t0 = time.perf_counter()
    backend.complete_batch(queries[:1])  # loads the model (and compiles, for vLLM)
    load_s = time.perf_counter() - t0
    before = dict(backend.stats)
    answers, in_tok, out_tok, gen_s = _answer_all(backend, queries)
    torch_peak = None
    try:
        import torch

        if torch.cuda.is_available():
            torch_peak = round(torch.cuda.max_memory_allocated() / 2**20)
    except ModuleNotFoundError:
        pass
    result.update({
        "load_s": round(load_s, 2),
        "generate_s": round(gen_s, 2),
        "questions_per_s": round(len(queries) / gen_s, 2),
        "input_tokens": in_tok,
        "output_tokens": out_tok,
        "output_tokens_per_s": round(out_tok / gen_s, 1),
        "torch_peak_mib": torch_peak,
        "answers": answers,
        "rows": {q.id: {"eval_type": q.row.get("eval_type"), "options": q.row.get("options")} for q in queries},
    })  # fmt: skip
    if hf:
        result["time_split_s"] = time_split(backend.stats, before)
        result["image_processor_check"] = backend.image_processor_check
        cost = flops_per_question(backend, queries[:8], out_tok / max(1, len(queries)))
        result["flops"] = cost
        if tflops:
            achieved = cost["flops_per_question"] * len(queries) / gen_s / 1e12
            result["flops"].update(achieved_tflops=round(achieved, 1), ratio_to_bf16_rate=round(achieved / tflops, 3))
        k = options.get("batch1_questions") or 0
        if k and backend.cfg.batch_size > 1:
            backend.cfg = dataclasses.replace(backend.cfg, batch_size=1)
            subset = queries[:k]
            one, _, _, one_s = _answer_all(backend, subset, engine_like=False)
            result["batch1"] = {"questions": len(subset), "seconds": round(one_s, 2), "answers": one}
    backend.close()
    return result


def agreement(a: dict[str, Any], b: dict[str, Any]) -> dict[str, float]:
    """Share of questions with identical answers, raw and after the contract's extraction."""
    from sabre_prior.scoring.contract import score

    ids = sorted(set(a["answers"]) & set(b["answers"]))
    if not ids:
        return {"questions": 0, "identical_text": float("nan"), "same_extracted_answer": float("nan")}
    same_text = sum(a["answers"][i].strip() == b["answers"][i].strip() for i in ids)
    same_answer = 0
    for i in ids:
        row = a["rows"][i]
        # score each against the other: equal extracted values means the same answer
        ref = a["answers"][i] if a["answers"][i].strip() else "<empty>"
        try:
            same_answer += score(b["answers"][i], ref, row["eval_type"], row["options"]).correct
        except Exception:  # an answer the contract cannot use as a reference
            same_answer += a["answers"][i].strip() == b["answers"][i].strip()
    return {
        "questions": len(ids),
        "identical_text": round(same_text / len(ids), 4),
        "same_extracted_answer": round(same_answer / len(ids), 4),
    }


# ---------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------
def backend_settings(args: argparse.Namespace, backend: str, model_dir: str, dummy: bool) -> dict[str, Any]:
    common: dict[str, Any] = {
        "backend": backend,
        "model_id": model_dir,
        "dtype": args.dtype,
        "max_output_tokens": args.max_new_tokens,
    }
    if dummy:
        common["load_format"] = "dummy"
    if backend == "vllm":
        common.update(
            batch_size=args.vllm_batch_size,
            max_model_len=args.max_model_len,
            gpu_memory_utilization=args.gpu_memory_utilization,
            tensor_parallel_size=args.tensor_parallel_size,
        )
        if args.max_pixels:
            common["processor_kwargs"] = {"max_pixels": args.max_pixels}
    else:
        common.update(batch_size=args.hf_batch_size, device=args.device)
        if args.max_pixels:
            common["processor_kwargs"] = {"max_pixels": args.max_pixels}
    return common


def batch1_agreement(r: dict[str, Any]) -> dict[str, Any] | None:
    """Batch size 1 against the configured batch size on the re-asked questions (:func:`agreement`)."""
    one = r.get("batch1")
    if not one:
        return None
    ids = set(one["answers"])
    main = {"answers": {i: a for i, a in r["answers"].items() if i in ids}, "rows": r["rows"]}
    return agreement(main, {"answers": one["answers"], "rows": r["rows"]})


def describe_backend(name: str, r: dict[str, Any]) -> None:
    """Where one backend's time went, its ratio to the GPU's bf16 rate, batch 1 vs N, the switches' effect."""
    split = r.get("time_split_s")
    if split:
        total = r["generate_s"]
        parts = [("image decode", split["image_decode_s"]), ("processor", split["processor_s"]),
                 ("model: vision tower + prefill", split["prefill_s"]), ("model: decode", split["decode_s"])]  # fmt: skip
        print(f"{name}: time of {total} s answering: " + ", ".join(f"{k} {v} s" for k, v in parts)
              + f" (CPU work overlapped by prefetch; waited for it {split['encode_wait_s']} s)")  # fmt: skip
    flops = r.get("flops")
    if flops:
        print(f"{name}: {flops['flops_per_question']:.3g} FLOP per question ({flops['prompt_tokens']} prompt tokens of which "
              f"{flops['image_tokens']} image tokens, {flops['image_patches']} image patches; {flops['text_params'] / 1e9:.2f}e9 "
              f"language-model and {flops['vision_params'] / 1e9:.2f}e9 vision parameters)")  # fmt: skip
        if "ratio_to_bf16_rate" in flops:
            print(f"{name}: {flops['achieved_tflops']} TFLOP/s achieved against {r['bf16_matmul_tflops']} TFLOP/s measured "
                  f"bf16 matmul rate: {100 * flops['ratio_to_bf16_rate']:.1f}% of the physical limit")  # fmt: skip
    if r.get("image_processor_check"):
        print(f"{name}: image processor: {r['image_processor_check']}")
    agree = batch1_agreement(r)
    if agree:
        r["batch1_vs_batchN"] = agree
        print(f"{name}: batch size 1 vs the configured batch size on {agree['questions']} questions: "
              f"identical text {100 * agree['identical_text']:.1f}%, same extracted answer {100 * agree['same_extracted_answer']:.1f}%")  # fmt: skip
    for v in r.get("variants") or []:
        print(f"{name} switches {v['variant']:<18} {v['questions']} questions at {v['max_new_tokens']} tokens: "
              f"{v['questions_per_s']} q/s ({v['seconds']} s; decode+processor {round(v['image_decode_s'] + v['processor_s'], 2)} s, "
              f"waited {v['encode_wait_s']} s; {v['image_processor']})")  # fmt: skip


def _worker_main(args: argparse.Namespace) -> int:
    if args.worker == "make-random":
        make_random_checkpoint(args.model, Path(args.worker_out))
        return 0
    if args.worker == "make-arch":
        make_random_arch(args.random_arch, Path(args.worker_out))
        return 0
    settings = json.loads(args.worker_settings)
    options = {"variants": args.variants, "variant_questions": args.variant_questions,
               "variant_tokens": args.variant_tokens, "batch1_questions": args.batch1_questions}  # fmt: skip
    result = run_backend(args.worker, settings, Path(args.worker_data), args.max_questions, options)
    Path(args.worker_out).write_text(json.dumps(result))
    return 0


def _spawn(args: argparse.Namespace, extra: list[str], log: Path) -> tuple[int, int | None]:
    cmd = [sys.executable, str(Path(__file__).resolve()), *extra]
    if args.max_questions:
        cmd += ["--max-questions", str(args.max_questions)]
    if args.variants:
        cmd += ["--variants", "--variant-questions", str(args.variant_questions or 0), "--variant-tokens", str(args.variant_tokens)]
    cmd += ["--batch1-questions", str(args.batch1_questions)]
    with GpuMemorySampler() as sampler, open(log, "w") as fh:
        rc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT).returncode
    return rc, sampler.peak_mib


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="Qwen/Qwen2.5-VL-7B-Instruct", help="hub id (local cache) or directory")
    p.add_argument("--tiny", action="store_true", help="the tests' tiny random VLM (smoke test)")
    p.add_argument("--random-weights", action="store_true", help="random weights from --model's config and processor")
    p.add_argument("--random-arch", default=None, help="random weights of an architecture, no files: qwen2_5_vl_7b (or a tiny family of tests/fixtures/tiny_families.py)")
    p.add_argument("--dummy", action="store_true", help="load_format: dummy in each backend (no shared weights; no agreement)")
    p.add_argument("--backends", default="vllm,transformers")
    p.add_argument("--scale", choices=["small", "full"], default="full")
    p.add_argument("--max-questions", type=int, default=None)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--device", default="auto", help="transformers backend device")
    p.add_argument("--vllm-batch-size", type=int, default=1000)
    p.add_argument("--hf-batch-size", type=int, default=16)
    p.add_argument("--max-model-len", type=int, default=8192)
    p.add_argument("--gpu-memory-utilization", type=float, default=0.85)
    p.add_argument("--tensor-parallel-size", type=int, default=1)
    p.add_argument("--max-pixels", type=int, default=None, help="processor max_pixels (Qwen2-VL family)")
    p.add_argument("--variants", action="store_true",
                   help="transformers: time the prefetch, length-grouping and fast-processor switches one by one first")
    p.add_argument("--variant-questions", type=int, default=None, help="questions per variant (default: all)")
    p.add_argument("--variant-tokens", type=int, default=4, help="new tokens per answer in the variants (default 4)")
    p.add_argument("--batch1-questions", type=int, default=32,
                   help="transformers: questions asked again at batch size 1 to compare with batch N (0: none)")
    p.add_argument("--workdir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "sabre-gpu-check")
    p.add_argument("--output", type=Path, default=None, help="results JSON (default: WORKDIR/gpu_check.json)")
    # internal: one backend in a worker process
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--worker-settings", help=argparse.SUPPRESS)
    p.add_argument("--worker-data", help=argparse.SUPPRESS)
    p.add_argument("--worker-out", help=argparse.SUPPRESS)
    return p.parse_args(argv)


#: import name of each distribution a backend needs (registry.BackendSpec.packages), where they differ
_MODULE_OF = {"google-genai": "google.genai"}


def missing_requirements(args: argparse.Namespace) -> list[str]:
    """What this run needs and this environment lacks, found before the demo is built (minutes):
    each backend's packages (``sabre_prior.registry``), torch and transformers for random weights,
    and a CUDA GPU for vLLM."""
    from sabre_prior import registry

    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    problems = [f"unknown backend {b!r} (local backends: {', '.join(registry.names('local'))})"
                for b in backends if registry.kind_of(b) != "local"]  # fmt: skip
    needed: dict[str, list[str]] = {}
    for b in backends:
        for package in registry.SPECS[b].packages if b in registry.SPECS else ():
            needed.setdefault(package, []).append(f"the {b} backend")
    if args.random_weights or args.random_arch:
        for package in ("torch", "transformers"):
            needed.setdefault(package, []).append("--random-weights/--random-arch")
    for package, users in needed.items():
        module = _MODULE_OF.get(package, package)
        if importlib.util.find_spec(module.split(".")[0]) is None or importlib.util.find_spec(module) is None:
            problems.append(f"{package} is not installed (needed by {', '.join(users)})")
    if "vllm" in backends and importlib.util.find_spec("torch") is not None and importlib.util.find_spec("vllm") is not None:
        import torch

        if not torch.cuda.is_available():
            problems.append("the vllm backend needs a CUDA GPU, and torch sees none (torch.cuda.is_available() is False)")
    return problems


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        return _worker_main(args)
    problems = missing_requirements(args)
    if problems:
        print("gpu_check cannot run here:\n" + "".join(f"  - {p}\n" for p in problems)
              + "Install the pinned GPU environment (bash scripts/install.sh --gpu) on a machine with an NVIDIA GPU, "
              "or choose the backends that are installed with --backends.", file=sys.stderr)  # fmt: skip
        return 2
    workdir: Path = args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    parquet = prepare_data(workdir, args.scale)
    if args.tiny:
        model_dir = str(build_tiny(workdir))
    elif args.random_arch:
        model_dir = str(workdir / f"random-{args.random_arch}")
        if not (Path(model_dir) / "config.json").exists():
            extra = ["--worker", "make-arch", "--random-arch", args.random_arch, "--worker-out", model_dir]
            rc, _ = _spawn(args, extra, workdir / "make-arch.log")
            if rc != 0:
                print((workdir / "make-arch.log").read_text()[-3000:], file=sys.stderr)
                return rc
    elif args.random_weights:
        model_dir = str(workdir / "random-weights")
        if not (Path(model_dir) / "config.json").exists():
            rc, _ = _spawn(args, ["--worker", "make-random", "--model", args.model, "--worker-out", model_dir], workdir / "make-random.log")
            if rc != 0:
                print((workdir / "make-random.log").read_text()[-3000:], file=sys.stderr)
                return rc
    else:
        model_dir = args.model
    results: dict[str, dict[str, Any]] = {}
    for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
        out = workdir / f"{backend}.json"
        settings = backend_settings(args, backend, model_dir, args.dummy)
        extra = ["--worker", backend, "--worker-settings", json.dumps(settings), "--worker-data", str(parquet), "--worker-out", str(out)]
        log = workdir / f"{backend}.log"
        print(f"running {backend} on {model_dir} ... (log: {log})", flush=True)
        rc, peak = _spawn(args, extra, log)
        if rc != 0:
            print(f"{backend} failed (exit {rc}); last lines of {log}:\n{log.read_text()[-3000:]}", file=sys.stderr)
            continue
        results[backend] = json.loads(out.read_text())
        results[backend]["gpu_peak_mib"] = peak

    print(f"\nmodel: {model_dir}  questions: {next(iter(results.values()))['questions'] if results else 0}")
    print(f"{'backend':<13}{'load s':>8}{'gen s':>9}{'q/s':>9}{'out tok/s':>11}{'GPU peak MiB':>14}{'torch peak MiB':>16}")
    for name, r in results.items():
        print(
            f"{name:<13}{r['load_s']:>8}{r['generate_s']:>9}{r['questions_per_s']:>9}{r['output_tokens_per_s']:>11}"
            f"{str(r['gpu_peak_mib']):>14}{str(r['torch_peak_mib']):>16}"
        )
    for name, r in results.items():
        describe_backend(name, r)
    from sabre_prior.inference.models.local_common import decoding_for

    decoding = decoding_for("gpu_check", backend_settings(args, "transformers", model_dir, False))
    print(f"decoding (both backends): {decoding}")
    summary: dict[str, Any] = {
        "model": model_dir,
        "decoding": decoding,
        "random_weights": bool(args.random_weights or args.random_arch or args.tiny or args.dummy),
        "backends": {k: {kk: vv for kk, vv in v.items() if kk not in ("answers", "rows", "batch1")} for k, v in results.items()},
    }
    if len(results) == 2 and not args.dummy:
        a, b = results.values()
        summary["agreement"] = agreement(a, b)
        print(f"agreement: {summary['agreement']}")
    if "transformers" in results:
        ok_hf = results["transformers"]["questions_per_s"] >= TARGET_HF_QPS
        summary["transformers_target_met"] = ok_hf
        print(f"transformers target (>= {TARGET_HF_QPS:.0f} questions/s): {'met' if ok_hf else 'NOT met'}")
    if "agreement" in summary:
        ok_agree = summary["agreement"]["same_extracted_answer"] >= TARGET_AGREEMENT
        summary["agreement_target_met"] = ok_agree
        print(f"agreement target (>= {TARGET_AGREEMENT:.0%} of answers): {'met' if ok_agree else 'NOT met'}")
    if "vllm" in results:
        ok = results["vllm"]["questions_per_s"] >= TARGET_QPS
        summary["vllm_target_met"] = ok
        print(f"vLLM target (>= {TARGET_QPS:.0f} questions/s for a 7B VLM on one H100/H200): {'met' if ok else 'NOT met'}")
    output = args.output or workdir / "gpu_check.json"
    output.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    print(f"results: {output}")
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main())
