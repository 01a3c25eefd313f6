"""Fixtures of the fault tier: every test here mounts for real, against a vault of its own."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import API, login
from vaultfs.testing.mount_process import can_mount
from vaultfs.testing.vault_process import VaultProcess


@pytest.fixture(autouse=True)
def _needs_fuse() -> None:
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")


@pytest.fixture
def api(fresh_vault: VaultProcess) -> Iterator[httpx.Client]:
    """An API client of ``fresh_vault``, as the demo admin."""
    headers = {"Authorization": login(fresh_vault.url)}
    with httpx.Client(base_url=fresh_vault.url + API, headers=headers, timeout=60) as client:
        yield client
