"""The six paper presets (configs/paper.yaml) in a real Snakemake run against the fake provider servers.

Each preset keeps its documented decoding; only its ``base_url`` (and key
variable) point at 127.0.0.1, so the official SDKs speak each provider's wire
protocol.  The server answers with each provider's documented non-answers:
the first question of every split is refused in that provider's way (OpenAI
``message.refusal``, xAI ``content_filter`` with partial text, Anthropic
``stop_reason: refusal``, a Gemini blocked prompt, a DashScope
``data_inspection_failed`` 400 and a Moonshot ``content_filter`` 400, both
first in the queue), the second is rate limited once with only the protocol's
own reset signal, Grok's third spends its budget once, and Grok reports its
reasoning tokens apart.  Checked: no refusal text in a prediction, every other
question answered, refusals in usage, metrics and the table footnote, waits as
the headers said (server clock), usage equal to what the server billed, and no
refused question sent again by a re-run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.project import ROOT, copy_project, snakemake
from tests.servers import FakeServer
from tests.servers.dataset import write_mirror
from tests.servers.fixtures import expected_answers
from tests.servers.protocols import PARTIAL

pytestmark = pytest.mark.slow

KEY_ENV = "SABRE_PRESET_TEST_KEY"
KEY = "sk-preset-test-9a8b7c"
SPLITS = ("attribute", "language")
N = 6
WAIT = 0.5
#: model name -> (wire protocol, documented refusal served for the first question, variant)
REFUSALS = {
    "claude-4.6": ("anthropic", "refusal", ""),
    "kimi-k2.6": ("openai", "moderation", "moonshot"),
    "qwen-3.5": ("openai", "moderation", ""),
    "gemini-3.5": ("gemini", "blocked", ""),
    "gpt-5.4": ("openai", "refusal", "refusal_field"),
    "grok-4.3": ("openai", "refusal", ""),
}
RATE_LIMITED = ("gpt-5.4", "claude-4.6", "gemini-3.5")  # x-ratelimit-reset-*, anthropic-ratelimit-*, RetryInfo


@pytest.fixture(scope="module")
def presets(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> dict[str, Any]:
    mp = pytest.MonkeyPatch()
    request.addfinalizer(mp.undo)
    mp.setenv(KEY_ENV, KEY)
    root = tmp_path_factory.mktemp("presets")
    project = copy_project(root / "project")
    data = write_mirror(project, {s: N for s in SPLITS})  # the pipeline's fetch reads these questions
    server = FakeServer(latency=0.01, expected_key=KEY, keep_bodies=True).start()
    request.addfinalizer(server.stop)
    paper = yaml.safe_load((ROOT / "configs" / "paper.yaml").read_text())["models"]
    ids = {name: m["model_id"] for name, m in paper.items()}
    expected = {s: expected_answers(p, s) for s, p in data.items()}
    for name, (protocol, kind, variant) in REFUSALS.items():
        paper[name].update(
            base_url=server.url(protocol), api_key_env=KEY_ENV, concurrency=2, timeout_s=5, backoff_base_s=0.05
        )
        for split in SPLITS:
            qids = list(expected[split])
            server.add_fault(kind, first_attempts=100, keys={expected[split][qids[0]][0]}, models={ids[name]}, variant=variant)
            if name in RATE_LIMITED:
                server.add_fault("429_reset", keys={expected[split][qids[1]][0]}, models={ids[name]}, retry_after=WAIT)
    for split in SPLITS:
        qid = list(expected[split])[2]
        server.add_fault("empty_length", keys={expected[split][qid][0]}, models={ids["grok-4.3"]})
    server.reasoning_by_model[ids["grok-4.3"]] = (180, True)  # xAI: reasoning_tokens apart from completion_tokens
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["splits"] = list(SPLITS)
    params["models"] = paper
    params["analysis"]["bootstrap_resamples"] = 100
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    targets = [*(f"results/metrics/{m}.json" for m in paper), "results/tables/main_results.md"]
    first = snakemake([*targets, "--cores", "4", "--resources", "api_jobs=3"], project, check=False, timeout=900)
    calls_after_first = len(server.calls)
    # the re-run: every predict job of one split again (refused questions included), from the journal
    again = [f"results/predictions/{m}/{SPLITS[0]}.jsonl" for m in paper]
    rerun = snakemake([*again, "--cores", "4", "--forcerun", "predict"], project, check=False, timeout=900)
    return {
        "project": project,
        "server": server,
        "ids": ids,
        "expected": expected,
        "first": first,
        "calls_after_first": calls_after_first,
        "rerun": rerun,
        "paper": paper,
    }


def _ok(proc: Any) -> None:
    assert proc.returncode == 0, f"--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-6000:]}"


def test_the_run_succeeds_and_only_answers_become_predictions(presets: dict[str, Any]) -> None:
    _ok(presets["first"])
    project = presets["project"]
    for name in REFUSALS:
        for split in SPLITS:
            qids = list(presets["expected"][split])
            path = project / "results" / "predictions" / name / f"{split}.jsonl"
            text = path.read_text()
            assert PARTIAL not in text and "I'm sorry" not in text, f"{name}/{split}: refusal text in a prediction"
            preds = [json.loads(line) for line in text.splitlines()]
            assert [p["id"] for p in preds] == qids[1:], f"{name}/{split}: every other question answered"
            answers = {qid: ans for qid, (_, ans) in presets["expected"][split].items()}
            empty_ok = {qids[2]} if name == "grok-4.3" else set()
            assert all(p["prediction"] == answers[p["id"]] for p in preds if p["id"] not in empty_ok)


def test_refusals_are_reported_in_usage_metrics_and_table(presets: dict[str, Any]) -> None:
    _ok(presets["first"])
    project = presets["project"]
    for name in REFUSALS:
        metrics = json.loads((project / "results" / "metrics" / f"{name}.json").read_text())
        for split in SPLITS:
            first = list(presets["expected"][split])[0]
            usage = json.loads((project / "results" / "usage" / name / f"{split}.json").read_text())
            assert list(usage["refused_ids"]) == [first] and usage["failed"] == 0
            assert metrics[split]["refused"] == 1 and metrics[split]["missing"] == 1
    table = (project / "results" / "tables" / "main_results.md").read_text()
    note = table.split("refused by the provider")[1]
    for name in REFUSALS:
        assert f"{presets['paper'][name]['display_name']} 2 (attribute 1, language 1)" in note


def test_usage_sums_every_billed_attempt(presets: dict[str, Any]) -> None:
    _ok(presets["first"])
    project, server, ids = presets["project"], presets["server"], presets["ids"]
    calls = server.calls[: presets["calls_after_first"]]
    for name in REFUSALS:
        for split in SPLITS:
            keys = {k for k, _ in presets["expected"][split].values()}
            mine = [c for c in calls if c.model == ids[name] and c.key in keys]
            usage = json.loads((project / "results" / "usage" / name / f"{split}.json").read_text())
            billed = (sum(c.input_tokens for c in mine), sum(c.output_tokens for c in mine))
            assert (usage["billed_input_tokens"], usage["billed_output_tokens"]) == billed, f"{name}/{split}"
    grok = json.loads((project / "results" / "usage" / "grok-4.3" / "attribute.json").read_text())
    assert grok["output_tokens"] >= (N - 1) * 181  # reasoning tokens reported apart are counted as output
    assert grok["empty_budget_spent"] == 0 and grok["retries"] == 1  # the empty answer was retried once


def test_waits_follow_the_providers_reset_signals(presets: dict[str, Any]) -> None:
    _ok(presets["first"])
    server, ids = presets["server"], presets["ids"]
    for name in RATE_LIMITED:
        for split in SPLITS:
            key = list(presets["expected"][split].values())[1][0]
            first, second = [c for c in server.calls if c.model == ids[name] and c.key == key][:2]
            assert first.status == 429 and second.ok
            assert second.start - first.end >= WAIT - 0.1, f"{name}: retried {second.start - first.end:.3f} s after"


def test_each_preset_sends_its_documented_decoding(presets: dict[str, Any]) -> None:
    _ok(presets["first"])
    bodies = {c.model: c.body for c in presets["server"].calls if c.body is not None and c.ok}
    ids = presets["ids"]
    kimi, qwen, gpt, grok = (bodies[ids[m]] for m in ("kimi-k2.6", "qwen-3.5", "gpt-5.4", "grok-4.3"))
    assert kimi["thinking"] == {"type": "disabled"} and "temperature" not in kimi and kimi["max_completion_tokens"] == 64
    assert qwen["enable_thinking"] is False and qwen["max_tokens"] == 64 and qwen["temperature"] == 0
    assert gpt["reasoning_effort"] == "none" and gpt["temperature"] == 0
    assert grok["reasoning_effort"] == "none" and grok["max_completion_tokens"] == 64
    claude = bodies[ids["claude-4.6"]]
    assert claude["thinking"] == {"type": "disabled"} and claude["max_tokens"] == 64 and claude["temperature"] == 0
    gemini = bodies[ids["gemini-3.5"]]["generationConfig"]
    thinking = gemini["thinkingConfig"]  # google-genai 3.6 sends the field as thinking_level (proto JSON accepts both)
    assert thinking.get("thinkingLevel", thinking.get("thinking_level")) == "MINIMAL"
    assert gemini["maxOutputTokens"] == 64 and gemini["temperature"] == 1.0


def test_a_rerun_sends_nothing_again(presets: dict[str, Any]) -> None:
    _ok(presets["first"])
    _ok(presets["rerun"])
    assert len(presets["server"].calls) == presets["calls_after_first"], "a re-run re-sent a refused or answered question"


def test_quota_errors_stop_each_preset_within_concurrency_plus_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Out of quota / billing at every provider: each job stops at once with the provider's message."""
    monkeypatch.setenv(KEY_ENV, KEY)
    project = copy_project(tmp_path / "project")
    write_mirror(project, {"language": N})
    paper = yaml.safe_load((ROOT / "configs" / "paper.yaml").read_text())["models"]
    concurrency = 2
    with FakeServer(latency=0.05, expected_key=KEY) as server:
        server.add_fault("quota", first_attempts=100)
        for name, (protocol, _, _) in REFUSALS.items():
            paper[name].update(base_url=server.url(protocol), api_key_env=KEY_ENV, concurrency=concurrency, timeout_s=5)
        params = yaml.safe_load((project / "params.yaml").read_text())
        params["splits"], params["models"] = ["language"], paper
        (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        targets = [f"results/predictions/{m}/language.jsonl" for m in paper]
        proc = snakemake([*targets, "--cores", "4", "--keep-going"], project, check=False, timeout=600)
        assert proc.returncode != 0
        per_model = {m: sum(1 for c in server.calls if c.model == paper[m]["model_id"]) for m in paper}
    assert all(1 <= n <= concurrency + 1 for n in per_model.values()), per_model
    for name, (protocol, _, _) in REFUSALS.items():
        log = (project / "results" / "logs" / "predict" / name / "language.log").read_text()
        message = {"openai": "exceeded your current quota", "anthropic": "credit balance", "gemini": "permission"}[protocol]
        assert "account" in log and message in log, f"{name}: {log[-1500:]}"
        assert not (project / "results" / "predictions" / name / "language.jsonl").exists()
