"""Files dropped into a document's directory: kept as attachments of the document.

A new file in a document's directory is a scratch file (``write.scratch``): most are
editors' (a swap file, a lock file, a save's temporary file that is renamed over the
source file a moment later). One that is no temporary file's name (``is_drop``) and is
still there ``GRACE`` seconds after its last writer closed it (``cp notes.txt``, a file
manager's paste) was put there to be kept: it becomes an attachment of the document,
through the spool (``files_in``), so a crash or an outage of the vault loses nothing.
A write, a rename or an unlink within the grace starts it again or ends it.

Owns the files waiting out their grace and the task that takes them when it is over
(or at once when the mount is asked to flush, for ``vaultfs umount``); what taking one
means (the spool, the vault, lost+found) is ``new_documents``'. Users read
docs/writing.md ("Files dropped into a document's folder").
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable

import trio

from vaultfs import errors
from vaultfs.bridge.tree.locks import Changes
from vaultfs.bridge.write.scratch import ScratchFile, is_drop

__all__ = ["GRACE", "Drops"]

log = logging.getLogger(__name__)

#: seconds a closed file waits in a document's directory before it is uploaded: an
#: editor renames its temporary file over the source file well within it
GRACE = 5.0


class Drops:
    """The dropped files of one mount waiting out their grace."""

    def __init__(self, take: Callable[[ScratchFile], Awaitable[None]]) -> None:
        """``take``: uploads one as an attachment (``NewDocuments.take_drop``)."""
        self._take = take
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
        return scratch.number in self._waiting and self._still_dropped(scratch)

    def due_now(self) -> None:
        """Take every waiting file now (a flush, an unmount): no grace is waited for."""
        now = trio.current_time()
        self._waiting = {n: (s, min(due, now)) for n, (s, due) in self._waiting.items()}
        self._wake()

    def _wake(self) -> None:
        self._changed.notify()

    @staticmethod
    def _still_dropped(scratch: ScratchFile) -> bool:
        return scratch.linked and scratch.became is None and is_drop(scratch.parent, scratch.name)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Take the files whose grace is over, until cancelled."""
        task_status.started()
        while True:
            seen = self._changed.count
            now = trio.current_time()
            wake = math.inf
            for number, (scratch, due) in list(self._waiting.items()):
                if not self._still_dropped(scratch):
                    del self._waiting[number]  # removed, renamed away, checked in
                elif due > now:
                    wake = min(wake, due)
                elif scratch.writers.count == 0:
                    del self._waiting[number]
                    await self._take_one(scratch)
                else:
                    del self._waiting[number]  # written again: its last close starts anew
            with trio.move_on_at(wake):
                await self._changed.wait_since(seen)

    async def _take_one(self, scratch: ScratchFile) -> None:
        try:
            await self._take(scratch)
        except (errors.VaultError, OSError) as exc:
            # Refused for good: in lost+found (and the status); not sent: in the spool.
            log.warning("dropped file %r not attached yet: %s", scratch.name, exc)
