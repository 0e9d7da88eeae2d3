"""Fetch to Parquet: the real ``datasets.load_dataset`` path, embedding, determinism, errors."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import pyarrow.parquet as pq
import pytest
from PIL import Image

from sabre_prior import cli
from sabre_prior import contracts as C
from sabre_prior.data.parquet import iter_rows
from sabre_prior.data.demo import generate
from sabre_prior.errors import AccessError, DataError
from sabre_prior.data.fetch import explain_load_error, fetch_split, open_split, write_parquet
from sabre_prior.options import options_mapping

from layouts import LAYOUTS, write_layout, write_official_size_mirror

BIN = Path(sys.executable).parent
HUB_PAGE = "https://huggingface.co/datasets/Zesearch/SABRE-Prior"


def _metadata(root: Path, split: str) -> list[dict[str, Any]]:
    text = (root / "data" / split / "metadata.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def _write_metadata(root: Path, split: str, rows: list[dict[str, Any]]) -> None:
    text = "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows)
    (root / "data" / split / "metadata.jsonl").write_text(text, encoding="utf-8")


@pytest.fixture
def demo_copy(demo_dir: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "demo-copy"
    shutil.copytree(demo_dir, dest)
    return dest


# ---------------------------------------------------------------------------
# Round trip through the real loader
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("split", C.SPLITS)
def test_round_trip_keeps_rows_columns_and_image_bytes(demo_dir: Path, demo_parquet_dir: Path, split: str) -> None:
    source_rows = _metadata(demo_dir, split)
    table = pq.read_table(demo_parquet_dir / f"{split}.parquet")
    expected_columns = (set(source_rows[0]) - {C.COL_FILE_NAME}) | {C.COL_IMAGE}
    assert set(table.column_names) == expected_columns
    rows = table.to_pylist()
    assert [r[C.COL_ID] for r in rows] == [r[C.COL_ID] for r in source_rows]  # same order
    for got, src in zip(rows, source_rows):
        image = got.pop(C.COL_IMAGE)
        file = demo_dir / "data" / split / src.pop(C.COL_FILE_NAME)
        assert got == src
        assert image["bytes"] == file.read_bytes()  # embedded, byte for byte
        assert image["path"] == file.name
        with Image.open(io.BytesIO(image["bytes"])) as img:
            img.load()
            assert img.size == (320, 214)


def test_parquet_declares_image_feature_and_reads_with_data_module(demo_parquet_dir: Path) -> None:
    path = demo_parquet_dir / "context.parquet"
    features = json.loads(pq.read_schema(path).metadata[b"huggingface"])["info"]["features"]
    assert features["image"]["_type"] == "Image"
    rows = list(iter_rows(path))
    assert len(rows) == 12
    assert all(r[C.COL_IMAGE].startswith(b"\xff\xd8\xff") for r in rows)
    # both questions on one image carry the same bytes
    assert rows[0][C.COL_IMAGE] == rows[1][C.COL_IMAGE] != rows[2][C.COL_IMAGE]


def test_language_options_stay_a_letter_keyed_mapping(demo_parquet_dir: Path) -> None:
    row = pq.read_table(demo_parquet_dir / "language.parquet", columns=["options"]).to_pylist()[0]
    assert sorted(row["options"]) == list(C.OPTION_LETTERS)


def test_fetch_is_deterministic(demo_dir: Path, demo_parquet_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "again.parquet"
    summary = fetch_split(str(demo_dir), "texture", out)
    assert summary.startswith("texture: 12 questions, 6 images from ")
    assert out.read_bytes() == (demo_parquet_dir / "texture.parquet").read_bytes()
    meta = pq.ParquetFile(out).metadata.metadata
    assert meta.keys() == {b"huggingface", b"ARROW:schema", b"sabre_source", b"sabre_source_kind"}
    # where the rows were read: the demo folder, recognised by its card (data.parquet.data_identity)
    assert (meta[b"sabre_source"], meta[b"sabre_source_kind"]) == (str(demo_dir).encode(), b"demo")
    assert [p.name for p in tmp_path.iterdir()] == ["again.parquet"]  # no temporary file left


def test_rows_are_written_in_bounded_row_groups(demo_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "groups.parquet"
    with open_split(str(demo_dir), "attribute") as ds:
        write_parquet(ds.data.table, out, row_group_rows=5)
    meta = pq.ParquetFile(out).metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [5, 5, 2]


@pytest.fixture(scope="module")
def layout_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("layouts")


def _without_source(meta: dict[bytes, bytes] | None) -> dict[bytes, bytes]:
    return {k: v for k, v in (meta or {}).items() if k != b"sabre_source"}


@pytest.mark.parametrize("layout", [x for x in LAYOUTS if x != "jsonl"])
def test_every_mirror_layout_gives_the_same_parquet(
    demo_dir: Path, demo_parquet_dir: Path, layout_root: Path, layout: str
) -> None:
    mirror = write_layout(demo_dir, layout_root / layout, layout)
    assert not (mirror / "data" / "language" / "metadata.jsonl").exists() or layout == "nested"
    for split in C.SPLITS:
        out = layout_root / f"{layout}-{split}.parquet"
        fetch_split(str(mirror), split, out)
        # the same rows, columns and schema; only the recorded source (the mirror's folder) differs
        got, want = pq.read_table(out), pq.read_table(demo_parquet_dir / f"{split}.parquet")
        assert got.equals(want), f"{layout}: {split}"
        assert _without_source(got.schema.metadata) == _without_source(want.schema.metadata), f"{layout}: {split}"
        assert got.schema.metadata[b"sabre_source"] == str(mirror).encode()


def test_options_are_stored_as_a_letter_mapping_without_repeated_letters(demo_parquet_dir: Path) -> None:
    from sabre_prior.inference.prompts import render

    rows = pq.read_table(demo_parquet_dir / "language.parquet", columns=["options", "question"]).to_pylist()
    for row in rows:
        assert sorted(row["options"]) == list(C.OPTION_LETTERS)
        assert not any(v.startswith(f"{k}. ") for k, v in row["options"].items())
        prompt = render({**row, "eval_type": "multiple_choice_exact"}, "multiple_choice_exact")
        assert "A. A." not in prompt and f"A. {row['options']['A']}" in prompt


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["red", "blue"], {"A": "red", "B": "blue"}),
        ({"a": "red", "B": "blue"}, {"A": "red", "B": "blue"}),
        ('["red", "blue"]', {"A": "red", "B": "blue"}),  # JSON text (a CSV mirror)
        ('{"A": "red", "B": "blue"}', {"A": "red", "B": "blue"}),
        ("['red', 'blue']", {"A": "red", "B": "blue"}),  # pandas' to_csv of a list column
        ("A. red | B. blue", {"A": "red", "B": "blue"}),  # the delimiter form
        ("A) red\nB) blue", {"A": "red", "B": "blue"}),
        (["A. red", "(B) blue", "C: I cannot tell"], {"A": "red", "B": "blue", "C": "I cannot tell"}),
        (["A cat", "B. A dog"], {"A": "A cat", "B": "A dog"}),  # an article is not a letter prefix
        (["B. red"], {"A": "B. red"}),  # another letter than its own: kept
    ],
)
def test_options_mapping_accepts_every_container(options: Any, expected: dict[str, str]) -> None:
    assert options_mapping(options) == expected


def test_option_text_matching_works_for_lettered_options() -> None:
    from sabre_prior.scoring.contract import score

    opts = ["A. red", "B. blue", "C. green", "D. It cannot be determined"]
    assert score("it cannot be determined", "D", "multiple_choice_exact", opts).correct
    assert score("D", "D", "multiple_choice_exact", opts).correct
    assert not score("blue", "D", "multiple_choice_exact", opts).correct


def test_bad_options_text_names_the_row(demo_dir: Path, layout_root: Path) -> None:
    mirror = write_layout(demo_dir, layout_root / "bad-options", "csv")
    path = mirror / "data" / "language" / "metadata.csv"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1].replace('"[""', '"[oops ""', 1)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"language: row 'language_001', field 'options': options text '\[oops"):
        fetch_split(str(mirror), "language", layout_root / "bad.parquet")


def test_regenerated_demo_is_read_afresh(tmp_path: Path) -> None:
    """A new seed in the same directory must not be served from the datasets cache."""
    src, out = tmp_path / "demo", tmp_path / "a.parquet"
    generate(src, seed=0)
    fetch_split(str(src), "attribute", out)
    first = pq.read_table(out).to_pylist()
    generate(src, seed=7)
    fetch_split(str(src), "attribute", out)
    second = pq.read_table(out).to_pylist()
    assert first != second
    for row in second:
        assert row["image"]["bytes"] == (src / "data" / "attribute" / "images" / row["image"]["path"]).read_bytes()


# ---------------------------------------------------------------------------
# Validation and local errors
# ---------------------------------------------------------------------------
def test_invalid_rows_stop_the_fetch_and_keep_the_old_output(demo_copy: Path, tmp_path: Path) -> None:
    rows = _metadata(demo_copy, "context")
    rows[1]["answer"] = "yes"  # base_target must be "no"
    rows[6]["subset"] = "texture"
    _write_metadata(demo_copy, "context", rows)
    out = tmp_path / "context.parquet"
    out.write_bytes(b"previous")
    with pytest.raises(DataError) as info:
        fetch_split(str(demo_copy), "context", out)
    msg = str(info.value)
    assert msg.startswith(f"context: the data violates the contract (source: {demo_copy}): 2 problem(s)")
    assert "row 'context_001__base_target', field 'answer'" in msg
    assert "row 'context_002__edited_source', field 'subset'" in msg
    assert out.read_bytes() == b"previous"


def test_missing_local_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DataError, match="local dataset directory not found"):
        fetch_split(str(tmp_path / "nowhere"), "context", tmp_path / "x.parquet")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataError, match="sabre demo-data"):
        fetch_split(C.DEMO_DIR, "context", tmp_path / "x.parquet")


def test_card_without_the_split_config(demo_copy: Path, tmp_path: Path) -> None:
    card = (demo_copy / "README.md").read_text()
    start = card.index("- config_name: language")
    end = card.index("---", start)
    (demo_copy / "README.md").write_text(card[:start] + card[end:])
    with pytest.raises(DataError, match="declares no config 'language'"):
        fetch_split(str(demo_copy), "language", tmp_path / "x.parquet")


def test_official_counts_can_be_enforced_on_a_local_copy(demo_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(DataError, match="12 questions, the official dataset has 100"):
        fetch_split(str(demo_dir), "attribute", tmp_path / "x.parquet", check_counts=True)


# ---------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------
def test_cli_fetch_command(demo_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "cli" / "context.parquet"
    proc = subprocess.run(
        [str(BIN / "sabre"), "fetch", "--split", "context", "--source", str(demo_dir), "--output", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"context: 12 questions, 6 images from {demo_dir} -> {out}")
    assert pq.read_table(out).num_rows == 12


def test_cli_fetch_reports_bad_data_without_traceback(
    demo_copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _metadata(demo_copy, "language")
    rows[0]["answer"] = "Z"
    _write_metadata(demo_copy, "language", rows)
    rc = cli.main(["fetch", "--split", "language", "--source", str(demo_copy), "--output", str(tmp_path / "l.parquet")])
    err = capsys.readouterr().err
    assert rc == 2
    assert "error: language: the data violates the contract" in err
    assert "row 'language_001', field 'answer': 'Z' is not an option key" in err
    assert "Traceback" not in err


# ---------------------------------------------------------------------------
# Gated access: mapping of the real exception types
# ---------------------------------------------------------------------------
def _http_error(cls: type, status: int, message: str = "x") -> Exception:
    import httpx2

    response = httpx2.Response(status, request=httpx2.Request("HEAD", f"{HUB_PAGE}/resolve/main/README.md"))
    return cls(message, response=response)


def _explain(exc: BaseException, token: bool, source: str = C.HUB_REPO_ID, revision: str | None = None) -> Any:
    return explain_load_error(exc, source, "context", revision, token_present=token, local=False)


def test_gated_repo_errors_by_status_and_token() -> None:
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError

    no_token = _explain(_http_error(GatedRepoError, 401), token=False)
    assert isinstance(no_token, AccessError)
    assert "no Hugging Face token was found" in str(no_token)
    assert "HF_TOKEN" in str(no_token) and HUB_PAGE in str(no_token)
    assert "has no access" in str(_explain(_http_error(GatedRepoError, 403), token=True))
    assert "rejected your token" in str(_explain(_http_error(HfHubHTTPError, 401), token=True))
    assert "no Hugging Face token" in str(_explain(_http_error(HfHubHTTPError, 401), token=False))


def test_errors_wrapped_by_datasets() -> None:
    from datasets.exceptions import DatasetNotFoundError
    from huggingface_hub.errors import RevisionNotFoundError

    gated_401 = DatasetNotFoundError(f"Dataset '{C.HUB_REPO_ID}' is a gated dataset on the Hub. You must be authenticated to access it.")
    gated_403 = DatasetNotFoundError(
        f"Dataset '{C.HUB_REPO_ID}' is a gated dataset on the Hub. Visit the dataset page at {HUB_PAGE} to ask for access."
    )
    missing = DatasetNotFoundError("Dataset 'nobody/x' doesn't exist on the Hub or cannot be accessed.")
    assert "no Hugging Face token" in str(_explain(gated_401, token=False))
    assert "has no access" in str(_explain(gated_403, token=True))
    unknown = _explain(missing, token=False, source="nobody/x")
    assert "'nobody/x' was not found" in str(unknown) and "you are not logged in" in str(unknown)
    wrapped = DatasetNotFoundError("Revision 'v9' doesn't exist for dataset")
    wrapped.__cause__ = _http_error(RevisionNotFoundError, 404)
    assert "revision 'v9' does not exist" in str(_explain(wrapped, token=True, revision="v9"))


def test_connection_and_download_errors() -> None:
    assert "Hugging Face hub at" in str(_explain(ConnectionError("Couldn't reach"), token=True))
    assert "is unreachable" in str(_explain(ConnectionError("Couldn't reach"), token=True))
    assert "Could not download" in str(_explain(FileNotFoundError("hf://x/y.jpg"), token=True))
    assert _explain(RuntimeError("something else"), token=True) is None


# ---------------------------------------------------------------------------
# Gated access for real: the CLI against a fake hub on 127.0.0.1
# ---------------------------------------------------------------------------
GRANTED, NOT_GRANTED, INVALID = "hf_testGranted0001", "hf_testNotGranted0002", "hf_testInvalid0003"


class _FakeHub(BaseHTTPRequestHandler):
    """Answers like huggingface.co: gated Zesearch/SABRE-Prior, every other dataset unknown."""

    seen: ClassVar[list[tuple[str, bool]]] = []

    def _reply(self) -> None:
        path = urlsplit(self.path).path
        token = self.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        _FakeHub.seen.append((path, bool(token)))
        repo = f"/{C.HUB_REPO_ID}/"
        code, error_code, message = 404, None, "Not found"
        info = re.fullmatch(rf"/api/datasets/{re.escape(C.HUB_REPO_ID)}(/revision/[^/]+)?", path)
        if info and token != INVALID and not path.endswith("/revision/v404"):
            # A gated repo "is publicly accessible, but you have to accept the conditions to access its
            # files" (https://huggingface.co/docs/hub/datasets-gated; its pages say "You can list files but
            # not access them"): its info (HfApi.dataset_info, with the commit `sha`) needs no grant.
            body = json.dumps({"id": C.HUB_REPO_ID, "sha": "0" * 40, "gated": "manual", "private": False}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
            return
        if repo in path + "/":
            if token == INVALID:
                code, message = 401, "Invalid credentials in Authorization header"
            elif not token:
                code, error_code = 401, "GatedRepo"
                message = f"Access to dataset {C.HUB_REPO_ID} is restricted. You must have access to it and be authenticated to access it. Please log in."
            elif token == GRANTED and ("/resolve/v404/" in path or path.endswith("/revision/v404")):
                # an unknown revision: 404 with X-Error-Code RevisionNotFound, which huggingface_hub's
                # hf_raise_for_status (utils/_http.py) turns into RevisionNotFoundError
                code, error_code, message = 404, "RevisionNotFound", "Invalid rev id: v404"
            else:
                code, error_code = 403, "GatedRepo"
                message = f"Access to dataset {C.HUB_REPO_ID} is restricted and you are not in the authorized list. Visit {HUB_PAGE} to ask for access."
        elif "/datasets/" in path:
            code, error_code, message = (404 if token else 401), "RepoNotFound", "Repository not found"
        body = json.dumps({"error": message}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        if error_code:
            self.send_header("X-Error-Code", error_code)
        self.send_header("X-Error-Message", message)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_HEAD = do_POST = _reply

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def fake_hub() -> Iterator[str]:
    _FakeHub.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


ACCESS_CASES = [
    # (case, source, token, revision, phrases)
    ("no token", C.HUB_REPO_ID, None, None, ["no Hugging Face token was found", "HF_TOKEN", HUB_PAGE]),
    ("not granted", C.HUB_REPO_ID, NOT_GRANTED, None, ["has no access to the gated dataset", HUB_PAGE, "HF_TOKEN"]),
    ("invalid token", C.HUB_REPO_ID, INVALID, None, ["rejected your token", "HF_TOKEN"]),
    ("unknown repo", "nobody/no-such-dataset", GRANTED, None, ["'nobody/no-such-dataset' was not found", C.HUB_REPO_ID]),
    ("unknown revision", C.HUB_REPO_ID, GRANTED, "v404", ["revision 'v404' does not exist", "dataset.revision"]),
]


# Runs several CLI invocations in one interpreter (imports once); HF_TOKEN is read per call.
_DRIVER = """
import contextlib, io, json, os, sys
from sabre_prior import cli
results = []
for token, argv in json.loads(sys.argv[1]):
    os.environ.pop("HF_TOKEN", None)
    if token:
        os.environ["HF_TOKEN"] = token
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(argv)
    results.append({"rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue()})
print(json.dumps(results))
"""


@pytest.mark.slow
def test_access_errors_from_a_hub_are_actionable(fake_hub: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING_FACE_"))}
    env.update(HF_ENDPOINT=fake_hub, HF_HOME=str(tmp_path / "hf-home"), HF_HUB_DISABLE_TELEMETRY="1",
               NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    calls = []
    for case, source, token, revision, _ in ACCESS_CASES:
        out = tmp_path / case.replace(" ", "_") / "context.parquet"
        argv = ["fetch", "--split", "context", "--source", source, "--output", str(out)]
        calls.append((token, argv + (["--revision", revision] if revision else [])))
    # the first case through the installed `sabre` command, the others in one driver process
    first = subprocess.Popen([str(BIN / "sabre"), *calls[0][1]], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    driver = subprocess.run([sys.executable, "-c", _DRIVER, json.dumps(calls[1:])], env=env, capture_output=True,
                            text=True, timeout=120, check=False)
    assert driver.returncode == 0, driver.stderr[-3000:]
    stdout, stderr = first.communicate(timeout=120)
    results = [{"rc": first.returncode, "stdout": stdout, "stderr": stderr}, *json.loads(driver.stdout)]
    for (case, _source, token, _rev, phrases), res, (_, argv) in zip(ACCESS_CASES, results, calls):
        assert res["rc"] == 2, f"{case}: {res['stderr'][-2000:]}"
        assert "Traceback" not in res["stderr"], case
        error = [line for line in res["stderr"].splitlines() if line.startswith("error: ")]
        assert len(error) == 1, f"{case}: {res['stderr'][-2000:]}"  # one paragraph
        for phrase in phrases:
            assert phrase in error[0], f"{case}: {phrase!r} not in {error[0]!r}"
        if token:
            assert token not in res["stdout"] + res["stderr"], f"{case}: the token was printed"
        assert not Path(argv[argv.index("--output") + 1]).exists(), case
    for token in (GRANTED, NOT_GRANTED, INVALID):  # never printed, by any case
        assert token not in driver.stdout + driver.stderr + stdout + stderr
    authed = {has_token for path, has_token in _FakeHub.seen if "/datasets/" in path}
    assert authed == {True, False}  # the token (when set) was sent by the libraries themselves
    assert not (tmp_path / "hf-home" / "token").exists()  # and never stored


# ---------------------------------------------------------------------------
# Copies of the real dataset: the official counts
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def official_mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_official_size_mirror(tmp_path_factory.mktemp("official") / "mirror")


def test_a_full_local_copy_passes_the_official_count_check(official_mirror: Path, tmp_path: Path) -> None:
    for split, (images, questions) in C.OFFICIAL_COUNTS.items():
        summary = fetch_split(str(official_mirror), split, tmp_path / f"{split}.parquet")
        assert summary.startswith(f"{split}: {questions} questions, {images} images from {official_mirror}")


def test_a_partial_local_copy_names_the_split_and_both_counts(tmp_path: Path) -> None:
    mirror = write_official_size_mirror(tmp_path / "partial", sizes={"context": 396, "language": 99})
    with pytest.raises(DataError) as info:
        fetch_split(str(mirror), "context", tmp_path / "c.parquet")
    assert "context: split, field 'image': 198 distinct images, the official dataset has 200" in str(info.value)
    assert "context: split, field 'id': 396 questions, the official dataset has 400" in str(info.value)
    with pytest.raises(DataError, match="language: split, field 'id': 99 questions, the official dataset has 100"):
        fetch_split(str(mirror), "language", tmp_path / "l.parquet")
    fetch_split(str(mirror), "attribute", tmp_path / "a.parquet")  # a complete split of it is fine


def test_a_demo_card_without_its_tag_is_checked_like_a_real_copy(demo_dir: Path, tmp_path: Path) -> None:
    mirror = write_layout(demo_dir, tmp_path / "untagged", "jsonl", demo_tag=False)
    with pytest.raises(DataError, match="12 questions, the official dataset has 100"):
        fetch_split(str(mirror), "attribute", tmp_path / "a.parquet")


def test_a_missing_split_folder_says_which_folder_the_card_expects(demo_dir: Path, tmp_path: Path) -> None:
    mirror = write_layout(demo_dir, tmp_path / "no-texture", "jsonl")
    shutil.rmtree(mirror / "data" / "texture")
    with pytest.raises(DataError) as info:
        fetch_split(str(mirror), "texture", tmp_path / "t.parquet")
    assert str(info.value) == (
        f"{mirror}: split 'texture' is missing: the dataset card (README.md) expects its files at data/texture/**, "
        "but there is no folder data/texture/"
    )


def test_the_resolved_hub_commit_is_recorded_in_the_parquet_and_the_manifest(
    fake_hub: str, demo_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub.constants as hc

    from sabre_prior.data.fetch import REVISION_KEY, canonical_table, parquet_revision, resolve_revision
    from sabre_prior.data.parquet import identity_metadata
    from sabre_prior.manifest import parquet_fingerprint

    monkeypatch.setattr(hc, "ENDPOINT", fake_hub)
    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_TOKEN", GRANTED)
    sha = resolve_revision(C.HUB_REPO_ID, None)
    assert sha == "0" * 40  # what the fake's dataset info says (`sha`)
    with pytest.raises(AccessError, match="revision 'v404' does not exist"):
        resolve_revision(C.HUB_REPO_ID, "v404")
    # fetch_split stores the source and the commit it read in the schema metadata (write_parquet keeps it)
    hub_meta = identity_metadata(C.HUB_REPO_ID, "hub", sha, "f" * 64)
    assert hub_meta[REVISION_KEY] == sha.encode()
    with open_split(str(demo_dir), "attribute") as ds:
        table = canonical_table(ds.data.table, ds.features, "attribute")
        write_parquet(table.replace_schema_metadata({**table.schema.metadata, **hub_meta}), tmp_path / "a.parquet")
    assert parquet_revision(tmp_path / "a.parquet") == sha
    assert parquet_fingerprint(tmp_path / "a.parquet")["hub_revision"] == sha
    with open_split(str(demo_dir), "attribute") as ds:  # a local source records none
        table = canonical_table(ds.data.table, ds.features, "attribute")
        local_meta = identity_metadata(str(demo_dir), "demo")
        write_parquet(table.replace_schema_metadata({**table.schema.metadata, **local_meta}), tmp_path / "b.parquet")
    assert parquet_revision(tmp_path / "b.parquet") is None and "hub_revision" not in parquet_fingerprint(tmp_path / "b.parquet")
