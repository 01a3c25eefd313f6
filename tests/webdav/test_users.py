"""The front beyond loopback: served over TLS only, where each WebDAV user signs in with
their own vault credentials (Basic) and gets a core of their own; a wrong password is
401; a second user's LOCK of a document the first holds is 423 naming the holder; no
name or password of theirs reaches the log or the disk."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from tests.webdav.test_webdav_front import (
    latest_bytes,
    lock_body,
    record,
    source_path,
    version_count,
)
from vaultfs.testing.vault_process import ADMIN, DEMO_PASSWORD, EDITOR, VIEWER, VaultProcess
from vaultfs.testing.webdav_process import WebdavProcess


def outward_address() -> str | None:
    """An address of this machine beyond loopback, None when it has none."""
    found = subprocess.run(
        ["ip", "-4", "-o", "addr", "show", "scope", "global"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    return next((word.split("/")[0] for word in found if "/" in word and "." in word), None)


@pytest.fixture(scope="module")
def host() -> str:
    address = outward_address()
    if address is None:
        pytest.skip("no address beyond loopback on this machine")
    return address


@pytest.fixture(scope="module")
def tls(host: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=vaultfs webdav test",
            "-addext",
            f"subjectAltName=IP:{host}",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    key.chmod(0o600)
    return cert, key


@pytest.fixture(scope="module")
def front(
    module_vault: VaultProcess,
    host: str,
    tls: tuple[Path, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[WebdavProcess]:
    process = WebdavProcess(
        module_vault.url, tmp_path_factory.mktemp("webdav-users"), host=host, tls=tls
    )
    try:
        yield process.start()
    finally:
        process.stop()


def signed_in(front: WebdavProcess, user: str, password: str = DEMO_PASSWORD) -> httpx.Client:
    assert front.tls is not None
    trusted = ssl.create_default_context(cafile=str(front.tls[0]))
    return httpx.Client(base_url=front.address, auth=(user, password), verify=trusted, timeout=60)


def test_each_user_signs_in_and_is_served_as_themselves(front: WebdavProcess) -> None:
    with signed_in(front, ADMIN) as admin, signed_in(front, EDITOR) as editor:
        for client, user in ((admin, ADMIN), (editor, EDITOR)):
            r = client.request("PROPFIND", "/", headers={"Depth": "1"})
            assert r.status_code == 207, r.text
            assert "/General/" in r.text
            status = client.get("/.vaultfs/status").json()
            assert status["user"] == user  # a core of their own, signed in as them
            assert status["api_calls"] < 40  # a sign-in and a listing


def test_a_user_changes_only_what_the_vault_lets_them(
    front: WebdavProcess, module_api: httpx.Client
) -> None:
    with signed_in(front, ADMIN) as admin, signed_in(front, VIEWER) as viewer:
        path = quote(source_path(admin, 6))
        versions = version_count(module_api, 6)
        assert viewer.get(path).content == latest_bytes(module_api, 6)  # may read
        assert viewer.put(path, content=b"a viewer's save").status_code == 403
        assert version_count(module_api, 6) == versions
        assert record(module_api, 6)["document"]["locked__v"] is False


def test_no_or_a_wrong_password_is_401(front: WebdavProcess) -> None:
    assert front.tls is not None
    trusted = ssl.create_default_context(cafile=str(front.tls[0]))
    r = httpx.request("PROPFIND", front.address + "/", headers={"Depth": "0"}, verify=trusted)
    assert r.status_code == 401
    assert r.headers["WWW-Authenticate"].startswith("Basic ")
    for user, password in ((EDITOR, "not-the-password"), ("nobody@vaultfs.demo", DEMO_PASSWORD)):
        with signed_in(front, user, password) as wrong:
            assert wrong.request("PROPFIND", "/", headers={"Depth": "0"}).status_code == 401
            assert wrong.put("/General/x.txt", content=b"never").status_code == 401
    with signed_in(front, ADMIN) as admin:  # the right one still signs in
        assert admin.request("PROPFIND", "/", headers={"Depth": "0"}).status_code == 207


def test_a_second_users_lock_is_423_naming_the_holder(
    front: WebdavProcess, module_api: httpx.Client
) -> None:
    with signed_in(front, ADMIN) as admin, signed_in(front, EDITOR) as editor:
        path = quote(source_path(admin, 7))
        versions = version_count(module_api, 7)
        r = admin.request("LOCK", path, headers={"Timeout": "Second-600"}, content=lock_body())
        assert r.status_code == 200, r.text
        token = r.headers["Lock-Token"]
        try:
            holder = module_api.get("/objects/documents/7/lock").json()["lock"]["locked_by__v"]
            r = editor.request("LOCK", path, content=lock_body())
            assert r.status_code == 423, r.text
            assert r.headers["X-Vaultfs-Locked-By"] == str(holder)
            assert editor.put(path, content=b"never written").status_code == 423
            assert version_count(module_api, 7) == versions
        finally:
            r = admin.request("UNLOCK", path, headers={"Lock-Token": token})
        assert r.status_code == 204
        assert record(module_api, 7)["document"]["locked__v"] is False


def test_nothing_of_the_users_is_in_the_log_or_on_disk(front: WebdavProcess) -> None:
    with signed_in(front, ADMIN) as admin:  # signed in at least once
        assert admin.request("PROPFIND", "/", headers={"Depth": "1"}).status_code == 207
    log = front.log()
    assert "a user signed in" in log
    for secret in (ADMIN, EDITOR, DEMO_PASSWORD):
        assert secret not in log
    for folder, _, files in os.walk(front.cache_dir):
        for name in files:
            data = (Path(folder) / name).read_bytes()
            for secret in (ADMIN, EDITOR, DEMO_PASSWORD):
                assert secret.encode() not in data, (folder, name)


def test_beyond_loopback_without_tls_is_refused(host: str, module_vault: VaultProcess) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "vaultfs", "webdav", module_vault.url, "--listen", f"{host}:8818"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2
    assert "--tls-cert" in result.stderr
