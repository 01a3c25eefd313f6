"""A document directory's ``.hidden``: GNOME's list of names a file manager hides.

GIO (GNOME Files, ``gio list``, ``gio tree``) reads a directory's ``.hidden``, one
name a line, and reports the names it lists as hidden (``standard::is-hidden``); a
file manager neither shows nor searches hidden directories. Each document directory
answers ``.hidden`` with ``versions``, so a desktop's name search finds a document
once, not once more per old version, and never lists a document's versions (which
would cost a version listing per document). ``versions/`` itself is unchanged.

It is one node, the same in every document directory (as a hard link would be): a
file manager counting the items of 100,000 document folders reads it 100,000 times,
and only the first open and read reach the mount; the kernel keeps its attributes
and its pages for the mount's life, and answers the opens after the first itself.

The file is reachable by name only, as ``.events.jsonl`` is: GIO opens it by its path,
and ``ls -a``, ``find``, ``grep -r``, ``tar`` and ``rsync`` never meet it (nothing to
copy back into the mount). It is read-only and the same for every document: it costs
no call to the vault. Writing it is refused (EACCES), removing or replacing it too
(EPERM).
"""

from __future__ import annotations

import stat

from vaultfs.bridge.fs.attributes import Attr
from vaultfs.bridge.fs.families import Parts, is_writing
from vaultfs.bridge.fs.opening import Opened
from vaultfs.bridge.fs.paths import DisplayPaths
from vaultfs.bridge.nodes.family import Family
from vaultfs.bridge.tree.keys import NodeKey

__all__ = ["HIDDEN", "HIDDEN_FILE", "HIDDEN_LIST", "HiddenKey", "HiddenLists"]

#: the name GIO reads in every directory it lists (glib's ``read_hidden_file``)
HIDDEN_FILE = ".hidden"
#: what a document directory's ``.hidden`` says: the old versions are out of the way
HIDDEN_LIST = b"versions\n"

_HIDDEN = "hidden"


class HiddenKey(NodeKey):
    """Every document directory's ``.hidden``: ``(hidden,)``."""

    __slots__ = ()
    KINDS = FILE_KINDS = SHARED_KINDS = frozenset({_HIDDEN})


#: the one node of every document directory's ``.hidden``
HIDDEN = HiddenKey(_HIDDEN)


class HiddenLists(Family):
    key_type = HiddenKey

    def step(self, paths: DisplayPaths, key: NodeKey) -> tuple[NodeKey, str] | None:
        return None  # in every document directory: no one path

    async def attributes(self, parts: Parts, key: NodeKey, ino: int) -> Attr:
        # It never changes: the mount's start is its time, as for .vaultfs, and the
        # kernel keeps its attributes as long as any node's.
        started = parts.attributes.started_ns
        return parts.attributes.make(ino, stat.S_IFREG | 0o444, len(HIDDEN_LIST), started, started)

    async def open(self, parts: Parts, key: NodeKey, ino: int, flags: int) -> Opened:
        if is_writing(flags):
            return await super().open(parts, key, ino, flags)  # EACCES (EROFS read-only)
        return parts.opener.constant(ino, HIDDEN_LIST)
