"""Fixtures shared by every test tier: a real local vault server process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.vaultproc import ADMIN, DEMO_PASSWORD, EDITOR, VIEWER, VaultProcess


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


def login(url: str, username: str = ADMIN, password: str = DEMO_PASSWORD) -> str:
    """Log in over plain HTTP and return the session id (for server-level tests)."""
    r = httpx.post(f"{url}/api/v25.1/auth", data={"username": username, "password": password})
    body = r.json()
    assert body["responseStatus"] == "SUCCESS", body
    session: str = body["sessionId"]
    return session


@pytest.fixture
def admin_session(vault_server: VaultProcess) -> str:
    return login(vault_server.url)


__all__ = ["ADMIN", "DEMO_PASSWORD", "EDITOR", "VIEWER", "login"]
