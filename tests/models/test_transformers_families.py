"""Every open-VLM family the presets use (plus Qwen2-VL, SmolVLM2 and Mistral3) runs on the
documented install: a tiny random checkpoint of each (tests/fixtures/tiny_families.py: the
family's real config, model, image and video processor classes, its real chat template) is
answered by a real Snakemake job on CPU, one prediction per question in dataset order;
batch size 4 answers as batch size 1 does, and the image reaches the model."""

from __future__ import annotations

import importlib.util
import io
import json
from pathlib import Path

import pytest

# find_spec, not importorskip: collecting this module (in every xdist worker) does not import torch
if importlib.util.find_spec("torch") is None or importlib.util.find_spec("transformers") is None:
    pytest.skip("the local-model stack (pip install -e '.[local]') is not installed", allow_module_level=True)

from PIL import Image  # noqa: E402

from sabre_prior.inference.models.base import Query, create_backend  # noqa: E402

pytestmark = pytest.mark.torch  # imported in the test process: these tests share one xdist worker

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SPLIT = "attribute"  # the smallest demo split: one question per image
NEW_TOKENS = 3


def _fixture(name: str):
    """A module of tests/fixtures (loaded once per session)."""
    import sys

    if str(FIXTURES) not in sys.path:
        sys.path.insert(0, str(FIXTURES))
    return __import__(name)


FAMILIES = list(_fixture("tiny_families").FAMILIES)


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny random checkpoint of each family, built once per test run (tests/project.py's
    ``built_once``: shared by the xdist workers). Read-only."""
    tf = _fixture("tiny_families")
    root = _fixture("project").built_once(
        tmp_path_factory, "families", lambda d: [tf.build(family, d / family) for family in FAMILIES]
    )
    return {family: root / family for family in FAMILIES}


def _settings(path: Path, batch_size: int) -> dict:
    return {"backend": "transformers", "model_id": str(path), "device": "cpu", "batch_size": batch_size,
            "max_output_tokens": NEW_TOKENS, "threads": 1, "mem_mb": 1000, "runtime": 10}  # fmt: skip


@pytest.fixture(scope="session")
def pipeline(checkpoints: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real `snakemake` run: every family's predictions for the split (batch size 4), once per
    test run (shared by the xdist workers). Read-only."""
    import yaml

    lmp = _fixture("local_model_project")

    def build(out: Path) -> None:
        root = lmp.make_project(out / "p", {f: _settings(p, batch_size=4) for f, p in checkpoints.items()}, only=True)
        params = yaml.safe_load((root / "params.yaml").read_text())
        params["splits"] = [SPLIT]
        (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        targets = [f"results/predictions/{f}/{SPLIT}.jsonl" for f in checkpoints]
        lmp.project_module().snakemake(["--cores", "2", *targets], root, timeout=900)

    return _fixture("project").built_once(tmp_path_factory, "families-project", build) / "p"


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_family_through_snakemake(family: str, checkpoints: dict[str, Path], pipeline: Path) -> None:
    from sabre_prior.inference.predict import build_queries
    from sabre_prior.inference.prompts import DEFAULT_TEMPLATE

    parquet = pipeline / "data" / "parquet" / f"{SPLIT}.parquet"
    queries = build_queries(parquet, SPLIT, DEFAULT_TEMPLATE)
    lines = [json.loads(x) for x in (pipeline / "results" / "predictions" / family / f"{SPLIT}.jsonl").read_text().splitlines()]
    # one prediction per question, in dataset order
    assert [x["id"] for x in lines] == [q.id for q in queries] and len(queries) >= 4
    usage = json.loads((pipeline / "results" / "usage" / family / f"{SPLIT}.json").read_text())
    assert usage["answered"] == usage["questions"] == len(queries) and usage["failed"] == 0
    # batch size 4 (the Snakemake job) answers exactly as batch size 1
    single = create_backend(family, _settings(checkpoints[family], batch_size=1))
    single.check_ready()
    answers = [single.complete_batch([q])[0].text for q in queries]
    assert [x["prediction"] for x in lines] == answers
    single.close()


def _jpeg(seed: int) -> bytes:
    """A noise image (a solid colour can vanish in a random model's normalisation layers)."""
    import random

    rng = random.Random(seed)
    buf = io.BytesIO()
    Image.frombytes("RGB", (70, 47), bytes(rng.randrange(256) for _ in range(70 * 47 * 3))).save(buf, "JPEG")
    return buf.getvalue()


@pytest.mark.parametrize("family", FAMILIES)
def test_the_image_reaches_the_model(family: str, checkpoints: dict[str, Path]) -> None:
    """The same prompt with two different images gives different next-token logits."""
    import torch

    backend = create_backend(family, _settings(checkpoints[family], batch_size=2))
    backend.check_ready()
    backend._load()
    text = "Question: How many legs does the chair have?"
    queries = [Query(id=f"i{n}", split="attribute", text=text, image=_jpeg(n), image_mime="image/jpeg") for n in (1, 2)]
    inputs = backend._encode(queries).to("cpu")
    assert inputs["input_ids"][0].tolist() == inputs["input_ids"][1].tolist()  # same text, same image size
    with torch.inference_mode():
        logits = backend._model(**inputs).logits[:, -1].float()
    assert not torch.allclose(logits[0], logits[1], atol=1e-6)
    backend.close()


@pytest.mark.parametrize(("family", "package"), [("qwen2_vl", "torchvision"), ("smolvlm", "num2words")])
@pytest.mark.slow  # a fresh interpreter importing torch per family
def test_a_missing_processor_package_is_named_before_loading(family: str, package: str, checkpoints: dict[str, Path], tmp_path: Path) -> None:
    """In an environment without ``package`` (this one's site-packages less that package),
    the pre-flight stops with one line naming it, instead of a traceback from AutoProcessor."""
    import os
    import site
    import subprocess
    import sys

    site_packages = next(p for p in site.getsitepackages() if p.endswith("site-packages"))
    view = tmp_path / "site"
    view.mkdir()
    for entry in os.listdir(site_packages):
        if not entry.lower().startswith(package):
            (view / entry).symlink_to(Path(site_packages) / entry)
    src = Path(__file__).resolve().parents[2] / "src"
    code = (
        "from sabre_prior.inference.models.base import create_backend\n"
        f"b = create_backend('m', {{'backend': 'transformers', 'model_id': {str(checkpoints[family])!r}, 'device': 'cpu'}})\n"
        "b.check_ready()\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{view}{os.pathsep}{src}"}
    proc = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("sabre_prior.errors.BackendError: models.m: the processor of") and f"'{package}'" in last, proc.stderr[-2000:]
