"""Who writes one file now: the count of its open writers and the lock of its take.

One rule for a document's source file (``editing``) and a scratch file (``scratch``)
alike: the content is taken (checked in, or made a new document) by the release of the
last writer, never by a close (flush) before it. A shell's ``{ a; b; } > file`` closes
the descriptor once per child, and ``exec 3>>file`` keeps it across many commands:
only the release says the open file is gone. The release decides at once, in the
order the kernel sent the requests: a writer that opens the file after the release
came starts a save of its own (``taken``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import trio

__all__ = ["Writers"]


@dataclass
class Writers:
    #: open writers: counted from the moment an open starts (before it waits for
    #: anything) until its release, so a close racing with an open never takes the
    #: content from under the opener
    count: int = 0
    #: held while the content is being taken or a writer is opening: an open that
    #: arrives during a take starts from what the take left
    lock: trio.Lock = field(default_factory=trio.Lock)

    @asynccontextmanager
    async def taken(self) -> AsyncIterator[None]:
        """The lock, taken at once when it is free, waited for otherwise.

        ``async with lock`` always lets other tasks run first (trio's checkpoint), so a
        request the kernel sent after a release (the shell's next ``>>`` opening the
        file, rsync's rename of its temporary file) could be handled before the release
        decided what it closes, and join a save that had ended. Taken at once, the
        release decides before any later request is read.
        """
        if self.lock.locked():
            await self.lock.acquire()
        else:
            self.lock.acquire_nowait()
        try:
            yield
        finally:
            self.lock.release()
