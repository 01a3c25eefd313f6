"""Where a file node's bytes come from: its content-cache key, size estimate and fetch.

Owns the one mapping from a file node (latest or version source file, rendition,
attachment) to the key it is cached under and the client download that fills it. The
key names immutable content: a source file by version and checksum (so the latest file
and its ``versions/M.m`` twin share one cached copy), a rendition by version, type and
the version's modification time (a rendition may be replaced), an attachment by its
version and checksum.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vaultfs.bridge.content.blobcache import Fetch
from vaultfs.bridge.tree.keys import (
    AttachmentKey,
    NodeKey,
    RenditionKey,
    SourceKey,
    VersionKey,
    typed,
)
from vaultfs.bridge.tree.tree import Tree
from vaultfs.bridge.tree.versions import latest_version
from vaultfs.client import VaultApi

__all__ = ["Content", "Contents", "source_key"]


@dataclass(frozen=True)
class Content:
    key: str
    #: a guess at the size in bytes until a download tells the exact one
    estimate: int
    fetch: Fetch


#: The size listed for content whose size the vault does not tell
_UNKNOWN_SIZE = 4096


#: md5 of no content at all: a source file with this checksum is empty, exactly
_EMPTY_MD5 = "d41d8cd98f00b204e9800998ecf8427e"


def _estimate_kb(record: dict[str, Any]) -> int:
    # size__v is documented in KB: an estimate only. A file with content is never
    # listed as empty: a missing or zero size__v lists one block.
    if str(record.get("md5checksum__v") or "").lower() == _EMPTY_MD5:
        return 0
    try:
        return max(0, int(float(record.get("size__v") or 0) * 1024)) or _UNKNOWN_SIZE
    except (TypeError, ValueError):
        return _UNKNOWN_SIZE


def source_key(doc_id: int, record: dict[str, Any]) -> str:
    """The content key of the source file ``record`` (a version's record) describes."""
    major, minor = latest_version(record) or (0, 0)
    return f"src/{doc_id}/{major}.{minor}/{record.get('md5checksum__v') or ''}"


class Contents:
    """The content of the file nodes, read with ``client``."""

    def __init__(self, tree: Tree, client: VaultApi) -> None:
        self._tree = tree
        self._client = client

    def generation(self) -> int:
        """Moves whenever the index learns a change: a file's content is the same while
        it stays (``fs.handles.LatestSource`` asks again only then)."""
        return self._tree.index.generation

    def _source(self, doc_id: int, record: dict[str, Any]) -> Content:
        major, minor = latest_version(record) or (0, 0)
        client = self._client
        return Content(
            source_key(doc_id, record),
            _estimate_kb(record),
            lambda offset: client.download_file(doc_id, major, minor, offset=offset),
        )

    def latest_source(self, doc_id: int) -> Content | None:
        """The content of ``doc_id``'s latest source file, from the index alone (None: the
        document is not indexed, or has no file)."""
        record = self._tree.index.get(doc_id)
        if record is None or not record.get("filename__v"):
            return None
        return self._source(doc_id, record)

    async def of(self, key: NodeKey) -> Content:
        """The content of file node ``key`` (may fetch the version record or details):
        found by the key's type, as its family would."""
        key = typed(key)
        if not key.is_file:
            raise ValueError(f"{key!r} is not a file with content")
        if isinstance(key, SourceKey):
            return self._source(key.doc_id, self._tree.record(key.doc_id))
        if isinstance(key, VersionKey):
            return await self._version_source(key)
        if isinstance(key, RenditionKey):
            return await self._rendition(key)
        if isinstance(key, AttachmentKey):
            return await self._attachment(key)
        raise ValueError(f"{key!r} is not a file with content")

    async def _version_source(self, key: VersionKey) -> Content:
        doc_id, (major, minor) = key.doc_id, key.version
        record = dict(await self._tree.version_record(doc_id, major, minor))
        record.setdefault("major_version_number__v", major)
        record.setdefault("minor_version_number__v", minor)
        return self._source(doc_id, record)

    async def _attachment(self, key: AttachmentKey) -> Content:
        client, doc_id, attachment_id = self._client, key.doc_id, key.attachment_id
        details = await self._tree.details(doc_id)
        record = details.attachments[attachment_id]
        version = int(record["version__v"]) if record.get("version__v") else None
        return Content(
            f"att/{doc_id}/{attachment_id}/{version}/{record.get('md5checksum__v') or ''}",
            int(record.get("size__v") or 0),
            lambda offset: client.download_attachment(
                doc_id, attachment_id, version, offset=offset
            ),
        )

    async def _rendition(self, key: RenditionKey) -> Content:
        tree, client, doc_id = self._tree, self._client, key.doc_id
        version = key.of_version
        if version is None:
            record = tree.record(doc_id)
            major, minor = latest_version(record) or (0, 0)
        else:
            major, minor = version
            record = await tree.version_record(doc_id, major, minor)
        rtype = key.rtype
        # A rendition can be replaced (PUT), which bumps its version's modification
        # time: with that time in the key, a replaced one is never served from the cache.
        stamp = record.get("version_modified_date__v") or ""
        return Content(
            f"rend/{doc_id}/{major}.{minor}/{rtype}/{stamp}",
            # The API tells no rendition size; 0 would make tools take it for empty
            # (``file`` says "empty"). The exact size replaces this once known.
            _UNKNOWN_SIZE,
            lambda offset: client.download_rendition(doc_id, rtype, major, minor, offset=offset),
        )
