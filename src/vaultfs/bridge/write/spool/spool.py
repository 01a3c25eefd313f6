"""The durable write-back spool: check out, spool, check in.

Owns the life of an edited document's content from the first open() for writing to
the draft being in the vault: the lock (check-out), the local spool file the writes
go to, the upload as a new draft and the unlock (check-in), and the background work
(``run``: the one queue, ``queue``, that retries what failed with backoff, also after
a crash of the daemon). Content that can never be checked in goes to ``lost+found``;
nothing a user wrote is dropped silently. The files on disk are managed by ``store``,
one entry's content and record by ``entry``; the behaviour is described for users in
docs/writing.md. The other kinds of job, a file written into renditions/ or
attachments/, a new document's create and a setfattr of a field, are ``uploads``',
``creates``' and ``field_sets``': the spool holds them (status, ``wait_idle``,
``flush_now``).

``Spool`` owns its parts, which share one ``bookkeeping`` object (what the spool
holds, an entry's record): ``checkin`` (uploads, unlocks, retries); no part inherits
another.
The vault's lock is not the spool's: a save holds its document's lease
(``write.lease``, ``Reason.SAVE``) from its check-out until its check-in lets it go.
This module checks out and answers the spool's callers, handing on to the part that
does the work. What callers hand in and get back is in
``interface``, imported from here.

An entry moves through these states (each one written to disk before it matters; the
states and the table of moves between them are ``states``'):

``editing``    open for writing; the queue leaves it alone
``pending``    closed; waiting to be uploaded (again)
``uploading``  an upload was sent and its outcome is unknown: before sending it again
               the vault's checksum is compared with the content's and with that of
               what was sent (the record's ``unconfirmed`` flag keeps that fact
               across a reopen)
``unlocking``  the draft is in the vault; releasing the lock is left to do

Before anything is uploaded, two calls verify that the check-in replaces only what
the edit started from: the lease still holds (``Leases.verify``: the lock is this
client's, with the date it took it) and the latest version is the one the edit began
with. Otherwise the content goes to lost+found as a conflict and nothing in the vault
is replaced (``conflict``).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from vaultfs import durable
from vaultfs.bridge.tree.locks import KeyedLocks
from vaultfs.bridge.write.lease import Leases, Reason
from vaultfs.bridge.write.spool import creates, lost, store
from vaultfs.bridge.write.spool.bookkeeping import SpoolBookkeeping
from vaultfs.bridge.write.spool.checkin import SpoolCheckIn
from vaultfs.bridge.write.spool.entry import EDITING, PENDING, SpoolEntry
from vaultfs.bridge.write.spool.field_sets import FieldSets
from vaultfs.bridge.write.spool.interface import (
    CheckedIn,
    CheckIn,
    Start,
    StartFrom,
    start_from,
)
from vaultfs.bridge.write.spool.queue import JobKind, WorkQueue, describe, pending_row
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
        leases: Leases | None = None,
        queue: WorkQueue | None = None,
        user_id: int | None = None,
        retry_initial: float = CHECK_INS.base_delay,
        retry_max: float = CHECK_INS.max_delay,
        keepalive_interval: float = 240.0,
        run_sync: Callable[..., Awaitable[Any]] = trio.to_thread.run_sync,
        on_checked_in: CheckedIn | None = None,
        uploads: Uploads | None = None,
        new_documents: creates.Creates | None = None,
        field_sets: FieldSets | None = None,
    ) -> None:
        retry = dataclasses.replace(CHECK_INS, base_delay=retry_initial, max_delay=retry_max)
        if leases is None:  # a spool of its own (tests): its check-outs are its alone
            leases = Leases(directory, client, user_id=user_id, retry=retry, run_sync=run_sync)
        if queue is None:  # and so is its queue
            queue = WorkQueue(retry)
        if new_documents is None:  # and its creates
            new_documents = creates.Creates(directory, client, queue=queue)
        #: the third kind of job: new documents' creates
        self.creates = new_documents
        if field_sets is None:  # and its field sets
            field_sets = FieldSets(directory, client, queue=queue)
        #: the fourth: setfattr of fields
        self.field_sets = field_sets
        books = self._books = SpoolBookkeeping(
            directory,
            client,
            leases,
            queue,
            run_sync=run_sync,
            on_checked_in=on_checked_in,
            uploads=uploads,
        )
        self._check_in = SpoolCheckIn(books)
        queue.kinds[JobKind.CHECK_IN] = self._check_in.attempt
        self._keepalive_interval = keepalive_interval
        #: one check-out at a time per document, so that two opens make one entry
        self._beginning: KeyedLocks[int] = KeyedLocks()
        durable.ensure_private_dir(directory)
        for record in lost.usable_entries(directory):
            self._load(record)
        books.leases.adopt_trips()
        lost.rescue_scratch(directory, creates.contents_in_flight(directory))

    def _load(self, record: store.EntryRecord) -> None:
        if record.state == EDITING:
            log.warning(
                "spool: doc %d was open when the daemon stopped; checking it in", record.doc_id
            )
            record.move(PENDING)
            store.write_record(self.directory, record)
        path = store.data_path(self.directory, record.doc_id)
        entry = SpoolEntry(self.directory, record, os.open(path, os.O_RDWR))
        self._books.add(entry)
        self._books.leases.adopt(record.doc_id, Reason.SAVE)  # the lock its daemon took
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
        """The background work: the queue (what a start found on disk is due at once,
        then every retry), the release of the locks an earlier daemon left
        (``write.lease``), and the session kept alive during edits. Runs until
        cancelled."""
        books = self._books
        async with trio.open_nursery() as nursery:
            books.nursery = nursery
            try:
                await nursery.start(books.queue.run)
                nursery.start_soon(books.leases.release_stale)
                nursery.start_soon(self._keep_alive)
                task_status.started()
                await trio.sleep_forever()
            finally:
                books.nursery = None

    async def _keep_alive(self) -> None:
        while True:
            await trio.sleep(self._keepalive_interval)
            if any(e.state == EDITING for e in self._books.entries.values()):
                try:
                    await self._books.client.keep_alive()
                except VaultError as exc:
                    log.warning("spool: keep-alive failed: %s", describe(exc))

    async def flush_now(self) -> None:
        """Try every job of the queue now (failures stay pending)."""
        await self._books.queue.flush_now()

    async def wait_idle(self, timeout: float | None) -> bool:  # noqa: ASYNC109 - the core's API
        """Wait until no job waits; False when ``timeout`` ran out first."""
        return await self._books.queue.wait_idle(timeout)

    def wrote(self, entry: SpoolEntry) -> None:
        self._check_in.wrote(entry)

    async def commit(self, entry: SpoolEntry) -> None:
        """Check ``entry`` in (``SpoolCheckIn.commit``): returns once the vault has it."""
        await self._check_in.commit(entry)

    @property
    def leases(self) -> Leases:
        """Every check-out of this client (a save holds one while its entry exists)."""
        return self._books.leases

    async def keep_lost(self, source: Path, filename: str, exc: VaultError) -> Path:
        return await self.creates.keep_lost(source, filename, exc)

    # --- queries -------------------------------------------------------------

    def entry(self, doc_id: int) -> SpoolEntry | None:
        return self._books.entries.get(doc_id)

    def pending(self) -> list[dict[str, Any]]:
        """Every job, for the status files: the saves (open ones too), the uploads, the
        creates and the field sets, each oldest first."""
        records = sorted((e.record for e in self._books.entries.values()), key=lambda r: r.created)
        uploads = self._books.uploads
        return (
            [
                pending_row(
                    r.doc_id, r.filename, r.state.value, r.created, r.attempts, r.last_error
                )
                for r in records
            ]
            + (uploads.pending() if uploads is not None else [])
            + self.creates.pending()
            + self.field_sets.pending()
        )

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
        check-in under way has finished. Two opens of one document make one entry.
        """
        async with self._beginning.hold(doc_id):
            while True:
                existing = self._books.entries.get(doc_id)
                if existing is None:
                    return await self._check_out(doc_id, start)
                async with existing.lock:
                    if self._books.entries.get(doc_id) is existing:
                        existing.failures = 0
                        # What is sent next is what the user writes now; an upload
                        # whose fate is unknown only counts if it holds that.
                        existing.record.sent_md5 = None
                        await self._books.set_state(existing, EDITING)
                        log.info("spool: doc %d reopened from the spool", doc_id)
                        return existing
                # checked in while we waited: check out afresh

    async def _check_out(self, doc_id: int, start: StartFrom) -> SpoolEntry:
        locked_at = time.time()
        leases = self._books.leases
        took_lock = await leases.take(doc_id, Reason.SAVE)
        try:
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
            with trio.CancelScope(shield=True):  # no entry holds the lock: let it go
                await leases.drop_quietly(doc_id, Reason.SAVE)
            raise
        entry = SpoolEntry(self.directory, record, fd, md5)
        self._books.add(entry)
        log.info(
            "spool: doc %d checked out (%s)", doc_id, "locked" if took_lock else "lock was ours"
        )
        return entry
