"""Files dropped into a document's directory: kept as attachments of the document.

A new file in a document's directory is a scratch file (``write.scratch``): most are
editors' (a swap file, a lock file, a save's temporary file that is renamed over the
source file a moment later). One that is no temporary file's name (``is_drop``) and is
still there ``GRACE`` seconds after its last writer closed it (``cp notes.txt``, a file
manager's paste) was put there to be kept: it becomes an attachment of the document,
through the spool (``files_in``), so a crash or an outage of the vault loses nothing.
A write, a rename or an unlink within the grace starts it again or ends it.

The WebDAV front waits out the same grace for the names its clients write
(``new_documents``, ``keep_names``): a new file put empty in a folder (Explorer's and
Finder's first PUT of a copy) before it becomes a document, and a new document's file
under the name the client wrote, before that name goes. A file whose name a client's
lock holds (``ScratchFile.holds``) waits for the lock's end, which starts its grace.

Owns the files waiting out their grace and the task that takes them when it is over
(or at once when the mount is asked to flush, for ``vaultfs umount``); what taking one
means (the spool, the vault, lost+found, a new document, the name's end) is
``new_documents``'. Users read docs/writing.md ("Files dropped into a document's
folder").
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable

import trio

from vaultfs import errors
from vaultfs.bridge.tree.locks import Changes
from vaultfs.bridge.write.scratch import ScratchFile

__all__ = ["GRACE", "Drops"]

log = logging.getLogger(__name__)

#: seconds a closed file waits in a document's directory before it is uploaded: an
#: editor renames its temporary file over the source file well within it
GRACE = 5.0


class Drops:
    """The dropped files of one mount waiting out their grace."""

    def __init__(
        self,
        take: Callable[[ScratchFile], Awaitable[None]],
        still_waiting: Callable[[ScratchFile], bool],
    ) -> None:
        """``take``: what is done with one whose grace is over (an attachment's upload:
        ``NewDocuments.take_drop``); ``still_waiting``: whether one still waits (not
        removed, renamed away, checked in meanwhile)."""
        self._take = take
        self._still_waiting = still_waiting
        #: scratch number -> (the file, when its grace is over: ``trio.current_time``)
        self._waiting: dict[int, tuple[ScratchFile, float]] = {}
        self._changed = Changes()

    def closed(self, scratch: ScratchFile) -> None:
        """The last writer of ``scratch`` closed it, or it was renamed to a drop's
        name: its grace starts (again)."""
        self._waiting[scratch.number] = (scratch, trio.current_time() + GRACE)
        self._wake()

    def waiting(self, scratch: ScratchFile) -> bool:
        """Whether ``scratch`` waits out its grace (for the status)."""
        return scratch.number in self._waiting and self._still_waiting(scratch)

    def due_now(self) -> None:
        """Take every waiting file now (a flush, an unmount): no grace is waited for."""
        now = trio.current_time()
        self._waiting = {n: (s, min(due, now)) for n, (s, due) in self._waiting.items()}
        self._wake()

    def _wake(self) -> None:
        self._changed.notify()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Take the files whose grace is over, until cancelled."""
        task_status.started()
        while True:
            seen = self._changed.count
            now = trio.current_time()
            wake = math.inf
            for number, (scratch, due) in list(self._waiting.items()):
                if not self._still_waiting(scratch):
                    del self._waiting[number]  # removed, renamed away, checked in
                elif due > now:
                    wake = min(wake, due)
                elif scratch.writers.count == 0 and scratch.holds == 0:
                    del self._waiting[number]
                    await self._take_one(scratch)
                else:
                    # Written again, or locked: its last close, or its lock's end, starts
                    # the grace anew.
                    del self._waiting[number]
            with trio.move_on_at(wake):
                await self._changed.wait_since(seen)

    async def _take_one(self, scratch: ScratchFile) -> None:
        try:
            await self._take(scratch)
        except (errors.VaultError, OSError) as exc:
            # Refused for good: in lost+found (and the status); not sent: in the spool.
            log.warning("file %r waiting out its grace not taken yet: %s", scratch.name, exc)
