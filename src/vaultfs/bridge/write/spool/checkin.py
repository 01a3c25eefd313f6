"""Checking an entry in: the upload as a new draft, the unlock, and the retries.

``SpoolCheckIn`` owns one try at a check-in (``_attempt_locked``: verify what the draft
would replace, upload unless the vault has the content already, unlock), ``commit``
(the check-in close() waits for, with the fsync run alongside the upload), starting a
streamed draft while content is written (``wrote``), and the retry loop of an entry
left pending. A retryable failure leaves the entry pending; any other moves its content
to lost+found. It is handed the spool's shared ``SpoolBookkeeping`` (entries, records,
and the client's leases: a save lets its lease go once its draft is in) by ``Spool``.

Also whether a check-in would replace what its edit did not start from (``conflict``):
one call before an upload reads the document's latest record, and from it the check-out
must still hold and no version may have come after the edit's base (a base taken from
the mount's index may be a poll behind, and is allowed for that).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
from collections.abc import Callable
from typing import Any

import trio

from vaultfs.bridge.tree.versions import latest_version
from vaultfs.bridge.write.lease import Reason
from vaultfs.bridge.write.spool import store
from vaultfs.bridge.write.spool.bookkeeping import SpoolBookkeeping
from vaultfs.bridge.write.spool.entry import EDITING, PENDING, UNLOCKING, UPLOADING, SpoolEntry
from vaultfs.bridge.write.spool.interface import CheckIn
from vaultfs.bridge.write.spool.queue import NOT_PROCESSED, PERMANENT, describe
from vaultfs.bridge.write.spool.streaming import STREAM_FROM, DraftStream
from vaultfs.errors import (
    CheckInConflict,
    InvalidDocument,
    LockedByOther,
    OperationNotAllowed,
    VaultError,
)
from vaultfs.wire import parse_datetime

__all__ = ["SpoolCheckIn", "conflict"]

log = logging.getLogger(__name__)

#: How far apart the vault's clock and ours may be (seconds): a version created this
#: long before a check-out from the index began is taken for one the index missed
_CLOCK_SLACK = 5.0


def conflict(record: store.EntryRecord, document: dict[str, Any]) -> str | None:
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


def _fsync_and_close(fd: int) -> None:
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class SpoolCheckIn:
    """Check-ins of the spool's entries, by close() and by the retry loop."""

    def __init__(self, books: SpoolBookkeeping) -> None:
        self._books = books

    def wrote(self, entry: SpoolEntry) -> None:
        """After a write to ``entry``: tell its stream there is more, or start one once
        the content is big enough and has only grown at its end (one per check-out: a
        stream that stopped is not started again)."""
        stream = self._books.streams.get(entry.doc_id)
        if stream is not None:
            stream.wake()
            return
        run = entry.append_run()
        size = entry.appended(run) if run is not None else None
        if (
            self._books.nursery is None
            or self._books.leases.owed(entry.doc_id)  # offline: nothing is sent
            or entry.state != EDITING
            or size is None
            or size < STREAM_FROM
        ):
            return
        stream = self._books.streams[entry.doc_id] = DraftStream(entry, self._books.client)
        self._books.nursery.start_soon(stream.run)

    async def commit(self, entry: SpoolEntry) -> None:
        """Check the content in as a new draft and release the lock.

        Returns once the vault has the draft (or the content was unchanged). Raises
        the failure otherwise: a retryable one leaves the entry pending for the
        worker, any other has moved the content to lost+found.
        """
        async with entry.lock:
            if self._books.entries.get(entry.doc_id) is not entry:
                return  # already checked in
            # On disk the record says editing until the next state is written (the upload
            # or a failure): a replay after a crash checks both in alike.
            entry.record.move(PENDING)
            stream = self._books.take_stream(entry)
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
        # Let go: still in the spool, it is the queue's now (its next try is set).
        self._books.queue.notify()
        if failure is not None:
            raise failure

    async def _sync(self, doc_id: int, fd: int) -> None:
        """fsync and close ``fd``; a failure is logged (the upload may have made it moot;
        if the upload failed too, close() fails anyway)."""
        try:
            with trio.CancelScope(shield=True):  # a promise to keep; it also closes ``fd``
                await self._books.run_sync(_fsync_and_close, fd)
        except OSError as exc:
            log.error("spool: doc %d content could not be made durable: %s", doc_id, exc)

    async def attempt(self, entry: SpoolEntry) -> None:
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
        if self._books.entries.get(entry.doc_id) is not entry or entry.state == EDITING:
            return
        if entry.record.write_failed is not None:
            await self._keep_failed_write(entry)
        if entry.state != UNLOCKING:
            entry.record.attempts += 1
            try:
                await self._upload(entry, on_send, stream)
            except CheckInConflict as exc:
                # Not ours to replace, nor (any more) ours to unlock.
                await self._books.to_lost_and_found(entry, reason=describe(exc))
                self._books.leases.forget(entry.doc_id)
                raise
            except PERMANENT as exc:
                await self._books.to_lost_and_found(entry, reason=describe(exc))
                if isinstance(exc, InvalidDocument):  # gone, and its lock with it
                    self._books.leases.forget(entry.doc_id)
                else:
                    await self._books.leases.drop_quietly(entry.doc_id, Reason.SAVE)
                raise
            except (VaultError, OSError) as exc:
                await self._books.failed(entry, exc)
                raise
        released = await self._unlock(entry)
        if released is None:
            return
        held = not released
        done = CheckIn(
            entry.checked_in, entry.record.base_md5, entry.size(), entry.mtime_ns, locked=held
        )
        # The tree shows the new version before the entry goes: the entry's removal
        # awaits the disk, and a read meanwhile, with neither the entry nor the new
        # version to read from, got the version before the save.
        await self._books.show_check_in(entry.doc_id, done)
        await self._books.remove(entry)
        if held:  # an editor's lock file or a WebDAV lock holds it: its end ends it
            log.info("spool: doc %d checked in; still checked out", entry.doc_id)
        else:
            log.info("spool: doc %d checked in and unlocked", entry.doc_id)

    async def _unlock(self, entry: SpoolEntry) -> bool | None:
        """Let the save's lease go once its draft is in: True when the vault's lock is
        released, False when another reason (an editor's lock file, a WebDAV lock)
        holds it still, None when the release is left to a retry."""
        try:
            return await self._books.leases.drop(entry.doc_id, Reason.SAVE)
        except (VaultError, OSError) as exc:
            await self._books.failed(entry, exc)
            log.warning("spool: doc %d draft is in; unlock will be retried", entry.doc_id)
            return None

    async def _keep_failed_write(self, entry: SpoolEntry) -> None:
        """Content a write failed on goes to lost+found, and the failure to close()."""
        why = entry.record.write_failed
        try:
            await self._books.to_lost_and_found(entry, reason=f"WRITE_FAILED: {why}")
        except OSError as exc:  # a full disk again: tried later, never uploaded
            await self._books.failed(entry, exc)
            raise
        await self._books.leases.drop_quietly(entry.doc_id, Reason.SAVE)
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
            await self._books.set_state(entry, UNLOCKING)
            return
        size = entry.size()
        md5 = await self._books.run_sync(entry.content_md5)
        if not record.unconfirmed and record.base_read and md5 == (record.base_md5 or "").lower():
            log.info("spool: doc %d unchanged; nothing uploaded", doc_id)
            await self._books.set_state(entry, UNLOCKING)
            return
        settling = self._books.leases.owed(doc_id)
        try:
            # A save made offline: the vault's lock it owes first (``Leases.settle``).
            await self._books.leases.settle(doc_id)
        except LockedByOther as exc:
            raise CheckInConflict(
                f"document {doc_id} ({record.filename}): saved offline, and meanwhile {exc}"
            ) from exc
        document = (await self._books.client.get_document(doc_id)).get("document") or {}
        in_vault = str(document.get("md5checksum__v") or "").lower()
        # ``sent_md5`` (kept until a reopen) also covers content on disk that differs
        # from what was sent: the upload runs while the content is being fsynced, and a
        # power loss then may leave the file torn even though the vault has it all.
        if record.unconfirmed and in_vault in (md5, record.sent_md5):
            log.info("spool: doc %d earlier upload had arrived; not sent again", doc_id)
            await self._uploaded(entry, in_vault, latest_version(document))
            return
        refusal = conflict(record, document)
        if refusal is not None:
            if settling:  # the lock was taken for this check-in: it goes with it
                await self._books.leases.drop_quietly(doc_id, Reason.SAVE)
            raise CheckInConflict(f"document {doc_id} ({record.filename}): {refusal}")
        if md5 == in_vault:
            log.info("spool: doc %d same as the vault's latest; nothing uploaded", doc_id)
            record.unconfirmed, record.sent_md5 = False, None
            await self._books.set_state(entry, UNLOCKING)
            return
        # The fence: the lock is this client's still (not this user's other mount's,
        # machine's or WebDAV drive's, which the vault lets lock it too).
        refusal = await self._books.leases.verify(doc_id)
        if refusal is not None:
            raise CheckInConflict(f"document {doc_id} ({record.filename}): {refusal}")
        record.unconfirmed, record.sent_md5 = True, md5
        await self._books.set_state(entry, UPLOADING)
        if on_send is not None:
            on_send()
        log.info("spool: doc %d uploading draft (try %d)", doc_id, record.attempts)
        try:
            version = await stream.finish(size, md5) if stream is not None else None
            # The upload carries the document's file name as data (the spool file is
            # named by the document's id).
            major, minor = version or await self._books.client.create_draft(
                doc_id, entry.path, filename=record.filename
            )
        except NOT_PROCESSED:
            record.unconfirmed, record.sent_md5 = False, None
            await self._books.set_state(entry, PENDING)
            raise
        except OperationNotAllowed as exc:
            # Refused as checked out by someone else: the lock was taken over.
            raise CheckInConflict(f"document {doc_id} ({record.filename}): {exc}") from exc
        log.info("spool: doc %d draft %d.%d created", doc_id, major, minor)
        seen = latest_version(document)
        if seen is not None and major == seen[0] and minor > seen[1] + 1:
            # A version came between the verification and this draft: another client of
            # this user checked in under a lock the vault let both take (the lease's
            # last window). That save must stay the latest: it is made the latest again.
            await self._give_back(entry, (major, minor))
        await self._uploaded(entry, md5, (major, minor))

    async def _give_back(self, entry: SpoolEntry, ours: tuple[int, int]) -> None:
        """Make the version before ``ours`` (another client's save, which ``ours`` was
        not made from) the latest again, as a new draft of its content; raises the
        conflict that puts this save in lost+found."""
        doc_id, record = entry.doc_id, entry.record
        theirs = (ours[0], ours[1] - 1)
        temp = self._books.directory / f".give-back-{doc_id}"
        try:
            async with (
                self._books.client.download_file(doc_id, *theirs) as download,
                await trio.open_file(temp, "wb") as f,
            ):
                async for piece in download.pieces():
                    await f.write(piece)
            restored = await self._books.client.create_draft(doc_id, temp, filename=record.filename)
            outcome = f"its content is the latest again as version {restored[0]}.{restored[1]}"
        except (VaultError, OSError) as exc:
            outcome = f"making it the latest again failed ({describe(exc)})"
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temp)
        log.error("spool: doc %d draft %d.%d overtook version %d.%d", doc_id, *ours, *theirs)
        raise CheckInConflict(
            f"document {doc_id} ({record.filename}): version {theirs[0]}.{theirs[1]} was "
            f"checked in by another client of this user while this save (version "
            f"{ours[0]}.{ours[1]}, from version {record.base_version}) was sent; {outcome}"
        )

    async def _uploaded(self, entry: SpoolEntry, md5: str, version: tuple[int, int] | None) -> None:
        # The vault's latest content is now ours: a reopen that changes nothing
        # before the unlock is done must not upload it again.
        entry.record.base_md5 = md5
        entry.record.base_read = True
        if version is not None:
            entry.record.base_version = f"{version[0]}.{version[1]}"
        entry.checked_in = version
        entry.record.unconfirmed, entry.record.sent_md5 = False, None
        await self._books.set_state(entry, UNLOCKING)
