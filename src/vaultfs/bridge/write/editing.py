"""Check-out and check-in of a document's latest source file, as the core sees it.

Owns the path from POSIX writes to the spool (``bridge.spool``). A save is the life of
the open files of a document: an open for writing costs nothing until the first write
or truncation, which checks the document out (``_entry_for_writing``) and starts the
spool file from the vault's latest content (unless it is truncated to nothing); writes,
reads and truncation go to the spool entry while it exists; close(2) of a descriptor
(FUSE flush) only makes what was written durable in the spool; the release of the
last writer checks the content in as one draft. A file renamed over the source file
(``check_in_file``) and a truncate without an open file check in the same way, before
the call returns. After a check-in the spool tells ``show_check_in``, which shows the
draft at once without another call.
"""

from __future__ import annotations

import errno
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from vaultfs.bridge.content.blobcache import BlobCache
from vaultfs.bridge.content.sources import Contents, source_key
from vaultfs.bridge.tree import keys
from vaultfs.bridge.tree.tree import Tree
from vaultfs.bridge.tree.versions import latest_version
from vaultfs.bridge.write.editor_locks import show_locked
from vaultfs.bridge.write.lease import Reason
from vaultfs.bridge.write.spool.entry import EDITING
from vaultfs.bridge.write.spool.spool import CheckIn, Start, StartFrom
from vaultfs.bridge.write.writers import Writers
from vaultfs.errors import (
    InsufficientAccess,
    LockedByOther,
    NotFound,
    ReadOnly,
    VaultError,
    VaultOffline,
)

if TYPE_CHECKING:  # only for annotations: the spool is handed in by the mount
    from vaultfs.bridge.write.spool.entry import SpoolEntry
    from vaultfs.bridge.write.spool.spool import Spool

__all__ = ["EditHandle", "Editing", "show_check_in", "show_lease"]

log = logging.getLogger(__name__)


class EditHandle:
    """One open of a source file (several may share a spool entry). A writer has no
    entry until its first write or truncation checks the document out."""

    def __init__(
        self, doc_id: int, entry: SpoolEntry | None, *, writer: bool, append: bool = False
    ) -> None:
        self.entry = entry
        self.doc_id = doc_id
        self.writer = writer
        #: O_APPEND: every write lands at the end of the content, wherever the kernel
        #: (which may hold the listing's size estimate) says it should go
        self.append = append

    def fsync(self) -> None:
        if self.entry is not None:
            self.entry.fsync()


async def show_check_in(tree: Tree, blobs: BlobCache, doc_id: int, done: CheckIn) -> None:
    """Show what the spool just checked in, without another call: the record as the
    check-in left it (unlocked, the new version, its checksum) and its exact size."""
    tree.checked_in(doc_id, done.version, done.md5, done.size, done.mtime_ns, locked=done.locked)
    if done.version is not None:
        blobs.remember_size(source_key(doc_id, tree.record(doc_id)), done.size)


async def show_lease(tree: Tree, doc_id: int, held: bool, reason: Reason | None) -> None:
    """Show a check-out of this client's beginning or ending (``Leases.shown``): a
    save's own lists no lock file from its start, and shows its end with its check-in
    (``show_check_in``); an editor's or a WebDAV lock's shows checked out at once, and
    unlocked at its end, as does a lock an earlier daemon left, once released.

    An editor's or a WebDAV lock's check-out reads the document once taken (one call):
    the saves made under it may start from the index (a whole new content), which
    must then be the vault's latest, not a poll behind another client's save."""
    if held:
        if reason == Reason.SAVE:
            tree.index.changed_here(doc_id)
            return
        try:
            await tree.reload(doc_id)
        except VaultError as exc:  # the next poll brings it
            log.info("document %d could not be read after its check-out: %s", doc_id, exc)
        show_locked(tree, doc_id)
    elif reason != Reason.SAVE:
        tree.checked_in(doc_id, None, None, 0, time.time_ns())


