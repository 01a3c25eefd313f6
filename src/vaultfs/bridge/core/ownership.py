"""What one mount owns alone: its cache directory (content cache, spool, scratch
files) and its mount point.

A second daemon on the same cache directory would empty the first one's scratch
files and check in its half-written content; a second mount stacked on a mount point
hides the first. Both are refused before anything is mounted: the cache directory is
claimed with an exclusive ``flock`` on ``<cache_dir>/lock`` (mode 0600, holding the
pid and mount point of its owner, released by the kernel however the daemon ends),
and the mount point must be a directory that is neither mounted on nor (without
``-o nonempty``) holding files.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from vaultfs.errors import AlreadyInUse

__all__ = ["owning"]

_LOCK_NAME = "lock"
_FILE_MODE = 0o600


@contextlib.contextmanager
def owning(cache_dir: Path, mountpoint: Path, *, nonempty: bool = False) -> Iterator[None]:
    """Hold ``cache_dir`` for the life of the block, after checking ``mountpoint``."""
    _check_mountpoint(mountpoint, nonempty=nonempty)
    fd = os.open(cache_dir / _LOCK_NAME, os.O_RDWR | os.O_CREAT, _FILE_MODE)
    try:
        os.fchmod(fd, _FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 4096, 0).decode(errors="replace").split("\n")
            pid, where = [*owner, "?", "?"][:2]
            raise AlreadyInUse(
                f"the cache directory {cache_dir} is in use by the mount at {where} "
                f"(pid {pid}); give this mount a cache_dir of its own"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n{mountpoint}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the flock


def _check_mountpoint(mountpoint: Path, *, nonempty: bool) -> None:
    try:
        if os.path.ismount(mountpoint):
            raise AlreadyInUse(f"{mountpoint} is already a mount point; unmount it first")
        entries = os.listdir(mountpoint)
    except OSError as exc:
        if exc.errno == errno.ENOTCONN:  # a mount whose daemon died
            raise AlreadyInUse(
                f"{mountpoint} is a mount whose daemon has stopped; "
                f"run 'fusermount3 -u {mountpoint}' first"
            ) from None
        raise
    if entries and not nonempty:
        raise AlreadyInUse(
            f"{mountpoint} is not empty; mount on an empty directory or add -o nonempty"
        )
