"""predict_split, images, templates, usage files and the `sabre predict` / `sabre estimate` commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sabre_prior import cli
from sabre_prior.inference import prompts
from sabre_prior.errors import ConfigError
from sabre_prior.inference.predict import predict_split
from sabre_prior.inference.journal import read_journal
from sabre_prior.inference.prompts import ImagePolicy, prepare_image
from tests.servers import FakeServer
from tests.servers.dataset import jpeg, write_split
from tests.servers.fixtures import KEY_ENV, api_key, model_settings, read_predictions, server, split_file  # noqa: F401


def _predict(tmp: Path, settings: dict, data: Path, model: str = "m"):
    return predict_split(
        model, settings, "context", data, tmp / "pred.jsonl", progress=False,
        usage_output=tmp / "usage.json", run_log_output=tmp / "run.json", journal_dir=tmp / "journal",
    )


def test_offline_baseline_bypasses_the_journal(tmp_path: Path, split_file: Path) -> None:
    run = _predict(tmp_path, {"backend": "baseline", "strategy": "always_yes"}, split_file)
    assert run.answered == 16
    assert {p["prediction"] for p in read_predictions(tmp_path / "pred.jsonl")} == {"Yes."}
    assert not (tmp_path / "journal").exists()
    usage = json.loads((tmp_path / "usage.json").read_text())
    assert usage["journaled"] is False and usage["questions"] == 16 and usage["estimated_cost_usd"] is None


def test_images_sent_as_original_bytes_by_default(tmp_path: Path, server: FakeServer, split_file: Path) -> None:
    _predict(tmp_path, model_settings(server), split_file)
    usage = json.loads((tmp_path / "usage.json").read_text())
    assert usage["images"]["reencoded"] == 0
    first = usage["sent_images"][0]
    assert first["format"] == "image/jpeg" and (first["width"], first["height"]) == (64, 48)
    assert first["sha256"] == first["original_sha256"]


def test_size_limit_reencodes_deterministically(tmp_path: Path, server: FakeServer, split_file: Path) -> None:
    big = jpeg(3, (640, 480))
    policy = ImagePolicy(max_side=200)
    a, b = prepare_image(big, policy), prepare_image(big, policy)
    assert a.reencoded and a.data == b.data and (a.width, a.height) == (200, 150)
    small = jpeg(3, (64, 48))
    assert prepare_image(small, policy).data == small, "images within the limit keep their bytes"
    capped = prepare_image(big, ImagePolicy(max_bytes=4096))
    assert capped.reencoded and len(capped.data) <= 4096

    _predict(tmp_path, model_settings(server, image={"max_side": 32}), split_file)
    usage = json.loads((tmp_path / "usage.json").read_text())
    assert usage["images"]["reencoded"] == 16
    sent = usage["sent_images"][0]
    assert (sent["width"], sent["height"]) == (32, 24) and sent["sha256"] != sent["original_sha256"]
    journal = read_journal(tmp_path / "journal" / "m" / "context.jsonl")
    assert {r["image"]["sha256"] for r in journal.values()} == {s["sha256"] for s in usage["sent_images"]}


def test_bad_image_policy_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"models\.m\.image\.max_side"):
        ImagePolicy.from_settings({"image": {"max_side": "big"}}, "m")


def test_template_version_enters_the_key(
    tmp_path: Path, server: FakeServer, split_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = model_settings(server)
    _predict(tmp_path, settings, split_file)
    assert _predict(tmp_path, settings, split_file).calls == 0
    monkeypatch.setitem(prompts.TEMPLATE_VERSIONS, "screening_v1", "2")
    assert _predict(tmp_path, settings, split_file).calls == 16


def test_per_model_prompt_template(tmp_path: Path, server: FakeServer, split_file: Path, monkeypatch) -> None:
    monkeypatch.setitem(prompts.TEMPLATES, "terse_v1", lambda row, eval_type: f"{row['question']} (yes or no)")
    run = _predict(tmp_path, model_settings(server, prompt_template="terse_v1"), split_file)
    assert run.calls == 16
    assert all(c.key for c in server.calls)
    usage = json.loads((tmp_path / "usage.json").read_text())
    assert usage["template"] == "terse_v1"
    with pytest.raises(ConfigError, match="unknown prompt template 'nope'"):
        _predict(tmp_path, model_settings(server, prompt_template="nope"), split_file)


def test_usage_cost_from_prices(tmp_path: Path, server: FakeServer, split_file: Path) -> None:
    _predict(tmp_path, model_settings(server, prices={"input_per_mtok": 2.0, "output_per_mtok": 10.0}), split_file)
    usage = json.loads((tmp_path / "usage.json").read_text())
    ok = server.ok_calls()
    tin, tout = sum(c.input_tokens for c in ok), sum(c.output_tokens for c in ok)
    assert (usage["input_tokens"], usage["output_tokens"]) == (tin, tout)
    assert usage["estimated_cost_usd"] == pytest.approx(tin * 2e-6 + tout * 10e-6)


# -- the command line --------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path, server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project directory with params.yaml (one fake API model) and two Parquet splits."""
    for split, n in (("context", 8), ("attribute", 5)):
        write_split(tmp_path / "data" / "parquet" / f"{split}.parquet", split, n)
    params = {
        "dataset": {"source": "demo"},
        "splits": ["context", "attribute"],
        "models": {
            "fake": model_settings(server, prices={"input_per_mtok": 1.0, "output_per_mtok": 5.0}),
            "yes": {"backend": "baseline", "strategy": "always_yes"},
        },
    }
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_estimate_then_predict_then_estimate(project: Path, server: FakeServer, capsys) -> None:
    assert cli.main(["estimate"]) == 0
    out = capsys.readouterr().out
    assert server.calls == [], "an estimate makes no call"
    fake_context = next(line for line in out.splitlines() if line.startswith("fake") and "context" in line)
    cells = fake_context.split()
    assert cells[3:6] == ["8", "0", "8"]  # questions, journal, to call
    assert int(cells[6]) > 8 * 85  # image + prompt tokens
    total = next(line for line in out.splitlines() if line.startswith("total")).split()
    assert total[1:4] == ["26", "0", "13"]  # both models' questions; only the API model's calls

    assert cli.main(["predict", "--model", "fake", "--split", "context", "--no-progress"]) == 0
    assert "8 answered (0 from the journal, 8 calls, 0 retries), 0 refused" in capsys.readouterr().out
    assert (project / "results/usage/fake/context.json").is_file()
    assert (project / "results/logs/usage/fake/context.json").is_file()
    assert (project / ".sabre/journal/fake/context.jsonl").is_file()

    assert cli.main(["estimate", "--models", "fake", "--splits", "context", "attribute"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[1]: line.split() for line in out.splitlines() if line.startswith("fake")}
    assert rows["context"][3:6] == ["8", "8", "0"] and rows["context"][8] == "0.0000/0.0000"
    assert rows["attribute"][3:6] == ["5", "0", "5"]
    assert len(server.calls) == 8


def test_estimate_names_missing_keys(project: Path, capsys, monkeypatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    assert cli.main(["estimate", "--models", "fake"]) == 0
    assert f"keys not set yet: {KEY_ENV} (for fake)" in capsys.readouterr().out


def test_predict_missing_key_exit_code(project: Path, server: FakeServer, capsys, monkeypatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    assert cli.main(["predict", "--model", "fake", "--split", "context", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert KEY_ENV in err and "no call was made" in err
    assert server.calls == []


def test_predict_failures_exit_3_and_list_ids(project: Path, server: FakeServer, capsys) -> None:
    server.add_fault("500", first_attempts=100, fraction=0.4)
    assert cli.main(["predict", "--model", "fake", "--split", "context", "--no-progress"]) == 3
    err = capsys.readouterr().err
    failing = {c.key for c in server.calls if c.fault}
    assert failing and f"{len(failing)} of 8 questions failed" in err
    assert not (project / "results/predictions/fake/context.jsonl").exists()
    log = json.loads((project / "results/logs/usage/fake/context.json").read_text())
    assert set(log["failed"]) and all(qid in err for qid in log["failed"])


def test_paper_preset_has_the_six_models() -> None:
    from sabre_prior.config import load_params
    from sabre_prior.inference.models.base import ApiBackend, create_backend

    root = Path(__file__).resolve().parents[1]
    params = load_params(root / "configs" / "paper.yaml")
    names = {s["paper_name"] for s in params["models"].values()}
    assert names == {"Claude 4.6", "Kimi-k2.6", "Qwen 3.5", "Gemini 3.5", "GPT-5.4", "Grok-4.3"}
    for model, settings in params["models"].items():
        backend = create_backend(model, settings)  # every setting understood by its backend
        assert isinstance(backend, ApiBackend) and backend.max_output_tokens == 64
        assert settings["api_key_env"].endswith("_API_KEY") and "prices" in settings


def test_estimate_uses_each_providers_image_rule_and_shows_allowances(tmp_path: Path) -> None:
    """The paper presets on photo-sized images: provider image rules, reasoning and retry allowances."""

    from sabre_prior.inference.predict import estimate_split, format_estimates
    from sabre_prior.inference.models.anthropic_backend import AnthropicBackend
    from sabre_prior.inference.models.gemini_backend import GeminiBackend
    from sabre_prior.inference.models.openai_backend import OpenAIBackend
    from tests.servers.dataset import write_split

    data = tmp_path / "context.parquet"
    write_split(data, "context", 4, image_size=(1400, 939))
    paper = yaml.safe_load((Path(__file__).resolve().parents[1] / "configs" / "paper.yaml").read_text())["models"]
    est = {m: estimate_split(m, s, "context", data, journal_dir=tmp_path / "j") for m, s in paper.items()}
    per_image = {m: e.input_tokens / e.to_call for m, e in est.items()}
    # OpenAI tiles (1145x768 after scaling: 3x2 tiles of 512, + 85), Anthropic w*h/750 (at most ~1,600),
    # Qwen one token per 32x32 pixels: three different counts for the same image
    # (each rule lives on the backend class whose protocol reaches that provider)
    assert OpenAIBackend.image_tokens("openai", 1400, 939) == 85 + 170 * 6
    assert AnthropicBackend.image_tokens("anthropic", 1400, 939) == 1600  # 1400*939/750 = 1753: scaled down to ~1,600
    assert AnthropicBackend.image_tokens("anthropic", 1000, 1000) == round(1000 * 1000 / 750)
    assert OpenAIBackend.image_tokens("alibaba", 1400, 939) == 44 * 30 + 2
    assert GeminiBackend.image_tokens("gemini", 1400, 939) == 258 * 2 * 2
    assert GeminiBackend.image_tokens("google", 300, 300) == 258
    assert OpenAIBackend.image_tokens("xai", 1400, 939) == round(1400 * 939 / 750)  # no documented rule: generic
    assert per_image["qwen-3.5"] - per_image["gpt-5.4"] == (44 * 30 + 2) - 1105  # not OpenAI's rule for a compatible endpoint
    assert per_image["grok-4.3"] != per_image["gpt-5.4"]
    # Gemini 3 cannot switch thinking off: the whole budget is expected; the others switch it off
    assert est["gemini-3.5"].reasoning and est["gemini-3.5"].output_tokens_expected == 4 * 64
    assert not any(est[m].reasoning for m in ("claude-4.6", "kimi-k2.6", "qwen-3.5", "gpt-5.4", "grok-4.3"))
    e = est["gpt-5.4"]
    assert e.cost_allowance is not None and e.cost_max is not None
    assert e.cost_allowance == pytest.approx(2 * e.cost_max, rel=1e-3)  # one budget-spent retry per call
    text = format_estimates(list(est.values()))
    assert "with retries" in text and "gemini-3.5" in text.split("* reasoning")[1]


def _pil_size(data: bytes) -> tuple[int | None, int | None]:
    import io

    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as im:
            return im.width, im.height
    except Exception:
        return None, None


def test_the_header_size_is_pils_size(demo_parquet_dir: Path) -> None:
    """The stored size read from a JPEG frame header or PNG IHDR (no PIL on the first request's path)
    is what PIL reports, for the demo's images and for the encodings a real split may hold:
    baseline, progressive, with EXIF (rotation is not applied by either), with restart markers,
    grayscale, CMYK, PNG; anything else or malformed falls back to PIL and agrees with it."""
    import io

    from PIL import Image

    from sabre_prior.data.parquet import iter_rows

    def encode(img: Image.Image, fmt: str, **kw) -> bytes:
        buf = io.BytesIO()
        img.save(buf, fmt, **kw)
        return buf.getvalue()

    exif = Image.Exif()
    exif[0x0112] = 6  # orientation: rotate 90
    rgb = Image.new("RGB", (123, 45), "red")
    samples = [
        encode(rgb, "JPEG"), encode(rgb, "JPEG", progressive=True), encode(rgb, "JPEG", exif=exif.tobytes()),
        encode(rgb, "JPEG", restart_marker_blocks=1), encode(rgb.convert("L"), "JPEG"),
        encode(rgb.convert("CMYK"), "JPEG"), encode(rgb, "PNG"), encode(rgb.convert("RGBA"), "PNG"),
        encode(rgb, "GIF"), encode(rgb, "WEBP"), b"\xff\xd8\xff\xe0\x00", b"\xff\xd8garbage", b"not an image",
    ]  # fmt: skip
    samples += [row["image"] for split in ("context", "attribute") for row in iter_rows(demo_parquet_dir / f"{split}.parquet")]
    for data in samples:
        assert prompts._pixel_size(data) == _pil_size(data), data[:16]
    assert prompts._header_size(samples[0]) == (123, 45) and prompts._header_size(samples[6]) == (123, 45)
    assert prompts._header_size(samples[2]) == (123, 45)  # stored size, EXIF rotation not applied
    assert prompts._header_size(samples[8]) is None  # GIF: PIL's answer


def test_the_tls_context_is_built_once_and_is_httpx2s_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """JsonHttp verifies TLS with the context a default httpx2 client builds (httpx2/_config.py
    create_ssl_context -> httpcore2.default_ssl_context: the SDKs' CA store), ~21 ms to build: once per
    process, whatever the number of clients; a plain http URL (a local server) builds none."""
    import httpcore2

    from sabre_prior.inference.models import http

    made = []
    real = httpcore2.default_ssl_context

    def counting(**kw):
        made.append(kw)
        return real(**kw)

    monkeypatch.setattr(httpcore2, "default_ssl_context", counting)
    http._tls_context.cache_clear()
    try:
        clients = [http.JsonHttp("https://api.example.invalid/v1", {}, timeout_s=5, concurrency=64) for _ in range(3)]
        for client in clients:
            client.prepare()
        assert made == [{"_trust_env": True}] and all(c._tls is clients[0]._tls for c in clients)
        local = http.JsonHttp("http://127.0.0.1:1/v1", {}, timeout_s=5, concurrency=8)
        local.prepare()
        assert local._tls is None and len(made) == 1
    finally:
        http._tls_context.cache_clear()


def test_the_proxy_is_read_from_the_environment_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTPS_PROXY is used and NO_PROXY honoured, as the SDKs' trust_env does (read once per client)."""
    from sabre_prior.inference.models import http

    for name in ("https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("https_proxy", "http://proxy.example.invalid:3128")
    monkeypatch.setenv("no_proxy", "internal.example.invalid")
    assert http._proxy_for("https://api.openai.com/v1") == "http://proxy.example.invalid:3128"
    assert http._proxy_for("https://internal.example.invalid/v1") is None
    monkeypatch.delenv("https_proxy")
    assert http._proxy_for("https://api.openai.com/v1") is None
