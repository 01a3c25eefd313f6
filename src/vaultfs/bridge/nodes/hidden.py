"""A document directory's ``.hidden``: GNOME's list of names a file manager hides.

GIO (GNOME Files, ``gio list``, ``gio tree``) reads a directory's ``.hidden``, one
name a line, and reports the names it lists as hidden (``standard::is-hidden``); a
file manager neither shows nor searches hidden directories. Each document directory
answers ``.hidden`` with ``versions``, so a desktop's name search finds a document
once, not once more per old version, and never lists a document's versions (which
would cost a version listing per document). ``versions/`` itself is unchanged.

The file is reachable by name only, as ``.events.jsonl`` is: GIO opens it by its path,
and ``ls -a``, ``find``, ``grep -r``, ``tar`` and ``rsync`` never meet it (nothing to
copy back into the mount). It is read-only and the same for every document: it costs
no call to the vault. Writing it is refused (EACCES), removing or replacing it too
(EPERM).
"""

from __future__ import annotations

from vaultfs.bridge.fs.attributes import Attr
from vaultfs.bridge.fs.families import Parts, is_writing
from vaultfs.bridge.fs.handles import Snapshot
from vaultfs.bridge.fs.opening import Opened
from vaultfs.bridge.fs.paths import DisplayPaths
from vaultfs.bridge.nodes.family import Family
from vaultfs.bridge.tree import keys
from vaultfs.bridge.tree.keys import NodeKey

__all__ = ["HIDDEN_FILE", "HIDDEN_LIST", "HiddenKey", "HiddenLists", "hidden_list"]

#: the name GIO reads in every directory it lists (glib's ``read_hidden_file``)
HIDDEN_FILE = ".hidden"
#: what a document directory's ``.hidden`` says: the old versions are out of the way
HIDDEN_LIST = b"versions\n"

_HIDDEN = "hidden"


class HiddenKey(NodeKey):
    """A document directory's ``.hidden``: ``(hidden, id)``."""

    __slots__ = ()
    # Of the document: it goes with the document's other names when the document goes.
    OF_DOCUMENT = True
    KINDS = FILE_KINDS = frozenset({_HIDDEN})


def hidden_list(doc_id: int) -> HiddenKey:
    return HiddenKey(_HIDDEN, doc_id)


class HiddenLists(Family):
    key_type = HiddenKey

    def step(self, paths: DisplayPaths, key: NodeKey) -> tuple[NodeKey, str] | None:
        return keys.document(key.doc_id), HIDDEN_FILE

    async def attributes(self, parts: Parts, key: NodeKey, ino: int) -> Attr:
        # It never changes: the mount's start is its time, as for .vaultfs.
        started = parts.attributes.started_ns
        return parts.attributes.file(ino, 0o444, len(HIDDEN_LIST), started, started)

    async def open(self, parts: Parts, key: NodeKey, ino: int, flags: int) -> Opened:
        if is_writing(flags):
            return await super().open(parts, key, ino, flags)  # EACCES (EROFS read-only)
        return parts.opener.direct(Snapshot(HIDDEN_LIST))
