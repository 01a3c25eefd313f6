"""The mount's own ``.vaultfs``: its status file and lost+found.

``.vaultfs`` is reachable by name at the root and never listed, so that ``tar``,
``rsync`` and ``grep -r`` of the mount never meet its ever-changing status file
(``fs.status``). ``lost+found`` shows the spool's lost+found directory: read-only
files the user may remove. None of these are the vault's: nothing announces their
changes.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Mapping
from pathlib import Path
from typing import cast

import trio

from vaultfs import errors
from vaultfs.bridge.fs.attributes import Attr
from vaultfs.bridge.fs.families import Parts, is_writing
from vaultfs.bridge.fs.handles import LostFile, Snapshot
from vaultfs.bridge.fs.opening import Opened
from vaultfs.bridge.fs.paths import DisplayPaths
from vaultfs.bridge.nodes.family import Family
from vaultfs.bridge.tree import keys
from vaultfs.bridge.tree.keys import CONTROL, LOST, ROOT, STATUS, ControlKey, Kind, NodeKey
from vaultfs.bridge.tree.nodes import CONTROL_DIR, LOST_AND_FOUND
from vaultfs.bridge.tree.tree import Tree
from vaultfs.bridge.write.spool import lost

__all__ = ["Control"]


class Control(Family):
    key_type = ControlKey
    root_names = {CONTROL_DIR: CONTROL}

    def __init__(self, spool_dir: Path | None) -> None:
        """``spool_dir``: the spool whose lost+found is shown (None: a read-only
        mount, none)."""
        self._spool_dir = spool_dir

    def _lost_path(self, key: NodeKey) -> Path:
        if self._spool_dir is None:
            raise errors.NotFound("no lost+found")
        return self._spool_dir / LOST_AND_FOUND / cast(ControlKey, key).lost_name

    async def children(self, tree: Tree, key: NodeKey) -> Mapping[str, NodeKey]:
        if key == CONTROL:
            return {"status": STATUS, LOST_AND_FOUND: LOST}
        if key == LOST:
            found = lost.list_lost(self._spool_dir) if self._spool_dir is not None else []
            return {path.name: keys.lost_file(path.name) for path in found}
        return await super().children(tree, key)

    def step(self, paths: DisplayPaths, key: NodeKey) -> tuple[NodeKey, str] | None:
        if key == CONTROL:
            return ROOT, CONTROL_DIR
        if key == STATUS:
            return CONTROL, "status"
        if key == LOST:
            return CONTROL, LOST_AND_FOUND
        return LOST, cast(ControlKey, key).lost_name

    async def attributes(self, parts: Parts, key: NodeKey, ino: int) -> Attr:
        attributes = parts.attributes
        started = attributes.started_ns
        if key == STATUS:
            size = len(parts.report.as_bytes())
            return attributes.file(ino, 0o444, size, time.time_ns(), started)
        if key.kind == Kind.LOSTF:
            info = os.stat(self._lost_path(key))
            mode = stat.S_IFREG | 0o444  # kept as long as the vault's files: it never changes
            return attributes.make(ino, mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        if key == LOST and self._spool_dir is not None:
            # The spool's folder's own mtime, which moves with every file put there or
            # removed: a kernel that keeps listings compares it before it serves one.
            try:
                changed = os.stat(self._spool_dir / LOST_AND_FOUND).st_mtime_ns
            except FileNotFoundError:
                changed = started
            return attributes.directory(ino, changed, changed, writable=True)
        return attributes.directory(ino, started, started, writable=key == LOST)

    async def open(self, parts: Parts, key: NodeKey, ino: int, flags: int) -> Opened:
        if not self.is_file(key) or is_writing(flags):
            return await super().open(parts, key, ino, flags)
        if key == STATUS:
            return parts.opener.direct(Snapshot(parts.report.as_bytes()))
        return parts.opener.direct(LostFile(str(self._lost_path(key))))

    async def unlink(self, parts: Parts, key: NodeKey, name: str) -> None:
        if key.kind != Kind.LOSTF:
            await super().unlink(parts, key, name)
            return
        assert self._spool_dir is not None
        await trio.to_thread.run_sync(lost.remove_lost, self._spool_dir, name)
