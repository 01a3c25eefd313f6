"""The vault's folders: the root and the type, subtype and classification folders.

A folder lists its child folders and the documents in it (``Tree.list_folder``); a new
file in a type folder is a scratch file that becomes a new document when closed, a
directory made there (mkdir) a new folder whose files do; the folders' fields are the
defaults new files in them take (``write.new_fields``). rmdir of an emptied folder
succeeds (it goes with its last document).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from vaultfs import errors
from vaultfs.bridge.fs.attributes import Attr, ns
from vaultfs.bridge.fs.families import Parts
from vaultfs.bridge.fs.paths import DisplayPaths
from vaultfs.bridge.nodes.family import Family
from vaultfs.bridge.tree import keys
from vaultfs.bridge.tree.keys import ROOT, FolderKey, NodeKey
from vaultfs.bridge.tree.tree import Tree

__all__ = ["Folders"]


class Folders(Family):
    key_type = FolderKey

    async def children(self, tree: Tree, key: NodeKey) -> Mapping[str, NodeKey]:
        return await tree.list_folder(key)

    def step(self, paths: DisplayPaths, key: NodeKey) -> tuple[NodeKey, str] | None:
        if key == ROOT:
            return None
        *above, name = cast(FolderKey, key).labels  # the family is given its own keys only
        parent = keys.folder(*above)
        return parent, paths.listed(parent, key) or name

    async def attributes(self, parts: Parts, key: NodeKey, ino: int) -> Attr:
        tree = parts.tree
        if key != ROOT and not tree.folder_exists(key):
            raise errors.NotFound("folder no longer exists")
        mtime = ns(tree.folder_mtime(key))
        return parts.attributes.directory(ino, mtime, mtime, writable=key != ROOT, new=True)

    async def fields(self, parts: Parts, key: NodeKey) -> dict[str, Any]:
        if key == ROOT:
            return {}
        return parts.write.new_documents.new_fields.of_folder(key)

    async def set_field(self, parts: Parts, key: NodeKey, name: str, value: bytes | None) -> None:
        if key == ROOT:
            await super().set_field(parts, key, name, value)
            return
        await parts.write.new_documents.set_field(key, name, value)
        parts.freshness.new_file_done()  # the fields complete: the document is made

    async def create(self, parts: Parts, parent: NodeKey, name: str, mode: int) -> NodeKey:
        if parent == ROOT:
            return await super().create(parts, parent, name, mode)
        return parts.overlay.store().create(parent, name, mode).key

    def mkdir(self, parts: Parts, parent: NodeKey, name: str) -> NodeKey:
        if parent == ROOT:
            return super().mkdir(parts, parent, name)
        return parts.overlay.store().mkdir(parent, name).key

    async def rmdir(self, parts: Parts, parent: NodeKey, key: NodeKey, name: str) -> None:
        if key == ROOT:
            await super().rmdir(parts, parent, key, name)
            return
        parts.overlay.deleting()
        if not parts.tree.folder_exists(key):
            return  # its last document is gone: so is the folder
        await parts.overlay.hide_empty(key, name)
