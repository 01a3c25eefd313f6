"""Fixtures of the bridge tests: a real ``vaultfs mount --foreground`` of a real server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mountproc import MountProcess, can_mount
from tests.vaultproc import VaultProcess


def _mount(url: str, root: Path) -> Iterator[MountProcess]:
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    mount = MountProcess(url, root)
    try:
        yield mount.start()
    finally:
        mount.stop()


@pytest.fixture(scope="module")
def shared_mount(
    vault_server: VaultProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MountProcess]:
    """A mount of the session's demo vault, for tests that only read."""
    yield from _mount(vault_server.url, tmp_path_factory.mktemp("mount"))


@pytest.fixture
def own_mount(fresh_vault: VaultProcess, tmp_path: Path) -> Iterator[MountProcess]:
    """A mount of a vault of this test's own, for tests that change documents."""
    yield from _mount(fresh_vault.url, tmp_path)
