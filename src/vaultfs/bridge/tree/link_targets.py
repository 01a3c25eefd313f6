"""What a symbolic link made in the mount points at: its text read as a path of the
mount, absolute (below the mount point) or relative to the link's folder, resolved
through the tree. Shared by ``ln -s`` in ``relationships/`` and in ``Favorites``."""

from __future__ import annotations

import posixpath
from collections.abc import Awaitable, Callable

from vaultfs import errors
from vaultfs.bridge.tree.keys import ROOT, NodeKey
from vaultfs.bridge.tree.tree import Tree

__all__ = ["link_target"]


async def link_target(
    tree: Tree, text: str, mountpoint: str, folder: Callable[[], Awaitable[list[str]]]
) -> NodeKey:
    """The node link text ``text`` names; ``folder``: the names from the root to the
    link's folder (asked only for a relative text). ``errors.InvalidData`` (EINVAL)
    saying why for a path outside the mount, one that leaves it or names nothing."""
    if posixpath.isabs(text):
        prefix = mountpoint.rstrip("/") + "/"
        if not mountpoint or not text.startswith(prefix):
            raise errors.InvalidData("outside the mount")
        steps = text[len(prefix) :].split("/")
    else:
        steps = [*await folder(), *text.split("/")]
    names: list[str] = []
    for step in steps:
        if step in ("", "."):
            continue
        if step == "..":
            if not names:
                raise errors.InvalidData("leaves the mount")
            names.pop()
        else:
            names.append(step)
    key: NodeKey = ROOT
    for name in names:
        child = await tree.lookup(key, name)
        if child is None:
            raise errors.InvalidData("no such document")
        key = child
    return key
