"""WebDAV locks as the vault's check-out: LOCK of a source file checks it out, UNLOCK
(or the lock's expiry) checks it back in.

Owns the tie between WsgiDAV's lock storage and the vault's lock. WsgiDAV keeps the
WebDAV locks (tokens, depth, timeouts, the If headers of PUTs under a lock); this
storage takes the vault's lock when a lock is made on a document's latest source file
and releases it when the last WebDAV lock on it goes. A document another user holds
is refused with 423 Locked, naming the holder. Each PUT under a lock is a save of its
own (one version, ``resources``), whose check-in releases the vault's lock as every
save of the mount does; ``after_save`` takes it again at once while the WebDAV lock
is still held.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import unquote

from wsgidav.dav_error import DAVError
from wsgidav.lock_man.lock_storage import LockStorageDict

from vaultfs import errors
from vaultfs.bridge.fs.by_path import PathFileSystem
from vaultfs.bridge.webdav.calls import core
from vaultfs.client import VaultApi, surely_not_sent

__all__ = ["VaultLocks"]

log = logging.getLogger(__name__)


class VaultLocks(LockStorageDict):
    def __init__(self, pfs: PathFileSystem, client: VaultApi) -> None:
        super().__init__()
        self.pfs = pfs
        self.client = client
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
        doc_id = self._documents.get(path.rstrip("/") or "/")
        if doc_id is None:
            return
        try:
            core(self._check_out, doc_id)
        except DAVError as exc:
            # The save is in (or durable in the spool): its answer says so. The next
            # save under this lock checks the document out again, or is refused.
            log.warning("webdav: document %d saved but not locked again: %s", doc_id, exc)

    async def release_all(self) -> None:
        """The front stops: every vault lock its WebDAV locks hold is released."""
        for doc_id in set(self._documents.values()):
            await self._check_in(doc_id)
        self._documents.clear()

    # --- the vault's side ------------------------------------------------------------

    async def _check_out(self, doc_id: int) -> None:
        """Lock ``doc_id`` in the vault; a lock already ours (a save under way) is kept.
        The vault refuses a second lock even to its holder: who holds it is asked."""
        try:
            await self.client.lock(doc_id)
            log.info("webdav: document %d checked out", doc_id)
        except errors.VaultError as refusal:
            if surely_not_sent(refusal):
                raise
            held = await self.client.get_lock(doc_id)
            if not held:
                raise
            holder = held.get("locked_by__v")
            if str(holder) != str(self.client.user_id):
                raise errors.LockedByOther(
                    f"document {doc_id} is checked out by user {holder}"
                ) from refusal

    async def _check_in(self, doc_id: int) -> None:
        try:
            await self.client.unlock(doc_id)
            log.info("webdav: document %d checked in", doc_id)
        except errors.VaultError as exc:
            log.warning("webdav: document %d could not be unlocked: %s", doc_id, exc)


def _path_of(url: str) -> str:
    """The tree's path of a lock's root (WsgiDAV keeps it as a quoted URL path)."""
    return unquote(url).rstrip("/") or "/"


def _holder(exc: DAVError) -> list[tuple[str, str]]:
    """The holder of a refused lock, in a header a client may show."""
    text = str(exc.context_info or "")
    if exc.value != 423 or "user " not in text:
        return []
    return [("X-Vaultfs-Locked-By", text.rsplit("user ", 1)[1])]
