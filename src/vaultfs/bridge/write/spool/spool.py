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

An entry moves through these states (each one written to disk before it matters):

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
and nothing in the vault is replaced (``_conflict``). Every lock is recorded before it
is asked for (``store.mark_lock``) and the record removed once it is released, so a
restart releases every lock that no entry took over (``_release_stale_locks``).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import logging
import math
import os
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from vaultfs.bridge.tree.tree import latest_version
from vaultfs.bridge.write.spool import creates, lost, store
from vaultfs.bridge.write.spool.entry import (
    EDITING,
    PENDING,
    UNLOCKING,
    UPLOADING,
    SpoolEntry,
)
from vaultfs.bridge.write.spool.failures import NOT_PROCESSED, PERMANENT, describe, retry_delay
from vaultfs.bridge.write.spool.streaming import STREAM_FROM, DraftStream
from vaultfs.client import VaultClient, backoff, surely_not_sent
from vaultfs.errors import (
    CheckInConflict,
    InvalidDocument,
    LockedByOther,
    OperationNotAllowed,
    VaultError,
)
from vaultfs.wire import parse_datetime

if TYPE_CHECKING:  # handed in by the mount
    from vaultfs.bridge.write.spool.uploads import Uploads

__all__ = ["CheckIn", "CheckedIn", "Spool", "Start", "StartFrom", "start_from"]

log = logging.getLogger(__name__)


#: Background uploads at once (a check-in by close() does not wait for these).
_BACKGROUND_UPLOADS = 4
#: How far apart the vault's clock and ours may be (seconds): a version created this
#: long before a check-out from the index began is taken for one the index missed
_CLOCK_SLACK = 5.0


@dataclass(frozen=True)
class Start:
    """What a check-out starts from, as read once the lock is held."""

    #: the content to copy into the spool file (None: start empty)
    content: Path | None
    #: md5 of the vault's latest content (None: unknown)
    base_md5: str | None
    #: the name the vault gives the file (uploads carry it)
    filename: str
    #: the latest version (``M.m``) the edit starts from (None: unknown)
    base_version: str | None = None
    #: read from the vault once the lock was held (False: from the mount's index)
    base_read: bool = True


@dataclass(frozen=True)
class CheckIn:
    """What a check-in left in the vault: the document unlocked, and the new version
    (None when nothing was uploaded) with its checksum and size; ``mtime_ns`` is the
    time of the last change the mount saw written."""

    version: tuple[int, int] | None
    md5: str | None
    size: int
    mtime_ns: int


#: Reads the starting point of a check-out. ``begin`` calls it only once the lock is
#: held, so the content an edit starts from is the vault's latest, never an older copy.
StartFrom = Callable[[], Awaitable[Start]]
#: Told of every check-in the spool finished (doc id, what it left), whoever made it
#: (a release, a rename, the retry worker, the replay at start), so the tree shows it
#: at once.
CheckedIn = Callable[[int, CheckIn], Awaitable[None]]


def start_from(
    content: Path | None,
    *,
    filename: str,
    base_md5: str | None,
    base_version: str | None = None,
) -> StartFrom:
    """A starting point known in advance (tests, and content that is local already)."""

    async def start() -> Start:
        return Start(content, base_md5, filename, base_version)

    return start


