"""What the kernel keeps of the mount, and the notifications that make it drop it:
the directory inodes whose listings it may keep, with where each ends (``kept``), the
files whose read-only opens pyfuse3 answers itself (``kept_opens``), the names it answers
itself in every document's directory (``shared_entries``), ``invalidate_attr``
(an inode's attributes, its kept listing and its kept open), ``invalidate_entry`` (a
name, sent by a thread of its own), ``invalidate_link`` (a link's attributes and the
target the kernel keeps of it, sent by that thread too), ``forget_entry`` and
``delete_entry`` (a name, now) and ``drop_listing``.

A kept open stands for "this inode's read-only opens all get this handle, the kernel's
pages kept". Whatever changes what such an open would get (a new version the index
learns, this mount's check-in, an open for writing) invalidates the inode's attributes,
which takes the kept open back; ``invalidations`` lets an open that awaited tell whether
one came meanwhile, so that it never keeps an answer made before it.

The kernel drops a kept listing itself when this mount creates, links, renames or
deletes in the directory; for every other change the listing goes with the directory's
attributes: ``invalidate_attr`` (called for the inodes of each document the index
learns a change of, and for every folder) drops the kept listing of a directory it was
given for.

The kernel also loses a kept listing by itself when its memory management reclaims one
of the listing's pages (one page gone resets the whole listing); nothing the mount
answers prevents that, and ``listing_by_inode`` logs the read that follows.
"""

from __future__ import annotations

import errno
import logging
import os
import queue
import threading

import pyfuse3

__all__ = [
    "delete_entry",
    "drop_listing",
    "forget_entry",
    "invalidate_attr",
    "invalidate_entry",
    "invalidate_link",
    "invalidations",
    "kept",
    "kept_opens",
    "shared_entries",
    "stop_notifier",
]

log = logging.getLogger(__name__)

#: directory inodes whose listings the kernel may keep (opened with cache_readdir, or
#: read without OPENDIR) -> the position this mount's last answer found the listing's
#: end at, while nothing dropped the listing since and no new listing of it is under way
#: (0: not known); emptied when a mount starts. The kernel asks once more at the end of
#: a listing it keeps whole, each time a program reads it to the end (it looks for an
#: entry after the last and, finding none, asks the mount): answered from here, by
#: pyfuse3's C handler where it offers ``kept_listings`` (this is that dict), without a
#: Python task (GNOME Files counting 100,000 folders sent 200,000 such reads).
kept: dict[int, int] = getattr(pyfuse3, "kept_listings", {})

#: name -> (entry, first inode, step): a lookup of the name in a directory numbered
#: ``first + n * step`` is answered by pyfuse3's C handler where it offers
#: ``shared_entries`` (this is that dict), without a Python task: GIO reads ``.hidden``
#: in every folder it lists or counts (GNOME Files counting a folder of 100,000
#: documents looked up 100,000 of them, half the requests the count sent). None where
#: pyfuse3 does not offer it: the mount answers those lookups as any other.
shared_entries: dict[bytes, tuple[pyfuse3.EntryAttributes, int, int]] | None = getattr(
    pyfuse3, "shared_entries", None
)

#: file inode -> the handle pyfuse3 answers its read-only opens with (and whose releases
#: it answers); a dict of pyfuse3's own where it offers ``kept_opens``, never filled
#: otherwise
kept_opens: dict[int, int] = getattr(pyfuse3, "kept_opens", {})

_invalidations = 0


def invalidations() -> int:
    """How many inodes were invalidated so far (``invalidate_attr``)."""
    return _invalidations


def drop_listing(inode: int) -> None:
    if inode in kept:
        kept[inode] = 0
    try:
        pyfuse3.invalidate_inode(inode, attr_only=False)
    except OSError as exc:
        log.debug("dropping the listing of inode %d: %s", inode, exc)


