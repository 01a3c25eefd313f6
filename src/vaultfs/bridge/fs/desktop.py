"""What the mount answers to desktop conventions (freedesktop.org, GNOME).

Owns the names a desktop's trash uses at the top of a mount: GIO's trash (``gio
trash``, a file manager's Delete) moves a file into ``.Trash/<uid>`` or ``.Trash-<uid>``
at the top of its file system, made on first use. The mount has no trash: a document
moved there would have to leave the vault's tree, and the vault's delete is no trash
(nothing in the mount restores it). Making such a directory is refused, so a trash
changes nothing, and the file manager offers to delete at once instead.

Also owns telling a folder's watchers that a document folder appeared in it: a file
pasted into a folder becomes its document's folder when it is closed, which no
program's mkdir made, so the kernel raised no IN_CREATE for it. ``NewFolders`` has the
FUSE layer raise one (``daemon.creates``) when the kernel holds the folder (a window
can watch only a folder the kernel holds).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from vaultfs import errors
from vaultfs.bridge.fs.inodes import InodeTable
from vaultfs.bridge.fs.overlay import Overlay
from vaultfs.bridge.fs.paths import DisplayPaths
from vaultfs.bridge.tree import keys

__all__ = ["NewFolders", "is_trash_name", "no_create_events"]

log = logging.getLogger(__name__)

#: ``.Trash`` (an administrator's trash, one directory per user) and ``.Trash-<uid>``
_TRASH = re.compile(r"\.Trash(-\d+)?")


def is_trash_name(name: str) -> bool:
    """Whether ``name``, at the top of the mount, is a desktop trash directory."""
    return _TRASH.fullmatch(name) is not None


def no_create_events(parent: int, parent_path: str, name: str) -> None:
    """Without a kernel (the tests' file system over a fake vault): nothing to raise."""


class NewFolders:
    def __init__(
        self,
        overlay: Overlay,
        paths: DisplayPaths,
        inodes: InodeTable,
        announce: Callable[[int, str, str], None],
    ) -> None:
        """``announce(parent inode, parent path, name)``: raise IN_CREATE for
        directory ``name`` (never waits)."""
        self._overlay = overlay
        self._paths = paths
        self._inodes = inodes
        self._announce = announce

    async def document_made(self, doc_id: int) -> None:
        """A new file became document ``doc_id``: its folder's watchers are told."""
        record = self._overlay.tree.index.get(doc_id)
        where = self._paths.document_dir(doc_id) if record is not None else None
        if where is None:
            return
        parent = where[0]
        ino = self._inodes.held(parent)
        path = self._paths.of_key(parent)
        if ino is None or path is None:
            return
        try:
            # The name it has among its siblings now (a `` [id]`` suffix, maybe).
            listing = await self._overlay.children(parent)
        except errors.VaultError as exc:
            log.debug("no create event for document %d: %s", doc_id, exc)
            return
        document = keys.document(doc_id)
        name = next((n for n, key in listing.items() if key == document), None)
        if name is not None:
            self._announce(ino, path, name)
