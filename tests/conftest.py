"""Fixtures shared by every test tier: a real local vault server process, its API, a
mount of it, and one LibreOffice for the whole run."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests import parallel
from tests.programs import Office, need, need_uno
from tests.tls_once import share_default_tls
from vaultfs.testing.mount_process import MountProcess, can_mount
from vaultfs.testing.vault_process import ADMIN, DEMO_PASSWORD, EDITOR, VIEWER, VaultProcess
from vaultfs.testing.warm_start import WARM_STARTS

#: the API version the tests speak
API = "/api/v25.1"


def pytest_configure(config: pytest.Config) -> None:
    """httpx's default TLS settings made once per process (tests/tls_once.py); the
    vault servers and mounts forked from processes that imported their stacks once
    (``vaultfs.testing.warm_start``), unless the run says otherwise
    (``VAULTFS_WARM_STARTS=0``)."""
    share_default_tls()
    os.environ.setdefault(WARM_STARTS, "1")


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> Iterator[None]:
    """In a worker of a parallel run, the units of work and their order (tests/parallel.py):
    the tests that go out alone are marked before xdist reads the groups, and the units
    ordered once every other hook (pytest's own order of fixtures) has had its say."""
    if parallel.in_worker(config):
        parallel.mark_apart(items)
    result = yield
    if parallel.in_worker(config):
        parallel.name_groups(items)
        parallel.order_units(items)
    return result


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Parallel runs share the suite out by file or by test, heaviest first (tests/parallel.py)."""
    return parallel.make_scheduler(config, log)


@pytest.fixture(scope="session")
def vault_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    """One demo vault for the whole run; tests must not depend on others' changes."""
    server = VaultProcess(tmp_path_factory.mktemp("vault") / "data")
    with server:
        yield server


@pytest.fixture
def fresh_vault(tmp_path: Path) -> Iterator[VaultProcess]:
    """A demo vault of this test's own, which the test may stop and start."""
    server = VaultProcess(tmp_path / "data")
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture
def fresh_api(fresh_vault: VaultProcess) -> Iterator[httpx.Client]:
    """An API client of ``fresh_vault``, as the demo admin (its session outlives a
    stop and start of the vault: the local vault keeps sessions on disk)."""
    headers = {"Authorization": login(fresh_vault.url)}
    with httpx.Client(base_url=fresh_vault.url + API, headers=headers, timeout=60) as client:
        yield client


@pytest.fixture(scope="module")
def module_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    """A demo vault of the test module's own: its tests change documents (each its own)."""
    with VaultProcess(tmp_path_factory.mktemp("module-vault") / "data") as server:
        yield server


@pytest.fixture(scope="module")
def module_mount(
    module_vault: VaultProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MountProcess]:
    """A real mount of ``module_vault`` as the demo admin, for the module's tests."""
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    # The default poll interval: what the mount shows after its own saves never waits
    # for a poll; what tests make through the API is shown by ``process.refresh()``.
    process = MountProcess(module_vault.url, tmp_path_factory.mktemp("module-mount"))
    try:
        yield process.start()
    finally:
        process.stop()


@pytest.fixture(scope="module")
def module_api(module_vault: VaultProcess) -> Iterator[httpx.Client]:
    """An HTTP client of ``module_vault``'s API, logged in as the demo admin."""
    headers = {"Authorization": login(module_vault.url)}
    with httpx.Client(base_url=module_vault.url + API, headers=headers, timeout=60) as client:
        yield client


def login(url: str, username: str = ADMIN, password: str = DEMO_PASSWORD) -> str:
    """Log in over plain HTTP and return the session id (for server-level tests)."""
    r = httpx.post(f"{url}/api/v25.1/auth", data={"username": username, "password": password})
    body = r.json()
    assert body["responseStatus"] == "SUCCESS", body
    session: str = body["sessionId"]
    return session


def admin_client(url: str) -> httpx.Client:
    """An HTTP client of the API of the vault at ``url``, logged in as the demo admin
    (another client than a mount under test); use it in a ``with``."""
    return httpx.Client(base_url=url + API, headers={"Authorization": login(url)}, timeout=60)


def upload_draft(api: httpx.Client, doc_id: int, filename: str, content: bytes) -> None:
    """A new draft of ``doc_id`` holding ``content``, made through the API."""
    r = api.post(
        f"/objects/documents/{doc_id}",
        data={"createDraft": "uploadedContent"},
        files={"file": (filename, content)},
    )
    assert r.json()["responseStatus"] == "SUCCESS", r.text


@pytest.fixture
def admin_session(vault_server: VaultProcess) -> str:
    return login(vault_server.url)


__all__ = ["ADMIN", "API", "DEMO_PASSWORD", "EDITOR", "VIEWER", "login"]


@pytest.fixture(scope="session")
def office(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Office]:
    """One headless LibreOffice for the whole run (tests/apps, tests/webdav)."""
    need("soffice")
    need_uno()
    instance = Office(tmp_path_factory.mktemp("office"))
    try:
        yield instance.start()
    finally:
        instance.stop()
