"""SIGKILL a real Snakemake run midway, run the same command again.

The whole process group (Snakemake, its shell, `sabre predict`) is killed while
calls are in flight against the fake OpenAI server.  After `snakemake --unlock`
(Snakemake's own stale-lock step) the same command must finish with complete
predictions, no duplicate ids, and at most the calls that were in flight at the
kill repeated.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from tests.project import BIN, copy_project, env
from tests.servers import FakeServer
from tests.servers.dataset import write_split
from tests.servers.fixtures import expected_answers

KEY_ENV = "SABRE_KILL_TEST_KEY"
KEY = "sk-kill-test-4f1c2a"
N = 48
CONCURRENCY = 4
TARGET = "results/predictions/fake/context.jsonl"


def _journal_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _mirror(root: Path) -> Path:
    """A local copy of the dataset holding only a context split of N questions (a Parquet shard, as
    `push_to_hub` writes one) and the demo's card pointing at it."""
    from sabre_prior.data.demo import generate

    generate(root.parent / "demo", scale="small", seed=0)
    root.mkdir()
    card = (root.parent / "demo" / "README.md").read_text(encoding="utf-8")
    (root / "README.md").write_text(card.replace("path: data/context/**", "path: context/test-*"), encoding="utf-8")
    write_split(root / "context" / "test-00000-of-00001.parquet", "context", N)
    return root


@pytest.mark.slow
def test_sigkill_midway_then_rerun(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "project")
    mirror = _mirror(tmp_path / "mirror")
    with FakeServer(latency=0.2, expected_key=KEY) as server:
        params = yaml.safe_load((project / "params.yaml").read_text())
        params["splits"] = ["context"]
        params["dataset"]["source"] = str(mirror)  # the split's data come from the pipeline's own fetch
        params["models"] = {
            "fake": {
                "backend": "openai",
                "model_id": "fake-model-1",
                "api_key_env": KEY_ENV,
                "base_url": server.url("openai"),
                "concurrency": CONCURRENCY,
                "timeout_s": 10,
                "backoff_base_s": 0.05,
            }
        }
        (project / "params.yaml").write_text(yaml.safe_dump(params))
        run_env = {**env(), KEY_ENV: KEY}
        cmd = [str(BIN / "snakemake"), "--cores", "1", TARGET]
        journal = project / ".sabre" / "journal" / "fake" / "context.jsonl"

        with open(tmp_path / "run1.log", "w") as log:
            proc = subprocess.Popen(cmd, cwd=project, env=run_env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 120
            while _journal_lines(journal) < N // 4:
                assert proc.poll() is None, (tmp_path / "run1.log").read_text()
                assert time.monotonic() < deadline, "the run never got going"
                time.sleep(0.02)
            t_kill = time.monotonic()
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        done_at_kill = _journal_lines(journal)
        assert done_at_kill < N, "the kill came too late to be midway"
        assert not (project / TARGET).exists()
        time.sleep(0.3)  # let the server notice the dropped connections
        # requests sent before the kill and not answered before it (with a little slack for
        # the moment between the server's answer and the client's journal write)
        first_run = list(server.calls)
        in_flight = {c.key for c in first_run if c.end is None or c.end >= t_kill - 0.1}
        assert 0 < len(in_flight)

        unlock = subprocess.run([*cmd[:1], "--unlock", *cmd[1:]], cwd=project, env=run_env, capture_output=True, text=True)
        assert unlock.returncode == 0, unlock.stderr
        second = subprocess.run(cmd, cwd=project, env=run_env, capture_output=True, text=True, timeout=300)
        assert second.returncode == 0, second.stderr[-4000:]

        expected = expected_answers(project / "data" / "parquet" / "context.parquet")  # as the fetch wrote it
        preds = [json.loads(line) for line in (project / TARGET).read_text().splitlines()]
        ids = [p["id"] for p in preds]
        assert ids == list(expected) and len(set(ids)) == N, "complete, in dataset order, no duplicate ids"
        assert all(p["prediction"] == expected[p["id"]][1] for p in preds)

        assert sorted(server.answers_per_key()) == sorted(k for k, _ in expected.values())
        # every request that reached the server counts (a provider bills abandoned requests too)
        sent = Counter(c.key for c in server.calls)
        repeated = {k for k, n in sent.items() if n > 1}
        assert repeated <= in_flight, "a call completed before the kill was repeated"
        assert len(repeated) <= CONCURRENCY and max(sent.values()) <= 2
        print(f"killed after {done_at_kill}/{N} answers; in flight at the kill: {len(in_flight)}; repeated: {len(repeated)}")
        assert len(journal.read_text().splitlines()) == N  # every key journaled once

        run_log = json.loads((project / "results/logs/usage/fake/context.json").read_text())
        assert run_log["cached"] == done_at_kill and run_log["calls"] == N - done_at_kill
        log_text = (project / "results/logs/predict/fake/context.log").read_text()
        assert f"{done_at_kill} from the journal" in log_text
        assert "fake/context: 100%|" in log_text and "failed=0, refused=0, retries=0" in log_text  # the progress bar