def invalidate_attr(inode: int) -> None:
    """Make the kernel ask for ``inode``'s attributes again, and list it again when it is
    a directory whose listing it may keep. Attributes only for files: that never waits
    for the kernel (no pages to write back), so it is safe inside a request. A kept
    listing's pages are never locked while the kernel waits for this mount (it fills
    them from a reply already received), so dropping them is safe there too. The next
    read-only open of a file reaches the mount again (its kept open is dropped)."""
    global _invalidations
    _invalidations += 1
    kept_opens.pop(inode, None)
    listing = inode in kept
    if listing:
        kept[inode] = 0
        # With --log-level debug, the listings this mount makes the kernel drop; one
        # the kernel drops by itself (its pages reclaimed) shows as a read resumed
        # mid-way (``listing_by_inode``).
        log.debug("the kernel drops its listing of inode %d", inode)
    try:
        pyfuse3.invalidate_inode(inode, attr_only=not listing)
    except OSError as exc:  # the kernel forgot the inode already (or is not mounted)
        log.debug("invalidating inode %d: %s", inode, exc)


def invalidate_entry(parent: int, name: str, deleted: int = 0) -> None:
    """Make the kernel forget ``name`` in directory ``parent``; with ``deleted`` (the
    inode it gave for the name, gone from there) as a delete, which raises
    ``IN_DELETE`` to inotify watchers. Queued to a thread of its own: the kernel call
    waits for requests on that directory, so made from a request handler (or the trio
    loop) it could deadlock."""
    _notify((parent, os.fsencode(name), deleted))


def invalidate_link(inode: int) -> None:
    """Make the kernel forget a symbolic link's attributes and the target it keeps of
    it (``cache_symlinks``). Queued to the notifying thread: the kernel reads a link's
    target into a page it holds locked while it waits for this mount's answer, so
    dropping that page from a request handler (or the trio loop) could deadlock."""
    _notify((inode, None, 0))


def _notify(item: tuple[int, bytes | None, int]) -> None:
    global _notifier
    if _notifier is None:
        _notifier = threading.Thread(target=_notify_entries, name="entry-notify", daemon=True)
        _notifier.start()
    _entries.put(item)


def forget_entry(parent: int, name: str) -> None:
    """Make the kernel forget ``name`` in ``parent`` now; waits for requests on that
    directory, so only for a thread of its own (``name_events.NameEvents``)."""
    pyfuse3.invalidate_entry(parent, os.fsencode(name))


def delete_entry(parent: int, name: str, deleted: int) -> None:
    """``forget_entry``, as a delete of inode ``deleted`` (``invalidate_entry``)."""
    pyfuse3.invalidate_entry(parent, os.fsencode(name), deleted)


#: (parent, name, deleted) of a name; (inode, None, 0) of a link
_entries: queue.SimpleQueue[tuple[int, bytes | None, int] | None] = queue.SimpleQueue()
_notifier: threading.Thread | None = None


def _notify_entries() -> None:
    """Send queued entry notifications, one at a time (pyfuse3's own queue logs every
    refusal as a failure; here a refused delete falls back to forgetting the name)."""
    while (entry := _entries.get()) is not None:
        parent, name, deleted = entry
        if name is None:
            try:
                pyfuse3.invalidate_inode(parent, attr_only=False)
            except OSError as exc:
                log.debug("invalidating link %d: %s", parent, exc)
            continue
        try:
            try:
                pyfuse3.invalidate_entry(parent, name, deleted)
            except OSError as exc:
                if exc.errno == errno.ENOENT or not deleted:
                    continue  # the kernel does not hold that name (or that inode for it)
                # A directory with entries in use below it (ENOTEMPTY) or a mount point
                # (EBUSY) cannot be deleted: forgetting its name is what is left.
                log.debug("delete notification of %r refused: %s", name, exc)
                pyfuse3.invalidate_entry(parent, name)
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                log.debug("forgetting %r in %d: %s", name, parent, exc)


def stop_notifier() -> None:
    """End the notifying thread (if it started), after what it was given is sent."""
    global _notifier
    if _notifier is not None:
        _entries.put(None)
        _notifier.join()
        _notifier = None
