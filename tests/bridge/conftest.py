"""Fixtures of the bridge tests: the file system over a fake vault, and a real
``vaultfs mount --foreground`` of a real server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import trio

from vaultfs.bridge.core.build import build_daemon
from vaultfs.bridge.daemon.capabilities import ENVIRONMENT as PYFUSE3_FEATURES
from vaultfs.bridge.fs.filesystem import FileSystem
from vaultfs.bridge.fs.options import Options
from vaultfs.testing.mount_process import MountProcess, can_mount
from vaultfs.testing.vault_process import VaultProcess

from .fakevault import FakeVault


def _mount(url: str, root: Path, options: str = "") -> Iterator[MountProcess]:
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    mount = MountProcess(url, root, options=options)
    try:
        yield mount.start()
    finally:
        mount.stop()


#: the ways a mount may run (``vaultfs.bridge.daemon.capabilities``): what the installed
#: pyfuse3 offers (with the project's patch: no OPENDIR, the kernel keeps listings), the
#: other way of keeping listings, and exactly the stock pyfuse3's behaviour
PYFUSE3_WAYS = {"default": None, "cache_readdir": "cache_readdir,xattr_namespaces", "stock": "none"}


@pytest.fixture(params=sorted(PYFUSE3_WAYS))
def pyfuse3_features(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Mounts this test starts run each way of ``PYFUSE3_WAYS``, through the daemon's
    environment. Listed before the mount fixtures (``usefixtures``)."""
    setting = PYFUSE3_WAYS[request.param]
    if setting is None:
        monkeypatch.delenv(PYFUSE3_FEATURES, raising=False)
    else:
        monkeypatch.setenv(PYFUSE3_FEATURES, setting)
    return str(request.param)


@pytest.fixture(scope="module")
def shared_mount(
    vault_server: VaultProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MountProcess]:
    """A mount of the session's demo vault, for tests that only read."""
    yield from _mount(vault_server.url, tmp_path_factory.mktemp("mount"))


@pytest.fixture(scope="module")
def mount(module_mount: MountProcess) -> MountProcess:
    """The module's own mount of its own demo vault (``module_mount``), for tests that
    change documents, each its own."""
    return module_mount


@pytest.fixture(scope="module")
def api(module_api: httpx.Client) -> httpx.Client:
    """An API client of ``mount``'s vault, as the demo admin."""
    return module_api


@pytest.fixture
def own_mount(fresh_vault: VaultProcess, tmp_path: Path) -> Iterator[MountProcess]:
    """A mount of a vault of this test's own, for tests that change documents."""
    yield from _mount(fresh_vault.url, tmp_path)


@pytest.fixture
def invalidated() -> list[int]:
    """Inodes whose attributes the file system told the kernel to forget."""
    return []


@pytest.fixture
def vault() -> FakeVault:
    """A fake vault of four documents: two types, a duplicate name, a hostile name."""
    vault = FakeVault()
    vault.add(
        "Brochure A",
        b"alpha\n" * 1000,
        type_="promotional_piece__c",
        subtype="brochure__c",
        filename="a.txt",
        renditions={"viewable_rendition__v": b"%PDF-a"},
    )
    vault.add("Guide", b"guide\n", filename="guide.txt")
    vault.add("Guide", b"second guide\n", filename="guide.txt")
    vault.add("../../etc", b"hostile\n", filename="../passwd")
    return vault


@pytest.fixture
def forgotten_names() -> list[tuple[int, str]]:
    """Names (parent inode, name) the file system told the kernel to forget."""
    return []


@pytest.fixture
async def core(
    vault: FakeVault,
    invalidated: list[int],
    forgotten_names: list[tuple[int, str]],
    tmp_path: Path,
) -> AsyncIterator[FileSystem]:
    """The file system over ``vault`` (no spool: read-only), its workers running."""
    daemon = build_daemon(
        vault,
        Options(url="http://vault", user="me"),
        content_dir=tmp_path / "cache",
        cache_size=1 << 30,
        invalidate_attr=invalidated.append,
        invalidate_entry=lambda parent, name, deleted=0: forgotten_names.append((parent, name)),
    )
    await daemon.index.build()
    # What the first reading of the index told the kernel (nothing held yet) is not
    # what the tests look at.
    invalidated.clear()
    forgotten_names.clear()
    async with trio.open_nursery() as nursery:
        await nursery.start(daemon.blobs.run)
        yield daemon.filesystem
        nursery.cancel_scope.cancel()
