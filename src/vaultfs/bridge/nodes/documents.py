"""Documents: a document's directory and its ``.events.jsonl``.

A document's directory lists its source file and its fixed subdirectories
(``versions``, ``renditions``, ``attachments``, ``relationships``); its fields are the
document's record. A new name in it is a scratch file, except the source file's own
name after the source was renamed away (vim's backup), which is the source file again,
and an editor's lock file for the source file checks the document out
(``write.editor_locks``); one held elsewhere is listed (``editor_locks``), unless the
front the tree is served to tells a check-out its own way (WebDAV: LOCK answered 423).
Renaming the directory in its folder renames the document; removing it (with
``-o allow_delete``, once empty) deletes the document. Its events file is reachable
by name only and read at open (``lifecycle.events``), as is its ``.hidden``
(``hidden``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from vaultfs.bridge.fs.attributes import Attr
from vaultfs.bridge.fs.families import Move, Parts, is_writing
from vaultfs.bridge.fs.handles import Snapshot
from vaultfs.bridge.fs.opening import Opened
from vaultfs.bridge.fs.paths import DisplayPaths
from vaultfs.bridge.nodes.editor_locks import editor_lock
from vaultfs.bridge.nodes.family import Family
from vaultfs.bridge.nodes.hidden import HIDDEN, HIDDEN_FILE
from vaultfs.bridge.tree import keys
from vaultfs.bridge.tree.filenames import Sibling, assign_names, unescape
from vaultfs.bridge.tree.keys import DocumentKey, Kind, NodeKey
from vaultfs.bridge.tree.nodes import DOC_DIR_NAMES, EVENTS_FILE
from vaultfs.bridge.tree.tree import Tree
from vaultfs.bridge.write.editor_locks import lock_file_name, locks_source

__all__ = ["Documents"]


class Documents(Family):
    """``held_here(doc_id)``: this mount holds the document checked out for an editor's
    lock file (``write.editor_locks``): its directory shows no one else's lock file.
    ``lock_files``: a check-out held elsewhere is shown as a lock file at all (not to a
    WebDAV front, whose clients are told by LOCK's answer)."""

    key_type = DocumentKey
    # nothing announces new events: short timeouts

    def __init__(
        self, held_here: Callable[[int], bool] = lambda doc_id: False, *, lock_files: bool = True
    ) -> None:
        self._held_here = held_here
        self._lock_files = lock_files

    async def children(self, tree: Tree, key: NodeKey) -> Mapping[str, NodeKey]:
        if key.kind != Kind.DOC:
            return await super().children(tree, key)
        doc_id = key.doc_id
        record = tree.record(doc_id)
        listing: dict[str, NodeKey] = {
            name: keys.typed((kind, doc_id)) for name, kind in DOC_DIR_NAMES.items()
        }
        filename = record.get("filename__v")
        if filename:
            # ``.hidden`` is GNOME's list in every document directory (its lookups
            # may be answered without asking the mount: ``shared_names``): a source
            # file of that name is listed under another, as one named ``versions``.
            (name,) = assign_names(
                [Sibling(str(filename), str(doc_id), is_file=True)],
                reserved={*DOC_DIR_NAMES, HIDDEN_FILE},
            )
            listing[name] = keys.source(doc_id)
            if self._lock_files and record.get("locked__v") and not self._held_here(doc_id):
                listing[lock_file_name(name)] = editor_lock(doc_id)
        return listing

    async def unlisted(self, tree: Tree, key: NodeKey, name: str) -> NodeKey | None:
        if key.kind == Kind.DOC and name == EVENTS_FILE:
            tree.record(key.doc_id)  # the document must be in the index
            return keys.events(key.doc_id)
        if key.kind == Kind.DOC and name == HIDDEN_FILE:
            tree.record(key.doc_id)
            return HIDDEN
        return None

    def shared_names(self) -> Mapping[str, NodeKey]:
        return {HIDDEN_FILE: HIDDEN}

    def step(self, paths: DisplayPaths, key: NodeKey) -> tuple[NodeKey, str] | None:
        if key.kind == Kind.EVENTS:
            return keys.document(key.doc_id), EVENTS_FILE
        return paths.document_dir(key.doc_id)

    async def attributes(self, parts: Parts, key: NodeKey, ino: int) -> Attr:
        doc_id = key.doc_id
        if key.kind == Kind.DOC:
            mtime, ctime = await parts.attributes.document_times(doc_id, directory=True)
            return parts.attributes.directory(ino, mtime, ctime, writable=True)
        # Read at open: the size of the last read (0 before), served with direct_io.
        known = parts.life.events.stat(doc_id)
        mtime, ctime = await parts.attributes.document_times(doc_id)
        if known is not None:
            mtime = known.read_ns
        return parts.attributes.file(ino, 0o444, known.size if known else 0, mtime, ctime)

    async def listed_attributes(
        self, parts: Parts, keys: list[NodeKey], inos: list[int]
    ) -> list[Attr | None]:
        if any(key.kind != Kind.DOC for key in keys):
            return await super().listed_attributes(parts, keys, inos)
        # A folder's page of documents: their times read together.
        return parts.attributes.document_directories([key.doc_id for key in keys], inos)

    async def open(self, parts: Parts, key: NodeKey, ino: int, flags: int) -> Opened:
        if key.kind == Kind.DOC or is_writing(flags):
            return await super().open(parts, key, ino, flags)
        # Read now; fstat after open sees its exact size.
        opened = parts.opener.direct(Snapshot(await parts.life.events.content(key.doc_id)))
        parts.opener.invalidate_attr(ino)
        return opened

    async def set_field(self, parts: Parts, key: NodeKey, name: str, value: bytes | None) -> None:
        if key.kind != Kind.DOC:
            await super().set_field(parts, key, name, value)
            return
        record = await self.fields(parts, key)
        await parts.write.fields.set(key.doc_id, None, record, name, value)

    def lifecycle_of(self, key: NodeKey) -> int | None:
        return key.doc_id if key.kind == Kind.DOC else None

    async def fields(self, parts: Parts, key: NodeKey) -> dict[str, Any]:
        if key.kind != Kind.DOC:
            return {}
        return parts.write.fields.shown(key.doc_id, None, parts.tree.record(key.doc_id))

    async def create(self, parts: Parts, parent: NodeKey, name: str, mode: int) -> NodeKey:
        if parent.kind != Kind.DOC:
            return await super().create(parts, parent, name, mode)
        doc_id = parent.doc_id
        if name == await parts.overlay.source_name(doc_id):
            # The source file was renamed away (vim) and is written anew.
            parts.overlay.unhide(keys.source(doc_id))
            return keys.source(doc_id)
        store = parts.overlay.store()
        if not locks_source(name, await parts.overlay.source_name(doc_id)):
            return store.create(parent, name, mode).key
        # An editor's lock file: the document is checked out before the file exists.
        locks = parts.write.editor_locks
        await locks.take(doc_id)
        try:
            key = store.create(parent, name, mode).key
        except BaseException:
            await locks.let_go(doc_id)
            raise
        locks.made(key, doc_id)
        return key

    async def rmdir(self, parts: Parts, parent: NodeKey, key: NodeKey, name: str) -> None:
        if key.kind != Kind.DOC:
            await super().rmdir(parts, parent, key, name)
            return
        parts.overlay.deleting()
        await parts.overlay.must_be_empty(key, name)
        doc_id = key.doc_id
        await parts.write.deletions.document(doc_id)
        parts.overlay.forget_document(doc_id)

    async def rename(self, parts: Parts, move: Move) -> None:
        if move.source.kind != Kind.DOC or move.target is not None or move.new != move.old:
            await super().rename(parts, move)
            return
        await parts.write.fields.rename(move.source.doc_id, unescape(move.new_name))