def _fsync_and_close(fd: int) -> None:
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
        client: VaultClient,
        *,
        user_id: int | None = None,
        retry_initial: float = 1.0,
        retry_max: float = 300.0,
        keepalive_interval: float = 240.0,
        run_sync: Callable[..., Awaitable[Any]] = trio.to_thread.run_sync,
        on_checked_in: CheckedIn | None = None,
        uploads: Uploads | None = None,
    ) -> None:
        self.directory = directory
        #: the other kind of entry: files written into renditions/ and attachments/
        self.uploads = uploads
        if uploads is not None:
            uploads.on_change.append(self._notify)
        self._on_checked_in = on_checked_in
        #: runs a blocking disk step (hashing, fsync, renames) off the trio loop; unit
        #: tests run them inline so that virtual time never jumps mid-step
        self._run_sync = run_sync
        self.client = client
        self._user_id = user_id
        self._retry_initial = retry_initial
        self._retry_max = retry_max
        self._keepalive_interval = keepalive_interval
        self._rng = random.Random()
        self._entries: dict[int, SpoolEntry] = {}
        #: check-outs in progress, so that two opens of one document make one entry
        self._checkouts: dict[int, trio.Event] = {}
        #: drafts being sent while they are written (``streaming``), by document
        self._streams: dict[int, DraftStream] = {}
        self._changed = trio.Event()
        self._nursery: trio.Nursery | None = None
        self._background = trio.CapacityLimiter(_BACKGROUND_UPLOADS)
        store.ensure_private_dir(directory)
        for record in lost.usable_entries(directory):
            self._load(record)
        lost.rescue_scratch(directory)

    def _load(self, record: store.EntryRecord) -> None:
        if record.state == EDITING:
            log.warning(
                "spool: doc %d was open when the daemon stopped; checking it in", record.doc_id
            )
            record.state = PENDING
            store.write_record(self.directory, record)
        path = store.data_path(self.directory, record.doc_id)
        entry = SpoolEntry(self.directory, record, os.open(path, os.O_RDWR))
        self._entries[record.doc_id] = entry
        log.info(
            "spool: doc %d found %s (%d tries so far)", record.doc_id, record.state, record.attempts
        )

    # --- queries -------------------------------------------------------------

    def entry(self, doc_id: int) -> SpoolEntry | None:
        return self._entries.get(doc_id)

    def is_me(self, user_id: object) -> bool:
        me = self._user_id if self._user_id is not None else self.client.user_id
        return me is not None and str(user_id) == str(me)

    async def lock_holder(self, doc_id: int) -> object | None:
        """Who holds the document's lock, as the vault says now (one call)."""
        lock = await self.client.get_lock(doc_id)
        return lock.get("locked_by__v") if lock else None

    def pending(self) -> list[dict[str, Any]]:
        """Every entry (open ones too), oldest first, for the status files."""
        now = time.time()
        return [
            {
                "doc_id": e.doc_id,
                "filename": e.record.filename,
                "state": e.state,
                "age_seconds": round(max(0.0, now - e.record.created), 3),
                "attempts": e.record.attempts,
                "last_error": e.record.last_error,
            }
            for e in sorted(self._entries.values(), key=lambda e: e.record.created)
        ] + (self.uploads.pending() if self.uploads is not None else [])

    def lost_and_found(self) -> list[Path]:
        return lost.list_lost(self.directory)

    def lost_records(self) -> list[dict[str, Any]]:
        return lost.lost_records(self.directory)

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

    def _busy(self) -> bool:
        uploading = self.uploads is not None and self.uploads.busy()
        return uploading or any(e.state != EDITING for e in self._entries.values())

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
            existing = self._entries.get(doc_id)
            if existing is not None:
                async with existing.lock:
                    if self._entries.get(doc_id) is existing:
                        existing.failures = 0
                        # What is sent next is what the user writes now; an upload
                        # whose fate is unknown only counts if it holds that.
                        existing.record.sent_md5 = None
                        await self._set_state(existing, EDITING)
                        log.info("spool: doc %d reopened from the spool", doc_id)
                        return existing
                continue  # checked in while we waited: check out afresh
            if doc_id in self._checkouts:
                await self._checkouts[doc_id].wait()
                continue
            break
        done = self._checkouts[doc_id] = trio.Event()
        try:
            return await self._check_out(doc_id, start)
        finally:
            del self._checkouts[doc_id]
            done.set()

    async def _check_out(self, doc_id: int, start: StartFrom) -> SpoolEntry:
        # Recorded before the lock is asked for: a daemon that dies from here on leaves
        # a mark, and the next start releases the lock unless an entry took it over.
        await self._run_sync(store.mark_lock, self.directory, doc_id)
        locked_at = time.time()
        held = took_lock = False
        try:
            took_lock = await self._lock(doc_id)
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
            fd, md5 = await self._run_sync(
                store.create_entry, self.directory, record, begin.content
            )
        except BaseException:
            with trio.CancelScope(shield=True):
                if held:  # no entry holds the lock: leave the vault unlocked
                    await self._unlock_quietly(doc_id)
                else:
                    store.drop_lock_mark(self.directory, doc_id)
            raise
        entry = SpoolEntry(self.directory, record, fd, md5)
        self._entries[doc_id] = entry
        self._notify()
        log.info(
            "spool: doc %d checked out (%s)", doc_id, "locked" if took_lock else "lock was ours"
        )
        return entry

    async def _lock(self, doc_id: int) -> bool:
        """Lock the document; False when it was already locked by us.

        Any refusal is followed by asking who holds the lock: the vault refuses a
        second lock even to its holder, and an answer lost on the way back may hide
        a lock that was taken. When that cannot be asked either, the refusal stands.
        A vault that the lock surely did not reach is not asked: open() fails fast.
        """
        try:
            await self.client.lock(doc_id)
            return True
        except VaultError as refusal:
            if surely_not_sent(refusal):
                raise
            try:
                lock = await self.client.get_lock(doc_id)
            except VaultError:
                raise refusal from None
            if not lock:
                raise  # nobody holds it: the refusal was about something else
            holder = lock.get("locked_by__v")
            if self.is_me(holder):
                return False
            log.info("spool: doc %d is locked by user %s", doc_id, holder)
            raise LockedByOther(f"document {doc_id} is locked by user {holder}") from refusal

    # --- check in ------------------------------------------------------------

    def wrote(self, entry: SpoolEntry) -> None:
        """After a write to ``entry``: tell its stream there is more, or start one once
        the content is big enough and has only grown at its end (one per check-out: a
        stream that stopped is not started again)."""
        stream = self._streams.get(entry.doc_id)
        if stream is not None:
            stream.wake()
            return
        run = entry.append_run()
        size = entry.appended(run) if run is not None else None
        if self._nursery is None or entry.state != EDITING or size is None or size < STREAM_FROM:
            return
        stream = self._streams[entry.doc_id] = DraftStream(entry, self.client)
        self._nursery.start_soon(stream.run)

    async def commit(self, entry: SpoolEntry) -> None:
        """Check the content in as a new draft and release the lock.

        Returns once the vault has the draft (or the content was unchanged). Raises
        the failure otherwise: a retryable one leaves the entry pending for the
        worker, any other has moved the content to lost+found.
        """
        async with entry.lock:
            if self._entries.get(entry.doc_id) is not entry:
                return  # already checked in
            # On disk the record says editing until the next state is written (the upload
            # or a failure): a replay after a crash checks both in alike.
            entry.record.state = PENDING
            stream = self._take_stream(entry)
            failure: Exception | None = None
            async with trio.open_nursery() as nursery:
                # A failed close() promises content that is durable in the spool, but the
                # upload need not wait for the fsync: it runs alongside, from the moment
                # the upload is sent (after the ``uploading`` record: an fsync under way
                # would hold up the record's own), and a failure waits for it.
                fd, syncing = entry.dup_fd(), False

                def sync_alongside() -> None:
                    nonlocal syncing
                    if not syncing:
                        syncing = True
                        nursery.start_soon(self._sync, entry.doc_id, fd)

                try:
                    await self._attempt_locked(entry, on_send=sync_alongside, stream=stream)
                except Exception as exc:  # raised once the content is durable (and as it
                    failure = exc  # is: a nursery would wrap it in an exception group)
                    sync_alongside()
                finally:
                    if stream is not None:
                        stream.abort("checked in without it")  # nothing once it finished
                    if not syncing:
                        os.close(fd)  # checked in without an upload: nothing to keep
                    if self._entries.get(entry.doc_id) is entry:
                        self._schedule(entry)
            if failure is not None:
                raise failure

    async def _sync(self, doc_id: int, fd: int) -> None:
        """fsync and close ``fd``; a failure is logged (the upload may have made it moot;
        if the upload failed too, close() fails anyway)."""
        try:
            with trio.CancelScope(shield=True):  # a promise to keep; it also closes ``fd``
                await self._run_sync(_fsync_and_close, fd)
        except OSError as exc:
            log.error("spool: doc %d content could not be made durable: %s", doc_id, exc)

    async def _attempt(self, entry: SpoolEntry) -> None:
        async with entry.lock:
            await self._attempt_locked(entry)

    async def _attempt_locked(
        self,
        entry: SpoolEntry,
        on_send: Callable[[], None] | None = None,
        stream: DraftStream | None = None,
    ) -> None:
        """One try at checking ``entry`` in; ``entry.lock`` is held. ``on_send`` is
        called as the upload is sent; ``stream`` is the draft already being sent while
        the content was written, if any.

        Raises the failure of the upload after recording it (retryable) or after
        moving the content to lost+found (permanent). A failure to unlock after the
        draft is in is not raised: the content is safe, the worker unlocks later.
        """
        if self._entries.get(entry.doc_id) is not entry or entry.state == EDITING:
            return
        if entry.record.write_failed is not None:
            await self._keep_failed_write(entry)
        if entry.state != UNLOCKING:
            entry.record.attempts += 1
            try:
                await self._upload(entry, on_send, stream)
            except CheckInConflict as exc:
                # Not ours to replace, nor (any more) ours to unlock.
                await self._to_lost_and_found(entry, reason=describe(exc))
                await self._run_sync(store.drop_lock_mark, self.directory, entry.doc_id)
                raise
            except PERMANENT as exc:
                await self._to_lost_and_found(entry, reason=describe(exc))
                if isinstance(exc, InvalidDocument):  # gone, and its lock with it
                    await self._run_sync(store.drop_lock_mark, self.directory, entry.doc_id)
                else:
                    await self._unlock_quietly(entry.doc_id)
                raise
            except (VaultError, OSError) as exc:
                await self._failed(entry, exc)
                raise
        try:
            await self.client.unlock(entry.doc_id)
        except PERMANENT as exc:
            # The draft is in; a lock we cannot release (document deleted, access
            # withdrawn) is the vault's business now.
            log.warning(
                "spool: doc %d unlock refused (%s); draft is in", entry.doc_id, describe(exc)
            )
        except (VaultError, OSError) as exc:
            await self._failed(entry, exc)
            log.warning("spool: doc %d draft is in; unlock will be retried", entry.doc_id)
            return
        await self._run_sync(store.drop_lock_mark, self.directory, entry.doc_id)
        done = CheckIn(entry.checked_in, entry.record.base_md5, entry.size(), entry.mtime_ns)
        await self._remove(entry)
        log.info("spool: doc %d checked in and unlocked", entry.doc_id)
        await self._show_check_in(entry.doc_id, done)

    async def _keep_failed_write(self, entry: SpoolEntry) -> None:
        """Content a write failed on goes to lost+found, and the failure to close()."""
        why = entry.record.write_failed
        try:
            await self._to_lost_and_found(entry, reason=f"WRITE_FAILED: {why}")
        except OSError as exc:  # a full disk again: tried later, never uploaded
            await self._failed(entry, exc)
            raise
        await self._unlock_quietly(entry.doc_id)
        raise OSError(errno.EIO, f"document {entry.doc_id}: {why}; content kept in lost+found")

    async def _upload(
        self,
        entry: SpoolEntry,
        on_send: Callable[[], None] | None,
        stream: DraftStream | None = None,
    ) -> None:
        """Upload the content as a draft unless the vault has it already: by ending
        ``stream`` when it sent the whole content, else by sending the file. One call
        first verifies what the draft would replace (``_conflict``)."""
        doc_id, record = entry.doc_id, entry.record
        if not entry.modified and not record.unconfirmed:
            log.info("spool: doc %d not written to; nothing uploaded", doc_id)
            await self._set_state(entry, UNLOCKING)
            return
        size = entry.size()
        md5 = await self._run_sync(entry.content_md5)
        if not record.unconfirmed and record.base_read and md5 == (record.base_md5 or "").lower():
            log.info("spool: doc %d unchanged; nothing uploaded", doc_id)
            await self._set_state(entry, UNLOCKING)
            return
        document = (await self.client.get_document(doc_id)).get("document") or {}
        in_vault = str(document.get("md5checksum__v") or "").lower()
        # ``sent_md5`` (kept until a reopen) also covers content on disk that differs
        # from what was sent: the upload runs while the content is being fsynced, and a
        # power loss then may leave the file torn even though the vault has it all.
        if record.unconfirmed and in_vault in (md5, record.sent_md5):
            log.info("spool: doc %d earlier upload had arrived; not sent again", doc_id)
            await self._uploaded(entry, in_vault, latest_version(document))
            return
        conflict = _conflict(record, document)
        if conflict is not None:
            raise CheckInConflict(f"document {doc_id} ({record.filename}): {conflict}")
        if md5 == in_vault:
            log.info("spool: doc %d same as the vault's latest; nothing uploaded", doc_id)
            record.unconfirmed, record.sent_md5 = False, None
            await self._set_state(entry, UNLOCKING)
            return
        record.unconfirmed, record.sent_md5 = True, md5
        await self._set_state(entry, UPLOADING)
        if on_send is not None:
            on_send()
        log.info("spool: doc %d uploading draft (try %d)", doc_id, record.attempts)
        try:
            version = await stream.finish(size, md5) if stream is not None else None
            # The upload carries the document's file name as data (the spool file is
            # named by the document's id).
            major, minor = version or await self.client.create_draft(
                doc_id, entry.path, filename=record.filename
            )
        except NOT_PROCESSED:
            record.unconfirmed, record.sent_md5 = False, None
            await self._set_state(entry, PENDING)
            raise
        except OperationNotAllowed as exc:
            # Refused as checked out by someone else: the lock was taken over.
            raise CheckInConflict(f"document {doc_id} ({record.filename}): {exc}") from exc
        log.info("spool: doc %d draft %d.%d created", doc_id, major, minor)
        await self._uploaded(entry, md5, (major, minor))

    async def _show_check_in(self, doc_id: int, done: CheckIn) -> None:
        if self._on_checked_in is None:
            return
        try:
            await self._on_checked_in(doc_id, done)
        except (VaultError, OSError) as exc:  # shown at the next poll instead
            log.warning("spool: doc %d reading it after its check-in failed: %s", doc_id, exc)

    async def _uploaded(
        self, entry: SpoolEntry, md5: str, version: tuple[int, int] | None
    ) -> None:
        # The vault's latest content is now ours: a reopen that changes nothing
        # before the unlock is done must not upload it again.
        entry.record.base_md5 = md5
        entry.record.base_read = True
        if version is not None:
            entry.record.base_version = f"{version[0]}.{version[1]}"
        entry.checked_in = version
        entry.record.unconfirmed, entry.record.sent_md5 = False, None
        await self._set_state(entry, UNLOCKING)

    async def _failed(self, entry: SpoolEntry, exc: BaseException) -> None:
        entry.failures += 1
        entry.record.last_error = describe(exc)
        delay = retry_delay(exc, entry.failures, self._retry_initial, self._retry_max, self._rng)
        entry.next_attempt = trio.current_time() + delay
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

    async def _unlock_quietly(self, doc_id: int) -> bool:
        """Release a lock (its mark too); False when that failed (the mark stays, and
        the next start tries again)."""
        try:
            await self.client.unlock(doc_id)
        except VaultError as exc:
            log.warning("spool: doc %d unlock failed: %s", doc_id, describe(exc))
            if not isinstance(exc, PERMANENT):
                return False
        await self._run_sync(store.drop_lock_mark, self.directory, doc_id)
        return True

    async def _release_stale_locks(self) -> None:
        """Release every lock an earlier daemon of this cache took and no entry took
        over (it died between the lock and the entry, or before the unlock), trying
        again with the backoff while the vault cannot be reached."""
        for failures in itertools.count(1):
            stale = [d for d in store.lock_marks(self.directory) if d not in self._entries]
            left = []
            for doc_id in stale:
                if doc_id in self._entries or doc_id in self._checkouts:
                    continue  # checked out again since
                log.warning("spool: doc %d lock left by an earlier daemon; releasing it", doc_id)
                if not await self._unlock_quietly(doc_id):
                    left.append(doc_id)
            if not left:
                return
            await trio.sleep(backoff(self._retry_initial, failures - 1, self._retry_max, self._rng))

    # --- entry bookkeeping ---------------------------------------------------

    async def _set_state(self, entry: SpoolEntry, state: str) -> None:
        entry.record.state = state
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

    # --- the worker ----------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Replay what was found on disk, retry failed check-ins, keep the session
        alive during edits. Runs until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            try:
                for entry in list(self._entries.values()):
                    self._schedule(entry)
                nursery.start_soon(self._release_stale_locks)
                nursery.start_soon(creates.replay, self.directory, self.client, self.keep_lost)
                nursery.start_soon(self._keep_alive)
                if self.uploads is not None:
                    nursery.start_soon(self.uploads.run)
                task_status.started()
                await trio.sleep_forever()
            finally:
                self._nursery = None

    def _schedule(self, entry: SpoolEntry) -> None:
        if self._nursery is not None and not entry.retrying and entry.state != EDITING:
            entry.retrying = True
            self._nursery.start_soon(self._retry_loop, entry)

    async def _retry_loop(self, entry: SpoolEntry) -> None:
        """Try ``entry`` whenever its backoff expires, until it leaves the spool or is
        opened again (a later close() schedules it anew)."""
        try:
            while self._entries.get(entry.doc_id) is entry and entry.state != EDITING:
                changed = entry.changed
                if trio.current_time() < entry.next_attempt:
                    # flush_now() and state changes wake us to look again
                    with trio.move_on_at(entry.next_attempt):
                        await changed.wait()
                    continue
                async with self._background:
                    await self._attempt_quietly(entry)
        finally:
            entry.retrying = False

    async def _attempt_quietly(self, entry: SpoolEntry) -> None:
        with contextlib.suppress(VaultError, OSError):  # recorded and logged by _attempt
            await self._attempt(entry)

    async def _keep_alive(self) -> None:
        while True:
            await trio.sleep(self._keepalive_interval)
            if any(e.state == EDITING for e in self._entries.values()):
                try:
                    await self.client.keep_alive()
                except VaultError as exc:
                    log.warning("spool: keep-alive failed: %s", describe(exc))

    async def flush_now(self) -> None:
        """Try every entry waiting for check-in now (failures stay pending)."""
        async with trio.open_nursery() as nursery:
            if self.uploads is not None:
                nursery.start_soon(self.uploads.flush_now)
            for entry in list(self._entries.values()):
                if entry.state != EDITING:
                    nursery.start_soon(self._attempt_quietly, entry)

    async def wait_idle(self, timeout: float | None) -> bool:  # noqa: ASYNC109 - the core's API
        """Wait until nothing waits for check-in; False when ``timeout`` ran out first."""
        with trio.move_on_after(math.inf if timeout is None else timeout):
            while True:
                changed = self._changed
                if not self._busy():
                    return True
                await changed.wait()
        return False


def _conflict(record: store.EntryRecord, document: dict[str, Any]) -> str | None:
    """Why a check-in of ``record`` would replace what its edit did not start from,
    as ``document`` (the vault's latest record, read just now) shows; None: it would
    not. The lock must still be held (``locked__v``: a lock held by another user makes
    the upload itself refused), and no version may have come after the edit's base."""
    if not document.get("locked__v"):
        return "the check-out was undone or released elsewhere while this edit was open"
    version = latest_version(document)
    latest = f"{version[0]}.{version[1]}" if version else None
    if record.base_version is None or latest == record.base_version:
        return None
    if not record.base_read:
        # The base came from the index, which may be a poll behind: a version made
        # before this check-out began is the true base, not a conflict.
        try:
            created = parse_datetime(str(document.get("version_creation_date__v"))).timestamp()
        except ValueError:
            created = None
        if created is not None and created < record.locked_at - _CLOCK_SLACK:
            return None
    return (
        f"version {latest} was checked in by someone else after this edit started from "
        f"version {record.base_version}"
    )
