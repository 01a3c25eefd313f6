"""The FUSE layer: the only package that imports pyfuse3.

``operations`` answers the kernel's requests (``FuseOps``), ``requests`` counts them and
translates their errors, ``replies`` builds pyfuse3's types, ``listing_by_inode`` reads
listings without OPENDIR, ``kernel_cache`` keeps track of what the kernel keeps and
sends the notifications that drop it, ``session`` starts, runs and closes the mount's
FUSE session. This module only gathers what the mount daemon uses.
"""

from vaultfs.bridge.daemon.fuse.kernel_cache import (
    delete_entry,
    forget_entry,
    invalidate_attr,
    invalidate_entry,
    invalidate_link,
)
from vaultfs.bridge.daemon.fuse.operations import FuseOps, capabilities
from vaultfs.bridge.daemon.fuse.requests import recent_refusals, request_counts
from vaultfs.bridge.daemon.fuse.session import close, default_options, init, main, terminate

__all__ = [
    "FuseOps",
    "capabilities",
    "close",
    "default_options",
    "delete_entry",
    "forget_entry",
    "init",
    "invalidate_attr",
    "invalidate_entry",
    "invalidate_link",
    "main",
    "recent_refusals",
    "request_counts",
    "terminate",
]
