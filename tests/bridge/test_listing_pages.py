"""Which pages of a listing carry attributes (``plus_names``): the first; the rest once
a program looks up the names it was given, and for that process's later listings; a
listing the kernel keeps is to be dropped when another program than its reader looks
its names up."""

from __future__ import annotations

from vaultfs.bridge.daemon.fuse.listing_pages import STATS, ListingPages

FOLDER, OTHER = 10, 11
GLIB, LS = 100, 200


def test_a_listing_that_nothing_stats_is_names_after_its_first_page() -> None:
    pages = ListingPages()
    assert pages.with_attributes(FOLDER, 0, LS)
    assert not pages.with_attributes(FOLDER, 512, LS)
    for _ in range(STATS - 1):  # a person opening a few of its files
        assert not pages.looked_up(FOLDER, LS)
    assert not pages.with_attributes(FOLDER, 1300, LS)


def test_a_program_that_looks_up_what_it_was_given_gets_attributes_from_then_on() -> None:
    pages = ListingPages()
    assert pages.with_attributes(FOLDER, 0, GLIB)
    assert not pages.with_attributes(FOLDER, 512, GLIB)  # read before its first stat
    # Its own listing's names: it has them (the kernel keeps nothing to drop).
    assert not any(pages.looked_up(FOLDER, GLIB) for _ in range(STATS + 1))
    assert pages.with_attributes(FOLDER, 1300, GLIB)
    # Another thread of it reads on: the folder's listing carries attributes.
    assert pages.with_attributes(FOLDER, 2100, GLIB + 1)
    # The same process's next listing, past its first page too.
    assert pages.with_attributes(OTHER, 0, GLIB) and pages.with_attributes(OTHER, 512, GLIB)
    # Listed again from the start by another program: learnt anew.
    assert pages.with_attributes(FOLDER, 0, LS) and not pages.with_attributes(FOLDER, 512, LS)


def test_lookups_in_a_folder_listed_with_attributes_count_for_nothing() -> None:
    pages = ListingPages()
    assert pages.with_attributes(FOLDER, 0, LS)
    assert not any(pages.looked_up(FOLDER, LS) for _ in range(2 * STATS))
    pages.forget(FOLDER)
    assert not pages.looked_up(FOLDER, LS)


def test_another_program_stating_its_way_through_a_kept_listing_has_it_dropped() -> None:
    pages = ListingPages()
    assert pages.with_attributes(FOLDER, 0, LS)
    assert not pages.with_attributes(FOLDER, 512, LS)  # ls: names, kept by the kernel
    looked = [pages.looked_up(FOLDER, LS + 1) for _ in range(STATS)]  # then ls -l
    assert looked == [False] * (STATS - 1) + [True]
    assert pages.with_attributes(FOLDER, 4096, LS + 1)  # what it reads next
