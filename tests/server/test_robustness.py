"""Durability and limits over real HTTP: restarts, aborted uploads, call limits."""

from __future__ import annotations

import socket

import httpx

from tests.conftest import login
from tests.server.backends import backend_of
from tests.server.helpers import API, api_client, assert_error, assert_ok, upload
from tests.vaultproc import VaultProcess, wait_until


def test_restart_keeps_everything(fresh_vault: VaultProcess) -> None:
    with api_client(fresh_vault.url) as client:
        fields = {"type__v": "General", "lifecycle__v": "General Lifecycle", "name__v": "Durable"}
        doc_id = assert_ok(upload(client, "/objects/documents", fields, "d.txt", b"durable"))["id"]
        assert_ok(client.post(f"/objects/documents/{doc_id}/lock"))
        before = assert_ok(client.get(f"/objects/documents/{doc_id}"))
        listing = assert_ok(client.get("/objects/documents"))["documents"]
        session = client.headers["Authorization"]
    fresh_vault.stop()
    fresh_vault.start()
    # Sessions survive a restart too.
    with httpx.Client(base_url=fresh_vault.url + API, headers={"Authorization": session}) as again:
        assert assert_ok(again.get(f"/objects/documents/{doc_id}")) == before
        assert assert_ok(again.get("/objects/documents"))["documents"] == listing
        assert again.get(f"/objects/documents/{doc_id}/file").content == b"durable"


def _blob_files(server: VaultProcess) -> set[str]:
    return {p.name for p in (server.data_dir / "blobs").rglob("*") if p.is_file()}


def test_aborted_upload_leaves_nothing(fresh_vault: VaultProcess) -> None:
    client = api_client(fresh_vault.url)
    session = client.headers["Authorization"]
    total = assert_ok(client.get("/objects/documents"))["responseDetails"]["total"]
    blobs_before = _blob_files(fresh_vault)
    boundary = "vaultfsboundary"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="type__v"\r\n\r\nGeneral\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="lifecycle__v"\r\n\r\n'
        f"General Lifecycle\r\n"
        f'--{boundary}\r\nContent-Disposition: form-data; name="name__v"\r\n\r\nAborted\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"'
        f"\r\nContent-Type: application/octet-stream\r\n\r\n"
    ).encode()
    declared = len(head) + 10_000_000
    request = (
        f"POST {API}/objects/documents HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: {session}\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
        f"Content-Length: {declared}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", fresh_vault.port)) as sock:
        sock.sendall(request + head + b"x" * 3_000_000)
        # The server has started receiving the file into a temp file ...
        wait_until(
            lambda: any((fresh_vault.data_dir / "blobs" / "tmp").iterdir()),
            what="the upload to reach a temp file",
        )
    # ... and the client went away half-way through the body.
    wait_until(
        lambda: not any((fresh_vault.data_dir / "blobs" / "tmp").iterdir()),
        what="the temp file to be removed",
    )
    assert _blob_files(fresh_vault) == blobs_before
    assert assert_ok(client.get("/objects/documents"))["responseDetails"]["total"] == total

    # A complete HTTP body whose multipart is cut short is refused the same way.
    short = head + b"abc"  # no closing boundary
    r = client.post(
        "/objects/documents",
        content=short,
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    assert_error(r, "INVALID_DATA", mentions="closing boundary")
    assert _blob_files(fresh_vault) == blobs_before
    assert assert_ok(client.get("/objects/documents"))["responseDetails"]["total"] == total


def test_remaining_call_headers_on_every_response(vault_server: VaultProcess) -> None:
    client = api_client(vault_server.url)
    responses = [
        httpx.get(vault_server.url + "/api/"),
        client.get("/metadata/objects"),
        client.get("/objects/documents/999999"),
        httpx.get(vault_server.url + "/nowhere"),
        client.get("/objects/documents", params={"limit": 1}),
    ]
    for r in responses:
        for header in (
            "X-ServiceAPI-BurstLimitRemaining",
            "X-ServiceAPI-DailyLimitRemaining",
            "X-ServiceAPI-ExecutionId",
        ):
            assert header in r.headers, (r.request.url, header)
    first = int(responses[1].headers["X-ServiceAPI-BurstLimitRemaining"])
    last = int(responses[-1].headers["X-ServiceAPI-BurstLimitRemaining"])
    assert last < first
    assert (
        responses[1].headers["X-ServiceAPI-ExecutionId"]
        != responses[2].headers["X-ServiceAPI-ExecutionId"]
    )


def test_burst_limit_exceeded(tmp_path) -> None:
    with VaultProcess(tmp_path / "data", extra_args=["--burst-limit", "3"]) as server:
        session = login(server.url)
        url = server.url + API + "/metadata/objects"
        results = [httpx.get(url, headers={"Authorization": session}) for _ in range(4)]
        assert [r.status_code for r in results[:3]] == [200, 200, 200]
        assert results[2].headers["X-ServiceAPI-BurstLimitRemaining"] == "0"
        body = assert_error(results[3], "API_LIMIT_EXCEEDED", 429)
        assert body["responseStatus"] == "FAILURE"
        assert 0 < int(results[3].headers["Retry-After"]) <= 300


def test_every_file_of_the_data_directory_is_private(fresh_vault: VaultProcess) -> None:
    """Records, SQLite's side files and blobs: 0600 files in 0700 directories."""
    import stat

    paths = [fresh_vault.data_dir, *fresh_vault.data_dir.rglob("*")]
    if backend_of(fresh_vault) == "sqlite":
        assert any(p.name.endswith("-wal") for p in paths)
    for path in paths:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, f"{path} has mode {mode:o}"
