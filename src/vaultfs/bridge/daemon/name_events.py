"""inotify events for names the daemon makes appear or go: an open file-manager window
shows a pasted file turned into its document's folder, and documents another client
created, renamed or deleted, without a refresh.

inotify's IN_CREATE and IN_DELETE (in the watches of the parent directory) are raised
by the kernel's VFS when a mkdir(2), create(2), unlink(2) or rmdir(2) through it
succeeds. FUSE has no notification that raises either: ``invalidate_entry`` forgets a
name, and with ``deleted`` raises only IN_DELETE_SELF, to the watchers of the node
itself (tested on Linux 6.18). So the daemon makes the VFS raise them: a thread of
its own calls mkdir(2), unlink(2) or rmdir(2) on the name through the mount (this
module never imports pyfuse3: the ``fuse`` package answers the requests), and the
file system answers that thread, and only that thread (a request's pid is the calling
thread's id), so that nothing changes:

- a create: the lookup for the mkdir is answered ENOENT, and the mkdir with the
  existing directory's entry. The kernel raises IN_CREATE (with IN_ISDIR) in the
  parent's watches. A name the kernel holds already makes the mkdir fail in the kernel
  (EEXIST) before any request: no event, and a directory that is someone's working
  directory is never forgotten (so any changed document may be announced).
- a delete: the name is deleted in the kernel (IN_DELETE_SELF to the node's watchers;
  a name the kernel does not hold for that node ends it here: no window can show it);
  the lookup for the unlink (rmdir) is answered with a stand-in, a new inode number
  that no node has and that times out at once, and the unlink (rmdir) is answered
  done. The kernel raises IN_DELETE (with IN_ISDIR for a directory) in the parent's
  watches, drops the stand-in and forgets its number.

The thread is never the trio loop's: its calls wait for the loop to answer them.
While one runs the kernel holds the parent directory's lock, so no other process's
lookup of the name through the parent reaches the daemon in between. Any failure
(another program looked the name up in between: EEXIST; the name went: ENOENT; a user
who may not write in the folder: EACCES) only means no event: logged at debug.
"""

from __future__ import annotations

import enum
import errno
import itertools
import logging
import os
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["STAND_IN_INODES", "Event", "NameEvents", "Sort"]

log = logging.getLogger(__name__)

#: the first inode number of the stand-ins a delete's lookup is answered with (far
#: above any number the mount's inode table gives)
STAND_IN_INODES = 1 << 62


class Sort(enum.Enum):
    """The call through the mount that raises the event."""

    CREATE_DIR = "mkdir"
    DELETE_DIR = "rmdir"
    DELETE_FILE = "unlink"


@dataclass(frozen=True)
class Event:
    sort: Sort
    parent: int
    parent_path: str
    name: str
    #: a delete: the inode the kernel was given for the name; a create: 0
    ino: int = 0
    #: a delete: the inode number its lookup is answered with
    stand_in: int = 0

    @property
    def creates(self) -> bool:
        return self.sort is Sort.CREATE_DIR

    @property
    def label(self) -> str:
        return "create" if self.creates else "delete"

    @property
    def path(self) -> str:
        return os.path.join(self.parent_path, self.name)


class NameEvents:
    """Raises IN_CREATE and IN_DELETE for names that appeared or went without a call
    through the mount (``created``, ``deleted``); ``FuseOps`` asks ``own`` and
    ``pending`` in lookup, mkdir, unlink and rmdir."""

    def __init__(
        self,
        mountpoint: str,
        forget: Callable[[int, str], None],
        delete: Callable[[int, str, int], None],
    ) -> None:
        """``forget(parent, name)``, ``delete(parent, name, ino)``: make the kernel forget
        a name now, as deleted for ``delete`` (``fuse.kernel_cache``; they raise OSError
        when the kernel has no such name, or not for that inode)."""
        self._mountpoint = mountpoint
        self._forget = forget
        self._delete = delete
        self._queue: queue.SimpleQueue[Event | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._stand_ins = itertools.count(STAND_IN_INODES)
        #: the thread id of the thread that makes the calls (0: not started)
        self._tid = 0
        #: the event its call is about, while one is under way
        self._pending: Event | None = None

    def created(self, parent: int, parent_path: str, name: str) -> None:
        """Raise IN_CREATE for directory ``name`` in ``parent`` (``parent_path``,
        relative to the mount point); queued, never waits."""
        self._put(Event(Sort.CREATE_DIR, parent, parent_path, name))

    def deleted(self, parent: int, parent_path: str, name: str, ino: int, is_dir: bool) -> None:
        """Forget ``name`` in ``parent``, which the kernel was given as ``ino``, as
        deleted, and raise IN_DELETE for it; queued, never waits."""
        sort = Sort.DELETE_DIR if is_dir else Sort.DELETE_FILE
        self._put(Event(sort, parent, parent_path, name, ino, next(self._stand_ins)))

    def own(self, pid: int) -> bool:
        """Whether a request comes from the thread that raises the events."""
        return self._tid != 0 and pid == self._tid

    def pending(self, pid: int, parent: int, name: str) -> Event | None:
        """The event a request of ``pid`` on ``name`` in ``parent`` is the call (or the
        lookup) of; None for every other request."""
        event = self._pending
        if not self.own(pid) or event is None or (event.parent, event.name) != (parent, name):
            return None
        return event

    def close(self) -> None:
        """Ends the thread (not waited for: its call may wait for a loop that ended)."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread = None

    def _put(self, event: Event) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="name-events", daemon=True)
            self._thread.start()
        self._queue.put(event)

    def _run(self) -> None:
        self._tid = threading.get_native_id()
        while (event := self._queue.get()) is not None:
            self._pending = event
            try:
                self._raise(event)
                log.debug("%s event raised for %s", event.label, event.path)
            except OSError as exc:
                log.debug("no %s event for %s: %s", event.label, event.path, exc)
            finally:
                self._pending = None

    def _raise(self, event: Event) -> None:
        path = os.path.join(self._mountpoint, event.path)
        if event.creates:
            os.mkdir(path)
            return
        try:
            self._delete(event.parent, event.name, event.ino)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                raise  # not that node's name in the kernel: nothing a window shows
            # A directory with entries in use below it (ENOTEMPTY) or a mount point
            # (EBUSY) cannot be deleted: forgetting its name is what is left (the
            # refusal may have forgotten it already).
            try:
                self._forget(event.parent, event.name)
            except OSError as again:
                if again.errno != errno.ENOENT:
                    raise
        if event.sort is Sort.DELETE_DIR:
            os.rmdir(path)
        else:
            os.unlink(path)
