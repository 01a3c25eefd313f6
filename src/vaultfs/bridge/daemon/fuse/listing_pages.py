"""Which pages of a listing carry the entries' attributes (``Capabilities.plus_names``).

With ``plus_names`` every listing is a READDIRPLUS, and the mount answers each page
either with attributes (the kernel makes a dentry and an inode of each entry: a program
that stats them sends no lookup) or names only (entries of node id 0: what a plain
READDIR costs, no attributes made, no inode counted, no reference taken). The kernel's
own choice (``readdirplus_auto``) gives attributes only to a page asked for after a
lookup in the directory. GLib reads a thousand names before its first stat (it sorts
each thousand by inode): GNOME Files got most of a big folder as names and then looked
each entry up, 81,000 lookups for a folder of 100,000, against 59 listing requests.

What is decided here, with what the mount sees of each directory and process:

- a listing's first page carries attributes (a small directory is all first page);
- a listing whose names a program goes on to look up (``STATS`` lookups in it after a
  names-only page) carries attributes from then on, and so do the later listings of
  that process (the program stats what it lists: GNOME Files, ``ls -l``, ``rsync``);
  ``ls`` and ``find`` of a big folder stay names;
- where another program than the one that read it looks it up (``ls``, then ``ls -l``:
  the second reads the names the first left in the kernel), ``looked_up`` says so, and
  the caller drops the listing the kernel keeps, so that the rest is asked for again
  and comes with attributes. The program that read it looking its names up (``find``
  going into each folder it listed) has them all already: that listing stays.
"""

from __future__ import annotations

from cachetools import LRUCache

__all__ = ["STATS", "ListingPages"]

#: lookups in a directory after a names-only page that make its listing carry
#: attributes: more than a person opening a few files of a big folder, fewer than the
#: entries a program stats before it reads its next page
STATS = 16
#: processes remembered as ones that stat what they list (GNOME Files' worker threads, a
#: shell's ``ls -l``); the least recently seen go
_PROCESSES = 256


class ListingPages:
    def __init__(self) -> None:
        #: directory inode -> (lookups in it since its listing's last names-only page,
        #: the process that read that page)
        self._named: dict[int, tuple[int, int | None]] = {}
        #: directories whose listing under way carries attributes
        self._with_attributes: set[int] = set()
        #: processes that stat what they list
        self._statters: LRUCache[int, None] = LRUCache(maxsize=_PROCESSES)

    def with_attributes(self, ino: int, start: int, pid: int | None) -> bool:
        """Whether the page of directory ``ino`` from position ``start``, read by
        ``pid``, carries its entries' attributes."""
        if start == 0:  # a listing from its start: what was learnt of the last is stale
            self._with_attributes.discard(ino)
            self._named.pop(ino, None)
            return True
        if ino in self._with_attributes or (pid is not None and pid in self._statters):
            return True
        self._named[ino] = (self._named.get(ino, (0, None))[0], pid)
        return False

    def looked_up(self, parent: int, pid: int | None) -> bool:
        """A name was looked up in ``parent``: True when that made its listing one that
        carries attributes and the process is not the one that read its names (a
        listing the kernel keeps of it is then best dropped)."""
        named = self._named.get(parent)
        if named is None:
            return False
        count, reader = named
        if count + 1 < STATS:
            self._named[parent] = (count + 1, reader)
            return False
        del self._named[parent]
        self._with_attributes.add(parent)
        if pid is not None:
            self._statters[pid] = None
        return pid != reader

    def forget(self, ino: int) -> None:
        """The kernel forgot directory ``ino``."""
        self._named.pop(ino, None)
        self._with_attributes.discard(ino)
