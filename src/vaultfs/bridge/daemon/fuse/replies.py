"""The core's answers in pyfuse3's types: an ``Attr`` as ``EntryAttributes``, the
file system's numbers as ``StatvfsData``, and a listing's part as readdir replies; and
the stand-in entry of a name event's delete. A READDIR (``token.plus`` false), and a
page of a READDIRPLUS the mount gives no attributes (``listing_pages``), is answered
with names, inode numbers and types only (``reply_plain``)."""

from __future__ import annotations

import os
import stat
from typing import Any

import pyfuse3

from vaultfs.bridge.fs.filesystem import Attr, FileSystem
from vaultfs.bridge.fs.plain_listing import plain_entries

__all__ = ["entry_attributes", "is_plain", "reply_entries", "reply_plain", "stand_in", "statvfs"]


def entry_attributes(attr: Attr) -> pyfuse3.EntryAttributes:
    entry = pyfuse3.EntryAttributes()  # all zeros: generation and st_rdev stay 0
    entry.st_ino = attr.ino
    entry.entry_timeout = attr.entry_timeout
    entry.attr_timeout = attr.timeout
    entry.st_mode = attr.mode
    entry.st_nlink = attr.nlink
    entry.st_uid = attr.uid
    entry.st_gid = attr.gid
    entry.st_size = attr.size
    entry.st_blksize = 1 << 17
    entry.st_blocks = (attr.size + 511) // 512
    entry.st_atime_ns = attr.mtime_ns
    entry.st_mtime_ns = attr.mtime_ns
    entry.st_ctime_ns = attr.ctime_ns
    return entry


def stand_in(ino: int, is_dir: bool, ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
    """An entry no node stands behind (``name_events``): empty, owned by the caller,
    never kept by the kernel."""
    mode = (stat.S_IFDIR | 0o700) if is_dir else (stat.S_IFREG | 0o600)
    nlink = 2 if is_dir else 1
    attr = Attr(
        ino=ino, mode=mode, size=0, nlink=nlink, mtime_ns=0, ctime_ns=0,
        uid=ctx.uid, gid=ctx.gid, timeout=0, entry_timeout=0,
    )  # fmt: skip
    return entry_attributes(attr)


def statvfs(numbers: dict[str, int]) -> pyfuse3.StatvfsData:
    data = pyfuse3.StatvfsData()
    data.f_bsize = data.f_frsize = numbers["bsize"]
    data.f_blocks = numbers["blocks"]
    data.f_bfree = data.f_bavail = numbers["bfree"]
    data.f_files = numbers["files"]
    data.f_ffree = data.f_favail = numbers["ffree"]
    data.f_namemax = numbers["namemax"]
    return data


def reply_entries(
    core: FileSystem, entries: list[tuple[int, str, Any, Attr]], token: pyfuse3.ReaddirToken
) -> bool:
    """Answer with ``entries`` and their attributes, as many as fit; True when all did."""
    for n, (next_id, name, _, attr) in enumerate(entries):
        if not pyfuse3.readdir_reply(token, os.fsencode(name), entry_attributes(attr), next_id):
            # The kernel took no reference to these: give theirs back.
            core.entries_not_returned(entries[n:])
            return False
    return True


def is_plain(token: pyfuse3.ReaddirToken) -> bool:
    """A plain READDIR (only with ``readdirplus_auto``; a stock pyfuse3's tokens have no
    ``plus``: every listing is READDIRPLUS there)."""
    return not getattr(token, "plus", True)


def reply_plain(core: FileSystem, fh: int, start: int, token: pyfuse3.ReaddirToken) -> int | None:
    """Answer a plain READDIR, or a READDIRPLUS names only, from position ``start`` of
    listing ``fh``, as many entries as fit. Where the listing ended before the reply
    was full: the position after its last entry (where the kernel asks next, for
    nothing); None when the reply was full first."""
    end = start
    for next_id, name, ino, kind in plain_entries(core.handles.dir(fh), core.inodes, start):
        if not pyfuse3.readdir_reply_plain(token, os.fsencode(name), ino, kind, next_id):
            return None
        end = next_id
    return end
