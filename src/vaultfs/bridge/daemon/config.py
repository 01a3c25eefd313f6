"""What a mount is asked for (``MountConfig``) and where it keeps its files by default.

Light to import: the commands build a ``MountConfig`` without loading the daemon (and
with it pyfuse3), which they import only when a mount really starts.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vaultfs.bridge.fs.options import MAX_INODES
from vaultfs.bridge.tree.walks import WALK_BURST, WALK_CALLS

__all__ = ["MAX_INODES", "WALK_BURST", "WALK_CALLS", "MountConfig", "default_cache_dir"]


def default_cache_dir(url: str, user: str) -> Path:
    """``~/.cache/vaultfs/<hash of url and user>``: one cache per vault and user."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "vaultfs"
    return base / hashlib.sha256(f"{url}\0{user}".encode()).hexdigest()[:16]


@dataclass
class MountConfig:
    url: str
    user: str
    password: str = field(repr=False)
    mountpoint: Path
    cache_dir: Path
    cache_size: int = 1 << 30
    poll_interval: float = 30.0
    attr_timeout: float = 3600.0
    #: inodes the kernel may hold of the mount before it is asked to forget the names
    #: of the documents it was given longest ago (``fs.freshness``)
    max_inodes: int = MAX_INODES
    #: the walks' share of the vault's API budget: calls a day, calls per 5 minutes
    walk_calls: int = WALK_CALLS
    walk_burst: int = WALK_BURST
    #: retries of one API call before it fails (an outage longer than that gives EIO)
    retries: int = 6
    read_only: bool = False
    allow_other: bool = False
    allow_delete: bool = False
    #: mount on a directory that holds files (hiding them while mounted)
    nonempty: bool = False
    debug: bool = False
    #: desktop notifications on the user's session bus, when there is one
    notify: bool = True
    #: how the mount signs in when not with ``user`` and ``password``: a
    #: ``vaultfs.client.SessionSource`` (single sign-on), or None
    session_source: Any = field(default=None, repr=False)
