"""``tree.listing_cache``: listings kept per index generation, small ones packed, big
ones kept as the dict they were made as; every way of reading them gives the same."""

from __future__ import annotations

import sys

from vaultfs.bridge.tree import keys
from vaultfs.bridge.tree.listing_cache import PACK_MAX, ListingCache


def _listing(doc_id: int, count: int) -> dict[str, keys.NodeKey]:
    return {f"v{n}": keys.version(doc_id, n, 0) for n in range(count)}


def test_listings_come_back_equal_per_generation_small_and_big() -> None:
    cache = ListingCache()
    for count in (0, 1, PACK_MAX, PACK_MAX + 1, 500):
        directory = keys.versions(count + 1)
        listing = _listing(count + 1, count)
        cache.put(directory, 7, listing)
        assert cache.get(directory, 7) == listing
        assert list(cache.entries(directory)) == list(listing.items())  # in order
        assert cache.get(directory, 8) is None  # another generation: made anew
        assert list(cache.entries(directory)) == list(listing.items())  # still named
    assert cache.get(keys.versions(999), 7) is None
    assert list(cache.entries(keys.versions(999))) == []


def test_a_small_listing_is_kept_smaller_than_a_dict_and_handed_out_as_a_new_one() -> None:
    cache = ListingCache()
    directory = keys.document(1)
    listing = _listing(1, 5)
    cache.put(directory, 1, listing)
    kept = cache._listings[directory]
    assert sys.getsizeof(kept) < sys.getsizeof(listing)
    handed = cache.get(directory, 1)
    assert handed is not None
    handed["changed by a caller"] = keys.source(1)
    assert cache.get(directory, 1) == listing  # what is kept is not changed with it


def test_dropped_listings_are_gone_and_the_directories_say_which_are_kept() -> None:
    cache = ListingCache()
    cache.put(keys.document(1), 1, _listing(1, 2))
    cache.put(keys.document(2), 1, _listing(2, 20))
    assert sorted(cache.directories()) == [keys.document(1), keys.document(2)]
    cache.drop(keys.document(1))
    cache.drop(keys.document(3))  # not kept: nothing happens
    assert cache.directories() == [keys.document(2)] and len(cache) == 1
    assert cache.get(keys.document(1), 1) is None


def test_the_cache_is_bounded_and_a_documents_listings_go_together() -> None:
    cache = ListingCache(maxsize=4)
    for doc_id in range(1, 4):
        cache.put(keys.document(doc_id), 1, _listing(doc_id, 2))
        cache.put(keys.versions(doc_id), 1, _listing(doc_id, 2))
    assert len(cache) == 4  # the least recently used went
    assert cache.get(keys.document(1), 1) is None
    cache.drop_document(3)
    assert cache.get(keys.document(3), 1) is None and cache.get(keys.versions(3), 1) is None
    assert cache.get(keys.versions(2), 1) == _listing(2, 2)
    assert cache._by_document.keys() == {2}  # nothing kept of what went
