"""Create events for names the daemon makes appear: a pasted file that became its
document's folder shows in an open file-manager window without a refresh.

inotify's IN_CREATE is raised by the kernel's VFS when a mkdir(2) (or a create)
through it succeeds; FUSE has no notification that raises it (``invalidate_entry``
with ``deleted`` raises IN_DELETE, nothing raises a create). So the daemon makes the
VFS raise it: a thread of its own forgets the name in the kernel (``invalidate_entry``)
and calls mkdir(2) on it through the mount (this module never imports pyfuse3:
the ``fuse`` package answers the requests). The kernel looks the name up for that
mkdir, and the file system answers that thread, and only that thread (the request's
pid is the calling thread's id), that the name does not exist; the mkdir that follows
is answered with the existing directory's entry. Nothing is made, in the vault or in
the mount; the kernel raises IN_CREATE (with IN_ISDIR) in the parent's watches.

The thread is never the trio loop's: its mkdir waits for the loop to answer it. While
it runs the kernel holds the parent directory's lock, so no other process's lookup of
the name reaches the daemon in between. Any failure (another program looked the name
up in between: EEXIST, the name went: ENOENT) only means no event: logged at debug.
"""

from __future__ import annotations

import errno
import logging
import os
import queue
import threading
from collections.abc import Callable

__all__ = ["CreateEvents"]

log = logging.getLogger(__name__)


class CreateEvents:
    """Raises IN_CREATE for directories that appeared without a mkdir (``announce``);
    ``FuseOps`` asks ``own`` and ``pending`` in lookup and mkdir."""

    def __init__(self, mountpoint: str, forget: Callable[[int, str], None]) -> None:
        """``forget(parent, name)``: make the kernel forget a name now (``fuse.kernel_cache``'s
        ``forget_entry``; raises OSError when the kernel has no such name)."""
        self._mountpoint = mountpoint
        self._forget = forget
        self._queue: queue.SimpleQueue[tuple[int, str, str] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        #: the thread id of the thread that makes the mkdir calls (0: not started)
        self._tid = 0
        #: (parent inode, name) its mkdir is about, while one is under way
        self._pending: tuple[int, str] | None = None

    def announce(self, parent: int, parent_path: str, name: str) -> None:
        """Raise IN_CREATE for directory ``name`` in ``parent`` (``parent_path``,
        relative to the mount point); queued, never waits."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="create-events", daemon=True)
            self._thread.start()
        self._queue.put((parent, parent_path, name))

    def own(self, pid: int) -> bool:
        """Whether a request comes from the thread that raises the events."""
        return self._tid != 0 and pid == self._tid

    def pending(self, pid: int, parent: int, name: str) -> bool:
        """Whether a request of ``pid`` on ``name`` in ``parent`` is the event's mkdir
        (or its lookup): answered as described above."""
        return self.own(pid) and self._pending == (parent, name)

    def close(self) -> None:
        """Ends the thread (not waited for: its mkdir may wait for a loop that ended)."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread = None

    def _run(self) -> None:
        self._tid = threading.get_native_id()
        while (item := self._queue.get()) is not None:
            parent, parent_path, name = item
            self._pending = (parent, name)
            try:
                try:
                    self._forget(parent, name)
                except OSError as exc:
                    if exc.errno != errno.ENOENT:  # ENOENT: the kernel has no such name
                        raise
                os.mkdir(os.path.join(self._mountpoint, parent_path, name))
                log.debug("create event raised for %s", os.path.join(parent_path, name))
            except OSError as exc:
                log.debug("no create event for %r in %s: %s", name, parent_path or "/", exc)
            finally:
                self._pending = None
