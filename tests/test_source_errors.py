"""An unresolvable ``dataset.source`` is an error naming the source and the fix (issues 18 and 19).

``resolve_source`` (what the planner calls when the DAG is built) and ``sabre fetch`` against the
fake hub on 127.0.0.1 (tests/servers/hub.py: gated 401/403, RevisionNotFound 404, as the real hub
answers), a closed port (the hub unreachable), the offline cache and a missing local folder.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from servers.hub import FakeHub

from sabre_prior import contracts as C
from sabre_prior.data.fetch import ResolvedSource, is_unreachable, resolve_source
from sabre_prior.errors import SabreError, SourceError

REPO = C.HUB_REPO_ID
GRANTED = "hf_granted_token_for_tests"
CARD = b"""---
configs:
- config_name: context
  data_files:
  - split: test
    path: data/context/**
---
# card
"""
FILES = {"README.md": CARD, "data/context/metadata.jsonl": b"{}\n", "data/texture/metadata.jsonl": b"{}\n"}


def params(source: str, revision: str | None = None) -> dict:
    return {"dataset": {"source": source, "revision": revision}, "splits": ["context"], "models": {}}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again on exit: connecting is refused


@pytest.fixture()
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[FakeHub, str]]:
    import huggingface_hub.constants as hc

    with FakeHub(granted=frozenset({GRANTED})) as fake:
        commit = fake.commit(REPO, FILES, gated=True)
        monkeypatch.setattr(hc, "ENDPOINT", fake.url)  # read when HfApi is made (constants.py: HF_ENDPOINT)
        monkeypatch.setattr(hc, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
        monkeypatch.setenv("HF_TOKEN", GRANTED)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
        yield fake, commit


def test_resolve_source_gives_the_commit_and_split_digests(hub: tuple[FakeHub, str]) -> None:
    fake, commit = hub
    got = resolve_source(params(REPO))
    assert isinstance(got, ResolvedSource)
    assert (got.kind, got.location, got.commit, sorted(got.files)) == ("hub", REPO, commit, ["context"])
    fake.commit(REPO, {**FILES, "data/texture/metadata.jsonl": b"{}\n{}\n"})  # a file context does not read
    assert resolve_source(params(REPO)).files == got.files
    assert resolve_source(params(REPO)).commit != commit


def test_demo_and_local_sources(tmp_path: Path) -> None:
    assert resolve_source(params("demo")).kind == "demo"
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    got = resolve_source(params(str(mirror)))
    assert (got.kind, got.location) == ("local", str(mirror))


def test_a_missing_local_folder_is_an_error_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SourceError) as info:
        resolve_source(params("./mirror"))
    assert "./mirror" in str(info.value) and "dataset.source" in str(info.value)
    assert "not found" in str(info.value) and "set dataset.source in params.yaml" in str(info.value)
    assert isinstance(info.value, SabreError)


def test_no_token_and_no_access_are_errors_with_the_fix(hub: tuple[FakeHub, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_TOKEN")
    with pytest.raises(SourceError) as info:  # 401 GatedRepo on the files, the info is public
        resolve_source(params(REPO))
    assert REPO in str(info.value) and "HF_TOKEN" in str(info.value) and "hf auth login" in str(info.value)
    monkeypatch.setenv("HF_TOKEN", "hf_some_other_account")
    with pytest.raises(SourceError) as info:  # 403: valid token, access not granted
        resolve_source(params(REPO))
    assert "has no access" in str(info.value) and "accept the terms" in str(info.value)
    assert "hf_some_other_account" not in str(info.value)


def test_an_unknown_revision_names_it(hub: tuple[FakeHub, str]) -> None:
    with pytest.raises(SourceError) as info:
        resolve_source(params(REPO, "v9.9"))
    assert "'v9.9' does not exist" in str(info.value) and "dataset.revision" in str(info.value)


def test_an_unreachable_hub_says_so_and_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub.constants as hc

    monkeypatch.setattr(hc, "ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", False)
    with pytest.raises(SourceError) as info:
        resolve_source(params(REPO))
    text = str(info.value)
    assert "unreachable" in text and REPO in text
    assert "HF_HUB_OFFLINE=1" in text and "HF_TOKEN" in text and "network" in text


def test_transport_errors_of_every_http_client_count_as_unreachable() -> None:
    import httpx2
    import requests

    assert is_unreachable(httpx2.ConnectError("refused"))
    assert is_unreachable(requests.exceptions.ConnectionError("refused"))
    assert is_unreachable(RuntimeError("wrapped")) is False
    try:
        try:
            raise httpx2.ConnectTimeout("timed out")
        except httpx2.ConnectTimeout as inner:
            raise ValueError("load failed") from inner
    except ValueError as outer:
        assert is_unreachable(outer)


def test_offline_resolves_from_the_cache_or_says_what_to_do(
    hub: tuple[FakeHub, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub.constants as hc
    from servers.hub import git_blob_sha

    fake, commit = hub
    online = resolve_source(params(REPO))
    # what a fetch leaves in the cache, in huggingface_hub's layout (guides/manage-cache:
    # datasets--<org>--<name>/{refs/main, blobs/<etag>, snapshots/<commit>/<file> -> ../../blobs/<etag>};
    # the etag of a non-LFS file is its git blob id)
    folder = Path(hc.HF_HUB_CACHE) / ("datasets--" + REPO.replace("/", "--"))
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(commit)
    for name, data in FILES.items():
        blob = folder / "blobs" / git_blob_sha(data)
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        link = folder / "snapshots" / commit / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for revision in (commit, None):  # a pinned commit, or the branch the cache's refs name
        offline = resolve_source(params(REPO, revision))
        assert (offline.commit, offline.files) == (online.commit, online.files)
    with pytest.raises(SourceError) as info:
        resolve_source(params(REPO, "b" * 40))
    assert "HF_HUB_OFFLINE is set" in str(info.value) and "not in the local Hugging Face cache" in str(info.value)


def test_sabre_fetch_without_a_network_prints_no_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "HF_ENDPOINT": f"http://127.0.0.1:{closed_port()}", "HF_HOME": str(tmp_path / "hf"),
           "NO_PROXY": "127.0.0.1"}  # fmt: skip
    env.pop("HF_HUB_OFFLINE", None)
    proc = subprocess.run(
        [sys.executable, "-m", "sabre_prior.cli", "fetch", "--split", "context", "--source", REPO,
         "--output", str(tmp_path / "c.parquet")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "unreachable" in proc.stderr and "HF_HUB_OFFLINE=1" in proc.stderr
    assert not (tmp_path / "c.parquet").exists()
