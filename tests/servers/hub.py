"""A fake Hugging Face Hub on 127.0.0.1 serving dataset repos with a git-like history.

The real ``datasets.load_dataset(repo_id, config, revision=...)`` and ``huggingface_hub``
(``HfApi``, ``HfFileSystem``, ``hf_hub_download``) work against it with ``HF_ENDPOINT`` set to
:attr:`FakeHub.url`. Each endpoint, header and error below is the one the installed
``huggingface_hub`` (2.x) calls or reads; the source is named beside it (paths relative to
``site-packages/huggingface_hub/``).

A repo is a list of commits (each a full snapshot: path -> bytes) and branches pointing at
commits; :meth:`FakeHub.commit` adds a commit and moves the branch, like a ``git push``.
Every request is logged (:attr:`FakeHub.requests`) so tests can tell what was downloaded.
Files are served as regular git blobs: the client then uses the plain HTTP download path
(file_download.py ``http_get``). Not faked: the LFS/Xet storage the real hub uses for images and
Parquet (a redirect with X-Linked-Etag / X-Xet-Hash headers), pagination, ``paths-info``.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit


def git_blob_sha(data: bytes) -> str:
    """The git blob id the hub reports as a regular file's ``oid`` / ``ETag`` (file_download.py
    ``hf_hub_download`` docstring: "An object's ETag is: its git-sha1 if stored in git")."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class Repo:
    repo_id: str
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)  # sha -> snapshot
    branches: dict[str, str] = field(default_factory=dict)  # branch -> sha
    gated: bool = False  # files need a token the hub accepts (``FakeHub.granted``)

    def resolve(self, revision: str) -> str | None:
        """A branch name or a full commit id -> the commit (None: no such revision)."""
        if revision in self.branches:
            return self.branches[revision]
        return revision if revision in self.commits else None


@dataclass
class Request:
    method: str
    path: str
    status: int
    token: str = ""  # the bearer token sent ("": none)


@dataclass
class FakeHub:
    repos: dict[str, Repo] = field(default_factory=dict)
    #: tokens that may read gated repos; any other token is "valid but not granted"
    granted: frozenset[str] = frozenset()
    requests: list[Request] = field(default_factory=list)
    port: int = 0

    # -- repos ----------------------------------------------------------------------
    def commit(self, repo_id: str, files: dict[str, bytes], branch: str = "main", *, gated: bool = False) -> str:
        """Push a snapshot to ``branch``; returns the new commit id (40 hex digits)."""
        repo = self.repos.setdefault(repo_id, Repo(repo_id, gated=gated))
        parent = repo.branches.get(branch, "")
        digest = hashlib.sha1(parent.encode())
        for path in sorted(files):
            digest.update(path.encode() + b"\0" + git_blob_sha(files[path]).encode())
        sha = digest.hexdigest()
        repo.commits[sha] = dict(files)
        repo.branches[branch] = sha
        return sha

    @staticmethod
    def snapshot(folder: Path) -> dict[str, bytes]:
        """Every file below ``folder`` (a local copy of the repo), by its path in the repo."""
        return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}

    def downloads(self, prefix: str = "", since: int = 0) -> list[str]:
        """Paths of files sent with GET .../resolve/... (HEAD requests excluded), from request ``since`` on."""
        out = []
        for r in self.requests[since:]:
            if r.method == "GET" and "/resolve/" in r.path and r.status == 200:
                path = unquote(r.path.split("/resolve/", 1)[1].split("/", 1)[1])
                if path.startswith(prefix):
                    out.append(path)
        return out

    # -- running --------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeHub:
        hub = self

        class Handler(_Handler):
            fake = hub

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_port
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-hub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _entries(files: dict[str, bytes], base: str, recursive: bool) -> list[dict[str, Any]] | None:
    """The tree listing below ``base`` (hf_api.py ``_iter_repo_tree_pages``: each item becomes a
    ``RepoFile`` {type: file, oid, size, path} or a ``RepoFolder`` {type: directory, oid, path});
    None when ``base`` is neither a folder nor a file."""
    prefix = base.strip("/") + "/" if base.strip("/") else ""
    below = {p: d for p, d in files.items() if p.startswith(prefix)}
    if not below:
        return None
    out: dict[str, dict[str, Any]] = {}
    for path, data in sorted(below.items()):
        parts = path[len(prefix):].split("/")
        for depth in range(1, len(parts)):  # the folders on the way
            folder = prefix + "/".join(parts[:depth])
            if recursive or depth == 1:
                tree = hashlib.sha1(folder.encode() + b"".join(git_blob_sha(d).encode() for p, d in sorted(below.items()) if p.startswith(folder + "/"))).hexdigest()
                out.setdefault(folder, {"type": "directory", "oid": tree, "path": folder})
        if recursive or len(parts) == 1:
            out[path] = {"type": "file", "oid": git_blob_sha(data), "size": len(data), "path": path}
    return list(out.values())


