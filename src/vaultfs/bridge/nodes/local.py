"""The mount's pending files: scratch files and the folders made with mkdir.

A scratch file (``write.scratch``) is any new name in a document directory or a type
folder, and a file written in ``renditions/`` or ``attachments/``; its content stays on
this machine until it is renamed over a document's source file (a check-in), becomes a
new document or upload when its last writer closes it (``write.new_documents``), or, in
a document directory under a name no temporary file has, an attachment once it is left
alone for a moment (``write.drops``), or is removed. A new folder is a directory made
with mkdir in a type folder: its first file that becomes a document makes the folder
that document's directory. Their fields are the fields a new document will take
(``write.new_fields``).
"""

from __future__ import annotations

import stat
from collections.abc import Mapping
from typing import Any

from vaultfs import errors
from vaultfs.bridge.fs.attributes import Attr
from vaultfs.bridge.fs.families import Change, Move, Parts
from vaultfs.bridge.fs.opening import Opened
from vaultfs.bridge.fs.paths import DisplayPaths
from vaultfs.bridge.nodes.family import Family
from vaultfs.bridge.tree import keys, nodes
from vaultfs.bridge.tree.keys import Kind, LocalKey, NodeKey
from vaultfs.bridge.tree.tree import Tree
from vaultfs.bridge.write.scratch import ScratchFile, is_drop, makes_document

__all__ = ["Local"]


class Local(Family):
    key_type = LocalKey

    async def children(self, tree: Tree, key: NodeKey) -> Mapping[str, NodeKey]:
        if key.kind == Kind.NEWDIR:
            return {}  # its files are the overlay's (``fs.overlay``)
        return await super().children(tree, key)

    def step(self, paths: DisplayPaths, key: NodeKey) -> tuple[NodeKey, str] | None:
        return paths.local(key)

    async def attributes(self, parts: Parts, key: NodeKey, ino: int) -> Attr:
        if key.kind == Kind.NEWDIR:
            ctime = parts.overlay.new_folder(key).ctime_ns
            return parts.attributes.directory(ino, ctime, ctime, writable=True, new=True)
        scratch = parts.overlay.scratch_file(key)
        return parts.attributes.file(
            ino, scratch.mode, scratch.size(), scratch.mtime_ns, scratch.ctime_ns
        )

    async def open(self, parts: Parts, key: NodeKey, ino: int, flags: int) -> Opened:
        if key.kind == Kind.NEWDIR:
            return await super().open(parts, key, ino, flags)
        return parts.opener.scratch(parts.overlay.scratch_file(key), flags)

    async def setattr(self, parts: Parts, key: NodeKey, change: Change) -> None:
        if key.kind == Kind.NEWDIR:
            await super().setattr(parts, key, change)
            return
        scratch = parts.overlay.scratch_file(key)
        if change.size is not None:
            scratch.truncate(change.size)
        if change.mode is not None:
            scratch.mode = stat.S_IMODE(change.mode)
        if change.mtime_ns is not None:
            scratch.mtime_ns = change.mtime_ns

    async def fields(self, parts: Parts, key: NodeKey) -> dict[str, Any]:
        if key.kind == Kind.NEWDIR:
            return {}
        return await parts.write.new_documents.fields_of_file(key)

    async def set_field(self, parts: Parts, key: NodeKey, name: str, value: bytes | None) -> None:
        if key.kind == Kind.NEWDIR:
            await super().set_field(parts, key, name, value)
            return
        await parts.write.new_documents.set_field(key, name, value)
        parts.freshness.new_file_done()  # the fields complete: the document is made

    async def create(self, parts: Parts, parent: NodeKey, name: str, mode: int) -> NodeKey:
        if parent.kind != Kind.NEWDIR:
            return await super().create(parts, parent, name, mode)
        return parts.overlay.store().create(parent, name, mode).key

    async def unlink(self, parts: Parts, key: NodeKey, name: str) -> None:
        if key.kind == Kind.NEWDIR:
            await super().unlink(parts, key, name)
            return
        parts.overlay.unshadow(key)
        parts.overlay.store().unname(key)
        await parts.write.editor_locks.gone(key)  # an editor's lock file ends its check-out

    async def rmdir(self, parts: Parts, parent: NodeKey, key: NodeKey, name: str) -> None:
        if key.kind != Kind.NEWDIR:
            await super().rmdir(parts, parent, key, name)
            return
        store = parts.overlay.store()
        if store.names_in(key):
            raise errors.DirectoryNotEmpty(name)
        store.unname(key)

    async def rename(self, parts: Parts, move: Move) -> None:
        store = parts.overlay.store()
        scratch = store.file(move.source)
        if scratch is not None:
            await _rename_scratch(parts, scratch, move.target, move.new, move.new_name)
        elif move.source.kind == Kind.NEWDIR and move.target is None and move.new == move.old:
            store.rename(move.source, move.new, move.new_name)
        else:
            await super().rename(parts, move)


async def _rename_scratch(
    parts: Parts, scratch: ScratchFile, target: NodeKey | None, new: NodeKey, new_name: str
) -> None:
    store, overlay = parts.overlay.store(), parts.overlay
    if new.kind in nodes.UPLOAD_DIRS:
        await parts.write.new_documents.rename_to_upload(scratch, target, new, new_name)
        return
    if new.kind == Kind.DOC:
        doc_id = new.doc_id
        if target == keys.source(doc_id) or new_name == await overlay.source_name(doc_id):
            # The save of an editor, sed -i or rsync: check the content in.
            overlay.unhide(keys.source(doc_id))
            await parts.write.editing.check_in_file(doc_id, scratch.path)
            overlay.aliases[scratch.key] = keys.source(doc_id)
            store.unname(scratch.key)
            return
    if target is not None:
        if store.file(target) is None:
            if parts.registry.is_file(target):  # the source, .events.jsonl, .hidden
                raise errors.OperationNotPermitted(new_name)
            raise errors.IsADirectory(new_name)
        store.unname(target)
    if new.kind not in nodes.NEW_DOCUMENT_DIRS and new.kind != Kind.DOC:
        raise errors.CrossDevice("scratch files stay in document and type folders")
    store.rename(scratch.key, new, new_name)
    if scratch.writers.count == 0 and (
        makes_document(scratch.parent, scratch.name) or is_drop(scratch.parent, scratch.name)
    ):
        # (a drop only starts its grace: ``write.drops``)
        await parts.write.new_documents.make_document(scratch)
