"""Durability and limits over real HTTP: restarts, aborted uploads, call limits."""

from __future__ import annotations

import socket

import httpx
import pytest

from tests.conftest import login
from tests.server.backends import backend_of, bucket_of, incoming_dir, stored_files
from tests.server.helpers import API, api_client, assert_error, assert_ok, upload
from vaultfs.testing.vault_process import VaultProcess, wait_until

#: Files are what these tests are about: they run with the files in a bucket too.
pytestmark = pytest.mark.content_stores


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


def test_aborted_upload_leaves_nothing(
    fresh_vault: VaultProcess, request: pytest.FixtureRequest
) -> None:
    s3 = request.getfixturevalue("s3") if bucket_of(fresh_vault) else None
    incoming = incoming_dir(fresh_vault)
    client = api_client(fresh_vault.url)
    session = client.headers["Authorization"]
    total = assert_ok(client.get("/objects/documents"))["responseDetails"]["total"]
    blobs_before = stored_files(fresh_vault, s3)
    assert blobs_before
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
            lambda: any(incoming.iterdir()),
            what="the upload to reach a temp file",
        )
    # ... and the client went away half-way through the body.
    wait_until(
        lambda: not any(incoming.iterdir()),
        what="the temp file to be removed",
    )
    assert stored_files(fresh_vault, s3) == blobs_before
    assert assert_ok(client.get("/objects/documents"))["responseDetails"]["total"] == total

    # A complete HTTP body whose multipart is cut short is refused the same way.
    short = head + b"abc"  # no closing boundary
    r = client.post(
        "/objects/documents",
        content=short,
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    assert_error(r, "INVALID_DATA", mentions="closing boundary")
    assert stored_files(fresh_vault, s3) == blobs_before
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

    # A call with a session spends the burst. The windows are fixed and the session's
    # vault served other tests before: a new window may start between two calls (a whole
    # run: 1979 left, then 1999), but not twice within two pairs of back-to-back calls.
    def burst_left() -> int:
        r = client.get("/objects/documents", params={"limit": 1})
        return int(r.headers["X-ServiceAPI-BurstLimitRemaining"])

    pairs = [(burst_left(), burst_left()) for _ in range(2)]
    assert any(second < first for first, second in pairs), pairs
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


def _answers(sock: socket.socket, seconds: float) -> bytes:
    """What the server sent within ``seconds`` (b"" when nothing came)."""
    sock.settimeout(seconds)
    try:
        return sock.recv(65536)
    except TimeoutError:
        return b""


def _response(sock: socket.socket) -> bytes:
    """One whole response (head and Content-Length body), read with a deadline."""
    data = b""

    def whole() -> bool:
        nonlocal data
        data += _answers(sock, 1.0)
        head, _, body = data.partition(b"\r\n\r\n")
        lengths = [
            line for line in head.lower().split(b"\r\n") if line.startswith(b"content-length:")
        ]
        return bool(lengths) and len(body) >= int(lengths[0].split(b":")[1])

    wait_until(whole, timeout=10, what="a whole response")
    return data


def test_keep_alive_survives_an_answer_before_the_body(vault_server: VaultProcess) -> None:
    # A request refused before its body is read (an unserved version) whose body
    # arrives late: the server reads the body before answering, so the connection
    # stays usable for the next request (it used to be dropped without a word).
    with socket.create_connection(("127.0.0.1", vault_server.port), timeout=10) as sock:
        sock.sendall(
            b"POST /api/v99.0/objects/documents HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 6\r\n\r\n"
        )
        assert _answers(sock, 0.5) == b""  # no answer while the body is missing
        sock.sendall(b"name=x")
        first = _response(sock)
        assert first.startswith(b"HTTP/1.1 404") and b"MALFORMED_URL" in first
        assert b"connection: close" not in first.lower()
        sock.sendall(b"GET /api/ HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _response(sock).startswith(b"HTTP/1.1 200")
