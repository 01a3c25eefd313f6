"""WebDAV locks as the vault's check-out: LOCK of a source file checks it out, UNLOCK
(or the lock's expiry) checks it back in; a check-out a killed front left is ended at
the next start.

Owns the tie between WsgiDAV's lock storage and the vault's lock. WsgiDAV keeps the
WebDAV locks (tokens, depth, timeouts, the If headers of PUTs under a lock); this
storage takes the vault's lock when a lock is made on a document's latest source file
and releases it when the last WebDAV lock on it goes. A document another user holds
is refused with 423 Locked, naming the holder. Each PUT under a lock is a save of its
own (one version, ``resources``), whose check-in releases the vault's lock as every
save of the mount does; ``after_save`` takes it again at once while the WebDAV lock
is still held.

Every vault lock is marked on disk before it is asked for and the mark dropped once
it is released, as the spool marks its own (``write.spool.lock_marks``, in the
front's own ``CACHE_DIR/webdav/locks/``). WebDAV lock tokens live in memory only, so
a front killed while a lock is held leaves its mark and no token any client could
use again: the next start (``release_left``, before it serves) checks in, without a
new version, every marked document it still holds (one the spool holds a save of is
left to that save's check-in; one another user holds since is left alone).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import trio
from wsgidav.dav_error import DAVError
from wsgidav.lock_man.lock_storage import LockStorageDict

from vaultfs import errors
from vaultfs.bridge.fs.by_path import PathFileSystem
from vaultfs.bridge.webdav.calls import core
from vaultfs.bridge.write.spool import lock_marks
from vaultfs.bridge.write.spool.failures import PERMANENT
from vaultfs.client import VaultApi, surely_not_sent

__all__ = ["VaultLocks"]

log = logging.getLogger(__name__)


class VaultLocks(LockStorageDict):
    """``marks``: the directory of the marks (``lock_marks`` keeps them in ``locks/``)."""

    def __init__(self, pfs: PathFileSystem, client: VaultApi, marks: Path) -> None:
        super().__init__()
        self.pfs = pfs
        self.client = client
        self.marks = marks
        #: lock root -> the document whose vault lock it holds
        self._documents: dict[str, int] = {}

    def _document(self, path: str) -> int | None:
        try:
            return core(self.pfs.source_document, _path_of(path))
        except DAVError as exc:
            if exc.value == 404:
                return None  # a lock on a name not made yet: nothing of the vault's
            raise

    def create(self, path: str, lock: dict[str, Any]) -> Any:
        doc_id = self._document(path)
        if doc_id is not None:
            try:
                core(self._check_out, doc_id)
            except DAVError as exc:
                raise DAVError(exc.value, exc.context_info, add_headers=_holder(exc)) from exc
        token = super().create(path, lock)
        if doc_id is not None:
            self._documents[_path_of(lock["root"])] = doc_id
        return token

    def delete(self, token: Any) -> bool:
        lock = self._dict.get(token)
        deleted: bool = super().delete(token)
        root = lock.get("root") if lock else None
        path = _path_of(root) if root is not None else None
        doc_id = self._documents.get(path) if path is not None else None
        if path is not None and doc_id is not None and not self._dict.get(f"URL2TOKEN:{root}"):
            del self._documents[path]
            core(self._check_in, doc_id)
        return deleted

    def after_save(self, path: str) -> None:
        """A save checked in (and unlocked) a document: locked again while a WebDAV
        lock on it is held."""
        path = path.rstrip("/") or "/"
        doc_id = self._documents.get(path)
        if doc_id is None:
            return
        try:
            core(self._check_out, doc_id)
        except DAVError as exc:
            # The save is in (or durable in the spool): its answer says so. The WebDAV
            # lock holds no vault lock now (its UNLOCK releases none); the next save
            # under it checks the document out again, or is refused.
            del self._documents[path]
            log.warning("webdav: document %d saved but not locked again: %s", doc_id, exc)

    async def release_all(self) -> None:
        """The front stops: every vault lock its WebDAV locks hold is released."""
        for doc_id in set(self._documents.values()):
            await self._check_in(doc_id)
        self._documents.clear()

    async def release_left(self, saving: Callable[[int], bool]) -> None:
        """At start, before serving: end every check-out an earlier front of this cache
        left (killed with a lock held), without a new version. ``saving(doc_id)``: the
        spool holds a save of it, whose check-in ends it. A release that fails keeps
        its mark for the next start."""
        for doc_id in await trio.to_thread.run_sync(lock_marks.marked, self.marks):
            try:
                if saving(doc_id):
                    log.info("webdav: document %d left locked; its pending save ends it", doc_id)
                else:
                    held = await self.client.get_lock(doc_id)
                    holder = held.get("locked_by__v") if held else None
                    if self._is_me(holder):
                        log.warning("webdav: document %d left checked out; checking it in", doc_id)
                        await self.client.unlock(doc_id)
                await trio.to_thread.run_sync(lock_marks.drop, self.marks, doc_id)
            except errors.VaultError as exc:
                log.warning("webdav: document %d left checked out, still: %s", doc_id, exc)

    # --- the vault's side ------------------------------------------------------------

    def _is_me(self, holder: object) -> bool:
        return holder is not None and str(holder) == str(self.client.user_id)

    async def _check_out(self, doc_id: int) -> None:
        """Lock ``doc_id`` in the vault, marked first; a lock already ours (a save under
        way) is kept. The vault refuses a second lock even to its holder: who holds it
        is asked."""
        await trio.to_thread.run_sync(lock_marks.mark, self.marks, doc_id)
        try:
            await self.client.lock(doc_id)
            log.info("webdav: document %d checked out", doc_id)
        except errors.VaultError as refusal:
            held = None if surely_not_sent(refusal) else await self._holder(doc_id)
            if self._is_me(held):
                return
            if doc_id not in self._documents.values():  # no lock of ours to keep
                await trio.to_thread.run_sync(lock_marks.drop, self.marks, doc_id)
            if held is None:
                raise
            raise errors.LockedByOther(
                f"document {doc_id} is checked out by user {held}"
            ) from refusal

    async def _holder(self, doc_id: int) -> object | None:
        """Who holds ``doc_id``'s lock; None when nobody does or that cannot be asked."""
        try:
            held = await self.client.get_lock(doc_id)
        except errors.VaultError:
            return None
        return held.get("locked_by__v") if held else None

    async def _check_in(self, doc_id: int) -> None:
        """Unlock ``doc_id`` and drop its mark; a failure that may pass keeps the mark
        (the next start tries again)."""
        try:
            await self.client.unlock(doc_id)
            log.info("webdav: document %d checked in", doc_id)
        except errors.VaultError as exc:
            log.warning("webdav: document %d could not be unlocked: %s", doc_id, exc)
            if not isinstance(exc, PERMANENT):
                return
        await trio.to_thread.run_sync(lock_marks.drop, self.marks, doc_id)


def _path_of(url: str) -> str:
    """The tree's path of a lock's root (WsgiDAV keeps it as a quoted URL path)."""
    return unquote(url).rstrip("/") or "/"


def _holder(exc: DAVError) -> list[tuple[str, str]]:
    """The holder of a refused lock, in a header a client may show."""
    text = str(exc.context_info or "")
    if exc.value != 423 or "user " not in text:
        return []
    return [("X-Vaultfs-Locked-By", text.rsplit("user ", 1)[1])]
