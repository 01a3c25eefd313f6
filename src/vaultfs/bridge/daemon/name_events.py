"""inotify events for names the daemon makes appear or go: an open file-manager window
shows a pasted file turned into its document's folder, and documents another client
created, renamed or deleted, without a refresh.

inotify's IN_CREATE and IN_DELETE (in the watches of the parent directory) are raised
by the kernel's VFS when a mkdir(2), create(2), unlink(2) or rmdir(2) through it
succeeds. FUSE has no notification that raises either: ``invalidate_entry`` forgets a
name, and with ``deleted`` raises only IN_DELETE_SELF, to the watchers of the node
itself (tested on Linux 6.18). So the daemon makes the VFS raise them: a small helper
process of its own calls mkdir(2), unlink(2) or rmdir(2) on the name through the
mount (this module never imports pyfuse3: the ``fuse`` package answers the requests),
and the file system answers that process, and only that process (a request's pid),
so that nothing changes:

- a create: the lookup for the mkdir is answered ENOENT, and the mkdir with the
  existing directory's entry. The kernel raises IN_CREATE (with IN_ISDIR) in the
  parent's watches. The kernel looks a name up again for an exclusive create even
  when it holds it, and an ENOENT would make it forget the name, which may be someone's
  working directory. So the lookup asks the event (``held``) whether the kernel holds
  the name now (a program may have looked it up since the event was queued), and
  then answers it as any other lookup: the mkdir fails in the kernel (EEXIST), no
  event is raised and nothing is forgotten.
- a delete: the name is deleted in the kernel (IN_DELETE_SELF to the node's watchers;
  a name the kernel does not hold for that node ends it here: no window can show it);
  the lookup for the unlink (rmdir) is answered with a stand-in, a new inode number
  that no node has and that times out at once, and the unlink (rmdir) is answered
  done. The kernel raises IN_DELETE (with IN_ISDIR for a directory) in the parent's
  watches, drops the stand-in and forgets its number.

The calls wait for the trio loop to answer them, so they are never the loop's: a
thread of the daemon hands them to the helper one at a time and waits for its word.
They are not made by that thread itself: a request the daemon has read is waited
for by its caller without end, even by a caller SIGKILL ended (the kernel waits out
what it sent), so a daemon killed while its own thread had a call on its own mount
would stay a zombie holding ``/dev/fuse``, its connection never ended, and every
program touching the mount would hang (seen in the kill tests). A daemon killed
while the helper has a call under way exits; the kernel ends the connection, the
call fails and the helper, finding its pipe closed, exits too. While a call runs the
kernel holds the parent directory's lock, so no other process's lookup of the name
through the parent reaches the daemon in between. Any failure
(the kernel holds the name: EEXIST; the name went: ENOENT; a user
who may not write in the folder: EACCES) only means no event: logged at debug.
"""

from __future__ import annotations

import enum
import errno
import itertools
import logging
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["STAND_IN_INODES", "Event", "NameEvents", "Sort"]

log = logging.getLogger(__name__)

#: the first inode number of the stand-ins a delete's lookup is answered with (far
#: above any number the mount's inode table gives)
STAND_IN_INODES = 1 << 62


#: the helper: each line read is a call and a path (hex of its bytes), each line
#: written the call's errno (0: done); it ends when its input does
_HELPER = """
import os, sys
calls = {"mkdir": os.mkdir, "rmdir": os.rmdir, "unlink": os.unlink}
for line in sys.stdin:
    call, path = line.split()
    try:
        calls[call](bytes.fromhex(path))
        done = 0
    except OSError as exc:
        done = exc.errno or 5
    sys.stdout.write(f"{done}\\n")
    sys.stdout.flush()
"""


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
    #: a create: whether the kernel holds the name now (asked at the mkdir's lookup)
    held: Callable[[], bool] = field(default=lambda: False, compare=False)

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
        self._helper: subprocess.Popen[str] | None = None
        self._stand_ins = itertools.count(STAND_IN_INODES)
        #: the pid of the process that makes the calls (0: not started)
        self._tid = 0
        #: the event its call is about, while one is under way
        self._pending: Event | None = None

    def created(
        self,
        parent: int,
        parent_path: str,
        name: str,
        held: Callable[[], bool] = lambda: False,
    ) -> None:
        """Raise IN_CREATE for directory ``name`` in ``parent`` (``parent_path``,
        relative to the mount point), unless ``held()`` says the kernel holds the name
        by the time the call is made; queued, never waits."""
        self._put(Event(Sort.CREATE_DIR, parent, parent_path, name, held=held))

    def deleted(self, parent: int, parent_path: str, name: str, ino: int, is_dir: bool) -> None:
        """Forget ``name`` in ``parent``, which the kernel was given as ``ino``, as
        deleted, and raise IN_DELETE for it; queued, never waits."""
        sort = Sort.DELETE_DIR if is_dir else Sort.DELETE_FILE
        self._put(Event(sort, parent, parent_path, name, ino, next(self._stand_ins)))

    def own(self, pid: int) -> bool:
        """Whether a request comes from the process that raises the events."""
        return self._tid != 0 and pid == self._tid

    def pending(self, pid: int, parent: int, name: str) -> Event | None:
        """The event a request of ``pid`` on ``name`` in ``parent`` is the call (or the
        lookup) of; None for every other request."""
        event = self._pending
        if not self.own(pid) or event is None or (event.parent, event.name) != (parent, name):
            return None
        return event

    def close(self) -> None:
        """Ends the thread and the helper (not waited for: a call may wait for a loop
        that ended; the helper ends when its pipe closes)."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread = None

    def _put(self, event: Event) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="name-events", daemon=True)
            self._thread.start()
        self._queue.put(event)

    def _run(self) -> None:
        try:
            # Isolated, no site: a start of a few milliseconds. No descriptor of the
            # daemon's goes with it (``/dev/fuse`` least of all).
            helper = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _HELPER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                close_fds=True,
            )
        except OSError as exc:
            log.warning("no events for names that appear or go: %s", exc)
            return
        self._helper, self._tid = helper, helper.pid
        try:
            self._serve()
        finally:
            if helper.stdin is not None:
                helper.stdin.close()  # the helper ends; it is waited for by nobody
            self._tid = 0

    def _serve(self) -> None:
        while (event := self._queue.get()) is not None:
            self._pending = event
            try:
                self._raise(event)
                log.debug("%s event raised for %s", event.label, event.path)
            except OSError as exc:
                log.debug("no %s event for %s: %s", event.label, event.path, exc)
            finally:
                self._pending = None

    def _call(self, sort: Sort, path: str) -> None:
        """The helper's ``sort`` of ``path`` through the mount; OSError as it failed."""
        helper = self._helper
        assert helper is not None and helper.stdin is not None and helper.stdout is not None
        helper.stdin.write(f"{sort.value} {os.fsencode(path).hex()}\n")
        helper.stdin.flush()
        answer = helper.stdout.readline()
        if not answer:
            raise OSError(errno.EPIPE, "the helper that raises name events is gone")
        number = int(answer)
        if number:
            raise OSError(number, os.strerror(number), path)

    def _raise(self, event: Event) -> None:
        path = os.path.join(self._mountpoint, event.path)
        if event.creates:
            self._call(Sort.CREATE_DIR, path)
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
        self._call(event.sort, path)