def _card_data(card: bytes) -> dict[str, Any]:
    """The YAML header of a dataset card (README.md), as the hub returns it in ``cardData``."""
    import yaml

    text = card.decode("utf-8", "replace")
    if not text.startswith("---"):
        return {}
    meta = yaml.safe_load(text.split("---", 2)[1]) or {}
    return meta if isinstance(meta, dict) else {}


class _Handler(BaseHTTPRequestHandler):
    fake: FakeHub
    protocol_version = "HTTP/1.1"  # keep-alive, as the hub (clients pool connections)

    def log_message(self, *args: Any) -> None:
        pass

    # -- replies ----------------------------------------------------------------------
    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None, *, head: bool = False) -> None:
        token = self.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        self.fake.requests.append(Request(self.command, self.path, status, token))
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(payload).encode(), {"Content-Type": "application/json", **(headers or {})})

    def _error(self, status: int, code: str, message: str, *, head: bool = False) -> None:
        # utils/_http.py hf_raise_for_status maps the X-Error-Code header to the error class:
        # RepoNotFound -> RepositoryNotFoundError, RevisionNotFound -> RevisionNotFoundError,
        # EntryNotFound -> RemoteEntryNotFoundError, GatedRepo -> GatedRepoError; X-Error-Message
        # is the message it shows.
        body = json.dumps({"error": message}).encode()
        self._send(status, body, {"Content-Type": "application/json", "X-Error-Code": code, "X-Error-Message": message}, head=head)

    def _repo(self, repo_id: str, revision: str | None, *, head: bool = False) -> tuple[Repo, str] | None:
        repo = self.fake.repos.get(repo_id)
        if repo is None:
            # the hub answers 401 RepoNotFound without a token (utils/_http.py: "401 is misleading
            # as it is also returned for private and gated repos if user is not authenticated")
            status = 404 if self.headers.get("Authorization") else 401
            self._error(status, "RepoNotFound", "Repository not found", head=head)
            return None
        sha = repo.resolve(unquote(revision or "main"))
        if sha is None:
            self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}", head=head)
            return None
        return repo, sha

    def _gate(self, repo: Repo, *, head: bool) -> bool:
        """Gated repo files: 401 GatedRepo without a token, 403 GatedRepo with one not granted
        (utils/_http.py hf_raise_for_status, GatedRepoError; errors.py GatedRepoError docstring)."""
        if not repo.gated:
            return True
        auth = self.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ").strip()
        if token and token in self.fake.granted:
            return True
        if token:
            self._error(403, "GatedRepo", f"Access to dataset {repo.repo_id} is restricted and you are not in the authorized list. Visit https://huggingface.co/datasets/{repo.repo_id} to ask for access.", head=head)
        else:
            self._error(401, "GatedRepo", f"Access to dataset {repo.repo_id} is restricted. You must have access to it and be authenticated to access it. Please log in.", head=head)
        return False

    # -- routes -------------------------------------------------------------------------
    def do_HEAD(self) -> None:  # noqa: N802
        self._route(head=True)

    def do_GET(self) -> None:  # noqa: N802
        self._route(head=False)

    def _route(self, *, head: bool) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        parts = url.path.split("/")
        if len(parts) >= 5 and parts[1:3] == ["api", "datasets"]:
            repo_id = f"{parts[3]}/{parts[4]}"
            rest = parts[5:]
            # hf_api.py dataset_info: GET /api/datasets/{repo_id} or
            # /api/datasets/{repo_id}/revision/{quote(revision, safe='')}; DatasetInfo(**json) reads
            # id, sha, private, gated, disabled, siblings [{rfilename, size?, blobId?}], cardData (the card's
            # YAML header, made a DatasetCardData), ...
            if not rest or rest[0] == "revision":
                found = self._repo(repo_id, "/".join(rest[1:]) if rest else None, head=head)
                if found is None:
                    return
                repo, sha = found
                meta = "blobs" in query  # files_metadata=True asks for sizes and blob ids
                siblings = [
                    {"rfilename": p, **({"size": len(d), "blobId": git_blob_sha(d)} if meta else {})}
                    for p, d in sorted(repo.commits[sha].items())
                ]
                card = _card_data(repo.commits[sha].get("README.md", b""))
                self._json(200, {
                    "_id": hashlib.sha1(repo_id.encode()).hexdigest()[:24], "id": repo_id, "author": parts[3],
                    "sha": sha, "private": False, "gated": "manual" if repo.gated else False, "disabled": False,
                    "downloads": 0, "likes": 0, "tags": [], "siblings": siblings,
                    "lastModified": "2026-01-01T00:00:00.000Z", **({"cardData": card} if card else {}),
                })
                return
            # hf_api.py _iter_repo_tree_pages: GET /api/{repo_type}s/{repo_id}/tree/{revision}{/quoted path}
            # with params recursive, expand; pages follow the Link header (utils/_pagination.py): one page here
            if rest[0] == "tree" and len(rest) >= 2:
                found = self._repo(repo_id, rest[1], head=head)
                if found is None:
                    return
                repo, sha = found
                path = unquote("/".join(rest[2:]))
                listing = _entries(repo.commits[sha], path, query.get("recursive", ["False"])[0].lower() == "true")
                if listing is None:
                    self._error(404, "EntryNotFound", f"{path} does not exist on {rest[1]}", head=head)
                    return
                self._json(200, listing)
                return
        # file_download.py hf_hub_url: {endpoint}/datasets/{repo_id}/resolve/{quote(revision)}/{quote(filename)};
        # get_hf_file_metadata (HEAD) reads X-Repo-Commit (the commit), ETag (the blob id; X-Linked-Etag
        # for LFS files) and Content-Length (X-Linked-Size for LFS); hf_hub_download then GETs the same URL
        if len(parts) >= 7 and parts[1] == "datasets" and parts[4] == "resolve":
            found = self._repo(f"{parts[2]}/{parts[3]}", parts[5], head=head)
            if found is None:
                return
            repo, sha = found
            if not self._gate(repo, head=head):
                return
            path = unquote("/".join(parts[6:]))
            files = repo.commits[sha]
            if path not in files:
                # file_download.py: a 404 EntryNotFound still carries X-Repo-Commit (used to cache "no file")
                body = json.dumps({"error": "Entry not found"}).encode()
                self._send(404, body, {"X-Error-Code": "EntryNotFound", "X-Error-Message": "Entry not found", "X-Repo-Commit": sha}, head=head)
                return
            data = files[path]
            headers = {"X-Repo-Commit": sha, "ETag": f'"{git_blob_sha(data)}"', "Accept-Ranges": "bytes",
                       "Content-Type": "application/octet-stream"}
            self._send(200, data, headers, head=head)
            return
        # anything else is not served, e.g. GET /api/agent-harnesses, which huggingface_hub fetches at most
        # once a day and does without when it fails (utils/_detect_agent.py)
        self._error(404, "EntryNotFound", f"no route {url.path}", head=head)
