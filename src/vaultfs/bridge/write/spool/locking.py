"""The spool's locks on the vault: taking one, releasing one, and releasing at start
the locks an earlier daemon left.

Every lock is recorded (``lock_marks.mark``) before it is asked for and the mark dropped
once it is released, so ``release_stale_locks`` finds every lock no entry took over.
A refused lock is followed by asking who holds it: the vault refuses a second lock even
to its holder. ``SpoolLocking`` is a part of ``Spool``, handed the spool's shared
``SpoolBookkeeping``.
"""

from __future__ import annotations

import logging
import time

import trio

from vaultfs.bridge.write.spool import lock_marks
from vaultfs.bridge.write.spool.bookkeeping import SpoolBookkeeping
from vaultfs.bridge.write.spool.failures import PERMANENT, describe
from vaultfs.bridge.write.spool.interface import CheckIn
from vaultfs.client import Attempt, retrying, surely_not_sent
from vaultfs.errors import LockedByOther, VaultError

__all__ = ["SpoolLocking"]

log = logging.getLogger(__name__)


class SpoolLocking:
    """Locks taken and released for the spool's entries."""

    def __init__(self, books: SpoolBookkeeping) -> None:
        self._books = books

    def is_me(self, user_id: object) -> bool:
        me = self._books.user_id
        me = me if me is not None else self._books.client.user_id
        return me is not None and str(user_id) == str(me)

    async def lock_holder(self, doc_id: int) -> object | None:
        """Who holds the document's lock, as the vault says now (one call)."""
        lock = await self._books.client.get_lock(doc_id)
        return lock.get("locked_by__v") if lock else None

    async def lock(self, doc_id: int) -> bool:
        """Lock the document; False when it was already locked by us.

        Any refusal is followed by asking who holds the lock: the vault refuses a
        second lock even to its holder, and an answer lost on the way back may hide
        a lock that was taken. When that cannot be asked either, the refusal stands.
        A vault that the lock surely did not reach is not asked: open() fails fast.
        """
        try:
            await self._books.client.lock(doc_id)
            return True
        except VaultError as refusal:
            if surely_not_sent(refusal):
                raise
            try:
                lock = await self._books.client.get_lock(doc_id)
            except VaultError:
                raise refusal from None
            if not lock:
                raise  # nobody holds it: the refusal was about something else
            holder = lock.get("locked_by__v")
            if self.is_me(holder):
                return False
            log.info("spool: doc %d is locked by user %s", doc_id, holder)
            raise LockedByOther(f"document {doc_id} is locked by user {holder}") from refusal

    async def unlock_quietly(self, doc_id: int) -> bool:
        """Release a lock (its mark too); False when that failed (the mark stays, and
        the next start tries again)."""
        try:
            await self._release(doc_id)
        except VaultError:
            return False
        return True

    async def _release(self, doc_id: int) -> None:
        """Release a lock and drop its mark; raises a failure that may pass (the mark
        stays). A refusal for good drops the mark: the lock is the vault's business."""
        try:
            await self._books.client.unlock(doc_id)
        except VaultError as exc:
            log.warning("spool: doc %d unlock failed: %s", doc_id, describe(exc))
            if not isinstance(exc, PERMANENT):
                raise
        await self._books.run_sync(lock_marks.drop, self._books.directory, doc_id)
        # Shown unlocked at once, as a check-in is (nothing uploaded).
        await self._books.show_check_in(doc_id, CheckIn(None, None, 0, time.time_ns()))

    async def release_stale_locks(self) -> None:
        """Release every lock an earlier daemon of this cache took and no entry took
        over (it died between the lock and the entry, or before the unlock), trying
        again under the check-ins' policy while the vault cannot be reached."""
        books = self._books

        async def release_all(attempt: Attempt) -> None:
            failure: VaultError | None = None
            for doc_id in lock_marks.marked(books.directory):
                if doc_id in books.entries or doc_id in books.checkouts or doc_id in books.holds:
                    continue  # taken over by an entry, or checked out again since
                log.warning("spool: doc %d lock left by an earlier daemon; releasing it", doc_id)
                # A check-out asked meanwhile (a save, an editor's lock file, a WebDAV
                # LOCK: this runs beside what the daemon serves) waits for the release
                # and then locks afresh: taken before it, the lock would be "ours
                # already" and then released under it.
                done = books.checkouts[doc_id] = trio.Event()
                try:
                    await self._release(doc_id)
                except VaultError as exc:
                    failure = exc  # the others are still tried
                finally:
                    del books.checkouts[doc_id]
                    done.set()
            if failure is not None:
                raise failure

        await retrying(
            release_all,
            policy=books.retry,
            rng=books.rng,
            what="releasing the locks an earlier daemon left",
            retryable=lambda exc: True,
        )
