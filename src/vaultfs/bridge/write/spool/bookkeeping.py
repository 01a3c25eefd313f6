"""The spool's state and the bookkeeping of its entries.

``SpoolBookkeeping`` holds what a spool holds (entries, the client's check-outs as
``write.lease.Leases``, drafts being streamed, the background nursery), one object
shared by the spool's parts (``checkin``, and ``spool`` that owns them), and owns what
happens to one entry's record: moving it to a new state durably and telling waiters,
recording a failure with its retry delay, moving content to lost+found, removing a
checked-in entry, and telling the mount of a finished check-in.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from vaultfs.bridge.write.lease import Leases
from vaultfs.bridge.write.spool import lost, store
from vaultfs.bridge.write.spool.entry import SpoolEntry
from vaultfs.bridge.write.spool.interface import CheckedIn, CheckIn
from vaultfs.bridge.write.spool.queue import JobKind, WorkQueue, describe
from vaultfs.bridge.write.spool.states import EntryState
from vaultfs.bridge.write.spool.streaming import DraftStream
from vaultfs.client import VaultApi
from vaultfs.errors import VaultError

if TYPE_CHECKING:  # handed in by the mount
    from vaultfs.bridge.write.spool.uploads import Uploads

__all__ = ["SpoolBookkeeping"]

log = logging.getLogger(__name__)


class SpoolBookkeeping:
    """What a spool holds, shared by its parts (``Spool`` makes one and hands it to its
    check-in part), and the bookkeeping of one entry's record."""

    def __init__(
        self,
        directory: Path,
        client: VaultApi,
        leases: Leases,
        queue: WorkQueue,
        *,
        run_sync: Callable[..., Awaitable[Any]],
        on_checked_in: CheckedIn | None,
        uploads: Uploads | None,
    ) -> None:
        self.directory = directory
        self.client = client
        #: the other kind of entry: files written into renditions/ and attachments/
        self.uploads = uploads
        self.on_checked_in = on_checked_in
        #: runs a blocking disk step (hashing, fsync, renames) off the trio loop; unit
        #: tests run them inline so that virtual time never jumps mid-step
        self.run_sync = run_sync
        #: every check-out of this client: a save holds its document's lease while
        #: its entry exists (``Reason.SAVE``)
        self.leases = leases
        #: the one queue of the spool's durable jobs: every entry is a check-in in it
        self.queue = queue
        self.entries: dict[int, SpoolEntry] = {}
        #: drafts being sent while they are written (``streaming``), by document
        self.streams: dict[int, DraftStream] = {}
        #: the background nursery while it runs (``Spool.run``)
        self.nursery: trio.Nursery | None = None

    async def show_check_in(self, doc_id: int, done: CheckIn) -> None:
        if self.on_checked_in is None:
            return
        try:
            await self.on_checked_in(doc_id, done)
        except (VaultError, OSError) as exc:  # shown at the next poll instead
            log.warning("spool: doc %d reading it after its check-in failed: %s", doc_id, exc)

    def add(self, entry: SpoolEntry) -> None:
        """A checked-out document's entry: held, and a check-in in the queue."""
        self.entries[entry.doc_id] = entry
        self.queue.add(JobKind.CHECK_IN, entry.doc_id, entry)

    async def failed(self, entry: SpoolEntry, exc: BaseException) -> None:
        entry.record.last_error = describe(exc)
        self.queue.failed(entry, exc, f"doc {entry.doc_id} {entry.state}")
        try:
            await self.save(entry)
        except OSError as disk:  # a full disk: say so, the retry still happens
            log.error("spool: doc %d the failure could not be recorded: %s", entry.doc_id, disk)

    async def to_lost_and_found(self, entry: SpoolEntry, *, reason: str) -> None:
        """Move the content to lost+found (``reason``: ``TYPE: message``); the caller
        decides about the lock."""
        entry.record.last_error = reason
        kind, _, message = reason.partition(": ")
        why = {"error_type": kind, "error_message": message, "lost": time.time()}
        with trio.CancelScope(shield=True):  # disk and memory must agree afterwards
            target = await self.run_sync(lost.move_to_lost, self.directory, entry.record, why)
        self.forget(entry)
        log.error(
            "spool: doc %d cannot be checked in (%s); content kept in %s",
            entry.doc_id,
            entry.record.last_error,
            target,
        )

    async def set_state(self, entry: SpoolEntry, state: EntryState) -> None:
        """Move the entry (``IllegalTransition`` for a move not in the table), then
        make that durable and tell waiters."""
        entry.record.move(state)
        await self.save(entry)

    async def save(self, entry: SpoolEntry) -> None:
        """Make the record durable, then tell whoever waits on a change."""
        await self.run_sync(store.write_record, self.directory, entry.record)
        entry.poke()
        self.notify()

    async def remove(self, entry: SpoolEntry) -> None:
        self.forget(entry)
        gone = await self.run_sync(store.retire_entry, self.directory, entry.doc_id)
        if self.nursery is not None:  # deleting it is slow: not on the way to close()
            self.nursery.start_soon(self._discard, gone)
        else:
            await self._discard(gone)

    async def _discard(self, path: Path) -> None:
        try:
            await self.run_sync(store.discard, path)
        except OSError as exc:  # left for the next start's scan
            log.warning("spool: %s could not be deleted: %s", path.name, exc)

    def take_stream(self, entry: SpoolEntry) -> DraftStream | None:
        stream = self.streams.pop(entry.doc_id, None)
        if stream is not None and stream.entry is not entry:
            stream.abort("the entry is gone")
            return None
        return stream

    def forget(self, entry: SpoolEntry) -> None:
        stream = self.take_stream(entry)
        if stream is not None:
            stream.abort("the entry is gone")
        entry.close()
        if self.entries.get(entry.doc_id) is entry:
            del self.entries[entry.doc_id]
        self.queue.remove(JobKind.CHECK_IN, entry.doc_id, entry)
        entry.poke()

    def notify(self) -> None:
        self.queue.notify()
