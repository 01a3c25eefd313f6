"""The tree's cache of directory listings: per index generation, small ones packed.

A walk of 10,000 documents lists about 70,000 directories, nearly all of them a
document's own (its directory, ``versions/``, a version's, ``renditions/``,
``attachments/``, ``relationships/``), of zero to six entries each. Kept as a dict in
a (generation, dict) pair, such a listing costs 180 to 240 bytes; packed into one
tuple, (generation, name, key, name, key, ...), 48 to 150: 7 MiB less for the walk.
A listing of more than ``PACK_MAX`` entries (a folder of documents) stays a dict, so
a lookup in a folder of 10,000 documents is still one hash, not a scan.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain

from vaultfs.bridge.tree.keys import NodeKey

__all__ = ["PACK_MAX", "ListingCache"]

#: listings of at most this many entries are packed into a tuple (a dict made of one
#: when asked for costs well under a microsecond at this size)
PACK_MAX = 8


class _Packed(tuple[object, ...]):  # (generation, name, key, name, key, ...)
    __slots__ = ()


class ListingCache:
    def __init__(self) -> None:
        #: directory key -> _Packed, or (generation, name -> child key)
        self._listings: dict[NodeKey, tuple[object, ...]] = {}

    def __len__(self) -> int:
        return len(self._listings)

    def put(self, key: NodeKey, generation: int, listing: dict[str, NodeKey]) -> None:
        if len(listing) <= PACK_MAX:
            self._listings[key] = _Packed((generation, *chain.from_iterable(listing.items())))
        else:
            self._listings[key] = (generation, listing)

    def get(self, key: NodeKey, generation: int) -> dict[str, NodeKey] | None:
        """The listing of ``key`` made at ``generation``, None when there is none."""
        cached = self._listings.get(key)
        if cached is None or cached[0] != generation:
            return None
        if isinstance(cached, _Packed):
            return dict(_pairs(cached))
        listing: dict[str, NodeKey] = cached[1]  # type: ignore[assignment]
        return listing

    def entries(self, key: NodeKey) -> Iterator[tuple[str, NodeKey]]:
        """(name, child) of the last listing of ``key`` made, of any generation."""
        cached = self._listings.get(key)
        if cached is None:
            return iter(())
        if isinstance(cached, _Packed):
            return _pairs(cached)
        listing: dict[str, NodeKey] = cached[1]  # type: ignore[assignment]
        return iter(listing.items())

    def directories(self) -> list[NodeKey]:
        """Every directory with a listing kept."""
        return list(self._listings)

    def drop(self, key: NodeKey) -> None:
        self._listings.pop(key, None)


def _pairs(packed: _Packed) -> Iterator[tuple[str, NodeKey]]:
    return zip(packed[1::2], packed[2::2], strict=True)  # type: ignore[arg-type]
