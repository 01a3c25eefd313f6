"""Editors' lock files: an office program's announcement that it edits a file is a
check-out in the vault, and a check-out held elsewhere is shown as one.

LibreOffice announces that it edits ``NAME`` by creating ``.~lock.NAME#`` beside it,
Microsoft Office by creating ``~$NAME`` (``~$`` in place of the first two characters
of longer names); both read a lock file they find and offer to open the file
read-only. In a document's directory, creating such a file for the source file
checks the document out: its lease (``write.lease``, ``Reason.EDITOR``; the WebDAV
front's LOCK takes one for ``Reason.WEBDAV`` through ``take`` as well); the file itself
stays a scratch file, never uploaded. Removing the last one ends the check-out
(released when no save holds the lease; a save's check-in keeps the lock while a lock
file stands). A lock another user, or this user's other client, holds makes the create
fail with EBUSY.

For a document the vault says is checked out and this client holds no lease of, the
document's directory lists ``.~lock.NAME#`` (``nodes.editor_locks``),
read-only, with LibreOffice's own format naming the holder: one line
``<name>,<user name>,<host>,<DD.MM.YYYY HH:MM>,<profile>;`` (LibreOffice's
``LockFileCommon``: its user's name, the system's user name, the host, when, the
profile's URL; ``\\``, ``,`` and ``;`` escaped with a backslash). It costs two calls
(the lock's holder and, once a mount, the user list) when first read after the index
changed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import trio

from vaultfs.bridge.tree.nodes import NodeKey
from vaultfs.bridge.tree.tree import Tree
from vaultfs.bridge.write.lease import Leases, Reason
from vaultfs.client import VaultApi
from vaultfs.errors import LockedByOther, ReadOnly

__all__ = ["EditorLocks", "lock_file_name", "lock_line", "locks_source", "show_locked"]

#: the host a shown lock file names: the check-out is the vault's, not a machine's
_HOST = "vault"
#: the profile a shown lock file names (LibreOffice shows it nowhere)
_PROFILE = "vaultfs"


def lock_file_name(source: str) -> str:
    """The lock file LibreOffice makes for a file called ``source``."""
    return f".~lock.{source}#"


def locks_source(name: str, source: str | None) -> bool:
    """Whether a file ``name`` is an editor's lock file for the file ``source``:
    LibreOffice's ``.~lock.NAME#``, Office's ``~$NAME`` or ``~$AME`` (its first two
    characters replaced)."""
    if not source:
        return False
    if name == lock_file_name(source):
        return True
    rest = name[2:] if name.startswith("~$") else None
    return rest is not None and rest in (source, source[2:]) and bool(rest)


def show_locked(tree: Tree, doc_id: int) -> None:
    """The index shows a check-out at once (the next poll brings the vault's record)."""
    record = tree.index.get(doc_id)
    if record is not None and not record.get("locked__v"):
        tree.index.put({**record, "locked__v": True}, own=True)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace(",", "\\,").replace(";", "\\;")


def _names(user: dict[str, Any] | None, holder: object) -> tuple[str, str]:
    """(full name, possibly empty; user name) of ``user`` (None: named by its id)."""
    user = user or {}
    login = str(user.get("user_name__v") or f"user {holder}")
    full = " ".join(
        str(user.get(f)) for f in ("user_first_name__v", "user_last_name__v") if user.get(f)
    )
    return full, login


def lock_line(user: dict[str, Any] | None, holder: object, locked_date: object) -> bytes:
    """LibreOffice's lock file content for a check-out by ``user`` (its record; None:
    unknown, named by its id ``holder``) since ``locked_date`` (ISO 8601)."""
    full, login = _names(user, holder)
    try:
        when = datetime.fromisoformat(str(locked_date).replace("Z", "+00:00")).astimezone()
    except ValueError:
        when = datetime.now().astimezone()
    stamp = when.strftime("%d.%m.%Y %H:%M")
    fields = (full or login, login, _HOST, stamp, _PROFILE)
    return (",".join(_escape(f) for f in fields) + ";").encode()


class EditorLocks:
    """The editors' lock files of one mount (and the WebDAV front's locks): the
    check-outs they hold, and the lock files shown for check-outs held elsewhere.
    ``leases``: this client's check-outs (None: a read-only mount)."""

    def __init__(self, tree: Tree, client: VaultApi, leases: Leases | None) -> None:
        self.tree = tree
        self.client = client
        self.leases = leases
        #: lock file (scratch key) -> the document it holds
        self._files: dict[NodeKey, int] = {}
        self._users: dict[str, dict[str, Any]] | None = None
        #: doc id -> (index generation, content shown)
        self._shown: dict[int, tuple[int, tuple[dict[str, Any] | None, object, object]]] = {}

    async def take(self, doc_id: int, reason: Reason = Reason.EDITOR) -> None:
        """A lock file for the source is about to be made (or a WebDAV LOCK asked):
        check the document out (``LockedByOther``, EBUSY, when another user or this
        user's other client holds it)."""
        if self.leases is None:
            raise ReadOnly("this mount has no write-back spool")
        # The editor read the file's time as it opened it: the check-out, which moves
        # the vault's, must not look like someone else's change (``Tree.keep_mtime``).
        self.tree.keep_mtime(doc_id)
        try:
            await self.leases.take(doc_id, reason)
        except LockedByOther:
            # The vault knows better than the index: shown checked out from now on
            # (read-only, the holder's lock file), not only at the next poll.
            show_locked(self.tree, doc_id)
            raise
        show_locked(self.tree, doc_id)  # held already for a save: not shown yet

    def made(self, key: NodeKey, doc_id: int) -> None:
        """The lock file taken for ``doc_id`` (``take``) is the scratch file ``key``."""
        self._files[key] = doc_id

    async def gone(self, key: NodeKey) -> None:
        """A scratch file went: the check-out a lock file held ends with the last one."""
        doc_id = self._files.pop(key, None)
        if doc_id is not None:
            await self.let_go(doc_id)

    async def let_go(self, doc_id: int, reason: Reason = Reason.EDITOR) -> None:
        """A lock file is gone (a WebDAV lock ended): the last reason ends the
        check-out (the lease shows the document unlocked when it is)."""
        if self.leases is not None:
            with trio.CancelScope(shield=True):
                await self.leases.drop_quietly(doc_id, reason)

    async def content(self, doc_id: int) -> bytes:
        """The lock file shown for ``doc_id``'s check-out by someone else."""
        user, holder, since = await self._lock_of(doc_id)
        return lock_line(user, holder, since)

    async def holder_name(self, doc_id: int) -> str | None:
        """Who holds ``doc_id`` checked out, as a person reads it ("Ann Example
        (ann@example.com)"); None when nobody does. What the WebDAV front says in a
        lock's owner; the same calls as ``content``, shared with it."""
        user, holder, _ = await self._lock_of(doc_id)
        if holder is None:
            return None
        full, login = _names(user, holder)
        return f"{full} ({login})" if full else login

    async def _lock_of(self, doc_id: int) -> tuple[dict[str, Any] | None, object, object]:
        """(the holder's user record, their id, since when) of ``doc_id``'s lock, asked
        once until the index changes: the lock's holder, and once the user list."""
        generation = self.tree.index.generation
        shown = self._shown.get(doc_id)
        if shown is not None and shown[0] == generation:
            return shown[1]
        lock = await self.client.get_lock(doc_id) or {}
        holder = lock.get("locked_by__v")
        users = await self._user_list() if holder is not None else {}
        found = (users.get(str(holder)), holder, lock.get("locked_date__v"))
        self._shown[doc_id] = (generation, found)
        return found

    async def _user_list(self) -> dict[str, dict[str, Any]]:
        if self._users is None:
            self._users = {str(u.get("id")): u for u in await self.client.list_users()}
        return self._users
