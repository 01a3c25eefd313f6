"""The files of a vault in an S3-compatible bucket (moto's server on loopback).

Over real HTTP: a large file goes up as a multipart upload under its sha256 and comes
down whole and in ranges; the same content is stored once and never written over; a
bucket that refuses writes gives the client a clear FAILURE (never a 5xx) and makes
nothing. The store itself: a multipart upload that fails half-way leaves nothing, and
the sweep removes what no record references (and only that).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.backends import bucket_of, incoming_dir
from tests.server.conftest import backend_server
from tests.server.helpers import api_client, assert_error, assert_ok, upload
from vaultfs.server.storage.content import ContentUnavailable
from vaultfs.server.storage.s3 import PART_SIZE, S3Location, S3Store
from vaultfs.testing.s3_server import RefusingProxy, S3Server
from vaultfs.testing.vault_process import VaultProcess, free_port

FIELDS = {"type__v": "General", "lifecycle__v": "General Lifecycle"}


@pytest.fixture
def s3_vault(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VaultProcess]:
    server = backend_server(request, tmp_path / "data", "sqlite+s3")
    try:
        yield server.start()
    finally:
        server.stop()


def _key(server: VaultProcess, sha256: str) -> tuple[str, str]:
    found = bucket_of(server)
    assert found is not None
    bucket, prefix = found
    return bucket, f"{prefix}{sha256[:2]}/{sha256[2:4]}/{sha256}"


def _create(client: httpx.Client, name: str, filename: str, content: bytes) -> int:
    r = upload(client, "/objects/documents", {**FIELDS, "name__v": name}, filename, content)
    return int(assert_ok(r)["id"])


def test_large_file_in_parts_then_whole_and_in_ranges(s3_vault: VaultProcess, s3: S3Server) -> None:
    client = api_client(s3_vault.url)
    content = os.urandom(PART_SIZE + 4 * 1024 * 1024 + 17)  # two parts
    sha256 = hashlib.sha256(content).hexdigest()
    doc_id = _create(client, "Large", "large.bin", content)
    bucket, key = _key(s3_vault, sha256)
    head = s3.client().head_object(Bucket=bucket, Key=key)
    assert head["ContentLength"] == len(content)
    # A multipart object's ETag counts its parts.
    assert head["ETag"].strip('"').endswith("-2")
    assert s3.unfinished_uploads(bucket) == []
    assert not any(incoming_dir(s3_vault).iterdir())

    url = f"/objects/documents/{doc_id}/file"
    whole = client.get(url)
    assert whole.status_code == 200 and whole.content == content
    assert whole.headers["content-length"] == str(len(content))
    assert whole.headers["etag"] == f'"{sha256}"'
    assert whole.headers["accept-ranges"] == "bytes"
    assert whole.headers["content-disposition"] == 'attachment;filename="large.bin"'
    record = assert_ok(client.get(f"/objects/documents/{doc_id}"))["document"]
    assert record["md5checksum__v"] == hashlib.md5(content).hexdigest()

    size = len(content)
    tail = client.get(url, headers={"Range": "bytes=9000000-"})
    assert tail.status_code == 206 and tail.content == content[9_000_000:]
    assert tail.headers["content-range"] == f"bytes 9000000-{size - 1}/{size}"
    middle = client.get(url, headers={"Range": "bytes=10-19"})
    assert middle.status_code == 206 and middle.content == content[10:20]
    assert middle.headers["content-length"] == "10"
    suffix = client.get(url, headers={"Range": "bytes=-100"})
    assert suffix.status_code == 206 and suffix.content == content[-100:]
    past = client.get(url, headers={"Range": f"bytes={size}-"})
    assert past.status_code == 416 and past.headers["content-range"] == f"bytes */{size}"
    # A stale If-Range, or several ranges: the whole file.
    stale = client.get(url, headers={"Range": "bytes=0-9", "If-Range": '"0000"'})
    assert stale.status_code == 200 and stale.content == content
    fresh = client.get(url, headers={"Range": "bytes=0-9", "If-Range": f'"{sha256}"'})
    assert fresh.status_code == 206 and fresh.content == content[:10]
    several = client.get(url, headers={"Range": "bytes=0-1,5-6"})
    assert several.status_code == 200 and several.content == content


def test_same_content_is_stored_once_and_never_written_over(
    s3_vault: VaultProcess, s3: S3Server
) -> None:
    client = api_client(s3_vault.url)
    content = b"the same bytes, twice"
    bucket, key = _key(s3_vault, hashlib.sha256(content).hexdigest())
    # With versioning on, every write of the key would add a version.
    s3.client().put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    first = _create(client, "First", "a.txt", content)
    second = _create(client, "Second", "b.txt", content)
    versions = s3.client().list_object_versions(Bucket=bucket, Prefix=key)["Versions"]
    assert [v["Key"] for v in versions] == [key]
    for doc_id in (first, second):
        assert client.get(f"/objects/documents/{doc_id}/file").content == content


def test_a_bucket_that_refuses_writes(
    request: pytest.FixtureRequest, tmp_path: Path, s3: S3Server
) -> None:
    with RefusingProxy(s3.port) as proxy:
        server = backend_server(request, tmp_path / "data", "sqlite+s3")
        server.env["AWS_ENDPOINT_URL_S3"] = proxy.endpoint
        with server:
            client = api_client(server.url)
            before = _create(client, "Before", "before.txt", b"stored before")
            total = assert_ok(client.get("/objects/documents"))["responseDetails"]["total"]
            proxy.refusing.set()

            r = upload(client, "/objects/documents", {**FIELDS, "name__v": "Refused"},
                       "refused.txt", b"refused content")  # fmt: skip
            body = assert_error(r, "OPERATION_NOT_ALLOWED", 409, mentions="could not store")
            assert "nothing was created" in body["responseMessage"]
            assert "AccessDenied" in body["responseMessage"]
            assert proxy.refused >= 1
            # Nothing was made: no document, no file received and left behind.
            listed = assert_ok(client.get("/objects/documents"))["responseDetails"]["total"]
            assert listed == total
            assert not any(incoming_dir(server).iterdir())
            # A new version and an attachment are refused the same way, and change nothing.
            draft = upload(client, f"/objects/documents/{before}",
                           {"createDraft": "uploadedContent"}, "v2.txt", b"v2")  # fmt: skip
            assert_error(draft, "OPERATION_NOT_ALLOWED", 409, mentions="could not store")
            versions = assert_ok(client.get(f"/objects/documents/{before}/versions"))["versions"]
            assert len(versions) == 1
            attach = client.post(f"/objects/documents/{before}/attachments",
                                 files={"file": ("n.txt", b"note")})  # fmt: skip
            assert_error(attach, "OPERATION_NOT_ALLOWED", 409, mentions="could not store")
            # Reading still works.
            assert client.get(f"/objects/documents/{before}/file").content == b"stored before"

            proxy.refusing.clear()
            after = _create(client, "After", "after.txt", b"stored after")
            assert client.get(f"/objects/documents/{after}/file").content == b"stored after"


class _FailingParts:
    """An S3 client whose ``upload_part`` fails from the ``fail_at``-th call on, as a
    connection that breaks half-way through an upload would."""

    def __init__(self, client: Any, fail_at: int) -> None:
        self._client = client
        self._calls = 0
        self._fail_at = fail_at

    def upload_part(self, **kwargs: Any) -> Any:
        from botocore.exceptions import EndpointConnectionError

        self._calls += 1
        if self._calls >= self._fail_at:
            raise EndpointConnectionError(endpoint_url="http://127.0.0.1")
        return self._client.upload_part(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def test_an_upload_that_fails_half_way_leaves_nothing(tmp_path: Path, s3: S3Server) -> None:
    bucket = s3.create_bucket("failing")
    client = _FailingParts(s3.client(), fail_at=2)
    store = S3Store(S3Location(bucket, "files/"), tmp_path / "incoming", client=client)
    store.open()
    data = os.urandom(2 * PART_SIZE + 1)  # three parts: the second one fails
    with pytest.raises(ContentUnavailable, match="EndpointConnectionError"):
        store.put_bytes(data)
    assert s3.keys(bucket) == set()
    assert s3.unfinished_uploads(bucket) == []  # aborted
    assert list(store.incoming.iterdir()) == []


def test_sweep_removes_only_unreferenced_files_and_stale_uploads(
    tmp_path: Path, s3: S3Server
) -> None:
    bucket = s3.create_bucket("sweep")
    store = S3Store(S3Location(bucket, "files/"), tmp_path / "incoming", client=s3.client())
    store.open()
    keep = store.put_bytes(b"keep")
    drop = store.put_bytes(b"drop")
    assert set(store.names()) == {keep.sha256, drop.sha256}
    assert store.size(keep.sha256) == 4 and store.size("0" * 64) is None
    s3.client().put_object(Bucket=bucket, Key="files/notes.txt", Body=b"not a stored file")
    (store.incoming / "upload-leftover").write_bytes(b"partial")
    # Young files are spared (another process may be about to reference them).
    assert store.sweep({keep.sha256}, min_age_seconds=3600) == 0
    # (Made after that: moto dates every multipart upload in 2010.)
    s3.client().create_multipart_upload(Bucket=bucket, Key=store.key("f" * 64))
    assert store.sweep({keep.sha256}) == 3  # the orphan, the upload, the leftover
    assert set(store.names()) == {keep.sha256}
    assert s3.keys(bucket) == {store.key(keep.sha256), "files/notes.txt"}
    assert s3.unfinished_uploads(bucket) == []
    assert list(store.incoming.iterdir()) == []
    reading = store.read(keep.sha256, 1, 2)
    assert (reading.start, reading.length, reading.size) == (1, 2, 4)
    assert reading.body.read() == b"ee"
    with pytest.raises(FileNotFoundError):
        store.read(drop.sha256)


def test_serve_refuses_credentials_in_the_url_and_a_bucket_that_is_not_there(
    tmp_path: Path, s3: S3Server
) -> None:
    def serve(content: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "vaultfs", "serve", "--port", str(free_port()),
             "--data", str(tmp_path / "data"), "--content", content],
            env={**os.environ, **s3.env}, capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    secret = serve("s3://KEYID:hunter2-secret@bucket/vault")
    assert secret.returncode == 2
    assert "no credentials" in secret.stderr and "hunter2" not in secret.stderr
    missing = serve("s3://no-such-bucket/vault")
    assert missing.returncode == 2
    assert "s3://no-such-bucket/vault/ cannot be reached: HTTP 404" in missing.stderr
