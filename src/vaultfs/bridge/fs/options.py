"""What the mount tells the file system about itself (``Options``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from vaultfs.bridge.tree.walks import WALK_BURST, WALK_CALLS

__all__ = ["MAX_INODES", "Options"]

#: inodes the kernel may hold of a mount before the names it was given longest ago are
#: let go (``fs.freshness``). A walk of a million documents would otherwise hold six
#: million. GNOME Files counting the items of a folder of 100,000 documents holds
#: 600,000 (each document's folder, its four sub-folders and its file): at 200,000 the
#: kernel was made to forget most of them part way and looked 75,000 up again, at
#: 700,000 none, and the daemon's CPU for the count fell by a quarter. A held node costs
#: the daemon about 100 bytes (docs/benchmarks.md, 2026-12-07): 70 MiB at the bound.
MAX_INODES = 700_000


@dataclass
class Options:
    url: str = ""
    #: where the file system is mounted (absolute link targets are read below it)
    mountpoint: str = ""
    user: str = ""
    read_only: bool = False
    #: the vault lets this user create documents (asked once at mount time)
    may_create: bool = True
    allow_delete: bool = False
    #: seconds the kernel may keep names and attributes of the vault's nodes; changes
    #: are pushed to it (``fs.freshness``), so this only bounds what nothing announces
    attr_timeout: float = 3600.0
    #: the same for nodes of this mount alone (scratch files, new folders, .vaultfs)
    local_timeout: float = 1.0
    #: seconds between index polls (a search's or a view's answer is kept as long)
    poll_interval: float = 30.0
    #: inodes the kernel may hold before the names it was given longest ago are let go
    #: (``fs.freshness``)
    max_inodes: int = MAX_INODES
    #: the walks' share of the vault's API budget: calls a day and per 5 minutes
    #: (``tree.walks``)
    walk_calls: int = WALK_CALLS
    walk_burst: int = WALK_BURST
    uid: int = field(default_factory=os.getuid)
    gid: int = field(default_factory=os.getgid)
