"""An open directory's entries, read by position as the kernel asks for them.

Owns the positions of a listing (the readdir offsets the kernel gives back): entry
``n`` is the ``n``-th of the listing as it is read, from a list (a document's
directories, sorted) or from a folder's ``FolderListing``, which reads its documents
from the index a page at a time. The kernel reads a listing in order, each request
from where the last reply ended: the entries are taken from one iterator, and only
those handed out since the last request's start are kept (a reply that was full
before its last entries is asked for again from there). A request from elsewhere (a
``seekdir``) reads the listing again from its start.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import islice

from vaultfs.bridge.tree.keys import NodeKey

__all__ = ["DirEntries"]

Entry = tuple[str, NodeKey]
#: entries read from the listing at a time
_READ = 128


class DirEntries:
    def __init__(self, listing: Callable[[], Iterable[Entry]]) -> None:
        """``listing``: makes the entries anew, from the first."""
        self._listing = listing
        self._source: Iterator[Entry] = iter(listing())
        #: the entries from position ``_first`` on that were read and may be asked again
        self._kept: list[Entry] = []
        self._first = 0

    def entries(self, start: int) -> Iterator[tuple[int, str, NodeKey]]:
        """(next position, name, key) of the entries from position ``start``, read as
        the caller takes them."""
        if start < self._first:  # before what is kept: read again from the start
            self._source, self._kept, self._first = iter(self._listing()), [], 0
        passed = min(start - self._first, len(self._kept))
        del self._kept[:passed]
        self._first += passed
        while self._first < start:  # past what was read: read up to it
            if next(self._source, None) is None:
                return
            self._first += 1
        index = 0
        while True:
            if index == len(self._kept):  # read on, a few at a time
                self._kept += islice(self._source, _READ)
                if index == len(self._kept):
                    return
            name, key = self._kept[index]
            index += 1
            yield start + index, name, key

    def ended(self, start: int) -> bool:
        """Whether the listing has no entry at position ``start``."""
        return next(self.entries(start), None) is None
