"""The marks of the locks a mount takes: ``<spool>/locks/<doc_id>``.

A mark is written, durably, before a lock is asked for and dropped once the lock is
released, so a daemon that dies in between leaves a mark, and the next start releases
every marked lock no entry took over (``locking.SpoolLocking.release_stale_locks``).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from vaultfs.bridge.write.spool.durable import DIR_MODE, FILE_MODE, fsync_dir

__all__ = ["drop", "mark", "marked"]

_LOCKS = "locks"


def mark(directory: Path, doc_id: int) -> None:
    """Record, durably, that this mount is about to lock ``doc_id`` (before asking)."""
    folder = directory / _LOCKS
    folder.mkdir(mode=DIR_MODE, exist_ok=True)
    fd = os.open(folder / str(doc_id), os.O_WRONLY | os.O_CREAT, FILE_MODE)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(folder)


def drop(directory: Path, doc_id: int) -> None:
    with contextlib.suppress(FileNotFoundError):
        (directory / _LOCKS / str(doc_id)).unlink()


def marked(directory: Path) -> list[int]:
    """The documents this mount asked a lock of and never recorded as released."""
    folder = directory / _LOCKS
    if not folder.is_dir():
        return []
    marks = []
    for path in folder.iterdir():
        if path.name.isdigit():
            marks.append(int(path.name))
        else:
            path.unlink()  # not ours to keep
    return sorted(marks)
