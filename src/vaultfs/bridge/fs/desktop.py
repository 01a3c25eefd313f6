"""What the mount answers to desktop conventions (freedesktop.org, GNOME).

Owns the names a desktop's trash uses at the top of a mount: GIO's trash (``gio
trash``, a file manager's Delete) moves a file into ``.Trash/<uid>`` or ``.Trash-<uid>``
at the top of its file system, made on first use. The mount has no trash: a document
moved there would have to leave the vault's tree, and the vault's delete is no trash
(nothing in the mount restores it). Making such a directory is refused, so a trash
changes nothing, and the file manager offers to delete at once instead.

Also owns telling a folder's watchers (a file manager's window) of names that appeared
or went without a program's call through the mount: a file pasted into a folder
becomes its document's folder when it is closed (``General/x.txt`` goes, ``General/x/``
appears), and the poll learns of documents another client created, renamed or
deleted. The kernel raised no inotify event for those; ``GoneNames`` and ``NewFolders``
have the FUSE layer raise IN_DELETE and IN_CREATE (``daemon.name_events``) when the
kernel holds the folder (a window can watch only a folder the kernel holds).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from functools import partial
from typing import Protocol

from vaultfs import errors
from vaultfs.bridge.fs.inodes import InodeTable
from vaultfs.bridge.fs.overlay import Overlay
from vaultfs.bridge.fs.paths import DisplayPaths
from vaultfs.bridge.tree import keys
from vaultfs.bridge.tree.folder_listing import name_in
from vaultfs.bridge.tree.nodes import NodeKey, folder_of

__all__ = ["GoneNames", "NameEvents", "NewFolders", "is_trash_name"]

log = logging.getLogger(__name__)

#: ``.Trash`` (an administrator's trash, one directory per user) and ``.Trash-<uid>``
_TRASH = re.compile(r"\.Trash(-\d+)?")


def is_trash_name(name: str) -> bool:
    """Whether ``name``, at the top of the mount, is a desktop trash directory."""
    return _TRASH.fullmatch(name) is not None


class NameEvents(Protocol):
    """What raises the events (``daemon.name_events.NameEvents``); never waits."""

    def created(
        self, parent: int, parent_path: str, name: str, held: Callable[[], bool]
    ) -> None: ...

    def deleted(self, parent: int, parent_path: str, name: str, ino: int, is_dir: bool) -> None: ...


class GoneNames:
    """Names the kernel holds that lead nowhere now: forgotten as deleted, with an
    IN_DELETE for the folder's watchers."""

    def __init__(
        self,
        paths: DisplayPaths,
        inodes: InodeTable,
        is_file: Callable[[NodeKey], bool],
        events: NameEvents | None,
        invalidate_entry: Callable[[int, str, int], None],
    ) -> None:
        """``events``: None without a kernel (the tests' file system over a fake vault);
        ``invalidate_entry(parent, name, deleted)``: the kernel forgets a name (as a
        delete of inode ``deleted`` when not 0), what is left when no event can be
        raised."""
        self._paths = paths
        self._inodes = inodes
        self._is_file = is_file
        self._events = events
        self._invalidate_entry = invalidate_entry

    def forget(self, parent: int, name: str, deleted: int = 0) -> None:
        """``Freshness``'s ``invalidate_entry``: ``name`` in ``parent`` leads elsewhere
        (``deleted`` 0) or nowhere (``deleted``, the inode the kernel holds for it)."""
        parent_key = self._inodes.key(parent)
        key = self._inodes.key(deleted) if deleted else None
        path = self._paths.of_key(parent_key) if parent_key is not None else None
        if key is None or path is None or self._events is None:
            self._invalidate_entry(parent, name, deleted)
            return
        self._events.deleted(parent, path, name, deleted, not self._is_file(key))


class NewFolders:
    """Documents that may have a new name in their folder: the name is announced to
    the folder's watchers, unless the kernel holds it already (for that document's
    directory, or for a folder made with mkdir that became the document: that mkdir
    raised the event). Announcing a name the kernel holds would make it forget the
    name of a directory that may be someone's working directory."""

    def __init__(
        self,
        overlay: Overlay,
        paths: DisplayPaths,
        inodes: InodeTable,
        name_of: Callable[[int], tuple[int, str] | None],
        events: NameEvents,
    ) -> None:
        """``name_of(ino)``: (parent inode, name) the kernel holds ``ino`` under
        (``Freshness.name_of``)."""
        self._overlay = overlay
        self._paths = paths
        self._inodes = inodes
        self._name_of = name_of
        self._events = events

    async def documents_changed(self, doc_ids: set[int]) -> None:
        """``Freshness.on_names_checked``: the names of ``doc_ids`` were checked (the
        names gone were forgotten); the ones their folders show now are announced."""
        by_folder: dict[NodeKey, list[int]] = {}
        index = self._overlay.tree.index
        for doc_id in doc_ids:
            record = index.get(doc_id)
            if record is not None:  # (gone: nothing appeared)
                by_folder.setdefault(folder_of(record)[-1], []).append(doc_id)
        for folder, documents in by_folder.items():
            ino = self._inodes.held(folder)
            path = self._paths.of_key(folder)
            if ino is None or path is None:
                continue
            try:
                # The names they have among their siblings now (`` [id]`` suffixes, maybe).
                listing = await self._overlay.children(folder)
            except errors.VaultError as exc:
                log.debug("no create events in %s: %s", path or "/", exc)
                continue
            for doc_id in documents:
                document = keys.document(doc_id)
                name = name_in(listing, document)
                if name is not None and not self._held(document, ino, name):
                    # (asked again when the call is made: a program may look it up first)
                    held = partial(self._held, document, ino, name)
                    self._events.created(ino, path, name, held)

    def _held(self, document: NodeKey, folder: int, name: str) -> bool:
        if self._overlay.stands_for(document):
            return True
        ino = self._inodes.held(document)
        return ino is not None and self._name_of(ino) == (folder, name)
