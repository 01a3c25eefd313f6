"""A document's versions: ``versions/``, ``versions/M.m/`` and the version's file.

A version's directory lists its file and its ``renditions/``; its fields are the
version's record (``Tree.version_record``); its content never changes, so its times
are the version's creation. Removing a version's file (``-o allow_delete``) deletes
that version, except the document's only one, which goes with the document; the
version's directory then goes with it (``Overlay.deleted_version``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from vaultfs import errors
from vaultfs.bridge.fs.attributes import Attr
from vaultfs.bridge.fs.families import Parts, is_writing
from vaultfs.bridge.fs.opening import Opened
from vaultfs.bridge.fs.paths import DisplayPaths
from vaultfs.bridge.nodes.family import Family
from vaultfs.bridge.tree import keys
from vaultfs.bridge.tree.filenames import Sibling, assign_names
from vaultfs.bridge.tree.keys import Kind, NodeKey, VersionKey
from vaultfs.bridge.tree.tree import Tree
from vaultfs.bridge.tree.versions import latest_version

__all__ = ["Versions"]


def _version(key: NodeKey) -> tuple[int, int]:
    """The version a version's node names (the family is given its own keys only)."""
    return cast(VersionKey, key).version


class Versions(Family):
    key_type = VersionKey

    async def children(self, tree: Tree, key: NodeKey) -> Mapping[str, NodeKey]:
        doc_id = key.doc_id
        if key.kind == Kind.VERS:
            details = await tree.details(doc_id)
            return {f"{M}.{m}": keys.version(doc_id, M, m) for M, m in details.versions}
        if key.kind != Kind.VER:
            return await super().children(tree, key)
        await tree.details(doc_id)
        major, minor = _version(key)
        record = await tree.version_record(doc_id, major, minor)
        listing: dict[str, NodeKey] = {"renditions": keys.version_renditions(doc_id, major, minor)}
        filename = record.get("filename__v")
        if filename:
            (name,) = assign_names(
                [Sibling(str(filename), str(doc_id), is_file=True)], reserved={"renditions"}
            )
            listing[name] = keys.version_source(doc_id, major, minor)
        return listing

    def step(self, paths: DisplayPaths, key: NodeKey) -> tuple[NodeKey, str] | None:
        doc_id = key.doc_id
        if key.kind == Kind.VERS:
            return keys.document(doc_id), "versions"
        major, minor = _version(key)
        if key.kind == Kind.VER:
            return keys.versions(doc_id), f"{major}.{minor}"
        parent = keys.version(doc_id, major, minor)
        return parent, paths.listed(parent, key) or paths.filename(doc_id) or "?"

    async def attributes(self, parts: Parts, key: NodeKey, ino: int) -> Attr:
        doc_id, attributes = key.doc_id, parts.attributes
        if key.kind == Kind.VERS:
            mtime, ctime = await attributes.document_times(doc_id, directory=True)
            return attributes.directory(ino, mtime, ctime)
        mtime, ctime = await attributes.document_times(doc_id, version=_version(key))
        if key.kind == Kind.VER:
            return attributes.directory(ino, mtime, ctime)
        return await attributes.vault_file(key, ino, mtime, ctime)

    async def open(self, parts: Parts, key: NodeKey, ino: int, flags: int) -> Opened:
        if key.kind != Kind.VSRC or is_writing(flags):
            return await super().open(parts, key, ino, flags)
        doc_id = key.doc_id
        # A version's content never changes.
        return await parts.opener.vault_content(
            key, ino, lambda size: parts.prefetch.source_opened(doc_id, size), share=True
        )

    async def fields(self, parts: Parts, key: NodeKey) -> dict[str, Any]:
        if key.kind == Kind.VERS:
            return {}
        version = _version(key)
        record = await parts.tree.version_record(key.doc_id, *version)
        # The latest version's fields are set through the document.
        latest = version == latest_version(parts.tree.record(key.doc_id))
        return parts.write.fields.shown(key.doc_id, None if latest else version, record)

    async def set_field(self, parts: Parts, key: NodeKey, name: str, value: bytes | None) -> None:
        if key.kind == Kind.VERS:
            await super().set_field(parts, key, name, value)
            return
        record = await self.fields(parts, key)
        await parts.write.fields.set(key.doc_id, _version(key), record, name, value)

    async def unlink(self, parts: Parts, key: NodeKey, name: str) -> None:
        if key.kind != Kind.VSRC:
            await super().unlink(parts, key, name)
            return
        parts.overlay.deleting()
        doc_id, (major, minor) = key.doc_id, _version(key)
        details = await parts.tree.details(doc_id)
        if len(details.versions) <= 1:
            # The vault keeps a document's only version: it goes with the document.
            parts.overlay.hide(key)
            return
        await parts.write.deletions.version(doc_id, major, minor)
        parts.overlay.version_deleted(doc_id, major, minor)
        parts.tree.invalidate(doc_id)
        await parts.tree.reload(doc_id)

    async def rmdir(self, parts: Parts, parent: NodeKey, key: NodeKey, name: str) -> None:
        if key.kind == Kind.VSRC:
            raise errors.NotADirectory(name)
        parts.overlay.deleting()
        await parts.overlay.hide_empty(key, name)
