"""A planted API key must never reach a file: run the pipeline through Snakemake, grep the whole tree.

The key goes to three backends (OpenAI, Anthropic, Gemini SDKs) that use it
against the fake server, and to a fourth model whose server rejects it with a
401 message that quotes the key back (the worst case); that job fails.  A
verbose `sabre -v predict` and a `sabre estimate` write their output into the
tree as well.  Then every file under the project (results, logs, the journal,
`.snakemake/`) is searched for the key: zero hits.
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest
import yaml

from tests.project import BIN, copy_project, env
from tests.servers import FakeServer
from tests.servers.dataset import write_mirror
from tests.servers.fixtures import BACKENDS as API_BACKENDS

KEY_ENV = "SABRE_PLANTED_KEY"


def _model(server: FakeServer, backend: str) -> dict:
    return {
        "backend": backend,
        "model_id": "fake-model-1",
        "api_key_env": KEY_ENV,
        "base_url": server.url(backend),
        "concurrency": 4,
        "timeout_s": 5,
        "backoff_base_s": 0.01,
        "max_attempts": 2,
    }


@pytest.mark.slow
def test_planted_key_never_reaches_a_file(tmp_path: Path) -> None:
    key = f"sk-planted-{uuid.uuid4().hex}"
    project = copy_project(tmp_path / "project")
    write_mirror(project, {"context": 8, "attribute": 4})  # the pipeline's fetch reads these questions
    with FakeServer(latency=0.005, expected_key=key) as good, FakeServer(
        expected_key="another-key", echo_key_in_errors=True
    ) as leaky:
        params = yaml.safe_load((project / "params.yaml").read_text())
        params["splits"] = ["context", "attribute"]
        params["models"] = {b: _model(good, b) for b in API_BACKENDS}
        params["models"]["leaky"] = _model(leaky, "openai")
        (project / "params.yaml").write_text(yaml.safe_dump(params))
        run_env = {**env(), KEY_ENV: key}
        targets = [f"results/predictions/{m}/{s}.jsonl" for m in params["models"] for s in params["splits"]]
        smk = subprocess.run(
            [str(BIN / "snakemake"), "--cores", "2", "--keep-going", *targets],
            cwd=project, env=run_env, capture_output=True, text=True, timeout=600,
        )
        (project / "results" / "logs" / "snakemake_console.log").write_text(smk.stdout + smk.stderr)
        verbose = subprocess.run(
            [str(BIN / "sabre"), "-v", "predict", "--model", "leaky", "--split", "attribute", "--output", "results/x.jsonl"],
            cwd=project, env=run_env, capture_output=True, text=True, timeout=300,
        )
        (project / "results" / "logs" / "verbose.log").write_text(verbose.stdout + verbose.stderr)
        estimate = subprocess.run([str(BIN / "sabre"), "estimate"], cwd=project, env=run_env, capture_output=True, text=True)
        (project / "results" / "logs" / "estimate.log").write_text(estimate.stdout + estimate.stderr)

    # the run was real: the key reached the good server, the leaky one quoted it back
    assert smk.returncode != 0 and verbose.returncode == 2 and estimate.returncode == 0
    for m in API_BACKENDS:
        for s in ("context", "attribute"):
            assert (project / "results" / "predictions" / m / f"{s}.jsonl").is_file(), smk.stderr[-3000:]
    assert {c.api_key for c in good.calls} == {key} and len(good.ok_calls()) == len(API_BACKENDS) * 12
    assert leaky.calls and all(c.status == 401 for c in leaky.calls)
    assert "invalid API key: ***" in (project / "results" / "logs" / "predict" / "leaky" / "context.log").read_text()
    assert (project / ".snakemake").is_dir() and (project / ".sabre" / "journal").is_dir()

    needle = key.encode()
    hits = []
    files = 0
    for path in project.rglob("*"):
        if path.is_file() and not path.is_symlink():
            files += 1
            if needle in path.read_bytes():
                hits.append(str(path.relative_to(project)))
    assert files > 50
    assert hits == [], f"the API key was written to: {hits}"
