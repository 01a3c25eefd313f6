"""Relationships: a document's ``relationships/``, a type's directory, and links.

What the directories hold is ``tree.relationships``' (one directory per type the
document has a relationship of, reachable by name for every type its metadata allows;
one symbolic link per relationship); ``ln -s`` in a type's directory makes a
relationship and ``rm`` of a link deletes it (``write.linking``).
"""

from __future__ import annotations

import stat
from collections.abc import Mapping
from typing import cast

from vaultfs import errors
from vaultfs.bridge.fs.attributes import Attr, ns
from vaultfs.bridge.fs.families import Parts
from vaultfs.bridge.fs.paths import DisplayPaths
from vaultfs.bridge.nodes.family import Family
from vaultfs.bridge.tree import keys
from vaultfs.bridge.tree.keys import Kind, NodeKey, RelationshipKey
from vaultfs.bridge.tree.tree import Tree

__all__ = ["Relationships"]


class Relationships(Family):
    key_type = RelationshipKey

    async def children(self, tree: Tree, key: NodeKey) -> Mapping[str, NodeKey]:
        if key.kind == Kind.RELS:
            return await tree.relationships.type_dirs(key.doc_id)
        if isinstance(key, RelationshipKey) and key.kind == Kind.RELT:
            return await tree.relationships.links_listing(key.doc_id, key.relationship_type)
        return await super().children(tree, key)

    async def unlisted(self, tree: Tree, key: NodeKey, name: str) -> NodeKey | None:
        if key.kind != Kind.RELS or name in await tree.children(key):
            return None
        return await tree.relationships.unlisted_type_dir(key, name)

    def step(self, paths: DisplayPaths, key: NodeKey) -> tuple[NodeKey, str] | None:
        if key.kind == Kind.RELS:
            return keys.document(key.doc_id), "relationships"
        if key.kind == Kind.RELT:
            parent = keys.relationships(key.doc_id)
            return parent, paths.listed(parent, key) or cast(RelationshipKey, key).relationship_type
        return paths.tree.where_listed(key, Kind.RELT)

    async def attributes(self, parts: Parts, key: NodeKey, ino: int) -> Attr:
        attributes = parts.attributes
        if key.kind == Kind.RLINK:  # its size is its text's
            size, created = await parts.tree.relationships.link_stat(key)
            mode = stat.S_IFLNK | 0o777
            return attributes.make(ino, mode, size, ns(created), ns(created))
        directory = key.kind == Kind.RELS
        mtime, ctime = await attributes.document_times(key.doc_id, directory=directory)
        return attributes.directory(ino, mtime, ctime, writable=key.kind == Kind.RELT)

    async def readlink(self, parts: Parts, key: NodeKey) -> str:
        if key.kind != Kind.RLINK:
            return await super().readlink(parts, key)
        return await parts.tree.relationships.link_text(key)

    async def symlink(self, parts: Parts, parent: NodeKey, name: str, target: str) -> NodeKey:
        return await parts.write.links.symlink(parent, name, target)

    async def unlink_in(self, parts: Parts, parent: NodeKey, name: str) -> None:
        if parent.kind != Kind.RELT:
            await super().unlink_in(parts, parent, name)
            return
        await parts.write.links.unlink(parent, name)

    async def rmdir(self, parts: Parts, parent: NodeKey, key: NodeKey, name: str) -> None:
        if key.kind == Kind.RLINK:
            raise errors.OperationNotPermitted(f"{name} cannot be removed")
        parts.overlay.deleting()
        await parts.overlay.hide_empty(key, name)
