"""A document's latest source file: read from the vault, edited in place.

Opening it for writing checks the document out (``write.editing``); its close checks
the content in. Its mode shows whether the user may edit it (not locked by another,
not refused before, not in a steady state), its mtime this mount's last save while the
vault's latest is that content. Renaming it away is allowed to an editor's backup name
only (vim's ``name~``): a scratch copy takes the content and the source name is hidden
until it is written again. Removing it (``-o allow_delete``) hides it: the document
goes with its directory.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import trio

from vaultfs import errors
from vaultfs.bridge.fs.attributes import Attr
from vaultfs.bridge.fs.families import Change, Move, Parts, is_writing
from vaultfs.bridge.fs.handles import SourceEdit
from vaultfs.bridge.fs.opening import Opened
from vaultfs.bridge.fs.paths import DisplayPaths
from vaultfs.bridge.lifecycle.states import is_steady
from vaultfs.bridge.nodes.family import Family
from vaultfs.bridge.tree import keys
from vaultfs.bridge.tree.keys import NodeKey, SourceKey
from vaultfs.bridge.write.scratch import is_temporary_name

__all__ = ["Sources"]

log = logging.getLogger(__name__)


class Sources(Family):
    key_type = SourceKey

    def step(self, paths: DisplayPaths, key: NodeKey) -> tuple[NodeKey, str] | None:
        doc = keys.document(key.doc_id)
        return doc, paths.listed(doc, key) or paths.filename(key.doc_id) or "?"

    async def attributes(self, parts: Parts, key: NodeKey, ino: int) -> Attr:
        doc_id, tree, editing = key.doc_id, parts.tree, parts.write.editing
        mtime, ctime = await parts.attributes.document_times(doc_id)
        entry = editing.entry(doc_id)
        writable = not parts.options.read_only
        if writable and entry is None:
            # What the caller may not edit shows no write bits: checked out by someone
            # else, or refused to this user before (the vault's INSUFFICIENT_ACCESS).
            record = tree.record(doc_id)
            locked = record.get("locked__v") and not editing.held_here(doc_id)
            writable = not locked and doc_id not in editing.refused
            writable = writable and not is_steady(record)  # approved: read-only
        # Written through this mount: the time of its last write, as a local disk shows
        # it, also once checked in (an editor's next save must not take the vault's time
        # of the check-in for someone else's change to the file).
        saved = tree.saved_mtime(doc_id, tree.record(doc_id))
        mtime = entry.mtime_ns if entry is not None else saved or mtime
        return await parts.attributes.vault_file(
            key, ino, mtime, ctime, writable=writable, entry=entry
        )

    async def open(self, parts: Parts, key: NodeKey, ino: int, flags: int) -> Opened:
        doc_id, editing, opener = key.doc_id, parts.write.editing, parts.opener
        if is_writing(flags):
            parts.writable()
            return await self._open_for_writing(parts, key, ino, flags)
        if editing.entry(doc_id) is not None:
            # The edit's bytes while it lasts; the vault's once it is checked in.
            reader = SourceEdit(editing, editing.reader(doc_id), opener.vault_reader(key))
            return opener.direct(reader)
        # Nobody writing it: what a read-only open gets changes only with the vault's
        # record (or a writer's open), and each of those invalidates the inode.
        return await opener.vault_content(
            key,
            ino,
            lambda size: parts.prefetch.source_opened(doc_id, size),
            share=editing.writers(doc_id) == 0,
            # A descriptor held open across a save reads the save (the same inode).
            follow=True,
        )

    async def _open_for_writing(self, parts: Parts, key: NodeKey, ino: int, flags: int) -> Opened:
        doc_id, editing, opener = key.doc_id, parts.write.editing, parts.opener
        try:
            handle = await editing.open(
                doc_id, truncate=bool(flags & os.O_TRUNC), append=bool(flags & os.O_APPEND)
            )
        except (errors.InsufficientAccess, errors.LockedByOther):
            opener.invalidate_attr(ino)  # its mode loses the write bits now
            raise
        # The kernel may hold the listing's estimate (or the size before another
        # client's save): a stat or a seek from the end after open() must see the
        # content's exact size, which getattr answers from the spool entry, or from the
        # content cache, which learns it as the download starts.
        vault = None
        if handle.entry is None and editing.entry(doc_id) is None:
            try:
                vault = await opener.exact_size_known(key)
            except BaseException:
                await editing.release(handle)  # the open failed: not a writer
                raise
        parts.freshness.exact(ino)
        opener.invalidate_attr(ino)
        edit = SourceEdit(editing, handle, opener.vault_reader(key), vault)
        if flags & os.O_ACCMODE == os.O_RDWR and not flags & os.O_APPEND:
            # What a program maps to edit (a writable shared map) is opened read-write.
            # The other writers stay direct: an O_WRONLY open cannot be mapped, and the
            # kernel would put an O_APPEND write's bytes in its pages at the size it
            # holds (maybe the listing's estimate), not at the end the edit appends to.
            return opener.writer(ino, edit)
        return opener.direct(edit)

    async def setattr(self, parts: Parts, key: NodeKey, change: Change) -> None:
        # Its times and mode are the vault's: changes are accepted and ignored.
        if change.size is None:
            return
        parts.writable()
        handle = parts.opener.open_file(change.fh) if change.fh is not None else None
        if isinstance(handle, SourceEdit):  # ftruncate(2)
            await handle.truncate(change.size)
        else:
            await parts.write.editing.truncate(key.doc_id, change.size)

    async def set_field(self, parts: Parts, key: NodeKey, name: str, value: bytes | None) -> None:
        record = await self.fields(parts, key)
        await parts.write.fields.set(key.doc_id, None, record, name, value)

    def lifecycle_of(self, key: NodeKey) -> int | None:
        return key.doc_id

    async def fields(self, parts: Parts, key: NodeKey) -> dict[str, Any]:
        return parts.write.fields.shown(key.doc_id, None, parts.tree.record(key.doc_id))

    async def unlink(self, parts: Parts, key: NodeKey, name: str) -> None:
        parts.overlay.deleting()
        parts.overlay.hide(key)  # the document goes with rmdir of its directory

    async def rename(self, parts: Parts, move: Move) -> None:
        source, target, new, new_name = move.source, move.target, move.new, move.new_name
        doc_id = source.doc_id
        if new != keys.document(doc_id):
            raise errors.CrossDevice("a source file stays in its document directory")
        if not is_temporary_name(new_name):
            # Only an editor's backup (``file~``, ``.file.bak``...) may take the source
            # file's content under another name: a visible name would exist only on
            # this mount while looking like a vault file.
            refusal = errors.OperationNotPermitted(
                f"document {doc_id}: the source file keeps the vault's file name; "
                f"renaming it to {new_name!r} would exist only on this mount "
                "(rename the document's directory to rename the document)"
            )
            log.warning("rename refused: %s", refusal)
            raise refusal
        store = parts.overlay.store()
        if target is not None:
            if store.file(target) is None:
                raise errors.OperationNotPermitted(f"{new_name} belongs to the vault")
            store.unname(target)
        entry = parts.write.editing.entry(doc_id)
        if entry is not None:
            path: Path | None = entry.path
        else:
            path = await parts.opener.cached_path(source)
        await trio.to_thread.run_sync(store.copy_of, new, new_name, path, 0o644)
        parts.overlay.hide(source)
        log.info("document %d: source file renamed to scratch %r", doc_id, new_name)
