"""The tree's cache of directory listings: per index generation, small ones packed.

A walk of 10,000 documents lists about 70,000 directories, nearly all of them a
document's own (its directory, ``versions/``, a version's, ``renditions/``,
``attachments/``, ``relationships/``), of zero to six entries each. Kept as a dict in
a (generation, dict) pair, such a listing costs 180 to 240 bytes; packed into one
tuple, (generation, name, key, name, key, ...), 48 to 150: 7 MiB less for the walk.
A bigger listing stays the mapping it was made as (a dict; a folder's
``FolderListing``, which reads its documents from the index and holds none of them).

The cache is bounded (``MAX_LISTINGS`` directories, the least recently used go): a
walk of a million documents would otherwise keep millions of listings. A listing that
went is made again from the index when asked for; the kernel keeps its own copy of
what it listed. A document's listings are found by its id (``drop_document``), not by
a scan of every listing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from itertools import chain
from typing import Any

from cachetools import LRUCache

from vaultfs.bridge.tree.folder_listing import name_in
from vaultfs.bridge.tree.keys import NodeKey, typed

__all__ = ["MAX_LISTINGS", "PACK_MAX", "ListingCache"]

#: listings of at most this many entries are packed into a tuple (a dict made of one
#: when asked for costs well under a microsecond at this size)
PACK_MAX = 8
#: directories whose listings are kept. The kernel keeps its own copy of what it
#: listed, so one made again is rare, and it costs no call (a document's details are
#: kept apart, ``Tree.details``): 65,536 held 30 MiB after a walk of 100,000 documents
#: (the cache's order and its per-document sets as much as the listings)
MAX_LISTINGS = 8192


class _Packed(tuple[object, ...]):  # (generation, name, key, name, key, ...)
    __slots__ = ()


class _Listings(LRUCache[NodeKey, tuple[object, ...]]):
    """directory key -> _Packed, or (generation, listing); tells ``gone``
    of each listing it lets go of."""

    def __init__(self, maxsize: int, gone: Any) -> None:
        super().__init__(maxsize=maxsize)
        self._gone = gone

    def popitem(self) -> tuple[NodeKey, tuple[object, ...]]:
        key, value = super().popitem()
        self._gone(key)
        return key, value


class ListingCache:
    def __init__(self, maxsize: int = MAX_LISTINGS) -> None:
        self._listings = _Listings(maxsize, self._forget_document_key)
        #: document id -> its directories with a listing kept
        self._by_document: dict[int, set[NodeKey]] = {}

    def __len__(self) -> int:
        return len(self._listings)

    def put(self, key: NodeKey, generation: int, listing: Mapping[str, NodeKey]) -> None:
        key = typed(key)
        if key.OF_DOCUMENT:
            self._by_document.setdefault(key.doc_id, set()).add(key)
        if isinstance(listing, dict) and len(listing) <= PACK_MAX:
            self._listings[key] = _Packed((generation, *chain.from_iterable(listing.items())))
        else:
            self._listings[key] = (generation, listing)

    def get(self, key: NodeKey, generation: int) -> Mapping[str, NodeKey] | None:
        """The listing of ``key`` made at ``generation``, None when there is none."""
        cached = self._listings.get(key)
        if cached is None or cached[0] != generation:
            return None
        if isinstance(cached, _Packed):
            return dict(_pairs(cached))
        listing: Mapping[str, NodeKey] = cached[1]  # type: ignore[assignment]
        return listing

    def entries(self, key: NodeKey) -> Iterator[tuple[str, NodeKey]]:
        """(name, child) of the last listing of ``key`` made, of any generation."""
        cached = self._listings.get(key)
        if cached is None:
            return iter(())
        if isinstance(cached, _Packed):
            return _pairs(cached)
        listing: Mapping[str, NodeKey] = cached[1]  # type: ignore[assignment]
        return iter(listing.items())

    def name_of(self, key: NodeKey, child: NodeKey) -> str | None:
        """The name of ``child`` in the last listing of ``key`` made (None: none made,
        or not in it): a seek in a folder's listing, not a scan."""
        cached = self._listings.get(key)
        if cached is None or isinstance(cached, _Packed):
            return next((name for name, k in self.entries(key) if k == child), None)
        return name_in(cached[1], child)  # type: ignore[arg-type]

    def directories(self) -> list[NodeKey]:
        """Every directory with a listing kept."""
        return list(self._listings)

    def drop(self, key: NodeKey) -> None:
        if self._listings.pop(key, None) is not None:
            self._forget_document_key(key)

    def drop_document(self, doc_id: int) -> None:
        """Drop the listings of the document's own directories."""
        for key in self._by_document.pop(doc_id, ()):
            self._listings.pop(key, None)

    def _forget_document_key(self, key: NodeKey) -> None:
        if key.OF_DOCUMENT:
            kept = self._by_document.get(key.doc_id)
            if kept is not None:
                kept.discard(key)
                if not kept:
                    del self._by_document[key.doc_id]


def _pairs(packed: _Packed) -> Iterator[tuple[str, NodeKey]]:
    return zip(packed[1::2], packed[2::2], strict=True)  # type: ignore[arg-type]
