"""Request bodies of the WebDAV front: a PUT larger than memory would hold is received
into a private file and saved as one version with the exact bytes; a body over the
front's limit is answered 413 and saves nothing; a chunked body is a save too."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx

from tests.webdav.test_webdav_front import record, source_path, version_count
from vaultfs.testing.vault_process import VaultProcess
from vaultfs.testing.webdav_process import WebdavProcess

#: larger than the 256 MiB a body could be when it was held in memory
BIG = 300 << 20
_BLOCK = 1 << 20


def blocks(total: int, seed: bytes) -> Iterator[bytes]:
    """``total`` bytes, made as they are sent: each 1 MiB block differs (its number)."""
    base = hashlib.sha256(seed).digest() * (_BLOCK // 32)
    for n in range(total // _BLOCK):
        yield n.to_bytes(8, "big") + base[8:]


def md5_of(chunks: Iterator[bytes]) -> str:
    digest = hashlib.md5()
    for chunk in chunks:
        digest.update(chunk)
    return digest.hexdigest()


def test_a_put_larger_than_memory_held_is_one_version_with_the_exact_bytes(
    dav: httpx.Client, module_api: httpx.Client, front: WebdavProcess
) -> None:
    path = quote(source_path(dav, 2))
    versions = version_count(module_api, 2)
    r = dav.put(path, content=blocks(BIG, b"big"), headers={"Content-Length": str(BIG)})
    assert r.status_code in (200, 204), r.text
    assert version_count(module_api, 2) == versions + 1
    with module_api.stream("GET", "/objects/documents/2/file") as got:
        assert md5_of(got.iter_bytes(_BLOCK)) == md5_of(blocks(BIG, b"big"))
    assert record(module_api, 2)["document"]["locked__v"] is False
    # The body's file had no name: nothing of it is left in the cache.
    bodies = front.cache_dir / "bodies"
    assert bodies.stat().st_mode & 0o777 == 0o700
    assert list(bodies.iterdir()) == []


def test_a_chunked_put_is_one_version_with_the_exact_bytes(
    dav: httpx.Client, module_api: httpx.Client
) -> None:
    path = quote(source_path(dav, 4))
    versions = version_count(module_api, 4)
    content = os.urandom(3 * _BLOCK + 12345)

    def pieces() -> Iterator[bytes]:  # no length given: sent chunked
        for start in range(0, len(content), 100_000):
            yield content[start : start + 100_000]

    r = dav.put(path, content=pieces())
    assert r.status_code in (200, 204), r.text
    assert version_count(module_api, 4) == versions + 1
    assert module_api.get("/objects/documents/4/file").content == content


def test_a_body_over_the_limit_is_413_and_saves_nothing(
    module_vault: VaultProcess, module_api: httpx.Client, tmp_path: Path
) -> None:
    with (
        WebdavProcess(module_vault.url, tmp_path, args=["--max-upload", "1"]) as small,
        httpx.Client(base_url=small.address, timeout=60) as dav,
    ):
        path = quote(source_path(dav, 8))
        versions = version_count(module_api, 8)
        over = os.urandom(_BLOCK + 1)
        assert dav.put(path, content=over).status_code == 413
        assert dav.put(path, content=iter([over[:_BLOCK], over[_BLOCK:]])).status_code == 413
        assert version_count(module_api, 8) == versions
        assert record(module_api, 8)["document"]["locked__v"] is False
        at_limit = os.urandom(_BLOCK)
        r = dav.put(path, content=at_limit)
        assert r.status_code in (200, 204), r.text
        assert version_count(module_api, 8) == versions + 1
        assert module_api.get("/objects/documents/8/file").content == at_limit
