"""WebDAV locks as the vault's check-out: LOCK of a source file checks it out, UNLOCK
(or the lock's expiry) ends the check-out.

Owns the tie between WsgiDAV's lock storage and the vault's lock. WsgiDAV keeps the
WebDAV locks (tokens, depth, timeouts, the If headers of PUTs under a lock); this
storage checks the document out when a lock is made on a document's latest source
file, and ends the check-out when that lock goes. The check-out is the one an
editor's lock file takes in the mount (``write.editor_locks``: ``Spool.hold``), so
the core treats both alike: each PUT under the lock is a save of its own (one version,
``resources``) whose check-in keeps the document checked out while the lock is held
(no moment unlocked between saves); the check-out is marked on disk in the spool
before the vault is asked (the spool's ``lock_marks``), so a front killed while a lock
is held leaves its mark, and the next start releases it as it releases every lock an
earlier daemon left (``SpoolLocking.release_stale_locks``); the document counts as
held here, so its directory shows no lock file naming its own user. A document
another user holds is refused with 423 Locked, naming the holder.

A document checked out elsewhere (another user, or this user on another machine) holds
no WebDAV lock of this front, yet its source file is locked: ``held_elsewhere`` names
the holder, which the resource adds to its ``lockdiscovery`` as an active lock without
a token (RFC 4918 14.1 makes the token optional), where a client looks after a LOCK
answered 423 (LibreOffice does, to name who edits the document).

A lock on a new file's name (not a document yet: Explorer's and Finder's copy locks
the name it just put empty, then puts the content under the lock), or on a file
dropped in a document's directory, holds that file as it is
(``PathFileSystem.hold_new``): it becomes a document (or an attachment) when the
lock ends, with what was put last, never at each PUT.

WsgiDAV purges an expired lock only when a request touches it; ``purge_expired``,
run every ``SWEEP_INTERVAL`` seconds by the front, ends the check-out of a lock whose
client went away without UNLOCK (a crashed editor) once its timeout is over.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

import trio
from wsgidav.dav_error import DAVError
from wsgidav.lock_man.lock_storage import LockStorageDict

from vaultfs import errors
from vaultfs.bridge.fs.by_path import PathFileSystem
from vaultfs.bridge.tree.keys import NodeKey
from vaultfs.bridge.webdav.calls import core
from vaultfs.bridge.write.editor_locks import EditorLocks
from vaultfs.bridge.write.lease import Reason

__all__ = ["SWEEP_INTERVAL", "VaultLocks"]

log = logging.getLogger(__name__)

#: how often the locks whose timeout is over are looked for (seconds)
SWEEP_INTERVAL = 5.0


class VaultLocks(LockStorageDict):
    """WsgiDAV's lock storage, each lock on a source file holding its document checked
    out through ``holds`` (the core's editors' check-outs)."""

    def __init__(self, pfs: PathFileSystem, holds: EditorLocks) -> None:
        super().__init__()
        self.pfs = pfs
        self.holds = holds
        #: lock token -> the document whose check-out it holds
        self._documents: dict[str, int] = {}
        #: lock token -> the new file it holds (``hold_new``)
        self._new_files: dict[str, NodeKey] = {}
        #: called when a lock expired (what a listing showed of it changed)
        self.on_expired: list[Callable[[], None]] = []

    def _document(self, path: str) -> int | None:
        try:
            # WsgiDAV names a lock's resource by its URL path, quoted.
            return core(self.pfs.source_document, unquote(path).rstrip("/") or "/")
        except DAVError as exc:
            if exc.value == 404:
                return None  # a lock on a name not made yet: nothing of the vault's
            raise

    def create(self, path: str, lock: dict[str, Any]) -> Any:
        doc_id = self._document(path)
        if doc_id is not None:
            try:
                core(self.holds.take, doc_id, Reason.WEBDAV)
            except DAVError as exc:
                raise DAVError(exc.value, exc.context_info, add_headers=_holder(exc)) from exc
            log.info("webdav: document %d checked out for a WebDAV lock", doc_id)
        try:
            made = super().create(path, lock)
        except BaseException:
            if doc_id is not None:
                core(self.holds.let_go, doc_id, Reason.WEBDAV)
            raise
        if doc_id is not None:
            self._documents[made["token"]] = doc_id
        else:
            self._hold_new(path, made["token"])
        return made

    def _hold_new(self, path: str, token: str) -> None:
        try:
            key = core(self.pfs.hold_new, unquote(path).rstrip("/") or "/")
        except DAVError as exc:
            if exc.value in (404, 409):
                return  # nothing there to hold
            raise
        if key is not None:
            self._new_files[token] = key

    def delete(self, token: Any) -> bool:
        deleted: bool = super().delete(token)
        doc_id = self._documents.pop(token, None)
        if doc_id is not None:
            # This lock's hold goes; the last hold of the document ends the check-out
            # (a save still being checked in then unlocks it with its own check-in).
            core(self.holds.let_go, doc_id, Reason.WEBDAV)
            log.info("webdav: document %d: its WebDAV lock ended", doc_id)
        key = self._new_files.pop(token, None)
        if key is not None:
            core(self.pfs.let_go_new, key)  # it becomes its document now
        return deleted

    def held_elsewhere(self, path: str) -> str | None:
        """Who holds the document whose latest source file ``path`` is, when that is
        not this front (no WebDAV lock or save of its own); None when nobody does."""
        return core(self._held_elsewhere, path)

    async def _held_elsewhere(self, path: str) -> str | None:
        doc_id = await self.pfs.source_document(path)
        leases = self.holds.leases
        if doc_id is None or (leases is not None and leases.held_here(doc_id)):
            return None  # a WebDAV lock or a save of this front's own
        record = self.holds.tree.index.get(doc_id)
        if not record or not record.get("locked__v"):
            return None  # the index says nobody holds it: no call
        return await self.holds.holder_name(doc_id)

    def purge_expired(self) -> None:
        """End every lock whose timeout is over (run in a thread of the front)."""
        now = time.time()
        expired = [
            token
            for token, lock in list(self._dict.items())
            if not token.startswith("URL2TOKEN:") and 0 <= float(lock["expire"]) < now
        ]
        for token in expired:
            log.info("webdav: a WebDAV lock expired (%s)", self._dict.get(token, {}).get("root"))
            self.delete(token)
        if expired:
            for callback in self.on_expired:
                callback()

    async def sweep(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """``purge_expired`` every ``SWEEP_INTERVAL`` seconds, until cancelled."""
        task_status.started()
        while True:
            await trio.sleep(SWEEP_INTERVAL)
            if self._documents or self._new_files:
                await trio.to_thread.run_sync(self.purge_expired)

    async def release_all(self) -> None:
        """The front stops: every check-out its WebDAV locks hold ends, and every new
        file they hold becomes what it would at its lock's end."""
        documents, self._documents = list(self._documents.values()), {}
        new_files, self._new_files = list(self._new_files.values()), {}
        for key in new_files:
            try:
                await self.pfs.let_go_new(key)
            except (errors.VaultError, OSError) as exc:
                log.warning("webdav: a new file held by a lock not made at the stop: %s", exc)
        for doc_id in documents:
            await self.holds.let_go(doc_id, Reason.WEBDAV)


def _holder(exc: DAVError) -> list[tuple[str, str]]:
    """The holder of a refused lock, in a header a client may show."""
    text = str(exc.context_info or "")
    if exc.value != 423 or "user " not in text:
        return []
    return [("X-Vaultfs-Locked-By", text.rsplit("user ", 1)[1])]
