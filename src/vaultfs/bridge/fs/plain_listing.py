"""A names-only page's entries: names, inode numbers and types, nothing else.

The kernel asks for entries' attributes (READDIRPLUS) only for the first part of a
listing and while a program looks its entries up (``ls -l``); otherwise (``ls``,
``find``) it asks for names (``Capabilities.readdirplus_auto``); or the mount decides
which pages of a READDIRPLUS are names (``plus_names``). The kernel takes no reference
to a plain entry, so none is counted here and no attributes are made: a listing of
100,000 documents is names, not 100,000 records read and inodes numbered. A node
without an inode number yet is given ``UNKNOWN_INO``, as libfuse gives it for file
systems without numbers of their own (sshfs); a lookup gives the real one.
"""

from __future__ import annotations

import stat
from collections.abc import Iterator

from vaultfs.bridge.fs.dir_entries import DirEntries
from vaultfs.bridge.fs.inodes import InodeTable
from vaultfs.bridge.tree.keys import NodeKey, typed

__all__ = ["UNKNOWN_INO", "file_type", "plain_entries"]

#: the inode number of an entry whose node has none yet (libfuse's FUSE_UNKNOWN_INO)
UNKNOWN_INO = 0xFFFFFFFF
#: kind -> its nodes' type bits, learnt from the first key of each kind (a big folder's
#: listing asks 100,000 times; a kind's type never changes)
_TYPE_OF_KIND: dict[str | int, int] = {}


def file_type(key: NodeKey) -> int:
    """The node's ``stat.S_IF*`` type bits, as its key tells them."""
    key = typed(key)
    found = _TYPE_OF_KIND.get(key.kind)
    if found is None:
        if key.kind in key.LINK_KINDS:
            found = stat.S_IFLNK
        else:
            found = stat.S_IFREG if key.is_file else stat.S_IFDIR
        _TYPE_OF_KIND[key.kind] = found
    return found


def plain_entries(
    listing: DirEntries, inodes: InodeTable, start: int
) -> Iterator[tuple[int, str, int, int]]:
    """(next position, name, inode number, type) of ``listing``'s entries from
    ``start``, as many as the caller takes."""
    for position, name, key in listing.entries(start):
        yield position, name, inodes.known(key) or UNKNOWN_INO, file_type(key)
