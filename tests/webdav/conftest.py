"""Fixtures of the WebDAV tests: a ``vaultfs webdav`` front of the module's vault, and
an HTTP client of it."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from vaultfs.testing.vault_process import VaultProcess
from vaultfs.testing.webdav_process import WebdavProcess


@pytest.fixture(scope="module")
def front(
    module_vault: VaultProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WebdavProcess]:
    process = WebdavProcess(module_vault.url, tmp_path_factory.mktemp("webdav"))
    try:
        yield process.start()
    finally:
        process.stop()


@pytest.fixture
def dav(front: WebdavProcess) -> Iterator[httpx.Client]:
    # Bodies of hundreds of MiB go through it (test_bodies): a generous timeout.
    with httpx.Client(base_url=front.address, timeout=600) as client:
        yield client
