"""The durable write-back spool: check out, spool, check in.

Owns the life of an edited document's content from the first open() for writing to
the draft being in the vault: the lock (check-out), the local spool file the writes
go to, the upload as a new draft and the unlock (check-in), and the background
worker that retries failed check-ins with backoff, also after a crash of the daemon.
Content that can never be checked in goes to ``lost+found``; nothing a user wrote is
dropped silently. The files on disk are managed by ``store``, one entry's content and
record by ``entry``; the behaviour is described for users in docs/writing.md. The
other kind of entry, a file written into renditions/ or attachments/, is
``uploads``': the spool holds it (status, ``wait_idle``, ``flush_now``, its worker).

``Spool`` owns its parts, a small class a module, which share one ``bookkeeping``
object (what the spool holds, an entry's record): ``locking`` (locks), ``checkin``
(uploads, unlocks, retries), ``worker`` (the background worker and the waits); no part
inherits another. This module checks out and answers the spool's callers, handing on
to the part that does the work. What callers hand in and get back is in
``interface``, imported from here.

An entry moves through these states (each one written to disk before it matters; the
states and the table of moves between them are ``states``'):

``editing``    open for writing; the worker leaves it alone
``pending``    closed; waiting to be uploaded (again)
``uploading``  an upload was sent and its outcome is unknown: before sending it again
               the vault's checksum is compared with the content's and with that of
               what was sent (the record's ``unconfirmed`` flag keeps that fact
               across a reopen)
``unlocking``  the draft is in the vault; releasing the lock is left to do

Before anything is uploaded, one call verifies that the check-in replaces only what
the edit started from: the document is still checked out and its latest version is
the one the edit began with. Otherwise the content goes to lost+found as a conflict
and nothing in the vault is replaced (``conflict``). Every lock is recorded before it
is asked for (``lock_marks.mark``) and the record removed once it is released, so a
restart releases every lock that no entry took over (``SpoolLocking.release_stale_locks``).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from vaultfs.bridge.write.spool import durable, lock_marks, lost, store
from vaultfs.bridge.write.spool.bookkeeping import SpoolBookkeeping
from vaultfs.bridge.write.spool.checkin import SpoolCheckIn
from vaultfs.bridge.write.spool.entry import EDITING, PENDING, SpoolEntry
from vaultfs.bridge.write.spool.interface import (
    CheckedIn,
    CheckIn,
    Start,
    StartFrom,
    start_from,
)
from vaultfs.bridge.write.spool.locking import SpoolLocking
from vaultfs.bridge.write.spool.worker import SpoolWorker
from vaultfs.client import CHECK_INS, VaultApi
from vaultfs.errors import VaultError

if TYPE_CHECKING:  # handed in by the mount
    from vaultfs.bridge.write.spool.uploads import Uploads

__all__ = ["CheckIn", "CheckedIn", "Spool", "Start", "StartFrom", "start_from"]

log = logging.getLogger(__name__)


class Spool:
    """The spool of one mount. ``run`` must be started (``nursery.start``) for retries.

    Entries found on disk are loaded at construction. An entry found ``editing`` was
    open when the daemon died: it is treated as ``pending`` (the user's writes are
    checked in, not thrown away), as is one found ``uploading`` after checking the
    vault's checksum so that nothing is uploaded twice.
    """

    def __init__(
        self,
        directory: Path,
        client: VaultApi,
        *,
        user_id: int | None = None,
        retry_initial: float = CHECK_INS.base_delay,
        retry_max: float = CHECK_INS.max_delay,
        keepalive_interval: float = 240.0,
        run_sync: Callable[..., Awaitable[Any]] = trio.to_thread.run_sync,
        on_checked_in: CheckedIn | None = None,
        uploads: Uploads | None = None,
    ) -> None:
        books = self._books = SpoolBookkeeping(
            directory,
            client,
            user_id=user_id,
            retry_initial=retry_initial,
            retry_max=retry_max,
            run_sync=run_sync,
            on_checked_in=on_checked_in,
            uploads=uploads,
        )
        self._locks = SpoolLocking(books)
        self._check_in = SpoolCheckIn(books, self._locks)
        self._worker = SpoolWorker(
            books, self._locks, self._check_in, keepalive_interval=keepalive_interval
        )
        if uploads is not None:
            uploads.on_change.append(books.notify)
        durable.ensure_private_dir(directory)
        for record in lost.usable_entries(directory):
            self._load(record)
        lost.rescue_scratch(directory)

    def _load(self, record: store.EntryRecord) -> None:
        if record.state == EDITING:
            log.warning(
                "spool: doc %d was open when the daemon stopped; checking it in", record.doc_id
            )
            record.move(PENDING)
            store.write_record(self.directory, record)
        path = store.data_path(self.directory, record.doc_id)
        entry = SpoolEntry(self.directory, record, os.open(path, os.O_RDWR))
        self._books.entries[record.doc_id] = entry
        log.info(
            "spool: doc %d found %s (%d tries so far)", record.doc_id, record.state, record.attempts
        )

    # --- the parts' interfaces, as the spool's callers know them ----------------

    @property
    def directory(self) -> Path:
        return self._books.directory

    @property
    def client(self) -> VaultApi:
        return self._books.client

    @property
    def uploads(self) -> Uploads | None:
        """The other kind of entry: files written into renditions/ and attachments/."""
        return self._books.uploads

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The worker (``SpoolWorker.run``); runs until cancelled."""
        await self._worker.run(task_status=task_status)

    async def flush_now(self) -> None:
        await self._worker.flush_now()

    async def wait_idle(self, timeout: float | None) -> bool:  # noqa: ASYNC109 - the core's API
        return await self._worker.wait_idle(timeout)

    def wrote(self, entry: SpoolEntry) -> None:
        self._check_in.wrote(entry)

    async def commit(self, entry: SpoolEntry) -> None:
        """Check ``entry`` in (``SpoolCheckIn.commit``): returns once the vault has it."""
        await self._check_in.commit(entry)

    def is_me(self, user_id: object) -> bool:
        return self._locks.is_me(user_id)

    async def lock_holder(self, doc_id: int) -> object | None:
        return await self._locks.lock_holder(doc_id)

    async def keep_lost(self, source: Path, filename: str, exc: VaultError) -> Path:
        return await self._books.keep_lost(source, filename, exc)

    # --- queries -------------------------------------------------------------

    def entry(self, doc_id: int) -> SpoolEntry | None:
        return self._books.entries.get(doc_id)

    def pending(self) -> list[dict[str, Any]]:
        """Every entry (open ones too), oldest first, for the status files."""
        now = time.time()
        return [
            {
                "doc_id": e.doc_id,
                "filename": e.record.filename,
                "state": e.state.value,
                "age_seconds": round(max(0.0, now - e.record.created), 3),
                "attempts": e.record.attempts,
                "last_error": e.record.last_error,
            }
            for e in sorted(self._books.entries.values(), key=lambda e: e.record.created)
        ] + (self._books.uploads.pending() if self._books.uploads is not None else [])

    def lost_and_found(self) -> list[Path]:
        return lost.list_lost(self.directory)

    def lost_records(self) -> list[dict[str, Any]]:
        return lost.lost_records(self.directory)

    # --- check out -----------------------------------------------------------

    async def begin(self, doc_id: int, start: StartFrom) -> SpoolEntry:
        """Check the document out and start its spool file from what ``start`` reads
        once the lock is held.

        A document that still has an entry (open, or closed and not yet checked in)
        keeps it, back in ``editing`` so the worker leaves it alone: the lock is still
        ours and the spool holds content newer than the vault's. Its content is not
        touched (``start`` is not called; for O_TRUNC the caller truncates the entry).
        Callers therefore call ``begin`` on every open for writing, not only when
        ``entry`` is None: whether the entry exists is only known here, after any
        check-in under way has finished.
        """
        while True:
            existing = self._books.entries.get(doc_id)
            if existing is not None:
                async with existing.lock:
                    if self._books.entries.get(doc_id) is existing:
                        existing.failures = 0
                        # What is sent next is what the user writes now; an upload
                        # whose fate is unknown only counts if it holds that.
                        existing.record.sent_md5 = None
                        await self._books.set_state(existing, EDITING)
                        log.info("spool: doc %d reopened from the spool", doc_id)
                        return existing
                continue  # checked in while we waited: check out afresh
            if doc_id in self._books.checkouts:
                await self._books.checkouts[doc_id].wait()
                continue
            break
        done = self._books.checkouts[doc_id] = trio.Event()
        try:
            return await self._check_out(doc_id, start)
        finally:
            del self._books.checkouts[doc_id]
            done.set()

    async def _check_out(self, doc_id: int, start: StartFrom) -> SpoolEntry:
        # Recorded before the lock is asked for: a daemon that dies from here on leaves
        # a mark, and the next start releases the lock unless an entry took it over.
        # An editor's lock file that holds the document has its lock and mark already.
        hold = doc_id in self._books.holds
        if not hold:
            await self._books.run_sync(lock_marks.mark, self.directory, doc_id)
        locked_at = time.time()
        held = took_lock = False
        try:
            took_lock = hold or await self._locks.lock(doc_id)
            held = True  # taken now, or ours already (an answer lost on its way)
            # Read after the lock is held: a version checked in by anyone before that
            # (another mount, another client) is what the edit starts from.
            begin = await start()
            record = store.EntryRecord(
                doc_id=doc_id,
                filename=begin.filename,
                base_md5=begin.base_md5,
                state=EDITING,
                created=time.time(),
                base_version=begin.base_version,
                base_read=begin.base_read,
                locked_at=locked_at,
            )
            fd, md5 = await self._books.run_sync(
                store.create_entry, self.directory, record, begin.content
            )
        except BaseException:
            with trio.CancelScope(shield=True):
                if doc_id in self._books.holds:
                    pass  # the lock file still holds the lock
                elif held:  # no entry holds the lock: leave the vault unlocked
                    await self._locks.unlock_quietly(doc_id)
                else:
                    lock_marks.drop(self.directory, doc_id)
            raise
        entry = SpoolEntry(self.directory, record, fd, md5)
        self._books.entries[doc_id] = entry
        self._books.notify()
        log.info(
            "spool: doc %d checked out (%s)", doc_id, "locked" if took_lock else "lock was ours"
        )
        return entry

    # --- editors' lock files -------------------------------------------------

    def holding(self, doc_id: int) -> bool:
        """Whether an editor's lock file holds the document checked out."""
        return doc_id in self._books.holds

    async def hold(self, doc_id: int) -> None:
        """Check the document out for an editor that announced it edits it (it made
        its lock file): the lock and its mark as a save takes them, with no content.
        A save under way has the lock already; a check-in keeps it while held.
        ``LockedByOther`` when someone else holds it."""
        books = self._books
        while doc_id in books.checkouts:
            await books.checkouts[doc_id].wait()
        if doc_id in books.holds or doc_id in books.entries:
            books.holds[doc_id] = books.holds.get(doc_id, 0) + 1
            return
        done = books.checkouts[doc_id] = trio.Event()
        try:
            await books.run_sync(lock_marks.mark, self.directory, doc_id)
            try:
                took = await self._locks.lock(doc_id)
            except BaseException:
                with trio.CancelScope(shield=True):
                    await books.run_sync(lock_marks.drop, self.directory, doc_id)
                raise
            books.holds[doc_id] = 1
            how = "locked" if took else "lock was ours"
            log.info("spool: doc %d checked out for an editor (%s)", doc_id, how)
        finally:
            del books.checkouts[doc_id]
            done.set()

    async def let_go(self, doc_id: int) -> None:
        """An editor's lock file is gone: the last one ends the check-out, by undoing
        it when nothing of a save holds the lock (a save under way ends it with its own
        check-in). An unlock that fails keeps its mark: the next start releases it."""
        books = self._books
        count = books.holds.get(doc_id, 0)
        if count > 1:
            books.holds[doc_id] = count - 1
            return
        if not count:
            return
        del books.holds[doc_id]
        while doc_id in books.checkouts:
            await books.checkouts[doc_id].wait()
        if doc_id in books.entries or doc_id in books.holds:
            return
        with trio.CancelScope(shield=True):
            if await self._locks.unlock_quietly(doc_id):
                log.info("spool: doc %d check-out for an editor ended", doc_id)
        books.notify()

    async def let_go_all(self) -> None:
        """The mount stops: every check-out its editors' lock files hold is ended."""
        for doc_id in list(self._books.holds):
            self._books.holds[doc_id] = 1
            await self.let_go(doc_id)