class Editing:
    def __init__(
        self, tree: Tree, blobs: BlobCache, contents: Contents, spool: Spool | None
    ) -> None:
        self.tree = tree
        self.blobs = blobs
        self.contents = contents
        self.spool = spool
        self._docs: dict[int, Writers] = {}
        #: documents the vault refused this user a check-out of (INSUFFICIENT_ACCESS):
        #: shown read-only until an open for writing succeeds again
        self.refused: set[int] = set()
        #: check-ins a release started that have not finished (the status shows them)
        self.in_flight = 0

    def entry(self, doc_id: int) -> SpoolEntry | None:
        return self.spool.entry(doc_id) if self.spool is not None else None

    def held_here(self, doc_id: int) -> bool:
        """Whether this client holds the document checked out (a lease of any reason:
        a save, an editor's lock file, a WebDAV lock)."""
        return self.spool is not None and self.spool.leases.held_here(doc_id)

    def writers(self, doc_id: int) -> int:
        """How many open files of the document may write (checked out or not yet)."""
        writers = self._docs.get(doc_id)
        return writers.count if writers is not None else 0

    def pending(self) -> list[dict[str, Any]]:
        return list(self.spool.pending()) if self.spool is not None else []

    def lost_records(self) -> list[dict[str, Any]]:
        return self.spool.lost_records() if self.spool is not None else []

    def reader(self, doc_id: int) -> EditHandle:
        """A read handle on the spool content of a document being edited."""
        entry = self.entry(doc_id)
        if entry is None:
            raise NotFound(f"document {doc_id} is not being edited")
        return EditHandle(doc_id, entry, writer=False)

    def read(self, handle: EditHandle, offset: int, size: int) -> bytes | None:
        """Bytes of the edit under way (this handle's, or another writer's), None when
        the document is not checked out: the vault's content is what to read then."""
        return self.read_edit(handle.doc_id, offset, size)

    def read_edit(self, doc_id: int, offset: int, size: int) -> bytes | None:
        """Bytes of ``doc_id``'s edit under way or waiting to be checked in (its spool
        entry), None when there is none."""
        entry = self.entry(doc_id)
        return None if entry is None else bytes(entry.pread(offset, size))

    async def open(self, doc_id: int, *, truncate: bool, append: bool = False) -> EditHandle:
        """An open for writing. O_TRUNC is a change and checks the document out now;
        any other open costs no call until its first write (``write``), except to ask
        who holds a lock the index says is held."""
        if self.spool is None:
            raise ReadOnly("this mount has no write-back spool")
        writers = self._docs.setdefault(doc_id, Writers())
        # Counted before anything waits, so a release racing with this open never
        # checks in under it (see ``Writers``).
        writers.count += 1
        try:
            entry = None
            if truncate:
                async with writers.lock:
                    entry = await self._entry_for_writing(doc_id, copy=False)
                    entry.truncate(0)
            elif self.entry(doc_id) is None:
                await self._refuse_if_locked(doc_id)
        except BaseException:
            writers.count -= 1
            self._drop_if_idle(doc_id)
            raise
        return EditHandle(doc_id, entry, writer=True, append=append)

    async def _refuse_if_locked(self, doc_id: int) -> None:
        """EBUSY at open() when the index says the document is checked out and the
        vault names another user (one call, only then). A check-out of this user that
        this client does not hold is refused by the first write (the lease tells this
        client's own lock, left by an earlier daemon, from another client's)."""
        if self.spool is None or not self.tree.record(doc_id).get("locked__v"):
            return
        leases = self.spool.leases
        if leases.held_here(doc_id):
            return  # checked out by this client
        holder = await leases.holder(doc_id)
        if holder is not None and not leases.is_me(holder):
            raise LockedByOther(f"document {doc_id} is checked out by user {holder}")

    def _drop_if_idle(self, doc_id: int) -> None:
        writers = self._docs.get(doc_id)
        if writers is not None and writers.count == 0 and not writers.lock.locked():
            del self._docs[doc_id]

    def _start(self, doc_id: int, *, copy: bool) -> StartFrom:
        """The starting point of a check-out, asked for once the lock is held: the
        document as the vault has it (one call) and its content; or, for content that
        starts empty, the index's record (the check-in verifies it, no call now); or,
        offline, the index's record and the content kept of it."""

        async def start() -> Start:
            if not self.tree.reach.online:
                # Offline: from the index and the content kept of it, and the check-in
                # takes this exact version for the base (anything newer in the vault
                # then is a conflict, never replaced).
                record = self.tree.record(doc_id)
                content = None
                if copy:
                    latest = await self.contents.of(keys.source(doc_id))
                    content = await self.blobs.cached_path(latest.key, latest.fetch)
                return _start_of(record, doc_id, content=content, read=True)
            if not copy:
                record = self.tree.record(doc_id)
                return _start_of(record, doc_id, content=None, read=False)
            record = await self.tree.reload(doc_id)
            latest = await self.contents.of(keys.source(doc_id))
            content = await self.blobs.cached_path(latest.key, latest.fetch)
            return _start_of(record, doc_id, content=content, read=True)

        return start

    async def _entry_for_writing(self, doc_id: int, *, copy: bool) -> SpoolEntry:
        """The document's entry, checked out now if it has none (``writers.lock`` held).

        begin() on an existing entry (an edit still pending upload) makes no API call
        and marks it being edited again, so the retry worker leaves it alone."""
        if self.spool is None:
            raise ReadOnly("this mount has no write-back spool")
        try:
            entry = await self.spool.begin(doc_id, self._start(doc_id, copy=copy))
        except InsufficientAccess:
            self.refused.add(doc_id)
            raise
        self.refused.discard(doc_id)
        return entry

    async def _checked_out(self, handle: EditHandle) -> SpoolEntry:
        """The entry ``handle`` writes to: checked out at its first write, and again
        when a check-in took the one it had (another writer's rename over the file)."""
        entry = handle.entry
        if entry is None or self.entry(handle.doc_id) is not entry:
            async with self._docs[handle.doc_id].lock:
                entry = handle.entry = await self._entry_for_writing(handle.doc_id, copy=True)
        return entry

    async def write(self, handle: EditHandle, offset: int, data: bytes) -> int:
        entry = await self._checked_out(handle)
        if handle.append:
            offset = entry.size()  # no await from here to the write: atomic
        written = int(entry.pwrite(offset, data))
        if self.spool is not None:
            self.spool.wrote(entry)
        return written

    async def ftruncate(self, handle: EditHandle, size: int) -> None:
        """ftruncate(2) through an open file: a change, so a check-out."""
        entry = await self._checked_out(handle)
        entry.truncate(size)

    async def flush(self, handle: EditHandle) -> None:
        """close(2) of one descriptor: what this file wrote is made durable in the spool
        (the check-in waits for the last writer's release). A write that failed is
        reported here, once more."""
        entry = handle.entry
        if not handle.writer or entry is None:
            return
        await trio.to_thread.run_sync(entry.fsync)
        if entry.record.write_failed is not None:
            raise OSError(errno.EIO, f"document {handle.doc_id}: {entry.record.write_failed}")

    async def release(self, handle: EditHandle) -> None:
        """The open file is gone: the release of the last writer checks the document
        in (which uploads nothing when nothing changed, and releases the lock)."""
        if not handle.writer:
            return
        writers = self._docs[handle.doc_id]
        writers.count -= 1
        if writers.count > 0:
            return
        self.in_flight += 1
        try:
            async with writers.taken():
                if writers.count == 0:  # nobody opened it again (while the lock was held)
                    await self._commit(handle.doc_id)
        except (VaultError, OSError) as exc:
            log.warning(
                "check-in of document %d failed (kept in the spool or lost+found, see "
                "vaultfs status): %s",
                handle.doc_id,
                exc,
            )
        finally:
            self.in_flight -= 1
            self._drop_if_idle(handle.doc_id)

    async def _commit(self, doc_id: int) -> None:
        """Check in the document's entry; ``writers.lock`` is held. Offline the save is
        taken as online (safe in the spool; its queue checks it in once the vault is
        back): no error reaches the program."""
        entry = self.entry(doc_id)
        if self.spool is None or entry is None or entry.state != EDITING:
            return  # nothing open, or a check-in was tried already: the worker carries on
        try:
            await self.spool.commit(entry)
        except VaultOffline:
            log.info("document %d saved offline: in the spool", doc_id)

    async def truncate(self, doc_id: int, size: int) -> None:
        """truncate(2) of the source file: of the open edit, or else one whole save."""
        if self.writers(doc_id) > 0:
            handle = EditHandle(doc_id, self.entry(doc_id), writer=True)
            await self.ftruncate(handle, size)
            return
        handle = await self.open(doc_id, truncate=size == 0)
        try:
            if size:
                await self.ftruncate(handle, size)
            await self._commit_now(handle)
        finally:
            await self.release(handle)

    async def _commit_now(self, handle: EditHandle) -> None:
        """Check ``handle``'s change in before the call that made it returns (rename,
        truncate): its errors reach the program. With other writers open, their last
        release checks it in instead."""
        writers = self._docs[handle.doc_id]
        async with writers.lock:
            if writers.count == 1:
                await self._commit(handle.doc_id)

    async def check_in_file(self, doc_id: int, source: Path) -> None:
        """Make ``source`` the document's content: a file renamed over the source file.

        Checks the document out (EBUSY when another user holds it), takes the content
        into the spool and checks it in; returns once the vault has it. While the
        source file is open for writing the content only replaces the edit's, and the
        last writer's release checks it in.
        """
        if self.writers(doc_id) > 0 and self.entry(doc_id) is not None:
            entry = await self._checked_out(EditHandle(doc_id, self.entry(doc_id), writer=True))
            await trio.to_thread.run_sync(_replace_content, entry, source)
            return
        handle = await self.open(doc_id, truncate=False)
        try:
            entry = handle.entry = await self._checked_out_empty(handle)
            # A new entry started empty; one still pending held an older save.
            await trio.to_thread.run_sync(_replace_content, entry, source)
            await self._commit_now(handle)
        finally:
            await self.release(handle)

    async def _checked_out_empty(self, handle: EditHandle) -> SpoolEntry:
        """Checked out for content that replaces the whole file: nothing is copied."""
        async with self._docs[handle.doc_id].lock:
            return await self._entry_for_writing(handle.doc_id, copy=False)


def _start_of(record: dict[str, Any], doc_id: int, *, content: Path | None, read: bool) -> Start:
    version = latest_version(record)
    return Start(
        content,
        record.get("md5checksum__v"),
        str(record.get("filename__v") or doc_id),
        base_version=f"{version[0]}.{version[1]}" if version else None,
        base_read=read,
    )


def _replace_content(entry: SpoolEntry, source: Path) -> None:
    """Copy ``source`` over an entry's content (blocking: run in a worker thread). The
    source is opened first: one that cannot be read leaves the entry as it was."""
    with open(source, "rb") as f:
        entry.truncate(0)
        offset = 0
        try:
            while chunk := f.read(1 << 20):
                offset += entry.pwrite(offset, chunk)
        except OSError as exc:  # half a copy must never become a version
            entry.record.write_failed = entry.record.write_failed or f"copy failed: {exc}"
            raise
    entry.fsync()
