"""The spool's state and the bookkeeping of its entries.

``SpoolBookkeeping`` declares what a spool holds (entries, check-outs in progress,
drafts being streamed, the worker's nursery) and owns what happens to one entry's
record: saving a new state durably and telling waiters, recording a failure with its
retry delay, moving content to lost+found, removing a checked-in entry, and telling
the mount of a finished check-in. ``Spool`` (spool.py) builds on it.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from vaultfs.bridge.write.spool import lost, store
from vaultfs.bridge.write.spool.entry import SpoolEntry
from vaultfs.bridge.write.spool.failures import describe, schedule_retry
from vaultfs.bridge.write.spool.interface import CheckedIn, CheckIn
from vaultfs.bridge.write.spool.states import EntryState
from vaultfs.bridge.write.spool.streaming import DraftStream
from vaultfs.client import VaultApi
from vaultfs.errors import VaultError

if TYPE_CHECKING:  # handed in by the mount
    from vaultfs.bridge.write.spool.uploads import Uploads

__all__ = ["SpoolBookkeeping"]

log = logging.getLogger(__name__)


class SpoolBookkeeping:
    """What a spool holds (set by ``Spool.__init__``) and the bookkeeping of entries."""

    directory: Path
    client: VaultApi
    uploads: Uploads | None
    _on_checked_in: CheckedIn | None
    _run_sync: Callable[..., Awaitable[Any]]
    _user_id: int | None
    _retry_initial: float
    _retry_max: float
    _keepalive_interval: float
    _rng: random.Random
    _entries: dict[int, SpoolEntry]
    _checkouts: dict[int, trio.Event]
    _streams: dict[int, DraftStream]
    _changed: trio.Event
    _nursery: trio.Nursery | None
    _background: trio.CapacityLimiter

    async def keep_lost(self, source: Path, filename: str, exc: VaultError) -> Path:
        """Move a file the vault would not take (a new document's content) to
        lost+found, saying why; returns where it went."""
        why = {
            "doc_id": None,
            "filename": filename,
            "error_type": exc.type,
            "error_message": exc.message,
            "lost": time.time(),
        }
        with trio.CancelScope(shield=True):
            target = await self._run_sync(
                lost.keep_in_lost, self.directory, source, "new", filename, why
            )
        log.error("spool: %s could not be created (%s); content kept in %s", filename, exc, target)
        return target

    async def _show_check_in(self, doc_id: int, done: CheckIn) -> None:
        if self._on_checked_in is None:
            return
        try:
            await self._on_checked_in(doc_id, done)
        except (VaultError, OSError) as exc:  # shown at the next poll instead
            log.warning("spool: doc %d reading it after its check-in failed: %s", doc_id, exc)

    async def _failed(self, entry: SpoolEntry, exc: BaseException) -> None:
        entry.record.last_error = describe(exc)
        delay = schedule_retry(entry, exc, self._retry_initial, self._retry_max, self._rng)
        try:
            await self._save(entry)
        except OSError as disk:  # a full disk: say so, the retry still happens
            log.error("spool: doc %d the failure could not be recorded: %s", entry.doc_id, disk)
        log.warning(
            "spool: doc %d %s failed (%s); retry in %.1fs",
            entry.doc_id,
            entry.state,
            entry.record.last_error,
            delay,
        )

    async def _to_lost_and_found(self, entry: SpoolEntry, *, reason: str) -> None:
        """Move the content to lost+found (``reason``: ``TYPE: message``); the caller
        decides about the lock."""
        entry.record.last_error = reason
        kind, _, message = reason.partition(": ")
        why = {"error_type": kind, "error_message": message, "lost": time.time()}
        with trio.CancelScope(shield=True):  # disk and memory must agree afterwards
            target = await self._run_sync(lost.move_to_lost, self.directory, entry.record, why)
        self._forget(entry)
        log.error(
            "spool: doc %d cannot be checked in (%s); content kept in %s",
            entry.doc_id,
            entry.record.last_error,
            target,
        )

    async def _set_state(self, entry: SpoolEntry, state: EntryState) -> None:
        """Move the entry (``IllegalTransition`` for a move not in the table), then
        make that durable and tell waiters."""
        entry.record.move(state)
        await self._save(entry)

    async def _save(self, entry: SpoolEntry) -> None:
        """Make the record durable, then tell whoever waits on a change."""
        await self._run_sync(store.write_record, self.directory, entry.record)
        entry.poke()
        self._notify()

    async def _remove(self, entry: SpoolEntry) -> None:
        self._forget(entry)
        gone = await self._run_sync(store.retire_entry, self.directory, entry.doc_id)
        if self._nursery is not None:  # deleting it is slow: not on the way to close()
            self._nursery.start_soon(self._discard, gone)
        else:
            await self._discard(gone)

    async def _discard(self, path: Path) -> None:
        try:
            await self._run_sync(store.discard, path)
        except OSError as exc:  # left for the next start's scan
            log.warning("spool: %s could not be deleted: %s", path.name, exc)

    def _take_stream(self, entry: SpoolEntry) -> DraftStream | None:
        stream = self._streams.pop(entry.doc_id, None)
        if stream is not None and stream.entry is not entry:
            stream.abort("the entry is gone")
            return None
        return stream

    def _forget(self, entry: SpoolEntry) -> None:
        stream = self._take_stream(entry)
        if stream is not None:
            stream.abort("the entry is gone")
        entry.close()
        if self._entries.get(entry.doc_id) is entry:
            del self._entries[entry.doc_id]
        entry.poke()
        self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()
